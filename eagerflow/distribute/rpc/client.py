"""Calling another task's worker service: the shared secret and a deadline on every call.

A transport failure becomes an eagerflow error naming the task and its address: the task
being gone (``UnavailableError``), a call past its deadline (``DeadlineExceededError``,
naming what was sent or run), a refused secret (``UnauthenticatedError``). An error raised by
the remote graph itself comes back as data and is raised as its own eagerflow error class,
naming the task it was raised on.

Example:
    >>> from eagerflow.distribute.rpc import client
    >>> client.SECRET_METADATA
    'eagerflow-secret'
"""

from __future__ import annotations

from eagerflow import errors
from eagerflow.distribute.rpc import wire

__all__ = ["WorkerClient", "SECRET_METADATA", "SERVICE", "CHANNEL_OPTIONS"]

SERVICE = "eagerflow.rpc.WorkerService"
SECRET_METADATA = "eagerflow-secret"
# Tensors up to 1 GiB per message (gRPC's default is 4 MiB).
MAX_MESSAGE_BYTES = 1 << 30
CHANNEL_OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
CONTROL_DEADLINE_S = 30.0

_METHODS = {
    "RegisterGraph": ("RegisterGraphRequest", "RegisterGraphResponse"),
    "RunGraph": ("RunGraphRequest", "RunGraphResponse"),
    "SendTensor": ("SendTensorRequest", "SendTensorResponse"),
    "AbortStep": ("AbortStepRequest", "AbortStepResponse"),
    "Status": ("StatusRequest", "StatusResponse"),
    "Shutdown": ("ShutdownRequest", "ShutdownResponse"),
}


def import_grpc():
    """grpc, or a clear error naming the extra to install."""
    try:
        import grpc
    except ImportError:
        raise errors.UnimplementedError(
            None, None, "A cluster of tasks talks gRPC, which is not installed: "
            "pip install 'eagerflow[ps]' (grpcio).") from None
    return grpc


class WorkerClient:
    """The worker service of one task, as this process calls it.

    Args:
        task: The task's name (``/job:ps/replica:0/task:0``), for messages.
        address: ``host:port``.
        secret: The job's shared secret (bytes or str).
    """

    def __init__(self, task, address, secret):
        grpc = import_grpc()
        self._grpc = grpc
        self.task = task
        self.address = address
        self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._metadata = ((SECRET_METADATA, _text(secret)),)
        pb = wire.pb()
        self._calls = {}
        for method, (_, response) in _METHODS.items():
            self._calls[method] = self._channel.unary_unary(
                "/%s/%s" % (SERVICE, method),
                request_serializer=_serialize,
                response_deserializer=getattr(pb, response).FromString)

    def close(self):
        self._channel.close()

    # -- calls --------------------------------------------------------------------------
    def call(self, method, request, timeout, what):
        """Calls ``method`` and waits; transport errors become eagerflow errors."""
        try:
            return self._calls[method](request, timeout=timeout, metadata=self._metadata)
        except self._grpc.RpcError as exc:
            raise self.translate(exc, method, timeout, what) from None

    def call_future(self, method, request, timeout):
        """Starts ``method``; ``.result()`` of the returned future raises grpc errors (pass
        them through ``translate``)."""
        return self._calls[method].future(request, timeout=timeout, metadata=self._metadata)

    def register_graph(self, name, data, timeout=CONTROL_DEADLINE_S):
        pb = wire.pb()
        reply = self.call("RegisterGraph", pb.RegisterGraphRequest(name=name, graph=data),
                          timeout, "registering graph %s" % name)
        return reply.handle

    def send_tensor(self, key, array, timeout):
        pb = wire.pb()
        request = wire.WithTensors(pb.SendTensorRequest(
            tensor_name=key.tensor_name, src_device=key.src_device, dst_device=key.dst_device,
            step_id=key.step_id), 5, [array])
        self.call("SendTensor", request, timeout,
                  "sending tensor %s from %s to %s (step %d)" % (
                      key.tensor_name, key.src_device, key.dst_device, key.step_id))

    def abort_step(self, step_id, reason, timeout=5.0):
        """Best effort: a task that is gone has nothing to abort."""
        pb = wire.pb()
        try:
            self._calls["AbortStep"](pb.AbortStepRequest(step_id=step_id, reason=reason[:2000]),
                                     timeout=timeout, metadata=self._metadata)
        except self._grpc.RpcError:
            pass

    def status(self, timeout=CONTROL_DEADLINE_S):
        return self.call("Status", wire.pb().StatusRequest(), timeout, "asking for status")

    def shutdown(self, timeout=5.0):
        """Asks the task to stop serving (best effort: it may be gone already)."""
        try:
            self._calls["Shutdown"](wire.pb().ShutdownRequest(), timeout=timeout,
                                    metadata=self._metadata)
        except self._grpc.RpcError:
            pass

    def translate(self, exc, method, timeout, what):
        """The eagerflow error for a failed gRPC call."""
        code = exc.code() if hasattr(exc, "code") else None
        detail = exc.details() if hasattr(exc, "details") else str(exc)
        codes = self._grpc.StatusCode
        where = "%s (%s)" % (self.task, self.address)
        if code == codes.UNAVAILABLE:
            error = errors.UnavailableError(
                None, method, "Task %s is unavailable while %s: %s. The task has died or "
                "cannot be reached; a parameter-server job restarts from its last checkpoint "
                "when a ps task is lost." % (where, what, detail))
        elif code == codes.DEADLINE_EXCEEDED:
            error = errors.DeadlineExceededError(
                None, method, "%s timed out after %gs on task %s." % (what[:1].upper() + what[1:],
                                                                 timeout, where))
        elif code == codes.UNAUTHENTICATED:
            error = errors.UnauthenticatedError(
                None, method, "Task %s refused the call (%s): %s" % (where, what, detail))
        elif code == codes.CANCELLED:
            error = errors.CancelledError(None, method, "%s was cancelled on task %s: %s" % (
                what, where, detail))
        else:
            error = errors.InternalError(
                None, method, "%s failed on task %s: %s %s" % (what, where, code, detail))
        error.task = self.task
        return error


def _serialize(message):
    """A message's bytes (a plain message, or a ``wire.WithTensors``)."""
    return message.SerializeToString()


def _text(secret):
    return secret.decode("ascii") if isinstance(secret, bytes) else str(secret)
