"""Shared helpers of the optimizer passes: copying a graph, node kinds, value substitution.

Every pass rewrites a private copy of the traced graph in place. Nodes keep their order
(trace order is a topological order that also keeps side effects in program order), so a
pass only ever removes nodes, replaces a node by an equivalent one at the same position, or
redirects uses of a value to an equivalent earlier value. Stateful nodes are never moved.
"""

from __future__ import annotations

import itertools

from eagerflow.function import builtins
from eagerflow.function.graph import Graph, Node

# Builtin ops (no primitive) that compute a pure function of their inputs. Any other
# builtin (variable ops, Print, control flow, Send/Recv) is treated as a side effect.
PURE_BUILTINS = builtins.names(pure=True)


def is_effectful(node):
    """True for nodes a pass must keep and never merge: side effects or hidden state."""
    if node.op == builtins.PLACEHOLDER:
        return False
    if node.prim is not None:
        return node.stateful or node.prim.stateful
    return node.stateful or node.op not in PURE_BUILTINS


def is_pure(node):
    """True for computing nodes whose outputs depend only on their inputs and attrs."""
    return node.op != builtins.PLACEHOLDER and not is_effectful(node)


def copy_graph(graph):
    """A copy with new Node objects (same ids and names); the original is never touched.

    Inputs, captures and outputs keep their positions, so the copy has the same calling
    convention. ``library`` and ``variables`` are shared until a pass replaces them.
    """
    new = Graph(graph.name)
    mapping = {}
    for node in graph.nodes:
        copy = Node(node.id, node.name, node.op,
                    [(mapping[src], idx) for src, idx in node.inputs],
                    dict(node.attrs), node.device, node.avals, prim=node.prim,
                    value=node.value, stateful=node.stateful)
        copy.origin = node.origin
        copy.control_inputs = [mapping[c] for c in node.control_inputs]
        mapping[node] = copy
        new.nodes.append(copy)
    new.inputs = [mapping[n] for n in graph.inputs]
    new.captures = [(mapping[n], captured) for n, captured in graph.captures]
    new.outputs = [(mapping[n], i) for n, i in graph.outputs]
    new.library = dict(graph.library)
    new.variables = graph.variables
    new._variable_index = dict(graph._variable_index)
    top = max((n.id for n in graph.nodes), default=0)
    new._counter = itertools.count(top + 1)
    new._names = dict(graph._names)
    return new


def fresh_name(graph, base):
    """A node name not used in ``graph`` (nor given out by this function) yet."""
    taken = graph.__dict__.get("_taken_names")
    if taken is None:
        taken = graph._taken_names = {n.name for n in graph.nodes}
    name = base
    k = 0
    while name in taken:
        k += 1
        name = "%s_%d" % (base, k)
    taken.add(name)
    return name


def new_node(graph, op, inputs, attrs, avals, *, prim=None, device="", value=None,
             name=None, origin=None):
    """A Node with a fresh id and name, not yet placed in ``graph.nodes``."""
    node = Node(next(graph._counter), fresh_name(graph, name or op.lower()), op, list(inputs),
                dict(attrs), device, tuple(avals), prim=prim, value=value)
    node.origin = origin
    return node


def resolved_device(node):
    """The device a node runs on, as the executor resolves it (its string if unknown).

    A device of another task (``/job:ps/task:0``) stays its string: such a node runs in
    another process, so no rewrite may merge it with this task's nodes.
    """
    from eagerflow.framework import context
    from eagerflow.framework.device_spec import DeviceSpec
    from eagerflow.function.executor import _node_device

    device = node.device
    if device and ("/job:" in device or "/task:" in device):
        spec = DeviceSpec.from_string(node.device)
        if spec.job not in (None, context.LOCAL_JOB) or spec.task not in (None, 0):
            return node.device
    try:
        return _node_device(node)
    except Exception:  # noqa: BLE001 - an unresolvable device only disables a rewrite
        return node.device


def output_key(node):
    """What decides the device of a graph output produced by ``node``."""
    if node.op == builtins.PLACEHOLDER:
        return ("argument", node.id)  # the argument's own device
    return resolved_device(node)


class Substitution:
    """Redirects uses of values, ``(node, index) -> (node, index)``, in one forward sweep.

    Passes walk ``graph.nodes`` in order, call ``apply(node)`` before looking at a node (so
    its inputs already point at the replacements) and ``replace(...)`` to retire a value.
    ``finish()`` rewrites the graph outputs. A graph output is redirected only when the
    replacement lives on the same device (``can_replace_output``), because the executor
    reports an output's device from the node that produces it.
    """

    def __init__(self, graph):
        self.graph = graph
        self.map = {}
        self.output_nodes = {n for n, _ in graph.outputs}

    def resolve(self, ref):
        seen = self.map
        while ref in seen:
            ref = seen[ref]
        return ref

    def apply(self, node):
        if self.map:
            node.inputs = [self.resolve(ref) for ref in node.inputs]
            if node.control_inputs:
                node.control_inputs = [self.resolve((c, 0))[0] for c in node.control_inputs]

    def can_replace_output(self, node, replacement_node):
        return node not in self.output_nodes or \
            output_key(node) == output_key(replacement_node)

    def replace(self, node, index, ref):
        self.map[(node, index)] = ref

    def finish(self):
        if self.map:
            self.graph.outputs = [self.resolve(ref) for ref in self.graph.outputs]
        return bool(self.map)


def rebuild(graph, plans, dropped, build):
    """Rewrites ``graph.nodes`` in one forward sweep through a ``Substitution``.

    Each node in ``plans`` gives way to the nodes ``build(node, plan, sub)`` returns, the
    last of which takes over the node's first output; the nodes in ``dropped`` are left
    out; every other node keeps its place. Returns True (the graph changed).
    """
    sub = Substitution(graph)
    nodes = []
    for node in graph.nodes:
        sub.apply(node)
        plan = plans.get(node)
        if plan is not None:
            new = build(node, plan, sub)
            nodes.extend(new)
            sub.replace(node, 0, (new[-1], 0))
        elif node not in dropped:
            nodes.append(node)
    graph.nodes = nodes
    sub.finish()
    return True


def consumers(graph):
    """``{node: number of uses}`` counting node inputs, control inputs and graph outputs."""
    uses = {}
    for node in graph.nodes:
        for src, _ in node.inputs:
            uses[src] = uses.get(src, 0) + 1
        for src in node.control_inputs:
            uses[src] = uses.get(src, 0) + 1
    for src, _ in graph.outputs:
        uses[src] = uses.get(src, 0) + 1
    return uses


def readers(graph):
    """``{node: [consumer, ...]}``; graph outputs and control edges count as None."""
    readers = {}
    for node in graph.nodes:
        for src, _ in node.inputs:
            readers.setdefault(src, []).append(node)
        for src in node.control_inputs:
            readers.setdefault(src, []).append(None)
    for src, _ in graph.outputs:
        readers.setdefault(src, []).append(None)
    return readers


def hashable(value):
    """A hashable, type-exact canonical form of an attr value, or raises TypeError."""
    if isinstance(value, (str, bytes, bool, int, type(None))):
        return (type(value).__name__, value)
    if isinstance(value, float):
        return ("float", repr(value))  # keeps 0.0 apart from -0.0, and nan equal to nan
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(hashable(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, hashable(v)) for k, v in value.items())))
    if hasattr(value, "dtype") and hasattr(value, "tobytes"):
        return ("array", str(value.dtype), tuple(value.shape), value.tobytes())
    name = getattr(value, "name", None)
    if isinstance(name, str):  # DType-like objects
        return (type(value).__name__, name)
    raise TypeError("unhashable attr %r" % (value,))
