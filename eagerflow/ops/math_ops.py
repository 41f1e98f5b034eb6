"""Elementwise math: powers and roots, exponentials, trigonometry, special functions,
rounding, min/max, safe division, complex parts, ``add_n`` and ``clip_by_value``.

Most of these sit on the eager fast path, so each is declared with the elementwise family
factories and its kernel is the bare array function (``lambda xp: xp.exp``).

Gradient rules use TF's convention for complex inputs: the rule returns ``g * conj(f'(x))``,
and for a real-valued function of a complex ``z`` the gradient is ``df/dRe(z) +
i df/dIm(z)``. Every rule is written with eagerflow ops, so it can be differentiated again.

Example:
    >>> import eagerflow as ef
    >>> ef.sqrt(ef.constant([4.0, 9.0])).numpy().tolist()
    [2.0, 3.0]
"""

from __future__ import annotations

import math

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.arithmetic import (
    SELECT, conj as _conj_op, floor, floordiv, floormod, greater_equal, less, less_equal,
    negative, not_equal, pow, zeros_like_t,
)
from eagerflow.ops.arithmetic import conj  # noqa: F401 - re-exported as tf.math.conj
from eagerflow.ops.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import (
    COMPLEX, FLOAT, FLOAT_COMPLEX, NUMERIC, REAL, SIGNED_INT, binary,
    broadcast_shapes, public_binary, public_unary, unary, unary_samples, _sample_values,
)
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor, wrap

__all__ = [
    "abs", "acos", "acosh", "add_n", "angle", "asin", "asinh", "atan", "atan2", "atanh",
    "ceil", "clip_by_value", "complex", "conj", "cos", "cosh", "digamma", "divide_no_nan",
    "erf", "erfc", "erfinv", "exp", "expm1", "floor", "floordiv", "floormod", "imag",
    "is_finite", "is_inf", "is_nan", "lgamma", "log", "log1p", "log_sigmoid", "maximum",
    "minimum", "mod", "multiply_no_nan", "negative", "polygamma", "polyval", "pow", "real",
    "reciprocal", "reciprocal_no_nan", "rint", "round", "rsqrt", "sigmoid", "sign", "sin",
    "sinh", "sqrt", "square", "squared_difference", "tan", "tanh", "truncatediv",
    "truncatemod", "xdivy", "xlog1py", "xlogy",
]

EXPORTS = {
    "": ["abs", "acos", "acosh", "add_n", "asin", "asinh", "atan", "atan2", "atanh",
         "clip_by_value", "complex", "cos", "cosh", "erfinv", "exp", "floor", "maximum",
         "minimum", "negative", "pow", "round", "sigmoid", "sign", "sin", "sinh", "sqrt",
         "square", "tan", "tanh", "truncatediv", "truncatemod"],
    "math": [name for name in __all__ if name != "clip_by_value"],
    "nn": ["sigmoid", "tanh"],
}

_SQRT_PI = math.sqrt(math.pi)


# ----------------------------------------------------------------------------- helpers


def _c(t):
    """conj(t) for complex tensors; t itself otherwise (no op recorded)."""
    return _conj_op(t) if t.dtype.is_complex else t


def _where(cond, x, y):
    return execute(SELECT, (cond, x, y))


def _with_dtype(x):
    """Returns (x, its DType); Python values and numpy arrays become Tensors."""
    if x.__class__ is Tensor:
        return x, x.dtype
    dt = getattr(x, "dtype", None)
    if isinstance(dt, d.DType):  # variables and symbolic tensors
        return x, dt
    x = convert_to_tensor(x)
    return x, x.dtype


def _scalar_like(value, t):
    """A Python number as a scalar Tensor of t's dtype on t's CPU device, else ``value``.

    This skips the general conversion path for the common ``clip_by_value(t, 0.0, 1.0)``;
    anything it cannot convert exactly (a float for an integer tensor, an int out of
    range) is left for dispatch to convert or reject.
    """
    kind = t._value.dtype.kind
    if t._device.backend_index or not (
            (value.__class__ is float and kind == "f")
            or (value.__class__ is int and kind in "fiu")):
        return value
    try:
        return wrap(np.asarray(value, t._value.dtype), t._device)
    except OverflowError:
        return value


def _scipy_special():
    import scipy.special

    return scipy.special


def _special_kernel(fname):
    """A kernel calling ``xp.special.<fname>``, in float32 for 16-bit inputs.

    scipy has no half-precision loops (and none for bfloat16), so those compute in
    float32; the result is cast back to the input dtype.
    """

    def factory(xp):
        fn = getattr(xp.special, fname)

        def kernel(x):
            dt = x.dtype
            return fn(x.astype(xp.float32) if dt.itemsize < 4 else x).astype(dt, copy=False)

        return kernel

    return factory


def _check_int_divisor(y, op):
    if y.dtype.kind in "iu" and bool((y == 0).any()):
        raise errors.InvalidArgumentError(
            None, None, "Integer division by zero in %s. Mask zero divisors first, e.g. with "
            "where(y == 0, 1, y)." % op)


# ------------------------------------------------------------------ abs, sign, powers

ABS = unary("Abs", lambda xp: xp.abs, dtypes=FLOAT + SIGNED_INT, reference=np.abs,
            sweep_dtypes=(d.float32, d.float64, d.int32),
            vjp=lambda g, x, out: g * execute(SIGN, (x,)), saves=(0,))


def _to_real_shape(x, **attrs):
    return AbstractValue(x.shape, x.dtype.real_dtype)


def _complex_to_real(name, forward, reference, vjp, saves, domain=(-3.0, 3.0)):
    """A unary primitive from complex inputs to their real dtype (ComplexAbs, Real...)."""
    samples = unary_samples(domain)
    prim = registry.primitive(
        name, forward, dtypes=COMPLEX, shape_fn=_to_real_shape, reference=reference,
        vjp=vjp, saves=saves, samples=samples, sweep_dtypes=(d.complex64, d.complex128),
        grad_samples=lambda rng: [s for s in samples(rng, d.complex128) if s[0][0].size],
        family="math")
    prim.domain = ("unary", domain, None)
    return prim


def _complex_abs_vjp(g, x, out):
    return divide_no_nan(complex(g, zeros_like_t(g)) * x, complex(out, zeros_like_t(out)))


COMPLEX_ABS = _complex_to_real("ComplexAbs", lambda xp: xp.abs, np.abs, _complex_abs_vjp,
                               saves=(0, "out"))


def _sign_kernel(xp):
    def kernel(x):
        if x.dtype.kind != "c":
            return xp.sign(x)
        # x / |x| (0 at 0), written out because array libraries disagree on complex sign.
        mag = xp.abs(x)
        zero = mag == 0
        return xp.where(zero, xp.zeros((), x.dtype), x / xp.where(zero, 1, mag)).astype(
            x.dtype, copy=False)
    return kernel


def _sign_reference(x):
    if np.iscomplexobj(x):
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag)).astype(x.dtype)
    return np.sign(x)


SIGN = unary("Sign", _sign_kernel, dtypes=FLOAT + SIGNED_INT + COMPLEX,
             reference=_sign_reference, sweep_dtypes=(d.float32, d.float64, d.int32),
             vjp=lambda g, x, out: zeros_like_t(g), saves=())
SQRT = unary("Sqrt", lambda xp: xp.sqrt, reference=np.sqrt, domain=(0.2, 3.0),
             vjp=lambda g, x, out: g * 0.5 / _c(out), saves=("out",))


def _rsqrt_vjp(g, x, out):
    o = _c(out)
    return g * (o * o * o) * -0.5


RSQRT = unary("Rsqrt", lambda xp: (lambda x: xp.reciprocal(xp.sqrt(x))),
              reference=lambda x: 1 / np.sqrt(x), domain=(0.2, 3.0), vjp=_rsqrt_vjp,
              saves=("out",))
SQUARE = unary("Square", lambda xp: xp.square, dtypes=NUMERIC, reference=np.square,
               sweep_dtypes=(d.float32, d.float64, d.int32),
               vjp=lambda g, x, out: g * (_c(x) * 2), saves=(0,))


def _reciprocal_kernel(xp):
    def kernel(x):
        _check_int_divisor(x, "reciprocal")
        return xp.reciprocal(x)
    return kernel


def _reciprocal_vjp(g, x, out):
    o = _c(out)
    return -g * (o * o)


RECIPROCAL = unary("Reciprocal", _reciprocal_kernel, dtypes=FLOAT_COMPLEX + SIGNED_INT,
                   reference=np.reciprocal, domain=(1.0, 3.0),
                   sweep_dtypes=(d.float32, d.float64, d.int32), vjp=_reciprocal_vjp,
                   saves=("out",),
                   bad_samples=lambda rng: [((np.array([1, 0], np.int32),), {},
                                             errors.InvalidArgumentError)])

# -------------------------------------------------------------- exponentials and logs

EXP = unary("Exp", lambda xp: xp.exp, reference=np.exp,
            vjp=lambda g, x, out: g * _c(out), saves=("out",))
EXPM1 = unary("Expm1", lambda xp: xp.expm1, reference=np.expm1,
              vjp=lambda g, x, out: g * _c(out + 1), saves=("out",))
LOG = unary("Log", lambda xp: xp.log, reference=np.log, domain=(0.2, 3.0),
            vjp=lambda g, x, out: g / _c(x), saves=(0,))
LOG1P = unary("Log1p", lambda xp: xp.log1p, reference=np.log1p, domain=(-0.8, 3.0),
              vjp=lambda g, x, out: g / _c(x + 1), saves=(0,))


def _sigmoid_kernel(xp):
    # 1 / (1 + e^-x) is accurate for all x; e^-x overflowing to inf gives the exact 0.
    return lambda x: xp.reciprocal(1 + xp.exp(-x))


def _sigmoid_vjp(g, x, out):
    o = _c(out)
    return g * (o * (1 - o))


SIGMOID = unary("Sigmoid", _sigmoid_kernel, reference=lambda x: _scipy_special().expit(x),
                domain=(-6.0, 6.0), vjp=_sigmoid_vjp, saves=("out",))
# TF builds log_sigmoid from softplus; one stable primitive, -log(1 + e^-x), is cheaper.
LOG_SIGMOID = unary("LogSigmoid", lambda xp: (lambda x: -xp.logaddexp(0, -x)), dtypes=FLOAT,
                    reference=lambda x: _scipy_special().log_expit(x), domain=(-6.0, 6.0),
                    vjp=lambda g, x, out: g * execute(SIGMOID, (-x,)), saves=(0,))

# ------------------------------------------------------------------------ trigonometry


def _square_c(x):
    x = _c(x)
    return x * x


SIN = unary("Sin", lambda xp: xp.sin, reference=np.sin,
            vjp=lambda g, x, out: g * execute(COS, (_c(x),)), saves=(0,))
COS = unary("Cos", lambda xp: xp.cos, reference=np.cos,
            vjp=lambda g, x, out: -g * execute(SIN, (_c(x),)), saves=(0,))
TAN = unary("Tan", lambda xp: xp.tan, reference=np.tan, domain=(-1.2, 1.2),
            vjp=lambda g, x, out: g * execute(SQUARE, (reciprocal(cos(_c(x))),)), saves=(0,))
ASIN = unary("Asin", lambda xp: xp.arcsin, reference=np.arcsin, domain=(-0.9, 0.9),
             vjp=lambda g, x, out: g * rsqrt(1 - _square_c(x)), saves=(0,))
ACOS = unary("Acos", lambda xp: xp.arccos, reference=np.arccos, domain=(-0.9, 0.9),
             vjp=lambda g, x, out: -g * rsqrt(1 - _square_c(x)), saves=(0,))
ATAN = unary("Atan", lambda xp: xp.arctan, reference=np.arctan,
             vjp=lambda g, x, out: g * reciprocal(1 + _square_c(x)), saves=(0,))
SINH = unary("Sinh", lambda xp: xp.sinh, reference=np.sinh,
             vjp=lambda g, x, out: g * execute(COSH, (_c(x),)), saves=(0,))
COSH = unary("Cosh", lambda xp: xp.cosh, reference=np.cosh,
             vjp=lambda g, x, out: g * execute(SINH, (_c(x),)), saves=(0,))
TANH = unary("Tanh", lambda xp: xp.tanh, reference=np.tanh,
             vjp=lambda g, x, out: g * (1 - _square_c(out)), saves=("out",))
ASINH = unary("Asinh", lambda xp: xp.arcsinh, reference=np.arcsinh,
              vjp=lambda g, x, out: g / execute(COSH, (_c(out),)), saves=("out",))
ACOSH = unary("Acosh", lambda xp: xp.arccosh, reference=np.arccosh, domain=(1.2, 3.0),
              vjp=lambda g, x, out: g / execute(SINH, (_c(out),)), saves=("out",))
ATANH = unary("Atanh", lambda xp: xp.arctanh, reference=np.arctanh, domain=(-0.8, 0.8),
              vjp=lambda g, x, out: g * reciprocal(1 - _square_c(x)), saves=(0,))


def _atan2_vjp(g, y, x, out):
    scale = g / (x * x + y * y)
    return x * scale, -y * scale


ATAN2 = binary("Atan2", lambda xp: xp.arctan2, dtypes=FLOAT, reference=np.arctan2,
               vjp=_atan2_vjp, saves=(0, 1))

# ------------------------------------------------------------------- special functions

ERF = unary("Erf", _special_kernel("erf"), dtypes=FLOAT,
            reference=lambda x: _scipy_special().erf(x),
            vjp=lambda g, x, out: g * (2 / _SQRT_PI) * exp(-square(x)), saves=(0,))
ERFC = unary("Erfc", _special_kernel("erfc"), dtypes=FLOAT,
             reference=lambda x: _scipy_special().erfc(x),
             vjp=lambda g, x, out: g * (-2 / _SQRT_PI) * exp(-square(x)), saves=(0,))
ERFINV = unary("Erfinv", _special_kernel("erfinv"), dtypes=FLOAT,
               reference=lambda x: _scipy_special().erfinv(x), domain=(-0.9, 0.9),
               vjp=lambda g, x, out: g * (_SQRT_PI / 2) * exp(square(out)), saves=("out",))
LGAMMA = unary("Lgamma", _special_kernel("gammaln"), dtypes=FLOAT,
               reference=lambda x: _scipy_special().gammaln(x), domain=(0.3, 4.0),
               vjp=lambda g, x, out: g * execute(DIGAMMA, (x,)), saves=(0,))
DIGAMMA = unary("Digamma", _special_kernel("digamma"), dtypes=FLOAT,
                reference=lambda x: _scipy_special().digamma(x), domain=(0.3, 4.0),
                vjp=lambda g, x, out: g * execute(POLYGAMMA, (1, x)), saves=(0,))


def _polygamma_samples(rng, dtype):
    out = []
    for sa, sx in (((), ()), ((4,), (4,)), ((3, 1), (1, 2)), ((0,), (0,))):
        a = rng.integers(0, 4, size=sa).astype(dtype.np_dtype)
        x = rng.uniform(0.5, 3.0, size=sx).astype(dtype.np_dtype)
        out.append(((a, x), {}))
    return out


def _polygamma_kernel(xp):
    def kernel(a, x):
        if a.dtype.kind not in "iuf":
            raise errors.InvalidArgumentError(
                None, None, "the order a must hold real numbers (non-negative integers), got "
                "dtype %s" % a.dtype)
        dt = x.dtype
        work = xp.float32 if dt.itemsize < 4 else dt  # scipy has no 16-bit loops
        return xp.special.polygamma(a.astype(work, copy=False), x.astype(work, copy=False)) \
            .astype(dt, copy=False)
    return kernel


def _polygamma_grad_samples(rng):
    # An integer order: the gradient check then differentiates x alone (a has none).
    return [((a.astype(np.int64), x), attrs)
            for (a, x), attrs in _polygamma_samples(rng, d.float64) if x.size]


POLYGAMMA = registry.primitive(
    # dtype_group=(1,): the order may also be an integer tensor, unlike TF, which wants a
    # float one of x's dtype; both are accepted.
    "Polygamma", _polygamma_kernel, dtypes=FLOAT, dtype_group=(1,),
    shape_fn=lambda a, x: AbstractValue(broadcast_shapes(a.shape, x.shape), x.dtype),
    reference=lambda a, x: _scipy_special().polygamma(a, x), samples=_polygamma_samples,
    grad_samples=_polygamma_grad_samples,
    bad_samples=lambda rng: [((np.ones(2, np.complex128), np.ones(2)), {},
                              errors.InvalidArgumentError)],
    # As in TF, the order gets no gradient (polygamma is NaN off the integers).
    vjp=lambda g, a, x, out: (None, g * execute(POLYGAMMA, (a + 1, x))), saves=(0, 1),
    family="math")

# ------------------------------------------------------------------------------ rounding

CEIL = unary("Ceil", lambda xp: xp.ceil, dtypes=FLOAT, reference=np.ceil)
RINT = unary("Rint", lambda xp: xp.rint, dtypes=FLOAT, reference=np.rint)


def _round_kernel(xp):
    # rint rounds half to even, as TF's Round does; integers are already round.
    return lambda x: xp.rint(x) if x.dtype.kind in "fc" else x.copy()


ROUND = unary("Round", _round_kernel, dtypes=NUMERIC, reference=np.round,
              sweep_dtypes=(d.float32, d.float64, d.int32))

# ------------------------------------------------------------------------ comparisons


def _max_min_vjp(select_x):
    def vjp(g, x, y, out):
        mask = select_x(x, y)
        zeros = zeros_like_t(g)
        return _where(mask, g, zeros), _where(mask, zeros, g)
    return vjp


# Ties send the whole gradient to x, as in TF (x >= y for maximum, x <= y for minimum).
MAXIMUM = binary("Maximum", lambda xp: xp.maximum, dtypes=REAL, reference=np.maximum,
                 sweep_dtypes=(d.float32, d.float64, d.int32, d.uint8),
                 vjp=_max_min_vjp(greater_equal), saves=(0, 1))
MINIMUM = binary("Minimum", lambda xp: xp.minimum, dtypes=REAL, reference=np.minimum,
                 sweep_dtypes=(d.float32, d.float64, d.int32, d.uint8),
                 vjp=_max_min_vjp(less_equal), saves=(0, 1))


def _nonfinite_samples(rng, dtype):
    dt = dtype.np_dtype
    base = np.array([0.0, 1.5, -2.0, np.nan, np.inf, -np.inf], dtype=dt)
    return [((base,), {}), ((base.reshape(2, 3),), {}), ((np.array(np.nan, dt),), {}),
            ((np.zeros((0,), dt),), {})]


IS_NAN = unary("IsNan", lambda xp: xp.isnan, dtypes=FLOAT, out_dtype=d.bool,
               reference=np.isnan, samples=_nonfinite_samples)
IS_INF = unary("IsInf", lambda xp: xp.isinf, dtypes=FLOAT, out_dtype=d.bool,
               reference=np.isinf, samples=_nonfinite_samples)
IS_FINITE = unary("IsFinite", lambda xp: xp.isfinite, dtypes=FLOAT, out_dtype=d.bool,
                  reference=np.isfinite, samples=_nonfinite_samples)

# -------------------------------------------------------------------- binary arithmetic


def _squared_difference_kernel(xp):
    def kernel(x, y):
        diff = xp.subtract(x, y)
        if diff.dtype.kind == "c":
            return diff * xp.conjugate(diff)
        return xp.multiply(diff, diff)
    return kernel


def _squared_difference_vjp(g, x, y, out):
    # TF's rule, also for complex inputs: 2 g (x - y).
    gx = g * 2 * (x - y)
    return gx, -gx


SQUARED_DIFFERENCE = binary(
    "SquaredDifference", _squared_difference_kernel,
    dtypes=FLOAT + (d.int32, d.int64) + COMPLEX,
    reference=lambda x, y: (x - y) * np.conjugate(x - y),
    sweep_dtypes=(d.float32, d.float64, d.int32), vjp=_squared_difference_vjp, saves=(0, 1))


def _x_zero_kernel(xp, fn):
    """fn(x, y), with 0 wherever x == 0 (even where fn would give inf or nan)."""

    def kernel(x, y):
        out = fn(x, y)
        return xp.where(x == 0, xp.zeros((), out.dtype), out)
    return kernel


def _xlogy_vjp(g, x, y, out):
    # Conjugates added to TF's rule so complex inputs follow TF's own convention.
    nonzero = cast(not_equal(x, 0), x.dtype)
    return g * _c(xlogy(nonzero, y)), g * _c(xdivy(x, y))


def _xlog1py_vjp(g, x, y, out):
    nonzero = cast(not_equal(x, 0), x.dtype)
    return g * _c(xlog1py(nonzero, y)), g * _c(xdivy(x, y + 1))


def _xdivy_vjp(g, x, y, out):
    nonzero = cast(not_equal(x, 0), x.dtype)
    return g * _c(xdivy(nonzero, y)), g * _c(xdivy(-x, y * y))


XLOGY = binary("Xlogy", lambda xp: _x_zero_kernel(xp, lambda x, y: x * xp.log(y)),
               dtypes=FLOAT_COMPLEX, domain_y=(0.2, 3.0),
               reference=lambda x, y: np.where(x == 0, 0, x * np.log(y)).astype(x.dtype),
               vjp=_xlogy_vjp, saves=(0, 1))
XLOG1PY = binary("Xlog1py", lambda xp: _x_zero_kernel(xp, lambda x, y: x * xp.log1p(y)),
                 dtypes=FLOAT_COMPLEX, domain_y=(-0.8, 3.0),
                 reference=lambda x, y: np.where(x == 0, 0, x * np.log1p(y)).astype(x.dtype),
                 vjp=_xlog1py_vjp, saves=(0, 1))
XDIVY = binary("Xdivy", lambda xp: _x_zero_kernel(xp, lambda x, y: x / y),
               dtypes=FLOAT_COMPLEX, domain_y=(0.5, 3.0),
               reference=lambda x, y: np.where(x == 0, 0, x / y).astype(x.dtype),
               vjp=_xdivy_vjp, saves=(0, 1))


def _y_zero_kernel(xp, fn):
    """fn(x, y), with 0 wherever y == 0 (even where x is inf or nan)."""

    def kernel(x, y):
        zero = y == 0
        out = fn(x, xp.where(zero, xp.ones((), y.dtype), y))
        return xp.where(zero, xp.zeros((), out.dtype), out)
    return kernel


def _div_no_nan_vjp(g, x, y, out):
    cy = _c(y)
    return divide_no_nan(g, cy), g * divide_no_nan(divide_no_nan(-_c(x), cy), cy)


def _mul_no_nan_vjp(g, x, y, out):
    return multiply_no_nan(g, _c(y)), multiply_no_nan(_c(x), g)


DIV_NO_NAN = binary("DivNoNan", lambda xp: _y_zero_kernel(xp, xp.true_divide),
                    dtypes=FLOAT_COMPLEX, domain_y=(0.5, 3.0),
                    reference=lambda x, y: np.where(y == 0, 0, x / np.where(y == 0, 1, y))
                    .astype(x.dtype), vjp=_div_no_nan_vjp, saves=(0, 1))
MUL_NO_NAN = binary("MulNoNan", lambda xp: _y_zero_kernel(xp, xp.multiply),
                    dtypes=FLOAT_COMPLEX,
                    reference=lambda x, y: np.where(y == 0, 0, x * y).astype(x.dtype),
                    vjp=_mul_no_nan_vjp, saves=(0, 1))


def _truncatediv_kernel(xp):
    def kernel(x, y):
        if x.dtype.kind in "fc":
            return xp.trunc(xp.true_divide(x, y))
        _check_int_divisor(y, "truncatediv")
        q = xp.floor_divide(x, y)
        if x.dtype.kind == "i":
            # Floor and truncation differ for inexact quotients of mixed sign.
            fix = (xp.remainder(x, y) != 0) & ((x < 0) != (y < 0))
            q = q + fix.astype(q.dtype)
        return q
    return kernel


def _truncatediv_reference(x, y):
    if x.dtype.kind == "f":
        return np.trunc(x / y)
    return (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(x.dtype)


def _truncatemod_kernel(xp):
    def kernel(x, y):
        _check_int_divisor(y, "truncatemod")
        return xp.fmod(x, y)
    return kernel


def _int_zero_divisor(rng):
    return [((np.array([3, 4], np.int32), np.array([1, 0], np.int32)), {},
             errors.InvalidArgumentError)]


TRUNCATE_DIV = binary("TruncateDiv", _truncatediv_kernel, dtypes=REAL,
                      reference=_truncatediv_reference, domain=(-9.0, 9.0), domain_y=(1.0, 4.0),
                      sweep_dtypes=(d.float32, d.float64, d.int32, d.int64, d.uint8),
                      bad_samples=_int_zero_divisor)
TRUNCATE_MOD = binary("TruncateMod", _truncatemod_kernel, dtypes=REAL, reference=np.fmod,
                      domain=(-9.0, 9.0), domain_y=(1.0, 4.0),
                      sweep_dtypes=(d.float32, d.float64, d.int32, d.int64),
                      bad_samples=_int_zero_divisor)

# ---------------------------------------------------------------------- complex numbers


def _complex_kernel(xp):
    def kernel(re, im):
        dt = xp.complex64 if re.dtype == xp.float32 else xp.complex128
        return re.astype(dt) + im.astype(dt) * 1j
    return kernel


def _complex_shape(re, im, **attrs):
    dt = d.complex64 if re.dtype is d.float32 else d.complex128
    return AbstractValue(broadcast_shapes(re.shape, im.shape), dt)


def _complex_samples(rng, dtype):
    out = []
    for a, b in (((), ()), ((3,), (3,)), ((2, 1), (1, 3)), ((0,), (0,))):
        out.append(((_sample_values(rng, a, dtype, (-3, 3)),
                     _sample_values(rng, b, dtype, (-3, 3))), {}))
    return out


COMPLEX_PRIM = registry.primitive(
    "Complex", _complex_kernel, dtypes=(d.float32, d.float64), shape_fn=_complex_shape,
    reference=lambda re, im: re + 1j * im.astype(np.result_type(re.dtype, np.complex64)),
    samples=_complex_samples,
    vjp=lambda g, re, im, out: (execute(REAL, (g,)), execute(IMAG, (g,))), saves=(),
    family="math")
REAL = _complex_to_real("Real", lambda xp: (lambda x: x.real.copy()), np.real,
                        vjp=lambda g, x, out: complex(g, zeros_like_t(g)), saves=())
IMAG = _complex_to_real("Imag", lambda xp: (lambda x: x.imag.copy()), np.imag,
                        vjp=lambda g, x, out: complex(zeros_like_t(g), g), saves=())


def _angle_vjp(g, x, out):
    inv = reciprocal(complex(execute(IMAG, (x,)), execute(REAL, (x,))))
    return -complex(g, zeros_like_t(g)) * inv


ANGLE = _complex_to_real("Angle", lambda xp: xp.angle, np.angle, vjp=_angle_vjp, saves=(0,))

# ------------------------------------------------------------------------------- add_n


def _add_n_kernel(xp):
    def kernel(*xs):
        shape = xs[0].shape
        for i, x in enumerate(xs[1:], 1):
            if x.shape != shape:
                raise errors.InvalidArgumentError(
                    None, None, "add_n needs inputs of one shape, but input 0 has shape %s "
                    "and input %d has shape %s. add_n does not broadcast; use broadcast_to "
                    "or add." % (list(shape), i, list(x.shape)))
        if len(xs) == 1:
            return xs[0].copy()
        out = xs[0] + xs[1]
        for x in xs[2:]:
            out += x  # out is a fresh array (or a scalar rebound by +=)
        return out
    return kernel


def _add_n_shape(*avals, **attrs):
    shape = avals[0].shape
    for aval in avals[1:]:
        other = aval.shape
        if shape is None:
            shape = other
        elif other is not None:
            if len(other) != len(shape) or any(
                    a is not None and b is not None and a != b for a, b in zip(shape, other)):
                raise errors.InvalidArgumentError(
                    None, "AddN", "add_n needs inputs of one shape, got %s and %s"
                    % (list(shape), list(other)))
            shape = tuple(a if a is not None else b for a, b in zip(shape, other))
    return AbstractValue(shape, avals[0].dtype)


def _add_n_samples(rng, dtype):
    out = []
    for n, shape in ((1, (3,)), (2, ()), (3, (2, 3)), (4, (0, 2))):
        out.append((tuple(_sample_values(rng, shape, dtype, (-3, 3)) for _ in range(n)), {}))
    return out


ADD_N = registry.primitive(
    "AddN", _add_n_kernel, dtypes=NUMERIC, variadic=True, shape_fn=_add_n_shape,
    reference=lambda *xs: sum(xs[1:], xs[0].copy()), samples=_add_n_samples,
    sweep_dtypes=(d.float32, d.float64, d.int32),
    bad_samples=lambda rng: [((np.ones(3), np.ones(2)), {}, errors.InvalidArgumentError),
                             ((np.ones(3), np.ones((1, 3))), {}, errors.InvalidArgumentError)],
    vjp=lambda g, *inputs_and_out: (g,) * (len(inputs_and_out) - 1), saves=(), family="math")

# ------------------------------------------------------------------- public functions

sign = public_unary(SIGN, "sign", "Returns -1, 0 or 1 by the sign of x; x / |x| for complex.\n\n"
                    "The gradient is zero everywhere, as in TF.",
                    ">>> ef.sign(ef.constant([-2.0, 0.0, 3.0])).numpy().tolist()\n"
                    "[-1.0, 0.0, 1.0]")
sqrt = public_unary(SQRT, "sqrt", "Computes the square root of x element-wise.",
                    ">>> ef.sqrt(ef.constant([4.0])).numpy().tolist()\n[2.0]")
rsqrt = public_unary(RSQRT, "rsqrt", "Computes 1 / sqrt(x) element-wise.",
                     ">>> ef.math.rsqrt(ef.constant([4.0])).numpy().tolist()\n[0.5]")
square = public_unary(SQUARE, "square", "Computes x * x element-wise (integers too).",
                      ">>> ef.square(ef.constant([3, -2])).numpy().tolist()\n[9, 4]")
reciprocal = public_unary(
    RECIPROCAL, "reciprocal",
    "Computes 1 / x element-wise. Integer inputs divide with truncation; an integer zero "
    "raises InvalidArgumentError.",
    ">>> ef.math.reciprocal(ef.constant([2.0, 4.0])).numpy().tolist()\n[0.5, 0.25]")
exp = public_unary(EXP, "exp", "Computes e ** x element-wise.",
                   ">>> ef.exp(ef.constant([0.0])).numpy().tolist()\n[1.0]")
expm1 = public_unary(EXPM1, "expm1", "Computes e ** x - 1 element-wise, accurately near 0.",
                     ">>> ef.math.expm1(ef.constant([0.0])).numpy().tolist()\n[0.0]")
log = public_unary(LOG, "log", "Computes the natural logarithm element-wise (log(0) = -inf).",
                   ">>> ef.math.log(ef.constant([1.0])).numpy().tolist()\n[0.0]")
log1p = public_unary(LOG1P, "log1p", "Computes log(1 + x) element-wise, accurately near 0.",
                     ">>> ef.math.log1p(ef.constant([0.0])).numpy().tolist()\n[0.0]")
sigmoid = public_unary(SIGMOID, "sigmoid", "Computes 1 / (1 + exp(-x)) element-wise.",
                       ">>> ef.sigmoid(ef.constant([0.0])).numpy().tolist()\n[0.5]")
log_sigmoid = public_unary(
    LOG_SIGMOID, "log_sigmoid",
    "Computes log(sigmoid(x)) = -log(1 + exp(-x)) element-wise, without overflow.",
    ">>> ef.math.log_sigmoid(ef.constant([0.0], ef.float64)).numpy().round(4).tolist()\n"
    "[-0.6931]")
sin = public_unary(SIN, "sin", "Computes sine element-wise.",
                   ">>> ef.sin(ef.constant([0.0])).numpy().tolist()\n[0.0]")
cos = public_unary(COS, "cos", "Computes cosine element-wise.",
                   ">>> ef.cos(ef.constant([0.0])).numpy().tolist()\n[1.0]")
tan = public_unary(TAN, "tan", "Computes tangent element-wise.",
                   ">>> ef.tan(ef.constant([0.0])).numpy().tolist()\n[0.0]")
asin = public_unary(ASIN, "asin", "Computes the inverse sine element-wise (NaN outside [-1, 1]).",
                    ">>> ef.asin(ef.constant([0.0])).numpy().tolist()\n[0.0]")
acos = public_unary(ACOS, "acos", "Computes the inverse cosine element-wise.",
                    ">>> ef.acos(ef.constant([1.0])).numpy().tolist()\n[0.0]")
atan = public_unary(ATAN, "atan", "Computes the inverse tangent element-wise.",
                    ">>> ef.atan(ef.constant([0.0])).numpy().tolist()\n[0.0]")
sinh = public_unary(SINH, "sinh", "Computes the hyperbolic sine element-wise.",
                    ">>> ef.sinh(ef.constant([0.0])).numpy().tolist()\n[0.0]")
cosh = public_unary(COSH, "cosh", "Computes the hyperbolic cosine element-wise.",
                    ">>> ef.cosh(ef.constant([0.0])).numpy().tolist()\n[1.0]")
tanh = public_unary(TANH, "tanh", "Computes the hyperbolic tangent element-wise.",
                    ">>> ef.tanh(ef.constant([0.0])).numpy().tolist()\n[0.0]")
asinh = public_unary(ASINH, "asinh", "Computes the inverse hyperbolic sine element-wise.",
                     ">>> ef.asinh(ef.constant([0.0])).numpy().tolist()\n[0.0]")
acosh = public_unary(ACOSH, "acosh", "Computes the inverse hyperbolic cosine (x >= 1).",
                     ">>> ef.acosh(ef.constant([1.0])).numpy().tolist()\n[0.0]")
atanh = public_unary(ATANH, "atanh", "Computes the inverse hyperbolic tangent (|x| < 1).",
                     ">>> ef.atanh(ef.constant([0.0])).numpy().tolist()\n[0.0]")
erf = public_unary(ERF, "erf", "Computes the Gauss error function element-wise.",
                   ">>> ef.math.erf(ef.constant([0.0])).numpy().tolist()\n[0.0]")
erfc = public_unary(ERFC, "erfc", "Computes the complementary error function 1 - erf(x).",
                    ">>> ef.math.erfc(ef.constant([0.0])).numpy().tolist()\n[1.0]")
erfinv = public_unary(ERFINV, "erfinv", "Computes the inverse error function (|x| < 1).",
                      ">>> ef.math.erfinv(ef.constant([0.0])).numpy().tolist()\n[0.0]")
lgamma = public_unary(
    LGAMMA, "lgamma", "Computes log(|Gamma(x)|) element-wise.",
    ">>> ef.math.lgamma(ef.constant([1.0, 3.0], ef.float64)).numpy().round(4).tolist()\n"
    "[0.0, 0.6931]")
digamma = public_unary(
    DIGAMMA, "digamma", "Computes the digamma function, lgamma's derivative.",
    ">>> ef.math.digamma(ef.constant([1.0], ef.float64)).numpy().round(4).tolist()\n"
    "[-0.5772]")
ceil = public_unary(CEIL, "ceil", "Returns the smallest integer not less than x. No gradient.",
                    ">>> ef.math.ceil(ef.constant([1.2, -1.2])).numpy().tolist()\n[2.0, -1.0]")
rint = public_unary(RINT, "rint", "Rounds to the nearest integer, halves to even. No gradient.",
                    ">>> ef.math.rint(ef.constant([0.5, 1.5, -2.5])).numpy().tolist()\n"
                    "[0.0, 2.0, -2.0]")
round = public_unary(  # noqa: A001 - TF's public name
    ROUND, "round",
    "Rounds half to even (banker's rounding), as TF does; integers come back unchanged.\n\n"
    "The result has no gradient.",
    ">>> ef.round(ef.constant([0.5, 1.5, 2.5, -0.5])).numpy().tolist()\n[0.0, 2.0, 2.0, -0.0]")
is_nan = public_unary(IS_NAN, "is_nan", "Returns True where x is NaN (bool result).",
                      ">>> ef.math.is_nan(ef.constant([1.0, float('nan')])).numpy().tolist()\n"
                      "[False, True]")
is_inf = public_unary(IS_INF, "is_inf", "Returns True where x is +inf or -inf (bool result).",
                      ">>> ef.math.is_inf(ef.constant([1.0, float('inf')])).numpy().tolist()\n"
                      "[False, True]")
is_finite = public_unary(IS_FINITE, "is_finite", "Returns True where x is neither inf nor NaN.",
                         ">>> ef.math.is_finite(ef.constant([1.0, float('inf')])).numpy()"
                         ".tolist()\n[True, False]")
maximum = public_binary(MAXIMUM, "maximum",
                        "Returns max(x, y) element-wise, broadcasting. On ties the gradient "
                        "goes to x.",
                        ">>> ef.maximum(ef.constant([1, 5]), 3).numpy().tolist()\n[3, 5]")
minimum = public_binary(MINIMUM, "minimum",
                        "Returns min(x, y) element-wise, broadcasting. On ties the gradient "
                        "goes to x.",
                        ">>> ef.minimum(ef.constant([1, 5]), 3).numpy().tolist()\n[1, 3]")
squared_difference = public_binary(
    SQUARED_DIFFERENCE, "squared_difference", "Returns (x - y) * conj(x - y) element-wise.",
    ">>> ef.math.squared_difference(ef.constant([1.0]), 4.0).numpy().tolist()\n[9.0]")
xlogy = public_binary(XLOGY, "xlogy", "Returns x * log(y), and 0 wherever x == 0.",
                      ">>> ef.math.xlogy(ef.constant([0.0, 2.0]), 1.0).numpy().tolist()\n"
                      "[0.0, 0.0]")
xlog1py = public_binary(XLOG1PY, "xlog1py", "Returns x * log1p(y), and 0 wherever x == 0.",
                        ">>> ef.math.xlog1py(ef.constant([0.0]), -1.0).numpy().tolist()\n"
                        "[0.0]")
xdivy = public_binary(XDIVY, "xdivy", "Returns x / y, and 0 wherever x == 0.",
                      ">>> ef.math.xdivy(ef.constant([0.0, 2.0]), 0.0).numpy().tolist()\n"
                      "[0.0, inf]")
divide_no_nan = public_binary(
    DIV_NO_NAN, "divide_no_nan", "Returns x / y, and 0 wherever y == 0 (whatever x is).",
    ">>> ef.math.divide_no_nan(ef.constant([3.0, 3.0]), ef.constant([2.0, 0.0])).numpy()"
    ".tolist()\n[1.5, 0.0]")
multiply_no_nan = public_binary(
    MUL_NO_NAN, "multiply_no_nan", "Returns x * y, and 0 wherever y == 0 (even for inf/NaN x).",
    ">>> ef.math.multiply_no_nan(ef.constant([float('inf')]), 0.0).numpy().tolist()\n[0.0]")
truncatediv = public_binary(
    TRUNCATE_DIV, "truncatediv",
    "Returns x / y rounded toward zero (C semantics: -7 / 2 = -3).\n\n"
    "Floats divide and truncate too (TF's CPU kernel takes integers only). An integer zero "
    "divisor raises InvalidArgumentError. No gradient.",
    ">>> ef.truncatediv(ef.constant([-7, 7]), 2).numpy().tolist()\n[-3, 3]")
truncatemod = public_binary(
    TRUNCATE_MOD, "truncatemod",
    "Returns the remainder of truncating division; it has x's sign (C's fmod).\n\n"
    "An integer zero divisor raises InvalidArgumentError. No gradient, as in TF.",
    ">>> ef.truncatemod(ef.constant([-7, 7]), 2).numpy().tolist()\n[-1, 1]")
mod = floormod  # tf.math.mod is floormod


def atan2(y, x, name=None):
    """Computes the angle of the point (x, y): arctan(y / x) with the quadrant of (x, y).

    Args:
        y: A float Tensor, the ordinate.
        x: A Tensor of y's dtype, the abscissa (broadcast against y).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the broadcast shape, in [-pi, pi].

    Example:
        >>> import eagerflow as ef
        >>> ef.atan2(ef.constant([1.0], ef.float64), 0.0).numpy().round(4).tolist()
        [1.5708]
    """
    return execute(ATAN2, (y, x))


def polygamma(a, x, name=None):
    """Computes the polygamma function psi^(a)(x), the a-th derivative of digamma.

    Args:
        a: The order: a Tensor of non-negative integer values (NaN elsewhere), float like
            x or of an integer dtype. It gets no gradient, as in TF.
        x: A float Tensor (broadcast against a).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the broadcast shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.polygamma(1.0, ef.constant([1.0], ef.float64)).numpy().round(4).tolist()
        [1.6449]
    """
    return execute(POLYGAMMA, (a, x))


def abs(x, name=None):  # noqa: A001 - TF's public name
    """Computes the absolute value element-wise; the magnitude (a real dtype) for complex x.

    The gradient is ``g * sign(x)`` (zero at 0); for complex x it is ``g * x / |x|``.

    Args:
        x: A Tensor of a float, signed integer or complex dtype.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of x's shape; float32/float64 for complex64/complex128 inputs.

    Example:
        >>> import eagerflow as ef
        >>> ef.abs(ef.constant([-2, 3])).numpy().tolist()
        [2, 3]
        >>> ef.abs(ef.constant([3 + 4j])).numpy().tolist()
        [5.0]
    """
    if x.__class__ is Tensor and x._value.dtype.kind != "c":
        return execute(ABS, (x,))
    x, dt = _with_dtype(x)
    return execute(COMPLEX_ABS if dt.is_complex else ABS, (x,))


def real(input, name=None):  # noqa: A002 - TF's argument name
    """Returns the real part of a complex tensor; real tensors come back unchanged.

    Args:
        input: A Tensor.
        name: Unused (TF compatibility).

    Returns:
        A float32/float64 Tensor for complex64/complex128 input, else ``input``.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.real(ef.constant([1 + 2j])).numpy().tolist()
        [1.0]
    """
    input, dt = _with_dtype(input)
    return execute(REAL, (input,)) if dt.is_complex else input


def imag(input, name=None):  # noqa: A002 - TF's argument name
    """Returns the imaginary part of a complex tensor; zeros for a real tensor.

    Args:
        input: A Tensor.
        name: Unused (TF compatibility).

    Returns:
        A float32/float64 Tensor for complex64/complex128 input, else zeros like ``input``.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.imag(ef.constant([1 + 2j])).numpy().tolist()
        [2.0]
    """
    input, dt = _with_dtype(input)
    return execute(IMAG, (input,)) if dt.is_complex else zeros_like_t(input)


def angle(input, name=None):  # noqa: A002 - TF's argument name
    """Returns the argument (phase) of complex numbers, in [-pi, pi].

    For real input, as in TF: pi where ``input < 0`` and 0 elsewhere.

    Args:
        input: A Tensor.
        name: Unused (TF compatibility).

    Returns:
        A real Tensor of input's shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.angle(ef.constant([1j])).numpy().round(4).tolist()  # complex128
        [1.5708]
    """
    input, dt = _with_dtype(input)
    if dt.is_complex:
        return execute(ANGLE, (input,))
    zeros = zeros_like_t(input)
    return _where(less(input, 0), zeros + math.pi, zeros)


def complex(real, imag, name=None):  # noqa: A001 - TF's public name
    """Builds complex numbers ``real + imag * 1j`` from two float tensors.

    Args:
        real: A float32 or float64 Tensor.
        imag: A Tensor of real's dtype (broadcast against real).
        name: Unused (TF compatibility).

    Returns:
        A complex64 (from float32) or complex128 (from float64) Tensor.

    Raises:
        InvalidArgumentError: If the dtypes differ or are not float32/float64.

    Example:
        >>> import eagerflow as ef
        >>> ef.complex(ef.constant([1.0]), ef.constant([2.0])).numpy().tolist()
        [(1+2j)]
    """
    return execute(COMPLEX_PRIM, (real, imag))


def add_n(inputs, name=None):
    """Adds all input tensors element-wise.

    Args:
        inputs: A list of Tensors of one shape and dtype (no broadcasting).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the inputs' shape and dtype; a single input is returned as it is.

    Raises:
        InvalidArgumentError: If ``inputs`` is empty or the shapes or dtypes differ.

    Example:
        >>> import eagerflow as ef
        >>> ef.add_n([ef.constant([1, 2]), ef.constant([3, 4]), [5, 6]]).numpy().tolist()
        [9, 12]
    """
    if not isinstance(inputs, (list, tuple)):
        try:
            inputs = list(inputs)
        except TypeError:
            inputs = None
    if not inputs:
        raise errors.InvalidArgumentError(
            None, "AddN", "add_n: inputs must be a non-empty list of tensors of one shape and "
            "dtype, got %r." % (inputs,))
    if len(inputs) == 1:
        return _with_dtype(inputs[0])[0]
    return execute(ADD_N, tuple(inputs))


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clips values to ``[clip_value_min, clip_value_max]``.

    Computed as ``maximum(minimum(t, clip_value_max), clip_value_min)``, like TF, so the
    gradient flows to ``t`` where it lies within the bounds (bounds included) and to the
    bound that was applied elsewhere.

    Args:
        t: A Tensor.
        clip_value_min: The lower bound: a scalar or a Tensor broadcastable to t's shape.
        clip_value_max: The upper bound: a scalar or a Tensor broadcastable to t's shape.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of t's shape and dtype.

    Raises:
        InvalidArgumentError: If a bound would broadcast the result beyond t's shape, or
            its dtype differs from t's.

    Example:
        >>> import eagerflow as ef
        >>> ef.clip_by_value(ef.constant([-2.0, 0.5, 3.0]), -1.0, 1.0).numpy().tolist()
        [-1.0, 0.5, 1.0]
    """
    t, _ = _with_dtype(t)
    if t.__class__ is Tensor:
        clip_value_min = _scalar_like(clip_value_min, t)
        clip_value_max = _scalar_like(clip_value_max, t)
        out = execute(MAXIMUM, (execute(MINIMUM, (t, clip_value_max)), clip_value_min))
        if out._value.shape == t._value.shape:
            return out
    else:
        out = execute(MAXIMUM, (execute(MINIMUM, (t, clip_value_max)), clip_value_min))
    if tuple(out.shape) != tuple(t.shape):
        raise errors.InvalidArgumentError(
            None, "clip_by_value", "clip_by_value: the clip bounds (shapes %s and %s) would "
            "broadcast t of shape %s to %s; bounds must broadcast to t's shape."
            % (list(np.shape(clip_value_min)), list(np.shape(clip_value_max)),
               list(t.shape), list(out.shape)))
    return out


def reciprocal_no_nan(x, name=None):
    """Returns 1 / x, and 0 wherever x == 0.

    Args:
        x: A float or complex Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of x's shape and dtype.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.reciprocal_no_nan(ef.constant([2.0, 0.0])).numpy().tolist()
        [0.5, 0.0]
    """
    return execute(DIV_NO_NAN, (1, x))


def polyval(coeffs, x, name=None):
    """Evaluates the polynomial ``coeffs[0] * x**(n-1) + ... + coeffs[n-1]`` (Horner).

    Args:
        coeffs: A list of Tensors (or numbers), highest power first.
        x: A Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the broadcast shape of x and the coefficients; zeros like x for an
        empty list.

    Raises:
        InvalidArgumentError: If ``coeffs`` is not a list.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.polyval([1.0, 0.0, -1.0], ef.constant([3.0])).numpy().tolist()
        [8.0]
    """
    if not isinstance(coeffs, list):
        raise errors.InvalidArgumentError(
            None, "polyval", "polyval: coeffs must be a list, got %s." % type(coeffs).__name__)
    x, dt = _with_dtype(x)
    if not coeffs:
        return zeros_like_t(x)
    p = coeffs[0]
    if not isinstance(getattr(p, "dtype", None), d.DType):
        p = convert_to_tensor(p, dtype=dt)  # Python numbers take x's dtype
    for c in coeffs[1:]:
        p = c + p * x
    return p
