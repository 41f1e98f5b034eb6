"""Compiled backward replay: the second and later tapes with the same structure run a
traced backward graph, which must give exactly the gradients of the eager backward."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import tape_replay


def _grads(step, replay):
    saved = tape_replay.set_backward_compiler(tape_replay._compiler if replay else None)
    try:
        return [step() for _ in range(4)]
    finally:
        tape_replay.set_backward_compiler(saved)


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


@case
def mlp_with_variables():
    rng = np.random.default_rng(0)
    x = ef.constant(rng.standard_normal((8, 5)))
    w = ef.Variable(rng.standard_normal((5, 3)))
    b = ef.Variable(rng.standard_normal(3))

    def step():
        with ef.GradientTape() as tape:
            loss = ef.reduce_mean(ef.tanh(x @ w + b) ** 2)
        return [g.numpy() for g in tape.gradient(loss, [w, b])]
    return step


@case
def watched_intermediate_and_two_targets():
    x = ef.constant(np.linspace(-1.0, 1.0, 6).reshape(2, 3))

    def step():
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.sin(x) * 2.0
            tape.watch(y)
            z = ef.reduce_sum(y * y)
            u = ef.reduce_max(ef.exp(x), axis=1)
        gx, gy = tape.gradient([z, u], [x, y])
        return [gx.numpy(), gy.numpy()]
    return step


@case
def multi_output_and_unconnected():
    x = ef.constant(np.arange(12.0).reshape(3, 4) / 7.0)
    other = ef.constant(np.ones(4))

    def step():
        with ef.GradientTape() as tape:
            tape.watch([x, other])
            a, b = ef.split(x, 2, axis=1)
            loss = ef.reduce_sum(a * ef.sigmoid(b))
        gx, go = tape.gradient(loss, [x, other])
        return [gx.numpy(), go]
    return step


@case
def output_gradients_as_graph_inputs():
    # Cotangents given by the caller are inputs of the compiled backward, not constants:
    # each step passes a different one.
    rng = np.random.default_rng(3)
    x = ef.constant(rng.standard_normal((4, 3)))
    seeds = iter([ef.constant(rng.standard_normal((4, 3))) for _ in range(8)])

    def step():
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.tanh(x) * x
        return [tape.gradient(y, x, output_gradients=next(seeds)).numpy()]
    return step


@case
def jacobian_rows():
    x = ef.constant(np.array([0.3, -0.8, 1.2]))

    def step():
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.sin(x) * ef.reduce_sum(x * x)
        return [tape.jacobian(y, x).numpy()]
    return step


@pytest.mark.parametrize("make", CASES, ids=[c.__name__ for c in CASES])
def test_replay_matches_eager(make):
    eager = _grads(make(), replay=False)
    replayed = _grads(make(), replay=True)
    for step_eager, step_replayed in zip(eager, replayed):
        for e, r in zip(step_eager, step_replayed):
            if e is None:
                assert r is None
            else:
                np.testing.assert_array_equal(r, e)


def test_structures_are_compiled_on_second_sighting_only():
    x = ef.constant(np.array([0.25, 0.5, 0.75]))
    calls = []
    saved = tape_replay._compiler

    def counting(*args):
        calls.append(1)
        return saved(*args)

    tape_replay.set_backward_compiler(counting)
    tape_replay._COMPILED.clear()
    tape_replay._SEEN.clear()
    try:
        for _ in range(5):
            with ef.GradientTape() as tape:
                tape.watch(x)
                y = ef.reduce_sum(ef.cos(x) * x)
            tape.gradient(y, x)
    finally:
        tape_replay.set_backward_compiler(saved)
    assert len(calls) == 1


def test_jacobian_rows_replay_a_compiled_backward():
    tape_replay._COMPILED.clear()
    tape_replay._SEEN.clear()
    x = ef.constant(np.linspace(-1.0, 1.0, 5))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.exp(x) * x
    jac = tape.jacobian(y, x).numpy()
    np.testing.assert_allclose(jac, np.diag(np.exp(x.numpy()) * (1.0 + x.numpy())),
                               rtol=1e-12, atol=1e-15)
    assert any(key[-1] == "seeded" for key in tape_replay._COMPILED)
