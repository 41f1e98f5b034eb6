"""Tests of the math family, eagerflow.ops.math: references, gradients (first and second
order), edge cases and error messages."""

from __future__ import annotations

import doctest
import math
import types

import numpy as np
import pytest
import scipy.special

import eagerflow as ef
from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.backend import numpy_backend
from eagerflow.framework import context
from eagerflow.ops.math import arithmetic
from eagerflow.ops import dispatch
from eagerflow.ops.math import binary_math, complex_math, special_math, unary_math
from eagerflow.ops import math as math_common
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue, Primitive
from eagerflow.ops.vjp import apply_vjp, saved_inputs
from eagerflow.testing import check_vjp
from eagerflow.ops import math as math_family
from tests.ops.family_view import family_view

# The math family as one namespace: its modules' names, __all__ and EXPORTS.
m = family_view(math_family, (unary_math, special_math, binary_math, complex_math),
                extra=(arithmetic,))

# Kernels may warn on values they then mask (xlogy at x == 0); eagerflow silences these.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

_ARITH = vars(arithmetic)
PRIMS = [v for k, v in vars(m).items()
         if isinstance(v, Primitive) and _ARITH.get(k) is not v]
DIFF_REAL = [p for p in PRIMS if p.differentiable and p.allows_dtype(np.dtype(np.float64))]
DIFF_COMPLEX = [
    m.COMPLEX_PRIM, m.SQRT, m.RSQRT, m.SQUARE, m.RECIPROCAL, m.EXP, m.EXPM1, m.LOG, m.LOG1P,
    m.SIGMOID, m.SIN, m.COS, m.TAN, m.ASIN, m.ACOS, m.ATAN, m.SINH, m.COSH, m.TANH, m.ASINH,
    m.ACOSH, m.ATANH, m.COMPLEX_ABS, m.REAL, m.IMAG, m.ANGLE, m.XLOGY, m.XLOG1PY, m.XDIVY,
    m.DIV_NO_NAN, m.MUL_NO_NAN]


def _ids(prims):
    return [p.name for p in prims]


def _sweep_dtypes(prim):
    if prim.sweep_dtypes:
        return prim.sweep_dtypes
    return [dt for dt in (d.float32, d.float64) if prim.allows_dtype(dt.np_dtype)]


def _aval(a):
    a = np.asarray(a)
    return AbstractValue(a.shape, d.from_numpy(a.dtype))


# ------------------------------------------------------------------- registry sweeps


def test_every_primitive_is_complete():
    assert len(PRIMS) > 50
    for prim in PRIMS:
        assert prim.family == "math", prim
        assert prim.reference is not None and prim.samples is not None, prim
        assert prim.shape_fn is not None, prim
        if prim.differentiable:
            assert "all" not in prim.saves, "%s must declare what its VJP reads" % prim


@pytest.mark.parametrize("prim", PRIMS, ids=_ids(PRIMS))
def test_matches_numpy_reference(prim):
    rng = np.random.default_rng(1)
    for dtype in _sweep_dtypes(prim):
        tol = 1e-5 if dtype in (d.float32, d.complex64) else 1e-12
        for args, attrs in prim.samples(rng, dtype):
            out = execute(prim, tuple(ef.constant(a) for a in args), attrs)
            expected = np.asarray(prim.reference(*args, **attrs))
            aval = prim.shape_fn(*[_aval(a) for a in args], **attrs)
            assert out.shape == expected.shape == aval.shape, (prim, dtype, args)
            assert out.dtype is aval.dtype, (prim, dtype)
            assert out.numpy().dtype == expected.dtype, (prim, dtype)
            np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol,
                                       equal_nan=True, err_msg="%s %s" % (prim, dtype))


@pytest.mark.parametrize("prim", [p for p in PRIMS if p.bad_samples],
                         ids=_ids([p for p in PRIMS if p.bad_samples]))
def test_bad_samples_raise(prim):
    for args, attrs, exc in prim.bad_samples(np.random.default_rng(0)):
        with pytest.raises(exc) as info:
            execute(prim, tuple(ef.constant(a) for a in args), attrs)
        assert prim.name in str(info.value)


@pytest.mark.parametrize("prim", DIFF_REAL, ids=_ids(DIFF_REAL))
def test_vjp_matches_finite_differences(prim):
    rng = np.random.default_rng(2)
    samples = prim.grad_samples(rng) if prim.grad_samples else prim.samples(rng, d.float64)
    for seed, (args, attrs) in enumerate(samples):
        check_vjp(prim, args, attrs, seed=seed)


def test_polygamma_vjp_in_x():
    rng = np.random.default_rng(3)
    for args, attrs in m.POLYGAMMA.samples(rng, d.float64):
        check_vjp(m.POLYGAMMA, args, attrs, wrt=(1,))


@pytest.mark.parametrize("prim", DIFF_COMPLEX, ids=_ids(DIFF_COMPLEX))
def test_complex_vjp_follows_tf_convention(prim):
    # check_vjp perturbs complex inputs in complex directions: grad = dL/dRe + i dL/dIm.
    rng = np.random.default_rng(4)
    dtype = d.float64 if prim is m.COMPLEX_PRIM else d.complex128  # float in, complex out
    for seed, (args, _) in enumerate(prim.samples(rng, dtype)):
        check_vjp(prim, args, seed=seed)


def test_complex_vjp_is_really_checked():
    # A rule missing the conjugate must fail the complex check (it passes for reals).
    z = (np.array([0.5 + 1.0j, -1.0 + 0.3j]),)
    rule = m.EXP.vjp
    m.EXP.set_vjp(lambda g, x, out: g * out, ("out",))
    try:
        with pytest.raises(AssertionError):
            check_vjp(m.EXP, z)
    finally:
        m.EXP.set_vjp(rule, ("out",))
    check_vjp(m.EXP, z)


def test_hot_ops_use_bare_ufuncs():
    # The eager fast path calls the kernel directly: no Python wrapper in between.
    for prim, ufunc in ((m.EXP, np.exp), (m.TANH, np.tanh), (m.SQRT, np.sqrt),
                        (m.MAXIMUM, np.maximum), (m.ABS, np.abs), (m.SQUARE, np.square)):
        assert prim.kernel(numpy_backend) is ufunc
        assert prim.fast


# ------------------------------------------------- a minimal tape for gradient tests


class _MiniTape:
    """Records op calls through dispatch's tape hook and runs them backwards.

    Only for these tests: enough reverse mode (with nesting, through one shared record
    list) to differentiate composites and gradient rules themselves.
    """

    def __init__(self):
        self.records = []
        self._ids = iter(range(10**9, 2 * 10**9))

    def watch(self, value):
        t = ef.constant(value)
        t._tid = next(self._ids)
        return t

    def _record(self, tapes, prim, inputs, attrs, result):
        outs = result if isinstance(result, tuple) else (result,)
        for o in outs:
            o._tid = next(self._ids)
        self.records.append((prim, tuple(inputs), dict(attrs), outs))

    def __enter__(self):
        self._saved = dispatch._tape_recorder
        dispatch.set_tape_recorder(self._record)
        context.state.tapes = (self,)
        context.state.refresh()
        return self

    def __exit__(self, *exc):
        context.state.tapes = ()
        context.state.refresh()
        dispatch.set_tape_recorder(self._saved)

    def gradient(self, target, sources, output_gradient):
        grads = {target._tid: output_gradient}
        for prim, inputs, attrs, outs in reversed(list(self.records)):
            cots = [grads.get(o._tid) for o in outs]
            if prim.vjp is None or all(c is None for c in cots):
                continue
            cot = cots[0] if prim.single else tuple(
                c if c is not None else arithmetic.zeros_like_t(o) for c, o in zip(cots, outs))
            saved_out = (outs[0] if prim.single else outs) if prim.saves_out else None
            in_grads = apply_vjp(prim, cot, saved_inputs(prim, inputs), saved_out, attrs,
                                 [tuple(t.shape) for t in inputs])
            for t, g in zip(inputs, in_grads):
                if g is not None and t._tid:
                    prev = grads.get(t._tid)
                    grads[t._tid] = g if prev is None else prev + g
        return [grads.get(s._tid) for s in sources]


def _grad(fn, *values, cotangent=None):
    with _MiniTape() as tape:
        xs = [tape.watch(v) for v in values]
        y = fn(*xs)
    u = np.ones(tuple(y.shape)) if cotangent is None else cotangent
    return [None if g is None else g.numpy() for g in tape.gradient(y, xs, ef.constant(u))]


def _first_order(prim, args, u):
    """The VJP of prim at args, as numpy arrays (no tape)."""
    inputs = tuple(ef.constant(a) for a in args)
    out = execute(prim, inputs)
    grads = apply_vjp(prim, ef.constant(u), saved_inputs(prim, inputs),
                      out if prim.saves_out else None, {}, [np.shape(a) for a in args])
    return [None if g is None else g.numpy() for g in grads]


SECOND_ORDER = [m.TANH, m.SIGMOID, m.LOG_SIGMOID, m.EXP, m.EXPM1, m.LOG, m.LOG1P, m.SQRT,
                m.RSQRT, m.SQUARE, m.RECIPROCAL, m.SIN, m.COS, m.TAN, m.ASIN, m.ACOS, m.ATAN,
                m.SINH, m.COSH, m.ASINH, m.ACOSH, m.ATANH, m.ERF, m.ERFC, m.ERFINV, m.LGAMMA,
                m.DIGAMMA, m.ABS, m.ATAN2, m.XLOGY, m.XLOG1PY, m.XDIVY, m.DIV_NO_NAN,
                m.MUL_NO_NAN, m.SQUARED_DIFFERENCE, m.MAXIMUM]


@pytest.mark.parametrize("prim", SECOND_ORDER, ids=_ids(SECOND_ORDER))
def test_second_derivative(prim):
    """Differentiates each gradient rule again, against finite differences of the rule."""
    rng = np.random.default_rng(6)
    args, _ = prim.samples(rng, d.float64)[2]  # a (2, 3) or broadcast (2, 3) sample
    out_shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    u = rng.standard_normal(out_shape)
    vs = [rng.standard_normal(np.shape(a)) for a in args]  # cotangents of the gradients
    ds = [rng.standard_normal(np.shape(a)) for a in args]  # directions of the inputs

    with _MiniTape() as tape:
        xs = [tape.watch(a) for a in args]
        out = execute(prim, tuple(xs))
        firsts = apply_vjp(prim, ef.constant(u), saved_inputs(prim, xs),
                           out if prim.saves_out else None, {}, [np.shape(a) for a in args])
        second = [np.zeros(np.shape(a)) for a in args]
        for g1, v in zip(firsts, vs):
            if g1 is None:
                continue
            for i, g2 in enumerate(tape.gradient(g1, xs, ef.constant(v))):
                if g2 is not None:
                    second[i] += g2.numpy()
    analytic = sum(float(np.sum(s * dv)) for s, dv in zip(second, ds))

    eps = 1e-5

    def phi(sign):
        shifted = [a + sign * eps * dv for a, dv in zip(args, ds)]
        return sum(float(np.sum(g * v)) for g, v in zip(_first_order(prim, shifted, u), vs)
                   if g is not None)

    numeric = (phi(1.0) - phi(-1.0)) / (2 * eps)
    assert abs(analytic - numeric) <= 1e-5 * max(1.0, abs(numeric)), (analytic, numeric)


def test_second_derivatives_with_gradient_tape():
    x = ef.constant([0.3, 1.7], ef.float64)
    xv = x.numpy()
    closed_forms = (
        (m.tanh, -2 * np.tanh(xv) * (1 - np.tanh(xv) ** 2)),
        (m.erf, -4 * xv / np.sqrt(np.pi) * np.exp(-xv * xv)),
        (m.lgamma, scipy.special.polygamma(1, xv)),
        (m.sqrt, -0.25 * xv ** -1.5),
    )
    for fn, expected in closed_forms:
        with ef.GradientTape() as outer:
            outer.watch(x)
            with ef.GradientTape() as inner:
                inner.watch(x)
                y = fn(x)
            dy = inner.gradient(y, x)
        np.testing.assert_allclose(outer.gradient(dy, x).numpy(), expected, rtol=1e-10,
                                   err_msg=fn.__name__)


# -------------------------------------------------------------------------- edge cases


def test_abs_int_float_complex():
    assert m.abs(ef.constant([-3, 4])).numpy().tolist() == [3, 4]
    out = m.abs(ef.constant(np.array([3 + 4j, -1j], np.complex64)))
    assert out.dtype is d.float32
    np.testing.assert_allclose(out.numpy(), [5.0, 1.0])
    assert abs(ef.constant([-1.5])).numpy().tolist() == [1.5]  # the Python operator
    assert m.abs(-2.5).numpy() == 2.5
    assert m.abs(1 - 1j).dtype is d.float64
    g = _grad(m.abs, np.array([-2.0, 0.0, 3.0]))[0]
    np.testing.assert_array_equal(g, [-1.0, 0.0, 1.0])


def test_unsupported_dtypes_name_the_op():
    with pytest.raises(errors.InvalidArgumentError, match="Sqrt.*int32"):
        m.sqrt(ef.constant([4]))
    with pytest.raises(errors.InvalidArgumentError, match="Abs.*uint8"):
        m.abs(ef.constant(np.array([1], np.uint8)))
    with pytest.raises(errors.InvalidArgumentError, match="same dtype"):
        m.maximum(ef.constant([1.0]), ef.constant(np.array([1.0])))
    with pytest.raises(errors.InvalidArgumentError, match="IsNan"):
        m.is_nan(ef.constant([1]))


def test_sign():
    np.testing.assert_array_equal(m.sign(ef.constant([-2.0, 0.0, 5.0])).numpy(), [-1, 0, 1])
    assert m.sign(ef.constant([-7, 0, 9])).numpy().tolist() == [-1, 0, 1]
    out = m.sign(ef.constant([3 + 4j, 0j])).numpy()
    np.testing.assert_allclose(out, [0.6 + 0.8j, 0])
    assert _grad(m.sign, np.array([1.0, -2.0]))[0].tolist() == [0.0, 0.0]


def test_sigmoid_and_log_sigmoid_extremes():
    x = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0])
    for dt in (np.float32, np.float64):
        s = m.sigmoid(ef.constant(x.astype(dt))).numpy()
        assert s.dtype == dt and np.all(np.isfinite(s))
        np.testing.assert_allclose(s, scipy.special.expit(x.astype(dt)), rtol=1e-6)
        ls = m.log_sigmoid(ef.constant(x.astype(dt))).numpy()
        assert np.all(np.isfinite(ls))
        np.testing.assert_allclose(ls, scipy.special.log_expit(x), rtol=1e-6)
    g = _grad(m.log_sigmoid, np.array([-800.0, 800.0]))[0]
    np.testing.assert_allclose(g, [1.0, 0.0])


def test_half_precision_special_functions_keep_dtype():
    import ml_dtypes

    for dt in (np.float16, ml_dtypes.bfloat16):
        x = np.array([0.25, 0.5], dt)
        for fn, ref in ((m.erf, scipy.special.erf), (m.lgamma, scipy.special.gammaln),
                        (m.digamma, scipy.special.digamma), (m.erfinv, scipy.special.erfinv),
                        (m.sigmoid, scipy.special.expit), (m.exp, np.exp)):
            out = fn(ef.constant(x)).numpy()
            assert out.dtype == np.dtype(dt), (fn, dt)
            np.testing.assert_allclose(out.astype(np.float64), ref(x.astype(np.float64)),
                                       rtol=1e-2)


def test_round_is_bankers_and_keeps_integers():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4999, 2.6])
    np.testing.assert_array_equal(m.round(ef.constant(x)).numpy(), [-2, -2, -0, 0, 2, 2, 0, 3])
    np.testing.assert_array_equal(m.rint(ef.constant(x)).numpy(), np.rint(x))
    ints = m.round(ef.constant([3, -4]))
    assert ints.dtype is d.int32 and ints.numpy().tolist() == [3, -4]
    assert m.ceil(ef.constant([1.1, -1.1])).numpy().tolist() == [2.0, -1.0]
    assert _grad(m.round, np.array([1.2]))[0] is None  # no gradient, as in TF


def test_non_finite_predicates():
    x = ef.constant([1.0, np.nan, np.inf, -np.inf])
    assert m.is_nan(x).numpy().tolist() == [False, True, False, False]
    assert m.is_inf(x).numpy().tolist() == [False, False, True, True]
    assert m.is_finite(x).numpy().tolist() == [True, False, False, False]
    assert m.is_nan(x).dtype is d.bool


def test_maximum_minimum_ties_and_integers():
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, 5.0, 0.0])
    gx, gy = _grad(m.maximum, x, y)
    assert gx.tolist() == [1.0, 0.0, 1.0] and gy.tolist() == [0.0, 1.0, 0.0]
    gx, gy = _grad(m.minimum, x, y)
    assert gx.tolist() == [1.0, 1.0, 0.0] and gy.tolist() == [0.0, 0.0, 1.0]
    # Broadcast scalar bound: its gradient is summed back to a scalar.
    gx, gy = _grad(m.maximum, x, np.array(2.0))
    assert gx.tolist() == [0.0, 1.0, 1.0] and gy.shape == () and gy == 1.0
    big = np.array([2**40, -5], np.int64)
    assert m.maximum(ef.constant(big), ef.constant(np.array([0, 0], np.int64))).numpy().tolist() \
        == [2**40, 0]
    assert np.isnan(m.maximum(ef.constant([np.nan]), 1.0).numpy()[0])


def test_clip_by_value_values_and_gradients():
    t = np.array([-2.0, -1.0, 0.5, 1.0, 3.0])
    out = m.clip_by_value(ef.constant(t), -1.0, 1.0)
    assert out.numpy().tolist() == [-1.0, -1.0, 0.5, 1.0, 1.0]
    gt, glo, ghi = _grad(m.clip_by_value, t, np.array(-1.0), np.array(1.0))
    assert gt.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]  # flows within the bounds, inclusive
    assert glo == 1.0 and ghi == 1.0
    per_elem = m.clip_by_value(ef.constant([[5.0, -5.0]]), ef.constant([0.0, -1.0]), 2.0)
    assert per_elem.numpy().tolist() == [[2.0, -1.0]]
    ints = m.clip_by_value(ef.constant([-5, 5, 0]), -1, 1)
    assert ints.dtype is d.int32 and ints.numpy().tolist() == [-1, 1, 0]
    with pytest.raises(errors.InvalidArgumentError, match="clip_by_value.*broadcast"):
        m.clip_by_value(ef.constant([1.0, 2.0]), ef.constant([[0.0], [1.0]]), 3.0)
    with pytest.raises(errors.InvalidArgumentError):
        m.clip_by_value(ef.constant([1, 2]), 0.5, 3.0)


def test_add_n():
    a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    out = m.add_n([ef.constant(a), ef.constant(b), ef.constant(a)])
    np.testing.assert_array_equal(out.numpy(), 2 * a + b)
    single = ef.constant([1.0])
    assert m.add_n([single]) is single
    assert m.add_n((ef.constant(1), 2, 3)).numpy() == 6
    assert m.add_n([ef.constant(np.zeros((0, 2)))] * 3).shape == (0, 2)
    assert m.add_n(iter([ef.constant(1.0), ef.constant(2.0)])).numpy() == 3.0
    with pytest.raises(errors.InvalidArgumentError, match="non-empty"):
        m.add_n([])
    with pytest.raises(ValueError):  # InvalidArgumentError is a ValueError, as TF raises
        m.add_n(None)
    with pytest.raises(errors.InvalidArgumentError, match=r"input 1 has shape \[2\]"):
        m.add_n([ef.constant([1.0, 2.0, 3.0]), ef.constant([1.0, 2.0])])
    with pytest.raises(errors.InvalidArgumentError, match="same dtype"):
        m.add_n([ef.constant([1.0]), ef.constant([1])])
    grads = _grad(lambda x, y, z: m.add_n([x, y, z]), a, b, a)
    for g in grads:
        np.testing.assert_array_equal(g, np.ones((2, 3)))


def test_safe_divisions():
    x = ef.constant([1.0, np.inf, np.nan, 6.0])
    y = ef.constant([0.0, 0.0, 0.0, 3.0])
    assert m.divide_no_nan(x, y).numpy().tolist() == [0.0, 0.0, 0.0, 2.0]
    assert m.multiply_no_nan(x, y).numpy().tolist() == [0.0, 0.0, 0.0, 18.0]
    assert m.reciprocal_no_nan(ef.constant([0.0, 4.0])).numpy().tolist() == [0.0, 0.25]
    gx, gy = _grad(m.divide_no_nan, np.array([1.0, 6.0]), np.array([0.0, 3.0]))
    assert gx.tolist() == [0.0, 1 / 3] and gy[0] == 0.0
    np.testing.assert_allclose(gy[1], -6.0 / 9.0)
    zero_x = ef.constant([0.0, 0.0, 2.0])
    assert m.xlogy(zero_x, ef.constant([0.0, np.nan, 1.0])).numpy().tolist() == [0.0, 0.0, 0.0]
    assert m.xdivy(zero_x, ef.constant([0.0, 0.0, 4.0])).numpy().tolist() == [0.0, 0.0, 0.5]
    assert m.xlog1py(zero_x, ef.constant([-1.0, -1.0, 0.0])).numpy().tolist() == [0, 0, 0]
    gx, gy = _grad(m.xlogy, np.array([0.0, 2.0]), np.array([0.0, 4.0]))
    assert gx[0] == 0.0 and gy[0] == 0.0  # no NaN from the masked element
    np.testing.assert_allclose([gx[1], gy[1]], [np.log(4.0), 0.5])


def test_truncating_division():
    x = np.array([-7, 7, -7, 7, -8, 0], np.int64)
    y = np.array([2, 2, -2, -2, 2, 3], np.int64)
    assert m.truncatediv(ef.constant(x), ef.constant(y)).numpy().tolist() == [-3, 3, 3, -3, -4, 0]
    assert m.truncatemod(ef.constant(x), ef.constant(y)).numpy().tolist() == [-1, 1, -1, 1, 0, 0]
    big = np.array([2**62 + 1, -(2**62) - 1], np.int64)
    assert m.truncatediv(ef.constant(big), ef.constant(np.array([2, 2], np.int64))).numpy() \
        .tolist() == [2**61, -(2**61)]
    assert m.truncatediv(ef.constant([-7.5, 7.5]), 2.0).numpy().tolist() == [-3.0, 3.0]
    assert m.truncatemod(ef.constant([-7.5, 7.5]), 2.0).numpy().tolist() == [-1.5, 1.5]
    u8 = ef.constant(np.array([200, 7], np.uint8))
    assert m.truncatediv(u8, ef.constant(np.array([3, 2], np.uint8))).numpy().tolist() == [66, 3]
    with pytest.raises(errors.InvalidArgumentError, match="TruncateDiv.*division by zero"):
        m.truncatediv(ef.constant([1, 2]), ef.constant([1, 0]))
    with pytest.raises(errors.InvalidArgumentError, match="TruncateMod.*division by zero"):
        m.truncatemod(ef.constant([1]), 0)


def test_reciprocal_and_square_integers():
    assert m.reciprocal(ef.constant([1, 2, -1])).numpy().tolist() == [1, 0, -1]
    with pytest.raises(errors.InvalidArgumentError, match="Reciprocal.*zero"):
        m.reciprocal(ef.constant([0, 1]))
    assert m.square(ef.constant(np.array([3, 200], np.uint8))).numpy().tolist() == [9, 64]
    assert m.reciprocal(ef.constant([0.0])).numpy().tolist() == [math.inf]


def test_complex_parts():
    z = ef.constant(np.array([1 + 2j, -3 - 4j], np.complex64))
    assert m.real(z).dtype is d.float32 and m.real(z).numpy().tolist() == [1.0, -3.0]
    assert m.imag(z).numpy().tolist() == [2.0, -4.0]
    np.testing.assert_allclose(m.angle(z).numpy(), np.angle(z.numpy()), rtol=1e-6)
    x = ef.constant([-2.0, 3.0])
    assert m.real(x) is x
    assert m.imag(x).numpy().tolist() == [0.0, 0.0]
    np.testing.assert_allclose(m.angle(x).numpy(), [math.pi, 0.0], rtol=1e-6)
    c = m.complex(ef.constant(np.array([1.0])), ef.constant(np.array([2.0])))
    assert c.dtype is d.complex128 and c.numpy().tolist() == [1 + 2j]
    assert m.complex(1.0, ef.constant([0.5, 1.0])).dtype is d.complex64
    with pytest.raises(errors.InvalidArgumentError, match="Complex"):
        m.complex(ef.constant([1]), ef.constant([2]))
    with pytest.raises(errors.InvalidArgumentError, match="same dtype"):
        m.complex(ef.constant([1.0]), ef.constant(np.array([2.0])))


def test_polyval_and_polygamma():
    x = np.array([0.5, 2.0, -1.0])
    out = m.polyval([ef.constant(2.0), 0.0, -3.0, 1.0], ef.constant(x.astype(np.float32)))
    np.testing.assert_allclose(out.numpy(), np.polyval([2.0, 0.0, -3.0, 1.0], x), rtol=1e-6)
    assert m.polyval([], ef.constant([1.0, 2.0])).numpy().tolist() == [0.0, 0.0]
    with pytest.raises(errors.InvalidArgumentError, match="list"):
        m.polyval((1.0, 2.0), ef.constant([1.0]))
    a, x = np.array([0.0, 1.0, 2.0]), np.array([1.5, 1.5, 1.5])
    np.testing.assert_allclose(m.polygamma(ef.constant(a), ef.constant(x)).numpy(),
                               scipy.special.polygamma(a, x), rtol=1e-12)
    assert np.isnan(m.polygamma(ef.constant([0.5]), ef.constant([1.0])).numpy()[0])


def test_empty_and_scalar_inputs():
    for fn in (m.exp, m.sqrt, m.tanh, m.erf, m.sign, m.is_nan, m.log_sigmoid):
        assert fn(ef.constant(np.zeros((0, 3), np.float32))).shape == (0, 3)
        assert fn(ef.constant(np.float32(0.5))).shape == ()
    assert m.maximum(ef.constant(np.zeros((0,))), 1.0).shape == (0,)
    assert m.abs(ef.constant(np.zeros((0,), np.complex64))).dtype is d.float32


@pytest.mark.parametrize("prim", PRIMS, ids=_ids(PRIMS))
def test_kernels_accept_numpy_scalar_values(prim):
    # 0-d ufunc results are numpy scalars, and tensors may hold them as their value.
    rng = np.random.default_rng(7)
    dtype = _sweep_dtypes(prim)[-1]
    for args, attrs in prim.samples(rng, dtype):
        if any(np.ndim(a) for a in args):
            continue
        inputs = tuple(ef.constant(a) for a in args)
        for t, a in zip(inputs, args):
            t._value = np.asarray(a)[()]  # a numpy scalar, not a 0-d array
        out = execute(prim, inputs, attrs)
        np.testing.assert_allclose(out.numpy(), prim.reference(*args, **attrs), rtol=1e-6)
        break
    else:
        pytest.fail("%s has no 0-d sample" % prim)


MATH_MODULES = (m, math_common, unary_math, special_math, binary_math, complex_math)


def test_exports_name_public_functions():
    seen = set()
    top = set()
    for module in MATH_MODULES:
        for namespace, names in module.EXPORTS.items():
            for name in names:
                assert callable(getattr(module, name)), (namespace, name)
                assert getattr(m, name) is getattr(module, name), (namespace, name)
                seen.add(name)
        top.update(module.EXPORTS.get("", ()))
    assert seen == set(m.__all__)
    for name in ("log", "rsqrt", "lgamma", "is_nan", "real"):  # not top-level in TF 2
        assert name not in top
    assert m.mod is m.floormod and m.floor is arithmetic.floor


def _public_namespaces(monkeypatch, module):
    """Makes ef.math, ef.bitwise, ef.X resolve to the module's exports for the examples."""
    for namespace, names in module.EXPORTS.items():
        if namespace:
            target = getattr(ef, namespace, None)
            if target is None:
                target = types.SimpleNamespace()
                monkeypatch.setattr(ef, namespace, target, raising=False)
        else:
            target = ef
        for name in names:
            if not hasattr(target, name):
                monkeypatch.setattr(target, name, getattr(module, name), raising=False)


def test_docstring_examples_run(monkeypatch):
    _public_namespaces(monkeypatch, m)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    parser = doctest.DocTestParser()
    reexported = {"floor", "floordiv", "floormod", "mod", "pow", "negative", "conj"}
    own = [n for n in m.__all__ if n not in reexported]
    for name in ["__module__"] + own:
        obj = m if name == "__module__" else getattr(m, name)
        assert obj.__doc__ and "Example" in obj.__doc__, name
        test = parser.get_doctest(obj.__doc__, {}, name, None, 0)
        assert test.examples, name
        runner.run(test, out=lambda s: None)
    assert runner.failures == 0, runner.summarize(verbose=False)
