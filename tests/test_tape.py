"""GradientTape behaviour: watching, persistence, nesting, structures, None reasons,
jacobians, custom gradients and recompute_grad."""

import logging

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors


def test_watch_constant_and_gradient():
    x = ef.constant([1.0, 2.0, 3.0])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = x * x * x
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * np.array([1.0, 4.0, 9.0]))


def test_trainable_variables_are_watched_automatically():
    v = ef.Variable(2.0)
    frozen = ef.Variable(3.0, trainable=False)
    with ef.GradientTape() as tape:
        y = v * frozen
    assert tape.watched_variables() == (v,)
    gv, gf = tape.gradient(y, [v, frozen])
    assert float(gv) == 3.0 and gf is None


def test_watch_accessed_variables_false():
    v = ef.Variable(2.0)
    w = ef.Variable(5.0)
    with ef.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(w)
        y = v * w
    gv, gw = tape.gradient(y, [v, w])
    assert gv is None and float(gw) == 2.0
    assert "watch_accessed_variables=False" in tape.explain_none(y, v)


def test_non_persistent_tape_used_once():
    x = ef.constant(1.0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)


def test_persistent_tape_many_gradients():
    x = ef.constant(3.0)
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(y, x)) == 6.0
    assert float(tape.gradient(z, x)) == 4 * 27.0
    assert float(tape.gradient(z, y)) == 18.0


def test_stop_recording():
    x = ef.constant(2.0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = x * x
        z = x * 3.0
    gy, gz = tape.gradient([y, z], [x, x])
    assert float(gy) == 3.0 and float(gz) == 3.0


def test_stop_recording_none_reason():
    x = ef.constant(2.0)
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = x * x
    assert tape.gradient(y, x) is None
    assert "stop_recording" in tape.explain_none(y, x)


def test_reset():
    x = ef.constant(2.0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        z = x * 5.0
    assert float(tape.gradient(z, x)) == 5.0
    del y


def test_nested_tapes_second_and_third_order():
    x = ef.constant(0.7, dtype=ef.float64)
    with ef.GradientTape() as t3:
        t3.watch(x)
        with ef.GradientTape() as t2:
            t2.watch(x)
            with ef.GradientTape() as t1:
                t1.watch(x)
                y = x * x * x * x
            dy = t1.gradient(y, x)
        d2y = t2.gradient(dy, x)
    d3y = t3.gradient(d2y, x)
    np.testing.assert_allclose(float(dy), 4 * 0.7**3)
    np.testing.assert_allclose(float(d2y), 12 * 0.7**2)
    np.testing.assert_allclose(float(d3y), 24 * 0.7)


def test_nested_structures_target_and_sources():
    a = ef.constant([1.0, 2.0])
    b = ef.constant(3.0)
    with ef.GradientTape() as tape:
        tape.watch([a, b])
        out = {"p": a * b, "q": (b * b,)}
    grads = tape.gradient(out, {"first": a, "second": [b]})
    assert set(grads) == {"first", "second"}
    np.testing.assert_allclose(grads["first"].numpy(), [3.0, 3.0])
    np.testing.assert_allclose(grads["second"][0].numpy(), 1.0 + 2.0 + 6.0)


def test_output_gradients():
    x = ef.constant([1.0, 2.0])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=ef.constant([10.0, 100.0]))
    np.testing.assert_allclose(g.numpy(), [20.0, 400.0])


def test_unconnected_gradients_zero():
    x = ef.constant([1.0, 2.0])
    z = ef.constant(5.0)
    with ef.GradientTape() as tape:
        tape.watch([x, z])
        y = x * 2.0
    gx, gz = tape.gradient(y, [x, z], unconnected_gradients=ef.UnconnectedGradients.ZERO)
    np.testing.assert_allclose(gz.numpy(), 0.0)
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])
    with ef.GradientTape() as tape:
        tape.watch([x, z])
        y = x * 2.0
    assert tape.gradient(y, z, unconnected_gradients="zero").numpy() == 0.0


def test_integer_sources_get_none_with_reason():
    i = ef.constant([1, 2])
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(i)
        y = i * 2
    assert tape.gradient(y, i) is None
    assert "int32" in tape.explain_none(y, i)


def test_none_reason_not_connected_and_not_watched():
    x = ef.constant(1.0)
    other = ef.constant(2.0)
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = other * 3.0
        w = x * 1.0
    assert tape.gradient(y, x) is None
    assert "not connected" in tape.explain_none(y, x)
    assert "never watched" in tape.explain_none(w, other)
    assert tape.explain_none(w, x) is None


def test_none_reason_non_differentiable_op():
    x = ef.constant([1.0, 2.0])
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ef.cast(ef.cast(x, ef.int32), ef.float32) * 2.0
    assert tape.gradient(y, x) is None
    reason = tape.explain_none(y, x)
    assert "non-differentiable" in reason and "Cast" in reason


def test_none_gradient_warning_can_be_switched(caplog):
    x = ef.constant(1.0)
    other = ef.constant(1.0)
    ef.autodiff.set_none_gradient_warnings(True)
    try:
        with caplog.at_level(logging.WARNING, logger="eagerflow.tape"):
            with ef.GradientTape() as tape:
                tape.watch(x)
                y = other * 2.0
            assert tape.gradient(y, x) is None
        assert any("is None" in r.message for r in caplog.records)
    finally:
        ef.autodiff.set_none_gradient_warnings(False)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="eagerflow.tape"):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = other * 2.0
        tape.gradient(y, x)
    assert not caplog.records


def test_broadcast_gradients_are_reduced_to_source_shape():
    a = ef.constant(np.ones((4, 3)))
    b = ef.constant(np.arange(3.0))
    c = ef.constant(2.0, dtype=ef.float64)
    with ef.GradientTape() as tape:
        tape.watch([a, b, c])
        y = a * b + c
    ga, gb, gc = tape.gradient(y, [a, b, c])
    assert ga.shape == (4, 3) and gb.shape == (3,) and gc.shape == ()
    np.testing.assert_allclose(gb.numpy(), [4.0, 4.0, 4.0])
    assert float(gc) == 12.0


def test_gradient_accumulates_over_multiple_uses():
    x = ef.constant(3.0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = x * x + x * 2.0 + x
    assert float(tape.gradient(y, x)) == 9.0


def test_variable_read_several_times_and_assigned_between():
    v = ef.Variable(2.0)
    with ef.GradientTape() as tape:
        a = v * 3.0
        v.assign(10.0)
        b = v * 5.0
        total = a + b
    assert float(tape.gradient(total, v)) == 8.0


def test_tape_keeps_only_what_gradient_rules_declare():
    x = ef.constant(np.ones(4))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = x + x  # AddV2 saves nothing
        z = y * x  # Mul saves both inputs
    add_entry, mul_entry = tape._entries
    assert add_entry.inputs == (None, None) and add_entry.out is None
    assert all(t is not None for t in mul_entry.inputs)
    del z


def test_jacobian_matches_finite_differences():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 2))
    x0 = rng.standard_normal(2)

    def f(x):
        return ef.tanh(ef.linalg.matvec(ef.constant(a), x)) * x[0]

    x = ef.constant(x0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    jac = tape.jacobian(y, x).numpy()
    eps = 1e-6
    numeric = np.stack([(f(ef.constant(x0 + eps * e)).numpy() -
                         f(ef.constant(x0 - eps * e)).numpy()) / (2 * eps)
                        for e in np.eye(2)], axis=1)
    assert jac.shape == (3, 2)
    np.testing.assert_allclose(jac, numeric, rtol=1e-6, atol=1e-8)


def test_batch_jacobian():
    x0 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    x = ef.constant(x0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.stack([x[:, 0] * x[:, 1], x[:, 0] + x[:, 1] * 3.0, x[:, 1] ** 2], axis=1)
    jac = tape.batch_jacobian(y, x).numpy()
    assert jac.shape == (3, 3, 2)
    for b in range(3):
        a0, a1 = x0[b]
        np.testing.assert_allclose(jac[b], [[a1, a0], [1.0, 3.0], [0.0, 2 * a1]])


def test_custom_gradient_with_keyword_arguments():
    @ef.custom_gradient
    def scaled(x, scale=1.0):
        def grad(dy):
            return dy * scale * 10.0
        return x * scale, grad

    x = ef.constant(2.0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x, scale=3.0)
    assert float(y) == 6.0
    assert float(tape.gradient(y, x)) == 30.0


def test_custom_gradient_reading_variables():
    v = ef.Variable(3.0)

    @ef.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            return dy * v, [dy * x * 2.0]
        return x * v, grad

    x = ef.constant(2.0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gv = tape.gradient(y, [x, v])
    assert float(gx) == 3.0 and float(gv) == 4.0


def test_custom_gradient_without_variables_argument_raises():
    v = ef.Variable(3.0)

    @ef.custom_gradient
    def f(x):
        return x * v, lambda dy: dy

    x = ef.constant(2.0)
    with pytest.raises(TypeError, match="variables"):
        with ef.GradientTape() as tape:
            tape.watch(x)
            f(x)


def test_custom_gradient_outside_tape_just_runs():
    @ef.custom_gradient
    def f(x):
        return x * 2.0, lambda dy: dy
    assert float(f(ef.constant(1.0))) == 2.0


def test_recompute_grad_matches_plain_gradient():
    def block(x):
        return ef.tanh(x) * x + ef.sin(x)

    x = ef.constant([0.3, -1.2, 2.0], dtype=ef.float64)
    with ef.GradientTape() as t1:
        t1.watch(x)
        y1 = ef.reduce_sum(block(x))
    with ef.GradientTape() as t2:
        t2.watch(x)
        y2 = ef.reduce_sum(ef.recompute_grad(block)(x))
    np.testing.assert_allclose(t2.gradient(y2, x).numpy(), t1.gradient(y1, x).numpy())


def test_stop_gradient():
    x = ef.constant(2.0)
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ef.stop_gradient(x * x) * x
    assert float(tape.gradient(y, x)) == 4.0


def test_tape_cannot_be_reentered():
    tape = ef.GradientTape()
    with tape:
        with pytest.raises(errors.FailedPreconditionError):
            tape.__enter__()
