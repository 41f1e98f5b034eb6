"""The tracer: the dispatch hook that turns op calls into graph nodes.

While a function is traced, ``context.state.trace`` is a :class:`Tracer`. Dispatch hands it
every op call; it converts the inputs to references into its graph (capturing eager tensors
and outer symbolic tensors, embedding Python constants), computes the outputs' abstract
values with the primitive's shape rule, adds the node, and returns symbolic outputs. If a
tape watches an input, the call is recorded on it exactly as in eager mode, so gradients
taken inside a function become graph nodes too.
"""

from __future__ import annotations

import contextlib

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function.graph import aval_of
from eagerflow.function.symbolic import SymbolicTensor, user_frame
from eagerflow.ops import dispatch, static_value
from eagerflow.ops.registry import AbstractValue, zero_avals_eval
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["Tracer", "tracing", "eager_mode"]

_state = context.state
# Small Python/numpy constants are embedded as Const nodes; larger eager values captured.
_EMBED_LIMIT = 64
_ASSIGN_OPS = frozenset(builtins.ASSIGN_OPS.values())


class Tracer:
    """Builds one Graph from the op calls made while it is the active trace hook.

    Args:
        graph: The Graph to fill.
        parent: The enclosing Tracer (nested functions, control-flow branches), or None.
    """

    def __init__(self, graph, parent=None):
        self.graph = graph
        self.parent = parent
        self.created_variables = []
        self.allow_variable_creation = True
        self.control_inputs = []  # nodes the ops traced now depend on (control_dependencies)
        self._captured = {}  # id(outer object) -> placeholder node
        self._pinned = []
        self._consts = {}

    # -- the hook -----------------------------------------------------------------------------
    def __call__(self, prim, args, attrs):
        inputs = self._convert(prim, args)
        # A shape-like attr known only at run time becomes an extra input (after the op's
        # own, outside its dtype rule); the node keeps what is known of it.
        node_attrs, extra = static_value.split_dynamic(attrs) if attrs else (attrs, ())
        if extra:
            inputs = tuple(inputs) + tuple(self.to_symbolic(t, prim=prim) for t in extra)
            avals = [t.aval for t in inputs[:len(inputs) - len(extra)]]
            rule_attrs = dict(node_attrs)
            del rule_attrs[static_value.DYNAMIC_ATTRS]
        else:
            avals = [t.aval for t in inputs]
            rule_attrs = attrs
        out_avals = self._abstract_eval(prim, inputs, avals, rule_attrs)
        node = self.graph.add_node(
            prim.name, [(t._node, t._index) for t in inputs], node_attrs, out_avals, prim=prim,
            device=_device_string(), stateful=prim.stateful)
        node.origin = user_frame()
        if self.control_inputs:
            node.control_inputs.extend(self.control_inputs)
        outs = tuple(SymbolicTensor(self.graph, node, i) for i in range(len(out_avals)))
        result = outs[0] if prim.single else outs
        tapes = _state.tapes
        if tapes and dispatch._tape_recorder is not None:
            if extra:  # the gradient rule sees the op's inputs and the dynamic attrs
                inputs = inputs[:len(inputs) - len(extra)]
            for t in inputs:
                if t._tid:
                    dispatch._tape_recorder(tapes, prim, inputs, attrs, result)
                    break
        return result

    def _abstract_eval(self, prim, inputs, avals, attrs):
        try:
            if prim.shape_fn is not None:
                out = prim.shape_fn(*avals, **attrs)
            else:
                out = zero_avals_eval(prim, avals, attrs)
        except errors.OpError as exc:
            if exc.op is None:
                exc.op = prim.name
            exc.message = "%s%s" % (exc.message, _at_user_line())
            exc.args = (exc.message,)
            raise
        except Exception as exc:  # noqa: BLE001 - shape rules raise numpy/Python errors
            raise errors.InvalidArgumentError(
                None, prim.name, "%s(%s)%s: %s%s" % (
                    prim.name, ", ".join(repr(a) for a in avals),
                    "".join(" %s=%r" % kv for kv in attrs.items()), exc, _at_user_line())
            ) from None
        if isinstance(out, AbstractValue):
            out = (out,)
        return tuple(out)

    # -- inputs -------------------------------------------------------------------------------
    def _convert(self, prim, args):
        # Dispatch's conversion and dtype rule, with graph references for the values. As in
        # dispatch, inputs that already are what the op takes (this graph's tensors) pass.
        graph = self.graph
        for a in args:
            if a.__class__ is not SymbolicTensor or a._graph is not graph:
                inputs = dispatch.convert_inputs(prim, args, self._input)
                break
        else:
            inputs = args
        dispatch.check_dtypes(prim, [t._value for t in inputs], inputs,
                              _device_string() or "the default device", _at_user_line)
        return inputs

    def _input(self, prim, value, np_dtype, device):
        """One op argument as a reference into this graph (see dispatch.convert_inputs)."""
        return self._symbolic(value, None if np_dtype is None else dtypes_lib.from_numpy(
            np_dtype))

    def to_symbolic(self, value, dtype=None, prim=None):
        """A SymbolicTensor of this graph for any op input."""
        try:
            return self._symbolic(value, dtype)
        except TypeError as exc:
            raise errors.InvalidArgumentError(
                None, getattr(prim, "name", None), "%s: %r cannot be converted to %s: %s" % (
                    getattr(prim, "name", "op"), value, getattr(dtype, "name", "a tensor"),
                    exc)) from None

    def _symbolic(self, value, dtype):
        if isinstance(value, SymbolicTensor):
            if value._graph is self.graph:
                return value
            return self.capture(value)
        if getattr(value, "_is_variable", False):
            return value.read_value()  # a ReadVariableOp node via read_variable below
        if isinstance(value, Tensor):
            if _embeddable(value._value):
                return self.const(_host_value(value))
            return self.capture(value)
        if isinstance(value, (list, tuple)) and _holds_symbolic(value):
            # TF's auto-packing: [i] or [[n, 2]] with traced scalars is a stack of them.
            from eagerflow.ops.array.join_ops import stack

            return self._symbolic(stack([v if not isinstance(v, (list, tuple)) else
                                         self._symbolic(v, dtype) for v in value]), dtype)
        t = convert_to_tensor(value, dtype=dtype)
        if isinstance(t, SymbolicTensor):
            # A tensor-like whose conversion ran ops (a sharded variable's concat): those
            # ops are in this trace already.
            return self._symbolic(t, None)
        if _embeddable(t._value):
            return self.const(_host_value(t))
        return self.capture(t)

    def auto_pack(self, value, dtype):
        """A list holding traced tensors as one tensor (TF's auto-packing), or None when
        it holds none (``convert_to_tensor`` asks)."""
        if not _holds_symbolic(value):
            return None
        return self._symbolic(value, dtype)

    def const(self, array):
        """A Const node (deduplicated within the graph)."""
        array = np.asarray(array)
        # An object (string) array's bytes are pointers: key it by its elements instead.
        key = (array.dtype.str, array.shape,
               tuple(array.flat) if array.dtype.kind == "O" else array.tobytes())
        node = self._consts.get(key)
        if node is None:
            aval = AbstractValue(array.shape, dtypes_lib.from_numpy(array.dtype))
            node = self.graph.add_node(builtins.CONST, (), {}, (aval,), value=array, name="const")
            self._consts[key] = node
        return SymbolicTensor(self.graph, node, 0)

    def capture(self, value):
        """A placeholder bound at call time to an outer eager tensor or symbolic tensor."""
        key = id(value)
        node = self._captured.get(key)
        if node is None:
            original = value
            if isinstance(value, SymbolicTensor):
                aval = value.aval
                if self.parent is not None:
                    value = self.parent.to_symbolic(value)
            else:
                aval = aval_of(value)
            node = self.graph.add_capture(value, aval)
            # Keyed by the caller's object, which is kept alive so its id cannot be reused.
            self._captured[key] = node
            self._pinned.append(original)
        return SymbolicTensor(self.graph, node, 0)

    # -- variables ----------------------------------------------------------------------------
    def on_variable_created(self, variable):
        """Called by Variable() while tracing: allowed on a function's first trace only."""
        if not self.allow_variable_creation:
            raise ValueError(
                "tf.function only supports singleton tf.Variables created on the first call. "
                "Make sure the tf.Variable is only created once or created outside "
                "tf.function: variables inside a function are created once, on the first "
                "call; create them outside the function (or guard creation with "
                "`if self.v is None:` on an object attribute) so that later traces reuse "
                "them%s." % _at_user_line())
        self.created_variables.append(variable)

    def lift(self, tensor):
        """The eager value of a symbolic ``tensor`` that depends on no function input, or None.

        A variable created while tracing is created once, eagerly; an initial value computed
        by ops in the trace (``Variable(zeros([3]))``) is evaluated here from the nodes that
        produce it, as TF lifts variable initializers out of a function's graph.
        """
        graph = tensor._graph
        needed = set()
        stack = [tensor._node]
        while stack:
            node = stack.pop()
            if node.id in needed:
                continue
            if node.op == builtins.PLACEHOLDER and (not node.attrs.get("capture")
                                                    or isinstance(node.value, SymbolicTensor)):
                return None  # a function input (or an outer function's value)
            if node.op in _ASSIGN_OPS:
                return None
            needed.add(node.id)
            stack.extend(src for src, _ in node.inputs)
            stack.extend(node.control_inputs)
        from eagerflow.function.executor import Executor
        from eagerflow.function.graph import Graph
        from eagerflow.tensor import wrap

        sub = Graph(graph.name + "_initializer")
        sub.nodes = [n for n in graph.nodes if n.id in needed]
        sub.captures = [(n, c) for n, c in graph.captures if n.id in needed]
        sub.variables = graph.variables
        sub.outputs = [(tensor._node, tensor._index)]
        with eager_mode():
            captures = [c.read_value()._value if getattr(c, "_is_variable", False)
                        else c._value for _, c in sub.captures]
            value = Executor(sub).run([], captures)[0]
        return wrap(value, context.CPU0)

    def read_variable(self, variable):
        """A ReadVariableOp node: the variable's value when the graph runs."""
        index = self.graph.variable_index(variable)
        aval = AbstractValue(variable.shape.dims if variable.shape.rank is not None else None,
                             variable.dtype)
        node = self.graph.add_node(builtins.READ_VARIABLE, (), {"variable": index}, (aval,),
                                   device=_device_string() or variable.device,
                                   name="read_" + _clean(variable.name), stateful=True)
        return SymbolicTensor(self.graph, node, 0)

    def print_node(self, tensors, attrs):
        """A Print node writing ``tensors`` (SymbolicTensors of this graph) when the graph
        runs, formatted as ``attrs`` say (see :mod:`eagerflow.ops.print_ops`)."""
        self.graph.add_node(builtins.PRINT, [(t._node, t._index) for t in tensors], attrs, (),
                            stateful=True)

    def assign_variable(self, variable, value, method):
        """The node writing ``value`` to ``variable`` when the graph runs, for the Variable
        ``method`` ("assign", "assign_add" or "assign_sub")."""
        op = builtins.ASSIGN_OPS[method]
        index = self.graph.variable_index(variable)
        t = self.to_symbolic(value, variable.dtype)
        if t.dtype is not variable.dtype:
            raise errors.InvalidArgumentError(
                None, op, "%s: cannot assign a %s value to variable %s of dtype %s%s"
                % (op, t.dtype.name, variable.name, variable.dtype.name, _at_user_line()))
        if t._value.shape is not None and not variable.shape.is_compatible_with(
                t._value.shape) and op == builtins.ASSIGN_VARIABLE:
            raise ValueError(  # TF's class, traced as eagerly
                "%s: shape %s does not match variable %s of shape %s%s"
                % (op, list(t._value.shape), variable.name, variable.shape, _at_user_line()))
        self.graph.add_node(op, [(t._node, t._index)], {"variable": index}, (),
                            device=_device_string() or variable.device, stateful=True,
                            name=op.replace("VariableOp", "").lower())


def _holds_symbolic(value):
    for v in value:
        if isinstance(v, SymbolicTensor) or isinstance(v, (list, tuple)) and _holds_symbolic(v):
            return True
    return False


def _clean(name):
    return name.split(":")[0].replace("/", "_")


def _embeddable(array):
    return isinstance(array, (np.ndarray, np.generic)) and np.size(array) <= _EMBED_LIMIT


def _device_string():
    spec = _state.device_spec
    return "" if spec is None else spec.to_string()


def _at_user_line():
    found = user_frame()
    return "" if found is None else " (at %s:%d)" % (found[0], found[1])


@contextlib.contextmanager
def tracing(tracer):
    """Makes ``tracer`` the active trace hook for the block.

    Tapes of the caller are set aside: a traced function records on its own tapes only
    (gradients through a function call are handled at call time by the function).
    """
    previous = context.set_trace_hook(tracer)
    saved_tapes = _state.tapes
    _state.tapes = ()
    try:
        yield tracer
    finally:
        _state.tapes = saved_tapes
        context.set_trace_hook(previous)


@contextlib.contextmanager
def eager_mode():
    """Runs the block eagerly even inside a trace (TF's ``init_scope``)."""
    previous = context.set_trace_hook(None)
    saved_spec, saved_device = _state.device_spec, _state.device
    try:
        yield
    finally:
        context.set_trace_hook(previous)
        _state.device_spec, _state.device = saved_spec, saved_device
        _state.refresh()


def _host_value(tensor):
    """A tensor's value as a numpy array (a string tensor's object array stays one)."""
    if tensor._value.dtype.kind == "O":
        return tensor._value
    return np.asarray(tensor.numpy())
