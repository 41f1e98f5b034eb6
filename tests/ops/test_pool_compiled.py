"""The compiled pooling kernels (numba, through backend.cpu_jit) against the numpy kernels.

Every compiled kernel must give the numpy kernel's bits: the first maximum in window order
(TF's tie rule), NaN windows, infinities, -0.0 against 0.0, padding that never wins, strides
larger than the window, overlapping windows added in tap order, a batch of one and an empty
batch, on one thread and on two. The registry sweeps of the pooling primitives run again
with every input large enough for the compiled forms.
"""

import numpy as np
import pytest

pytest.importorskip("numba")

import eagerflow as ef  # noqa: E402
from eagerflow import dtypes  # noqa: E402
from eagerflow.backend import cpu_jit, cpu_threads  # noqa: E402
from eagerflow.ops.dispatch import execute  # noqa: E402
from eagerflow.ops.nn import pool_kernels as PK  # noqa: E402
from eagerflow.ops.nn import pool_ops as P  # noqa: E402

from tests import test_registry_sweep as sweep  # noqa: E402

RNG = np.random.default_rng(18)
DTYPES = (np.float32, np.float64)
POOL_PRIMS = ["MaxPool", "MaxPoolGrad", "MaxPoolGradWithOutput", "MaxPoolGradGrad",
              "AvgPool", "AvgPoolGrad"]



def _attrs(nd, ksize, strides=None, padding="VALID", dilations=1):
    return P._attrs(nd, ksize, strides, padding, dilations=dilations)


CASES = [
    ((2, 6, 6, 8), _attrs(2, 2)),                         # windows tile the input
    ((2, 7, 7, 8), _attrs(2, 2)),                         # ... but for a last row and column
    ((3, 7, 6, 4), _attrs(2, 3, 2, "SAME")),              # overlapping, padded
    ((2, 6, 7, 5), _attrs(2, (2, 3), (1, 2), "SAME")),
    ((2, 5, 5, 2), _attrs(2, 3, 2, ((1, 0), (2, 1)))),    # explicit padding
    ((1, 7, 7, 3), _attrs(2, 2, 1, "SAME", dilations=2)),
    ((1, 4, 4, 2), _attrs(2, 3, 1, "SAME", dilations=3)),  # windows of padding only
    ((2, 9, 9, 3), _attrs(2, 2, 3)),                      # stride larger than the window
    ((2, 8, 8, 3), _attrs(2, 2, 3, "SAME")),
    ((2, 10, 10, 3), _attrs(2, 3, 1)),                    # up to 9 terms per element
    ((2, 6, 6, 37), _attrs(2, 3, 2, "SAME")),             # a channel count past the vectors
    ((1, 4, 4, 2), _attrs(2, 1, 1)),                      # one tap
    ((1, 1, 9, 3), _attrs(2, (1, 3), (1, 2), "SAME")),
    ((1, 5, 5, 3), _attrs(2, 2)),                         # batch of one
    ((0, 4, 4, 2), _attrs(2, 2, 2, "SAME")),              # empty batch
    ((2, 9, 3), _attrs(1, 3, 2, "SAME")),                 # 1D, run as 2D
    ((2, 8, 4), _attrs(1, 2)),
    ((1, 10, 2), _attrs(1, 2, 3, "VALID", dilations=2)),
]
IDS = ["%s-%s-%s-%s" % (s, a["ksize"], a["strides"], a["padding"]) for s, a in CASES]


def _inputs(shape, dtype, kind):
    """Inputs with ties, signed zeros, NaN and infinities, by ``kind``."""
    x = RNG.standard_normal(shape).astype(dtype)
    if kind == "ties":
        # Few distinct values, zeros of both signs: many windows with several maxima.
        x = RNG.integers(-2, 2, size=shape).astype(dtype)
        x[RNG.random(shape) < 0.3] = -0.0
    elif kind == "special":
        x[RNG.random(shape) < 0.15] = np.nan
        x[RNG.random(shape) < 0.05] = -np.nan        # a NaN with its sign bit set
        x[RNG.random(shape) < 0.1] = np.inf
        x[RNG.random(shape) < 0.1] = -np.inf
        x[RNG.random(shape) < 0.1] = -0.0
        x[RNG.random(shape) < 0.1] = 0.0
    elif kind == "neginf":
        # Windows of -inf only: the padding (also -inf) must not take their gradient.
        x[...] = -np.inf
        x[RNG.random(shape) < 0.2] = 1.0
    return x


def _grad(shape, dtype, kind):
    g = RNG.standard_normal(shape).astype(dtype)
    g[RNG.random(shape) < 0.1] = -0.0
    if kind == "special":
        g[RNG.random(shape) < 0.05] = np.nan
        g[RNG.random(shape) < 0.05] = -np.inf
    return g


def _both(kernel, *args, **attrs):
    """(numpy kernel's result, compiled kernel's result)."""
    cpu_jit.set_enabled(False)
    try:
        expected = kernel(np)(*args, **attrs)
    finally:
        cpu_jit.set_enabled(True)
    return expected, kernel(np)(*args, **attrs)


def _same_bits(got, expected, what):
    """Equal bits, -0.0 and infinities included; a NaN equals any NaN.

    Which NaN an addition of two NaNs returns depends on the order of its operands, which
    IEEE 754 leaves open and compilers swap (numpy's own vector loops as well), so sign
    and payload bits of NaNs are not compared.
    """
    assert got.shape == expected.shape and got.dtype == expected.dtype, what
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=what)
    np.testing.assert_array_equal(np.where(nan, 0, got).view(np.uint8),
                                  np.where(nan, 0, expected).view(np.uint8), err_msg=what)


def _uses_compiled(kern, shape, attrs):
    g = PK.geometry(shape, attrs)
    x = np.zeros(shape, np.float32)
    return PK._jit_plan(np, kern, g, attrs, x) is not None


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("kind", ["random", "ties", "special", "neginf"])
@pytest.mark.parametrize("shape,attrs", CASES, ids=IDS)
def test_compiled_kernels_give_numpy_bits(compiled_kernels, shape, attrs, kind, dtype):
    assert _uses_compiled(PK._JIT_MAX_POOL, shape, attrs)
    x = _inputs(shape, dtype, kind)
    expected, got = _both(PK.max_pool_kernel, x, **attrs)
    # The maximum selects one of its operands: the NaNs' bits are the same too.
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    pooled = expected
    for gkind in ("random", "special"):
        g = _grad(pooled.shape, dtype, gkind)
        for relu in (False, True):
            expected, got = _both(PK.max_pool_grad_kernel, x, g, relu=relu, **attrs)
            _same_bits(got, expected, "MaxPoolGrad relu=%s grad %s" % (relu, gkind))
        expected, got = _both(PK.max_pool_grad_with_output_kernel, x, pooled, g, **attrs)
        _same_bits(got, expected, "MaxPoolGradWithOutput grad %s" % gkind)
        if kind != "neginf":
            expected, got = _both(PK.avg_pool_grad_kernel, g, input_shape=shape, **attrs)
            _same_bits(got, expected, "AvgPoolGrad grad %s" % gkind)
    if kind != "neginf":
        expected, got = _both(PK.avg_pool_kernel, x, **attrs)
        _same_bits(got, expected, "AvgPool")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_compiled_gradients_match_the_reference(compiled_kernels, dtype):
    # Independent of the numpy kernels: the loop-per-window references of pool_ops.
    for shape, attrs in CASES:
        x = P._values(RNG, shape, dtypes.as_dtype(dtype))
        g = P._values(RNG, PK.geometry(shape, attrs).out_shape, dtypes.as_dtype(dtype))
        np.testing.assert_allclose(PK.max_pool_grad_kernel(np)(x, g, relu=True, **attrs),
                                   P._ref_max_pool_grad(x, g, relu=True, **attrs),
                                   rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(PK.avg_pool_grad_kernel(np)(g, input_shape=shape, **attrs),
                                   P._ref_avg_pool_grad(g, input_shape=shape, **attrs),
                                   rtol=1e-5, atol=1e-7)


def test_padding_never_takes_a_window_of_minus_infinity(compiled_kernels):
    x = np.full((1, 3, 3, 1), -np.inf, np.float32)
    attrs = _attrs(2, 3, 1, "SAME")
    g = np.ones((1, 3, 3, 1), np.float32)
    expected = P._ref_max_pool_grad(x, g, **attrs)
    for enabled in (False, True):
        cpu_jit.set_enabled(enabled)
        np.testing.assert_array_equal(PK.max_pool_grad_kernel(np)(x, g, **attrs), expected)
    cpu_jit.set_enabled(True)
    assert expected.sum() == 9.0        # every window's gradient stays in the input


def test_numpy_runs_where_the_compiled_forms_do_not(compiled_kernels, monkeypatch):
    a2, a3 = _attrs(2, 2), _attrs(3, 2)
    assert not _uses_compiled(PK._JIT_MAX_POOL, (1, 2, 4, 4), dict(a2, data_format="NCHW"))
    assert not _uses_compiled(PK._JIT_MAX_POOL, (1, 4, 4, 4, 2), a3)
    g = PK.geometry((1, 4, 4, 2), a2)
    for dtype in (np.float16, np.int32):
        assert PK._jit_plan(np, PK._JIT_MAX_POOL, g, a2, np.zeros((1, 4, 4, 2), dtype)) is None
    buf = np.zeros(1 + 32 * 4, np.uint8)[1:].view(np.float32).reshape(1, 4, 4, 2)
    assert PK._jit_plan(np, PK._JIT_MAX_POOL, g, a2, buf) is None      # misaligned
    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 33)
    assert not _uses_compiled(PK._JIT_MAX_POOL, (1, 4, 4, 2), a2)
    cpu_jit.set_enabled(False)
    assert not _uses_compiled(PK._JIT_MAX_POOL, (1, 40, 40, 2), a2)


def test_non_contiguous_inputs(compiled_kernels):
    x = np.ascontiguousarray(RNG.standard_normal((3, 8, 8, 4)).astype(np.float32)
                             .transpose(0, 2, 1, 3))[:, :, ::-1]
    attrs = _attrs(2, 3, 2, "SAME")
    expected, got = _both(PK.max_pool_kernel, x, **attrs)
    _same_bits(got, expected, "MaxPool")
    g = _grad(expected.shape, np.float32, "random")[::-1]
    expected, got = _both(PK.max_pool_grad_kernel, x, g, **attrs)
    _same_bits(got, expected, "MaxPoolGrad")


def test_read_only_inputs(compiled_kernels):
    # Constants' arrays may be read-only: the loops take them as they are.
    x = _inputs((2, 8, 8, 4), np.float64, "ties")
    attrs = _attrs(2, 3, 2, "SAME")
    pooled = PK.max_pool_kernel(np)(x, **attrs)
    g = _grad(pooled.shape, np.float64, "random")
    for a in (x, pooled, g):
        a.flags.writeable = False
    for kernel, args, at in [(PK.max_pool_kernel, (x,), attrs),
                             (PK.max_pool_grad_kernel, (x, g), dict(attrs, relu=True)),
                             (PK.max_pool_grad_with_output_kernel, (x, pooled, g), attrs),
                             (PK.avg_pool_kernel, (x,), attrs),
                             (PK.avg_pool_grad_kernel, (g,), dict(attrs, input_shape=x.shape))]:
        expected, got = _both(kernel, *args, **at)
        _same_bits(got, expected, kernel.__name__)


@pytest.mark.parametrize("shape,attrs", [((8, 12, 12, 16), _attrs(2, 2)),
                                         ((8, 11, 11, 16), _attrs(2, 3, 2, "SAME")),
                                         ((8, 12, 5), _attrs(1, 3, 1, "SAME"))])
def test_one_thread_and_two_give_the_same_bits(compiled_kernels, monkeypatch, shape, attrs):
    monkeypatch.setattr(PK, "JIT_MIN_ELEMENTS", 1)
    splits = []
    real = cpu_threads.run_blocks

    def recording(fn, n, elements, min_elements=cpu_threads.MIN_ELEMENTS, xp=None):
        splits.append(elements >= min_elements)
        return real(fn, n, elements, min_elements, xp)

    monkeypatch.setattr(cpu_threads, "run_blocks", recording)
    x = _inputs(shape, np.float32, "ties")
    pooled = PK.max_pool_kernel(np)(x, **attrs)
    g = _grad(pooled.shape, np.float32, "random")
    calls = [(PK.max_pool_kernel, (x,), attrs),
             (PK.max_pool_grad_kernel, (x, g), dict(attrs, relu=True)),
             (PK.max_pool_grad_with_output_kernel, (x, pooled, g), attrs),
             (PK.avg_pool_kernel, (x,), attrs),
             (PK.avg_pool_grad_kernel, (g,), dict(attrs, input_shape=shape))]
    try:
        for kernel, args, at in calls:
            outs = []
            for n in (1, 2, 2, 1, 2):
                cpu_threads.set_threads(n)
                outs.append(kernel(np)(*args, **at))
            for out in outs[1:]:
                _same_bits(out, outs[0], kernel.__name__)
    finally:
        cpu_threads.set_threads(0)
    assert all(splits)


@pytest.mark.parametrize("name", POOL_PRIMS)
def test_registry_sweeps_through_the_compiled_kernels(compiled_kernels, name):
    sweep.test_reference_sweep(name)
    if name in sweep.DIFFERENTIABLE:
        sweep.test_gradient_sweep(name)
    sweep.test_bad_input_sweep(name)


def test_pooling_in_a_function_equals_eager(compiled_kernels):
    x0 = ef.constant(RNG.standard_normal((4, 12, 12, 8)).astype(np.float32))

    def grads(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.nn.max_pool2d(ef.nn.relu(x), 2, 2, "VALID")
            z = ef.nn.avg_pool2d(x, 3, 2, "SAME")
            out = ef.reduce_sum(y * y) + ef.reduce_sum(z * z)
        return tape.gradient(out, x)

    np.testing.assert_array_equal(ef.function(grads)(x0).numpy(), grads(x0).numpy())
    cpu_jit.set_enabled(False)
    np.testing.assert_array_equal(grads(x0).numpy(), ef.function(grads)(x0).numpy())


def test_execute_uses_the_compiled_kernel(compiled_kernels, monkeypatch):
    calls = []
    real = PK._jit_max_pool
    monkeypatch.setattr(PK, "_jit_max_pool", lambda *a: (calls.append(1), real(*a))[1])
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    out = execute(P.MAX_POOL, (ef.constant(x),), _attrs(2, 2)).numpy()
    assert calls
    np.testing.assert_array_equal(out, P._ref_pool("max")(x, **_attrs(2, 2)))
