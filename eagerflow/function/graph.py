"""The in-memory graph IR: a flat list of nodes in a valid execution order.

A :class:`Graph` is a dataflow function: ``inputs`` (Placeholder nodes), ``nodes`` in trace
order (which is a topological order and keeps stateful ops in program order), and
``outputs`` as ``(node, index)`` pairs. A node names a registered primitive (or a graph
builtin such as ``Placeholder``/``Const``/``ReadVariableOp``), its inputs as
``producer:index`` references, static attrs, a device string and the abstract value of each
output. ``Graph.pretty()`` prints it one node per line, like a jaxpr.

Example:
    >>> import eagerflow as ef
    >>> @ef.function
    ... def f(x):
    ...     return ef.tanh(x) * 2.0
    >>> print(f.get_concrete_function(ef.TensorSpec([3])).graph.pretty())  # doctest: +ELLIPSIS
    graph f(x: float32[3]) {
      %tanh = Tanh(%x) : float32[3]
    ...
"""

from __future__ import annotations

import itertools

from eagerflow.function import builtins
from eagerflow.ops.registry import AbstractValue

__all__ = ["Graph", "Node", "BUILTIN_OPS"]

# Nodes the executor implements itself rather than through a primitive's kernel (declared
# in eagerflow.function.builtins).
BUILTIN_OPS = frozenset(builtins.BUILTINS)
STATEFUL_BUILTINS = builtins.names(stateful=True)


class Node:
    """One operation in a Graph.

    Attributes:
        id: Unique integer within the graph (the order of creation).
        name: A readable unique name (``"tanh_3"``).
        op: The primitive or builtin op name.
        inputs: A list of ``(Node, output_index)`` pairs.
        attrs: Static attributes (ints, floats, strings, bools, tuples, None).
        device: The requested device string ("" when unplaced).
        avals: One AbstractValue per output.
        value: For Const nodes, the constant's array; for captures, the captured object.
        control_inputs: Nodes that must run before this one (side-effect ordering).
    """

    __slots__ = ("id", "name", "op", "inputs", "attrs", "device", "avals", "value",
                 "control_inputs", "prim", "stateful", "origin", "__weakref__")

    def __init__(self, id, name, op, inputs, attrs, device, avals, prim=None, value=None,
                 stateful=False):
        self.id = id
        self.name = name
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.device = device
        self.avals = avals
        self.prim = prim
        self.value = value
        self.control_inputs = []
        self.stateful = stateful
        self.origin = None  # (file, line, source) of the user's call, for error messages

    @property
    def num_outputs(self):
        return len(self.avals)

    @property
    def type(self):
        """The op's type name, as TF's ``Operation.type`` (``"MatMul"``)."""
        return self.op

    @property
    def is_constant(self):
        """True for a Const node (its ``value`` is the constant): what ops that need a
        static value (a shape, an axis) may read while tracing."""
        return self.op == builtins.CONST

    def ref(self, index=0):
        """The ``name:index`` reference of one output."""
        return "%s:%d" % (self.name, index)

    def __repr__(self):
        return "<Node %s = %s>" % (self.name, self.op)


class Graph:
    """A traced dataflow function.

    Attributes:
        name: The function's name.
        inputs: Placeholder nodes, one per flattened tensor argument.
        captures: ``(node, captured)`` pairs: Placeholders bound at call time to an eager
            tensor or a variable captured from the enclosing Python scope.
        nodes: Every node (placeholders included) in execution order.
        outputs: The flattened outputs as ``(node, index)`` pairs.
        library: Named sub-graphs (branches and bodies of functional control flow).
        variables: Variables read or written by the graph, in first-use order.
    """

    def __init__(self, name="graph"):
        self.name = name
        self.inputs = []
        self.captures = []
        self.nodes = []
        self.outputs = []
        self.library = {}
        self.variables = []
        self._counter = itertools.count(1)
        self._names = {}
        self._variable_index = {}

    def _unique(self, base):
        base = base.lower()
        count = self._names.get(base, 0)
        self._names[base] = count + 1
        return base if count == 0 else "%s_%d" % (base, count)

    def add_node(self, op, inputs, attrs, avals, *, prim=None, device="", name=None,
                 value=None, stateful=False):
        """Appends a node and returns it."""
        node = Node(next(self._counter), self._unique(name or op), op, list(inputs),
                    dict(attrs) if attrs else {}, device, tuple(avals), prim=prim, value=value,
                    stateful=stateful)
        self.nodes.append(node)
        return node

    def add_placeholder(self, aval, name):
        node = self.add_node(builtins.PLACEHOLDER, (), {}, (aval,), name=name)
        self.inputs.append(node)
        return node

    def add_capture(self, captured, aval, name="capture"):
        """A placeholder bound at call time to ``captured`` (eager tensor or variable)."""
        node = self.add_node(builtins.PLACEHOLDER, (), {"capture": True}, (aval,), name=name,
                             value=captured)
        self.captures.append((node, captured))
        return node

    def variable_index(self, variable):
        """The position of ``variable`` in ``self.variables`` (appending it if new)."""
        key = id(variable)
        index = self._variable_index.get(key)
        if index is None:
            index = len(self.variables)
            self.variables.append(variable)
            self._variable_index[key] = index
        return index

    def node_by_name(self, name):
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    @property
    def operations(self):
        return list(self.nodes)

    def get_operations(self):
        return list(self.nodes)

    def as_graph_def(self):
        """This graph as a ``GraphDef`` protobuf message, as TF's ``as_graph_def``.

        ``node`` lists every node (name, op, inputs, attrs, device), ``library`` the
        sub-graphs of its control flow. ``serialize.graph_to_proto`` gives the whole
        loadable ``SavedFunction`` (signature and variables too). Loads the protobuf module
        on first use only.
        """
        from eagerflow.function.serialize import graph_to_proto

        return graph_to_proto(self).graph

    def pretty(self):
        """A readable listing: one line per node, placeholders as arguments."""
        args = ", ".join("%s: %r" % (n.name, n.avals[0]) for n in self.inputs)
        lines = ["graph %s(%s) {" % (self.name, args)]
        for node, captured in self.captures:
            what = getattr(captured, "name", None) or type(captured).__name__
            lines.append("  %%%s = capture %s: %r" % (node.name, what, node.avals[0]))
        for node in self.nodes:
            if node.op == builtins.PLACEHOLDER:
                continue
            lhs = ", ".join("%%%s" % (node.name if i == 0 else "%s:%d" % (node.name, i))
                            for i in range(max(node.num_outputs, 1))) \
                if node.num_outputs else "_"
            ins = ", ".join("%%%s" % (src.name if idx == 0 else "%s:%d" % (src.name, idx))
                            for src, idx in node.inputs)
            attrs = ", ".join("%s=%r" % kv for kv in sorted(node.attrs.items())
                              if kv[0] != "capture")
            text = "%s = %s(%s%s)" % (lhs, node.op, ins, (", " + attrs) if attrs and ins
                                      else attrs)
            if node.op == builtins.CONST:
                text = "%s = Const(%s)" % (lhs, _short_value(node.value))
            types = ", ".join(repr(a) for a in node.avals)
            device = "  @%s" % node.device if node.device else ""
            lines.append("  %s : %s%s" % (text, types, device))
        outs = ", ".join("%%%s" % (n.name if i == 0 else "%s:%d" % (n.name, i))
                         for n, i in self.outputs)
        lines.append("  return %s" % outs)
        lines.append("}")
        for name, sub in self.library.items():
            lines.append("")
            lines.append(sub.pretty().replace("graph %s(" % sub.name, "graph %s(" % name, 1))
        return "\n".join(lines)

    def __repr__(self):
        return "<Graph %s: %d nodes>" % (self.name, len(self.nodes))


def _short_value(value):
    import numpy as np

    array = np.asarray(value)
    if array.size <= 6:
        return np.array2string(array, separator=", ").replace("\n", "")
    return "<%s%s>" % (array.dtype, list(array.shape))


def aval_of(tensor):
    """The AbstractValue of an eager tensor or array."""
    from eagerflow import dtypes

    value = tensor._value if hasattr(tensor, "_value") else tensor
    return AbstractValue(tuple(value.shape), dtypes.from_numpy(value.dtype))
