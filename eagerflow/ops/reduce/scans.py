"""Scans: cumsum, cumprod and cumulative_logsumexp, each with ``exclusive`` and ``reverse``.

Cumprod's gradient is exact where the input has zeros (TF divides by x there and gives nan
or inf), and cumulative_logsumexp's sums in log space so that no exp overflows.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import SELECT, conj, equal, not_equal, zeros_like_t
from eagerflow.ops.math.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT, NUMERIC
from eagerflow.ops.reduce import _low_precision, _single_axis, _values, _with_rank
from eagerflow.ops.registry import AbstractValue

__all__ = ["cumsum", "cumprod", "cumulative_logsumexp"]

EXPORTS = {
    "": ["cumsum"],
    "math": ["cumsum", "cumprod", "cumulative_logsumexp"],
}


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------

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
# Shape rule
# --------------------------------------------------------------------------------------

def _scan_shape(x, *, axis, exclusive, reverse):
    return AbstractValue(x.shape, x.dtype)


# --------------------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------------------

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
    from eagerflow.ops.math import unary_math

    back = {"axis": axis, "exclusive": exclusive, "reverse": not reverse}
    zero = zeros_like_t(g)
    neg_inf = zero - np.inf
    one = zero + 1

    # An output of -inf (the head of an exclusive scan) depends on no input: drop its term
    # instead of forming -inf - -inf.
    empty = equal(out, -np.inf)
    safe_out = execute(SELECT, (empty, zero, out))

    def part(mask, magnitude):
        log_g = execute(SELECT, (mask, unary_math.log(execute(SELECT, (mask, magnitude, one))),
                                 neg_inf))
        terms = execute(SELECT, (empty, neg_inf, log_g - safe_out))
        return unary_math.exp(execute(CUMULATIVE_LOGSUMEXP, (terms,), back) + x)

    from eagerflow.ops.math.arithmetic import greater, less

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
