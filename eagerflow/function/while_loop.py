"""``tf.while_loop``: ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``.

Eagerly a Python loop whose ops are recorded on tapes like any others. While a function is
traced, the condition and the body are traced once into sub-graphs
(:mod:`eagerflow.function.branch_tracing`) and one ``While`` node runs the loop. A loop
whose body assigns a variable its condition or body reads is traced again with those reads
kept inside, so every iteration sees the previous one's writes. Gradients: see
``control_flow_grad.py`` (a reversed while_loop over the kept history).

Example:
    >>> import eagerflow as ef
    >>> @ef.function
    ... def countdown(n):
    ...     return ef.while_loop(lambda i: i > 0, lambda i: i - 1, (n,))[0]
    >>> int(countdown(ef.constant(5)))
    0
"""

from __future__ import annotations

from eagerflow import nest
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function import composite
from eagerflow.function import control_flow_grad as grad_lib
from eagerflow.function.branch_tracing import (
    add_control_flow_node, Aval, bind_inputs, BranchTracer, check_callable, eager_truth,
    library_name, root_graph, scalar_selector, trace_subgraph,
)
from eagerflow.function.graph import Graph
from eagerflow.function.symbolic import SymbolicTensor
from eagerflow.function.tracer import _at_user_line, tracing
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["while_loop"]

_state = context.state


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeats ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (``tf.while_loop``).

    ``loop_vars`` is a tuple or list (possibly nested, dicts and namedtuples included);
    ``cond`` and ``body`` take its elements as positional arguments and ``body`` returns
    the same structure. Eagerly this is a Python loop. Inside a traced function ``cond``
    and ``body`` are traced once into sub-graphs and one ``While`` node runs the loop; each
    loop variable must then keep its dtype and shape across iterations, except dimensions
    that ``shape_invariants`` sets to None. Gradients flow through every iteration.

    Args:
        cond: Callable returning a scalar boolean tensor.
        body: Callable returning the next loop variables.
        loop_vars: A tuple or list of tensors (nested structures allowed).
        shape_invariants: Optional structure like ``loop_vars`` of TensorShapes; a None
            dimension may change between iterations.
        parallel_iterations: Accepted for compatibility (must be positive).
        back_prop: If False, no gradient flows through the loop (TF's deprecated
            equivalent of ``stop_gradient`` on the results).
        swap_memory: Accepted for compatibility.
        maximum_iterations: Optional non-negative int (or scalar integer tensor): the loop
            stops after that many iterations even if ``cond`` holds.
        name: Optional name prefix for the sub-graphs.

    Returns:
        The final loop variables, in the structure of ``loop_vars``.

    Raises:
        TypeError: If ``cond``/``body`` are not callable or ``loop_vars`` is not a tuple or
            list.
        ValueError: While tracing, if ``body`` changes a loop variable's structure, dtype
            or shape (the message names the variable and both shapes).

    Example:
        >>> import eagerflow as ef
        >>> i, total = ef.while_loop(lambda i, t: i < 4, lambda i, t: (i + 1, t + i),
        ...                          (ef.constant(0), ef.constant(0)))
        >>> int(i), int(total)
        (4, 6)
    """
    check_callable(cond, "while_loop(): 'cond'")
    check_callable(body, "while_loop(): 'body'")
    if not isinstance(parallel_iterations, int) or parallel_iterations < 1:
        raise TypeError("while_loop(): 'parallel_iterations' must be a positive integer.")
    if not isinstance(loop_vars, (list, tuple)):
        raise TypeError(
            "while_loop(): 'loop_vars' must be a tuple or list (cond and body take its "
            "elements as arguments), got %s%s; write loop_vars=(x,)." % (
                type(loop_vars).__name__, _at_user_line()))
    if not loop_vars:
        raise ValueError("while_loop(): 'loop_vars' must be provided.")
    if _state.trace is not None and composite.has_composites(loop_vars):
        return _while_with_composites(cond, body, loop_vars, shape_invariants,
                                      parallel_iterations, back_prop, swap_memory,
                                      maximum_iterations, name)
    if _state.trace is None:
        if back_prop:
            return _eager_while(cond, body, loop_vars, maximum_iterations)
        from eagerflow.tape import stop_recording_all

        with stop_recording_all():
            return _eager_while(cond, body, loop_vars, maximum_iterations)
    return _traced_while(cond, body, loop_vars, shape_invariants, maximum_iterations,
                         back_prop, parallel_iterations, name or "while")


def _while_with_composites(cond, body, loop_vars, shape_invariants, parallel_iterations,
                           back_prop, swap_memory, maximum_iterations, name):
    """A traced loop over TensorArrays: their tensors are the loop variables."""
    loop_vars = _learn_element_shapes(body, loop_vars)
    inner, templates = composite.to_tensors(loop_vars)
    flat_inv = [None] * len(templates) if shape_invariants is None else nest.flatten(
        shape_invariants)
    if len(flat_inv) != len(templates):
        raise ValueError("while_loop(): shape_invariants must have the structure of "
                         "loop_vars%s." % _at_user_line())
    flat_inv = [t._loop_invariant() if t is not None and inv is None else inv
                for t, inv in zip(templates, flat_inv)]
    invariants = nest.pack_sequence_as(loop_vars, flat_inv)  # shaped as ``inner``

    def rebuild(args):
        return composite.from_tensors(templates, list(args))

    def inner_cond(*args):
        return cond(*rebuild(args))

    def inner_body(*args):
        result = _normalize_body_result(body(*rebuild(args)), loop_vars)
        return composite.to_tensors(result)[0]

    out = while_loop(inner_cond, inner_body, inner, invariants, parallel_iterations,
                     back_prop, swap_memory, maximum_iterations, name)
    return composite.from_tensors(templates, out)


def _learn_element_shapes(body, loop_vars):
    """TensorArrays entering a loop unwritten learn their element shape from one probe
    trace of the body, so the loop's tensors keep a known rank (and gradients work)."""
    flat = nest.flatten(loop_vars)
    unknown = [k for k, x in enumerate(flat) if composite.is_composite(x)
               and getattr(x, "_loop_element_unknown", lambda: False)()]
    if not unknown:
        return loop_vars
    probe = BranchTracer(Graph("element_shape_probe"), _state.trace, ())
    with tracing(probe):
        result = nest.flatten(_normalize_body_result(body(*loop_vars), loop_vars))
    for k in unknown:
        learned = getattr(result[k], "_learned_element_shape", None)
        shape = learned() if learned is not None else getattr(result[k], "element_shape", None)
        if shape is not None and shape.rank is not None:
            flat[k] = flat[k]._with_element_shape(shape)
    return nest.pack_sequence_as(loop_vars, flat)


def _normalize_body_result(result, loop_vars):
    if not nest.is_nested(result):
        result = [result]
    try:
        nest.assert_same_structure(result, loop_vars, check_types=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            "while_loop(): body must return the structure of loop_vars; got %r for "
            "loop_vars %r: %s%s." % (_shape_desc(result), _shape_desc(loop_vars), exc,
                                     _at_user_line())) from None
    return nest.pack_sequence_as(loop_vars, nest.flatten(result))


def _shape_desc(structure):
    def leaf(x):
        return Aval(x.aval) if isinstance(x, SymbolicTensor) else (
            "%s%s" % (x.dtype.name, list(x.shape)) if isinstance(x, Tensor) else x)
    return nest.map_structure(leaf, structure)


def _eager_while(cond, body, loop_vars, maximum_iterations):
    limit = None if maximum_iterations is None else int(maximum_iterations)
    # As TF, variables among the loop vars enter the loop as their current values.
    values = nest.map_structure(
        lambda v: v.read_value() if getattr(v, "_is_variable", False) else v, loop_vars)
    i = 0
    while True:
        # As TF, the condition runs even when the iteration limit has been reached.
        keep = eager_truth(cond(*values))
        if limit is not None and i >= limit:
            break
        if not keep:
            break
        values = _normalize_body_result(body(*values), loop_vars)
        i += 1
    return nest.pack_sequence_as(loop_vars, nest.flatten(values))


def _path_text(path):
    return "loop_vars" + "".join("[%r]" % p for p in path)


def _invariants(shape_invariants, loop_vars, paths):
    if shape_invariants is None:
        return [None] * len(paths)
    out = []
    for path in paths:
        node = shape_invariants
        try:
            for p in path:
                node = node[p]
        except (KeyError, IndexError, TypeError):
            raise ValueError("while_loop(): shape_invariants has no entry for %s; it must "
                             "have the structure of loop_vars%s." % (
                                 _path_text(path), _at_user_line())) from None
        out.append(None if node is None else TensorShape(node))
    return out


def _compatible(shape, invariant):
    """True if a value of static ``shape`` fits ``invariant`` (None dims match anything)."""
    if invariant is None:
        return True
    if shape is None or len(shape) != len(invariant):
        return False
    return all(b is None or a == b for a, b in zip(shape, invariant))


def _fmt(shape):
    return "<unknown>" if shape is None else str(list(shape))


def _traced_while(cond, body, loop_vars, shape_invariants, maximum_iterations, back_prop,
                  parallel_iterations, base):
    tracer = _state.trace
    root = root_graph(tracer)
    with_paths = nest.flatten_with_paths(loop_vars)
    paths = [p for p, _ in with_paths]
    init = []
    for path, leaf in with_paths:
        if leaf is None:
            raise ValueError("while_loop(): %s is None; loop variables must be tensors%s."
                             % (_path_text(path), _at_user_line()))
        init.append(tracer.to_symbolic(leaf))
    avals = []
    for path, t, inv in zip(paths, init, _invariants(shape_invariants, loop_vars, paths)):
        shape = t._value.shape
        if inv is not None:
            dims = None if inv.rank is None else tuple(inv.dims)
            if not _compatible(shape, dims):
                raise ValueError(
                    "while_loop(): the shape invariant %s of %s is not compatible with its "
                    "initial shape %s%s." % (_fmt(dims), _path_text(path), _fmt(shape),
                                             _at_user_line()))
            shape = dims
        avals.append(AbstractValue(shape, t.dtype))
    limit = None
    if maximum_iterations is not None:
        limit = tracer.to_symbolic(maximum_iterations)
        if not limit.dtype.is_integer or (limit._value.shape not in ((), None)):
            raise ValueError("while_loop(): maximum_iterations must be a scalar integer, got "
                             "%r%s." % (limit.aval, _at_user_line()))

    def check_cond(result):
        flat = nest.flatten(result)
        if len(flat) != 1 or flat[0] is None:
            raise TypeError("while_loop(): cond must return one boolean scalar, got %r%s."
                            % (_shape_desc(result), _at_user_line()))
        return scalar_selector(flat[0], "while_loop(): the result of cond")

    local = set()
    for _ in range(2):
        cond_tr = trace_subgraph(cond, library_name(root, base + "_cond"), avals, loop_vars,
                                  local, check_cond)
        body_tr = trace_subgraph(body, library_name(root, base + "_body"), avals, loop_vars,
                                  local, lambda r: _normalize_body_result(r, loop_vars))
        written = cond_tr.tracer.assigned | body_tr.tracer.assigned
        conflict = (cond_tr.tracer.hoisted | body_tr.tracer.hoisted) & written
        if not conflict:
            break
        # A variable the loop writes must be read inside, fresh each iteration: trace again.
        local = conflict
        root.library.pop(cond_tr.graph.name)
        root.library.pop(body_tr.graph.name)
    names = (cond_tr.graph.name, body_tr.graph.name)
    for path, aval, out in zip(paths, avals, body_tr.flat):
        if out.dtype is not aval.dtype:
            raise TypeError(
                "while_loop(): %s enters the loop as %s but body returns %s%s. Loop "
                "variables keep their dtype; cast in the body." % (
                    _path_text(path), aval.dtype.name, out.dtype.name, _at_user_line()))
        if not _compatible(out._value.shape, aval.shape):
            raise ValueError(
                "while_loop(): %s enters the loop with shape %s but has shape %s after one "
                "iteration%s. To let the shape vary across iterations, pass shape_invariants "
                "with None for the dimensions that change." % (
                    _path_text(path), _fmt(aval.shape), _fmt(out._value.shape),
                    _at_user_line()))
    union = bind_inputs([cond_tr, body_tr], len(avals))
    attrs = {"cond": names[0], "body": names[1], "n_loop_vars": len(avals),
             "n_captures": len(union), "has_max": limit is not None,
             "parallel_iterations": parallel_iterations}
    inputs = init + union + ([limit] if limit is not None else [])
    node, outs = add_control_flow_node(builtins.WHILE, inputs, attrs, avals,
                                       [cond_tr.graph, body_tr.graph])
    if back_prop:
        grad_lib.record(builtins.WHILE, inputs, outs, grad_lib.while_backward(
            tracer.graph, node, init, union, outs, body_tr.graph, root.library))
    return nest.pack_sequence_as(loop_vars, outs)
