"""Binary elementwise math and arithmetic composites: maximum, minimum, atan2,
squared_difference, xlogy, xlog1py, xdivy, divide_no_nan, multiply_no_nan, truncatediv,
truncatemod, mod, add_n, clip_by_value, reciprocal_no_nan and polyval.

Binary primitives broadcast like numpy. The "safe" ops give exactly 0 where x == 0 (xlogy,
xlog1py, xdivy) or y == 0 (divide_no_nan, multiply_no_nan) even where the plain formula
would give inf or NaN; integer division by zero raises InvalidArgumentError.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import (
    floormod, greater_equal, less_equal, not_equal, zeros_like_t,
)
from eagerflow.ops.math.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import (
    COMPLEX, FLOAT, FLOAT_COMPLEX, NUMERIC, REAL, _sample_values, binary, public_binary,
)
from eagerflow.ops.math import _c, _check_int_divisor, _where, _with_dtype
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor, wrap
from eagerflow.ops.family import GPU_FLOAT, GPU_NUM, HOST_INT_DIVISOR

__all__ = [
    "add_n", "atan2", "clip_by_value", "divide_no_nan", "maximum", "minimum", "mod",
    "multiply_no_nan", "polyval", "reciprocal_no_nan", "squared_difference", "truncatediv",
    "truncatemod", "xdivy", "xlog1py", "xlogy",
]

EXPORTS = {
    "": ["add_n", "atan2", "clip_by_value", "maximum", "minimum", "truncatediv", "truncatemod"],
    "math": ["add_n", "atan2", "divide_no_nan", "maximum", "minimum", "mod", "multiply_no_nan",
             "polyval", "reciprocal_no_nan", "squared_difference", "truncatediv", "truncatemod",
             "xdivy", "xlog1py", "xlogy"],
}


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


def _atan2_vjp(g, y, x, out):
    scale = g / (x * x + y * y)
    return x * scale, -y * scale


ATAN2 = binary("Atan2", lambda xp: xp.arctan2, dtypes=FLOAT, reference=np.arctan2,
               vjp=_atan2_vjp, saves=(0, 1), gpu_expr=(GPU_FLOAT, "atan2({0}, {1})"))


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
                 vjp=_max_min_vjp(greater_equal), saves=(0, 1),
                 gpu_expr=(GPU_NUM, "({0} >= {1} || isnan((double){0})) ? {0} : {1}"))
MINIMUM = binary("Minimum", lambda xp: xp.minimum, dtypes=REAL, reference=np.minimum,
                 sweep_dtypes=(d.float32, d.float64, d.int32, d.uint8),
                 vjp=_max_min_vjp(less_equal), saves=(0, 1),
                 gpu_expr=(GPU_NUM, "({0} <= {1} || isnan((double){0})) ? {0} : {1}"))


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
    sweep_dtypes=(d.float32, d.float64, d.int32), vjp=_squared_difference_vjp, saves=(0, 1),
    gpu_expr=(GPU_NUM, "({0} - {1}) * ({0} - {1})"))


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
                      host_sync=HOST_INT_DIVISOR,
                      reference=_truncatediv_reference, domain=(-9.0, 9.0), domain_y=(1.0, 4.0),
                      sweep_dtypes=(d.float32, d.float64, d.int32, d.int64, d.uint8),
                      bad_samples=_int_zero_divisor)
TRUNCATE_MOD = binary("TruncateMod", _truncatemod_kernel, dtypes=REAL, reference=np.fmod,
                      host_sync=HOST_INT_DIVISOR,
                      domain=(-9.0, 9.0), domain_y=(1.0, 4.0),
                      sweep_dtypes=(d.float32, d.float64, d.int32, d.int64),
                      bad_samples=_int_zero_divisor)


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
