"""Running one graph across several devices.

``make_executor(graph)`` places the graph (``placement.place``). When every node lands on one
device it returns the ordinary single-device Executor, so such graphs keep the fast path.
Otherwise it returns a MultiDeviceExecutor: the graph is partitioned (``partition``), each
device's subgraph is compiled by its own Executor, and a call runs the subgraphs
concurrently, one thread per device (the calling thread runs the first), handing tensors
across through a fresh LocalRendezvous. numpy releases the GIL inside its large kernels, so
independent heavy branches on two logical CPUs do run in parallel.

A failure on any device aborts the call's rendezvous (waiting Recvs stop at once) and the
caller gets the failing node's own error.

Gradients need nothing special: a function's gradient is traced on the whole graph before
placement, then its forward and backward graphs are each placed and partitioned like any
graph. A forward edge A -> B that crosses devices usually has a backward edge dB -> dA in
the other direction, so the Send of the forward pass has a Recv as its gradient, and the
Recv a Send.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import multi_device
    >>> f = ef.function(lambda x: x * 2.0)
    >>> graph = f.get_concrete_function(ef.TensorSpec([2])).graph
    >>> type(multi_device.make_executor(graph)).__name__  # one device: the plain executor
    'Executor'
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import weakref

from eagerflow.backend import blas_threads
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function import executor as executor_lib
from eagerflow.function import partition as partition_lib
from eagerflow.function import placement as placement_lib
from eagerflow.function import rendezvous as rendezvous_lib
from eagerflow.function.executor import Executor
from eagerflow.function.placement import FREE_OPS

__all__ = ["make_executor", "MultiDeviceExecutor", "set_cluster_executor_factory",
           "step_frame"]

_step_ids = itertools.count()
# Set by eagerflow.distribute when this process joins a cluster: builds the executor of a
# graph that places nodes or variables on other tasks (None for a purely local graph).
_cluster_executor_factory = None


def set_cluster_executor_factory(factory):
    """Installs ``factory(graph) -> executor or None``, asked first by ``make_executor``.

    The cluster runtime (a layer above) plugs in here, so that a traced function placed on
    ``/job:NAME/task:I`` devices runs partitioned across tasks. Returns the previous one.
    """
    global _cluster_executor_factory
    previous = _cluster_executor_factory
    _cluster_executor_factory = factory
    return previous


class _Frame(threading.local):
    """The rendezvous and step id of the call running on this thread."""

    rendezvous = None
    step_id = 0
    deadline = None


_frame = _Frame()


@contextlib.contextmanager
def step_frame(rendezvous, step_id, deadline=None):
    """Runs the Send and Recv nodes executed on this thread through ``rendezvous``.

    Args:
        rendezvous: A Rendezvous (a cluster step's, for a partition of a graph placed on
            several tasks).
        step_id: The step id that completes every key of this call.
        deadline: Seconds a Recv waits (None: the rendezvous default).
    """
    saved = (_frame.rendezvous, _frame.step_id, _frame.deadline)
    _frame.rendezvous, _frame.step_id, _frame.deadline = rendezvous, step_id, deadline
    try:
        yield
    finally:
        _frame.rendezvous, _frame.step_id, _frame.deadline = saved


def current_frame():
    """``(rendezvous, step_id, deadline)`` of the multi-device call running on this thread,
    or None outside one (collective nodes meet their peers through it)."""
    frame = _frame
    if frame.rendezvous is None:
        return None
    return frame.rendezvous, frame.step_id, frame.deadline


def make_executor(graph):
    """An executor for ``graph``: single-device when placement uses one device.

    Args:
        graph: A Graph (normally the optimized one).

    Returns:
        An Executor, or a MultiDeviceExecutor when nodes land on several devices. Both have
        ``run(args, captures)``, ``output_devices`` and ``graph``.
    """
    factory = _cluster_executor_factory
    if factory is not None:
        executor = factory(graph)
        if executor is not None:
            return executor
    if _trivially_single_device(graph):
        return Executor(graph)
    placement = placement_lib.place(graph)
    used = {placement[n.id] for n in graph.nodes if n.op not in FREE_OPS}
    if len(used) > 1:
        return MultiDeviceExecutor(graph, placement)
    if all(executor_lib._node_device(n) is placement[n.id] for n in graph.nodes
           if n.op not in FREE_OPS):
        return Executor(graph)
    return Executor(_with_devices(graph, placement))


def _trivially_single_device(graph):
    """True when nothing can move a node off CPU:0 (one CPU, no scopes, variables on CPU:0).

    Checked without touching the device list, so tracing and calling a function does not
    freeze the logical device configuration more than running an op does.
    """
    if context.config.logical_cpu_count != 1 or context.config.log_device_placement:
        return False
    if any(n.device for n in graph.nodes):
        return False
    return all(v._device is context.CPU0 for v in graph.variables)


def _with_devices(graph, placement):
    from eagerflow.function.passes.common import copy_graph

    copy = copy_graph(graph)
    for node in copy.nodes:
        node.device = placement[node.id].name
    return copy


class MultiDeviceExecutor:
    """Runs a graph partitioned across devices, one thread per device.

    Args:
        graph: The whole Graph.
        placement: ``{node.id: Device}`` (default: ``placement.place(graph)``).
        deadline: Seconds a Recv waits for its Send (default:
            ``rendezvous.get_default_deadline()`` at call time).
        rendezvous_factory: Builds the Rendezvous of one call (default: LocalRendezvous).

    Attributes:
        placement: The placement used.
        partitioned: The PartitionedGraph (its ``summary()`` gives Send/Recv counts).
        executors: One Executor per partition.
        output_devices: The device of each output (None for an argument passed through).
    """

    def __init__(self, graph, placement=None, deadline=None, rendezvous_factory=None):
        self.graph = graph
        self.placement = placement if placement is not None else placement_lib.place(graph)
        self.partitioned = partition_lib.partition(graph, self.placement)
        self.executors = [Executor(p.graph) for p in self.partitioned.partitions]
        self.deadline = deadline
        self._factory = rendezvous_factory or rendezvous_lib.LocalRendezvous
        self.output_devices = [
            None if node.op == builtins.PLACEHOLDER else self.placement[node.id]
            for node, _ in graph.outputs]
        self._threads = None
        self._threads_lock = threading.Lock()
        # Partitions on CPUs compute at once: they share the BLAS threads between them.
        self._cpu_partitions = sum(p.device.backend_index == 0
                                   for p in self.partitioned.partitions)

    @property
    def devices(self):
        return [p.device for p in self.partitioned.partitions]

    def run(self, args, captures):
        """Runs every device's subgraph; returns the whole graph's output arrays.

        Raises:
            The error of the failing node (with its name), from whichever device failed.
        """
        parts = self.partitioned.partitions
        rendezvous = self._factory()
        step_id = next(_step_ids)
        deadline = self.deadline
        results = [None] * len(parts)
        failures = [None] * len(parts)

        def work(k):
            part = parts[k]
            saved = (_frame.rendezvous, _frame.step_id, _frame.deadline)
            _frame.rendezvous, _frame.step_id, _frame.deadline = rendezvous, step_id, deadline
            try:
                results[k] = self.executors[k].run(
                    [_to_device(args[i], part.device) for i in part.input_positions],
                    [_to_device(captures[i], part.device) for i in part.capture_positions])
            except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
                failures[k] = exc
                rendezvous.abort(exc)
            finally:
                _frame.rendezvous, _frame.step_id, _frame.deadline = saved

        with blas_threads.share(self._cpu_partitions):
            self._run_partitions(work, parts)
        if any(f is not None for f in failures):
            raise _first_cause(failures)
        return [results[k][i] for k, i in self.partitioned.outputs]

    def _run_partitions(self, work, parts):
        if self._threads_lock.acquire(blocking=False):
            # The usual case: this executor's own device threads, started once (starting
            # threads per call cost about 70 us a thread).
            try:
                if self._threads is None:
                    self._threads = _DeviceThreads(
                        ["eagerflow-%s" % p.device.name for p in parts[1:]])
                    # The threads end when the executor is collected.
                    weakref.finalize(self, self._threads.close)
                self._threads.run(work, len(parts))
            finally:
                self._threads_lock.release()
        else:
            # The same executor called again while running (from another thread):
            # threads of this call's own.
            threads = [threading.Thread(target=work, args=(k,), daemon=True,
                                        name="eagerflow-%s" % parts[k].device.name)
                       for k in range(1, len(parts))]
            for thread in threads:
                thread.start()
            work(0)
            for thread in threads:
                thread.join()


class _DeviceThreads:
    """Persistent threads for partitions 1..n-1 of one executor (the caller runs 0)."""

    def __init__(self, names):
        self._tasks = [queue.SimpleQueue() for _ in names]
        self._done = queue.SimpleQueue()
        for tasks, name in zip(self._tasks, names):
            threading.Thread(target=self._loop, args=(tasks,), daemon=True,
                             name=name).start()

    def _loop(self, tasks):
        while True:
            item = tasks.get()
            if item is None:
                return
            work, k = item
            try:
                work(k)  # never raises: failures are recorded by ``work`` itself
            finally:
                self._done.put(k)

    def run(self, work, n):
        for k in range(1, n):
            self._tasks[k - 1].put((work, k))
        work(0)
        for _ in range(1, n):
            self._done.get()

    def close(self):
        for tasks in self._tasks:
            tasks.put(None)


def _first_cause(failures):
    """The failure that caused the others (Recvs cancelled by the abort come last)."""
    found = [f for f in failures if f is not None]
    for f in found:
        if not getattr(f, "_rendezvous_aborted", False):
            return f
    return found[0]


def _to_device(array, device):
    """An argument array as ``device`` holds it (free between CPUs, a copy to a GPU)."""
    if device.backend_index == 0:
        if type(array).__module__.startswith("cupy"):
            return array.get()
        return array
    xp = device.backend.module
    with xp.cuda.Device(device.physical_index):
        return xp.asarray(array)


def _copy_between(value, src_name, device):
    """``dispatch.copy_to_device`` on a raw array: free between logical CPUs."""
    return _to_device(value, device)


def _send_step(node, device, executor):
    key = (node.attrs["tensor_name"], node.attrs["send_device"], node.attrs["recv_device"])

    def send(value):
        frame = _frame
        frame.rendezvous.send(rendezvous_lib.RendezvousKey(*key, frame.step_id), value)

    return send


def _recv_step(node, device, executor):
    key = (node.attrs["tensor_name"], node.attrs["send_device"], node.attrs["recv_device"])
    waiter = device.name
    source = key[1]

    def recv():
        frame = _frame
        value = frame.rendezvous.recv(rendezvous_lib.RendezvousKey(*key, frame.step_id),
                                      frame.deadline, waiter)
        return _copy_between(value, source, device)

    return recv


executor_lib.BUILTIN_STEPS[builtins.SEND] = _send_step
executor_lib.BUILTIN_STEPS[builtins.RECV] = _recv_step
