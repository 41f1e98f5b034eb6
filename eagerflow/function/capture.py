"""Captured steps: a GPU ``@function`` call recorded once as a CUDA graph, then replayed.

A traced function called with the same shapes every step (a training step) spends most of
its host time launching kernels one by one. When every node of its optimized, placed graph
runs on one GPU and nothing reads a value on the host, the call is recorded once with
cupy's stream capture and each later call only copies its arguments into the recorded
buffers and launches the graph (TinyJit's "capture the schedule once, replay it").

Eligibility is decided once per compiled graph, from what the nodes declare
(``Primitive.host_sync``, ``Builtin.host_sync``) and where they run, by
:func:`refusals`. A refused graph keeps the plain executor and says why; so does one whose
capture fails at run time (cupy raises, for instance for a library that refuses stream
capture): it falls back to plain launches once, with the exception text as its reason.
``ConcreteFunction.experimental_capture_status`` and
``Function.experimental_capture_reasons`` show the decision.

Life of an eligible graph (``Capture.run``):

1. The first call runs plainly (warm-up: kernels compiled, memory pools filled), with the
   schedule compiled for capture (``Executor(graph, capture=True)``: variable writes go
   into the variables' own arrays), so that recording launches only what has run.
2. The second call records: static device copies of the arguments are made and that
   schedule runs on a private non-blocking stream between
   ``begin_capture`` and ``end_capture``, allocating from a memory pool of its own so
   that nothing allocated later can take the addresses the graph keeps. Nothing executes
   while recording; the graph is then launched once for this call's results.
3. Later calls check that every variable still holds the array the graph writes (a
   variable given a new array outside the function invalidates the recording, which is
   made again, at most ``MAX_RECORDINGS`` times) and that nothing outside holds an array
   the graph updates in place (an eager read taken earlier keeps its value: that call
   runs plainly), copy the arguments in, launch on the current stream and return copies
   of the outputs, so a later replay never overwrites what the caller holds.

The switch: ``eagerflow.config.experimental.set_step_capture(False)`` or the environment
variable ``EAGERFLOW_STEP_CAPTURE=0``. Calls recorded on a tape, calls under the profiler
and graphs on the CPU run the plain executor.

Example:
    >>> import eagerflow as ef
    >>> f = ef.function(lambda x: x * 2.0)
    >>> cf = f.get_concrete_function(ef.TensorSpec([2], ef.float32))
    >>> status = cf.experimental_capture_status()
    >>> status.state
    'refused'
    >>> "not a GPU" in status.reasons[0]
    True
"""

from __future__ import annotations

import collections
import sys
import threading
import weakref

from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function import executor as executor_lib
from eagerflow.ops import registry, static_value
from eagerflow.ops.registry import AbstractValue

__all__ = ["CaptureStatus", "Capture", "CudaGraphs", "refusals", "for_executor",
           "set_recorder", "MAX_RECORDINGS"]

# A function whose variables keep getting new arrays between calls would record every call.
MAX_RECORDINGS = 4
# A refusal lists at most this many nodes; the rest are counted.
_MAX_REASONS = 8

CaptureStatus = collections.namedtuple("CaptureStatus", ["state", "reasons"])
CaptureStatus.__doc__ = """Whether a concrete function's calls are captured, and why not.

Attributes:
    state: ``"refused"`` (the graph cannot be captured), ``"warming up"`` (eligible, not
        called yet), ``"recording next"`` (the next call records), ``"captured"``
        (calls replay a CUDA graph), ``"fell back"`` (recording failed: plain launches
        from then on), ``"off"`` (the switch is off) or ``"not compiled"``.
    reasons: Sentences saying why it is not captured (empty when it is).
"""

_WARM, _RECORD, _CAPTURED, _FELL_BACK = "warming up", "recording next", "captured", "fell back"


class CudaGraphs:
    """The recorder on a GPU: cupy stream capture into a CUDA graph.

    The one place that touches cupy's graph API. A recorder has ``accepts(device)`` (can
    this device's work be recorded) and ``record(fn, device)`` (run ``fn`` under capture;
    returns an object whose ``launch()`` replays it and returns ``fn``'s outputs). A test
    can install another with :func:`set_recorder`.
    """

    name = "CUDA graph"

    def accepts(self, device):
        return device.device_type == "GPU"

    def record(self, fn, device):
        import cupy

        with cupy.cuda.Device(device.physical_index):
            # Capture needs a stream other than the legacy default one; non-blocking, so
            # that work on the default stream does not join the capture. The graph is
            # launched on the caller's current stream, which orders it with eager work.
            stream = cupy.cuda.Stream(non_blocking=True)
            # A pool of the graph's own: its blocks stay reserved for the graph's
            # intermediates (freed into this pool, never handed to other arrays).
            pool = cupy.cuda.MemoryPool()
            with cupy.cuda.using_allocator(pool.malloc), stream:
                stream.begin_capture()
                try:
                    outputs = fn()
                except BaseException:
                    try:
                        stream.end_capture()
                    except Exception:  # noqa: BLE001 - the capture is broken already
                        pass
                    raise
                graph = stream.end_capture()
        return _CudaGraph(graph, outputs, pool, stream, device.physical_index)


class _CudaGraph:
    def __init__(self, graph, outputs, pool, stream, device_index):
        self.graph = graph
        self.outputs = outputs  # buffers in ``pool``, rewritten by every launch
        self.pool = pool
        self.stream = stream
        self.device_index = device_index

    def launch(self):
        import cupy

        with cupy.cuda.Device(self.device_index):
            self.graph.launch()  # on the current stream
        return self.outputs


_recorder = CudaGraphs()


def set_recorder(recorder):
    """Installs the recorder that new captures use (see :class:`CudaGraphs`); returns the
    previous one. Graphs compiled earlier keep theirs."""
    global _recorder
    previous = _recorder
    _recorder = recorder
    return previous


def _node_label(node):
    return "node %r (op %s)" % (node.name, node.op)


def refusals(executor, recorder=None):
    """Why ``executor``'s graph cannot be captured: a list of sentences, empty if it can.

    A pure decision over the optimized, placed graph: it must run on one device that the
    recorder accepts (a GPU), with fully known argument shapes, and no node may read a
    value on the host or wait for another party, as its declaration says
    (``host_sync``), including attrs computed at run time and outputs whose shape is
    known only then.

    Args:
        executor: The compiled executor (an ``Executor``; anything else runs on several
            devices or tasks).
        recorder: The recorder deciding which devices can be captured (default: the
            installed one, CUDA graphs).

    Returns:
        A list of strings naming the node, its op and why.
    """
    recorder = recorder or _recorder
    if type(executor) is not executor_lib.Executor:
        return ["the graph runs on several devices or tasks (%s): its partitions exchange "
                "tensors through the host" % type(executor).__name__]
    graph = executor.graph
    reasons = []
    for node in graph.inputs:
        shape = node.avals[0].shape
        if shape is None or None in shape:
            reasons.append("argument %s has shape %s: a captured step needs fixed shapes "
                           "(trace with a fully known input_signature)"
                           % (node.name, "[?]" if shape is None else list(shape)))
    elsewhere = {}  # device name -> [count, first node]
    on_device = 0
    nodes = [n for n in graph.nodes if n.op != builtins.PLACEHOLDER]
    for node, device in zip(nodes, executor.devices):
        declared = builtins.BUILTINS.get(node.op) if node.prim is None else None
        if declared is not None and declared.free:
            continue
        if declared is not None and declared.variable:
            # No kernel of its own: what counts is where the variable lives.
            device = graph.variables[node.attrs["variable"]]._device
        reason = _host_sync(node, declared)
        if reason:
            reasons.append("%s: %s" % (_node_label(node), reason))
        if recorder.accepts(device):
            on_device += 1
        else:
            entry = elsewhere.setdefault(device.name, [0, node])
            entry[0] += 1
    for name, (count, first) in elsewhere.items():
        reasons.append("%d node%s run%s on %s, not a GPU (first: %s): a %s holds GPU work "
                       "only" % (count, "s" if count > 1 else "", "" if count > 1 else "s",
                                 name, _node_label(first), recorder.name))
    for _, tensor in graph.captures:
        if not recorder.accepts(tensor._device):
            reasons.append("a tensor the function captures lives on %s, not a GPU"
                           % tensor._device.name)
            break
    if not reasons and not on_device:
        reasons.append("nothing in the graph runs on a GPU")
    if len(reasons) > _MAX_REASONS:
        more = len(reasons) - _MAX_REASONS
        reasons = reasons[:_MAX_REASONS] + ["and %d more" % more]
    return reasons


def _host_sync(node, declared):
    """Why this node reads the host (its declaration's text, a run-time attr, a run-time
    output shape, a member of a fused region), or None."""
    if node.op == builtins.FUSED_ELEMENTWISE:
        return _fused_host_sync(node)
    if declared is not None:
        return declared.host_sync
    prim = node.prim
    if prim is None:
        return None
    if static_value.DYNAMIC_ATTRS in node.attrs:
        return ("its attrs %s are computed at run time and read on the host"
                % ", ".join(node.attrs[static_value.DYNAMIC_ATTRS]))
    in_avals = [src.avals[i] for src, i in node.inputs]
    reason = prim.host_sync_reason(in_avals, node.attrs)
    if reason and prim.capture_forward is None:
        return reason
    for aval in node.avals:
        if aval.shape is None or None in aval.shape:
            return ("its output's shape %s is known only at run time"
                    % ("[?]" if aval.shape is None else list(aval.shape)))
    return None


def _fused_host_sync(node):
    """The first member of a fused region whose kernel reads the host, or None."""
    for name, dtype in zip(node.attrs.get("ops", ()), node.attrs.get("dtypes", ())):
        prim = registry.find(name)
        if prim is None or not dtype:
            continue
        reason = prim.host_sync_reason([AbstractValue((), dtype)], {})
        if reason and prim.capture_forward is None:
            return "its member %s: %s" % (name, reason)
    return None


def for_executor(executor):
    """``(executor to run, Capture)`` for a freshly compiled executor.

    The Capture holds the decision; for an eligible graph the executor to run is the
    Capture itself (same ``run``/``output_devices``/``graph`` as the plain one).
    """
    capture = Capture(executor)
    return (capture if capture.eligible else executor), capture


class Capture:
    """The capture state of one compiled graph (see the module docstring).

    It runs like the plain executor it wraps (``run``, ``output_devices``, ``graph``).
    """

    def __init__(self, executor, recorder=None):
        self.plain = executor
        self.graph = executor.graph
        self.output_devices = executor.output_devices
        self.recorder = recorder or _recorder
        self.refused = refusals(executor, self.recorder)
        self.eligible = not self.refused
        self._state = _WARM
        self._reason = None
        self._lock = threading.Lock()  # one replay at a time: they share the buffers
        self._recording = None
        self._recordings = 0
        self._capture_executor = None
        self._device = None
        if self.eligible:
            nodes = [n for n in self.graph.nodes if n.op != builtins.PLACEHOLDER]
            self._device = next(d for n, d in zip(nodes, executor.devices)
                                if self.recorder.accepts(d))
            written = {n.attrs["variable"] for n in self.graph.nodes
                       if builtins.BUILTINS.get(n.op) is not None
                       and builtins.BUILTINS[n.op].assigns}
            self._variables = list(self.graph.variables)
            self._written = [self._variables[i] for i in sorted(written)]

    def __getattr__(self, name):
        # Everything else (steps, source, devices) is the plain executor's.
        if name == "plain":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.plain, name)

    def status(self):
        """The :class:`CaptureStatus` of this graph."""
        if not self.eligible:
            return CaptureStatus("refused", list(self.refused))
        if self._state == _FELL_BACK:
            return CaptureStatus(_FELL_BACK, [self._reason])
        if not context.config.step_capture:
            return CaptureStatus("off", ["step capture is off (eagerflow.config.experimental"
                                         ".set_step_capture, EAGERFLOW_STEP_CAPTURE)"])
        return CaptureStatus(self._state, [])

    # -- calling ------------------------------------------------------------------------
    def run(self, args, captures):
        """Runs the graph on argument and capture arrays, replaying when captured."""
        if executor_lib.observer is not None or not context.config.step_capture:
            return self.plain.run(args, captures)
        state = self._state
        if state is _CAPTURED or state is _RECORD:
            if not self._lock.acquire(blocking=False):
                return self.plain.run(args, captures)  # another thread is replaying
            try:
                if self._state is _CAPTURED:
                    outputs = self._replay(args)
                    if outputs is not None:
                        return outputs
                if self._state is _RECORD:
                    return self._record(args, captures)
            finally:
                self._lock.release()
            return self.plain.run(args, captures)
        if state is _WARM:
            return self._warm_up(args, captures)
        return self.plain.run(args, captures)  # fell back

    def _warm_up(self, args, captures):
        """The first call: runs the schedule compiled for capture plainly, so that what
        recording will launch (generated kernels, library handles) is compiled and loaded
        before the capture begins, and the memory pool holds what a step needs."""
        with self._lock:
            if self._capture_executor is None:
                # Compiled outside the capture: compiling moves constants to the device.
                self._capture_executor = executor_lib.Executor(self.graph, capture=True)
            self._private_arrays()
            outputs = self._capture_executor.run(args, captures)
            self._state = _RECORD
            return outputs

    def _private_arrays(self):
        """Gives each variable the schedule writes in place an array of its own where a
        reader outside holds the current one (its value must not change), as an eager
        assignment gives it a new array."""
        for variable in self._written:
            if _held_outside(variable):
                variable._write(variable._value.copy())

    def _replay(self, args):
        """This call's outputs from a replay, or None when the recording cannot serve it
        (then the state says what happens: record again, or run plainly once)."""
        recording = self._recording
        # (A generator: a loop here would leave a reference to the last array in a local,
        # which the reference counts below would see as a reader outside.)
        if not all(variable._value is array for variable, array in recording.variables):
            self._invalidate()  # a variable was given a new array outside the function
            return None
        for variable, extra in recording.written:
            if _held_outside(variable, extra):
                # Something outside holds an array the graph updates in place (an eager
                # read taken since): this call runs plainly, which gives the variable a
                # new array (the reader keeps its value), so the next call records again.
                return None
        ndarray = recording.ndarray
        for arg in args:
            if arg.__class__ is not ndarray:
                return None  # an argument on another device: this call runs plainly
        xp = recording.xp
        for static, arg in zip(recording.statics, args):
            xp.copyto(static, arg)
        return [out.copy() for out in recording.graph.launch()]

    def _invalidate(self):
        self._recording = None
        if self._recordings >= MAX_RECORDINGS:
            self._fall_back("recorded %d times and its variables were given new arrays again "
                            "between calls: a captured step needs variables updated in place"
                            % self._recordings)
        else:
            self._state = _RECORD

    def _fall_back(self, reason):
        self._recording = None
        self._capture_executor = None
        self._reason = reason
        self._state = _FELL_BACK

    def _record(self, args, captures):
        device = self._device
        xp = device.backend
        ndarray = xp.ndarray
        if any(a.__class__ is not ndarray for a in list(args) + list(captures)):
            return self.plain.run(args, captures)
        statics = [a.copy() for a in args]
        captures = list(captures)
        self._private_arrays()  # the graph writes them in place on every launch
        before = [v._value for v in self._variables]
        run = self._capture_executor.run
        self._recordings += 1
        try:
            recorded = self.recorder.record(lambda: run(statics, captures), device)
        except Exception as exc:  # noqa: BLE001 - any failure: plain launches from now on
            _restore(self._variables, before)
            self._fall_back("recording failed: %s: %s" % (type(exc).__name__, exc))
            return self.plain.run(args, captures)
        moved = [v for v, b in zip(self._variables, before) if v._value is not b]
        if moved:
            _restore(self._variables, before)
            self._fall_back("variable %r was given a new array while recording (an "
                            "assignment of another shape or dtype): a captured step needs "
                            "variables updated in place" % moved[0].name)
            return self.plain.run(args, captures)
        del before  # the baseline reference counts must not count this list
        self._recording = _Recording(recorded, statics, captures, xp, ndarray,
                                     self._variables, self._written)
        self._state = _CAPTURED
        return [out.copy() for out in recorded.launch()]


def _restore(variables, arrays):
    """Gives back the arrays variables held before a recording that is dropped (nothing
    ran while recording, so they still hold the values from before the call)."""
    for variable, array in zip(variables, arrays):
        if variable._value is not array:
            variable._write(array)


def _count(variable):
    """The reference count of ``variable``'s array, always measured by this one
    expression, so that the count of a private array is a constant (``_PRIVATE``)."""
    return sys.getrefcount(variable._value)


class _Probe:
    _value = None


_probe = _Probe()
_probe._value = object()
# References to an array that only its variable holds, as ``_count`` measures them.
_PRIVATE = _count(_probe)
del _probe
# id(array) -> how many live recordings keep the array (one reference each). Recordings
# of one function's several traces share its variables; these references do not count as
# a reader outside.
_kept = {}
_kept_lock = threading.Lock()


def _keep(arrays):
    with _kept_lock:
        for a in arrays:
            _kept[id(a)] = _kept.get(id(a), 0) + 1


def _release(ids):
    with _kept_lock:
        for i in ids:
            n = _kept.get(i, 0) - 1
            if n > 0:
                _kept[i] = n
            else:
                _kept.pop(i, None)


def _held_outside(variable, extra=0):
    """Whether something besides the variable and the live recordings (and ``extra``
    references of the caller's own) holds the variable's array."""
    return _count(variable) > _PRIVATE + _kept.get(id(variable._value), 0) + extra


class _Recording:
    """A recorded graph and what a replay needs: its argument buffers, the arrays it reads
    and writes, and the references to written arrays the recording itself adds (its
    graph's outputs may be such an array)."""

    def __init__(self, graph, statics, captures, xp, ndarray, variables, written):
        self.graph = graph
        self.statics = statics
        self.captures = captures  # kept alive: the graph reads their buffers
        self.xp = xp
        self.ndarray = ndarray
        self.variables = [(v, v._value) for v in variables]
        arrays = [a for _, a in self.variables]
        _keep(arrays)
        weakref.finalize(self, _release, [id(a) for a in arrays])
        del arrays  # not counted below
        self.written = [(v, _count(v) - _PRIVATE - _kept.get(id(v._value), 0))
                        for v in written]
