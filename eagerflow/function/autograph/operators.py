"""The runtime of converted code: ``ag__.if_stmt``, ``ag__.while_stmt``, ``ag__.for_stmt``...

Each operator looks at the value it is given when it runs. A Python value (or anything
while no function is being traced) runs the statement as plain Python, so trace-time
Python stays Python: a ``for`` over ``range(3)`` unrolls, a Python ``if`` picks one branch
and ``print`` runs once per trace. A symbolic tensor becomes graph control flow:
``if_stmt`` calls :func:`eagerflow.cond` with the branches' live variables as outputs, and
``while_stmt`` / ``for_stmt`` call :func:`eagerflow.while_loop` with the loop's live
variables as loop variables. The checks here name the user's variables, with TF's rules:
a variable set in one branch only, a loop variable undefined before the loop, or one that
changes dtype, shape or structure (a Python list grown in the loop) is an error that says
what to write instead.
"""

from __future__ import annotations

import numpy as np

from eagerflow import nest
from eagerflow.framework import context
from eagerflow.function import composite
from eagerflow.function.symbolic import SymbolicTensor, user_frame
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["Undefined", "UndefinedReturnValue", "retval", "if_stmt", "while_stmt",
           "for_stmt", "and_", "or_", "not_", "if_exp", "list_append"]

_state = context.state


class Undefined:
    """Stands for a variable not yet assigned where a converted statement starts."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name):
        self.symbol_name = symbol_name

    def __repr__(self):
        return "<undefined %s>" % self.symbol_name


class UndefinedReturnValue:
    """The value of ``retval_`` before any ``return`` ran."""

    def __repr__(self):
        return "<no return value>"


def retval(value):
    """The function's result: None if no ``return`` ran (as Python)."""
    if isinstance(value, UndefinedReturnValue):
        return None
    if isinstance(value, Undefined):
        return None
    return value


def _where():
    found = user_frame()
    return "" if found is None else " (at %s:%d)" % (found[0], found[1])


def _symbolic(value):
    return isinstance(value, SymbolicTensor) and _state.trace is not None


def _py_truth(value, what):
    if _symbolic(value):
        raise NotImplementedError(
            "%s%s was a Python value when the loop started but is now a tensor, so the "
            "loop cannot continue as a Python loop. A `break` or `return` that depends on "
            "a tensor needs a tensor loop: iterate over a tensor or eagerflow.range, or make "
            "the loop condition a tensor before the loop." % (what, _where()))
    return bool(value)


def _tensorlike(value):
    """True if ``value`` can be a cond output or loop variable (tensors, numbers, nests)."""
    leaves = nest.flatten(value)
    if not leaves:
        return False
    for leaf in leaves:
        if isinstance(leaf, (Tensor, np.ndarray, np.generic)) or getattr(
                leaf, "_is_variable", False) or composite.is_composite(leaf):
            continue
        if isinstance(leaf, (bool, int, float, complex)) and not isinstance(
                leaf, (Undefined, UndefinedReturnValue)):
            continue
        return False
    return True


def _describe(value):
    if isinstance(value, Tensor):
        shape = value.shape
        return "%s%s" % (value.dtype.name, "<unknown>" if shape.rank is None
                         else list(shape.as_list()))
    return type(value).__name__


# -- and / or / not / conditional expressions -------------------------------------------------
def and_(a_fn, b_fn):
    """``a and b``: lazy, a graph cond when ``a`` is a symbolic tensor."""
    a = a_fn()
    if _symbolic(a):
        from eagerflow.function.control_flow import cond

        return cond(a, lambda: _as_bool(b_fn()), lambda: a)
    return b_fn() if a else a


def or_(a_fn, b_fn):
    """``a or b``: lazy, a graph cond when ``a`` is a symbolic tensor."""
    a = a_fn()
    if _symbolic(a):
        from eagerflow.function.control_flow import cond

        return cond(a, lambda: a, lambda: _as_bool(b_fn()))
    return a if a else b_fn()


def not_(a):
    """``not a``: ``logical_not`` for a symbolic tensor."""
    if _symbolic(a):
        from eagerflow.ops.math.logical_ops import logical_not

        return logical_not(a)
    return not a


def if_exp(test, body_fn, orelse_fn):
    """``body if test else orelse``: a graph cond when ``test`` is a symbolic tensor."""
    if _symbolic(test):
        from eagerflow.function.control_flow import cond

        return cond(test, body_fn, orelse_fn)
    return body_fn() if test else orelse_fn()


def _as_bool(value):
    if isinstance(value, Tensor):
        return value
    return convert_to_tensor(bool(value))


def list_append(target, value):
    """``target.append(value)`` in converted code; returns the (same) list."""
    target.append(value)
    return target


# -- if ---------------------------------------------------------------------------------------
def if_stmt(test, body, orelse, get_state, set_state, names, outputs):
    """Runs a converted ``if``: Python for a Python test, ``cond`` for a symbolic one."""
    if not _symbolic(test):
        if test:
            body()
        else:
            orelse()
        return
    _tf_if(test, body, orelse, get_state, set_state, names, outputs)


def _tf_if(test, body, orelse, get_state, set_state, names, outputs):
    from eagerflow.function import control_flow

    init = tuple(get_state())
    placeholders = {}
    if any(isinstance(init[i], UndefinedReturnValue) for i in outputs):
        placeholders = _return_placeholders(
            [_probe(lambda fn=fn: _run_branch(fn, init, set_state, get_state))
             for fn in (body, orelse)], outputs)
        set_state(init)
    results = {}
    sizes = _list_sizes(init, outputs)

    def branch(fn, label):
        def run():
            state = _run_branch(fn, init, set_state, get_state)
            _check_list_sizes(sizes, state, names, "a branch of an `if` on a tensor")
            results[label] = state
            if label == "else":
                _verify_branches(names, outputs, results["if"], state)
            return tuple(_branch_output(state[i], placeholders.get(i)) for i in outputs)
        return run

    out = control_flow.cond(test, branch(body, "if"), branch(orelse, "else"))
    final = [Undefined(n) for n in names]
    for k, i in enumerate(outputs):
        a, b = results["if"][i], results["else"][i]
        if out[k] is None:
            final[i] = a if a is b else (a if isinstance(b, Undefined) else b)
        else:
            final[i] = out[k]
    set_state(tuple(final))


def _list_sizes(state, indices):
    return {i: len(state[i]) for i in indices if isinstance(state[i], list)}


def _check_list_sizes(sizes, state, names, where):
    for i, n in sizes.items():
        if not isinstance(state[i], list) or len(state[i]) != n:
            raise ValueError(
                "'%s' is a Python list that changes length in %s%s. That code runs once, "
                "as a graph, so a list cannot grow in it: accumulate into an "
                "eagerflow.TensorArray instead (ta = eagerflow.TensorArray(dtype, size=0, "
                "dynamic_size=True); ta = ta.write(i, value); ... ta.stack())." % (
                    names[i], where, _where()))


def _run_branch(fn, init, set_state, get_state):
    set_state(init)
    fn()
    return tuple(get_state())


def _branch_output(value, placeholder):
    if isinstance(value, UndefinedReturnValue):
        return None if placeholder is None else placeholder()
    if isinstance(value, Undefined) or not _tensorlike(value):
        return None
    return value


def _return_placeholders(states, outputs):
    """Zeros standing in for a return value a branch does not set (never observed)."""
    from eagerflow.ops.array.creation_ops import zeros

    found = {}
    for i in outputs:
        for state in states:
            v = state[i]
            if isinstance(v, Tensor):
                shape = [0 if d is None else d for d in (v.shape.as_list() or [])]
                found[i] = (lambda s=tuple(shape), d=v.dtype: zeros(s, d))
                break
    return found


def _verify_branches(names, outputs, body_state, orelse_state):
    for i in outputs:
        name, a, b = names[i], body_state[i], orelse_state[i]
        if isinstance(a, UndefinedReturnValue) or isinstance(b, UndefinedReturnValue):
            continue
        if isinstance(a, Undefined) and not isinstance(b, Undefined):
            raise ValueError(
                "'%s' must also be initialized in the if branch%s: the else branch sets it, "
                "and under a tensor condition both branches run in the graph and each must "
                "produce it. Assign '%s' before the `if`, or in both branches." % (
                    name, _where(), name))
        if isinstance(b, Undefined) and not isinstance(a, Undefined):
            raise ValueError(
                "'%s' must also be initialized in the else branch%s: the if branch sets it, "
                "and under a tensor condition both branches run in the graph and each must "
                "produce it. Assign '%s' before the `if`, or add an `else` that sets it." % (
                    name, _where(), name))
        if isinstance(a, Undefined):
            continue
        if not _tensorlike(a) or not _tensorlike(b):
            if a is not b:
                raise ValueError(
                    "'%s' is a Python %s that the branches of an `if` on a tensor set to "
                    "different values%s. Only tensors may differ between the branches of "
                    "graph control flow; keep Python objects the same in both." % (
                        name, type(a if not _tensorlike(a) else b).__name__, _where()))
            continue
        try:
            nest.assert_same_structure(a, b, check_types=False)
        except (TypeError, ValueError):
            raise ValueError(
                "'%s' must have the same nested structure in the if and else branches%s: %s "
                "vs %s. A Python list cannot grow in only one branch of an `if` on a "
                "tensor." % (name, _where(), _describe_nest(a), _describe_nest(b))) from None
        for x, y in zip(nest.flatten(a), nest.flatten(b)):
            dx, dy = _dtype_of(x), _dtype_of(y)
            if dx is not None and dy is not None and dx != dy:
                raise TypeError(
                    "'%s' has dtype %s in the if branch, but dtype %s in the else branch%s. "
                    "Both branches must give it the same dtype: cast one of them." % (
                        name, dx, dy, _where()))


def _dtype_of(value):
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        return value.dtype.name
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    return None  # Python numbers take the other branch's dtype


def _describe_nest(value):
    return repr(nest.map_structure(_describe, value))


# -- while ------------------------------------------------------------------------------------
def while_stmt(test, body, get_state, set_state, names, loop_vars, opts):
    """Runs a converted ``while``: Python for a Python test, ``while_loop`` for a tensor."""
    first = test()
    if not _symbolic(first):
        keep = _py_truth(first, "The condition of this `while`")
        while keep:
            body()
            keep = _py_truth(test(), "The condition of this `while`")
        return
    _tf_loop(test, None, body, get_state, set_state, names, loop_vars, opts, None)


# -- for --------------------------------------------------------------------------------------
def for_stmt(iterable, extra_test, body, get_state, set_state, names, loop_vars, opts):
    """Runs a converted ``for``: Python iteration, or ``while_loop`` over a symbolic tensor."""
    if _symbolic(iterable):
        _tf_loop(None, extra_test, body, get_state, set_state, names, loop_vars, opts,
                 _ElementSource(iterable))
        return
    dataset = _as_dataset(iterable)
    if dataset is not None and _state.trace is not None:
        from eagerflow.function.autograph import dataset_loop

        dataset_loop.for_dataset(dataset, extra_test, body, get_state, set_state, names,
                                 loop_vars, opts)
        return
    for element in iterable:
        if extra_test is not None and not _py_truth(
                extra_test(), "The `break`/`return` condition of this `for`"):
            break
        body(element)
    # A Python loop that ran to its end may still have its break flag set by the last
    # iteration; that is Python semantics and needs nothing more.


def _as_dataset(value):
    """``value`` if it is an eagerflow Dataset (found without importing eagerflow.data)."""
    for klass in type(value).__mro__:
        if klass.__name__ == "Dataset" and klass.__module__ == "eagerflow.data.dataset":
            return value
    return None


def _loop_value(value):
    """A loop variable's entry value: Python numbers and arrays become tensors."""
    return nest.map_structure(
        lambda v: v if isinstance(v, Tensor) or composite.is_composite(v)
        else convert_to_tensor(v), value)


def _tf_loop(test, extra_test, body, get_state, set_state, names, loop_vars, opts,
             elements):
    """A graph loop: ``while test()``, or over ``elements`` (``more``/``at``/``finish``)."""
    from eagerflow.function.while_loop import while_loop

    init = list(get_state())
    tensor_idx = []
    for i in loop_vars:
        v = init[i]
        if isinstance(v, Undefined):
            raise ValueError(
                "'%s' must be defined before the loop%s: the loop runs as a graph "
                "while_loop, whose variables need a value (a dtype and shape) on entry. "
                "Assign '%s' before the loop." % (names[i], _where(), names[i]))
        if isinstance(v, UndefinedReturnValue) or _tensorlike(v):
            tensor_idx.append(i)
    for i in tensor_idx:
        if not isinstance(init[i], UndefinedReturnValue):
            init[i] = _loop_value(init[i])
    invariants = _shape_invariants(opts.get("shape_invariants"), init, tensor_idx, names)

    def with_values(values):
        state = list(init)
        for j, i in enumerate(tensor_idx):
            state[i] = values[j]
        return tuple(state)

    def run_body(counter, values):
        set_state(with_values(values))
        if elements is not None:
            body(elements.at(counter))
        else:
            body()
        return tuple(get_state())

    if any(isinstance(init[i], UndefinedReturnValue) for i in tensor_idx):
        _return_loop_placeholders(init, tensor_idx, invariants, run_body)

    def cond_fn(counter, *values):
        set_state(with_values(values))
        if elements is not None:
            result = elements.more(counter)
            if extra_test is not None:
                extra = extra_test()
                if isinstance(extra, Tensor):
                    from eagerflow.ops.math.logical_ops import logical_and

                    result = logical_and(result, extra)
                elif not extra:
                    result = convert_to_tensor(False)
            return result
        return _as_bool(test())

    sizes = _list_sizes(init, [i for i in loop_vars if i not in tensor_idx])

    def body_fn(counter, *values):
        new = run_body(counter, values)
        _check_list_sizes(sizes, new, names, "a loop over a tensor")
        out = []
        for j, i in enumerate(tensor_idx):
            out.append(_check_loop_var(names[i], values[j], new[i], invariants[j]))
        for i in loop_vars:
            if i not in tensor_idx and new[i] is not init[i]:
                raise ValueError(
                    "'%s' is a Python %s that changes inside a loop over a tensor%s. The "
                    "loop runs as a graph while_loop, where only tensors can change; keep "
                    "Python objects the same across iterations." % (
                        names[i], type(init[i]).__name__, _where()))
        return (None if counter is None else counter + 1,) + tuple(out)

    from eagerflow.tensor_shape import TensorShape

    loop_init = (convert_to_tensor(0),) + tuple(init[i] for i in tensor_idx)
    shape_invariants = (TensorShape([]),) + tuple(invariants)
    if elements is None and tensor_idx:
        # A while loop needs no counter: drop it from the loop variables.
        out = while_loop(lambda *v: cond_fn(None, *v),
                         lambda *v: body_fn(None, *v)[1:], loop_init[1:],
                         shape_invariants=shape_invariants[1:],
                         maximum_iterations=opts.get("maximum_iterations"),
                         parallel_iterations=opts.get("parallel_iterations", 10))
        out = (None,) + tuple(out)
    else:
        out = while_loop(cond_fn, body_fn, loop_init, shape_invariants=shape_invariants,
                         maximum_iterations=opts.get("maximum_iterations"),
                         parallel_iterations=opts.get("parallel_iterations", 10))
    if elements is not None and hasattr(elements, "finish"):
        elements.finish(out[0])
    final = [Undefined(n) for n in names]
    for i in loop_vars:
        final[i] = init[i]
    for j, i in enumerate(tensor_idx):
        final[i] = out[1 + j]
    set_state(tuple(final))


class _ElementSource:
    """The elements of a symbolic tensor, read by index inside a loop."""

    def __init__(self, tensor):
        from eagerflow.ops.array.shape_ops import shape

        shape_ = tensor.shape
        if shape_.rank == 0:
            raise TypeError("Cannot iterate over a scalar tensor%s: a `for` loop over a "
                            "tensor runs over its first dimension." % _where())
        first = None if shape_.rank is None else shape_.as_list()[0]
        self.tensor = tensor
        self.n = first if first is not None else shape(tensor)[0]

    def more(self, counter):
        from eagerflow.ops.math.arithmetic import less

        return less(counter, self.n)

    def at(self, counter):
        from eagerflow.ops.indexing.gather_ops import gather

        return gather(self.tensor, counter)


def _shape_invariants(pairs, init, tensor_idx, names):
    from eagerflow.tensor_shape import TensorShape

    out = [None] * len(tensor_idx)
    for pair in pairs or ():
        try:
            var, shape = pair
        except (TypeError, ValueError):
            raise ValueError("set_loop_options(): shape_invariants must be a list of "
                             "(tensor, shape) pairs%s." % _where()) from None
        for j, i in enumerate(tensor_idx):
            if init[i] is var:
                out[j] = TensorShape(shape)
                break
        else:
            raise ValueError("set_loop_options(): a shape invariant names a tensor that is "
                             "not a variable of this loop%s." % _where())
    return out


def _probe(fn):
    """Runs ``fn`` in a throwaway sub-graph (to learn the types it produces)."""
    from eagerflow.function.branch_tracing import BranchTracer
    from eagerflow.function.graph import Graph
    from eagerflow.function.tracer import tracing

    tracer = BranchTracer(Graph("autograph_probe"), _state.trace, ())
    with tracing(tracer):
        return fn()


def _return_loop_placeholders(init, tensor_idx, invariants, run_body):
    """A return value first set inside the loop enters it as zeros of its traced type."""
    from eagerflow.ops.array.creation_ops import zeros
    from eagerflow.tensor_shape import TensorShape

    probe = [init[i] for i in tensor_idx]
    new = _probe(lambda: run_body(convert_to_tensor(0), probe))
    for j, i in enumerate(tensor_idx):
        if isinstance(init[i], UndefinedReturnValue):
            value = new[i]
            if not isinstance(value, Tensor):
                init[i] = convert_to_tensor(0)
                continue
            dims = value.shape.as_list() if value.shape.rank is not None else None
            init[i] = zeros([0 if d is None else d for d in dims or []], value.dtype)
            invariants[j] = TensorShape(dims)


def _check_loop_var(name, before, after, invariant):
    if isinstance(after, Undefined):
        raise ValueError("'%s' is undefined after one iteration of the loop%s." % (
            name, _where()))
    try:
        nest.assert_same_structure(before, after, check_types=False)
    except (TypeError, ValueError):
        raise ValueError(
            "'%s' changes its structure inside a loop over a tensor%s: %s before the loop, "
            "%s after one iteration. The loop runs as one graph while_loop, so a Python "
            "list cannot grow in it: accumulate into an eagerflow.TensorArray instead "
            "(ta = eagerflow.TensorArray(dtype, size=0, dynamic_size=True); "
            "ta = ta.write(i, value); ... ta.stack())." % (
                name, _where(), _describe_nest(before), _describe_nest(after))) from None
    flat_after = []
    for x, y in zip(nest.flatten(before), nest.flatten(after)):
        if composite.is_composite(x):
            if type(y) is not type(x):
                raise TypeError("'%s' is a %s before the loop, but a %s after one "
                                "iteration%s." % (name, type(x).__name__, type(y).__name__,
                                                  _where()))
            flat_after.append(y)
            continue
        y = y if isinstance(y, Tensor) else convert_to_tensor(y, dtype=x.dtype)
        if x.dtype is not y.dtype:
            raise TypeError(
                "'%s' has dtype %s before the loop, but dtype %s after one iteration%s. A "
                "loop variable keeps its dtype: cast it (eagerflow.cast) before the loop or "
                "in the body." % (name, x.dtype.name, y.dtype.name, _where()))
        if invariant is None and not _shape_fits(y.shape, x.shape):
            raise ValueError(
                "'%s' has shape %s before the loop, but shape %s after one iteration%s. To "
                "let its shape change, call eagerflow.autograph.experimental."
                "set_loop_options(shape_invariants=[(%s, eagerflow.TensorShape([...]))]) at "
                "the top of the loop body, with None for the dimensions that change." % (
                    name, x.shape, y.shape, _where(), name))
        flat_after.append(y)
    return nest.pack_sequence_as(before, flat_after)


def _shape_fits(shape, like):
    if like.rank is None:
        return True
    if shape.rank != like.rank:
        return False
    return all(b is None or a == b for a, b in zip(shape.as_list(), like.as_list()))

