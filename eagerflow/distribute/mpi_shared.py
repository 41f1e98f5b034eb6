"""Sum all-reduce through shared memory, for MPI ranks that all run on one machine.

MPICH moves an ``Allreduce`` between local ranks through shared memory anyway: each rank
copies its buffer in, the sums are computed, each rank copies the result out. Doing
that ourselves in one shared window (``MPI_Win_allocate_shared``) has two gains:

- a gradient bucket is packed *straight into* the shared window, so the packing copy
  is the copy-in MPICH would make anyway (zero-copy derived datatypes cannot do this
  here: MPICH 5.0 refuses ``MPI_SUM`` on any derived datatype, and sending them
  point-to-point was 2.5x slower than a packed ``Allreduce``);
- the ranks wait for each other through counters in the window, piece by piece: a rank
  adds the first 512 KiB as soon as every rank has packed it, while a slower rank still
  packs the rest. A barrier per round made each rank wait for the slowest one's whole
  copy (on a loaded machine, most of the time of a 4 MB sum).

The sum is computed in rank order (``((x0 + x1) + x2) + ...``, numpy's additions), the
order :class:`~eagerflow.distribute.communicator.LocalCommunicator` uses: the bits are
the same on every rank, for every rank count and dtype (MPICH's own order is a tree from
4 ranks on). Up to ``FULL_SUM_RANKS`` ranks every rank adds the whole buffer straight
into its result; from 5 on each adds one ``1/size`` segment into a shared result slot
that all copy out (``size`` reads per element instead of ``size * size``).

The counters, one 64-byte line each per rank: *packed* (pieces packed so far, over all
rounds), *summed* (rounds whose segment is in the result slot; segmented sums only) and
*done* (rounds this rank has finished reading). A rank publishes a counter after
``MPI_Win_sync`` (the memory barrier MPI defines for shared windows) and syncs again after
seeing a peer's, so the data written before a counter is seen with it. Two sets of slots
are used in turn: before packing round ``t`` into a set a rank waits until every rank is
done with round ``t - 2``, the last one that used it. A wait spins on the counter, then
yields the core; it runs inside the communicator's deadline bracket, so a peer that never
arrives is reported, and the job ended, by the watchdog as for any MPI call.

The window is allocated at the first sum large enough to need it (a collective: every
rank makes the same calls in the same order, with the same sizes) and grows by powers of
two up to ``CHUNK_BYTES``; larger buffers go through it in rounds. It is not freed
before ``MPI_Finalize`` (freeing is a collective, and ranks close communicators in
different orders at exit).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["NodeSum", "CHUNK_BYTES", "PIECE_BYTES", "MPI_FASTER_BYTES"]

# The most one round moves (the window holds two rounds per rank, in turn).
CHUNK_BYTES = 4 << 20
# What a rank packs before it tells the others: the grain of the overlap.
PIECE_BYTES = 512 << 10
_MIN_BYTES = 64 << 10
_LINE = 64  # bytes per counter: one cache line each, so ranks never write the same line
_SPINS = 200  # counter reads before a waiting rank starts yielding its core
FULL_SUM_RANKS = 4  # up to this many local ranks, every rank adds the whole buffer
# One contiguous buffer of more than 2 MiB and at most 16 MiB, reduced in place, is summed
# faster by MPICH's Allreduce (a reduce-scatter and allgather: each rank adds half of the
# buffer, where the window has every rank add all of it). At 2 ranks, MPICH's time over
# the window's: 0.64-0.91 at 4-16 MB, about 1.0 at 0.5-2 MB, 1.05-1.29 at 32-64 MB (three
# interleaved sweeps on the 2-core machine). A packed bucket stays here: its packing copy
# is the window's copy-in.
MPI_FASTER_BYTES = (2 << 20, 16 << 20)
# MPICH adds in rank order on this many ranks or fewer (tested), so routing a sum to it
# keeps the bits; from 4 ranks on its tree associates differently.
MPI_RANK_ORDERED_RANKS = 3


class NodeSum:
    """Rank-ordered sum all-reduce over shared memory (every rank on one machine).

    Args:
        MPI: The ``mpi4py.MPI`` module.
        comm: The mpi4py communicator (all its ranks share a machine; see
            :meth:`for_comm`). Used for the window's allocation only.
    """

    def __init__(self, MPI, comm):
        self._MPI = MPI
        self._comm = comm
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self._win = None
        self._mem = None
        self._counters = None  # the window's counters as a memoryview of int64
        self._cap = 0  # bytes per slot
        self._round = 0
        self._packed = 0  # pieces packed by every rank before this round
        self._views = {}  # (set, dtype, count): the slots as arrays, made once

    @classmethod
    def for_comm(cls, MPI, comm):
        """A NodeSum when every rank of ``comm`` shares this machine, else None (collective)."""
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            one_machine = node.Get_size() == comm.Get_size()
        finally:
            node.Free()
        return cls(MPI, comm) if one_machine else None

    def prefers_mpi(self, buf):
        """Whether an in-place sum of the contiguous ``buf`` is faster through MPI_Allreduce.

        Only where MPICH gives the same bits: at most ``MPI_RANK_ORDERED_RANKS`` ranks and
        dtypes MPI adds natively as numpy does (32 and 64-bit floats, complex, integers);
        the payload of a NaN made from two NaNs may differ (MPICH may add ``x1 + x0``).
        """
        lo, hi = MPI_FASTER_BYTES
        return (self._size <= MPI_RANK_ORDERED_RANKS and lo < buf.nbytes <= hi
                and buf.dtype.kind in "fciu" and buf.dtype.itemsize >= 4)

    def _reserve(self, nbytes):
        """Grows the window to hold ``nbytes`` per slot (collective, same size everywhere)."""
        nbytes = min(nbytes, CHUNK_BYTES)
        if nbytes <= self._cap:
            return
        cap = _MIN_BYTES
        while cap < nbytes:
            cap *= 2
        cap = min(cap, CHUNK_BYTES)
        comm, MPI = self._comm, self._MPI
        if self._win is not None:
            # Every rank has finished reading the old window before it goes.
            comm.Barrier()
            self._win.Unlock_all()
            self._mem = self._counters = None
            self._views.clear()
            self._win.Free()
        # Counters first (three per rank), then two sets of (size inputs + one result)
        # slots, all in rank 0's allocation so the result is one contiguous array.
        head = -(-3 * self._size * _LINE // 4096) * 4096
        total = head + 2 * (self._size + 1) * cap
        self._win = MPI.Win.Allocate_shared(total if self._rank == 0 else 0, 1, comm=comm)
        buf, _ = self._win.Shared_query(0)
        mem = np.frombuffer(buf, np.uint8)
        if self._rank == 0:
            mem[:head] = 0
        self._counters = memoryview(buf)[:head].cast("q")
        self._mem = mem[head:]
        self._win.Lock_all(MPI.MODE_NOCHECK)
        self._win.Sync()
        comm.Barrier()  # the counters are zero before anyone counts
        self._win.Sync()
        self._cap = cap
        self._round = self._packed = 0

    def sum_into(self, sources, dest):
        """Writes the all-ranks sum of ``concatenate(sources)`` into ``dest`` (flat).

        Args:
            sources: Arrays of ``dest``'s dtype whose sizes add up to ``dest.size``
                (packed in this order); ``[dest]`` itself for an in-place sum.
            dest: A writable, C-contiguous 1-D array.
        """
        n = dest.size
        if n == 0:
            return
        self._reserve(n * dest.itemsize)
        per = self._cap // dest.itemsize
        if n <= per:
            self._one_round(sources, dest, n)
            return
        # Rounds of at most ``per`` elements, each given the pieces of the sources that
        # fall in it (views: packing is the only copy).
        for start, pieces in _split(sources, n, per):
            chunk = dest[start:start + per]
            self._one_round(pieces, chunk, chunk.size)

    def _slots(self, which, dtype, n):
        """The ``size`` input slots and the result slot of set ``which``, as dtype views."""
        key = (which, dtype, n)
        views = self._views.get(key)
        if views is None:
            if len(self._views) > 64:
                self._views.clear()
            mem, cap, item = self._mem, self._cap, dtype.itemsize
            first = which * (self._size + 1)
            views = self._views[key] = [
                mem[(first + k) * cap:(first + k) * cap + n * item].view(dtype)
                for k in range(self._size + 1)]
        return views

    def _publish(self, kind, value):
        """Sets this rank's counter ``kind`` (0 packed, 1 summed, 2 done) after its writes."""
        self._win.Sync()
        self._counters[(kind * self._size + self._rank) * (_LINE // 8)] = value

    def _wait(self, kind, value):
        """Returns when every rank's counter ``kind`` is at least ``value``."""
        counters, stride, me = self._counters, _LINE // 8, self._rank
        for r in range(self._size):
            at = (kind * self._size + r) * stride
            if r == me or counters[at] >= value:
                continue
            spins = 0
            while counters[at] < value:
                spins += 1
                if spins > _SPINS:
                    os.sched_yield()  # releases the GIL too: the watchdog keeps its deadline
        self._win.Sync()

    def _one_round(self, sources, dest, n):
        self._round += 1
        t = self._round
        dtype, p, me = dest.dtype, self._size, self._rank
        slots = self._slots(t & 1, dtype, n)
        ins = slots[:p]
        self._wait(2, t - 2)  # every rank is done reading this set's last round
        per = max(1, PIECE_BYTES // dtype.itemsize)
        count = -(-n // per)
        base = self._packed
        self._packed += count
        mine = ins[me]
        if count == 1:
            if len(sources) == 1:
                np.copyto(mine, sources[0].reshape(-1))
            else:
                np.concatenate(sources, axis=None, out=mine)
            self._publish(0, base + 1)
        else:
            for k, (start, pieces) in enumerate(_split(sources, n, per)):
                out = mine[start:start + per]
                if len(pieces) == 1:
                    np.copyto(out, pieces[0])
                else:
                    np.concatenate(pieces, axis=None, out=out)
                self._publish(0, base + k + 1)
        if p <= FULL_SUM_RANKS:
            # Every rank adds the whole buffer straight into ``dest``, piece by piece as
            # the pieces are packed: the same additions in the same order on every rank
            # (the same bits), and no copy-out.
            for k in range(count):
                self._wait(0, base + k + 1)
                lo, hi = k * per, min(n, (k + 1) * per)
                out = dest[lo:hi]
                np.add(ins[0][lo:hi], ins[1][lo:hi], out=out)
                for r in range(2, p):
                    np.add(out, ins[r][lo:hi], out=out)
            self._publish(2, t)
            return
        # Many ranks: each adds one segment into the shared result, then all copy it out.
        result = slots[p]
        lo, hi = n * me // p, n * (me + 1) // p
        if hi > lo:
            self._wait(0, base + -(-hi // per))  # the pieces that hold the segment
            seg = result[lo:hi]
            np.add(ins[0][lo:hi], ins[1][lo:hi], out=seg)
            for r in range(2, p):
                np.add(seg, ins[r][lo:hi], out=seg)
        self._publish(1, t)
        self._wait(1, t)
        np.copyto(dest, result)
        self._publish(2, t)


def _split(sources, n, per):
    """(start, views) for each run of ``per`` elements of ``concatenate(sources)``."""
    flats = [a.reshape(-1) for a in sources]
    k, used = 0, 0  # the source being cut, and how much of it is already cut
    for start in range(0, n, per):
        want, pieces = min(per, n - start), []
        while want:
            take = min(want, flats[k].size - used)
            if take:
                pieces.append(flats[k][used:used + take])
            used += take
            want -= take
            if used == flats[k].size:
                k, used = k + 1, 0
        yield start, pieces
