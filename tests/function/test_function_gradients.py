"""Gradients through calls of ``@function``s equal the eager gradients.

A call recorded on a tape differentiates through the function as one entry whose backward
pass is itself a traced graph, built once per concrete function. These tests compare it with
the tape differentiating the same Python eagerly: inputs and variables, nested and
non-float outputs, unconnected outputs and sources, several calls under one tape, nested
tapes (second order) and tapes inside the function.
"""

import numpy as np

import eagerflow as ef


def _both(python_fn):
    """``python_fn`` itself and as a @function (a fresh one per call of _both)."""
    return python_fn, ef.function(python_fn)


def _allclose(a, b, rtol=1e-6, atol=1e-7):
    if b is None:
        # As in TF, a function call is one op: an input that reaches some other output of
        # the function gets a zero gradient where the eager tape says None.
        assert a is None or not np.any(a.numpy()), (a, b)
        return
    assert a is not None, b
    np.testing.assert_allclose(np.asarray(a.numpy()), np.asarray(b.numpy()), rtol=rtol,
                               atol=atol)


def _grads(fn, args, sources_of, target_of=lambda out: out, **gradient_kwargs):
    with ef.GradientTape(persistent=True) as tape:
        for a in args:
            tape.watch(a)
        out = fn(*args)
        target = target_of(out)
    return tape.gradient(target, sources_of(args), **gradient_kwargs)


def test_gradient_wrt_inputs_and_variables():
    rng = np.random.default_rng(0)
    w = ef.Variable(rng.standard_normal((3, 2)).astype(np.float32))
    b = ef.Variable(np.zeros(2, np.float32))

    def loss(x, y):
        return ef.reduce_sum(ef.square(ef.tanh(ef.matmul(x, w) + b) - y))

    x = ef.constant(rng.standard_normal((4, 3)).astype(np.float32))
    y = ef.constant(rng.standard_normal((4, 2)).astype(np.float32))
    eager_fn, traced_fn = _both(loss)
    for _ in range(2):  # the second call reuses the traced backward
        eager = _grads(eager_fn, (x, y), lambda a: [a[0], a[1], w, b])
        traced = _grads(traced_fn, (x, y), lambda a: [a[0], a[1], w, b])
        for e, t in zip(eager, traced):
            _allclose(t, e, rtol=1e-5, atol=1e-6)
    assert traced_fn.experimental_get_tracing_count() == 1


def test_variables_are_watched_automatically():
    v = ef.Variable([1.0, 2.0])

    @ef.function
    def f(x):
        return ef.reduce_sum(v * v * x)

    x = ef.constant([3.0, 4.0])
    with ef.GradientTape() as tape:
        y = f(x)
    assert tape.watched_variables() == (v,)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [6.0, 16.0])
    with ef.GradientTape(watch_accessed_variables=False) as tape:
        y = f(x)
    assert tape.gradient(y, v) is None


def test_nested_outputs_and_output_gradients():
    def f(x, y):
        return {"a": x * y, "pair": (ef.sin(x), ef.reduce_sum(y * y))}

    x = ef.constant([0.5, -1.0, 2.0])
    y = ef.constant([1.5, 0.25, -2.0])
    seeds = {"a": ef.constant([1.0, 2.0, 3.0]), "pair": (ef.constant([0.5, 0.5, 0.5]),
                                                        ef.constant(2.0))}
    eager_fn, traced_fn = _both(f)
    for target_of in (lambda out: out, lambda out: out["pair"][0]):
        eager = _grads(eager_fn, (x, y), list, target_of)
        traced = _grads(traced_fn, (x, y), list, target_of)
        for e, t in zip(eager, traced):
            _allclose(t, e)
    eager = _grads(eager_fn, (x, y), list, output_gradients=seeds)
    traced = _grads(traced_fn, (x, y), list, output_gradients=seeds)
    for e, t in zip(eager, traced):
        _allclose(t, e)


def test_unconnected_outputs_and_sources():
    def f(x, y, n):
        return x * 2.0, ef.cast(n, ef.float32) + 1.0, n * 3

    x, y = ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0])
    n = ef.constant([1, 2])
    eager_fn, traced_fn = _both(f)
    for fn in (eager_fn, traced_fn):
        # y does not reach any output; the integer output and source have no gradient.
        gx, gy, gn = _grads(fn, (x, y, n), list, lambda out: out[0])
        np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])
        assert gy is None and gn is None
        _, gy, _ = _grads(fn, (x, y, n), list, lambda out: out[0],
                          unconnected_gradients="zero")
        np.testing.assert_array_equal(gy.numpy(), [0.0, 0.0])
    # Differentiating an output that does not depend on x at all: None eagerly; zeros
    # through the function (x reaches another output of the call), as in TF.
    gx, _, _ = _grads(eager_fn, (x, y, n), list, lambda out: out[1])
    assert gx is None
    gx, gy, _ = _grads(traced_fn, (x, y, n), list, lambda out: out[1])
    np.testing.assert_array_equal(gx.numpy(), [0.0, 0.0])
    assert gy is None


def test_backward_is_traced_once_per_signature():
    traces = []

    @ef.function
    def f(x):
        traces.append(x.shape)
        return ef.reduce_sum(ef.exp(x) * x)

    def grad(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)

    x3 = ef.constant([0.1, 0.2, 0.3])
    concrete = f.get_concrete_function(x3)
    assert concrete._gradient_pair is None  # built on the first differentiated call
    g1 = grad(x3)
    pair = concrete._gradient_pair
    assert pair is not None
    g2 = grad(ef.constant([0.3, 0.2, 0.1]))
    assert concrete._gradient_pair is pair  # the same forward/backward graphs
    x = np.array([0.3, 0.2, 0.1])
    np.testing.assert_allclose(g2.numpy(), np.exp(x) * (1 + x), rtol=1e-6)
    np.testing.assert_allclose(g1.numpy(), np.exp(x[::-1]) * (1 + x[::-1]), rtol=1e-6)
    # Calls outside a tape run the plain graph and leave the pair alone.
    f(x3)
    assert concrete._gradient_pair is pair
    # A new signature has its own concrete function and its own pair.
    grad(ef.constant([0.1, 0.2]))
    other = f.get_concrete_function(ef.TensorSpec([2]))
    assert other is not concrete and other._gradient_pair is not None
    assert len(traces) == 2


def test_function_called_twice_under_one_tape():
    w = ef.Variable([[1.0, -1.0], [0.5, 2.0]])

    def layer(x):
        return ef.tanh(ef.matmul(x, w))

    x = ef.constant([[0.3, -0.7]])
    eager_fn, traced_fn = _both(layer)
    results = []
    for fn in (eager_fn, traced_fn):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = fn(fn(x))  # the output of the first call feeds the second
            loss = ef.reduce_sum(y * y)
        results.append(tape.gradient(loss, [x, w]))
    for e, t in zip(*results):
        _allclose(t, e, rtol=1e-5)
    assert traced_fn.experimental_get_tracing_count() == 1


def _second_order(fn, x, w):
    with ef.GradientTape() as outer:
        outer.watch(x)
        with ef.GradientTape() as inner:
            inner.watch(x)
            y = fn(x)
        gx, gw = inner.gradient(y, [x, w])
    return gx, gw, outer.gradient(gx, x)


def test_second_order_through_a_function():
    # Nested tapes interpret the call op by op, so the outer tape records the inner
    # gradient's ops: the same Hessian-vector products as the eager Python.
    w = ef.Variable([0.5, -1.5])

    def f(x):
        return ef.reduce_sum(x * x * x * w + ef.tanh(x * w))

    traced = ef.function(f)
    x = ef.constant([1.0, 2.0])
    got = _second_order(traced, x, w)
    want = _second_order(f, x, w)
    for g, e in zip(got, want):
        assert g is not None
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)
    np.testing.assert_allclose(want[2].numpy(), 6.0 * x.numpy() * w.numpy()
                               - 2.0 * np.tanh(x.numpy() * w.numpy())
                               * (1.0 - np.tanh(x.numpy() * w.numpy()) ** 2)
                               * w.numpy() ** 2, rtol=1e-5)


def test_second_order_through_a_function_reading_a_variable():
    # A gradient penalty: the outer tape differentiates the norm of the inner gradient
    # with respect to the variable, which the function reads (no tensor argument watched).
    w = ef.Variable([0.7, -0.2, 1.3])
    x = ef.constant([1.0, 2.0, -1.0])

    def loss(x):
        return ef.reduce_sum(ef.sin(x * w) * w)

    traced = ef.function(loss)
    results = []
    for fn in (loss, traced):
        with ef.GradientTape() as outer:
            with ef.GradientTape() as inner:
                y = fn(x)
            g = inner.gradient(y, w)
            penalty = ef.reduce_sum(g * g)
        results.append(outer.gradient(penalty, w))
    assert results[1] is not None
    np.testing.assert_allclose(results[1].numpy(), results[0].numpy(), rtol=1e-6)


def test_one_tape_keeps_the_compiled_gradient_of_a_call():
    traced = ef.function(lambda x: ef.reduce_sum(ef.sin(x) * x))
    x = ef.constant([0.3, 0.9])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = traced(x)
    g = tape.gradient(y, x)
    assert traced.get_concrete_function(x)._gradient_pair is not None  # not interpreted
    np.testing.assert_allclose(g.numpy(), np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy()),
                               rtol=1e-6)


def test_tape_inside_the_function_equals_eager():
    w = ef.Variable([0.5, -0.25, 2.0])

    def value_and_grad(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(ef.sigmoid(x * w))
        gx, gw = tape.gradient(y, [x, w])
        return y, gx, gw

    x = ef.constant([0.1, 1.0, -3.0])
    eager_fn, traced_fn = _both(value_and_grad)
    for e, t in zip(eager_fn(x), traced_fn(x)):
        _allclose(t, e)
    ops = [n.op for n in traced_fn.get_concrete_function(x).graph.nodes]
    assert "Sigmoid" in ops and len(ops) > 6  # the gradient is part of the graph


def test_gradient_through_a_function_with_python_arguments():
    @ef.function
    def scaled(x, k):
        return ef.reduce_sum(x ** k)

    x = ef.constant([1.0, 2.0])
    for k, expected in ((2, [2.0, 4.0]), (3, [3.0, 12.0])):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = scaled(x, k)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected)
    assert scaled.experimental_get_tracing_count() == 2


def test_gradients_of_slices_and_gathers_along_dimensions_known_only_at_run_time():
    """x[:, t], x[:1, 1:] and gather over None dimensions inside a while_loop: the gradient
    ops take the input's run-time shape (TF's StridedSliceGrad/gather gradient do too)."""
    spec = ef.TensorSpec([None, None, 2], ef.float64)

    @ef.function(input_signature=[spec])
    def grad(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            n = ef.shape(x)[1]

            def body(t, acc):
                step = ef.reduce_sum(x[:, t] ** 2) + ef.reduce_sum(x[:1, 1:] * 3.0)
                return t + 1, acc + step + ef.reduce_sum(ef.gather(x, t, axis=1) * 5.0)

            _, total = ef.while_loop(lambda t, acc: t < n, body,
                                     (ef.constant(0), ef.constant(0.0, ef.float64)))
        return tape.gradient(total, x)

    for shape in ((2, 3, 2), (3, 1, 2)):
        x = np.arange(float(np.prod(shape))).reshape(shape)
        want = 2 * x + 5.0
        want[:1, 1:] += 3.0 * shape[1]  # read once per iteration
        np.testing.assert_allclose(grad(x).numpy(), want, rtol=1e-12)
    assert grad.experimental_get_tracing_count() == 1
