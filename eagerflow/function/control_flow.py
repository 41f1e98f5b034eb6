"""Functional control flow: ``cond``, ``case``, ``switch_case`` and ``while_loop``.

Eagerly these are plain Python: ``cond`` calls the chosen branch, ``while_loop`` loops, and
the ops they run are recorded on tapes like any others.

While a function is traced, a tensor-valued predicate is unknown, so every branch (or the
loop's condition and body) is traced into a sub-graph of its own
(:mod:`eagerflow.function.branch_tracing`) and one ``If``/``Case``/``While`` node of the
outer graph runs them. ``cond``, ``case`` and ``switch_case`` are here; ``while_loop`` is in
:mod:`eagerflow.function.while_loop`.

Variables read inside a sub-graph are read in the enclosing graph just before the node and
passed in (so gradients reach them through the node's inputs), unless the sub-graph assigns
the variable first: then the read stays inside and sees the new value. A loop whose body
assigns a variable its condition or body reads is traced again with those reads kept
inside, so every iteration sees the previous one's writes.

Gradients: see ``control_flow_grad.py``. Each node is recorded on the tapes that watch its
inputs with a backward rule that builds the gradient as control flow of the same kind.

Example:
    >>> import eagerflow as ef
    >>> @ef.function
    ... def relu_or_square(x):
    ...     return ef.cond(ef.reduce_sum(x) > 0.0, lambda: ef.nn.relu(x), lambda: x * x)
    >>> relu_or_square(ef.constant([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from eagerflow import errors, nest
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function import composite
from eagerflow.function import control_flow_grad as grad_lib
from eagerflow.function.branch_tracing import (
    add_control_flow_node, bind_inputs, check_callable, eager_truth, library_name, merge_shape,
    root_graph, scalar_selector, trace_subgraph, unpack_singleton,
)
from eagerflow.function.symbolic import user_frame
from eagerflow.function.tracer import _at_user_line, _device_string
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor

__all__ = ["cond", "case", "switch_case"]

_state = context.state


# -- cond / switch_case: If and Case nodes ---------------------------------------------------
def _build_branches(kind, selector, fns, names, strict, api):
    """Traces ``fns`` into sub-graphs and adds one If/Case node choosing between them."""
    tracer = _state.trace
    root = root_graph(tracer)

    def post(result):
        return result if strict else unpack_singleton(result)

    # Each name is picked just before its branch is traced: branches may nest control flow.
    traced = [trace_subgraph(fn, library_name(root, n), postprocess=post)
              for fn, n in zip(fns, names)]
    lib_names = [t.graph.name for t in traced]
    labels = ["true_fn", "false_fn"] if kind == builtins.IF else [
        "branch %d" % k for k in range(len(fns))]
    first = traced[0]
    for label, tr in zip(labels[1:], traced[1:]):
        _check_same_outputs(api, labels[0], first, label, tr)
    union = bind_inputs(traced, 0)
    avals = []
    for k, t in enumerate(x for x in first.flat if x is not None):
        shape = t.aval.shape
        for tr in traced[1:]:
            other = [x for x in tr.flat if x is not None][k]
            shape = merge_shape(shape, other.aval.shape)
        avals.append(AbstractValue(shape, t.aval.dtype))
    if kind == builtins.IF:
        attrs = {"then_branch": lib_names[0], "else_branch": lib_names[1]}
    else:
        attrs = {"branches": tuple(lib_names)}
    node, outs = add_control_flow_node(kind, [selector] + union, attrs, avals,
                                       [t.graph for t in traced])
    if outs:
        grad_lib.record(kind, [selector] + union, outs, grad_lib.conditional_backward(
            kind, selector, [t.graph for t in traced], union, outs, root.library))
    it = iter(outs)
    leaves = [None if t is None else next(it) for t in first.flat]
    return nest.pack_sequence_as(first.result, leaves)


def _check_same_outputs(api, name_a, a, name_b, b):
    problem = None
    try:
        nest.assert_same_structure(a.result, b.result)
    except (TypeError, ValueError):
        problem = "their structures differ"
    if problem is None:
        for x, y in zip(a.flat, b.flat):
            if (x is None) != (y is None):
                problem = "one returns None where the other returns a tensor"
            elif x is not None and x.dtype is not y.dtype:
                problem = "dtypes differ: %s vs %s" % (x.dtype.name, y.dtype.name)
            if problem:
                break
    if problem:
        raise ValueError(
            "%s%s: %s and %s must return the same structure and dtypes (shapes may "
            "differ): %s.\n  %s returned: %s\n  %s returned: %s" % (
                api, _at_user_line(), name_a, name_b, problem, name_a, a.describe(), name_b,
                b.describe()))


def cond(pred, true_fn=None, false_fn=None, name=None):
    """Returns ``true_fn()`` if ``pred`` is true, else ``false_fn()`` (``tf.cond``).

    Eagerly, only the chosen branch runs. Inside a traced function a tensor ``pred`` is
    known only at run time: both branches are traced into sub-graphs and one ``If`` node
    runs the chosen one. Both must then return the same nested structure with the same
    dtypes (shapes may differ; dimensions that differ become None). Tensors from outside
    the branches may be used inside them. Gradients flow through the taken branch.

    Args:
        pred: A scalar boolean tensor (a Python bool eagerly).
        true_fn: Callable with no arguments, run when ``pred`` is true.
        false_fn: Callable with no arguments, run when ``pred`` is false.
        name: Optional name prefix for the branch graphs.

    Returns:
        The (nested) result of the branch that ran.

    Raises:
        TypeError: If a branch is not callable, or ``pred`` is a Python bool while tracing
            (as TF: use a Python ``if`` for Python values).
        ValueError: If the traced branches return different structures or dtypes.

    Example:
        >>> import eagerflow as ef
        >>> x, y = ef.constant(2.0), ef.constant(5.0)
        >>> ef.cond(x < y, lambda: x * 10.0, lambda: y + 1.0).numpy()
        np.float32(20.0)
    """
    return _cond(pred, true_fn, false_fn, True, name)


def _cond(pred, true_fn, false_fn, strict, name):
    if true_fn is None:
        raise TypeError("cond(): 'true_fn' argument required")
    if false_fn is None:
        raise TypeError("cond(): 'false_fn' argument required")
    check_callable(true_fn, "cond(): 'true_fn'")
    check_callable(false_fn, "cond(): 'false_fn'")
    if _state.trace is None:
        result = true_fn() if eager_truth(pred) else false_fn()
        return result if strict else unpack_singleton(result)
    if isinstance(pred, bool):
        raise TypeError(
            "cond(): pred must not be a Python bool while tracing%s (as in TF). A Python "
            "value is known at trace time: use a Python `if`." % _at_user_line())
    selector = scalar_selector(pred, "cond(): pred")
    base = name or "cond"
    templates = []

    def carrying(fn):
        # TensorArrays in a branch's result travel as their tensors.
        def run():
            result = fn()
            if not composite.has_composites(result):
                return result
            tensors, found = composite.to_tensors(result)
            templates.append(found)
            return tensors
        return run

    out = _build_branches(builtins.IF, selector, [carrying(true_fn), carrying(false_fn)],
                          [base + "_true", base + "_false"], strict, "cond")
    if templates:
        return composite.from_tensors(templates[0], out)
    return out


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """Runs ``branch_fns[branch_index]()`` (``tf.switch_case``).

    An index outside ``[0, len(branch_fns))`` runs ``default``, or the last branch when
    there is no default. Inside a traced function every branch is traced and one ``Case``
    node runs the chosen one; branches must return the same structure and dtypes.

    Args:
        branch_index: A scalar integer tensor.
        branch_fns: A list of callables, a dict ``{int: callable}`` or a list of
            ``(int, callable)`` pairs; the keys must be exactly ``0..n-1``.
        default: Optional callable for out-of-range indices.
        name: Optional name prefix for the branch graphs.

    Returns:
        The result of the branch that ran.

    Raises:
        TypeError: If ``branch_index`` is not an integer tensor or a branch not callable.
        ValueError: If the keys are not ``0..n-1`` or traced branches disagree.

    Example:
        >>> import eagerflow as ef
        >>> fns = [lambda: ef.constant(10), lambda: ef.constant(20)]
        >>> int(ef.switch_case(ef.constant(1), fns))
        20
    """
    fns = _switch_case_fns(branch_index, branch_fns, default)
    if _state.trace is None:
        k = int(branch_index)
        if k < 0 or k >= len(fns):
            k = len(fns) - 1
        return fns[k]()
    selector = scalar_selector(branch_index, "switch_case(): branch_index")
    base = name or "switch_case"
    return _build_branches(builtins.CASE, selector, fns,
                           ["%s_branch%d" % (base, k) for k in range(len(fns))], True,
                           "switch_case")


def _switch_case_fns(branch_index, branch_fns, default):
    if not isinstance(branch_index, Tensor):
        raise TypeError("switch_case(): 'branch_index' must be a Tensor, got %s%s." % (
            type(branch_index).__name__, _at_user_line()))
    if not branch_index.dtype.is_integer:
        raise TypeError("switch_case(): 'branch_index' must be an integer Tensor, got %s%s."
                        % (branch_index.dtype.name, _at_user_line()))
    if not branch_fns:
        raise ValueError("switch_case(): provide at least one branch in 'branch_fns'.")
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError("switch_case(): 'branch_fns' must be a list, tuple or dict.")
    pairs = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in pairs):
        pairs = list(enumerate(pairs))
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("switch_case(): each entry of 'branch_fns' must be a callable "
                            "or an (int, callable) pair, got %r." % (pair,))
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError("switch_case(): key must be a Python int, got %r." % (key,))
        check_callable(fn, "switch_case(): the branch for key %d" % key)
    keys = sorted(k for k, _ in pairs)
    if keys != list(range(len(keys))):
        raise ValueError("switch_case(): branch keys must be exactly 0..%d, got %s." % (
            len(keys) - 1, keys))
    fns = [fn for _, fn in sorted(pairs, key=lambda p: p[0])]
    if default is not None:
        check_callable(default, "switch_case(): 'default'")
        fns.append(default)
    return fns


# -- case: nested conds -----------------------------------------------------------------------
def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """Runs the function of the first true predicate (``tf.case``).

    Built from nested ``cond``: predicates are tested in order. Without ``default`` the
    last pair's function runs when no earlier predicate holds, and it fails at run time
    (InvalidArgumentError) if its own predicate is false too. With ``exclusive=True`` more
    than one true predicate is an error. Unless ``strict``, single-element list or tuple
    results are unpacked, as in TF.

    Args:
        pred_fn_pairs: A list of ``(boolean scalar tensor, callable)`` pairs (or a dict).
        default: Optional callable run when no predicate is true.
        exclusive: Check that at most one predicate is true.
        strict: Keep single-element lists and tuples as they are.
        name: Optional name prefix.

    Returns:
        The result of the function that ran.

    Raises:
        TypeError: If a pair is malformed or a predicate is not a boolean tensor.
        InvalidArgumentError: At run time, when no predicate holds and there is no
            default, or more than one holds with ``exclusive=True``.

    Example:
        >>> import eagerflow as ef
        >>> x = ef.constant(3)
        >>> r = ef.case([(x < 2, lambda: ef.constant(0)), (x < 5, lambda: ef.constant(1))],
        ...             default=lambda: ef.constant(2))
        >>> int(r)
        1
    """
    preds, fns = _case_pairs(pred_fn_pairs)
    all_preds = list(preds)  # the exclusive check covers the pair that may become default
    if default is None:
        default, preds, fns = _default_from_last(preds, fns)
    else:
        check_callable(default, "case(): 'default'")
    fn = default
    # Built in reverse so that predicates are tested in the order given.
    for k in reversed(range(len(preds))):
        fn = _CondStep(preds[k], fns[k], fn, strict, name)
    if exclusive and len(all_preds) > 1:
        _assert(all_preds, "at_most_one",
                "case(): exclusive=True but more than one condition evaluated as True")
    return fn()


class _CondStep:
    def __init__(self, pred, true_fn, false_fn, strict, name):
        self.args = (pred, true_fn, false_fn, strict, name)

    def __call__(self):
        return _cond(*self.args)


def _case_pairs(pred_fn_pairs):
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError("case(): 'pred_fn_pairs' must be a list, tuple or dict, got %r."
                        % (type(pred_fn_pairs).__name__,))
    preds, fns = [], []
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("case(): each entry of 'pred_fn_pairs' must be a (pred, fn) "
                            "tuple, got %r." % (pair,))
        pred, fn = pair
        if not isinstance(pred, Tensor):
            raise TypeError("case(): pred must be a Tensor, got %s%s." % (
                type(pred).__name__, _at_user_line()))
        if pred.dtype.name != "bool":
            raise TypeError("case(): pred must be a bool Tensor, got %s%s." % (
                pred.dtype.name, _at_user_line()))
        check_callable(fn, "case(): fn")
        preds.append(pred)
        fns.append(fn)
    return preds, fns


def _default_from_last(preds, fns):
    if not preds:
        raise ValueError("case(): 'pred_fn_pairs' is empty and there is no default.")
    all_preds = list(preds)
    last_fn = fns[-1]

    def default_action():
        _assert(all_preds, "any", "case(): none of the conditions evaluated as True and "
                "there is no default")
        return last_fn()

    return default_action, preds[:-1], fns[:-1]


def _assert(preds, kind, message):
    """Checks the predicates now (eagerly) or adds an Assert node run with the graph."""
    if _state.trace is None:
        values = [bool(p) for p in preds]
        failed = not any(values) if kind == "any" else sum(values) > 1
        if failed:
            raise errors.InvalidArgumentError(None, builtins.ASSERT, "%s (conditions: %s)" % (
                message, values))
        return
    inputs = [_state.trace.to_symbolic(p) for p in preds]
    node = _state.trace.graph.add_node(
        builtins.ASSERT, [(t._node, t._index) for t in inputs], {"kind": kind, "message": message},
        (), device=_device_string(), stateful=True)
    node.origin = user_frame()
