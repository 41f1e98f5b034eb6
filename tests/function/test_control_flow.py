"""cond, case, switch_case and while_loop: eager and traced agree, graphs hold one control-flow
node, errors name the user's line, and gradients match finite differences in float64."""

import collections

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors

F64 = ef.float64


def spec(shape, dtype=F64):
    return ef.TensorSpec(shape, dtype)


def numeric_grad(f, x, eps=1e-6):
    """Central finite differences of the scalar function f (numpy in, float out)."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (f(up) - f(down)) / (2 * eps)
    return g


def tape_grad(fn, x):
    x = ef.constant(x, dtype=F64)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(fn(x))
    return tape.gradient(y, x).numpy()


def ops_of(graph):
    return [n.op for n in graph.nodes if n.op != "Placeholder"]


# -- cond ----------------------------------------------------------------------------------------
def branchy(x):
    return ef.cond(ef.reduce_sum(x) > 0.0, lambda: ef.sin(x) * x, lambda: x * x - 1.0)


@pytest.mark.parametrize("values", [[0.5, 1.5], [-0.5, -1.5]])
def test_cond_traced_equals_eager(values):
    x = ef.constant(values, dtype=F64)
    traced = ef.function(branchy)
    np.testing.assert_allclose(traced(x).numpy(), branchy(x).numpy())
    assert traced.experimental_get_tracing_count() == 1


def test_cond_graph_has_one_if_node_and_branch_library():
    graph = ef.function(branchy).get_concrete_function(spec([2])).graph
    assert ops_of(graph).count("If") == 1
    node = next(n for n in graph.nodes if n.op == "If")
    then_g = graph.library[node.attrs["then_branch"]]
    else_g = graph.library[node.attrs["else_branch"]]
    assert "Sin" in ops_of(then_g) and "Sin" not in ops_of(else_g)
    # x is used by both branches: one capture, one If input besides the predicate.
    assert len(node.inputs) == 2 and len(then_g.inputs) == len(else_g.inputs) == 1
    assert "graph cond_true(" in graph.pretty()


def test_cond_eager_runs_only_the_chosen_branch():
    calls = []
    out = ef.cond(ef.constant(True), lambda: calls.append("t") or ef.constant(1),
                  lambda: calls.append("f") or ef.constant(2))
    assert int(out) == 1 and calls == ["t"]
    assert int(ef.cond(False, lambda: ef.constant(1), lambda: ef.constant(2))) == 2


def test_cond_nested_structures_and_none_leaves():
    def f(x):
        return ef.cond(x > 0.0, lambda: {"a": (x, x * 2.0), "b": None},
                       lambda: {"a": (-x, x * 3.0), "b": None})

    for v in (2.0, -2.0):
        x = ef.constant(v, dtype=F64)
        eager, traced = f(x), ef.function(f)(x)
        assert traced["b"] is None and isinstance(traced["a"], tuple)
        np.testing.assert_allclose([t.numpy() for t in traced["a"]],
                                   [t.numpy() for t in eager["a"]])


def test_cond_branch_shapes_may_differ():
    @ef.function
    def f(x):
        return ef.cond(ef.reduce_sum(x) > 0.0, lambda: x[:2], lambda: ef.concat([x, x], 0))

    graph = f.get_concrete_function(spec([3])).graph
    out = next(n for n in graph.nodes if n.op == "If")
    assert out.avals[0].shape == (None,)
    np.testing.assert_allclose(f(ef.constant([1.0, 2.0, 3.0], F64)).numpy(), [1.0, 2.0])
    assert f(ef.constant([-1.0, 2.0, -3.0], F64)).shape == (6,)


def test_cond_python_bool_while_tracing_raises_like_tf():
    @ef.function
    def f(x):
        return ef.cond(True, lambda: x, lambda: -x)

    with pytest.raises(TypeError, match="Python bool.*test_control_flow.py"):
        f(ef.constant(1.0))


def test_cond_branch_structure_mismatch_names_both_and_the_line():
    @ef.function
    def f(x):
        return ef.cond(x > 0.0, lambda: (x, x), lambda: x)

    with pytest.raises(ValueError) as info:
        f(ef.constant(1.0))
    text = str(info.value)
    assert "true_fn returned: (float32[], float32[])" in text
    assert "false_fn returned: float32[]" in text
    assert "test_control_flow.py" in text


def test_cond_branch_dtype_mismatch():
    @ef.function
    def f(x):
        return ef.cond(x > 0.0, lambda: x, lambda: ef.cast(x, ef.int32))

    with pytest.raises(ValueError, match="dtypes differ: float32 vs int32"):
        f(ef.constant(1.0))


def test_python_if_on_symbolic_tensor_names_the_line():
    # With AutoGraph on (the default) this converts; autograph=False keeps the clear error.
    @ef.function(autograph=False)
    def f(x):
        if x > 0.0:
            return x
        return -x

    with pytest.raises(errors.OperatorNotAllowedInGraphError, match="eagerflow.cond"):
        f(ef.constant(1.0))


def test_cond_captures_outer_tensors_large_eager_tensors_and_variables():
    big = ef.constant(np.arange(100.0))  # too large to embed: captured by the function
    v = ef.Variable(np.ones(100), dtype=F64)

    @ef.function
    def f(s, x):
        scaled = x * s
        return ef.cond(s > 0.0, lambda: scaled + big + v, lambda: scaled - v)

    x = ef.constant(np.linspace(0, 1, 100))
    for s in (2.0, -2.0):
        expect = x.numpy() * s + (np.arange(100.0) + 1 if s > 0 else -1)
        np.testing.assert_allclose(f(ef.constant(s, F64), x).numpy(), expect)
    v.assign(np.full(100, 3.0))  # the read happens when the graph runs
    np.testing.assert_allclose(f(ef.constant(-1.0, F64), x).numpy(), -x.numpy() - 3.0)
    cf = f.get_concrete_function(spec([]), spec([100]))
    assert v in cf.variables


def test_cond_branch_assigns_variable():
    v = ef.Variable(0.0)

    @ef.function
    def f(x):
        def bump():
            v.assign_add(x)
            return v.read_value() * 10.0
        return ef.cond(x > 0.0, bump, lambda: v.read_value())

    assert float(f(ef.constant(2.0))) == 20.0
    assert float(f(ef.constant(-1.0))) == 2.0
    assert float(f(ef.constant(1.0))) == 30.0 and float(v.numpy()) == 3.0


def test_nested_cond_traced_equals_eager():
    def f(x):
        return ef.cond(x > 0.0,
                       lambda: ef.cond(x > 2.0, lambda: x * 10.0, lambda: x + 100.0),
                       lambda: ef.cond(x < -2.0, lambda: -x, lambda: x * x))

    traced = ef.function(f)
    for v in (3.0, 1.0, -3.0, -1.0):
        x = ef.constant(v, F64)
        assert float(traced(x)) == float(f(x))
    graph = traced.get_concrete_function(spec([])).graph
    assert ops_of(graph).count("If") == 1 and len(graph.library) == 6


# -- switch_case and case ----------------------------------------------------------------------
def switchy(i, x):
    return ef.switch_case(i, [lambda: x * 2.0, lambda: x + 10.0, lambda: -x])


@pytest.mark.parametrize("index", [0, 1, 2, 7, -1])
def test_switch_case_traced_equals_eager(index):
    i, x = ef.constant(index), ef.constant([1.0, 2.0], F64)
    np.testing.assert_allclose(ef.function(switchy)(i, x).numpy(), switchy(i, x).numpy())


def test_switch_case_graph_and_default():
    graph = ef.function(switchy).get_concrete_function(spec([], ef.int32), spec([2])).graph
    node = next(n for n in graph.nodes if n.op == "Case")
    assert len(node.attrs["branches"]) == 3

    @ef.function
    def with_default(i):
        return ef.switch_case(i, {1: lambda: ef.constant(11), 0: lambda: ef.constant(10)},
                              default=lambda: ef.constant(-1))

    assert [int(with_default(ef.constant(k))) for k in (0, 1, 5)] == [10, 11, -1]


def test_switch_case_argument_errors():
    with pytest.raises(TypeError, match="must be a Tensor"):
        ef.switch_case(1, [lambda: 1])
    with pytest.raises(TypeError, match="integer Tensor"):
        ef.switch_case(ef.constant(1.0), [lambda: 1])
    with pytest.raises(ValueError, match="exactly 0..1"):
        ef.switch_case(ef.constant(1), [(0, lambda: 1), (2, lambda: 2)])


def casey(x):
    return ef.case([(x < 0.0, lambda: x * -1.0), (x < 10.0, lambda: x * 2.0)],
                   default=lambda: x + 0.5)


@pytest.mark.parametrize("value", [-3.0, 4.0, 20.0])
def test_case_traced_equals_eager(value):
    x = ef.constant(value, F64)
    assert float(ef.function(casey)(x)) == float(casey(x))


def test_case_without_default_fails_at_run_time_when_nothing_holds():
    def f(x):
        return ef.case([(x < 0.0, lambda: [x * -1.0]), (x > 10.0, lambda: [x])])

    traced = ef.function(f)
    assert float(traced(ef.constant(-2.0))) == 2.0  # singleton lists unpacked (strict=False)
    assert float(traced(ef.constant(12.0))) == 12.0
    with pytest.raises(errors.InvalidArgumentError, match="none of the conditions"):
        traced(ef.constant(5.0))
    with pytest.raises(errors.InvalidArgumentError, match="none of the conditions"):
        f(ef.constant(5.0))


def test_case_exclusive():
    def f(x):
        return ef.case([(x > 0.0, lambda: x), (x > 1.0, lambda: -x)],
                       default=lambda: x * 0.0, exclusive=True)

    assert float(ef.function(f)(ef.constant(0.5))) == 0.5
    for fn in (f, ef.function(f)):
        with pytest.raises(errors.InvalidArgumentError, match="exclusive"):
            fn(ef.constant(2.0))


def test_case_rejects_python_bool_predicates():
    with pytest.raises(TypeError, match="pred must be a Tensor"):
        ef.case([(True, lambda: 1)], default=lambda: 2)


# -- while_loop ----------------------------------------------------------------------------------
def collatz_steps(n):
    def body(n, steps):
        even = ef.equal(n % 2, 0)
        return ef.cond(even, lambda: n // 2, lambda: 3 * n + 1), steps + 1
    return ef.while_loop(lambda n, steps: n > 1, body, (n, ef.constant(0)))[1]


@pytest.mark.parametrize("start", [1, 6, 27])
def test_while_traced_equals_eager_with_cond_inside(start):
    n = ef.constant(start)
    assert int(ef.function(collatz_steps)(n)) == int(collatz_steps(n))


def test_while_graph_has_one_while_node():
    graph = ef.function(collatz_steps).get_concrete_function(spec([], ef.int32)).graph
    assert ops_of(graph).count("While") == 1
    node = next(n for n in graph.nodes if n.op == "While")
    assert "If" in ops_of(graph.library[node.attrs["body"]])


def test_while_dict_and_namedtuple_loop_vars():
    State = collections.namedtuple("State", ["x", "acc"])

    def f(x):
        def body(i, state, extra):
            return i + 1, State(state.x, state.acc + state.x * 2.0), {"k": extra["k"] * 2.0}
        return ef.while_loop(lambda i, state, extra: i < 3, body,
                             (ef.constant(0), State(x, ef.zeros_like(x)), {"k": x}))

    x = ef.constant([1.0, 2.0], F64)
    for i, state, extra in (f(x), ef.function(f)(x)):
        assert int(i) == 3 and isinstance(state, State) and set(extra) == {"k"}
        np.testing.assert_allclose(state.acc.numpy(), [6.0, 12.0])
        np.testing.assert_allclose(extra["k"].numpy(), [8.0, 16.0])


def test_while_single_loop_var_body_may_return_a_bare_tensor():
    def f(x):
        return ef.while_loop(lambda v: v < 100.0, lambda v: v * 3.0, [x])

    out = ef.function(f)(ef.constant(2.0))
    assert isinstance(out, list) and float(out[0]) == 162.0 == float(f(ef.constant(2.0))[0])


@pytest.mark.parametrize("limit", [0, 2, 5, 50])
def test_while_maximum_iterations(limit):
    def f(m, x):
        return ef.while_loop(lambda i, v: i < 10, lambda i, v: (i + 1, v * 2.0),
                             (ef.constant(0), x), maximum_iterations=m)

    x = ef.constant(1.0, F64)
    want = 2.0 ** min(limit, 10)
    for fn in (f, ef.function(f)):
        assert float(fn(limit, x)[1]) == want
        assert float(fn(ef.constant(limit), x)[1]) == want


def test_while_shape_invariants_with_none_dims():
    def f(x):
        return ef.while_loop(
            lambda i, acc: i < 3, lambda i, acc: (i + 1, ef.concat([acc, acc[-1:] + 1.0], 0)),
            (ef.constant(0), x), shape_invariants=(ef.TensorShape([]), ef.TensorShape([None])))

    traced = ef.function(f)
    x = ef.constant([0.0], F64)
    np.testing.assert_allclose(traced(x)[1].numpy(), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(f(x)[1].numpy(), [0.0, 1.0, 2.0, 3.0])
    node = next(n for n in traced.get_concrete_function(spec([1])).graph.nodes
                if n.op == "While")
    assert node.avals[1].shape == (None,)


def test_while_shape_change_error_names_the_loop_var_both_shapes_and_line():
    @ef.function
    def f(x):
        return ef.while_loop(lambda i, d: i < 3,
                             lambda i, d: (i + 1, {"h": ef.concat([d["h"], d["h"]], 0)}),
                             (ef.constant(0), {"h": x}))

    with pytest.raises(ValueError) as info:
        f(ef.constant([1.0, 2.0]))
    text = str(info.value)
    assert "loop_vars[1]['h']" in text and "[2]" in text and "[4]" in text
    assert "shape_invariants" in text and "test_control_flow.py" in text


def test_while_dtype_change_and_bad_loop_vars():
    @ef.function
    def f(x):
        return ef.while_loop(lambda v: v < 3.0, lambda v: ef.cast(v, ef.float64) + 1.0, (x,))

    with pytest.raises(TypeError, match=r"loop_vars\[0\] enters the loop as float32"):
        f(ef.constant(1.0))
    with pytest.raises(TypeError, match="tuple or list"):
        ef.while_loop(lambda v: v < 3, lambda v: v + 1, ef.constant(0))


def test_while_captures_and_variable_writes_seen_by_cond():
    counter = ef.Variable(0.0)

    @ef.function
    def f(x):
        def body(v):
            counter.assign_add(1.0)
            return (v + x,)
        return ef.while_loop(lambda v: counter < 4.0, body, (ef.zeros_like(x),))[0]

    np.testing.assert_allclose(f(ef.constant([1.0, 2.0])).numpy(), [4.0, 8.0])
    assert float(counter.numpy()) == 4.0
    counter.assign(2.0)
    np.testing.assert_allclose(f(ef.constant([1.0, 2.0])).numpy(), [2.0, 4.0])


def test_nested_while_in_cond_in_while():
    def f(x):
        def body(i, acc):
            inner = ef.cond(i % 2 == 0,
                            lambda: ef.while_loop(lambda k, s: k < i, lambda k, s: (k + 1, s + x),
                                                  (ef.constant(0), ef.zeros_like(x)))[1],
                            lambda: -x)
            return i + 1, acc + inner
        return ef.while_loop(lambda i, acc: i < 5, body, (ef.constant(0), ef.zeros_like(x)))[1]

    x = ef.constant([1.0, 0.5], F64)
    np.testing.assert_allclose(ef.function(f)(x).numpy(), f(x).numpy())
    np.testing.assert_allclose(f(x).numpy(), x.numpy() * (0 + 2 + 4 - 2))


# -- gradients -------------------------------------------------------------------------------------
def cond_with_captures(x):
    w = ef.constant([0.3, -0.7], F64)
    h = ef.tanh(x * w)
    return ef.cond(ef.reduce_sum(x) > 0.0, lambda: h * ef.exp(x) + w, lambda: h * h * x)


def test_cond_gradient_with_captures_matches_finite_differences():
    traced = ef.function(cond_with_captures)
    for x in ([0.4, 1.2], [-0.4, -1.2]):
        expect = numeric_grad(lambda v: float(ef.reduce_sum(cond_with_captures(
            ef.constant(v))).numpy()), x)
        np.testing.assert_allclose(tape_grad(traced, x), expect, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(tape_grad(cond_with_captures, x), expect, rtol=1e-6,
                                   atol=1e-8)


def nested(x):
    return ef.cond(x[0] > 0.0,
                   lambda: ef.cond(x[1] > 0.0, lambda: ef.sin(x) * x[0], lambda: x * x * x),
                   lambda: ef.exp(x) * x[1])


@pytest.mark.parametrize("x", [[0.5, 0.7], [0.5, -0.7], [-0.5, 0.7]])
def test_nested_cond_gradient(x):
    expect = numeric_grad(lambda v: float(ef.reduce_sum(nested(ef.constant(v))).numpy()), x)
    np.testing.assert_allclose(tape_grad(ef.function(nested), x), expect, rtol=1e-6, atol=1e-8)


def power(x, n=4):
    return ef.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * x),
                         (ef.constant(0), ef.ones_like(x)))[1]


def test_while_power_gradient():
    x = [1.3, -0.6, 2.0]
    expect = 4 * np.array(x) ** 3
    np.testing.assert_allclose(tape_grad(ef.function(power), x), expect, rtol=1e-10)
    np.testing.assert_allclose(tape_grad(power, x), expect, rtol=1e-10)
    fd = numeric_grad(lambda v: float(ef.reduce_sum(power(ef.constant(v))).numpy()), x)
    np.testing.assert_allclose(tape_grad(ef.function(power), x), fd, rtol=1e-6)


def test_while_gradient_with_maximum_iterations_and_captures():
    a = ef.constant(0.9, F64)

    def f(x):
        body = lambda i, y: (i + 1, ef.sin(y) * a + x)  # noqa: E731
        return ef.while_loop(lambda i, y: i < 100, body, (ef.constant(0), x),
                             maximum_iterations=3)[1]

    x = [0.2, -1.1]
    expect = numeric_grad(lambda v: float(ef.reduce_sum(f(ef.constant(v))).numpy()), x)
    np.testing.assert_allclose(tape_grad(ef.function(f), x), expect, rtol=1e-6, atol=1e-9)


def test_while_gradient_through_a_loop_variable_that_grows():
    # The history keeps the growing value padded, with each iteration's shape.
    def f(x):
        def body(i, acc):
            return i + 1, ef.concat([acc, ef.sin(acc[-1:]) * x[1:2]], 0)

        return ef.reduce_sum(ef.while_loop(
            lambda i, acc: i < 4, body, (ef.constant(1), x[:1]),
            shape_invariants=(ef.TensorShape([]), ef.TensorShape([None])))[1] ** 2)

    x = [0.3, 1.5]
    expect = numeric_grad(lambda v: float(f(ef.constant(v, F64)).numpy()), x)
    np.testing.assert_allclose(tape_grad(ef.function(f), x), expect, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(tape_grad(f, x), expect, rtol=1e-6, atol=1e-9)


def test_while_gradient_through_slices_bounded_by_the_loop_index():
    # x[i:i + 2] and x[:i + 1] take run-time bounds; the backward pass replays them.
    def f(x):
        s = ef.constant(0.0, F64)
        for i in ef.range(3):
            s = s + ef.reduce_sum(ef.sin(x[i:i + 2]) * x[:2]) + ef.reduce_sum(x[:i + 1] ** 2)
        return s

    x = [0.3, -1.2, 0.8, 2.0]
    expect = numeric_grad(lambda v: float(f(ef.constant(v, F64)).numpy()), x)
    np.testing.assert_allclose(tape_grad(ef.function(f), x), expect, rtol=1e-6, atol=1e-9)


def test_while_gradient_zero_iterations_is_identity():
    f = ef.function(lambda x: power(x, n=0) + x)
    np.testing.assert_allclose(tape_grad(f, [2.0, 3.0]), [1.0, 1.0])


def test_gradient_inside_function_around_cond_and_while():
    @ef.function
    def grads(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(cond_with_captures(x)) + ef.reduce_sum(power(x, 3))
        return tape.gradient(y, x)

    for x in ([0.4, 1.2], [-0.4, -1.2]):
        expect = numeric_grad(lambda v: float(ef.reduce_sum(cond_with_captures(
            ef.constant(v))).numpy() + np.sum(v ** 3)), x)
        np.testing.assert_allclose(grads(ef.constant(x, F64)).numpy(), expect, rtol=1e-6)


def test_switch_case_gradient():
    def f(i, x):
        return ef.switch_case(i, [lambda: ef.sin(x), lambda: x * x, lambda: ef.exp(x) * 2.0])

    traced = ef.function(f)
    x = ef.constant([0.3, -0.8], F64)
    for k, expect in enumerate([np.cos(x.numpy()), 2 * x.numpy(), 2 * np.exp(x.numpy())]):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(traced(ef.constant(k), x))
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), expect, rtol=1e-12)


def test_second_order_gradient_through_cond():
    @ef.function
    def second(x):
        with ef.GradientTape() as outer:
            outer.watch(x)
            with ef.GradientTape() as inner:
                inner.watch(x)
                y = ef.cond(x > 0.0, lambda: x * x * x, lambda: ef.sin(x))
            dy = inner.gradient(y, x)
        return outer.gradient(dy, x)

    assert float(second(ef.constant(2.0, F64))) == pytest.approx(12.0)
    assert float(second(ef.constant(-1.0, F64))) == pytest.approx(-np.sin(-1.0))


def test_training_step_in_function_with_cond_loss():
    def make():
        return ef.Variable([[0.5], [-0.3]], dtype=F64), ef.Variable([0.1], dtype=F64)

    data = ef.constant([[1.0, 2.0], [0.5, -1.0], [-2.0, 0.3]], F64)
    target = ef.constant([[1.0], [0.0], [-1.0]], F64)

    def loss_fn(w, b):
        err = ef.matmul(data, w) + b - target
        mse = ef.reduce_mean(err * err)
        # Huber-like: a quadratic loss while small, linear beyond.
        return ef.cond(mse < 0.5, lambda: mse, lambda: ef.sqrt(mse) * 2.0 - 0.5 + w[0, 0] * 0.0)

    def step(b, w):
        with ef.GradientTape() as tape:
            loss = loss_fn(w, b)
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(gw * 0.1)
        b.assign_sub(gb * 0.1)
        return loss

    w_e, b_e = make()
    w_t, b_t = make()
    traced = ef.function(step)
    for _ in range(5):
        np.testing.assert_allclose(float(traced(b_t, w_t)), float(step(b_e, w_e)), rtol=1e-12)
    np.testing.assert_allclose(w_t.numpy(), w_e.numpy(), rtol=1e-12)
    # The gradient itself against finite differences of the loss at the final weights.
    with ef.GradientTape() as tape:
        loss = loss_fn(w_t, b_t)
    gw = tape.gradient(loss, w_t).numpy()
    expect = numeric_grad(lambda v: float(loss_fn(ef.Variable(v), b_t)), w_t.numpy())
    np.testing.assert_allclose(gw, expect, rtol=1e-6)


def test_gradient_through_function_call_to_variable_read_in_branch():
    v = ef.Variable([1.5, -0.5], dtype=F64)

    @ef.function
    def f(x):
        return ef.reduce_sum(ef.cond(x > 0.0, lambda: v * v * x, lambda: v + x))

    with ef.GradientTape() as tape:
        y = f(ef.constant(2.0, F64))
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [6.0, -2.0])


def test_back_prop_false_stops_gradients():
    def f(x):
        return ef.while_loop(lambda v: v < 10.0, lambda v: (v * 2.0,), (x,), back_prop=False)[0]

    for fn in (f, ef.function(f)):
        x = ef.constant(1.0, F64)
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = fn(x) * x
        assert float(tape.gradient(y, x)) == 16.0


def test_gradient_of_random_branch_is_refused_clearly():
    @ef.function
    def f(x):
        return ef.cond(x > 0.0, lambda: x * ef.random.uniform([]), lambda: x)

    x = ef.constant(1.0)
    with pytest.raises(errors.UnimplementedError, match="random op.*test_control_flow.py"):
        with ef.GradientTape() as tape:
            tape.watch(x)
            tape.gradient(f(x), x)


W_RNN = np.array([[0.5, -0.2], [0.3, 0.8]])


def rnn(x, w):
    def body(i, h):
        h2 = ef.tanh(ef.matmul(h, w) + x)
        h2 = ef.cond(ef.reduce_sum(h2) > 0.0, lambda: h2 * 1.5, lambda: h2 - 0.1)
        return i + 1, h2
    return ef.while_loop(lambda i, h: i < 4, body, (ef.constant(0), ef.zeros_like(x)))[1]


def test_while_with_cond_in_body_gradients_to_inputs_and_variables():
    w = ef.Variable(W_RNN, dtype=F64)
    traced = ef.function(lambda x: rnn(x, w))
    x = ef.constant([[0.3, -0.4]], F64)
    before = traced(x).numpy()  # compiled without history first
    grads = []
    for fn in (traced, lambda x: rnn(x, w)):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(fn(x))
        grads.append([g.numpy() for g in tape.gradient(y, [x, w])])
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)
    fd = numeric_grad(lambda v: float(ef.reduce_sum(rnn(x, ef.constant(v)))), W_RNN)
    np.testing.assert_allclose(grads[0][1], fd, rtol=1e-6)
    np.testing.assert_allclose(traced(x).numpy(), before)


def while_in_cond(x):
    return ef.cond(ef.reduce_sum(x) > 0.0,
                   lambda: ef.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, ef.sin(y) * x),
                                         (ef.constant(0), x))[1],
                   lambda: x * 2.0)


def nested_while(x):
    def outer(i, y):
        inner = ef.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, z * y),
                              (ef.constant(0), ef.ones_like(y)))[1]
        return i + 1, inner + x
    return ef.while_loop(lambda i, y: i < 2, outer, (ef.constant(0), x))[1]


@pytest.mark.parametrize("fn", [while_in_cond, nested_while])
def test_gradient_through_nested_loops(fn):
    x = [0.7, 0.2]
    expect = numeric_grad(lambda v: float(ef.reduce_sum(fn(ef.constant(v))).numpy()), x)
    np.testing.assert_allclose(tape_grad(ef.function(fn), x), expect, rtol=1e-6)


def test_second_order_through_while_is_refused_clearly():
    @ef.function
    def second(x):
        with ef.GradientTape() as outer:
            outer.watch(x)
            with ef.GradientTape() as inner:
                inner.watch(x)
                y = power(x, 3)
            dy = inner.gradient(y, x)
        return outer.gradient(dy, x)

    with pytest.raises(errors.UnimplementedError, match="Second-order.*test_control_flow.py"):
        second(ef.constant(2.0, F64))


def test_runtime_error_inside_a_branch_names_the_branch_line():
    @ef.function
    def f(i, x):
        return ef.cond(i > 0, lambda: ef.gather(x, i), lambda: x[0])

    assert float(f(ef.constant(1), ef.constant([1.0, 2.0]))) == 2.0
    with pytest.raises(errors.InvalidArgumentError, match="test_control_flow.py") as info:
        f(ef.constant(5), ef.constant([1.0, 2.0]))
    assert "ef.gather(x, i)" in str(info.value)


def test_variable_as_loop_var_enters_as_its_value():
    v = ef.Variable(1.0, dtype=F64)

    def f():
        return ef.while_loop(lambda x: x < 20.0, lambda x: (x * 3.0,), (v,))[0]

    assert float(f()) == 27.0 == float(ef.function(f)())
    assert float(v.numpy()) == 1.0
