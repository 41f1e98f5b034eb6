"""Gradients of traced control flow: ``If``/``Case`` and ``While`` nodes on the tape.

When a tape watches an input of a control-flow node as it is created, the node is recorded
as one tape entry whose backward rule runs while tracing (inside the function being traced,
or when a function's gradient is traced once for all its calls) and adds graph nodes:

* **cond / switch_case.** The gradient is another ``cond`` (``switch_case``) on the same
  predicate (index). Each gradient branch *replays* the forward branch's sub-graph under a
  fresh tape (re-emitting its nodes through the one dispatch path, so every primitive's
  gradient rule applies) and asks that tape for the gradients of the branch inputs given
  the output cotangents. The taken branch is thus recomputed in the backward pass instead
  of keeping its intermediates alive.
* **while_loop.** The backward pass needs the value of every loop variable at the start of
  every iteration. The first time a gradient is built, the forward ``While`` node is asked
  to keep that history (attr ``history=True``): it then also outputs each loop variable
  stacked over iterations (padded where its shape changes), the iteration count and each
  iteration's shapes. The gradient is a ``while_loop`` that walks the iterations in
  reverse: iteration ``k`` gathers the loop variables of forward iteration ``k`` (cut to
  their shapes where those may change), replays the body on them under a tape, and maps
  the loop-variable cotangents back one step, summing the gradients of the captured
  tensors. Executors compiled before the history was requested keep the node's original
  outputs.

Replays emit only the nodes the outputs depend on, so variable writes and prints of the
forward sub-graph never run again. Because the backward pass is built from the same
``cond``/``while_loop`` builders, the gradient nodes are recorded in turn: higher-order
derivatives work the same way. Nested control flow is replayed with the builders too. The
builders' modules (``control_flow``, ``while_loop``) import this one to record their nodes,
so the functions here import the builders when they run: the gradient of a control-flow op
is control flow, a recursion no split of the modules removes.

Limitations, reported with a clear error rather than a wrong number: a random op on which a
differentiated branch or loop body output depends (recomputing it would draw new numbers;
draw the values outside and capture them), a loop body output that depends on a variable
the loop itself writes, and loop variables whose rank changes between iterations (a shape
that changes is kept padded, with each iteration's shape, and cut back out).
"""

from __future__ import annotations

import weakref

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function.symbolic import SymbolicTensor
from eagerflow.ops import dispatch
from eagerflow.ops.registry import AbstractValue

__all__ = ["record", "record_capture", "conditional_backward", "while_backward", "replay",
           "ensure_history"]

_state = context.state
# Nodes of backward loop bodies that read the forward history (see while_backward).
_HISTORY_READS = weakref.WeakSet()


def _is_float(t):
    dt = t._value.dtype
    return dt.kind in "fc" or dt.name == "bfloat16"


# -- recording ---------------------------------------------------------------------------------
def record(kind, inputs, outputs, backward):
    """Records one control-flow node on every recording tape that watches an input."""
    from eagerflow.tape import _append_entry, _assign_id
    from eagerflow.tape_entry import Entry as _Entry

    tapes = [t for t in _state.tapes if t._recording and any(
        x._tid and x._tid in t._ids for x in inputs)]
    if not tapes or not outputs:
        return
    entry = _Entry(
        None, tuple(x._tid for x in inputs), tuple(x._value.shape for x in inputs),
        tuple(_is_float(x) for x in inputs), None, None, {}, (),
        # No device: the tape passes None for a missing cotangent instead of building
        # zeros (symbolic outputs may have unknown dimensions).
        tuple((o._value.shape, o._value.dtype, None) for o in outputs), backward=backward)
    entry.output_ids = tuple(_assign_id(o) for o in outputs)
    for tape in tapes:
        _append_entry(tape, entry)


def record_capture(outer, inner):
    """Records the capture of ``outer`` by a sub-graph as an identity to ``inner``, on the
    tapes of the sub-graph's trace that watch ``outer`` (a tape inside a custom gradient or
    a branch that watches a tensor from outside, as TF records captures)."""
    from eagerflow.tape import _append_entry, _assign_id
    from eagerflow.tape_entry import Entry as _Entry

    tid = outer._tid
    tapes = [t for t in _state.tapes if t._recording and tid in t._ids]
    if not tapes:
        return
    entry = _Entry(None, (tid,), (outer._value.shape,), (_is_float(outer),), None, None, {},
                   (), ((inner._value.shape, inner._value.dtype, None),),
                   backward=_cotangents)
    entry.output_ids = (_assign_id(inner),)
    for tape in tapes:
        _append_entry(tape, entry)


def _cotangents(cotangent):
    return cotangent if isinstance(cotangent, tuple) else (cotangent,)


def _zeros_like(t):
    from eagerflow.ops.math.arithmetic import zeros_like_t

    return zeros_like_t(t)


def _gradients_of_replay(graph, inputs, sources, targets_cots, library, what):
    """Replays ``graph`` on ``inputs`` under a tape; returns d(targets)/d(sources)."""
    from eagerflow.tape import GradientTape

    with GradientTape() as tape:
        tape.watch(sources)
        outs = replay(graph, inputs, library, what)
    targets = [outs[j] for j, _ in targets_cots]
    return tape.gradient(targets, sources, output_gradients=[c for _, c in targets_cots])


# -- cond / switch_case ------------------------------------------------------------------------
def conditional_backward(kind, selector, graphs, inputs, outputs, library):
    """The backward rule of an If/Case node: the same selection over gradient branches."""
    float_in = [k for k, x in enumerate(inputs) if _is_float(x)]
    what = "cond" if kind == builtins.IF else "switch_case"

    def backward(cotangent):
        cots = _cotangents(cotangent)
        pairs = [(j, c) for j, c in enumerate(cots) if c is not None and _is_float(outputs[j])]
        result = [None] * (1 + len(inputs))
        if not pairs or not float_in:
            return tuple(result)

        def gradient_branch(graph):
            def branch():
                tracer = _state.trace
                xs = [tracer.to_symbolic(x) for x in inputs]
                cs = [(j, tracer.to_symbolic(c)) for j, c in pairs]
                sources = [xs[k] for k in float_in]
                grads = _gradients_of_replay(graph, xs, sources, cs, library, what)
                return [g if g is not None else _zeros_like(s) for g, s in zip(grads, sources)]
            return branch

        from eagerflow.function.control_flow import cond, switch_case

        fns = [gradient_branch(g) for g in graphs]
        if kind == builtins.IF:
            grads = cond(selector, fns[0], fns[1], name="cond_grad")
        else:
            grads = switch_case(selector, fns, name="switch_case_grad")
        for k, g in zip(float_in, grads):
            result[1 + k] = g
        return tuple(result)

    return backward


# -- while_loop --------------------------------------------------------------------------------
def ensure_history(graph, node):
    """Makes a While node also output its per-iteration loop variables and count."""
    n = node.attrs["n_loop_vars"]
    if not node.attrs.get("history"):
        from eagerflow import dtypes

        extra = tuple(AbstractValue(None if a.shape is None else (None,) + a.shape, a.dtype)
                      for a in node.avals[:n])
        shapes = tuple(AbstractValue((None, None if a.shape is None else len(a.shape)),
                                     dtypes.int32) for a in node.avals[:n])
        node.avals = tuple(node.avals[:n]) + extra + (AbstractValue((), dtypes.int32),) \
            + shapes
        node.attrs["history"] = True
    history = [SymbolicTensor(graph, node, n + j) for j in range(n)]
    return history, SymbolicTensor(graph, node, 2 * n)


def history_shapes(graph, node):
    """The shapes ``[iterations, rank]`` of each loop variable's kept history."""
    n = node.attrs["n_loop_vars"]
    return [SymbolicTensor(graph, node, 2 * n + 1 + j) for j in range(n)]


def _read_history(history, shapes, k, aval):
    """Loop variable values of forward iteration ``k``, and the node that read them: a
    variable whose shape may change between iterations is cut out of its padded history
    with its recorded shape."""
    from eagerflow.ops.indexing.gather_ops import gather

    value = gather(history, k)
    if aval.shape is not None and None not in aval.shape:
        return value, value._node
    from eagerflow.ops.array.slicing import slice as tf_slice

    size = gather(shapes, k)
    cut = tf_slice(value, size * 0, size)
    cut.set_shape(aval.shape)  # the dimensions the loop keeps fixed stay known
    return cut, value._node


def while_backward(graph, node, loop_inputs, captures, outputs, body_graph, library):
    """The backward rule of a While node: a reversed while_loop over the kept history."""
    n = len(loop_inputs)
    n_inputs = n + len(captures) + (1 if node.attrs.get("has_max") else 0)
    float_vars = [j for j in range(n) if _is_float(outputs[j])]
    float_caps = [k for k, c in enumerate(captures) if _is_float(c)]
    invariants = [a.shape for a in node.avals[:n]]

    def backward(cotangent):
        from eagerflow.function.while_loop import while_loop
        from eagerflow.tensor_shape import TensorShape

        cots = _cotangents(cotangent)
        result = [None] * n_inputs
        if not float_vars or all(cots[j] is None for j in float_vars):
            return tuple(result)
        history, count = ensure_history(graph, node)
        hshapes = history_shapes(graph, node)
        cot0 = [cots[j] if cots[j] is not None else _zeros_like(outputs[j]) for j in float_vars]
        acc0 = [_zeros_like(captures[k]) for k in float_caps]

        def back_cond(k, cot, acc):
            return k > 0

        def back_body(k, cot, acc):
            tracer = _state.trace
            k = k - 1
            reads = [_read_history(h, s, k, a)
                     for h, s, a in zip(history, hshapes, node.avals[:n])]
            values = [v for v, _ in reads]
            _HISTORY_READS.update(r for _, r in reads)
            caps = [tracer.to_symbolic(c) for c in captures]
            sources = [values[j] for j in float_vars] + [caps[q] for q in float_caps]
            grads = _gradients_of_replay(body_graph, values + caps, sources,
                                         list(zip(float_vars, cot)), library, "while_loop")
            m = len(float_vars)
            new_cot = [g if g is not None else _zeros_like(values[j])
                       for g, j in zip(grads[:m], float_vars)]
            new_acc = [a if g is None else a + g for a, g in zip(acc, grads[m:])]
            return k, new_cot, new_acc

        shapes = (TensorShape([]), [TensorShape(invariants[j]) for j in float_vars],
                  [TensorShape(captures[q]._value.shape) for q in float_caps])
        _, cot, acc = while_loop(back_cond, back_body, (count, cot0, acc0),
                                 shape_invariants=shapes, name="while_grad")
        for j, g in zip(float_vars, cot):
            result[j] = g
        for q, g in zip(float_caps, acc):
            result[n + q] = g
        return tuple(result)

    return backward


# -- replay --------------------------------------------------------------------------------------
def _needed(graph):
    needed = {n.id for n, _ in graph.outputs}
    for node in reversed(graph.nodes):
        if node.id in needed:
            needed.update(src.id for src, _ in node.inputs)
    return needed


def _where(node):
    if not node.origin:
        return ""
    filename, lineno, line = node.origin
    return " (created at %s:%d%s)" % (filename, lineno, ": `%s`" % line if line else "")


def replay(graph, inputs, library, what):
    """Re-emits the nodes ``graph``'s outputs depend on, on ``inputs``; returns the outputs.

    Ops go through dispatch, so the active tracer adds them to its graph and the active
    tapes record them. Nested control flow is rebuilt with the public builders.
    """
    needed = _needed(graph)
    env = {}
    for node, value in zip(graph.inputs, inputs):
        env[(node.id, 0)] = value
    for node in graph.nodes:
        if node.op == builtins.PLACEHOLDER or node.id not in needed:
            continue
        args = [env[(src.id, idx)] for src, idx in node.inputs]
        outs = _replay_node(node, args, graph, library, what)
        for i, value in enumerate(outs):
            env[(node.id, i)] = value
    return [env[(node.id, idx)] for node, idx in graph.outputs]


def _replay_node(node, args, graph, library, what):
    prim = node.prim
    if node in _HISTORY_READS:
        # Differentiating a while_loop's backward pass: the gradient of reading the kept
        # history needs the number of iterations as a static shape.
        raise errors.UnimplementedError(
            None, builtins.WHILE, "Second-order gradients through while_loop are not supported%s. "
            "Compute the inner gradient outside the loop, or unroll the loop in Python." % (
                _where(node)))
    if prim is not None:
        if prim.stateful:
            raise errors.UnimplementedError(
                None, prim.name, "Cannot differentiate through this %s: an output depends on "
                "the random op %s%s, and the gradient recomputes the %s, which would draw new "
                "numbers. Draw the random values outside the %s and use them inside." % (
                    what, prim.name, _where(node), what, what))
        from eagerflow.ops import static_value

        args, attrs = static_value.symbolic_attrs(tuple(args), node.attrs)
        out = dispatch.execute(prim, args, attrs)
        return out if isinstance(out, tuple) else (out,)
    op = node.op
    if op == builtins.CONST:
        if _state.trace is None:  # a custom gradient's sub-graph run eagerly
            from eagerflow.tensor import wrap

            return (wrap(node.value, context.CPU0),)
        return (_state.trace.const(node.value),)
    if op == builtins.READ_VARIABLE:
        variable = graph.variables[node.attrs["variable"]]
        if what == "while_loop":
            raise errors.UnimplementedError(
                None, op, "Cannot differentiate through this while_loop: an output of its "
                "body depends on variable %r, which the loop also assigns%s. Carry the value "
                "as a loop variable instead." % (variable.name, _where(node)))
        return (variable.read_value(),)
    if op in (builtins.IF, builtins.CASE):
        return _replay_conditional(node, args, library, what)
    if op == builtins.WHILE:
        return _replay_while(node, args, library, what)
    if op == builtins.CUSTOM_GRADIENT:
        from eagerflow.function.custom_gradient_graph import replay_node

        return tuple(replay_node(node, args, graph, library))
    raise errors.UnimplementedError(
        None, op, "Cannot differentiate through the %s node %s inside a %s%s." % (
            op, node.name, what, _where(node)))


def _replay_conditional(node, args, library, what):
    from eagerflow.function.control_flow import cond, switch_case

    names = ((node.attrs["then_branch"], node.attrs["else_branch"]) if node.op == builtins.IF
             else node.attrs["branches"])
    inputs = args[1:]

    def branch(name):
        return lambda: replay(library[name], inputs, library, what)

    fns = [branch(name) for name in names]
    if node.op == builtins.IF:
        return tuple(cond(args[0], fns[0], fns[1]))
    return tuple(switch_case(args[0], fns))


def _replay_while(node, args, library, what):
    from eagerflow.function.while_loop import while_loop
    from eagerflow.tensor_shape import TensorShape

    attrs = node.attrs
    n, n_caps = attrs["n_loop_vars"], attrs["n_captures"]
    loop_vars = list(args[:n])
    caps = list(args[n:n + n_caps])
    limit = args[n + n_caps] if attrs.get("has_max") else None
    cond_graph, body_graph = library[attrs["cond"]], library[attrs["body"]]
    outs = while_loop(
        lambda *v: replay(cond_graph, list(v) + caps, library, what)[0],
        lambda *v: replay(body_graph, list(v) + caps, library, what),
        loop_vars, shape_invariants=[TensorShape(a.shape) for a in node.avals[:n]],
        maximum_iterations=limit)
    if not attrs.get("history"):
        return tuple(outs)
    history, count = ensure_history(outs[0]._graph, outs[0]._node)
    return tuple(outs) + tuple(history) + (count,) + tuple(
        history_shapes(outs[0]._graph, outs[0]._node))
