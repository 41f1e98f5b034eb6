"""Kernels on several threads compute exactly what one thread computes, every run.

Covers the block runner itself, the pooling kernels and the im2col copy (split over the
batch), and fused elementwise regions in @function (split over rows, results written into
a donated variable buffer or a fresh array).
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.backend import cpu_jit, cpu_threads
from eagerflow.ops.nn import conv_kernels as K
from eagerflow.ops.nn import pool_ops as P
from eagerflow.ops.dispatch import execute

RNG = np.random.default_rng(11)


@pytest.fixture
def threads():
    """Sets the thread count for one test and restores the default after it."""
    yield cpu_threads.set_threads
    cpu_threads.set_threads(0)


@pytest.fixture
def splits(monkeypatch):
    """Records, per run_blocks call, whether it split the work over threads."""
    seen = []
    real = cpu_threads.run_blocks

    def recording(fn, n, elements, min_elements=cpu_threads.MIN_ELEMENTS, xp=None):
        seen.append(cpu_threads.threads() > 1 and n > 1 and elements >= min_elements
                    and (xp is None or cpu_threads.is_numpy(xp)))
        real(fn, n, elements, min_elements, xp)

    monkeypatch.setattr(cpu_threads, "run_blocks", recording)
    return seen


def test_blocks_cover_the_range_in_order():
    for n in (0, 1, 5, 7, 64):
        for parts in (1, 2, 3, 8):
            ranges = cpu_threads.blocks(n, parts)
            flat = [i for lo, hi in ranges for i in range(lo, hi)]
            assert flat == list(range(n))
            sizes = [hi - lo for lo, hi in ranges]
            assert max(sizes) - min(sizes) <= 1


def test_run_blocks_threads_and_errors(threads):
    threads(3)
    seen = []
    cpu_threads.run_blocks(lambda lo, hi: seen.append((lo, hi)), 9, elements=1 << 20)
    assert [i for lo, hi in sorted(seen) for i in range(lo, hi)] == list(range(9))
    assert len(seen) > 1
    seen.clear()
    cpu_threads.run_blocks(lambda lo, hi: seen.append((lo, hi)), 9, elements=10)
    assert seen == [(0, 9)]          # small work stays on the calling thread

    def fail(lo, hi):
        if lo:
            raise ValueError("block %d" % lo)

    with pytest.raises(ValueError, match="block"):
        cpu_threads.run_blocks(fail, 9, elements=1 << 20)


def test_caller_takes_over_when_workers_do_not_run(threads, monkeypatch):
    # Workers that never get a core (a loaded machine): the calling thread computes every
    # chunk itself and returns; it waits only for chunks a worker has started.
    class Stalled:
        def submit(self, fn):
            return None

    threads(2)
    monkeypatch.setattr(cpu_threads, "_executor", lambda workers: Stalled())
    x = np.arange(200000.0)
    out = np.empty_like(x)

    def block(lo, hi):
        np.multiply(x[lo:hi], 3.0, out=out[lo:hi])

    cpu_threads.run_blocks(block, len(x), elements=len(x))
    np.testing.assert_array_equal(out, x * 3.0)


def _run_all(fn, counts=(1, 2, 3)):
    outs = []
    for n in counts:
        cpu_threads.set_threads(n)
        outs.append(fn())
        outs.append(fn())                # run to run
    return outs


POOLS = [P._attrs(2, 2), P._attrs(2, 3, 2, "SAME"), P._attrs(2, 3, 1, "SAME", "NCHW")]


@pytest.mark.parametrize("attrs", POOLS)
def test_pool_kernels_equal_on_any_thread_count(threads, splits, attrs, monkeypatch):
    from eagerflow.ops.nn import pool_kernels

    # These inputs are below the pooling kernels' own threshold for splitting.
    monkeypatch.setattr(pool_kernels, "POOL_MIN_ELEMENTS", cpu_threads.MIN_ELEMENTS)
    monkeypatch.setattr(pool_kernels, "JIT_MIN_ELEMENTS", cpu_threads.MIN_ELEMENTS)
    shape = (6, 40, 40, 24) if attrs["data_format"] == "NHWC" else (6, 24, 40, 40)
    x = np.maximum(RNG.standard_normal(shape), 0).astype(np.float32)   # ties at zero
    y = execute(P.MAX_POOL, (ef.constant(x),), attrs).numpy()
    g = RNG.standard_normal(y.shape).astype(np.float32)
    calls = [(P.MAX_POOL, (x,), attrs), (P.AVG_POOL, (x,), attrs),
             (P.MAX_POOL_GRAD, (x, g), attrs), (P.MAX_POOL_GRAD_WITH_OUTPUT, (x, y, g), attrs),
             (P.MAX_POOL_GRAD_GRAD, (x, x), attrs),
             (P.AVG_POOL_GRAD, (g,), dict(attrs, input_shape=shape))]
    for prim, args, at in calls:
        outs = _run_all(lambda p=prim, xs=args, at=at: execute(
            p, tuple(ef.constant(a) for a in xs), at).numpy())
        for o in outs[1:]:
            np.testing.assert_array_equal(o, outs[0], err_msg=prim.name)
        # The filter gradient is GEMMs over blocks of examples on numpy's BLAS threads.
        assert any(splits) or prim is K.CONV_BACKPROP_FILTER, prim.name
        splits.clear()
        if prim is P.MAX_POOL_GRAD:
            np.testing.assert_allclose(outs[0], P.MAX_POOL_GRAD.reference(x, g, **at),
                                       rtol=1e-6, atol=1e-6)


def test_conv_kernels_equal_on_any_thread_count(threads, splits, monkeypatch):
    # The compiled im2col splits only from COLUMN_THREADS_MIN elements: lowered, so that
    # these small inputs split too.
    monkeypatch.setattr(K, "COLUMN_THREADS_MIN", cpu_threads.MIN_ELEMENTS)
    x = RNG.standard_normal((8, 30, 30, 16)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 16, 8)).astype(np.float32)
    wd = RNG.standard_normal((3, 3, 16, 1)).astype(np.float32)   # multiplier 1
    a = K._attrs(2, 1, 1, "SAME", None)
    a2 = K._attrs(2, 2, 1, "SAME", None)
    dy = RNG.standard_normal((8, 30, 30, 8)).astype(np.float32)
    dy2 = RNG.standard_normal((8, 15, 15, 8)).astype(np.float32)
    dyd = RNG.standard_normal((8, 30, 30, 16)).astype(np.float32)
    for prim, args, at in [(K.CONV, (x, w), a),
                           (K.CONV_BACKPROP_FILTER, (x, dy), dict(a, filter_shape=w.shape)),
                           (K.CONV_BACKPROP_INPUT, (dy2, w), dict(a2, input_shape=x.shape)),
                           (K.DEPTHWISE_CONV, (x, wd), a),
                           (K.DEPTHWISE_BACKPROP_INPUT, (dyd, wd),
                            dict(a, input_shape=x.shape))]:
        outs = _run_all(lambda p=prim, xs=args, at=at: execute(
            p, tuple(ef.constant(v) for v in xs), at).numpy())
        for o in outs[1:]:
            np.testing.assert_array_equal(o, outs[0], err_msg=prim.name)
        # The filter gradient is GEMMs over blocks of examples on numpy's BLAS threads, and
        # so is the compiled input gradient (each block's scatter on the calling thread).
        in_blocks = prim is K.CONV_BACKPROP_FILTER or (
            prim is K.CONV_BACKPROP_INPUT and cpu_jit.wanted(dy2.size * 9 * 2))
        assert any(splits) or in_blocks, prim.name
        splits.clear()


def test_fused_regions_equal_on_any_thread_count_and_eager(threads, splits):
    # Above FUSED_MIN_ELEMENTS, so the fused region splits across threads.
    x = ef.constant(RNG.standard_normal((1100, 1000)).astype(np.float32))
    b = ef.constant(RNG.standard_normal(1000).astype(np.float32))
    col = ef.constant(RNG.standard_normal((1100, 1)).astype(np.float32))

    def f(x):
        return ef.tanh(ef.nn.relu(x * 2.0 + b) - col) * x

    traced = ef.function(f)
    outs = _run_all(lambda: traced(x).numpy())
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    np.testing.assert_allclose(outs[0], f(x).numpy(), rtol=1e-6, atol=1e-6)
    assert any(splits)
    # One leading row: the split goes along the next axis.
    row = ef.constant(RNG.standard_normal((1, 1200000)).astype(np.float32))
    traced_row = ef.function(lambda x: ef.tanh(x * 2.0 + 1.0) * x)
    outs = _run_all(lambda: traced_row(row).numpy())
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


def test_many_pass_fused_regions_split_from_less_work(threads, splits):
    # Splitting goes by work (elements times sub-ops): a region of 13 sub-ops over [1024,
    # 512] (half a million elements) splits, with the one-thread bits; a two-op region of
    # that size stays on one thread.
    assert cpu_threads.fused_min_elements(13) < 1024 * 512 < cpu_threads.fused_min_elements(2)
    x = ef.constant(RNG.standard_normal((1024, 512)).astype(np.float32))

    def many(x):
        y = x
        for k in range(6):
            y = ef.tanh(y * (0.5 + k)) + x
        return y * x

    traced = ef.function(many)
    outs = _run_all(lambda: traced(x).numpy())
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    np.testing.assert_allclose(outs[0], many(x).numpy(), rtol=1e-5, atol=1e-6)
    assert any(splits)
    splits.clear()
    small = ef.function(lambda x: x * 2.0 + 1.0)
    outs = _run_all(lambda: small(x).numpy())
    assert not any(splits)


def test_variable_updates_in_function_use_the_cores(threads):
    start = RNG.standard_normal((1100, 1000)).astype(np.float32)
    grad = ef.constant(RNG.standard_normal((1100, 1000)).astype(np.float32))

    def run(n):
        cpu_threads.set_threads(n)
        v = ef.Variable(start)
        m = ef.Variable(np.zeros_like(start))

        @ef.function
        def step(g):
            m.assign(0.9 * m + 0.1 * g)
            v.assign_sub(0.01 * m / (ef.sqrt(ef.abs(m)) + 1e-7))

        for _ in range(3):
            step(grad)
        return v.numpy(), m.numpy()

    one, two = run(1), run(2)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])
    # Against numpy.
    m = np.zeros_like(start)
    v = start.copy()
    g = grad.numpy()
    for _ in range(3):
        m = np.float32(0.9) * m + np.float32(0.1) * g
        v = v - np.float32(0.01) * m / (np.sqrt(np.abs(m)) + np.float32(1e-7))
    np.testing.assert_allclose(two[0], v, rtol=1e-5, atol=1e-6)


def test_config_threading_sets_the_kernel_threads(threads):
    ef.config.threading.set_intra_op_parallelism_threads(1)
    assert cpu_threads.threads() == 1
    assert ef.config.threading.get_intra_op_parallelism_threads() == 1
    ef.config.threading.set_intra_op_parallelism_threads(0)
    assert cpu_threads.threads() >= 1
