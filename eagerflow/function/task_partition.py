"""Cutting a graph into one subgraph per task of a cluster, joined by Send/Recv.

A node traced under ``with eagerflow.device("/job:ps/task:0")`` runs on that task; a
variable op runs on the task that holds its variable (a variable made by a parameter-server
strategy names its task in ``_task``; any other variable lives in this process); every other
node runs on the *default task* (the task calling the function, or the worker a coordinator
scheduled it on). The cut itself is the device partitioner's (``partition.partition``): each
task stands in as one device, so cross-task edges become Send/Recv pairs whose device names
carry the task (``/job:ps/replica:0/task:0/device:CPU:0``), which is how the remote
rendezvous routes them.

Each task's subgraph keeps only the variables its own nodes use (renumbered), and its nodes
lose their device strings: inside a task the subgraph runs on that task's default device.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import task_partition
    >>> @ef.function
    ... def f(x):
    ...     with ef.device("/job:ps/task:0"):
    ...         y = x * 2.0
    ...     return y + 1.0
    >>> graph = f.get_concrete_function(ef.TensorSpec([2])).graph
    >>> parts = task_partition.partition_by_task(graph, "/job:chief/replica:0/task:0")
    >>> [p.task for p in parts.partitions]
    ['/job:chief/replica:0/task:0', '/job:ps/replica:0/task:0']
    >>> parts.num_sends, parts.num_recvs
    (1, 1)
"""

from __future__ import annotations

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.framework.device_spec import DeviceSpec
from eagerflow.function import builtins
from eagerflow.function import partition as partition_lib
from eagerflow.function.placement import VARIABLE_OPS

__all__ = ["partition_by_task", "task_name", "requested_task", "names_other_task",
           "TaskDevice"]


def task_name(job, task):
    """The canonical name of a task: ``/job:JOB/replica:0/task:TASK``."""
    return "/job:%s/replica:0/task:%d" % (job, int(task))


def _split(name):
    spec = DeviceSpec.from_string(name)
    return spec.job, spec.task


def requested_task(device, default_task):
    """The task a node's requested device string names (``default_task`` when it names
    none, or names this process's ``localhost`` job)."""
    if not device:
        return default_task
    spec = DeviceSpec.from_string(device)
    if spec.job in (None, context.LOCAL_JOB) and spec.task is None:
        return default_task
    job, task = _split(default_task)
    if spec.job is not None and spec.job != context.LOCAL_JOB:
        job, task = spec.job, 0
    if spec.task is not None:
        task = spec.task
    return task_name(job, task)


def variable_task(variable, local_task):
    """The task holding ``variable``: its ``_task`` when a strategy placed it remotely,
    else this process."""
    return getattr(variable, "_task", None) or local_task


def names_other_task(graph, local_task):
    """Whether any node or variable of ``graph`` is on a task other than ``local_task``."""
    for var in graph.variables:
        task = getattr(var, "_task", None)
        if task and task != local_task:
            return True
    for node in graph.nodes:
        if node.device and "/job:" in node.device and \
                requested_task(node.device, local_task) != local_task:
            return True
    return False


class TaskDevice:
    """One task, standing in as a device for the partitioner."""

    __slots__ = ("task", "name", "device_type", "index", "backend_index")

    def __init__(self, task, ordinal):
        self.task = task
        self.name = task + "/device:CPU:0"
        self.device_type = "CPU"
        self.index = ordinal  # orders the partitions: the partitioner sorts by it
        self.backend_index = 0

    def __repr__(self):
        return "<TaskDevice %s>" % self.task


class TaskPartition:
    """The subgraph of one task.

    Attributes:
        task: The task's name.
        graph: Its subgraph (device strings cleared, variables pruned to its own).
        input_positions: For each of its inputs, the position in the whole graph's inputs.
        capture_positions: For each of its captures, the position in the whole graph's.
    """

    def __init__(self, task, graph, input_positions, capture_positions):
        self.task = task
        self.graph = graph
        self.input_positions = input_positions
        self.capture_positions = capture_positions

    def __repr__(self):
        return "<TaskPartition %s: %d nodes>" % (self.task, len(self.graph.nodes))


class TaskPartitionedGraph:
    """Per-task subgraphs and where each output of the whole graph comes from.

    Attributes:
        partitions: TaskPartitions, the default task's first.
        outputs: For each output, ``(partition index, output position)``.
        transfers: ``(tensor name, source device, destination device)`` per Send/Recv pair.
    """

    def __init__(self, partitions, outputs, transfers):
        self.partitions = partitions
        self.outputs = outputs
        self.transfers = transfers

    @property
    def num_sends(self):
        return sum(n.op == builtins.SEND for p in self.partitions for n in p.graph.nodes)

    @property
    def num_recvs(self):
        return sum(n.op == builtins.RECV for p in self.partitions for n in p.graph.nodes)


def partition_by_task(graph, default_task, local_task=None):
    """Splits ``graph`` into per-task subgraphs with Send/Recv pairs between them.

    Args:
        graph: A traced Graph.
        default_task: The task of every node that names none (``/job:J/replica:0/task:T``).
        local_task: The task of this process, which holds every variable without a
            ``_task`` (default: ``default_task``).

    Returns:
        A TaskPartitionedGraph.

    Raises:
        InvalidArgumentError: A variable captured by value would have to be read on a task
            that does not hold it.
    """
    local_task = local_task or default_task
    devices = {}

    def device_of(task):
        dev = devices.get(task)
        if dev is None:
            dev = devices[task] = TaskDevice(task, 0)
        return dev

    device_of(default_task)
    placement = {}
    for node in graph.nodes:
        if node.op in VARIABLE_OPS:
            task = variable_task(graph.variables[node.attrs["variable"]], local_task)
        else:
            task = requested_task(node.device, default_task)
        placement[node.id] = device_of(task)
    # The default task first, the others in name order.
    ordered = [default_task] + sorted(t for t in devices if t != default_task)
    for k, task in enumerate(ordered):
        devices[task].index = k
    captured_vars = {n.id: v for n, v in graph.captures if getattr(v, "_is_variable", False)}
    parts = partition_lib.partition(graph, placement)
    out = []
    for part in parts.partitions:
        for node in part.graph.nodes:
            var = captured_vars.get(node.id)
            if var is not None and variable_task(var, local_task) != part.device.task:
                raise errors.InvalidArgumentError(
                    None, node.op, "Graph %s captures variable %s, which lives on %s, in its "
                    "part on %s: read the variable inside the function instead of capturing "
                    "it." % (graph.name, var.name, variable_task(var, local_task),
                             part.device.task))
        _prune_variables(part.graph)
        for node in part.graph.nodes:
            node.device = ""
        out.append(TaskPartition(part.device.task, part.graph, part.input_positions,
                                 part.capture_positions))
    return TaskPartitionedGraph(out, parts.outputs, parts.transfers)


def _prune_variables(sub):
    """Keeps only the variables ``sub``'s own nodes use, renumbering their attrs.

    The partitioner's node copies share the original's attrs dict: each renumbered node
    gets a dict of its own.
    """
    used = []
    index = {}
    for node in sub.nodes:
        if node.op in VARIABLE_OPS:
            v = node.attrs["variable"]
            if v not in index:
                index[v] = len(used)
                used.append(v)
            node.attrs = dict(node.attrs, variable=index[v])
    sub.variables = [sub.variables[v] for v in used]
    sub._variable_index = {id(v): i for i, v in enumerate(sub.variables)}
