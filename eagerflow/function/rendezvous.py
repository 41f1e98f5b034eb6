"""The rendezvous: where a Send leaves a tensor and the matching Recv picks it up.

A key names one transfer of one call: ``(tensor name, source device, destination device,
step id)``. ``Rendezvous`` is the interface a transport implements (``send``, ``recv`` with a
deadline, ``abort``); ``LocalRendezvous`` is the in-process one, a dict guarded by a
condition variable. A Recv never hangs silently: past its deadline it raises
DeadlineExceededError naming the key and the waiting device, and when another device of the
same call fails the rendezvous is aborted so every waiting Recv stops at once.

Example:
    >>> from eagerflow.function import rendezvous
    >>> r = rendezvous.LocalRendezvous()
    >>> key = rendezvous.RendezvousKey("tanh:0", "/device:CPU:0", "/device:CPU:1", 0)
    >>> r.send(key, 3.0)
    >>> r.recv(key, deadline=1.0)
    3.0
"""

from __future__ import annotations

import collections
import threading
import time

from eagerflow import errors
from eagerflow.function import builtins

__all__ = ["Rendezvous", "LocalRendezvous", "RendezvousKey", "set_default_deadline",
           "get_default_deadline"]

_default_deadline_s = 60.0


def set_default_deadline(seconds):
    """Sets how long a Recv waits for its Send before raising DeadlineExceededError.

    Args:
        seconds: A positive number of seconds.
    """
    global _default_deadline_s
    if not seconds > 0:
        raise errors.InvalidArgumentError(
            None, None, "The Recv deadline must be positive, got %r." % (seconds,))
    _default_deadline_s = float(seconds)


def get_default_deadline():
    """The Recv deadline in seconds (60 unless ``set_default_deadline`` changed it)."""
    return _default_deadline_s


class RendezvousKey(collections.namedtuple(
        "RendezvousKey", ("tensor_name", "src_device", "dst_device", "step_id"))):
    """Names one transfer: which tensor, from where, to where, in which call."""

    __slots__ = ()

    def __str__(self):
        # TensorFlow's layout: "src;dst;tensor;step".
        return "%s;%s;%s;%d" % (self.src_device, self.dst_device, self.tensor_name,
                                self.step_id)


class Rendezvous:
    """The interface of a transport between devices (in-process here; MPI plugs in later)."""

    def send(self, key, value):
        """Makes ``value`` available under ``key``; never blocks."""
        raise NotImplementedError

    def recv(self, key, deadline=None, waiter=None):
        """Returns the value sent under ``key``, waiting at most ``deadline`` seconds.

        Args:
            key: A RendezvousKey.
            deadline: Seconds to wait (default: ``get_default_deadline()``).
            waiter: The name of the waiting device, for the error message.

        Raises:
            DeadlineExceededError: Nothing was sent under ``key`` in time.
            CancelledError: The rendezvous was aborted because another device failed.
        """
        raise NotImplementedError

    def abort(self, error):
        """Fails every pending and future ``recv`` (another participant failed)."""
        raise NotImplementedError


class LocalRendezvous(Rendezvous):
    """An in-process rendezvous: a dict of sent values and a condition variable."""

    def __init__(self):
        self._values = {}
        self._cond = threading.Condition()
        self._error = None

    def send(self, key, value):
        with self._cond:
            if key in self._values:
                raise errors.InternalError(
                    None, builtins.SEND, "Tensor %s was sent twice under the same key." % (key,))
            self._values[key] = value
            self._cond.notify_all()

    def recv(self, key, deadline=None, waiter=None):
        wait = _default_deadline_s if deadline is None else deadline
        end = time.monotonic() + wait
        with self._cond:
            while key not in self._values:
                if self._error is not None:
                    raise _aborted(key, waiter, self._error)
                remaining = end - time.monotonic()
                if remaining <= 0:
                    raise errors.DeadlineExceededError(
                        None, builtins.RECV,
                        "Recv on %s timed out after %gs waiting for tensor %s from %s (key "
                        "%s): its Send never ran. Check that the producing device's subgraph "
                        "is running, or raise the deadline with "
                        "rendezvous.set_default_deadline." % (
                            waiter or key.dst_device, wait, key.tensor_name, key.src_device,
                            key))
                self._cond.wait(remaining)
            return self._values.pop(key)

    def abort(self, error):
        with self._cond:
            if self._error is None:
                self._error = error
            self._cond.notify_all()

    def pending(self):
        """Keys sent but not received yet."""
        with self._cond:
            return list(self._values)


def _aborted(key, waiter, cause):
    error = errors.CancelledError(
        None, builtins.RECV, "Recv of %s on %s was cancelled: another device of this step failed "
        "(%s: %s)." % (key.tensor_name, waiter or key.dst_device, type(cause).__name__,
                       cause))
    error._rendezvous_aborted = True
    return error
