"""Send/Recv between the tasks of a cluster, behind the ``Rendezvous`` interface.

Every process keeps one ``StepInbox``: a Recv waits there, and a Send whose destination is
another task pushes the tensor into that task's inbox with one ``SendTensor`` call. Keys
carry the step id, so one inbox serves every step at once; a failed step is aborted by id
(its waiting Recvs stop, its late tensors are dropped) without touching the others.

Example:
    >>> from eagerflow.distribute.rpc import rendezvous
    >>> from eagerflow.function.rendezvous import RendezvousKey
    >>> inbox = rendezvous.StepInbox()
    >>> key = RendezvousKey("x:0", "/job:ps/replica:0/task:0/device:CPU:0",
    ...                     "/job:worker/replica:0/task:0/device:CPU:0", 7)
    >>> inbox.send(key, 1.5)
    >>> inbox.recv(key, deadline=1.0)
    1.5
"""

from __future__ import annotations

import collections
import threading
import time

from eagerflow import errors
from eagerflow.function import builtins
from eagerflow.function import rendezvous as rendezvous_lib

__all__ = ["StepInbox", "StepRendezvous", "task_of_device"]

# Aborted step ids remembered (late Sends of those steps are dropped).
_ABORTED_KEPT = 4096


def task_of_device(device_name):
    """``/job:J/replica:R/task:T`` of a full device name (the whole name if it has no
    ``/device:`` part)."""
    cut = device_name.find("/device:")
    return device_name if cut < 0 else device_name[:cut]


class StepInbox(rendezvous_lib.Rendezvous):
    """The tensors sent to this task, keyed by (tensor, source, destination, step)."""

    def __init__(self):
        self._values = {}
        self._cond = threading.Condition()
        self._aborted = collections.OrderedDict()  # step id -> error

    def send(self, key, value):
        with self._cond:
            if key.step_id in self._aborted:
                return  # the step already failed: nobody will receive this
            if key in self._values:
                raise errors.InternalError(
                    None, builtins.SEND, "Tensor %s was sent twice under the same key." % (key,))
            self._values[key] = value
            self._cond.notify_all()

    def recv(self, key, deadline=None, waiter=None):
        wait = rendezvous_lib.get_default_deadline() if deadline is None else deadline
        end = time.monotonic() + wait
        with self._cond:
            while key not in self._values:
                cause = self._aborted.get(key.step_id)
                if cause is not None:
                    raise _cancelled(key, waiter, cause)
                remaining = end - time.monotonic()
                if remaining <= 0:
                    raise errors.DeadlineExceededError(
                        None, builtins.RECV,
                        "Recv on %s timed out after %gs waiting for tensor %s from task %s "
                        "(key %s): the sending task did not send it. Check that task %s is "
                        "running this step, or raise the deadline with "
                        "rendezvous.set_default_deadline." % (
                            waiter or key.dst_device, wait, key.tensor_name,
                            task_of_device(key.src_device), key,
                            task_of_device(key.src_device)))
                self._cond.wait(remaining)
            return self._values.pop(key)

    def abort(self, error):
        """Not used for a shared inbox: a failure aborts one step (``abort_step``)."""
        raise errors.InternalError(
            None, "Rendezvous", "A shared StepInbox is aborted one step at a time: "
            "call abort_step(step_id, error).")

    def abort_step(self, step_id, error):
        """Fails every pending and future Recv of ``step_id`` and drops its tensors."""
        with self._cond:
            if step_id not in self._aborted:
                self._aborted[step_id] = error
                while len(self._aborted) > _ABORTED_KEPT:
                    self._aborted.popitem(last=False)
            for key in [k for k in self._values if k.step_id == step_id]:
                del self._values[key]
            self._cond.notify_all()

    def pending(self):
        """Keys sent here and not received yet."""
        with self._cond:
            return list(self._values)


class StepRendezvous(rendezvous_lib.Rendezvous):
    """The rendezvous one step of one task runs with.

    Args:
        task: This task's name (``/job:worker/replica:0/task:0``).
        inbox: This process's StepInbox.
        step_id: The step.
        send_remote: ``send_remote(task, key, value, deadline)`` pushes a tensor to another
            task's inbox.
        deadline: Seconds a Recv or a remote Send may take.
    """

    def __init__(self, task, inbox, step_id, send_remote, deadline=None):
        self.task = task
        self.inbox = inbox
        self.step_id = step_id
        self._send_remote = send_remote
        self.deadline = deadline

    def send(self, key, value):
        dst = task_of_device(key.dst_device)
        if dst == self.task:
            self.inbox.send(key, value)
        else:
            self._send_remote(dst, key, value, self.deadline)

    def recv(self, key, deadline=None, waiter=None):
        return self.inbox.recv(key, self.deadline if deadline is None else deadline, waiter)

    def abort(self, error):
        self.inbox.abort_step(self.step_id, error)


def _cancelled(key, waiter, cause):
    error = errors.CancelledError(
        None, builtins.RECV, "Recv of %s on %s was cancelled: step %d failed elsewhere "
        "(%s: %s)." % (key.tensor_name, waiter or key.dst_device, key.step_id, type(cause).__name__,
            cause))
    error._rendezvous_aborted = True
    return error
