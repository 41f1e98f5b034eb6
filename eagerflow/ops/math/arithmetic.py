"""Arithmetic primitives: add, subtract, multiply, divide, negative and friends.

These are the ops Python operators map to, so they sit on the eager fast path.
Gradients are written with the ops themselves; the tape reduces broadcast gradients back to
each input's shape in one central place, so a rule here returns full-shape gradients.

Example:
    >>> import eagerflow as ef
    >>> ef.add(ef.constant([1.0, 2.0]), 1.0).numpy().tolist()
    [2.0, 3.0]
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import (
    ALL, FLOAT_COMPLEX, INT, NUMERIC, REAL, binary, public_binary, public_unary, unary,
)
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.ops.family import (
    GPU_ANY, GPU_FLOAT, GPU_NUM, HOST_INT_DIVISOR, host_sync_for_integers,
)


# Integer powers read their exponents on the host to raise TF's error (floats do not).
_NEGATIVE_POWER = host_sync_for_integers(
    "it reads integer exponents on the host to check for negative ones")


def _int_div_checked(xp, op):
    """Integer floordiv/mod that raise on a zero divisor, as TF does on CPU."""

    def kernel(x, y):
        if x.dtype.kind in "iu" and bool((y == 0).any()):
            raise errors.InvalidArgumentError(None, None, "Integer division by zero")
        return op(x, y)

    return kernel


ADD = binary("AddV2", lambda xp: xp.add, dtypes=NUMERIC, reference=np.add,
             vjp=lambda g, x, y, out: (g, g), saves=(), gpu_expr=(GPU_NUM, "{0} + {1}"))
SUB = binary("Sub", lambda xp: xp.subtract, dtypes=NUMERIC, reference=np.subtract,
             vjp=lambda g, x, y, out: (g, -g), saves=(), gpu_expr=(GPU_NUM, "{0} - {1}"))
MUL = binary("Mul", lambda xp: xp.multiply, dtypes=NUMERIC, reference=np.multiply,
             vjp=lambda g, x, y, out: (g * conj(y), g * conj(x)), saves=(0, 1),
             gpu_expr=(GPU_NUM, "{0} * {1}"))
DIV = binary("RealDiv", lambda xp: xp.true_divide, dtypes=FLOAT_COMPLEX,
             reference=np.true_divide, domain_y=(0.5, 3.0),
             vjp=lambda g, x, y, out: (g / conj(y), -g * conj(out) / conj(y)), saves=(1, "out"),
             gpu_expr=(GPU_FLOAT, "{0} / {1}"))
FLOORDIV = binary("FloorDiv", lambda xp: _int_div_checked(xp, xp.floor_divide), dtypes=REAL,
                  host_sync=HOST_INT_DIVISOR,
                  reference=np.floor_divide, domain_y=(1.0, 3.0), vjp=None)
FLOORMOD = binary("FloorMod", lambda xp: _int_div_checked(xp, xp.mod), dtypes=REAL,
                  host_sync=HOST_INT_DIVISOR,
                  reference=np.mod, domain_y=(1.0, 3.0),
                  vjp=lambda g, x, y, out: (g, -g * execute(FLOOR, (execute(DIV, (x, y)),))),
                  saves=(0, 1))
FLOOR = unary("Floor", lambda xp: xp.floor, dtypes=REAL[:4], reference=np.floor,
              gpu_expr=(GPU_FLOAT, "floor({0})"))
NEG = unary("Neg", lambda xp: xp.negative, dtypes=NUMERIC, reference=np.negative,
            vjp=lambda g, x, out: -g, saves=(), gpu_expr=(GPU_NUM, "-{0}"))
CONJ = unary("Conj", lambda xp: xp.conjugate, dtypes=NUMERIC, reference=np.conjugate,
             vjp=lambda g, x, out: conj(g), saves=())


def _zeros_like_kernel(xp):
    return lambda x: xp.zeros_like(x)


ZEROS_LIKE = unary("ZerosLike", _zeros_like_kernel, dtypes=ALL, reference=np.zeros_like,
                   family="array", gpu_expr=(GPU_ANY, "({O})0"), shape_only=(0,))
ONES_LIKE = unary("OnesLike", lambda xp: (lambda x: xp.ones_like(x)), dtypes=ALL,
                  reference=np.ones_like, family="array", gpu_expr=(GPU_ANY, "({O})1"),
                  shape_only=(0,))


def _pow_kernel(xp):
    def kernel(x, y):
        if x.dtype.kind in "iu" and bool((y < 0).any()):
            raise errors.InvalidArgumentError(
                None, None, "Integers to negative integer powers are not allowed")
        return xp.power(x, y)
    return kernel


def _pow_vjp(g, x, y, out):
    gx = g * y * (x ** (y - 1.0))
    safe_x = execute(SELECT, (greater(x, 0.0) if not x.dtype.is_complex else
                              not_equal(x, 0.0), x, ONES_LIKE_fn(x)))
    gy = g * out * log_t(safe_x)
    gy = execute(SELECT, (greater(x, 0.0) if not x.dtype.is_complex else not_equal(x, 0.0),
                          gy, zeros_like_t(gy)))
    return gx, gy


POW = binary("Pow", _pow_kernel, dtypes=NUMERIC, reference=np.power, domain=(0.5, 2.0),
             host_sync=_NEGATIVE_POWER,
             vjp=_pow_vjp, saves=(0, 1, "out"), gpu_expr=(GPU_FLOAT, "pow({0}, {1})"))

# Comparisons return bool and have no gradient. Strings compare for (in)equality, as in TF.
_STRING = registry.dtypes_lib.string
_EQ_DTYPES = ALL + (_STRING,)
_EQ_SWEEP = (registry.dtypes_lib.float32, registry.dtypes_lib.float64, registry.dtypes_lib.int32,
             registry.dtypes_lib.bool, _STRING)
_CMP = {}
for _name, _np_name, _c in (("Equal", "equal", "=="), ("NotEqual", "not_equal", "!="),
                            ("Less", "less", "<"), ("LessEqual", "less_equal", "<="),
                            ("Greater", "greater", ">"), ("GreaterEqual", "greater_equal", ">=")):
    _eq = _name in ("Equal", "NotEqual")
    _CMP[_name] = binary(
        _name, (lambda n: lambda xp: getattr(xp, n))(_np_name),
        dtypes=_EQ_DTYPES if _eq else REAL,
        out_dtype=registry.dtypes_lib.bool, reference=getattr(np, _np_name), family="math",
        sweep_dtypes=_EQ_SWEEP if _eq else None,
        gpu_expr=(GPU_ANY if _eq else GPU_NUM, "{0} %s {1}" % _c))


def _select_kernel(xp):
    return lambda c, x, y: xp.where(c, x, y)


def _select_shape(c, x, y, **attrs):
    from eagerflow.ops.family import broadcast_shapes

    return AbstractValue(broadcast_shapes(c.shape, x.shape, y.shape), x.dtype)


def _select_vjp(g, c, x, y, out):
    zeros = zeros_like_t(g)
    return None, execute(SELECT, (c, g, zeros)), execute(SELECT, (c, zeros, g))


def _select_samples(rng, dtype):
    from eagerflow.ops.family import _sample_values
    from eagerflow import dtypes as d

    out = []
    for sc, sx, sy in (((3,), (3,), (3,)), ((2, 1), (1, 3), (2, 3)), ((), (2,), (2,))):
        out.append(((_sample_values(rng, sc, d.bool, (0, 1)),
                     _sample_values(rng, sx, dtype, (-3, 3)),
                     _sample_values(rng, sy, dtype, (-3, 3))), {}))
    return out


SELECT = registry.primitive(
    "SelectV2", _select_kernel, dtypes=ALL, dtype_group=(1, 2), shape_fn=_select_shape,
    vjp=_select_vjp, saves=(0,), reference=lambda c, x, y: np.where(c, x, y),
    samples=_select_samples, family="math", gpu_expr=(GPU_ANY, "{0} ? {1} : {2}"))

add = public_binary(ADD, "add", "Returns x + y element-wise, with broadcasting.",
                    ">>> ef.add([1.0, 2.0], 3.0).numpy().tolist()\n[4.0, 5.0]")
subtract = public_binary(SUB, "subtract", "Returns x - y element-wise, with broadcasting.",
                         ">>> ef.subtract(5, 3).numpy()\nnp.int32(2)")
multiply = public_binary(MUL, "multiply", "Returns x * y element-wise, with broadcasting.",
                         ">>> ef.multiply([2.0], [3.0]).numpy().tolist()\n[6.0]")
_real_div = public_binary(DIV, "realdiv", "Returns x / y element-wise for floats.")
floordiv = public_binary(FLOORDIV, "floordiv",
                         "Returns floor(x / y) element-wise (rounds toward -inf).",
                         ">>> ef.math.floordiv(-7, 2).numpy()\nnp.int32(-4)")
floormod = public_binary(FLOORMOD, "floormod",
                         "Returns x - floor(x / y) * y: the remainder has y's sign.",
                         ">>> ef.math.floormod(-7, 2).numpy()\nnp.int32(1)")
pow = public_binary(POW, "pow", "Returns x ** y element-wise.",  # noqa: A001 - TF name
                    ">>> ef.pow(2.0, 3.0).numpy()\nnp.float32(8.0)")
negative = public_unary(NEG, "negative", "Returns -x element-wise.",
                        ">>> ef.negative(ef.constant([1, -2])).numpy().tolist()\n[-1, 2]")


def conj(x, name=None):
    """Returns the complex conjugate of ``x``; a real ``x`` is returned unchanged (as TF).

    Returning a real input itself, not a copy, matters beyond the API: every product's
    gradient reads ``g * conj(y)``, and a Conj node on a real tensor would be one more
    pass over memory in every backward graph.

    Args:
        x: A Tensor or a value convertible to one.
        name: Unused (TF compatibility).

    Returns:
        The conjugate, of x's shape and dtype (``x`` itself when it is real).

    Raises:
        InvalidArgumentError: If ``x`` is neither numeric nor complex (e.g. bool).

    Example:
        >>> import eagerflow as ef
        >>> ef.math.conj(ef.constant([1 + 2j])).numpy().tolist()
        [(1-2j)]
    """
    if not isinstance(x, Tensor):
        x = convert_to_tensor(x)
    dtype = x.dtype
    if dtype.is_floating or dtype.is_integer:
        return x
    return execute(CONJ, (x,))


conj.__module__ = "eagerflow.math"
floor = public_unary(FLOOR, "floor", "Returns the largest integer not greater than x.")
zeros_like_t = public_unary(ZEROS_LIKE, "zeros_like", "Zeros with x's shape and dtype.")
ONES_LIKE_fn = public_unary(ONES_LIKE, "ones_like", "Ones with x's shape and dtype.")
equal = public_binary(_CMP["Equal"], "equal", "Returns x == y element-wise (bool).")
not_equal = public_binary(_CMP["NotEqual"], "not_equal", "Returns x != y element-wise (bool).")
less = public_binary(_CMP["Less"], "less", "Returns x < y element-wise (bool).")
less_equal = public_binary(_CMP["LessEqual"], "less_equal", "Returns x <= y element-wise.")
greater = public_binary(_CMP["Greater"], "greater", "Returns x > y element-wise (bool).")
greater_equal = public_binary(_CMP["GreaterEqual"], "greater_equal",
                              "Returns x >= y element-wise (bool).")


def log_t(x):
    """log(x), for the gradient of Pow (the unary family is built on this module)."""
    from eagerflow.ops.math import unary_math

    return unary_math.log(x)


def divide(x, y, name=None):
    """Returns x / y element-wise (Python's true division).

    Integer inputs are converted to floating point first, as ``tf.math.divide`` does
    (int8/int16 to float32, int32/int64 to float64).

    Args:
        x: A Tensor or value convertible to one.
        y: A Tensor or value convertible to one.
        name: Unused (TF compatibility).

    Returns:
        A floating Tensor.

    Example:
        >>> import eagerflow as ef
        >>> ef.divide(ef.constant([3, 4]), 2).numpy().tolist()
        [1.5, 2.0]
    """
    return truediv(x, y)


def truediv(x, y, name=None):
    """Like :func:`divide`: integers are cast to float32 (8/16-bit) or float64 first."""
    from eagerflow.ops.math.cast import cast
    from eagerflow.tensor import Tensor, convert_to_tensor

    # A variable is read first, so the Python operand takes its dtype (``1 / v``), as in TF.
    if getattr(x, "_is_variable", False):
        x = x.read_value()
    if getattr(y, "_is_variable", False):
        y = y.read_value()
    x_dtype = x._value.dtype if x.__class__ is Tensor else None
    if x_dtype is not None and x_dtype.kind in "fc":
        return execute(DIV, (x, y))
    if x_dtype is None:
        if y.__class__ is Tensor and y._value.dtype.kind in "fc":
            return execute(DIV, (x, y))
        # isinstance, not a class check: a symbolic y (inside @function) gives x its dtype.
        x = convert_to_tensor(x) if not isinstance(y, Tensor) else convert_to_tensor(
            x, dtype=y.dtype)
        x_dtype = x._value.dtype
        if x_dtype.kind in "fc":
            return execute(DIV, (x, y))
    if x_dtype.kind in "iu":
        if y.__class__ is Tensor and y._value.dtype != x_dtype:
            raise errors.InvalidArgumentError(
                None, "truediv", "truediv: x and y must have the same dtype, got %s and %s."
                % (x.dtype.name, y.dtype.name))
        target = "float32" if x_dtype.itemsize <= 2 else "float64"
        y = convert_to_tensor(y, dtype=x.dtype)
        return execute(DIV, (cast(x, target), cast(y, target)))
    return execute(DIV, (x, y))


def where(condition, x=None, y=None, name=None):
    """Selects from x or y by condition; with only condition, returns its true indices.

    Args:
        condition: A bool Tensor.
        x: Values where condition is True (broadcast with condition and y).
        y: Values where condition is False.
        name: Unused.

    Returns:
        With x and y: the selected values. Without: an int64 [num_true, rank] Tensor of
        coordinates.

    Gradients, as TF's: the gradient flows to ``x`` where ``condition`` holds and to ``y``
    elsewhere; the unselected branch receives zeros. Those zeros still pass through the
    unselected branch's own gradient, so a branch that is infinite or NaN there can leak
    ``0 * inf = NaN``, except through ``sqrt``, ``rsqrt`` and ``reciprocal``, whose gradients
    are 0 wherever their incoming gradient is 0 (TF's SqrtGrad): ``where(x > 0, sqrt(x), 0)``
    has gradient 0, not NaN, where ``x <= 0``. To keep other branches finite, make their
    input safe first: ``where(x > 0, log(where(x > 0, x, 1)), 0)``.

    Example:
        >>> import eagerflow as ef
        >>> ef.where([True, False], 1.0, 2.0).numpy().tolist()
        [1.0, 2.0]
        >>> ef.where([True, False, True]).numpy().tolist()
        [[0], [2]]
    """
    if (x is None) != (y is None):
        raise errors.InvalidArgumentError(
            None, "where", "where: x and y must both be given or both be omitted.")
    if x is None:
        from eagerflow.ops.array import shape_ops

        return shape_ops.where_indices(condition)
    return execute(SELECT, (condition, x, y))


INT_TYPES = INT

__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "floordiv", "floormod", "pow",
    "negative", "conj", "floor", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "where",
]
_BINARY = ["add", "subtract", "multiply", "divide", "truediv", "floordiv", "floormod", "pow",
           "negative", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
EXPORTS = {
    "": _BINARY + ["where", "floor"],
    "math": _BINARY + ["conj", "floor"],
}
realdiv = _real_div
EXPORTS[""].append("realdiv")
