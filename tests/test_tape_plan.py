"""Recording plans: a tape repeating a known structure follows a plan instead of building
entries. Every path must give the gradients of an ordinary tape, and every way of leaving
the plan must leave an ordinary tape behind."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import tape_replay


@pytest.fixture(autouse=True)
def fresh_plans():
    tape_replay._PLANS.clear()
    tape_replay._COMPILED.clear()
    tape_replay._SEEN.clear()
    yield
    tape_replay._PLANS.clear()


def _layer(n=6, k=4, seed=0):
    rng = np.random.default_rng(seed)
    x = ef.constant(rng.standard_normal((n, k)))
    w = ef.Variable(rng.standard_normal((k, 3)))
    b = ef.Variable(rng.standard_normal(3))
    return x, w, b


def _numpy_grads(x, w, b):
    h = np.tanh(x @ w + b)
    dz = 1.0 - h * h
    return x.T @ dz, dz.sum(axis=0)


def _assert_layer_grads(grads, x, w, b, scale=1.0):
    want_w, want_b = _numpy_grads(x.numpy(), w.numpy(), b.numpy())
    gw, gb = grads
    np.testing.assert_allclose(gw.numpy(), scale * want_w, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), scale * want_b, rtol=1e-12)
    return gw, gb


def _step(x, w, b, persistent=False):
    with ef.GradientTape(persistent=persistent) as tape:
        loss = ef.reduce_sum(ef.tanh(ef.matmul(x, w) + b))
    return tape, loss


def _warm(x, w, b, steps=2):
    """Two gradients: the second compiles the backward and makes the plan."""
    for _ in range(steps):
        tape, loss = _step(x, w, b)
        tape.gradient(loss, [w, b])


def test_third_tape_follows_the_plan_and_matches_numpy():
    x, w, b = _layer()
    _warm(x, w, b)
    tape, loss = _step(x, w, b)
    assert tape._plan and tape._pos == 4 and tape._recorded == []
    _assert_layer_grads(tape.gradient(loss, [w, b]), x, w, b)


def test_followed_tape_keeps_only_what_the_rules_read():
    x, w, b = _layer()
    _warm(x, w, b)
    tape, loss = _step(x, w, b)
    planned = tape._saved
    # Materializing gives the same entries (and the same kept tensors) as ordinary recording.
    entries = tape._entries
    assert not tape._plan and tape._saved == []
    ordinary, _ = _step_without_plans(x, w, b)
    assert [e.prim for e in entries] == [e.prim for e in ordinary._entries]
    for got, want in zip(entries, ordinary._entries):
        assert got.input_shapes == want.input_shapes
        assert got.input_float == want.input_float
        assert got.output_meta == want.output_meta
        assert [t is None for t in got.inputs] == [t is None for t in want.inputs]
        assert (got.out is None) == (want.out is None)
    kept = [t for e in entries for t in e.inputs + (e.out,) if t is not None]
    assert len(kept) == len(planned) and all(a is b for a, b in zip(kept, planned))


def _step_without_plans(x, w, b):
    saved = dict(tape_replay._PLANS)
    tape_replay._PLANS.clear()
    try:
        return _step(x, w, b)
    finally:
        tape_replay._PLANS.update(saved)


def test_materialized_tape_gives_the_eager_gradients():
    x, w, b = _layer()
    _warm(x, w, b)
    tape, loss = _step(x, w, b)
    tape._entries  # noqa: B018 - materializes
    _assert_layer_grads(tape.gradient(loss, [w, b]), x, w, b)


def test_a_different_op_midway_leaves_the_plan():
    x, w, b = _layer()
    _warm(x, w, b)
    with ef.GradientTape() as tape:
        loss = ef.reduce_sum(ef.sigmoid(ef.matmul(x, w) + b))  # sigmoid where tanh was
    assert tape._plan is False and len(tape._recorded) == 4
    gw, gb = tape.gradient(loss, [w, b])
    s = 1.0 / (1.0 + np.exp(-(x.numpy() @ w.numpy() + b.numpy())))
    dz = s * (1.0 - s)
    np.testing.assert_allclose(gw.numpy(), x.numpy().T @ dz, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), dz.sum(axis=0), rtol=1e-12)


def test_a_new_batch_size_leaves_the_plan():
    x, w, b = _layer(n=6)
    _warm(x, w, b)
    x8 = ef.constant(np.random.default_rng(1).standard_normal((8, 4)))
    tape, loss = _step(x8, w, b)
    assert tape._plan is False
    _assert_layer_grads(tape.gradient(loss, [w, b]), x8, w, b)


def test_extra_ops_after_the_plan_and_other_sources():
    x, w, b = _layer()
    _warm(x, w, b)
    with ef.GradientTape() as tape:
        loss = ef.reduce_sum(ef.tanh(ef.matmul(x, w) + b))
        loss2 = loss * 3.0  # one op more than planned
    assert tape._plan is False
    gw = tape.gradient(loss2, w)
    want_w, _ = _numpy_grads(x.numpy(), w.numpy(), b.numpy())
    np.testing.assert_allclose(gw.numpy(), 3.0 * want_w, rtol=1e-12)
    # A followed tape asked for other sources than planned answers through its entries.
    tape, loss = _step(x, w, b)
    assert tape._plan
    (gb,) = tape.gradient(loss, [b])
    np.testing.assert_allclose(gb.numpy(), _numpy_grads(x.numpy(), w.numpy(), b.numpy())[1],
                               rtol=1e-12)


def test_persistent_followed_tape_gradients_and_jacobian():
    x, w, b = _layer()
    _warm(x, w, b)
    tape, loss = _step(x, w, b, persistent=True)
    assert tape._plan
    first = tape.gradient(loss, [w, b])
    second = tape.gradient(loss, [w, b])
    for a, c in zip(first, second):
        np.testing.assert_array_equal(a.numpy(), c.numpy())
    jb = tape.jacobian(loss, b)
    np.testing.assert_allclose(jb.numpy(), first[1].numpy(), rtol=1e-12)


def test_non_persistent_followed_tape_is_released():
    x, w, b = _layer()
    _warm(x, w, b)
    tape, loss = _step(x, w, b)
    tape.gradient(loss, [w, b])
    assert tape._saved == [] and tape._recorded == []
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(loss, [w, b])


def test_none_explanation_on_a_followed_tape():
    x, w, b = _layer()
    _warm(x, w, b)
    tape, loss = _step(x, w, b, persistent=True)
    assert tape._plan
    unused = ef.Variable(1.0)
    assert "was not read" in tape.explain_none(loss, unused)
    assert tape.explain_none(loss, w) is None


def test_nested_tapes_on_a_planned_structure_give_second_derivatives():
    x = ef.Variable(np.array([0.3, -0.7, 1.1]))

    def inner_step():
        with ef.GradientTape() as tape:
            y = ef.reduce_sum(ef.sin(x) * x)
        return tape.gradient(y, [x])[0]

    for _ in range(3):
        inner_step()  # the third follows the plan
    with ef.GradientTape() as outer:
        g = inner_step()  # the inner tape follows the plan while the outer one records
        s = ef.reduce_sum(g)
    h = outer.gradient(s, x).numpy()
    v = x.numpy()
    np.testing.assert_allclose(g.numpy(), np.cos(v) * v + np.sin(v), rtol=1e-12)
    np.testing.assert_allclose(h, 2.0 * np.cos(v) - v * np.sin(v), rtol=1e-12)


def test_custom_gradient_inside_a_followed_tape():
    x, w, b = _layer()
    _warm(x, w, b)

    @ef.custom_gradient
    def double_grad(t):
        return ef.identity(t), lambda dy: dy * 2.0

    with ef.GradientTape() as tape:
        z = ef.matmul(x, w) + b  # two planned steps
        loss = ef.reduce_sum(ef.tanh(double_grad(z)))
    assert tape._plan is False
    _assert_layer_grads(tape.gradient(loss, [w, b]), x, w, b, scale=2.0)


def test_watch_and_stop_recording_midway():
    x, w, b = _layer()
    _warm(x, w, b)
    with ef.GradientTape() as tape:
        z = ef.matmul(x, w)
        tape.watch(x)  # shifts the tape's numbering: the next step no longer matches
        loss = ef.reduce_sum(ef.tanh(z + b))
    gx, gw = tape.gradient(loss, [x, w])
    assert gx is None  # x was watched after its only use, as in TF
    np.testing.assert_allclose(gw.numpy(), _numpy_grads(x.numpy(), w.numpy(), b.numpy())[0],
                               rtol=1e-12)
    with ef.GradientTape() as tape:
        z = ef.matmul(x, w) + b
        with tape.stop_recording():
            z = ef.tanh(z)
        loss = ef.reduce_sum(z)
    assert tape.gradient(loss, w) is None


def test_variable_updates_between_steps_are_seen():
    x, w, b = _layer()
    _warm(x, w, b)
    for _ in range(3):
        tape, loss = _step(x, w, b)
        gw, gb = _assert_layer_grads(tape.gradient(loss, [w, b]), x, w, b)
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)


def test_output_gradients_on_a_followed_tape():
    x, w, b = _layer()
    _warm(x, w, b)
    tape, loss = _step(x, w, b)
    grads = tape.gradient(loss, [w, b], output_gradients=ef.constant(2.0, ef.float64))
    _assert_layer_grads(grads, x, w, b, scale=2.0)


def test_a_structure_with_a_multi_output_op_is_not_planned():
    x = ef.Variable(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
    results = []
    for _ in range(4):
        with ef.GradientTape() as tape:
            top, bottom = ef.split(ef.sin(x), 2, axis=0)
            loss = ef.reduce_sum(top * 2.0 + bottom)
        assert not tape._plan
        results.append(tape.gradient(loss, x).numpy())
    assert not tape_replay._PLANS
    want = np.cos(x.numpy()) * np.array([[2.0], [1.0]])
    for got in results:
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_alternating_structures_with_one_first_op():
    x, w, b = _layer()
    for _ in range(4):
        tape, loss = _step(x, w, b)
        _assert_layer_grads(tape.gradient(loss, [w, b]), x, w, b)
        with ef.GradientTape() as tape:  # the same first op, then something else
            loss = ef.reduce_mean(ef.matmul(x, w) ** 2)
        gw = tape.gradient(loss, w)
        z = x.numpy() @ w.numpy()
        np.testing.assert_allclose(gw.numpy(), x.numpy().T @ (2.0 * z / z.size), rtol=1e-12)


def test_attrs_that_cannot_be_compared_count_as_different():
    assert tape_replay._same_attrs({"axis": (0, 1)}, {"axis": (0, 1)})
    assert not tape_replay._same_attrs({"axis": (0, 1)}, {"axis": np.array([0, 1])})


def test_a_tape_inside_a_traced_function_ignores_eager_plans():
    x, w, b = _layer()
    _warm(x, w, b, steps=3)
    assert tape_replay._PLANS

    @ef.function
    def traced(x):
        with ef.GradientTape() as tape:
            loss = ef.reduce_sum(ef.tanh(ef.matmul(x, w) + b))
        return tape.gradient(loss, [w, b])

    _assert_layer_grads(traced(x), x, w, b)


def test_ops_without_gradients_inside_the_tape_are_planned():
    x, w, b = _layer()
    labels = ef.constant(np.array([0, 1, 2, 0, 1, 2]))
    for _ in range(4):
        with ef.GradientTape() as tape:
            logits = ef.matmul(x, w) + b
            loss = ef.reduce_sum(ef.tanh(logits))
            hits = ef.equal(ef.argmax(logits, axis=1), labels)  # an accuracy, on the tape
        followed = tape._plan
        _assert_layer_grads(tape.gradient(loss, [w, b]), x, w, b)
    assert followed and followed.n == 6
    want = np.mean(np.argmax(x.numpy() @ w.numpy() + b.numpy(), axis=1) == [0, 1, 2, 0, 1, 2])
    assert float(ef.reduce_mean(ef.cast(hits, ef.float64))) == want


def test_other_variables_in_the_same_places_and_a_shared_weight():
    x, w, b = _layer()
    _warm(x, w, b)
    w2 = ef.Variable(w.numpy() * -2.0)
    b2 = ef.Variable(b.numpy() + 1.0)
    tape, loss = _step(x, w2, b2)
    assert tape._plan  # the same structure, other variables: the plan applies
    _assert_layer_grads(tape.gradient(loss, [w2, b2]), x, w2, b2)
    # Read in the other order (and through another first op), the plan does not apply.
    with ef.GradientTape() as tape:
        bias = b + 0.0
        loss = ef.reduce_sum(ef.tanh(ef.matmul(x, w) + bias))
    gw, gb = tape.gradient(loss, [w, b])
    _assert_layer_grads((gw, gb), x, w, b)
    # One weight used twice (tied): both uses add up in its gradient.
    v = ef.Variable(np.array([[0.5, -0.2], [0.1, 0.3]]))
    for _ in range(4):
        with ef.GradientTape() as tape:
            loss = ef.reduce_sum(ef.matmul(ef.matmul(ef.ones([1, 2], ef.float64), v), v))
        g = tape.gradient(loss, v).numpy()
    ones = np.ones((1, 2))
    want = ones.T @ (np.ones((1, 2)) @ v.numpy().T) + (ones @ v.numpy()).T @ np.ones((1, 2))
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_alternating_steps_with_other_shapes_each_follow_their_plan():
    rng = np.random.default_rng(3)
    x = ef.constant(rng.standard_normal((6, 4)))
    g_w, g_b = ef.Variable(rng.standard_normal((4, 3))), ef.Variable(rng.standard_normal(3))
    d_w, d_b = ef.Variable(rng.standard_normal((4, 5))), ef.Variable(rng.standard_normal(5))
    followed = []
    for _ in range(4):  # two alternating steps, both starting with a MatMul of x
        for w, b in ((g_w, g_b), (d_w, d_b)):
            tape, loss = _step(x, w, b)
            followed.append(bool(tape._plan))
            _assert_layer_grads(tape.gradient(loss, [w, b]), x, w, b)
    assert followed == [False] * 4 + [True] * 4
