"""Reduction primitives: Sum, Prod, Mean, Max, Min, Any, All, ArgMax, ArgMin, and the public
reduce_sum ... reduce_all, argmax and argmin.

Gradients are written with a private primitive, ``BroadcastReduced(g, like)``, that puts
the reduced axes back into ``g`` and broadcasts it to ``like``'s shape (optionally dividing
by the number of reduced elements). It is the adjoint of Sum (and of Mean), and they are
each other's gradients, so higher-order gradients and tracing need no reshape op.

Example:
    >>> import eagerflow as ef
    >>> x = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> ef.reduce_sum(x, axis=-1).numpy().tolist()
    [3.0, 7.0]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.backend import cpu_blas
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import conj, equal
from eagerflow.ops.math.cast import cast
from eagerflow.ops import composite
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import BOOL, GPU_FLOAT, NUMERIC, REAL
from eagerflow.ops.reduce import (
    _axes_of, _count, _kept_shape, _low_precision, _normalize_axes, _reduced_shape, _single_axis,
    _values, _with_rank,
)
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor
from eagerflow.ops.reduce.scans import CUMPROD

__all__ = [
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
    "reduce_all", "argmax", "argmin",
]

EXPORTS = {
    "": ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
         "reduce_all", "argmax", "argmin"],
    "math": ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
             "reduce_all", "argmax", "argmin"],
}


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------

def _blas_sum(x, axis, keepdims):
    """The float sum over leading or trailing axes as one GEMV (``cpu_blas.sum_axes``), or
    None where that form does not apply."""
    if axis is None or x.size < cpu_blas.SUM_MIN_ELEMENTS:
        return None
    out = cpu_blas.sum_axes(x, axis)
    if out is not None and keepdims:
        out = out.reshape(_reduced_shape(x.shape, axis, True))
    return out


def _sum_kernel(xp):
    # numpy's ufunc reduce directly: ndarray.sum goes through a Python wrapper first.
    add_reduce = np.add.reduce if xp.module is np else None

    def kernel(x, *, axis, keepdims):
        if _low_precision(x.dtype):
            return x.sum(axis=axis, keepdims=keepdims, dtype=np.float32).astype(x.dtype)
        if add_reduce is not None:
            out = _blas_sum(x, axis, keepdims)
            if out is not None:
                return out
            return add_reduce(x, axis, x.dtype, None, keepdims)
        return x.sum(axis=axis, keepdims=keepdims, dtype=x.dtype)
    return kernel


def _prod_kernel(xp):
    def kernel(x, *, axis, keepdims):
        if _low_precision(x.dtype):
            return x.prod(axis=axis, keepdims=keepdims, dtype=np.float32).astype(x.dtype)
        return x.prod(axis=axis, keepdims=keepdims, dtype=x.dtype)
    return kernel


def _int_mean(xp, total, n):
    """Integer mean as TF computes it: the sum divided by the count, truncated toward 0."""
    n = xp.asarray(max(n, 1), dtype=total.dtype)  # an empty int mean is 0, not a crash
    if total.dtype.kind == "u":
        return total // n
    return (total - xp.fmod(total, n)) // n


def _mean_kernel(xp):
    def kernel(x, *, axis, keepdims):
        n = x.size if axis is None else _count(x.shape, axis)
        if x.dtype.kind in "iu":
            return _int_mean(xp, x.sum(axis=axis, keepdims=keepdims, dtype=x.dtype), n)
        if _low_precision(x.dtype):
            total = x.sum(axis=axis, keepdims=keepdims, dtype=np.float32)
            return (total / n).astype(x.dtype)
        # Dividing by a Python int keeps the dtype; over no elements 0 / 0 is nan, as in TF.
        total = _blas_sum(x, axis, keepdims) if xp.module is np else None
        if total is None:
            total = x.sum(axis=axis, keepdims=keepdims, dtype=x.dtype)
        return total / n
    return kernel


def _lowest(dt):
    if dt.kind in "iu":
        return np.iinfo(dt).min
    if dt.kind == "b":
        return False
    return -np.inf


def _highest(dt):
    if dt.kind in "iu":
        return np.iinfo(dt).max
    if dt.kind == "b":
        return True
    return np.inf


def _extreme_kernel(method, empty_value):
    """Max/Min; an empty reduction gives the identity (-inf/+inf, or the int limits), as TF.

    NaN propagates (TF >= 2.4 and numpy agree on this).
    """
    def factory(xp):
        def kernel(x, *, axis, keepdims):
            if x.size == 0 and _count(x.shape, axis) == 0:
                shape = _reduced_shape(x.shape, axis, keepdims)
                return xp.full(shape, empty_value(x.dtype), dtype=x.dtype)
            return getattr(x, method)(axis=axis, keepdims=keepdims)
        return kernel
    return factory


def _bool_kernel(method):
    def factory(xp):
        return lambda x, *, axis, keepdims: getattr(x, method)(axis=axis, keepdims=keepdims)
    return factory


def _broadcast_reduced_kernel(xp):
    def kernel(g, like, *, axis, keepdims, mean):
        shape = like.shape
        if not keepdims:
            g = xp.reshape(g, _kept_shape(shape, axis))
        if mean:
            n = xp.asarray(max(_count(shape, axis), 1), dtype=g.dtype)
            g = xp.true_divide(g, n).astype(g.dtype, copy=False)
        # Filling a new array is several times cheaper than numpy's broadcast_to + copy.
        out = xp.empty(shape, dtype=g.dtype)
        out[...] = g
        return out
    return kernel


def _arg_kernel(method):
    def factory(xp):
        fn = getattr(xp, method)

        def kernel(x, *, axis, output_type):
            if x.shape[axis] == 0:
                raise errors.InvalidArgumentError(
                    None, None, "Reduction axis %d is empty in shape %s; %s needs at least "
                    "one element along the axis." % (axis, list(x.shape), method))
            return fn(x, axis=axis).astype(output_type)  # dtype names are numpy's
        return kernel
    return factory


# --------------------------------------------------------------------------------------
# numpy references (test sweeps)
# --------------------------------------------------------------------------------------

def _ref_sum(x, *, axis, keepdims):
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


def _ref_prod(x, *, axis, keepdims):
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


def _ref_mean(x, *, axis, keepdims):
    if x.dtype.kind in "iu":
        total = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
        n = max(_count(x.shape, axis), 1)
        return (np.trunc(total / n)).astype(x.dtype)
    with np.errstate(all="ignore"):
        total = np.sum(x.astype(np.float64 if x.dtype.kind == "f" else np.complex128),
                       axis=axis, keepdims=keepdims)
        return np.asarray(total / _count(x.shape, axis)).astype(x.dtype)


def _ref_max(x, *, axis, keepdims):
    return np.max(x, axis=axis, keepdims=keepdims, initial=_lowest(x.dtype))


def _ref_min(x, *, axis, keepdims):
    return np.min(x, axis=axis, keepdims=keepdims, initial=_highest(x.dtype))


def _ref_broadcast_reduced(g, like, *, axis, keepdims, mean):
    out = np.broadcast_to(np.reshape(g, _kept_shape(like.shape, axis)), like.shape)
    if mean:
        return (out / max(_count(like.shape, axis), 1)).astype(g.dtype)
    return out


# --------------------------------------------------------------------------------------
# Samples for the sweeps
# --------------------------------------------------------------------------------------

_REDUCE_CASES = [((), None), ((5,), None), ((5,), (0,)), ((2, 3), (1,)), ((2, 3), (0, 1)),
                 ((2, 3, 4), (0, 2)), ((2, 3, 4), ()), ((0,), None), ((0, 3), (1,)),
                 ((2, 0), (1,)), ((3, 2), (0,))]


def _reduce_samples(rng, dtype):
    return [((_values(rng, shape, dtype),), {"axis": axis, "keepdims": bool(i % 2)})
            for i, (shape, axis) in enumerate(_REDUCE_CASES)]


def _reduce_grad_samples(rng):
    # Reductions over no elements (max = -inf, mean = nan) have no finite differences.
    return [((rng.uniform(-2, 2, size=shape),), {"axis": axis, "keepdims": bool(i % 2)})
            for i, (shape, axis) in enumerate(_REDUCE_CASES)
            if _count(shape, axis) or not np.prod(_reduced_shape(shape, axis, False))]


def _prod_grad_samples(rng):
    out = _reduce_grad_samples(rng)
    one_zero = rng.uniform(0.5, 2, size=(3, 4))
    one_zero[1, 2] = 0.0
    two_zeros = one_zero.copy()
    two_zeros[1, 0] = 0.0
    for x in (one_zero, two_zeros):
        for axis in (None, (1,), (0,), (0, 1)):
            out.append(((x,), {"axis": axis, "keepdims": False}))
    return out


def _reduce_bad(rng, dtype=d.float64):
    x = _values(rng, (2, 3), dtype)
    return [((x,), {"axis": (2,), "keepdims": False}, errors.InvalidArgumentError),
            ((x,), {"axis": (-3,), "keepdims": True}, errors.InvalidArgumentError)]


def _broadcast_reduced_samples(rng, dtype):
    out = []
    for i, (shape, axis) in enumerate(_REDUCE_CASES):
        keep = bool(i % 2)
        g = _values(rng, _reduced_shape(shape, axis, keep), dtype)
        out.append(((g, np.zeros(shape, dtype.np_dtype)),
                    {"axis": axis, "keepdims": keep, "mean": i % 3 == 0}))
    return out


def _broadcast_reduced_grad_samples(rng):
    return [((args[0].astype(np.float64), args[1].astype(np.float64)), attrs)
            for args, attrs in _broadcast_reduced_samples(rng, d.float64)]


def _arg_samples(rng, dtype):
    out = []
    for shape, axis in (((5,), 0), ((2, 3), 1), ((2, 3), 0), ((2, 3, 4), 2), ((0, 3), 1)):
        for output_type in ("int64", "int32"):
            out.append(((_values(rng, shape, dtype),), {"axis": axis, "output_type": output_type}))
    return out


def _arg_bad(rng):
    return [((np.zeros((2, 0)),), {"axis": 1, "output_type": "int64"},
             errors.InvalidArgumentError),
            ((np.zeros((2, 3)),), {"axis": 2, "output_type": "int64"},
             errors.InvalidArgumentError)]


# --------------------------------------------------------------------------------------
# Shape rules
# --------------------------------------------------------------------------------------

def _reduce_shape(x, *, axis, keepdims):
    if x.shape is None:  # unknown rank: only a full reduction to a scalar is known
        return AbstractValue(() if axis is None and not keepdims else None, x.dtype)
    return AbstractValue(_reduced_shape(x.shape, axis, keepdims), x.dtype)


def _broadcast_reduced_shape(g, like, *, axis, keepdims, mean):
    return AbstractValue(like.shape, g.dtype)


def _arg_shape(x, *, axis, output_type):
    if x.shape is None:
        return AbstractValue(None, output_type)
    return AbstractValue(tuple(s for i, s in enumerate(x.shape) if i != axis), output_type)


# --------------------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------------------

def _reduction(name, forward, dtypes, reference, vjp=None, saves=(), **kwargs):
    kwargs.setdefault("samples", _reduce_samples)
    kwargs.setdefault("bad_samples", _reduce_bad)
    return registry.primitive(
        name, forward, dtypes=dtypes, shape_fn=_reduce_shape, reference=reference, vjp=vjp,
        saves=saves, family="reduce", **kwargs)


def _expand(t, like, axis, keepdims, mean=False):
    """``t`` (a reduction's shape) broadcast back to ``like``'s shape."""
    return execute(BROADCAST_REDUCED, (t, like),
                   {"axis": axis, "keepdims": keepdims, "mean": mean})


def _sum_vjp(g, x, out, *, axis, keepdims):
    return _expand(g, x, axis, keepdims)


def _mean_vjp(g, x, out, *, axis, keepdims):
    return _expand(g, x, axis, keepdims, mean=True)


def _broadcast_reduced_vjp(g, x, like, out, *, axis, keepdims, mean):
    attrs = {"axis": axis, "keepdims": keepdims}
    if not mean:
        return execute(SUM, (g,), attrs), None
    dims = g.shape.as_list() if g.shape.rank is not None else [None]
    if None in dims:
        return execute(MEAN, (g,), attrs), None
    # sum / max(n, 1) rather than Mean: over no elements the adjoint is 0, not nan.
    return execute(SUM, (g,), attrs) / max(_count(dims, axis), 1), None


def _extreme_vjp(g, x, out, *, axis, keepdims):
    """Max/Min: the gradient goes to the selected elements, split equally among ties (TF)."""
    picked = cast(equal(x, _expand(out, x, axis, keepdims)), g.dtype)
    ties = execute(SUM, (picked,), {"axis": axis, "keepdims": True})
    return _expand(g, x, axis, keepdims) * (picked / ties)


def _prod_vjp(g, x, out, *, axis, keepdims):
    """d prod / d x_i is the product of all other elements, computed without division.

    For one reduced axis the product of the others is exclusive cumprod from the left times
    exclusive cumprod from the right, which is exact with zeros. Several axes compose: the
    product over everything but one element is (others along the innermost axis) times (the
    innermost-axis products of all other slices along the next axis), and so on outward.
    """
    axes = _axes_of(axis, x.shape.rank)
    gx = _expand(g, x, axis, keepdims)
    if not axes:
        return gx
    others = None
    q = x
    for a in reversed(axes):
        left = execute(CUMPROD, (q,), {"axis": a, "exclusive": True, "reverse": False})
        right = execute(CUMPROD, (q,), {"axis": a, "exclusive": True, "reverse": True})
        part = left * right
        others = part if others is None else others * part
        q = execute(PROD, (q,), {"axis": (a,), "keepdims": True})
    return gx * conj(others)


# The GPU reductions a fused elementwise region may end in (``gpu_reduce``, see
# ``registry.Primitive``): float sums accumulate in the input's type, as cupy's own sum;
# the mean divides by the count in that type, as the kernel's ``total / n``; the maximum
# propagates NaN (as Maximum's expression) and is -inf over no elements, as TF.
SUM = _reduction("Sum", _sum_kernel, NUMERIC, _ref_sum, vjp=_sum_vjp, saves=(0,),
                 grad_samples=_reduce_grad_samples,
                 gpu_reduce=(GPU_FLOAT, "a + b", "0", "out0 = a"))
PROD = _reduction("Prod", _prod_kernel, NUMERIC, _ref_prod, vjp=_prod_vjp, saves=(0,),
                  grad_samples=_prod_grad_samples)
MEAN = _reduction("Mean", _mean_kernel, NUMERIC, _ref_mean, vjp=_mean_vjp, saves=(0,),
                  grad_samples=_reduce_grad_samples,
                  gpu_reduce=(GPU_FLOAT, "a + b", "0",
                              "out0 = a / ({R})(_in_ind.size() / _out_ind.size())"))
MAX = _reduction("Max", _extreme_kernel("max", _lowest), REAL, _ref_max, vjp=_extreme_vjp,
                 saves=(0, "out"), grad_samples=_reduce_grad_samples,
                 gpu_reduce=(GPU_FLOAT, "(a >= b || isnan((double)a)) ? a : b", "-{inf}",
                             "out0 = a"))
MIN = _reduction("Min", _extreme_kernel("min", _highest), REAL, _ref_min, vjp=_extreme_vjp,
                 saves=(0, "out"), grad_samples=_reduce_grad_samples)
ANY = _reduction("Any", _bool_kernel("any"), BOOL,
                 lambda x, *, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims),
                 sweep_dtypes=BOOL, bad_samples=lambda rng: _reduce_bad(rng, d.bool))
ALL_ = _reduction("All", _bool_kernel("all"), BOOL,
                  lambda x, *, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims),
                  sweep_dtypes=BOOL, bad_samples=lambda rng: _reduce_bad(rng, d.bool))

BROADCAST_REDUCED = registry.primitive(
    "BroadcastReduced", _broadcast_reduced_kernel, dtypes=NUMERIC, dtype_group=(0,),
    shape_fn=_broadcast_reduced_shape, vjp=_broadcast_reduced_vjp, saves=(),
    reference=_ref_broadcast_reduced, samples=_broadcast_reduced_samples,
    grad_samples=_broadcast_reduced_grad_samples, family="reduce", shape_only=(1,),
    doc="Gradient helper: a reduction's result broadcast back over the reduced axes.")

ARGMAX = registry.primitive(
    "ArgMax", _arg_kernel("argmax"), dtypes=REAL + BOOL, shape_fn=_arg_shape,
    reference=lambda x, *, axis, output_type: np.argmax(x, axis=axis).astype(output_type),
    samples=_arg_samples, bad_samples=_arg_bad, family="reduce",
    sweep_dtypes=(d.float32, d.float64, d.int32))
ARGMIN = registry.primitive(
    "ArgMin", _arg_kernel("argmin"), dtypes=REAL + BOOL, shape_fn=_arg_shape,
    reference=lambda x, *, axis, output_type: np.argmin(x, axis=axis).astype(output_type),
    samples=_arg_samples, bad_samples=_arg_bad, family="reduce",
    sweep_dtypes=(d.float32, d.float64, d.int32))


# --------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------

_ALL_AXES = ({"axis": None, "keepdims": False}, {"axis": None, "keepdims": True})
_ATTR_CACHE = {}


def _reduce(prim, op, x, axis, keepdims):
    """The public reduction ``op`` of ``x``: a composite input (a ragged tensor) goes to the
    handler registered for ``op``; a tensor to ``prim`` with normalized, cached attrs."""
    if x.__class__ is not Tensor:
        ragged = composite.handler(op, x)
        if ragged is not None:
            return ragged(x, axis, keepdims)
    if axis is None:
        return execute(prim, (x,), _ALL_AXES[1 if keepdims else 0])
    x, rank = _with_rank(x)
    keepdims = bool(keepdims)
    key = None
    if isinstance(axis, (int, tuple)) and not isinstance(axis, bool):
        key = (op, axis, rank, keepdims)
        attrs = _ATTR_CACHE.get(key)
        if attrs is not None:
            return execute(prim, (x,), attrs)
    attrs = {"axis": _normalize_axes(axis, rank, op), "keepdims": keepdims}
    if key is not None and len(_ATTR_CACHE) < 4096:
        _ATTR_CACHE[key] = attrs
    return execute(prim, (x,), attrs)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the sum of elements across dimensions of a tensor.

    Integer sums keep the input dtype (and wrap on overflow, as in TF); float16 and
    bfloat16 are accumulated in float32. The sum over no elements is 0.

    Args:
        input_tensor: The tensor to reduce (numeric).
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints in
            ``[-rank, rank)``.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor, of the input's dtype.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated, or the dtype is bool.

    Example:
        >>> import eagerflow as ef
        >>> ef.reduce_sum(ef.constant([[1, 1, 1], [1, 1, 1]]), 0).numpy().tolist()
        [2, 2, 2]
    """
    return _reduce(SUM, "reduce_sum", input_tensor, axis, keepdims)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the product of elements across dimensions of a tensor.

    The gradient is exact when inputs contain zeros. The product over no elements is 1.

    Args:
        input_tensor: The tensor to reduce (numeric).
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor, of the input's dtype.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated.

    Example:
        >>> import eagerflow as ef
        >>> ef.reduce_prod(ef.constant([[1.0, 2.0], [3.0, 4.0]]), axis=1).numpy().tolist()
        [2.0, 12.0]
    """
    return _reduce(PROD, "reduce_prod", input_tensor, axis, keepdims)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the mean of elements across dimensions of a tensor.

    As in TF, the mean of an integer tensor is an integer: the sum divided by the count,
    truncated toward zero (``reduce_mean([1, 2]) == 1``). Cast to float first for the exact
    mean. The mean over no elements is nan for floats (and 0 for integers).

    Args:
        input_tensor: The tensor to reduce (numeric).
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor, of the input's dtype.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated, or the dtype is bool.

    Example:
        >>> import eagerflow as ef
        >>> ef.reduce_mean(ef.constant([[1.0, 1.0], [2.0, 2.0]]), 0).numpy().tolist()
        [1.5, 1.5]
        >>> ef.reduce_mean(ef.constant([1, 0, 1, 0])).numpy()
        np.int32(0)
    """
    return _reduce(MEAN, "reduce_mean", input_tensor, axis, keepdims)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the maximum of elements across dimensions of a tensor.

    NaN propagates. The maximum over no elements is the dtype's lowest value (-inf for
    floats), as in TF. The gradient is split equally among tied maxima.

    Args:
        input_tensor: The tensor to reduce (real numbers).
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor, of the input's dtype.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated, or the dtype is not real.

    Example:
        >>> import eagerflow as ef
        >>> ef.reduce_max(ef.constant([[1, 5], [4, 2]]), axis=1).numpy().tolist()
        [5, 4]
    """
    return _reduce(MAX, "reduce_max", input_tensor, axis, keepdims)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the minimum of elements across dimensions of a tensor.

    NaN propagates; the minimum over no elements is the dtype's highest value (+inf for
    floats). The gradient is split equally among tied minima.

    Args:
        input_tensor: The tensor to reduce (real numbers).
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor, of the input's dtype.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated, or the dtype is not real.

    Example:
        >>> import eagerflow as ef
        >>> ef.reduce_min(ef.constant([[1, 5], [4, 2]]), axis=0).numpy().tolist()
        [1, 2]
    """
    return _reduce(MIN, "reduce_min", input_tensor, axis, keepdims)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the logical or of elements across dimensions of a bool tensor.

    Args:
        input_tensor: A bool tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        A bool tensor (False for an empty reduction).

    Raises:
        InvalidArgumentError: If an axis is out of range or the input is not bool.

    Example:
        >>> import eagerflow as ef
        >>> ef.reduce_any(ef.constant([[True, False], [False, False]]), 1).numpy().tolist()
        [True, False]
    """
    return _reduce(ANY, "reduce_any", input_tensor, axis, keepdims)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the logical and of elements across dimensions of a bool tensor.

    Args:
        input_tensor: A bool tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        A bool tensor (True for an empty reduction).

    Raises:
        InvalidArgumentError: If an axis is out of range or the input is not bool.

    Example:
        >>> import eagerflow as ef
        >>> ef.reduce_all(ef.constant([[True, True], [False, True]]), 1).numpy().tolist()
        [True, False]
    """
    return _reduce(ALL_, "reduce_all", input_tensor, axis, keepdims)


def _arg(prim, op, input, axis, output_type):
    out = d.as_dtype(output_type)
    if out not in (d.int32, d.int64, d.int16, d.uint16):
        raise errors.InvalidArgumentError(
            None, op, "%s: output_type must be int16, uint16, int32 or int64, got %s."
            % (op, out.name))
    x, rank = _with_rank(input)
    a = _single_axis(0 if axis is None else axis, rank, op)
    return execute(prim, (x,), {"axis": a, "output_type": out.name})


def argmax(input, axis=None, output_type=d.int64, name=None):  # noqa: A002
    """Returns the index of the largest value along an axis (the first one on ties).

    Args:
        input: A real or bool tensor of rank >= 1.
        axis: The axis to reduce (default 0), in ``[-rank, rank)``.
        output_type: int64 (default), int32, int16 or uint16.
        name: Unused (TF compatibility).

    Returns:
        A tensor of ``output_type`` with the axis removed.

    Raises:
        InvalidArgumentError: If the axis is out of range or has length 0.

    Example:
        >>> import eagerflow as ef
        >>> ef.argmax(ef.constant([[1, 9, 3], [7, 2, 7]]), axis=1).numpy().tolist()
        [1, 0]
    """
    return _arg(ARGMAX, "argmax", input, axis, output_type)


def argmin(input, axis=None, output_type=d.int64, name=None):  # noqa: A002
    """Returns the index of the smallest value along an axis (the first one on ties).

    Args:
        input: A real or bool tensor of rank >= 1.
        axis: The axis to reduce (default 0), in ``[-rank, rank)``.
        output_type: int64 (default), int32, int16 or uint16.
        name: Unused (TF compatibility).

    Returns:
        A tensor of ``output_type`` with the axis removed.

    Raises:
        InvalidArgumentError: If the axis is out of range or has length 0.

    Example:
        >>> import eagerflow as ef
        >>> ef.argmin(ef.constant([[1, 9, 3], [7, 2, 7]]), axis=0).numpy().tolist()
        [0, 1, 0]
    """
    return _arg(ARGMIN, "argmin", input, axis, output_type)
