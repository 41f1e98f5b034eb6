"""Reductions and scans: ``reduce_sum`` and friends, ``argmax``, ``cumsum``, ``cumprod``.

A reduction primitive takes two static attrs: ``axis``, a sorted tuple of non-negative axes
or None for "every axis", and ``keepdims``. The public functions turn TF's many axis forms
(None, an int, a list, a 1-D int tensor, negative values) into that tuple and reject
out-of-range or repeated axes with the op, the axis, the rank and the valid range.

The family is one module per concept in this package:

* :mod:`eagerflow.ops.reduce.reductions`: the reduction primitives (reduce_sum, reduce_prod,
  reduce_mean, reduce_max, reduce_min, reduce_any, reduce_all) and argmax, argmin.
* :mod:`eagerflow.ops.reduce.reduction_composites`: reduce_logsumexp, reduce_variance,
  reduce_std, reduce_euclidean_norm, count_nonzero.
* :mod:`eagerflow.ops.reduce.scans`: cumsum, cumprod, cumulative_logsumexp.
* this package's ``__init__``: the axis handling they share.

Example:
    >>> import eagerflow as ef
    >>> x = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> ef.reduce_sum(x, axis=-1).numpy().tolist()
    [3.0, 7.0]

The helpers here are shared by reductions and scans: axis handling, low-precision
accumulation, samples.

Reduction attrs hold ``axis`` as a sorted tuple of non-negative axes (None for every axis);
the helpers here turn TF's axis forms (None, an int, a list, a 1-D int tensor, negative
values) into it and reject out-of-range or repeated axes with the op, the axis, the rank
and the valid range.
"""

from __future__ import annotations

import operator

import numpy as np

from eagerflow import errors
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = []

EXPORTS = {}


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
            None, op, "%s: axis must be None, an int or a list of ints, got %s."
            % (op, errors.short_repr(axis))) from None


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


def _single_axis(axis, rank, op):
    """One axis (int or scalar tensor) checked against ``rank``; returned non-negative."""
    values = _axis_values(axis, op)
    scalar = np.ndim(axis.numpy() if hasattr(axis, "numpy") else axis) == 0
    if len(values) != 1 or not scalar:
        raise errors.InvalidArgumentError(
            None, op, "%s: axis must be a single int, got %s." % (op, errors.short_repr(axis)))
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
