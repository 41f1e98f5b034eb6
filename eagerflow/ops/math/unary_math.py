"""Unary elementwise math: sign, sqrt, rsqrt, square, reciprocal, exp, expm1, log, log1p,
sigmoid, log_sigmoid, the trigonometric and hyperbolic functions and their inverses,
ceil, rint, round, is_nan, is_inf and is_finite.

Each primitive comes from the elementwise family factory (``unary``) with the bare array
function as its kernel, and each public function from ``public_unary``. The ``Abs``
primitive is here too; the public ``abs``, which also takes complex inputs, is in
:mod:`eagerflow.ops.math.complex_math`.

Example:
    >>> import eagerflow as ef
    >>> ef.sqrt(ef.constant([4.0, 9.0])).numpy().tolist()
    [2.0, 3.0]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.math.arithmetic import zeros_like_t
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import (
    COMPLEX, FLOAT, FLOAT_COMPLEX, NUMERIC, SIGNED_INT, binary, public_unary, unary,
)
from eagerflow.ops.math import _c, _check_int_divisor, _scipy_special
from eagerflow.ops.family import GPU_FLOAT, GPU_NUM, HOST_INT_DIVISOR

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp", "expm1",
    "is_finite", "is_inf", "is_nan", "log", "log1p", "log_sigmoid", "reciprocal", "rint", "round",
    "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh",
]

EXPORTS = {
    "": ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "round",
         "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh"],
    "math": ["acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp",
             "expm1", "is_finite", "is_inf", "is_nan", "log", "log1p", "log_sigmoid", "reciprocal",
             "rint", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "tan",
             "tanh"],
    "nn": ["sigmoid", "tanh"],
}


# ------------------------------------------------------------------ abs, sign, powers

ABS = unary("Abs", lambda xp: xp.abs, dtypes=FLOAT + SIGNED_INT, reference=np.abs,
            sweep_dtypes=(d.float32, d.float64, d.int32),
            vjp=lambda g, x, out: g * execute(SIGN, (x,)), saves=(0,),
            gpu_expr=(GPU_NUM, "({0} < ({T})0 ? -{0} : {0})"))


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
def _zero_where_no_gradient(g, grad):
    """``grad``, but 0 where the incoming gradient ``g`` is 0, as TF's SqrtGrad, RsqrtGrad and
    ReciprocalGrad: ``where(x > 0, sqrt(x), 0)`` then has gradient 0, not NaN, where x <= 0
    (0 * inf and 0 * NaN would otherwise leak through the unselected branch)."""
    from eagerflow.ops.math import arithmetic

    return arithmetic.where(arithmetic.equal(g, zeros_like_t(g)), zeros_like_t(grad), grad)


SQRT = unary("Sqrt", lambda xp: xp.sqrt, reference=np.sqrt, domain=(0.2, 3.0),
             vjp=lambda g, x, out: _zero_where_no_gradient(g, g * 0.5 / _c(out)),
             saves=("out",), gpu_expr=(GPU_FLOAT, "sqrt({0})"))


def _rsqrt_vjp(g, x, out):
    o = _c(out)
    return _zero_where_no_gradient(g, g * (o * o * o) * -0.5)


RSQRT = unary("Rsqrt", lambda xp: (lambda x: xp.reciprocal(xp.sqrt(x))),
              reference=lambda x: 1 / np.sqrt(x), domain=(0.2, 3.0), vjp=_rsqrt_vjp,
              saves=("out",), gpu_expr=(GPU_FLOAT, "({T})1 / sqrt({0})"))
SQUARE = unary("Square", lambda xp: xp.square, dtypes=NUMERIC, reference=np.square,
               sweep_dtypes=(d.float32, d.float64, d.int32),
               vjp=lambda g, x, out: g * (_c(x) * 2), saves=(0,), gpu_expr=(GPU_NUM, "{0} * {0}"))


def _reciprocal_kernel(xp):
    def kernel(x):
        _check_int_divisor(x, "reciprocal")
        return xp.reciprocal(x)
    return kernel


def _reciprocal_vjp(g, x, out):
    o = _c(out)
    return _zero_where_no_gradient(g, -g * (o * o))


RECIPROCAL = unary("Reciprocal", _reciprocal_kernel, dtypes=FLOAT_COMPLEX + SIGNED_INT,
                   host_sync=HOST_INT_DIVISOR,
                   reference=np.reciprocal, domain=(1.0, 3.0),
                   sweep_dtypes=(d.float32, d.float64, d.int32), vjp=_reciprocal_vjp,
                   saves=("out",),
                   bad_samples=lambda rng: [((np.array([1, 0], np.int32),), {},
                                             errors.InvalidArgumentError)],
                   gpu_expr=(GPU_FLOAT, "({T})1 / {0}"))

# -------------------------------------------------------------- exponentials and logs

EXP = unary("Exp", lambda xp: xp.exp, reference=np.exp,
            vjp=lambda g, x, out: g * _c(out), saves=("out",), gpu_expr=(GPU_FLOAT, "exp({0})"))
EXPM1 = unary("Expm1", lambda xp: xp.expm1, reference=np.expm1,
              vjp=lambda g, x, out: g * _c(out + 1), saves=("out",),
              gpu_expr=(GPU_FLOAT, "expm1({0})"))
LOG = unary("Log", lambda xp: xp.log, reference=np.log, domain=(0.2, 3.0),
            vjp=lambda g, x, out: g / _c(x), saves=(0,), gpu_expr=(GPU_FLOAT, "log({0})"))
LOG1P = unary("Log1p", lambda xp: xp.log1p, reference=np.log1p, domain=(-0.8, 3.0),
              vjp=lambda g, x, out: g / _c(x + 1), saves=(0,), gpu_expr=(GPU_FLOAT, "log1p({0})"))


def _sigmoid_kernel(xp):
    # 1 / (1 + e^-x) is accurate for all x; e^-x overflowing to inf gives the exact 0.
    return lambda x: xp.reciprocal(1 + xp.exp(-x))


def _sigmoid_vjp(g, x, out):
    return execute(SIGMOID_GRAD, (out, g))


SIGMOID = unary("Sigmoid", _sigmoid_kernel, reference=lambda x: _scipy_special().expit(x),
                domain=(-6.0, 6.0), vjp=_sigmoid_vjp, saves=("out",),
                gpu_expr=(GPU_FLOAT, "({T})1 / (({T})1 + exp(-{0}))"))
# TF builds log_sigmoid from softplus; one stable primitive, -log(1 + e^-x), is cheaper.
LOG_SIGMOID = unary("LogSigmoid", lambda xp: (lambda x: -xp.logaddexp(0, -x)), dtypes=FLOAT,
                    reference=lambda x: _scipy_special().log_expit(x), domain=(-6.0, 6.0),
                    vjp=lambda g, x, out: g * execute(SIGMOID, (-x,)), saves=(0,))

# ------------------------------------------------------------------------ trigonometry


def _square_c(x):
    x = _c(x)
    return x * x


SIN = unary("Sin", lambda xp: xp.sin, reference=np.sin,
            vjp=lambda g, x, out: g * execute(COS, (_c(x),)), saves=(0,),
            gpu_expr=(GPU_FLOAT, "sin({0})"))
COS = unary("Cos", lambda xp: xp.cos, reference=np.cos,
            vjp=lambda g, x, out: -g * execute(SIN, (_c(x),)), saves=(0,),
            gpu_expr=(GPU_FLOAT, "cos({0})"))
TAN = unary("Tan", lambda xp: xp.tan, reference=np.tan, domain=(-1.2, 1.2),
            vjp=lambda g, x, out: g * execute(SQUARE, (reciprocal(cos(_c(x))),)), saves=(0,),
            gpu_expr=(GPU_FLOAT, "tan({0})"))
ASIN = unary("Asin", lambda xp: xp.arcsin, reference=np.arcsin, domain=(-0.9, 0.9),
             vjp=lambda g, x, out: g * rsqrt(1 - _square_c(x)), saves=(0,),
             gpu_expr=(GPU_FLOAT, "asin({0})"))
ACOS = unary("Acos", lambda xp: xp.arccos, reference=np.arccos, domain=(-0.9, 0.9),
             vjp=lambda g, x, out: -g * rsqrt(1 - _square_c(x)), saves=(0,),
             gpu_expr=(GPU_FLOAT, "acos({0})"))
ATAN = unary("Atan", lambda xp: xp.arctan, reference=np.arctan,
             vjp=lambda g, x, out: g * reciprocal(1 + _square_c(x)), saves=(0,),
             gpu_expr=(GPU_FLOAT, "atan({0})"))
SINH = unary("Sinh", lambda xp: xp.sinh, reference=np.sinh,
             vjp=lambda g, x, out: g * execute(COSH, (_c(x),)), saves=(0,),
             gpu_expr=(GPU_FLOAT, "sinh({0})"))
COSH = unary("Cosh", lambda xp: xp.cosh, reference=np.cosh,
             vjp=lambda g, x, out: g * execute(SINH, (_c(x),)), saves=(0,),
             gpu_expr=(GPU_FLOAT, "cosh({0})"))
def _tanh_grad_kernel(xp):
    def kernel(y, dy):
        if y.dtype.kind == "c":
            y = xp.conj(y)
        return dy * (1 - y * y)
    return kernel


def _sigmoid_grad_kernel(xp):
    def kernel(y, dy):
        if y.dtype.kind == "c":
            y = xp.conj(y)
        return dy * (y * (1 - y))
    return kernel


# The gradients of tanh and sigmoid as one fused primitive each (TF's TanhGrad and
# SigmoidGrad): one kernel instead of three dispatched ops on the hot backward path.
TANH_GRAD = binary(
    "TanhGrad", _tanh_grad_kernel, dtypes=FLOAT_COMPLEX, domain=(-0.9, 0.9),
    domain_y=(-3.0, 3.0), reference=lambda y, dy: dy * (1 - np.conj(y) * np.conj(y)),
    vjp=lambda g, y, dy, out: (g * _c(-2.0 * y * dy), execute(TANH_GRAD, (y, g))),
    saves=(0, 1))
SIGMOID_GRAD = binary(
    "SigmoidGrad", _sigmoid_grad_kernel, dtypes=FLOAT_COMPLEX, domain=(0.05, 0.95),
    domain_y=(-3.0, 3.0), reference=lambda y, dy: dy * (np.conj(y) * (1 - np.conj(y))),
    vjp=lambda g, y, dy, out: (g * _c(dy * (1.0 - 2.0 * y)), execute(SIGMOID_GRAD, (y, g))),
    saves=(0, 1))

TANH = unary("Tanh", lambda xp: xp.tanh, reference=np.tanh,
             vjp=lambda g, x, out: execute(TANH_GRAD, (out, g)), saves=("out",),
             gpu_expr=(GPU_FLOAT, "tanh({0})"))
ASINH = unary("Asinh", lambda xp: xp.arcsinh, reference=np.arcsinh,
              vjp=lambda g, x, out: g / execute(COSH, (_c(out),)), saves=("out",),
              gpu_expr=(GPU_FLOAT, "asinh({0})"))
ACOSH = unary("Acosh", lambda xp: xp.arccosh, reference=np.arccosh, domain=(1.2, 3.0),
              vjp=lambda g, x, out: g / execute(SINH, (_c(out),)), saves=("out",),
              gpu_expr=(GPU_FLOAT, "acosh({0})"))
ATANH = unary("Atanh", lambda xp: xp.arctanh, reference=np.arctanh, domain=(-0.8, 0.8),
              vjp=lambda g, x, out: g * reciprocal(1 - _square_c(x)), saves=(0,),
              gpu_expr=(GPU_FLOAT, "atanh({0})"))


# ------------------------------------------------------------------------------ rounding

CEIL = unary("Ceil", lambda xp: xp.ceil, dtypes=FLOAT, reference=np.ceil,
             gpu_expr=(GPU_FLOAT, "ceil({0})"))
RINT = unary("Rint", lambda xp: xp.rint, dtypes=FLOAT, reference=np.rint,
             gpu_expr=(GPU_FLOAT, "rint({0})"))


def _round_kernel(xp):
    # rint rounds half to even, as TF's Round does; integers are already round.
    return lambda x: xp.rint(x) if x.dtype.kind in "fc" else x.copy()


ROUND = unary("Round", _round_kernel, dtypes=NUMERIC, reference=np.round,
              sweep_dtypes=(d.float32, d.float64, d.int32))


def _nonfinite_samples(rng, dtype):
    dt = dtype.np_dtype
    base = np.array([0.0, 1.5, -2.0, np.nan, np.inf, -np.inf], dtype=dt)
    return [((base,), {}), ((base.reshape(2, 3),), {}), ((np.array(np.nan, dt),), {}),
            ((np.zeros((0,), dt),), {})]


IS_NAN = unary("IsNan", lambda xp: xp.isnan, dtypes=FLOAT, out_dtype=d.bool,
               reference=np.isnan, samples=_nonfinite_samples, gpu_expr=(GPU_FLOAT, "isnan({0})"))
IS_INF = unary("IsInf", lambda xp: xp.isinf, dtypes=FLOAT, out_dtype=d.bool,
               reference=np.isinf, samples=_nonfinite_samples, gpu_expr=(GPU_FLOAT, "isinf({0})"))
IS_FINITE = unary("IsFinite", lambda xp: xp.isfinite, dtypes=FLOAT, out_dtype=d.bool,
                  reference=np.isfinite, samples=_nonfinite_samples,
                  gpu_expr=(GPU_FLOAT, "isfinite({0})"))


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
