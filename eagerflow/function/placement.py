"""Placement: the device every node of a traced graph runs on.

Three rules, in order, as in TensorFlow's placer:

1. **Explicit device scopes.** A node traced under ``with eagerflow.device(...)`` keeps the
   (possibly partial) device it asked for, resolved against this process's logical devices:
   ``"/device:CPU:1"`` pins the node, ``"/cpu"`` lets it go to any CPU. A GPU that does not
   exist falls back to the CPU with a log line (soft placement), or raises
   InvalidArgumentError naming the node when ``config.set_soft_device_placement(False)``.
2. **Colocation.** A ReadVariableOp or Assign*VariableOp runs where its variable lives (the
   variable's buffer is there); other stateful ops and functional control flow are pinned to
   the default device so that their side effects keep program order.
3. **Cost-based placement** for the rest, the greedy heuristic of the TensorFlow white paper:
   walk the nodes in topological order, estimate each one's cost from its shapes (FLOPs) and
   each device's speed, and put it on the device where it would *finish* soonest, counting
   the time each input needs to reach that device. Starting work on a device that has none
   yet costs a fixed start-up (a thread hand-off), and a whole placement that does not beat
   running everything on the default device is dropped, so a small graph stays on one
   device and only heavy independent branches are split.

Placeholders and constants are free: every device subgraph that needs one gets its own copy
(arguments are handed to each device, constants are duplicated), so they never cause a
transfer.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import placement
    >>> f = ef.function(lambda x: ef.tanh(x) * 2.0)
    >>> graph = f.get_concrete_function(ef.TensorSpec([3])).graph
    >>> print(placement.format_placement(graph, placement.place(graph)))  # doctest: +ELLIPSIS
    x -> /job:localhost/replica:0/task:0/device:CPU:0
    tanh -> /job:localhost/replica:0/task:0/device:CPU:0
    ...
"""

from __future__ import annotations

import logging

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.framework.device_spec import DeviceSpec
from eagerflow.function import builtins
from eagerflow.function.graph import STATEFUL_BUILTINS
from eagerflow.ops.family import aval_size

__all__ = ["CostModel", "place", "format_placement", "node_cost", "devices_of"]

_log = logging.getLogger("eagerflow")

VARIABLE_OPS = builtins.names(variable=True)
CONTROL_FLOW_OPS = builtins.names(control_flow=True)
FREE_OPS = builtins.names(free=True)


class CostModel:
    """Speeds and transfer costs the cost-based placer simulates with.

    Args:
        flops_per_s: Compute speed per device type.
        node_overhead_s: Fixed time per node (kernel launch, Python dispatch).
        bytes_per_s: Transfer bandwidth per (source type, destination type). Between two
            logical CPUs a copy is free in memory, but handing a tensor to another thread is
            not: a small per-byte cost keeps splitting for heavy branches only.
        transfer_latency_s: Fixed time per transferred tensor (a rendezvous hand-off).
        device_start_s: Fixed time to start work on a device the graph does not use yet
            (waking its thread); the default device is always running.
        min_gain: A split placement is kept only when its simulated time is below this
            fraction of the all-on-the-default-device time.
    """

    def __init__(self, flops_per_s=None, node_overhead_s=5e-6, bytes_per_s=None,
                 transfer_latency_s=2e-5, device_start_s=2e-4, min_gain=0.9):
        self.flops_per_s = {"CPU": 2e10, "GPU": 2e12}
        self.flops_per_s.update(flops_per_s or {})
        self.node_overhead_s = node_overhead_s
        self.bytes_per_s = {("CPU", "CPU"): 1e10, ("CPU", "GPU"): 1e10, ("GPU", "CPU"): 1e10,
                            ("GPU", "GPU"): 5e10}
        self.bytes_per_s.update(bytes_per_s or {})
        self.transfer_latency_s = transfer_latency_s
        self.device_start_s = device_start_s
        self.min_gain = min_gain

    def compute_time(self, node, device):
        return self.node_overhead_s + node_cost(node) / self.flops_per_s[device.device_type]

    def transfer_time(self, nbytes, src, dst):
        if src is dst:
            return 0.0
        return self.transfer_latency_s + nbytes / self.bytes_per_s[
            (src.device_type, dst.device_type)]


def tensor_bytes(aval):
    """Bytes of one value described by an AbstractValue (estimated for unknown dims)."""
    return aval_size(aval) * (getattr(aval.dtype, "size", 4) or 4)


def node_cost(node):
    """Estimated floating-point operations of one node, from its input and output shapes.

    A primitive that declares a ``cost`` (a matmul ``2*m*n*k``, a convolution its output
    size times the kernel volume times the input channels, times 2, a matrix factorization
    ``n**3``: see ``eagerflow.ops.family``) is estimated by it; every other node costs the
    larger of its input and output element counts (elementwise ops, reductions), arguments
    and constants nothing.
    """
    if node.op in FREE_OPS:
        return 0
    ins = [src.avals[i] for src, i in node.inputs]
    prim = node.prim
    if prim is not None and prim.cost is not None:
        flops = prim.cost(ins, node.avals, node.attrs)
        if flops is not None:
            return flops
    out_size = sum(aval_size(a) for a in node.avals)
    in_size = max((aval_size(a) for a in ins), default=0)
    return max(in_size, out_size)


def _candidates(node, devices, default):
    """The devices a node may run on (rule 1) and whether it is pinned (rule 2)."""
    if node.op in VARIABLE_OPS:
        return None  # handled by the caller, which has the graph's variables
    if node.device:
        return _resolve_requested(node, devices)
    if node.op in CONTROL_FLOW_OPS or node.stateful or node.op in STATEFUL_BUILTINS or (
            node.prim is not None and node.prim.stateful):
        return [default]
    return None


def _all_local(device_type):
    return context.logical_devices(device_type)


def _resolve_requested(node, devices):
    """Logical devices matching a node's requested (possibly partial) device string."""
    spec = DeviceSpec.from_string(node.device)
    soft = context.config.soft_device_placement
    if spec.job not in (None, context.LOCAL_JOB) or spec.task not in (None, 0):
        if not soft:
            raise errors.InvalidArgumentError(
                None, node.op,
                "Cannot place node %s (%s) on %s: only this task's devices can run a graph "
                "here." % (node.name, node.op, node.device))
        _log.info("Soft placement: node %s asked for remote device %s; it runs locally.",
                  node.name, node.device)
    dtype = spec.device_type
    pool = list(devices) if dtype is None else _all_local(dtype)
    if spec.device_index is not None:
        pool = [d for d in pool if d.index == spec.device_index]
    if pool:
        return pool
    # The requested device does not exist here.
    if not soft:
        raise errors.InvalidArgumentError(
            None, node.op,
            "Cannot place node %s (%s) on %s: no such device (this process has %s). Enable "
            "soft placement (config.set_soft_device_placement(True)) or request an existing "
            "device." % (node.name, node.op, node.device,
                         ", ".join(d.name for d in list(devices) + _all_local("GPU"))))
    fallback = [d for d in devices if d.device_type == "CPU"] or list(devices)
    _log.info("Soft placement: %s is not available for node %s (%s); it runs on %s.",
              node.device, node.name, node.op, fallback[0].name if len(fallback) == 1
              else "a CPU")
    return fallback


def _variable_device(graph, node):
    var = graph.variables[node.attrs["variable"]]
    device = var._device
    if node.device:
        requested = DeviceSpec.from_string(node.device)
        if not requested.is_compatible(device.spec):
            _log.info("Colocation: node %s (%s) asked for %s but variable %s lives on %s; it "
                      "runs with the variable.", node.name, node.op, node.device, var.name,
                      device.name)
    return device


def devices_of(placement):
    """The distinct devices of a placement, in device order."""
    return sorted(set(placement.values()), key=lambda d: (d.device_type, d.index))


def place(graph, devices=None, cost_model=None):
    """Chooses a device for every node of ``graph``.

    Args:
        graph: A traced Graph (its nodes' ``device`` strings are the requests).
        devices: The devices the cost-based placer may use for unconstrained nodes (default:
            every logical CPU device; GPUs are used when a device scope asks for them).
        cost_model: A CostModel (default: ``CostModel()``).

    Returns:
        A dict ``{node.id: Device}`` covering every node.

    Raises:
        InvalidArgumentError: A node asks for a device that does not exist and soft
            placement is off.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.function import placement
        >>> f = ef.function(lambda x: x + 1.0)
        >>> graph = f.get_concrete_function(ef.TensorSpec([2])).graph
        >>> sorted({d.name for d in placement.place(graph).values()})
        ['/job:localhost/replica:0/task:0/device:CPU:0']
    """
    devices = list(devices) if devices is not None else _all_local("CPU")
    default = devices[0]
    model = cost_model or CostModel()
    allowed = {}
    for node in graph.nodes:
        if node.op in VARIABLE_OPS:
            allowed[node.id] = [_variable_device(graph, node)]
        elif node.op not in FREE_OPS:
            allowed[node.id] = _candidates(node, devices, default) or devices
    placement = _greedy(graph, allowed, model, default)
    if len(set(placement.values())) > 1:
        # The greedy choice is kept only if it beats the simple placement (each node with
        # its first input, else on the default device) by a margin: no needless splits.
        simple = _follow_inputs(graph, allowed, model, default)
        split_time = _simulate(graph, model, lambda n, finish_on: placement[n.id], default)[1]
        simple_time = _simulate(graph, model, lambda n, finish_on: simple[n.id], default)[1]
        if split_time >= model.min_gain * simple_time:
            placement = simple
    _place_free_nodes(graph, placement, devices, default)
    if context.config.log_device_placement:
        for line in format_placement(graph, placement).splitlines():
            _log.info("Placement of %s: %s", graph.name, line)
    return placement


def _greedy(graph, allowed, model, default):
    def choose(node, finish_on):
        options = allowed[node.id]
        if len(options) == 1:
            return options[0]
        # Ties go to the device already holding most inputs, then to the default device.
        return min(options, key=lambda d: (
            finish_on(d), sum(src.op not in FREE_OPS and placed.get(src.id) is not d
                              for src, _ in node.inputs), d is not default))

    placed = {}

    return _simulate(graph, model, choose, default, placed)[0]


def _follow_inputs(graph, allowed, model, default):
    placed = {}

    def choose(node, finish_on):
        options = allowed[node.id]
        for src, _ in node.inputs:
            device = placed.get(src.id)
            if device is not None and device in options:
                return device
        return default if default in options else options[0]

    return _simulate(graph, model, choose, default, placed)[0]


def _simulate(graph, model, choose, default, placement=None):
    """Simulates running ``graph``; ``choose(node, finish_on)`` picks each node's device.

    Returns ``(placement, makespan)`` where the placement covers the non-free nodes.
    """
    placement = {} if placement is None else placement
    finish = {}  # node id -> finish time
    arrival = {}  # (node id, output index, device) -> time the value is there
    ready = {default: 0.0}  # device -> time it is free

    def input_ready(node, device):
        t = 0.0
        for src, idx in node.inputs:
            if src.op in FREE_OPS:
                continue
            key = (src.id, idx, device)
            at = arrival.get(key)
            if at is None:
                at = finish[src.id] + model.transfer_time(
                    tensor_bytes(src.avals[idx]), placement[src.id], device)
            t = max(t, at)
        for src in node.control_inputs:
            t = max(t, finish.get(src.id, 0.0))
        return t

    def finish_on(node, device):
        start = ready.get(device)
        if start is None:
            start = model.device_start_s
        return max(start, input_ready(node, device)) + model.compute_time(node, device)

    makespan = 0.0
    for node in graph.nodes:
        if node.op in FREE_OPS:
            continue
        device = choose(node, lambda d, _n=node: finish_on(_n, d))
        for src, idx in node.inputs:
            if src.op not in FREE_OPS and placement[src.id] is not device:
                key = (src.id, idx, device)
                if key not in arrival:
                    arrival[key] = finish[src.id] + model.transfer_time(
                        tensor_bytes(src.avals[idx]), placement[src.id], device)
        done = finish_on(node, device)
        placement[node.id] = device
        finish[node.id] = done
        ready[device] = done
        makespan = max(makespan, done)
    return placement, makespan


def _place_free_nodes(graph, placement, devices, default):
    """Placeholders and constants: their requested device, else their first consumer's."""
    first_consumer = {}
    for node in graph.nodes:
        for src, _ in node.inputs:
            if src.id not in first_consumer and node.id in placement:
                first_consumer[src.id] = placement[node.id]
    for node in graph.nodes:
        if node.op not in FREE_OPS:
            continue
        if node.device:
            placement[node.id] = _resolve_requested(node, devices)[0]
        else:
            placement[node.id] = first_consumer.get(node.id, default)


def format_placement(graph, placement):
    """The placement as text, one ``node -> device`` line per node in graph order.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.function import placement
        >>> f = ef.function(lambda x: -x)
        >>> graph = f.get_concrete_function(ef.TensorSpec([2])).graph
        >>> print(placement.format_placement(graph, placement.place(graph)))
        x -> /job:localhost/replica:0/task:0/device:CPU:0
        neg -> /job:localhost/replica:0/task:0/device:CPU:0
    """
    return "\n".join("%s -> %s" % (n.name, placement[n.id].name) for n in graph.nodes)
