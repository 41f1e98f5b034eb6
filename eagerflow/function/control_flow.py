"""Functional control flow: ``cond``, ``case``, ``switch_case`` and ``while_loop``.

Eagerly these are plain Python: ``cond`` calls the chosen branch, ``while_loop`` loops, and
the ops they run are recorded on tapes like any others.

While a function is traced, a tensor-valued predicate is unknown, so every branch (or the
loop's condition and body) is traced into a sub-graph of its own by a nested tracer
(:class:`BranchTracer`, whose parent is the enclosing tracer). Outer symbolic tensors used
inside become captures of the sub-graph; the union of what the branches capture becomes
the inputs of one ``If``/``Case``/``While`` node, so every branch takes the same inputs and
the node is an ordinary dataflow node of the outer graph. Sub-graphs live in the library of
the outermost graph under unique names (``cond_true``, ``while_body_1``, ...).

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
from eagerflow.function import composite
from eagerflow.function import control_flow_exec  # noqa: F401 - registers the executor steps
from eagerflow.function import control_flow_grad as grad_lib
from eagerflow.function.graph import Graph, aval_of
from eagerflow.function.symbolic import SymbolicTensor, user_frame
from eagerflow.function.tracer import Tracer, _at_user_line, _device_string, tracing
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.tensor_shape import TensorShape
from eagerflow.function import builtins

__all__ = ["cond", "case", "switch_case", "while_loop", "BranchTracer"]

_state = context.state


# -- the nested tracer ----------------------------------------------------------------------
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
        return SymbolicTensor(self.graph, node, 0)

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


def _root_graph(tracer):
    return tracer.root.graph if isinstance(tracer, BranchTracer) else tracer.graph


def _library_name(root, base):
    name, k = base, 0
    while name in root.library:
        k += 1
        name = "%s_%d" % (base, k)
    return name


class _Traced:
    """One traced sub-graph: its graph, tracer, raw Python result and flat outputs."""

    def __init__(self, graph, tracer, result, flat):
        self.graph = graph
        self.tracer = tracer
        self.result = result
        self.flat = flat  # SymbolicTensor of the sub-graph, or None, per leaf of result

    def describe(self):
        leaves = [None if t is None else _Aval(t.aval) for t in self.flat]
        return repr(nest.pack_sequence_as(self.result, leaves))


class _Aval:
    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return repr(self.aval)


def _trace_subgraph(fn, name, input_avals=(), structure=None, local_variables=(),
                    postprocess=None):
    """Traces ``fn`` into a new sub-graph of the active trace; returns a _Traced."""
    parent = _state.trace
    graph = Graph(name)
    library = _root_graph(parent).library
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
    return _Traced(graph, tracer, result, flat)


def _bind_inputs(traced, n_explicit):
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


def _merge_shape(a, b):
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def _is_stateful(graphs):
    return any(n.stateful for g in graphs for n in g.nodes)


def _add_node(op, inputs, attrs, avals, graphs):
    tracer = _state.trace
    node = tracer.graph.add_node(op, [(t._node, t._index) for t in inputs], attrs, avals,
                                 device=_device_string(), stateful=_is_stateful(graphs))
    node.origin = user_frame()
    return node, [SymbolicTensor(tracer.graph, node, i) for i in range(len(avals))]


def _unpack_singleton(result):
    if isinstance(result, (list, tuple)) and len(result) == 1:
        return result[0]
    return result


# -- cond / switch_case: If and Case nodes ---------------------------------------------------
def _check_callable(fn, what):
    if not callable(fn):
        raise TypeError("%s must be callable, got %r%s." % (what, fn, _at_user_line()))


def _eager_truth(pred):
    if not isinstance(pred, Tensor):
        pred = convert_to_tensor(pred)
    return bool(pred)


def _scalar_selector(value, what):
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


def _build_branches(kind, selector, fns, names, strict, api):
    """Traces ``fns`` into sub-graphs and adds one If/Case node choosing between them."""
    tracer = _state.trace
    root = _root_graph(tracer)

    def post(result):
        return result if strict else _unpack_singleton(result)

    # Each name is picked just before its branch is traced: branches may nest control flow.
    traced = [_trace_subgraph(fn, _library_name(root, n), postprocess=post)
              for fn, n in zip(fns, names)]
    lib_names = [t.graph.name for t in traced]
    labels = ["true_fn", "false_fn"] if kind == builtins.IF else [
        "branch %d" % k for k in range(len(fns))]
    first = traced[0]
    for label, tr in zip(labels[1:], traced[1:]):
        _check_same_outputs(api, labels[0], first, label, tr)
    union = _bind_inputs(traced, 0)
    avals = []
    for k, t in enumerate(x for x in first.flat if x is not None):
        shape = t.aval.shape
        for tr in traced[1:]:
            other = [x for x in tr.flat if x is not None][k]
            shape = _merge_shape(shape, other.aval.shape)
        avals.append(AbstractValue(shape, t.aval.dtype))
    if kind == builtins.IF:
        attrs = {"then_branch": lib_names[0], "else_branch": lib_names[1]}
    else:
        attrs = {"branches": tuple(lib_names)}
    node, outs = _add_node(kind, [selector] + union, attrs, avals, [t.graph for t in traced])
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
    _check_callable(true_fn, "cond(): 'true_fn'")
    _check_callable(false_fn, "cond(): 'false_fn'")
    if _state.trace is None:
        result = true_fn() if _eager_truth(pred) else false_fn()
        return result if strict else _unpack_singleton(result)
    if isinstance(pred, bool):
        raise TypeError(
            "cond(): pred must not be a Python bool while tracing%s (as in TF). A Python "
            "value is known at trace time: use a Python `if`." % _at_user_line())
    selector = _scalar_selector(pred, "cond(): pred")
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
    selector = _scalar_selector(branch_index, "switch_case(): branch_index")
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
        _check_callable(fn, "switch_case(): the branch for key %d" % key)
    keys = sorted(k for k, _ in pairs)
    if keys != list(range(len(keys))):
        raise ValueError("switch_case(): branch keys must be exactly 0..%d, got %s." % (
            len(keys) - 1, keys))
    fns = [fn for _, fn in sorted(pairs, key=lambda p: p[0])]
    if default is not None:
        _check_callable(default, "switch_case(): 'default'")
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
        _check_callable(default, "case(): 'default'")
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
        _check_callable(fn, "case(): fn")
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


# -- while_loop ------------------------------------------------------------------------------
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
    _check_callable(cond, "while_loop(): 'cond'")
    _check_callable(body, "while_loop(): 'body'")
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
    invariants = nest.pack_sequence_as(loop_vars, flat_inv)

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
        shape = getattr(result[k], "element_shape", None)
        if shape is not None and shape.rank is not None and shape.is_fully_defined():
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
        return _Aval(x.aval) if isinstance(x, SymbolicTensor) else (
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
        keep = _eager_truth(cond(*values))
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
    root = _root_graph(tracer)
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
        return _scalar_selector(flat[0], "while_loop(): the result of cond")

    local = set()
    for _ in range(2):
        cond_tr = _trace_subgraph(cond, _library_name(root, base + "_cond"), avals, loop_vars,
                                  local, check_cond)
        body_tr = _trace_subgraph(body, _library_name(root, base + "_body"), avals, loop_vars,
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
    union = _bind_inputs([cond_tr, body_tr], len(avals))
    attrs = {"cond": names[0], "body": names[1], "n_loop_vars": len(avals),
             "n_captures": len(union), "has_max": limit is not None,
             "parallel_iterations": parallel_iterations}
    inputs = init + union + ([limit] if limit is not None else [])
    node, outs = _add_node(builtins.WHILE, inputs, attrs, avals, [cond_tr.graph, body_tr.graph])
    if back_prop:
        grad_lib.record(builtins.WHILE, inputs, outs, grad_lib.while_backward(
            tracer.graph, node, init, union, outs, body_tr.graph, root.library))
    return nest.pack_sequence_as(loop_vars, outs)
