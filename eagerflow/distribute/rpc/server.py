"""The worker service every task of a cluster runs.

It holds what other tasks placed here: graph partitions (registered once as serialized
``graph.proto`` bytes, then run by handle with only the arguments and a step id) and the
variables those partitions use, bound by name (a parameter server's variables live here).
Tensors sent to this task by other tasks' Sends wait in the task's ``StepInbox``.

Every call must carry the job's shared secret; a call without it is refused with
UNAUTHENTICATED before anything is parsed further. The server binds to loopback unless told
otherwise.

Example:
    >>> from eagerflow.distribute.rpc import server
    >>> server.loopback_bind_address("localhost:2222")
    '127.0.0.1:2222'
"""

from __future__ import annotations

import hmac
import itertools
import logging
import os
import threading

from eagerflow import errors
from eagerflow.distribute.rpc import client as client_lib
from eagerflow.distribute.rpc import wire
from eagerflow.distribute.rpc.rendezvous import StepRendezvous

__all__ = ["WorkerService", "start_grpc_server", "loopback_bind_address"]

_log = logging.getLogger("eagerflow")
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")
# Threads serving calls: a RunGraph waits in its Recvs while SendTensor calls fill them.
SERVER_THREADS = 32


def loopback_bind_address(address):
    """The loopback address to bind for a task address ``host:port``.

    Raises:
        InvalidArgumentError: The host is not a loopback name (serving other hosts must be
            asked for explicitly, with ``bind_address``).
    """
    host, _, port = address.rpartition(":")
    if host not in _LOOPBACK or not port.isdigit():
        raise errors.InvalidArgumentError(
            None, "Server", "Task address %r is not a loopback host:port. A task serves only "
            "this machine by default; to serve other hosts pass bind_address='0.0.0.0:%s' "
            "(every call still needs the job's secret)." % (address, port or "PORT"))
    return "127.0.0.1:%s" % port if host != "::1" and host != "[::1]" else "[::1]:%s" % port


class WorkerService:
    """What a task does for the others (independent of the transport).

    Args:
        task: This task's name.
        inbox: This process's StepInbox.
        send_remote: ``send_remote(task, key, value, deadline)`` for Sends to other tasks.
    """

    def __init__(self, task, inbox, send_remote):
        self.task = task
        self.inbox = inbox
        self._send_remote = send_remote
        self._lock = threading.Lock()
        self._graphs = {}  # handle -> (name, executor, input avals)
        self._handles = itertools.count()
        self.variables = {}  # wire name -> Variable
        self.stopped = threading.Event()

    # -- the methods ----------------------------------------------------------------------
    def register_graph(self, request):
        from eagerflow.function import serialize
        from eagerflow.function.executor import Executor
        from eagerflow.function import multi_device  # noqa: F401 - registers Send/Recv steps

        saved = serialize.bytes_to_proto(request.graph)
        bound = {}
        with self._lock:
            for vdef in saved.variable:
                bound[vdef.name] = self._variable_for(vdef)
        graph = serialize.proto_to_graph(saved, variable_values=bound, clear_devices=True)
        executor = Executor(graph)
        avals = [n.avals[0] for n in graph.inputs]
        with self._lock:
            handle = "%s#%d" % (request.name[:200], next(self._handles))
            self._graphs[handle] = (request.name, executor, avals)
        pb = wire.pb()
        return pb.RegisterGraphResponse(handle=handle)

    def _variable_for(self, vdef):
        """The variable named by a VariableDef: the one already here, or a new one (zeros;
        the registering task initializes it through a graph)."""
        import numpy as np

        from eagerflow import dtypes as dtypes_lib
        from eagerflow.variables import Variable

        var = self.variables.get(vdef.name)
        if var is not None:
            return var
        if vdef.shape.unknown_rank or any(d < 0 for d in vdef.shape.dim):
            raise errors.InvalidArgumentError(
                None, "RegisterGraph", "Variable %s has a shape that is not fully known; a "
                "task can hold only variables of known shape." % vdef.name)
        dtype = dtypes_lib.as_dtype(int(vdef.dtype))
        count = 1
        for d in vdef.shape.dim:
            count *= d
        if count * dtype.np_dtype.itemsize > client_lib.MAX_MESSAGE_BYTES * 4:
            raise errors.InvalidArgumentError(
                None, "RegisterGraph", "Variable %s of shape %s is too large to hold." % (
                    vdef.name, list(vdef.shape.dim)))
        var = Variable(np.zeros(tuple(vdef.shape.dim), dtype.np_dtype),
                       trainable=vdef.trainable, name=vdef.name.split(":")[0])
        self.variables[vdef.name] = var
        return var

    def run_graph(self, request):
        from eagerflow.function.multi_device import step_frame

        pb = wire.pb()
        entry = self._graphs.get(request.handle)
        reply = pb.RunGraphResponse()
        try:
            if entry is None:
                raise errors.NotFoundError(
                    None, "RunGraph", "Task %s has no graph registered as %r (was the task "
                    "restarted? its graphs are registered again on the next call)." % (
                        self.task, request.handle[:200]))
            name, executor, avals = entry
            if len(request.arg) != len(avals):
                raise errors.InvalidArgumentError(
                    None, "RunGraph", "Graph %s takes %d arguments, got %d." % (
                        name, len(avals), len(request.arg)))
            args = []
            for k, (msg, aval) in enumerate(zip(request.arg, avals)):
                array = wire.decode_tensor(msg, "argument %d of graph %s" % (k, name))
                if array.dtype != aval.dtype.np_dtype or not _shape_ok(aval.shape, array.shape):
                    raise errors.InvalidArgumentError(
                        None, "RunGraph", "Graph %s: argument %d is %s%s, expected %r." % (
                            name, k, array.dtype, list(array.shape), aval))
                args.append(array)
            deadline = request.deadline_s if request.deadline_s > 0 else None
            rendezvous = StepRendezvous(self.task, self.inbox, request.step_id,
                                        self._send_remote, deadline)
            with step_frame(rendezvous, request.step_id, deadline):
                outputs = executor.run(args, [])
            return wire.WithTensors(reply, 1, outputs)  # RunGraphResponse.output
        except Exception as exc:  # noqa: BLE001 - reported to the caller as data
            self.inbox.abort_step(request.step_id, exc)
            wire.encode_error(exc, self.task, reply.error)
        return reply

    def send_tensor(self, request):
        from eagerflow.function.rendezvous import RendezvousKey

        key = RendezvousKey(request.tensor_name, request.src_device, request.dst_device,
                            request.step_id)
        self.inbox.send(key, wire.decode_tensor(request.value, "tensor %s" % key.tensor_name))
        return wire.pb().SendTensorResponse()

    def abort_step(self, request):
        self.inbox.abort_step(request.step_id, errors.AbortedError(
            None, "AbortStep", "step %d was aborted by the caller: %s" % (
                request.step_id, request.reason)))
        return wire.pb().AbortStepResponse()

    def status(self, request):
        return wire.pb().StatusResponse(task=self.task, pid=os.getpid(),
                                        graphs=len(self._graphs), variables=len(self.variables))

    def shutdown(self, request):
        self.stopped.set()
        return wire.pb().ShutdownResponse()


def _shape_ok(expected, shape):
    if expected is None:
        return True
    return len(expected) == len(shape) and all(e is None or e == s
                                               for e, s in zip(expected, shape))


def start_grpc_server(service, bind_address, secret):
    """Serves ``service`` on ``bind_address``; returns ``(grpc server, bound port)``.

    Raises:
        UnavailableError: The address cannot be bound (in use?).
    """
    grpc = client_lib.import_grpc()
    from concurrent import futures

    pb = wire.pb()
    expected = secret.encode("ascii") if isinstance(secret, str) else bytes(secret)

    def guarded(method, request_type, response_type):
        def handler(request, context):
            presented = ""
            for key, value in context.invocation_metadata():
                if key == client_lib.SECRET_METADATA:
                    presented = value
            if not hmac.compare_digest(presented.encode("ascii", "replace"), expected):
                _log.warning("Task %s refused a %s call without this job's secret from %s",
                             service.task, method.__name__, context.peer())
                context.abort(grpc.StatusCode.UNAUTHENTICATED,
                              "this job's shared secret was not presented "
                              "(set EAGERFLOW_CLUSTER_SECRET as the job's other tasks do)")
            return method(request)

        return grpc.unary_unary_rpc_method_handler(
            handler, request_deserializer=getattr(pb, request_type).FromString,
            response_serializer=client_lib._serialize)

    methods = {
        "RegisterGraph": service.register_graph, "RunGraph": service.run_graph,
        "SendTensor": service.send_tensor, "AbortStep": service.abort_step,
        "Status": service.status, "Shutdown": service.shutdown,
    }
    handlers = {name: guarded(fn, *client_lib._METHODS[name]) for name, fn in methods.items()}
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=SERVER_THREADS,
                                                    thread_name_prefix="eagerflow-rpc"),
                         options=client_lib.CHANNEL_OPTIONS)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(client_lib.SERVICE, handlers),))
    try:
        port = server.add_insecure_port(bind_address)
    except RuntimeError as exc:
        raise errors.UnavailableError(
            None, "Server", "Task %s cannot listen on %s: %s" % (
                service.task, bind_address, exc)) from None
    if not port:
        raise errors.UnavailableError(
            None, "Server", "Task %s cannot listen on %s (address in use?)." % (
                service.task, bind_address))
    server.start()
    return server, port
