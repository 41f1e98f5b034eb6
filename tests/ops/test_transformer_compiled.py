"""The GELU kernels' compiled loops (numba, through backend.cpu_jit) against their numpy
passes.

The loops compute the arithmetic between numpy's transcendental passes in the passes'
order and precision, so every result must be the numpy kernel's bits: both forms, forward
and gradient, float32 and float64, infinities, NaN, -0.0, magnitudes where tanh saturates
and ``x**2`` overflows, blocks cut mid-array, on one thread and on two. The registry sweeps
of the GELU primitives run again with every input large enough for the compiled loops.
"""

import numpy as np
import pytest

pytest.importorskip("numba")

from eagerflow.backend import cpu_jit, cpu_threads, numpy_backend  # noqa: E402
from eagerflow.ops.nn import gelu_kernels as GK  # noqa: E402

from tests import test_registry_sweep as sweep  # noqa: E402

RNG = np.random.default_rng(18)
DTYPES = (np.float32, np.float64)
FORMS = (True, False)
XP = numpy_backend() if callable(numpy_backend) else numpy_backend



def _both(fn):
    """``fn()`` with the numpy passes, then with the compiled loops."""
    cpu_jit.set_enabled(False)
    try:
        reference = fn()
    finally:
        cpu_jit.set_enabled(True)
    return reference, fn()


def _same_bits(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, what
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8), err_msg=what)


def _specials(dtype):
    big = np.finfo(dtype).max
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 5.0, -5.0, 9.0,
                     -9.0, 30.0, -30.0, 1e10, -1e10, 1e20, -1e20, big, -big,
                     np.sqrt(big), -np.sqrt(big)], dtype)


# (shape, scale): odd sizes, a size past one block of the numpy kernel (BLOCK_BYTES of
# float32 is 65536 elements), and a spread of magnitudes.
SHAPES = [((1,), 1.0), ((7,), 3.0), ((3, 5, 11), 2.0), ((1024, 64), 4.0),
          ((3, 70001), 3.0), ((257, 513), 30.0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", FORMS)
@pytest.mark.parametrize("shape,scale", SHAPES)
def test_compiled_loops_give_the_numpy_bits(compiled_kernels, dtype, approximate, shape, scale):
    x = (RNG.standard_normal(shape) * scale).astype(dtype)
    g = RNG.standard_normal(shape).astype(dtype)
    for name, fn in (("forward", lambda: GK.forward(XP, x, approximate)),
                     ("backward", lambda: GK.backward(XP, g, x, approximate))):
        ref, out = _both(fn)
        _same_bits(out, ref, "%s %s %s" % (name, dtype.__name__, approximate))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", FORMS)
def test_infinities_nan_and_large_magnitudes(compiled_kernels, dtype, approximate):
    x = np.concatenate([_specials(dtype), (RNG.standard_normal(300) * 1e3).astype(dtype)])
    g = np.concatenate([np.ones(len(_specials(dtype)), dtype), _specials(dtype)[::-1],
                        RNG.standard_normal(300 - len(_specials(dtype))).astype(dtype)])
    with np.errstate(all="ignore"):
        for fn in (lambda: GK.forward(XP, x, approximate),
                   lambda: GK.backward(XP, g, x, approximate)):
            ref, out = _both(fn)
            _same_bits(out, ref, "%s %s" % (dtype.__name__, approximate))
        y = GK.forward(XP, x, approximate)
    # gelu(-inf) is -inf * 0 (NaN) in both forms, as in the formula: the same bits.
    assert np.isnan(y[4]) and y[2] == np.inf and y[0] == 0.0


@pytest.mark.parametrize("approximate", FORMS)
def test_gradient_equals_a_float64_finite_difference(compiled_kernels, approximate):
    x = np.linspace(-6.0, 6.0, 4001)
    g = RNG.standard_normal(x.shape)
    h = 1e-6
    numeric = (GK.forward(XP, x + h, approximate) - GK.forward(XP, x - h, approximate)) / (2 * h)
    np.testing.assert_allclose(GK.backward(XP, g, x, approximate), g * numeric,
                               rtol=1e-7, atol=1e-8)
    assert GK._jit_constants([x]) is not None    # the compiled loops ran


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_and_two_threads_give_the_same_bits(dtype):
    # Large enough for the real thresholds: the compiled loops and the split over threads.
    x = (RNG.standard_normal((1024, 512)) * 3).astype(dtype)
    g = RNG.standard_normal(x.shape).astype(dtype)
    if GK._jit_constants([x]) is None:
        pytest.skip("the compiled loops do not run here")
    try:
        for approximate in FORMS:
            for fn in (lambda a=approximate: GK.forward(XP, x, a),
                       lambda a=approximate: GK.backward(XP, g, x, a)):
                outs = []
                for n in (1, 2, 2, 1, 2):
                    cpu_threads.set_threads(n)
                    outs.append(fn())
                for out in outs[1:]:
                    _same_bits(out, outs[0], "threads")
                cpu_jit.set_enabled(False)
                try:
                    _same_bits(fn(), outs[0], "numpy")
                finally:
                    cpu_jit.set_enabled(True)
    finally:
        cpu_threads.set_threads(0)


def test_numpy_runs_where_the_compiled_loops_do_not(compiled_kernels, monkeypatch):
    f32 = np.zeros(64, np.float32)
    assert GK._jit_constants([f32]) is not None
    assert GK._jit_constants([f32, np.zeros(64, np.float64)]) is None      # mixed dtypes
    for dtype in (np.float16, dtype_bf16()):
        if dtype is not None:
            assert GK._jit_constants([np.zeros(64, dtype)]) is None
    buf = np.zeros(1 + 64 * 4, np.uint8)[1:].view(np.float32)
    assert GK._jit_constants([buf]) is None                                # misaligned
    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 65)
    assert GK._jit_constants([f32]) is None
    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 0)
    cpu_jit.set_enabled(False)
    try:
        assert GK._jit_constants([f32]) is None
    finally:
        cpu_jit.set_enabled(True)
    # The half types still compute in float32 and round once.
    x = (RNG.standard_normal(1000) * 3).astype(np.float16)
    for approximate in FORMS:
        expect = GK.forward(XP, x.astype(np.float32), approximate).astype(np.float16)
        _same_bits(GK.forward(XP, x, approximate), expect, "float16")


def dtype_bf16():
    try:
        from eagerflow import dtypes
        return np.dtype(dtypes.bfloat16.as_numpy_dtype)
    except Exception:  # noqa: BLE001 - bfloat16 is optional here
        return None


@pytest.mark.parametrize("name", ["Gelu", "GeluGrad"])
def test_registry_sweeps_through_the_compiled_loops(compiled_kernels, name):
    sweep.test_reference_sweep(name)
    if name in sweep.DIFFERENTIABLE:
        sweep.test_gradient_sweep(name)
    sweep.test_bad_input_sweep(name)
