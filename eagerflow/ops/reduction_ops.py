"""Reductions and scans: ``reduce_sum`` and friends, ``argmax``, ``cumsum``, ``cumprod``.

A reduction primitive takes two static attrs: ``axis``, a sorted tuple of non-negative axes
or None for "every axis", and ``keepdims``. The public functions turn TF's many axis forms
(None, an int, a list, a 1-D int tensor, negative values) into that tuple and reject
out-of-range or repeated axes with the op, the axis, the rank and the valid range.

Gradients are written with a private primitive, ``BroadcastReduced(g, like)``, that puts
the reduced axes back into ``g`` and broadcasts it to ``like``'s shape (optionally dividing
by the number of reduced elements). It is the adjoint of Sum (and of Mean), and they are
each other's gradients, so higher-order gradients and tracing need no reshape op.

The composites (``reduce_logsumexp``, ``reduce_variance``, ``reduce_std``,
``reduce_euclidean_norm``, ``count_nonzero``) are plain functions of primitives.

Example:
    >>> import eagerflow as ef
    >>> x = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> ef.reduce_sum(x, axis=-1).numpy().tolist()
    [3.0, 7.0]
"""

from __future__ import annotations

import operator

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.arithmetic import SELECT, conj, equal, not_equal, zeros_like_t
from eagerflow.ops.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import BOOL, FLOAT, NUMERIC, REAL
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = [
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
    "reduce_all", "reduce_logsumexp", "reduce_variance", "reduce_std",
    "reduce_euclidean_norm", "count_nonzero", "argmax", "argmin", "cumsum", "cumprod",
    "cumulative_logsumexp",
]

EXPORTS = {
    "": ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
         "reduce_all", "reduce_logsumexp", "argmax", "argmin", "cumsum"],
    "math": ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
             "reduce_any", "reduce_all", "reduce_logsumexp", "reduce_variance", "reduce_std",
             "reduce_euclidean_norm", "count_nonzero", "argmax", "argmin", "cumsum", "cumprod",
             "cumulative_logsumexp"],
}


# --------------------------------------------------------------------------------------
# Axis handling (shared by the kernels, the shape rules and the public functions)
# --------------------------------------------------------------------------------------

def _axes_of(axis, ndim):
    """The reduced axes as non-negative ints (attr None means every axis)."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(a % ndim for a in axis) if ndim else ()


def _kept_shape(shape, axis):
    """``shape`` with each reduced axis set to 1 (the keepdims shape)."""
    axes = _axes_of(axis, len(shape))
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _reduced_shape(shape, axis, keepdims):
    axes = _axes_of(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _count(shape, axis):
    n = 1
    for a in _axes_of(axis, len(shape)):
        n *= shape[a]
    return n


def _low_precision(dt):
    """float16/bfloat16: accumulate in float32 (more accurate than the input type)."""
    return dt.itemsize == 2 and dt.kind in "fV"


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------

def _sum_kernel(xp):
    def kernel(x, *, axis, keepdims):
        if _low_precision(x.dtype):
            return x.sum(axis=axis, keepdims=keepdims, dtype=np.float32).astype(x.dtype)
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
        return x.sum(axis=axis, keepdims=keepdims, dtype=x.dtype) / n
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
        out = xp.broadcast_to(g, shape)
        if mean:
            n = xp.asarray(max(_count(shape, axis), 1), dtype=g.dtype)
            return xp.true_divide(out, n).astype(g.dtype, copy=False)
        return xp.array(out)  # a copy: later kernels may write into their outputs
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


def _axis_slice(ndim, axis, sl):
    index = [slice(None)] * ndim
    index[axis] = sl
    return tuple(index)


def _scan_kernel(method, identity):
    """Cumsum/Cumprod with TF's ``exclusive`` (shift by one, identity first) and ``reverse``."""
    def factory(xp):
        scan = getattr(xp, method)

        def kernel(x, *, axis, exclusive, reverse):
            if reverse:
                x = xp.flip(x, axis)
            acc = np.float32 if _low_precision(x.dtype) else x.dtype
            out = scan(x, axis=axis, dtype=acc).astype(x.dtype, copy=False)
            if exclusive and x.shape[axis]:
                shifted = xp.empty_like(out)
                shifted[_axis_slice(x.ndim, axis, slice(0, 1))] = identity
                shifted[_axis_slice(x.ndim, axis, slice(1, None))] = \
                    out[_axis_slice(x.ndim, axis, slice(0, -1))]
                out = shifted
            if reverse:
                out = xp.flip(out, axis)
            return out
        return kernel
    return factory


def _logaddexp_scan(xp, x, axis):
    """Running log(sum(exp)) along ``axis``, accurate whatever the spread of the values."""
    try:
        return xp.logaddexp.accumulate(x, axis=axis)
    except (AttributeError, NotImplementedError, TypeError):
        # Backends without ufunc.accumulate: shift by the slice maximum (less accurate when
        # values along the axis differ by more than the dtype's exp range).
        m = x.max(axis=axis, keepdims=True) if x.size else xp.zeros_like(x)
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
        with np.errstate(divide="ignore"):
            return xp.log(xp.cumsum(xp.exp(x - m), axis=axis)) + m


def _cumulative_logsumexp_kernel(xp):
    def kernel(x, *, axis, exclusive, reverse):
        if reverse:
            x = xp.flip(x, axis)
        out = _logaddexp_scan(xp, x, axis).astype(x.dtype, copy=False)
        if exclusive and x.shape[axis]:
            shifted = xp.empty_like(out)
            shifted[_axis_slice(x.ndim, axis, slice(0, 1))] = -np.inf
            shifted[_axis_slice(x.ndim, axis, slice(1, None))] = \
                out[_axis_slice(x.ndim, axis, slice(0, -1))]
            out = shifted
        if reverse:
            out = xp.flip(out, axis)
        return out
    return kernel


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


def _ref_scan(method, identity):
    def ref(x, *, axis, exclusive, reverse):
        if reverse:
            x = np.flip(x, axis)
        out = getattr(np, method)(x, axis=axis, dtype=x.dtype)
        if exclusive and x.shape[axis]:
            pad = np.full_like(np.take(out, [0], axis=axis), identity)
            out = np.concatenate([pad, np.take(out, np.arange(x.shape[axis] - 1), axis=axis)],
                                 axis=axis)
        return np.flip(out, axis) if reverse else out
    return ref


def _ref_clse(x, *, axis, exclusive, reverse):
    x64 = x.astype(np.float64)
    if reverse:
        x64 = np.flip(x64, axis)
    out = np.logaddexp.accumulate(x64, axis=axis)
    if exclusive and x.shape[axis]:
        pad = np.full_like(np.take(out, [0], axis=axis), -np.inf)
        out = np.concatenate([pad, np.take(out, np.arange(x.shape[axis] - 1), axis=axis)],
                             axis=axis)
    return (np.flip(out, axis) if reverse else out).astype(x.dtype)


# --------------------------------------------------------------------------------------
# Samples for the sweeps
# --------------------------------------------------------------------------------------

_REDUCE_CASES = [((), None), ((5,), None), ((5,), (0,)), ((2, 3), (1,)), ((2, 3), (0, 1)),
                 ((2, 3, 4), (0, 2)), ((2, 3, 4), ()), ((0,), None), ((0, 3), (1,)),
                 ((2, 0), (1,)), ((3, 2), (0,))]


def _values(rng, shape, dtype, low=-3.0, high=3.0):
    np_dt = dtype.np_dtype
    if dtype.is_bool:
        return rng.random(shape) > 0.5
    if dtype.is_integer:
        lo = max(int(low), int(np.iinfo(np_dt).min))
        return rng.integers(lo, int(high) + 1, size=shape).astype(np_dt)
    v = rng.uniform(low, high, size=shape)
    if dtype.is_complex:
        v = v + 1j * rng.uniform(low, high, size=shape)
    return np.asarray(v).astype(np_dt)


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


_SCAN_CASES = [((5,), 0), ((2, 3), 1), ((2, 3), 0), ((2, 3, 4), 1), ((0,), 0), ((2, 0), 1)]


def _scan_samples(rng, dtype):
    out = []
    for shape, axis in _SCAN_CASES:
        for exclusive in (False, True):
            for reverse in (False, True):
                out.append(((_values(rng, shape, dtype, -2, 2),),
                            {"axis": axis, "exclusive": exclusive, "reverse": reverse}))
    return out


def _scan_grad_samples(rng):
    return [((args[0].astype(np.float64),), attrs)
            for args, attrs in _scan_samples(rng, d.float64)]


def _cumprod_grad_samples(rng):
    out = _scan_grad_samples(rng)
    x = rng.uniform(0.5, 2.0, size=(2, 6))
    x[0, 2] = 0.0
    x[1, 1] = 0.0
    x[1, 4] = 0.0
    for exclusive in (False, True):
        for reverse in (False, True):
            out.append(((x,), {"axis": 1, "exclusive": exclusive, "reverse": reverse}))
    return out


def _scan_bad(rng):
    return [((np.zeros((2, 3)),), {"axis": 2, "exclusive": False, "reverse": False},
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


def _scan_shape(x, *, axis, exclusive, reverse):
    return AbstractValue(x.shape, x.dtype)


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


SUM = _reduction("Sum", _sum_kernel, NUMERIC, _ref_sum, vjp=_sum_vjp, saves=(0,),
                 grad_samples=_reduce_grad_samples)
PROD = _reduction("Prod", _prod_kernel, NUMERIC, _ref_prod, vjp=_prod_vjp, saves=(0,),
                  grad_samples=_prod_grad_samples)
MEAN = _reduction("Mean", _mean_kernel, NUMERIC, _ref_mean, vjp=_mean_vjp, saves=(0,),
                  grad_samples=_reduce_grad_samples)
MAX = _reduction("Max", _extreme_kernel("max", _lowest), REAL, _ref_max, vjp=_extreme_vjp,
                 saves=(0, "out"), grad_samples=_reduce_grad_samples)
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
    grad_samples=_broadcast_reduced_grad_samples, family="reduce",
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


def _cumsum_vjp(g, x, out, *, axis, exclusive, reverse):
    return execute(CUMSUM, (g,), {"axis": axis, "exclusive": exclusive, "reverse": not reverse})


def _cumprod_vjp(g, x, out, *, axis, exclusive, reverse):
    """Exact with zeros (TF divides by x and gives nan/inf there).

    Along the scan, let z be the first zero of x. Before z the usual rule applies
    (sum of later g_j * out_j, divided by x_i, which is nonzero there); at z the same sum is
    taken with x_z replaced by one; after z every later product contains x_z, so it is zero.
    """
    fwd = {"axis": axis, "exclusive": exclusive, "reverse": reverse}
    back = {"axis": axis, "exclusive": exclusive, "reverse": not reverse}
    nonzero = cast(not_equal(x, 0), "int32")
    before = equal(execute(CUMPROD, (nonzero,), {"axis": axis, "exclusive": False,
                                                 "reverse": reverse}), 1)
    upto = execute(CUMPROD, (nonzero,), {"axis": axis, "exclusive": True, "reverse": reverse})
    at_first = equal(upto - cast(before, "int32"), 1)
    ones = cast(equal(nonzero, 0), x.dtype)
    safe_x = x + ones  # nonzero everywhere; equal to x before the first zero
    zero = zeros_like_t(g)
    grad = execute(CUMSUM, (g * conj(execute(CUMPROD, (x,), fwd)),), back) / conj(safe_x)
    grad = execute(SELECT, (before, grad, zero))
    x_first = x + cast(at_first, x.dtype)
    at_zero = execute(CUMSUM, (g * conj(execute(CUMPROD, (x_first,), fwd)),), back)
    return grad + execute(SELECT, (at_first, at_zero, zero))


def _clse_vjp(g, x, out, *, axis, exclusive, reverse):
    """d out_j / d x_i = exp(x_i - out_j) for the j that include i; summed in log space.

    The positive and negative parts of g go through separate log-space scans so that no
    exp ever overflows (the approach TF uses).
    """
    from eagerflow.ops import math_ops

    back = {"axis": axis, "exclusive": exclusive, "reverse": not reverse}
    zero = zeros_like_t(g)
    neg_inf = zero - np.inf
    one = zero + 1

    # An output of -inf (the head of an exclusive scan) depends on no input: drop its term
    # instead of forming -inf - -inf.
    empty = equal(out, -np.inf)
    safe_out = execute(SELECT, (empty, zero, out))

    def part(mask, magnitude):
        log_g = execute(SELECT, (mask, math_ops.log(execute(SELECT, (mask, magnitude, one))),
                                 neg_inf))
        terms = execute(SELECT, (empty, neg_inf, log_g - safe_out))
        return math_ops.exp(execute(CUMULATIVE_LOGSUMEXP, (terms,), back) + x)

    from eagerflow.ops.arithmetic import greater, less

    return part(greater(g, 0), g) - part(less(g, 0), -g)


def _scan(name, forward, dtypes, reference, vjp, saves, grad_samples=None, **kwargs):
    return registry.primitive(
        name, forward, dtypes=dtypes, shape_fn=_scan_shape, reference=reference, vjp=vjp,
        saves=saves, samples=kwargs.pop("samples", _scan_samples), bad_samples=_scan_bad,
        grad_samples=grad_samples or _scan_grad_samples, family="reduce", **kwargs)


CUMSUM = _scan("Cumsum", _scan_kernel("cumsum", 0), NUMERIC, _ref_scan("cumsum", 0),
               _cumsum_vjp, ())
CUMPROD = _scan("Cumprod", _scan_kernel("cumprod", 1), NUMERIC, _ref_scan("cumprod", 1),
                _cumprod_vjp, (0,), grad_samples=_cumprod_grad_samples)
def _clse_grad_samples(rng):
    # An exclusive scan starts with -inf, which finite differences cannot difference; the
    # tests check that case through exp(output).
    return [case for case in _scan_grad_samples(rng) if not case[1]["exclusive"]]


CUMULATIVE_LOGSUMEXP = _scan(
    "CumulativeLogsumexp", _cumulative_logsumexp_kernel, FLOAT, _ref_clse, _clse_vjp,
    (0, "out"), grad_samples=_clse_grad_samples)


# --------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------

_ALL_AXES = ({"axis": None, "keepdims": False}, {"axis": None, "keepdims": True})
_ATTR_CACHE = {}


def _with_rank(x):
    """(x, rank): converts Python/numpy values; the rank is None when unknown (tracing)."""
    if x.__class__ is Tensor:
        return x, x._value.ndim
    if isinstance(x, (list, tuple, int, float, complex, bool, np.ndarray, np.generic)):
        x = convert_to_tensor(x)
        return x, x._value.ndim
    shape = getattr(x, "shape", None)
    if shape is None:
        x = convert_to_tensor(x)
        return x, x._value.ndim
    rank = getattr(shape, "rank", None) if hasattr(shape, "rank") else len(shape)
    return x, rank


def _axis_values(axis, op):
    """TF's axis forms as a list of Python ints."""
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return [int(axis)]
    if hasattr(axis, "numpy"):
        axis = np.asarray(axis.numpy())
    if isinstance(axis, np.ndarray):
        if axis.dtype.kind not in "iu" or axis.ndim > 1:
            raise errors.InvalidArgumentError(
                None, op, "%s: axis must be an int or a 1-D list/tensor of ints, got %s of "
                "dtype %s." % (op, axis.tolist(), axis.dtype))
        return [int(a) for a in axis.reshape(-1)]
    try:
        return [operator.index(a) for a in axis]
    except TypeError:
        raise errors.InvalidArgumentError(
            None, op, "%s: axis must be None, an int or a list of ints, got %r."
            % (op, axis)) from None


def _normalize_axes(axis, rank, op):
    """A sorted tuple of non-negative axes, validated against ``rank``."""
    values = _axis_values(axis, op)
    if rank is None:
        return tuple(values)  # unknown rank: the kernel resolves negative axes
    out = []
    for a in values:
        if not -rank <= a < rank:
            raise errors.InvalidArgumentError(
                None, op, "%s: Invalid reduction dimension %d for input with %d dimension(s); "
                "valid axes are in [%d, %d]." % (op, a, rank, -rank, rank - 1)
                if rank else "%s: Invalid reduction dimension %d for a scalar (rank 0) input; "
                "a scalar has no axes: pass axis=None." % (op, a))
        a %= rank
        if a in out:
            raise errors.InvalidArgumentError(
                None, op, "%s: axis %s lists dimension %d twice (input of rank %d). Each "
                "axis may appear once." % (op, list(values), a, rank))
        out.append(a)
    return tuple(sorted(out))


def _reduce(prim, op, x, axis, keepdims):
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


def _as_tensor(x):
    return x if x.__class__ is Tensor else convert_to_tensor(x)


def _squeeze_kept(t, axis, keepdims):
    """Drops the length-1 reduced axes of a keepdims result (a sum over size-1 axes)."""
    if keepdims:
        return t
    return execute(SUM, (t,), {"axis": axis, "keepdims": False})


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """Computes log(sum(exp(x))) across dimensions, without overflow or underflow.

    The maximum along the axes is subtracted before exponentiating (a non-finite maximum is
    replaced by 0, so all -inf gives -inf and +inf gives +inf).

    Args:
        input_tensor: A floating-point tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor.

    Raises:
        InvalidArgumentError: If an axis is out of range or the dtype is not floating.

    Example:
        >>> import eagerflow as ef
        >>> round(float(ef.reduce_logsumexp(ef.constant([1000.0, 1000.0]))), 2)
        1000.69
    """
    from eagerflow.ops import math_ops

    x, rank = _with_rank(input_tensor)
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(
            None, "reduce_logsumexp", "reduce_logsumexp needs a floating-point input, got %s. "
            "Cast it first, e.g. eagerflow.cast(x, eagerflow.float32)." % x.dtype.name)
    attrs = {"axis": None if axis is None else _normalize_axes(axis, rank, "reduce_logsumexp"),
             "keepdims": True}
    raw_max = execute(MAX, (x,), attrs)
    shift = execute(SELECT, (math_ops.is_finite(raw_max), raw_max, zeros_like_t(raw_max)))
    total = execute(SUM, (math_ops.exp(x - shift),), attrs)
    out = math_ops.log(total) + shift
    return _squeeze_kept(out, attrs["axis"], bool(keepdims))


def _variance(x, axis, keepdims, op):
    x, rank = _with_rank(x)
    dt = x.dtype
    if not (dt.is_floating or dt.is_complex):
        raise errors.InvalidArgumentError(
            None, op, "%s: input must be either real or complex, got %s. Cast it first, e.g. "
            "eagerflow.cast(x, eagerflow.float32)." % (op, dt.name))
    axes = None if axis is None else _normalize_axes(axis, rank, op)
    mean = execute(MEAN, (x,), {"axis": axes, "keepdims": True})
    diff = x - mean
    if dt.is_complex:
        squared = cast(diff * conj(diff), dt.real_dtype)  # |diff|^2, the real part
    else:
        squared = diff * diff
    return execute(MEAN, (squared,), {"axis": axes, "keepdims": bool(keepdims)})


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the (population) variance of elements across dimensions.

    For complex inputs the result is the mean of ``|x - mean|^2`` in the real dtype.

    Args:
        input_tensor: A floating-point or complex tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor (real dtype).

    Raises:
        InvalidArgumentError: If the input is an integer tensor or an axis is bad.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.reduce_variance(ef.constant([[1.0, 2.0], [3.0, 4.0]])).numpy()
        np.float32(1.25)
    """
    return _variance(input_tensor, axis, keepdims, "reduce_variance")


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the (population) standard deviation of elements across dimensions.

    Args:
        input_tensor: A floating-point or complex tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor (real dtype).

    Raises:
        InvalidArgumentError: If the input is an integer tensor or an axis is bad.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.reduce_std(ef.constant([1.0, 3.0])).numpy()
        np.float32(1.0)
    """
    from eagerflow.ops import math_ops

    return math_ops.sqrt(_variance(input_tensor, axis, keepdims, "reduce_std"))


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """Computes sqrt(sum(|x|^2)) across dimensions.

    As in TF, an integer input gives an integer result (the root truncated toward zero),
    and a complex input a complex result.

    Args:
        input_tensor: A numeric tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor, of the input's dtype.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.reduce_euclidean_norm(ef.constant([3.0, 4.0])).numpy()
        np.float32(5.0)
        >>> ef.math.reduce_euclidean_norm(ef.constant([[1, 2, 3], [1, 1, 1]])).numpy()
        np.int32(4)
    """
    from eagerflow.ops import math_ops

    x, rank = _with_rank(input_tensor)
    dt = x.dtype
    axes = None if axis is None else _normalize_axes(axis, rank, "reduce_euclidean_norm")
    attrs = {"axis": axes, "keepdims": bool(keepdims)}
    if dt.is_integer:
        total = execute(SUM, (x * x,), attrs)
        return cast(math_ops.sqrt(cast(total, "float64")), dt)
    squared = x * conj(x) if dt.is_complex else x * x
    return math_ops.sqrt(execute(SUM, (squared,), attrs))


def count_nonzero(input, axis=None, keepdims=None, dtype=d.int64, name=None):  # noqa: A002
    """Counts the nonzero elements (True for bool) across dimensions.

    Args:
        input: A numeric or bool tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1 (None means False).
        dtype: The output dtype (default int64).
        name: Unused (TF compatibility).

    Returns:
        The counts, of ``dtype``.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.count_nonzero(ef.constant([[0, 1], [2, 3]]), axis=1).numpy().tolist()
        [1, 2]
    """
    x = _as_tensor(input)
    counts = _reduce(SUM, "count_nonzero", cast(not_equal(x, 0), d.int64), axis, keepdims)
    return cast(counts, dtype)


def _single_axis(axis, rank, op):
    """One axis (int or scalar tensor) checked against ``rank``; returned non-negative."""
    values = _axis_values(axis, op)
    scalar = np.ndim(axis.numpy() if hasattr(axis, "numpy") else axis) == 0
    if len(values) != 1 or not scalar:
        raise errors.InvalidArgumentError(
            None, op, "%s: axis must be a single int, got %r." % (op, axis))
    a = values[0]
    if rank is None:
        return a
    if not -rank <= a < rank:
        raise errors.InvalidArgumentError(
            None, op, "%s: axis %d is out of range for an input of rank %d; valid axes are in "
            "[%d, %d]." % (op, a, rank, -rank, rank - 1) if rank else
            "%s: axis %d is invalid for a scalar (rank 0) input: it needs at least one "
            "dimension." % (op, a))
    return a % rank


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


def _scan_call(prim, op, x, axis, exclusive, reverse):
    x, rank = _with_rank(x)
    return execute(prim, (x,), {"axis": _single_axis(axis, rank, op),
                                "exclusive": bool(exclusive), "reverse": bool(reverse)})


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Computes the cumulative sum along an axis.

    ``exclusive`` shifts the result by one (the first element is 0); ``reverse`` scans from
    the end.

    Args:
        x: A numeric tensor of rank >= 1.
        axis: The axis to scan (default 0).
        exclusive: If true, each output excludes its own element.
        reverse: If true, scans in the opposite direction.
        name: Unused (TF compatibility).

    Returns:
        A tensor of x's shape and dtype.

    Raises:
        InvalidArgumentError: If the axis is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.cumsum(ef.constant([1, 2, 3])).numpy().tolist()
        [1, 3, 6]
        >>> ef.cumsum(ef.constant([1, 2, 3]), exclusive=True, reverse=True).numpy().tolist()
        [5, 3, 0]
    """
    return _scan_call(CUMSUM, "cumsum", x, axis, exclusive, reverse)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Computes the cumulative product along an axis.

    Unlike TF's, the gradient is exact where x has zeros.

    Args:
        x: A numeric tensor of rank >= 1.
        axis: The axis to scan (default 0).
        exclusive: If true, each output excludes its own element (the first is 1).
        reverse: If true, scans in the opposite direction.
        name: Unused (TF compatibility).

    Returns:
        A tensor of x's shape and dtype.

    Raises:
        InvalidArgumentError: If the axis is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.cumprod(ef.constant([1, 2, 3]), exclusive=True).numpy().tolist()
        [1, 1, 2]
    """
    return _scan_call(CUMPROD, "cumprod", x, axis, exclusive, reverse)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """Computes log(cumsum(exp(x))) along an axis without overflow or underflow.

    Args:
        x: A floating-point tensor of rank >= 1.
        axis: The axis to scan (default 0).
        exclusive: If true, each output excludes its own element (the first is -inf).
        reverse: If true, scans in the opposite direction.
        name: Unused (TF compatibility).

    Returns:
        A tensor of x's shape and dtype.

    Raises:
        InvalidArgumentError: If the axis is out of range or x is not floating.

    Example:
        >>> import eagerflow as ef
        >>> [round(v, 4) for v in ef.math.cumulative_logsumexp(
        ...     ef.constant([0.0, 0.0])).numpy().tolist()]
        [0.0, 0.6931]
    """
    return _scan_call(CUMULATIVE_LOGSUMEXP, "cumulative_logsumexp", x, axis, exclusive, reverse)

