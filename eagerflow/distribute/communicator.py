"""The Communicator: collectives between the replicas of a distribution strategy.

A Communicator is one participant (one ``rank`` of ``size``) of a group that reduces,
gathers and broadcasts backend arrays. Strategies talk to their peers only through this
interface, so the same strategy code runs over threads of one process
(``LocalCommunicator``), over MPI processes (``mpi_communicator``) or, later, NCCL.

Every call waits at most ``timeout`` seconds (``None``: the communicator's
``default_timeout``). A wait past its deadline raises ``DeadlineExceededError`` naming the
collective, its ``name``, the step (the call's sequence number), this rank and the ranks
that did not arrive. Reductions are deterministic: the reduction order is by rank.

Example:
    >>> import threading
    >>> import numpy as np
    >>> from eagerflow.distribute.communicator import LocalCommunicator
    >>> comms = LocalCommunicator.create_group(2)
    >>> out = [None, None]
    >>> def work(r):
    ...     out[r] = comms[r].allreduce([np.array([1.0, 2.0]) * (r + 1)])[0]
    >>> threads = [threading.Thread(target=work, args=(r,)) for r in range(2)]
    >>> for t in threads: t.start()
    >>> for t in threads: t.join()
    >>> out[0].tolist(), out[1].tolist()
    ([3.0, 6.0], [3.0, 6.0])
"""

from __future__ import annotations

import threading
import time

import numpy as np

from eagerflow import errors

__all__ = ["Communicator", "LocalCommunicator", "REDUCE_OPS", "reduce_in_order"]

REDUCE_OPS = ("sum", "mean", "max", "min", "prod")

DEFAULT_TIMEOUT_S = 60.0


class Communicator:
    """One rank of a group of peers that run collectives together (the interface).

    Implementations: ``LocalCommunicator`` (threads of one process) and the MPI one in
    ``eagerflow.distribute.mpi_communicator``. Arrays are backend arrays (numpy, or cupy
    where the implementation supports it). Every rank must make the same sequence of
    collective calls; a rank that does not arrive makes the others fail at the deadline.
    """

    @property
    def rank(self):
        """This participant's index, ``0 .. size - 1``."""
        raise NotImplementedError

    @property
    def size(self):
        """The number of participants."""
        raise NotImplementedError

    @property
    def default_timeout(self):
        """Seconds a call waits when its ``timeout`` is None."""
        raise NotImplementedError

    def allreduce(self, arrays, op="sum", *, timeout=None, name=None):
        """Reduces each array of the list across ranks.

        Args:
            arrays: A list of arrays; every rank passes the same shapes and dtypes.
            op: ``"sum"``, ``"mean"``, ``"max"``, ``"min"`` or ``"prod"``.
            timeout: Seconds to wait for the other ranks (None: ``default_timeout``).
            name: A label for error messages.

        Returns:
            The list of reduced arrays (in place into the given arrays when they are
            writable and C-contiguous; callers use the returned list).
        """
        raise NotImplementedError

    def allreduce_packed(self, groups, flats, op="sum", *, timeout=None, name=None):
        """Reduces the concatenation of each group of arrays into its flat buffer.

        What gradient buckets use: an implementation may pack each group wherever its
        transfer starts from (the MPI one packs into shared memory), saving the copy into
        ``flats`` before the reduction. The result equals ``allreduce`` of the packed
        buffers, bit for bit.

        Args:
            groups: Lists of arrays; group ``k``'s sizes add up to ``flats[k].size`` and
                its dtype is ``flats[k]``'s.
            flats: Writable, C-contiguous 1-D arrays that receive the results.
            op, timeout, name: As for :meth:`allreduce`.

        Returns:
            ``flats``, holding the reduced values.
        """
        for group, flat in zip(groups, flats):
            np.concatenate(group, axis=None, out=flat)
        self.allreduce(flats, op, timeout=timeout, name=name)
        return flats

    def allgather(self, array, *, timeout=None, name=None):
        """Concatenates every rank's array along axis 0, in rank order."""
        raise NotImplementedError

    def broadcast(self, arrays, root=0, *, timeout=None, name=None):
        """Every rank gets ``root``'s arrays; returns the list."""
        raise NotImplementedError

    def send(self, array, dest, tag, *, timeout=None):
        """Sends ``array`` to rank ``dest`` under ``tag``."""
        raise NotImplementedError

    def recv(self, source, tag, *, timeout=None):
        """Returns the array rank ``source`` sent under ``tag``."""
        raise NotImplementedError

    def barrier(self, *, timeout=None, name=None):
        """Returns once every rank has called ``barrier``."""
        raise NotImplementedError

    def split(self, color, key=None):
        """A new Communicator of the ranks that pass the same ``color`` (a collective).

        Ranks are ordered by ``(key, rank)``; ``key`` defaults to this rank.
        """
        raise NotImplementedError

    def abort(self, message, code=1):
        """Ends the whole group now: every pending and later call fails."""
        raise NotImplementedError


def check_op(op):
    """Validates a reduction name; returns it lower-cased."""
    name = getattr(op, "value", op)
    name = str(name).lower()
    if name not in REDUCE_OPS:
        raise errors.InvalidArgumentError(
            None, "allreduce", "Unknown reduction %r: use one of %s." % (op, ", ".join(
                REDUCE_OPS)))
    return name


def reduce_in_order(arrays, op):
    """Reduces a list of same-shape arrays in list order (deterministic); a new array.

    ``"mean"`` divides the sum by the count (integer dtypes floor-divide, as TF does).
    """
    first = arrays[0]
    if len(arrays) == 1:
        return first.copy()
    if op in ("sum", "mean"):
        acc = first + arrays[1]
        for a in arrays[2:]:
            acc += a
        if op == "mean":
            if np.issubdtype(acc.dtype, np.integer):
                acc //= len(arrays)
            else:
                acc /= len(arrays)
        return acc
    fn = {"max": np.maximum, "min": np.minimum, "prod": np.multiply}[op]
    acc = np.asarray(fn(first, arrays[1]))  # (0-d inputs give a numpy scalar: no out=)
    for a in arrays[2:]:
        fn(acc, a, out=acc)
    return acc


def _writable(array):
    flags = getattr(array, "flags", None)
    return flags is not None and flags.writeable and flags.c_contiguous


class _Round:
    """One collective call of the group: what each rank brought, and the result."""

    __slots__ = ("kind", "name", "payloads", "arrived", "result", "error", "taken")

    def __init__(self, kind, name, size):
        self.kind = kind
        self.name = name
        self.payloads = [None] * size
        self.arrived = [False] * size
        self.result = None
        self.error = None
        self.taken = 0


class LocalGroup:
    """The state the ranks of an in-process group share: rounds, mailboxes, the abort.

    ``exchange`` is the one synchronization mechanism: every rank brings a payload, the
    last to arrive computes ``combine(payloads)`` (in rank order), every rank gets the
    result. Collectives, merge calls and ``split`` are all built on it.
    """

    def __init__(self, size, default_timeout=DEFAULT_TIMEOUT_S, label="replica"):
        if size < 1:
            raise errors.InvalidArgumentError(
                None, None, "A communicator group needs at least one rank, got %r." % (size,))
        self.size = int(size)
        self.default_timeout = float(default_timeout)
        self.label = label
        self._cond = threading.Condition()
        self._rounds = {}
        self._mail = {}
        self._error = None

    # -- failure --------------------------------------------------------------------------
    def abort(self, error):
        """Fails every pending and later call of every rank with ``error`` (the cause)."""
        with self._cond:
            if self._error is None:
                self._error = error
            self._cond.notify_all()

    @property
    def error(self):
        return self._error

    def _cancelled(self, rank, what):
        cause = self._error
        if isinstance(cause, errors.OpError) and getattr(cause, "_group_abort", False):
            return cause
        error = errors.CancelledError(
            None, what, "%s on %s %d was cancelled: %s (%s: %s)." % (
                what, self.label, rank, "another participant failed", type(cause).__name__,
                cause))
        error._group_cancelled = True
        error.__cause__ = cause
        return error

    # -- the rendezvous of one collective -------------------------------------------------
    def exchange(self, rank, seq, kind, name, payload, combine, timeout):
        """Brings ``payload`` to round ``seq``; returns ``combine([payload of every rank])``.

        Raises:
            DeadlineExceededError: Some rank did not arrive within ``timeout`` seconds
                (the group is then aborted, so the others fail too).
            CancelledError: The group was aborted (another rank failed).
            InternalError: Ranks called different collectives at the same step.
        """
        wait = self.default_timeout if timeout is None else float(timeout)
        what = kind if name is None else "%s '%s'" % (kind, name)
        with self._cond:
            if self._error is not None:
                raise self._cancelled(rank, what)
            rnd = self._rounds.get(seq)
            if rnd is None:
                rnd = self._rounds[seq] = _Round(kind, name, self.size)
            elif rnd.kind != kind:
                error = errors.InternalError(
                    None, kind, "Collective mismatch at step %d: %s %d called %s while "
                    "another called %s. Every %s must make the same collective calls in the "
                    "same order." % (seq, self.label, rank, what, rnd.kind, self.label))
                self._error = error
                self._cond.notify_all()
                raise error
            rnd.payloads[rank] = payload
            rnd.arrived[rank] = True
            last = all(rnd.arrived)
        if last:
            try:
                result = combine(rnd.payloads)
            except BaseException as exc:  # noqa: BLE001 - every rank gets the same failure
                with self._cond:
                    rnd.error = exc
                    self._cond.notify_all()
                raise
            with self._cond:
                rnd.result = (result,)
                self._take(seq, rnd)
                self._cond.notify_all()
            return result
        end = time.monotonic() + wait
        with self._cond:
            while rnd.result is None:
                if rnd.error is not None:
                    raise rnd.error
                if self._error is not None:
                    raise self._cancelled(rank, what)
                remaining = end - time.monotonic()
                if remaining <= 0:
                    missing = [r for r in range(self.size) if not rnd.arrived[r]]
                    error = errors.DeadlineExceededError(
                        None, kind, "%s (step %d) on %s %d timed out after %gs: %s %s did "
                        "not arrive (group of %d). Every %s must make the same collective "
                        "calls; check that none of them is stuck or skipped this call, or "
                        "raise the timeout." % (
                            what, seq, self.label, rank, wait, self.label + (
                                "s" if len(missing) > 1 else ""),
                            ", ".join(str(m) for m in missing), self.size, self.label))
                    error._group_abort = True
                    self._error = error
                    self._cond.notify_all()
                    raise error
                self._cond.wait(remaining)
            result = rnd.result[0]
            self._take(seq, rnd)
            return result

    def _take(self, seq, rnd):
        rnd.taken += 1
        if rnd.taken == self.size:
            del self._rounds[seq]

    # -- point to point -------------------------------------------------------------------
    def post(self, src, dest, tag, array):
        with self._cond:
            if self._error is not None:
                raise self._cancelled(src, "send")
            self._mail.setdefault((src, dest, tag), []).append(array)
            self._cond.notify_all()

    def take(self, src, dest, tag, timeout):
        wait = self.default_timeout if timeout is None else float(timeout)
        end = time.monotonic() + wait
        key = (src, dest, tag)
        with self._cond:
            while not self._mail.get(key):
                if self._error is not None:
                    raise self._cancelled(dest, "recv")
                remaining = end - time.monotonic()
                if remaining <= 0:
                    raise errors.DeadlineExceededError(
                        None, "recv", "recv on %s %d timed out after %gs waiting for tag %r "
                        "from %s %d: it never sent it." % (self.label, dest, wait, tag,
                                                           self.label, src))
                self._cond.wait(remaining)
            queue = self._mail[key]
            array = queue.pop(0)
            if not queue:
                del self._mail[key]
            return array


class LocalCommunicator(Communicator):
    """One rank of a group of threads in this process (MirroredStrategy's replicas).

    Create a whole group at once with ``LocalCommunicator.create_group(size)`` and give
    each thread its own rank's object. The last rank to arrive at a collective computes it
    in rank order, so every rank gets the same, deterministic result. A rank that never
    arrives makes the others raise ``DeadlineExceededError`` naming it; ``abort`` (or a
    strategy, when one replica raises) makes every waiting rank fail at once.

    Args:
        group: The shared LocalGroup.
        rank: This rank.
    """

    def __init__(self, group, rank):
        if not 0 <= rank < group.size:
            raise errors.InvalidArgumentError(
                None, None, "rank %r is outside a group of %d." % (rank, group.size))
        self._group = group
        self._rank = int(rank)
        self._seq = 0

    @classmethod
    def create_group(cls, size, default_timeout=DEFAULT_TIMEOUT_S, label="replica"):
        """Returns ``size`` communicators (ranks 0..size-1) sharing one new group."""
        group = LocalGroup(size, default_timeout, label)
        return [cls(group, r) for r in range(size)]

    rank = property(lambda self: self._rank)
    size = property(lambda self: self._group.size)
    default_timeout = property(lambda self: self._group.default_timeout)
    group = property(lambda self: self._group)

    def _next(self):
        seq = self._seq
        self._seq += 1
        return seq

    def _exchange(self, kind, name, payload, combine, timeout):
        return self._group.exchange(self._rank, self._next(), kind, name, payload, combine,
                                    timeout)

    def allreduce(self, arrays, op="sum", *, timeout=None, name=None):
        op = check_op(op)
        arrays = [np.asarray(a) if isinstance(a, (int, float, np.generic)) else a
                  for a in arrays]
        if self.size == 1:
            return [_finish(a, reduce_in_order([a], op)) for a in arrays]

        def combine(payloads):
            _check_same(payloads, "allreduce", name)
            return [reduce_in_order([p[i] for p in payloads], op)
                    for i in range(len(payloads[0]))]

        results = self._exchange("allreduce", name, arrays, combine, timeout)
        return [_finish(a, r) for a, r in zip(arrays, results)]

    def allgather(self, array, *, timeout=None, name=None):
        def combine(payloads):
            tails = {tuple(np.shape(p)[1:]) for p in payloads}
            if len(tails) > 1 or any(np.ndim(p) == 0 for p in payloads):
                raise errors.InvalidArgumentError(
                    None, "allgather", "allgather%s: the shapes %s differ after the first "
                    "dimension (or are scalars); only dimension 0 may differ between ranks."
                    % (_label(name), [list(np.shape(p)) for p in payloads]))
            return np.concatenate(payloads, axis=0)

        return self._exchange("allgather", name, array, combine, timeout)

    def broadcast(self, arrays, root=0, *, timeout=None, name=None):
        if not 0 <= root < self.size:
            raise errors.InvalidArgumentError(
                None, "broadcast", "broadcast root %r is outside a group of %d."
                % (root, self.size))
        arrays = list(arrays)
        results = self._exchange("broadcast", name, arrays, lambda p: p[root], timeout)
        if self._rank == root:
            return arrays
        if len(results) != len(arrays):
            raise errors.InvalidArgumentError(
                None, "broadcast", "broadcast%s: root sent %d arrays, rank %d expected %d."
                % (_label(name), len(results), self._rank, len(arrays)))
        return [_finish(a, r) for a, r in zip(arrays, results)]

    def send(self, array, dest, tag, *, timeout=None):
        self._check_peer(dest, "send")
        self._group.post(self._rank, dest, tag, np.array(array, copy=True))

    def recv(self, source, tag, *, timeout=None):
        self._check_peer(source, "recv")
        return self._group.take(source, self._rank, tag, timeout)

    def barrier(self, *, timeout=None, name=None):
        self._exchange("barrier", name, None, lambda p: None, timeout)

    def split(self, color, key=None):
        key = self._rank if key is None else key

        def combine(payloads):
            groups = {}
            for rank, (c, k) in enumerate(payloads):
                groups.setdefault(c, []).append((k, rank))
            out = {}
            for members in groups.values():
                members.sort()
                sub = LocalGroup(len(members), self.default_timeout, self._group.label)
                for new_rank, (_, rank) in enumerate(members):
                    out[rank] = (sub, new_rank)
            return out

        sub, new_rank = self._exchange("split", None, (color, key), combine, None)[self._rank]
        return LocalCommunicator(sub, new_rank)

    def abort(self, message, code=1):
        error = errors.AbortedError(None, "abort", "%s %d aborted the group (code %d): %s"
                                    % (self._group.label, self._rank, code, message))
        error._group_abort = True
        self._group.abort(error)

    def _check_peer(self, peer, what):
        if not 0 <= peer < self.size:
            raise errors.InvalidArgumentError(
                None, what, "%s: rank %r is outside a group of %d." % (what, peer, self.size))


def _label(name):
    return "" if name is None else " '%s'" % name


def _check_same(payloads, kind, name):
    first = payloads[0]
    for rank, p in enumerate(payloads):
        if len(p) != len(first):
            raise errors.InvalidArgumentError(
                None, kind, "%s%s: rank 0 passed %d arrays, rank %d passed %d."
                % (kind, _label(name), len(first), rank, len(p)))
        for i, (a, b) in enumerate(zip(first, p)):
            # Attributes, not np.asarray: the arrays may live on a GPU (cupy).
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
                raise errors.InvalidArgumentError(
                    None, kind, "%s%s: array %d is %s %s on rank 0 but %s %s on rank %d; "
                    "every rank must pass the same shapes and dtypes." % (
                        kind, _label(name), i, a.dtype, list(a.shape), b.dtype,
                        list(b.shape), rank))


def _finish(given, result):
    """The result, written into ``given`` when it can hold it in place."""
    if _writable(given) and isinstance(given, np.ndarray) and given.shape == result.shape \
            and given.dtype == result.dtype:
        np.copyto(given, result)
        return given
    return result
