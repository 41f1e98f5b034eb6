"""Several Python threads using one function, model or variable at once.

The switch interval is set to a microsecond so that threads interleave between almost every
bytecode: races that a normal interval hides for hours show up in a few calls. Every case
runs 8 threads x 200 calls and is repeated 10 times; each must end with no exception, no
lost update, and results equal to the single-threaded ones.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import eagerflow as ef

THREADS = 8
CALLS = 200
REPEATS = 10


@pytest.fixture(autouse=True)
def _fast_switching():
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


def _run_threads(work, threads=THREADS):
    """Runs ``work(thread_index)`` on ``threads`` threads started together; returns the
    exceptions they raised (as repr strings) and the values they returned."""
    start = threading.Barrier(threads)
    errors, results = [], [None] * threads

    def body(i):
        try:
            start.wait()
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - every failure is reported
            errors.append("%s: %r" % (type(exc).__name__, exc))

    pool = [threading.Thread(target=body, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in pool), "a thread hung"
    return errors, results


@pytest.mark.parametrize("repeat", range(REPEATS))
def test_function_first_call_taped_from_many_threads(repeat):
    # Each repeat makes a fresh @function, so every thread races on its first taped call:
    # the trace and the lazily built gradient graphs.
    w = ef.Variable(np.arange(3.0, dtype=np.float32) + 1.0)
    traces = []

    @ef.function
    def loss(x):
        traces.append(1)
        return ef.reduce_sum(ef.tanh(x * w))

    xs = [ef.constant(np.full((3,), 0.1 * (i + 1), np.float32)) for i in range(THREADS)]

    def expected(x):
        z = x.numpy() * w.numpy()
        return np.tanh(z).sum(), (1 - np.tanh(z) ** 2) * x.numpy()

    def work(i):
        out = []
        for _ in range(CALLS // 10):  # taped calls are the slow ones; 20 per thread
            with ef.GradientTape() as tape:
                y = loss(xs[i])
            out.append((float(y), tape.gradient(y, w).numpy()))
        for _ in range(CALLS - CALLS // 10):
            out.append((float(loss(xs[i])), None))
        return out

    errors, results = _run_threads(work)
    assert errors == []
    assert len(traces) == 1  # one trace, however many threads made the first call
    for i, out in enumerate(results):
        value, grad = expected(xs[i])
        assert len(out) == CALLS
        for y, g in out:
            np.testing.assert_allclose(y, value, rtol=1e-6)
            if g is not None:
                np.testing.assert_allclose(g, grad, rtol=1e-5)


@pytest.mark.parametrize("repeat", range(REPEATS))
def test_tapes_on_many_threads(repeat):
    # Each thread runs its own tapes (tapes are per thread) on shared variables.
    w = ef.Variable([[1.0, 2.0], [3.0, 4.0]])

    def work(i):
        x = ef.constant([[float(i), 1.0]])
        grads = []
        for _ in range(CALLS // 4):
            with ef.GradientTape() as tape:
                y = ef.reduce_sum(ef.matmul(x, w) ** 2)
            grads.append(tape.gradient(y, w).numpy())
        return x.numpy(), grads

    errors, results = _run_threads(work)
    assert errors == []
    for x, grads in results:
        expected = 2 * x.T @ (x @ w.numpy())
        for g in grads:
            np.testing.assert_allclose(g, expected, rtol=1e-6)


@pytest.mark.parametrize("repeat", range(REPEATS))
def test_predict_from_many_threads(repeat):
    model = ef.keras.Sequential([ef.keras.layers.Dense(4, activation="relu"),
                                 ef.keras.layers.Dense(2)])
    data = np.random.default_rng(repeat).standard_normal((THREADS, 3, 5)).astype(np.float32)
    model(data[0])
    expected = [model(d).numpy() for d in data]

    def work(i):
        return [model.predict(data[i], verbose=0) for _ in range(CALLS // 8)]

    errors, results = _run_threads(work)
    assert errors == []
    for i, outs in enumerate(results):
        for out in outs:
            np.testing.assert_allclose(out, expected[i], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("repeat", range(REPEATS))
@pytest.mark.parametrize("mode", ["eager", "traced"])
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_assign_add_from_many_threads_loses_nothing(repeat, mode, dtype):
    v = ef.Variable(ef.zeros([], dtype))
    m = ef.Variable(ef.zeros([4], dtype))

    @ef.function
    def step():
        v.assign_add(ef.ones([], dtype))
        m.assign_sub(ef.ones([4], dtype))

    def eager_step():
        v.assign_add(ef.ones([], dtype))
        m.assign_sub(ef.ones([4], dtype))

    run = step if mode == "traced" else eager_step

    def work(i):
        for _ in range(CALLS):
            run()

    errors, _ = _run_threads(work)
    assert errors == []
    assert v.numpy() == THREADS * CALLS
    np.testing.assert_array_equal(m.numpy(), np.full(4, -THREADS * CALLS))


def test_assign_and_assign_add_interleave_atomically():
    # Half the threads add with assign_add, half with assign_sub(-1), while plain assigns
    # hit another variable: every one of the 8 x 200 increments must land.
    v = ef.Variable(0, dtype=ef.int64)
    hits = ef.Variable(0, dtype=ef.int64)

    def work(i):
        for _ in range(CALLS):
            if i % 2:
                v.assign_add(1)
            else:
                hits.assign(7)  # plain assigns on another variable at the same time
                v.assign_sub(-1)

    errors, _ = _run_threads(work)
    assert errors == []
    assert int(v.numpy()) == THREADS * CALLS
    assert int(hits.numpy()) == 7
