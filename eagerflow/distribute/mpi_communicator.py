"""The MPI communicator: the Communicator interface over mpi4py, for jobs started by ``mpirun``.

Every tensor moves through mpi4py's buffer calls (``Allreduce``, ``Bcast``, ``Allgatherv``,
``Send``/``Recv``), never the pickle-based lowercase ones: they are about ten times faster
for arrays and no pickle ever reaches the wire. Reductions run in place into the caller's
array when it is writable and C-contiguous.

The communicator works on its own duplicate of the MPI communicator it is given (so a
strategy's collectives never match a user's), and on a second duplicate, the *side
channel*, on which a watchdog thread in every process answers "what are you doing?".
That is how a deadline becomes a message instead of a hang: the main thread arms the
watchdog around every blocking call; after ``warning_seconds`` the watchdog asks every
peer for its state and prints a stall report (which ranks are missing, their host and pid,
the collective and its number, and where each rank is in the user's code); at the
deadline it sends that report to every rank, each prints it and the job ends through
``MPI_Abort``, non-zero. An MPI collective cannot be cancelled, so a rank whose collective
timed out cannot go on; ending the whole job is MPI's failure model (one process's death
ends the job too: ``mpirun`` kills the others within milliseconds). Recover by restarting
the same command from a checkpoint (``BackupAndRestore``).

Sums (``"sum"``, ``"mean"``) between ranks of one machine go through a shared-memory
window (:mod:`eagerflow.distribute.mpi_shared`), added in rank order with numpy, so the
bits equal :class:`LocalCommunicator`'s for every dtype and rank count. It is faster here
than MPICH's ``Allreduce`` for packed buckets (the packing is its copy-in), small buffers
and large ones; a lone buffer of a few MB (``mpi_shared.MPI_FASTER_BYTES``) MPICH sums
faster, and on 2 and 3 ranks MPICH adds in rank order too, so there that buffer takes
``MPI_Allreduce``. Across machines (or with ``EAGERFLOW_MPI_SHARED_MEMORY=0``) sums use
``MPI_Allreduce``: rank-ordered on 2 and 3 ranks; from 4 ranks on the association is
MPICH's tree. Where MPI's built-in op differs from numpy's ufunc (float ``max``/``min``:
NaN propagates, as ``np.maximum``; complex ``prod``: numpy's rounding) and for dtypes MPI
cannot reduce (bfloat16), the arrays are gathered and reduced in rank order with numpy.
The result is bit-identical on every rank.

mpi4py is imported when the first communicator is made, never by ``import eagerflow``.

Example (a script run with ``mpirun -n 2 python script.py``; it prints ``[2. 2. 2.]``
on each rank)::

    import numpy as np
    from eagerflow.distribute.mpi_communicator import MPICommunicator

    comm = MPICommunicator()        # rank and size from MPI
    print(comm.allreduce([np.ones(3, np.float32)])[0])
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
import time
import weakref

import numpy as np

from eagerflow import errors
from eagerflow.distribute.communicator import Communicator, check_op
from eagerflow.distribute.mpi_shared import NodeSum
from eagerflow.distribute.mpi_watchdog import TIMEOUT_ENV, Watchdog, install_excepthook

__all__ = ["MPICommunicator", "default_timeout_from_env", "mpi_module"]

WARNING_ENV = "EAGERFLOW_STALL_WARNING"
SHARED_MEMORY_ENV = "EAGERFLOW_MPI_SHARED_MEMORY"
DEFAULT_TIMEOUT = 300.0
DEFAULT_WARNING = 60.0

# Dtypes that travel by name in send/recv and allgather headers; index = wire code.
_WIRE_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32",
                "int64", "uint8", "uint16", "uint32", "uint64", "bool", "complex64",
                "complex128")
_MAX_RANK = 32  # dimensions a header can describe


def mpi_module():
    """Returns ``mpi4py.MPI``, importing it on first use.

    Raises:
        FailedPreconditionError: mpi4py is not installed.
    """
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise errors.FailedPreconditionError(
            None, None,
            "MultiWorkerMirroredStrategy and MPICommunicator need mpi4py and an MPI library: "
            "`pip install 'eagerflow[mpi]'` (mpi4py and the mpich wheel, which puts mpirun "
            "in the environment's bin/), then launch with `mpirun -n N python train.py`. "
            "(%s)" % e) from None
    return MPI


def _env_seconds(name, default):
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        seconds = float(value)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, "%s=%r is not a number of seconds; set it to e.g. 120" % (name, value)
        ) from None
    if not seconds > 0:
        raise errors.InvalidArgumentError(
            None, None, "%s=%r must be a positive number of seconds" % (name, value))
    return seconds


def default_timeout_from_env(default=DEFAULT_TIMEOUT):
    """The collective deadline in seconds: ``EAGERFLOW_COLLECTIVE_TIMEOUT`` or ``default``."""
    return _env_seconds(TIMEOUT_ENV, default)


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _wire_code(dtype, what):
    name = np.dtype(dtype).name
    if name not in _WIRE_DTYPES:
        raise errors.InvalidArgumentError(
            None, what, "%s: dtype %s cannot be sent over MPI; supported: %s"
            % (what, name, ", ".join(_WIRE_DTYPES)))
    return _WIRE_DTYPES.index(name)


def _header(array, what):
    if array.ndim > _MAX_RANK:
        raise errors.InvalidArgumentError(
            None, what, "%s: a %d-dimensional array has more than %d dimensions"
            % (what, array.ndim, _MAX_RANK))
    head = np.zeros(2 + _MAX_RANK, np.int64)
    head[0] = _wire_code(array.dtype, what)
    head[1] = array.ndim
    head[2:2 + array.ndim] = array.shape
    return head


def _describe(heads):
    """"float32 [3, 4], int64 []" from header rows."""
    parts = []
    for head in heads:
        try:
            dtype, shape = _shape_from_header(head, "broadcast")
            parts.append("%s %s" % (dtype.name, list(shape)))
        except errors.DataLossError:
            parts.append("?")
    return ", ".join(parts) or "no arrays"


def _shape_from_header(head, what):
    code, ndim = int(head[0]), int(head[1])
    if not (0 <= code < len(_WIRE_DTYPES)) or not (0 <= ndim <= _MAX_RANK):
        raise errors.DataLossError(None, what, "%s: corrupt header %s" % (what, head[:4]))
    shape = tuple(int(d) for d in head[2:2 + ndim])
    if any(d < 0 for d in shape):
        raise errors.DataLossError(None, what, "%s: negative dimension in %s" % (what, shape))
    return _np_dtype(_WIRE_DTYPES[code]), shape


class MPICommunicator(Communicator):
    """The Communicator interface over MPI (mpi4py, launched with ``mpirun``).

    Args:
        comm: The mpi4py communicator to work on (it is duplicated); default
            ``MPI.COMM_WORLD``. Without ``mpirun`` that is a world of one process.
        default_timeout: Seconds a collective may wait before the job is stopped with a
            report; default ``EAGERFLOW_COLLECTIVE_TIMEOUT`` or 300.
        warning_seconds: Seconds after which a stall report is printed; default
            ``EAGERFLOW_STALL_WARNING`` or min(60, half the timeout).

    Raises:
        FailedPreconditionError: mpi4py is not installed.
    """

    def __init__(self, comm=None, default_timeout=None, warning_seconds=None):
        MPI = mpi_module()
        self._MPI = MPI
        base = MPI.COMM_WORLD if comm is None else comm
        self._comm = base.Dup()
        self._side = base.Dup()
        self._rank = self._comm.Get_rank()
        self._size = self._comm.Get_size()
        timeout = default_timeout_from_env() if default_timeout is None else default_timeout
        if not timeout > 0:
            raise errors.InvalidArgumentError(
                None, "MPICommunicator", "default_timeout=%r must be positive seconds"
                % (default_timeout,))
        self._timeout = float(timeout)
        self._warning = (float(warning_seconds) if warning_seconds is not None
                         else _env_seconds(WARNING_ENV, min(DEFAULT_WARNING, self._timeout / 2)))
        self._mpi_ops = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN,
                         "prod": MPI.PROD}
        # numpy's add on bools is "or", multiply is "and".
        self._bool_ops = {"sum": MPI.LOR, "mean": MPI.LOR, "max": MPI.LOR, "min": MPI.LAND,
                          "prod": MPI.LAND}
        self._identity = {"rank": self._rank, "host": socket.gethostname(), "pid": os.getpid()}
        self._seq = 0
        self._p2p = 0
        self._lock = threading.Lock()
        self.step = None  # the training step, set by a strategy; shown in reports
        # Sums between ranks of one machine go through a shared-memory window (faster
        # than MPICH's Allreduce here except for lone buffers of a few MB, and
        # rank-ordered at every size); across machines, or with
        # EAGERFLOW_MPI_SHARED_MEMORY=0, through MPI_Allreduce.
        self._node = None
        if self._size > 1 and os.environ.get(SHARED_MEMORY_ENV, "1") != "0":
            self._node = NodeSum.for_comm(MPI, self._comm)
        self._watchdog = Watchdog(self) if self._size > 1 else None
        if self._watchdog is not None:
            install_excepthook(_live)
        self._closed = False
        _live.add(self)

    # -- properties ----------------------------------------------------------------------
    @property
    def rank(self):
        return self._rank

    @property
    def size(self):
        return self._size

    @property
    def default_timeout(self):
        return self._timeout

    @property
    def mpi_comm(self):
        """The duplicated mpi4py communicator collectives run on."""
        return self._comm

    # -- deadline bracket ----------------------------------------------------------------
    def _call(self, kind, name, timeout, fn, peers=None):
        if self._closed:
            raise errors.FailedPreconditionError(
                None, kind, "%s on a closed MPICommunicator" % kind)
        if self._watchdog is None:
            return fn()
        timeout = self._timeout if timeout is None else float(timeout)
        with self._lock:
            # Collectives are numbered in call order, which must be the same on every rank;
            # point-to-point calls have their own count and are not compared.
            if peers is None:
                self._seq += 1
                seq = self._seq
            else:
                self._p2p += 1
                seq = self._p2p
            start = time.monotonic()
            where = sys._getframe(1)  # formatted only if a report needs it
            warn_at = start + min(self._warning, timeout)
            self._watchdog.armed = (seq, kind, name, start, warn_at, start + timeout,
                                    where, peers)
            try:
                return fn()
            finally:
                self._watchdog.armed = None
                if peers is None:
                    self._watchdog.last_done = (seq, kind, name)

    # -- collectives ---------------------------------------------------------------------
    def allreduce(self, arrays, op="sum", *, timeout=None, name=None):
        """Reduces each array across ranks, in place where it can; returns the results.

        Args:
            arrays: A list of numpy arrays, the same shapes and dtypes on every rank.
            op: "sum", "mean", "max", "min" or "prod".
            timeout: Seconds before the job is stopped; None for ``default_timeout``.
            name: Shown in stall reports.

        Returns:
            A list of the reduced arrays (the input arrays themselves when they were
            writable and C-contiguous).
        """
        op = check_op(op)
        arrays = list(arrays)
        bufs = [_writable(a) for a in arrays]
        if self._size == 1:
            return [_mean_ints(b, 1) if op == "mean" else b for b in bufs]

        node = self._node if op in ("sum", "mean") else None

        def run():
            in_place, mpi_op = self._MPI.IN_PLACE, self._mpi_ops[op]
            for b in bufs:
                if b.size == 0:
                    continue
                kind = b.dtype.kind
                if node is not None and not node.prefers_mpi(b):
                    flat = b.reshape(-1)
                    node.sum_into([flat], flat)
                elif kind == "V" or (kind in "fc" and op in ("max", "min")) or \
                        (kind == "c" and op == "prod"):
                    self._reduce_by_gather(b, op)
                elif kind == "b":
                    self._comm.Allreduce(in_place, b, op=self._bool_ops[op])
                else:
                    self._comm.Allreduce(in_place, b, op=mpi_op)
            return bufs

        out = self._call("allreduce", name, timeout, run)
        if op == "mean":
            out = [_mean_ints(b, self._size) for b in out]
        return out

    def allreduce_packed(self, groups, flats, op="sum", *, timeout=None, name=None):
        """Reduces the concatenation of each group into its flat buffer (see Communicator).

        Between ranks of one machine each group is packed straight into the shared
        window the sum reads from: the packing copy is the only copy-in.
        """
        op = check_op(op)
        if self._node is None or op not in ("sum", "mean"):
            return super().allreduce_packed(groups, flats, op, timeout=timeout, name=name)

        def run():
            for group, flat in zip(groups, flats):
                self._node.sum_into(group, flat)

        self._call("allreduce", name, timeout, run)
        if op == "mean":
            for flat in flats:
                _mean_ints(flat, self._size)
        return flats

    def _reduce_by_gather(self, buf, op):
        """Rank-ordered reduction for dtypes/ops MPI's built-ins do not match numpy on."""
        gathered = np.empty((self._size,) + buf.shape, buf.dtype)
        raw = _bytes_view(gathered)
        self._comm.Allgather([_bytes_view(buf), self._MPI.BYTE], [raw, self._MPI.BYTE])
        fn = {"sum": np.add, "mean": np.add, "max": np.maximum, "min": np.minimum,
              "prod": np.multiply}[op]
        acc = gathered[0].copy()
        for k in range(1, self._size):
            acc = fn(acc, gathered[k])
        buf[...] = acc

    def allgather(self, array, *, timeout=None, name=None):
        """Concatenates every rank's array along axis 0, in rank order.

        The first dimension may differ between ranks; the others and the dtype must agree
        (checked: a mismatch raises InvalidArgumentError on every rank).
        """
        array = np.ascontiguousarray(array)
        if array.ndim == 0:
            raise errors.InvalidArgumentError(
                None, "allgather", "allgather: a scalar has no axis 0 to concatenate on; "
                "reshape it to [1]")
        if self._size == 1:
            return array.copy()
        MPI = self._MPI

        def run():
            head = _header(array, "allgather")
            heads = np.empty((self._size, head.size), np.int64)
            self._comm.Allgather(head, heads)
            for r in range(self._size):
                if heads[r, 0] != head[0] or heads[r, 1] != head[1] or \
                        not np.array_equal(heads[r, 3:], head[3:]):
                    dt, shape = _shape_from_header(heads[r], "allgather")
                    raise errors.InvalidArgumentError(
                        None, "allgather", "allgather%s: rank %d has %s %s but rank %d has "
                        "%s %s; every dimension after the first and the dtype must agree"
                        % (" %r" % name if name else "", self._rank, array.dtype.name,
                           array.shape, r, dt.name, shape))
            rows = heads[:, 2]
            row_bytes = array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))
            out = np.empty((int(rows.sum()),) + array.shape[1:], array.dtype)
            counts = [int(n) * row_bytes for n in rows]
            displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
            self._comm.Allgatherv([_bytes_view(array), MPI.BYTE],
                                  [_bytes_view(out), (counts, displs), MPI.BYTE])
            return out

        return self._call("allgather", name, timeout, run)

    def broadcast(self, arrays, root=0, *, timeout=None, name=None):
        """Every rank gets ``root``'s arrays (same shapes and dtypes everywhere), in place."""
        self._check_rank(root, "broadcast", "root")
        bufs = [_writable(a) for a in arrays]
        if self._size == 1:
            return bufs

        def run():
            # Root's dtypes and shapes first (one small Bcast): a rank expecting other
            # arrays fails naming both, instead of a truncated or hanging transfer.
            heads = np.stack([_header(b, "broadcast") for b in bufs]) if bufs else \
                np.zeros((0, 2 + _MAX_RANK), np.int64)
            count = np.array([len(bufs)], np.int64)
            self._comm.Bcast(count, root=root)
            theirs = np.empty((int(count[0]), heads.shape[1]), np.int64)
            if self._rank == root:
                theirs[...] = heads
            self._comm.Bcast(theirs, root=root)
            if not np.array_equal(theirs, heads):
                raise errors.InvalidArgumentError(
                    None, "broadcast", "broadcast%s: rank %d expects %s but root %d sends %s; "
                    "every rank must create the same variables (shapes, dtypes, order)"
                    % (" %r" % name if name else "", self._rank, _describe(heads), root,
                       _describe(theirs)))
            for b in bufs:
                if b.size:
                    self._comm.Bcast([_bytes_view(b), self._MPI.BYTE], root=root)
            return bufs

        return self._call("broadcast", name, timeout, run)

    def barrier(self, *, timeout=None, name=None):
        """Waits until every rank has arrived (with the deadline)."""
        if self._size > 1:
            self._call("barrier", name, timeout, self._comm.Barrier)

    def send(self, array, dest, tag, *, timeout=None):
        """Sends ``array`` to rank ``dest``; dtype and shape travel with it."""
        self._check_rank(dest, "send", "dest")
        array = np.ascontiguousarray(array)
        head = _header(array, "send")

        def run():
            self._comm.Send(head, dest=dest, tag=tag)
            self._comm.Send([_bytes_view(array), self._MPI.BYTE], dest=dest, tag=tag)

        self._call("send", "to %d tag %d" % (dest, tag), timeout, run, peers=(dest,))

    def recv(self, source, tag, *, timeout=None):
        """Receives the array rank ``source`` sent with ``tag``."""
        self._check_rank(source, "recv", "source")

        def run():
            head = np.empty(2 + _MAX_RANK, np.int64)
            self._comm.Recv(head, source=source, tag=tag)
            dtype, shape = _shape_from_header(head, "recv")
            out = np.empty(shape, dtype)
            self._comm.Recv([_bytes_view(out), self._MPI.BYTE], source=source, tag=tag)
            return out

        return self._call("recv", "from %d tag %d" % (source, tag), timeout, run,
                          peers=(source,))

    def split(self, color, key=None):
        """A new communicator of the ranks with the same ``color``, ordered by ``key``."""
        key = self._rank if key is None else key
        sub = self._call("split", None, None, lambda: self._comm.Split(color, key))
        try:
            return MPICommunicator(sub, default_timeout=self._timeout,
                                   warning_seconds=self._warning)
        finally:
            sub.Free()

    def abort(self, message, code=1):
        """Prints ``message`` on every rank that can, then ends the whole job (MPI_Abort)."""
        code = int(code) or 1
        if self._watchdog is not None:
            self._watchdog.die_from_main(str(message), code)
        sys.stderr.write("[eagerflow rank %d] %s\n" % (self._rank, message))
        sys.stderr.flush()
        self._MPI.COMM_WORLD.Abort(code)

    def close(self):
        """Stops the watchdog and frees the duplicated communicators (also done at exit)."""
        if self._closed:
            return
        self._closed = True
        if self._watchdog is not None:
            self._watchdog.stop()
        if not self._MPI.Is_finalized():
            self._side.Free()
            self._comm.Free()
        _live.discard(self)

    def _check_rank(self, r, what, arg):
        if not isinstance(r, (int, np.integer)) or not 0 <= r < self._size:
            raise errors.InvalidArgumentError(
                None, what, "%s: %s=%r is not a rank of this communicator (size %d)"
                % (what, arg, r, self._size))

    def __repr__(self):
        return "MPICommunicator(rank=%d, size=%d, default_timeout=%g)" % (
            self._rank, self._size, self._timeout)


def _writable(a):
    a = np.asarray(a)
    if a.flags.c_contiguous and a.flags.writeable:
        return a
    return np.array(a, order="C", copy=True)


def _bytes_view(a):
    """The array's memory as a flat uint8 view (dtypes MPI has no type for travel as bytes)."""
    return a.reshape(-1).view(np.uint8)


def _mean_ints(b, size):
    kind = b.dtype.kind
    if kind in "fcV":
        if size != 1:
            np.divide(b, size, out=b)
        return b
    if kind == "b":
        return b
    np.floor_divide(b, size, out=b)
    return b


_live = weakref.WeakSet()


@atexit.register
def _close_all():
    # Before mpi4py finalizes MPI: a pending side-channel receive must be cancelled first.
    for comm in list(_live):
        try:
            comm.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass
