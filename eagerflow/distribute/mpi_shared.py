"""Sum all-reduce through shared memory, for MPI ranks that all run on one machine.

MPICH moves an ``Allreduce`` between local ranks through shared memory anyway: each rank
copies its buffer in, the sums are computed, each rank copies the result out. Doing
that ourselves in one shared window (``MPI_Win_allocate_shared``) has two gains:

- a gradient bucket is packed *straight into* the shared window, so the packing copy
  is the copy-in MPICH would make anyway (zero-copy derived datatypes cannot do this
  here: MPICH 5.0 refuses ``MPI_SUM`` on any derived datatype, and sending them
  point-to-point was 2.5x slower than a packed ``Allreduce``);
- each rank sums one ``1/size`` segment of the buffer, reading every rank's input in
  the window, and all ranks copy the whole result out: the additions run on every core
  at once, with no message protocol. Measured at 2 ranks (``python -m
  eagerflow.benchmarks --filter mpi``): faster than mpi4py's ``Allreduce`` of the
  same contiguous bytes at 4 MB and 64 MB, while also doing the packing.

The sum is computed in rank order (``((x0 + x1) + x2) + ...``, numpy's additions), the
order :class:`~eagerflow.distribute.communicator.LocalCommunicator` uses: the bits are
the same on every rank, for every rank count and dtype (MPICH's own order is a tree from
4 ranks on).

Two barriers per round. The window holds two sets of slots used in turn, so a rank that
starts the next round while a slower one still copies the last result out cannot
overwrite what it reads: to reuse a set, a rank must have passed the second barrier of
the round in between, which every rank reaches only after its copy-out.

The window is allocated at the first sum large enough to need it (a collective: every
rank makes the same calls in the same order, with the same sizes) and grows by powers of
two up to ``CHUNK_BYTES``; larger buffers go through it in chunks. It is not freed
before ``MPI_Finalize`` (freeing is a collective, and ranks close communicators in
different orders at exit).
"""

from __future__ import annotations

import numpy as np

__all__ = ["NodeSum", "CHUNK_BYTES", "MPI_FASTER_BYTES"]

# The most one round moves. Rounds that fit a core's 2 MiB L2 were fastest here (4 MB:
# 1.2-1.8 ms in rounds of 0.5-2 MiB, 3.2 ms in one; 64 MB: 24-26 ms against 45 ms).
CHUNK_BYTES = 2 << 20
_MIN_BYTES = 64 << 10
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
            :meth:`for_comm`). Its ``Barrier`` orders the rounds.
    """

    def __init__(self, MPI, comm):
        self._MPI = MPI
        self._comm = comm
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self._win = None
        self._mem = None
        self._cap = 0  # bytes per slot
        self._round = 0
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
        if self._win is not None:
            # Every rank has finished reading the old window before it goes.
            self._comm.Barrier()
            self._win.Unlock_all()
            self._mem = None
            self._views.clear()
            self._win.Free()
        # Two sets of (size inputs + one result) slots, all in rank 0's allocation so the
        # result is one contiguous array every rank reads.
        total = 2 * (self._size + 1) * cap
        MPI = self._MPI
        self._win = MPI.Win.Allocate_shared(total if self._rank == 0 else 0, 1,
                                            comm=self._comm)
        buf, _ = self._win.Shared_query(0)
        self._mem = np.frombuffer(buf, np.uint8)
        self._win.Lock_all(MPI.MODE_NOCHECK)
        self._cap = cap

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
        # Rounds of at most ``per`` elements; each packs the pieces of the sources that
        # fall in it straight into the window.
        flats = [a.reshape(-1) for a in sources]
        k, used = 0, 0  # the source being packed, and how much of it is already packed
        for start in range(0, n, per):
            chunk = dest[start:start + per]
            want, pieces = chunk.size, []
            while want:
                take = min(want, flats[k].size - used)
                if take:
                    pieces.append(flats[k][used:used + take])
                used += take
                want -= take
                if used == flats[k].size:
                    k, used = k + 1, 0
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

    def _sync(self):
        win = self._win
        win.Sync()
        self._comm.Barrier()
        win.Sync()

    def _one_round(self, sources, dest, n):
        which = self._round & 1
        self._round += 1
        dtype, p, me = dest.dtype, self._size, self._rank
        slots = self._slots(which, dtype, n)
        ins = slots[:p]
        if len(sources) == 1:
            np.copyto(ins[me], sources[0].reshape(-1))
        else:
            np.concatenate(sources, axis=None, out=ins[me])
        self._sync()
        if p <= FULL_SUM_RANKS:
            # Every rank adds the whole buffer straight into ``dest``: the same additions
            # in the same order on every rank (the same bits), one barrier, no copy-out.
            np.add(ins[0], ins[1], out=dest)
            for r in range(2, p):
                np.add(dest, ins[r], out=dest)
            return
        # Many ranks: each adds one segment into the shared result, then all copy it out
        # (p reads per element instead of p * p).
        result = slots[p]
        lo, hi = n * me // p, n * (me + 1) // p
        if hi > lo:
            mine = result[lo:hi]
            np.add(ins[0][lo:hi], ins[1][lo:hi], out=mine)
            for r in range(2, p):
                np.add(mine, ins[r][lo:hi], out=mine)
        self._sync()
        np.copyto(dest, result)
