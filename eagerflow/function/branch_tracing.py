"""What ``cond``, ``switch_case`` and ``while_loop`` share: the nested tracer that traces a
branch, a loop condition or a loop body into a sub-graph, binding the sub-graphs' inputs,
adding the control-flow node, and the argument checks.

A tensor-valued predicate is unknown while a function is traced, so every branch (or the
loop's condition and body) is traced into a sub-graph of its own by a
:class:`BranchTracer`, whose parent is the enclosing tracer. Outer symbolic tensors used
inside become captures of the sub-graph; the union of what the branches capture becomes
the inputs of one ``If``/``Case``/``While`` node, so every branch takes the same inputs and
the node is an ordinary dataflow node of the outer graph. Sub-graphs live in the library of
the outermost graph under unique names (``cond_true``, ``while_body_1``, ...).

Example:
    >>> import eagerflow as ef
    >>> @ef.function
    ... def f(x):
    ...     return ef.cond(x > 0, lambda: x, lambda: -x)
    >>> sorted(f.get_concrete_function(ef.constant(-3)).graph.library)
    ['cond_false', 'cond_true']
"""

from __future__ import annotations

from eagerflow import nest
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function import control_flow_exec  # noqa: F401 - registers the executor steps
from eagerflow.function import control_flow_grad as grad_lib
from eagerflow.function.graph import Graph, aval_of
from eagerflow.function.symbolic import SymbolicTensor, user_frame
from eagerflow.function.tracer import Tracer, _at_user_line, _device_string, tracing
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["BranchTracer", "root_graph", "library_name", "Traced", "Aval", "trace_subgraph",
           "bind_inputs", "merge_shape", "add_control_flow_node", "unpack_singleton",
           "check_callable", "eager_truth", "scalar_selector"]

_state = context.state


class BranchTracer(Tracer):
    """Traces one branch, loop condition or loop body into a sub-graph.

    Args:
        graph: The sub-graph to fill.
        parent: The enclosing Tracer.
        outer_tapes: The tapes active where the control flow was called: hoisted variable
            reads are announced to them, so they watch the variables.
        local_variables: ids of variables whose reads must stay inside the sub-graph.
    """

    def __init__(self, graph, parent, outer_tapes=(), local_variables=()):
        super().__init__(graph, parent)
        self.outer_tapes = tuple(outer_tapes)
        self.local_variables = set(local_variables)
        self.assigned = set()  # ids of variables written here (or in nested control flow)
        self.hoisted = set()  # ids of variables read from the enclosing graph
        self._hoisted_reads = {}
        self._alive = []
        self.root = parent.root if isinstance(parent, BranchTracer) else parent

    def on_variable_created(self, variable):
        self.parent.on_variable_created(variable)

    def capture(self, value):
        """A placeholder for an outer value, one per outer object (kept alive for the key)."""
        key = id(value)
        node = self._captured.get(key)
        if node is None:
            if isinstance(value, SymbolicTensor):
                aval, outer = value.aval, self.parent.to_symbolic(value)
            else:
                aval, outer = aval_of(value), value
            node = self.graph.add_capture(outer, aval)
            self._captured[key] = node
            self._alive.append(value)
        t = SymbolicTensor(self.graph, node, 0)
        if _state.tapes and getattr(value, "_tid", 0):
            grad_lib.record_capture(value, t)
        return t

    def read_variable(self, variable):
        key = id(variable)
        if key in self.local_variables or key in self.assigned:
            self.root.graph.variable_index(variable)
            return super().read_variable(variable)
        outer = self._hoisted_reads.get(key)
        if outer is None:
            self.hoisted.add(key)
            outer = self.parent.read_variable(variable)
            if self.outer_tapes and context.variable_read_hook is not None:
                saved = _state.tapes
                _state.tapes = self.outer_tapes
                try:
                    context.variable_read_hook(variable, outer)
                finally:
                    _state.tapes = saved
            self._hoisted_reads[key] = outer
        return self.capture(outer)

    def assign_variable(self, variable, value, method):
        tracer = self
        while isinstance(tracer, BranchTracer):
            tracer.assigned.add(id(variable))
            tracer = tracer.parent
        self.root.graph.variable_index(variable)
        super().assign_variable(variable, value, method)


def root_graph(tracer):
    return tracer.root.graph if isinstance(tracer, BranchTracer) else tracer.graph


def library_name(root, base):
    name, k = base, 0
    while name in root.library:
        k += 1
        name = "%s_%d" % (base, k)
    return name


class Traced:
    """One traced sub-graph: its graph, tracer, raw Python result and flat outputs."""

    def __init__(self, graph, tracer, result, flat):
        self.graph = graph
        self.tracer = tracer
        self.result = result
        self.flat = flat  # SymbolicTensor of the sub-graph, or None, per leaf of result

    def describe(self):
        leaves = [None if t is None else Aval(t.aval) for t in self.flat]
        return repr(nest.pack_sequence_as(self.result, leaves))


class Aval:
    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return repr(self.aval)


def trace_subgraph(fn, name, input_avals=(), structure=None, local_variables=(),
                    postprocess=None):
    """Traces ``fn`` into a new sub-graph of the active trace; returns a Traced."""
    parent = _state.trace
    graph = Graph(name)
    library = root_graph(parent).library
    # Registered before tracing, so that control flow nested inside picks other names.
    library[name] = graph
    tracer = BranchTracer(graph, parent, _state.tapes, local_variables)
    placeholders = [SymbolicTensor(graph, graph.add_placeholder(aval, "arg%d" % k), 0)
                    for k, aval in enumerate(input_avals)]
    try:
        with tracing(tracer):
            if structure is None:
                result = fn()
            else:
                result = fn(*nest.pack_sequence_as(structure, placeholders))
            if postprocess is not None:
                result = postprocess(result)
            flat = [None if leaf is None else tracer.to_symbolic(leaf)
                    for leaf in nest.flatten(result)]
    except BaseException:
        library.pop(name, None)
        raise
    graph.outputs = [(t._node, t._index) for t in flat if t is not None]
    return Traced(graph, tracer, result, flat)


def bind_inputs(traced, n_explicit):
    """Makes every sub-graph take the union of all captures; returns that union (outer)."""
    parent = _state.trace
    union, index, maps = [], {}, []
    for tr in traced:
        found = {}
        for node, captured in tr.graph.captures:
            outer = parent.to_symbolic(captured)
            key = (id(outer._node), outer._index, outer._tid)
            if key not in index:
                index[key] = len(union)
                union.append(outer)
            if index[key] in found:
                _merge_placeholder(tr.graph, node, found[index[key]])
            else:
                found[index[key]] = node
        maps.append(found)
    for tr, found in zip(traced, maps):
        inputs = list(tr.graph.inputs[:n_explicit])
        for k, outer in enumerate(union):
            node = found.get(k)
            if node is None:
                node = tr.graph.add_node(builtins.PLACEHOLDER, (), {}, (outer.aval,), name="unused")
            else:
                node.attrs.pop("capture", None)
                node.value = None
            inputs.append(node)
        tr.graph.inputs = inputs
        tr.graph.captures = []
    return union


def _merge_placeholder(graph, duplicate, keep):
    """Points every use of the placeholder ``duplicate`` at ``keep`` (same outer value)."""
    graph.nodes.remove(duplicate)
    for node in graph.nodes:
        node.inputs = [(keep, i) if src is duplicate else (src, i) for src, i in node.inputs]
    graph.outputs = [(keep, i) if src is duplicate else (src, i) for src, i in graph.outputs]


def merge_shape(a, b):
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def _is_stateful(graphs):
    return any(n.stateful for g in graphs for n in g.nodes)


def add_control_flow_node(op, inputs, attrs, avals, graphs):
    tracer = _state.trace
    node = tracer.graph.add_node(op, [(t._node, t._index) for t in inputs], attrs, avals,
                                 device=_device_string(), stateful=_is_stateful(graphs))
    node.origin = user_frame()
    return node, [SymbolicTensor(tracer.graph, node, i) for i in range(len(avals))]


def unpack_singleton(result):
    if isinstance(result, (list, tuple)) and len(result) == 1:
        return result[0]
    return result


def check_callable(fn, what):
    if not callable(fn):
        raise TypeError("%s must be callable, got %r%s." % (what, fn, _at_user_line()))


def eager_truth(pred):
    if not isinstance(pred, Tensor):
        pred = convert_to_tensor(pred)
    return bool(pred)


def scalar_selector(value, what):
    """``value`` as a rank-0 tensor of the active graph (squeezing a size-1 tensor)."""
    from eagerflow.ops.array.reshape_ops import reshape

    t = _state.trace.to_symbolic(value)
    shape = t._value.shape
    if shape is None or len(shape) == 0:
        return t
    if any(d is not None and d != 1 for d in shape):
        raise ValueError("%s must be a scalar, got shape %s%s." % (what, list(shape),
                                                                    _at_user_line()))
    return reshape(t, ())
