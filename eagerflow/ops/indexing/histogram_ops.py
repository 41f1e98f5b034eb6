"""Counting values into bins: ``math.bincount`` and ``histogram_fixed_width``.

``bincount`` counts (or sums ``weights`` of) each non-negative integer of ``arr``, with TF's
semantics: the output has ``max(arr) + 1`` bins (0 for an empty ``arr``), at least
``minlength`` and at most ``maxlength``; values past the last bin are dropped. ``axis=-1``
counts each row of a 2-D ``arr`` separately. With ``weights`` the output has the weights'
dtype and ``dtype`` is ignored, as in TF.

Gradients: TF registers none (``LookupError: gradient registry has no entry for:
DenseBincount``). eagerflow gives the exact one, since the weighted count is linear in the
weights: ``d out[arr[i]] / d weights[i] = 1``, so the weights' gradient is the upstream
gradient gathered at ``arr`` (0 for dropped values); ``arr`` gets none.

``histogram_fixed_width`` counts values into ``nbins`` equal bins over ``value_range``;
values below the range go into the first bin and values at or above its end into the
last, as in TF, and NaN is an error.

Example:
    >>> import eagerflow as ef
    >>> ef.math.bincount([1, 1, 3, 0]).numpy().tolist()
    [1, 2, 0, 1]
    >>> ef.histogram_fixed_width([0.0, 0.5, 1.0, 4.9], [0.0, 5.0], nbins=5).numpy().tolist()
    [2, 1, 0, 0, 1]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.array.pad_ops import pad
from eagerflow.ops.array.reshape_ops import reshape
from eagerflow.ops.array.shape_ops import shape as shape_of
from eagerflow.ops.dispatch import execute
from eagerflow.ops.indexing import (
    _as_tensor, _fail, _prod, _scatter_rows, _shape_str, _static_int,
)
from eagerflow.ops.indexing.gather_ops import GATHER
from eagerflow.ops.math.arithmetic import floor, multiply, subtract, truediv
from eagerflow.ops.math.binary_math import clip_by_value, minimum
from eagerflow.ops.math.cast import cast
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import HOST_VALUE_CHECK

__all__ = ["bincount", "histogram_fixed_width", "histogram_fixed_width_bins"]

EXPORTS = {
    "": ["histogram_fixed_width", "histogram_fixed_width_bins"],
    "math": ["bincount"],
}

# DenseBincount's weight dtypes in TF (half and bool are refused there too).
_BIN_DTYPES = (d.int32, d.int64, d.float32, d.float64)


# --------------------------------------------------------------------------- bincount

def _bin_size(arr, minlength, maxlength):
    """TF's output size: max(arr) + 1 (0 if empty), raised to minlength, cut to maxlength."""
    size = int(arr.max()) + 1 if arr.size else 0
    if minlength >= 0:
        size = max(size, minlength)
    if maxlength >= 0:
        size = min(size, maxlength)
    return size


def _bincount_kernel(xp):
    def kernel(arr, weights, *, minlength, maxlength, binary_output):
        if arr.dtype.kind not in "iu":
            raise _fail("arr must be an integer tensor (int32 or int64), got %s."
                        % arr.dtype.name)
        if arr.ndim > 2:
            raise _fail("arr must be at most rank 2 (axis=-1 counts each row), got shape %s. "
                        "Reshape it to [rows, -1] first." % _shape_str(arr.shape))
        if weights.size and tuple(weights.shape) != tuple(arr.shape):
            raise _fail("weights must have arr's shape %s (or be empty), got %s."
                        % (_shape_str(arr.shape), _shape_str(weights.shape)))
        if arr.size and int(arr.min()) < 0:
            raise _fail("arr must be non-negative; its smallest value is %d."
                        % int(arr.min()))
        size = _bin_size(arr, minlength, maxlength)
        rows = arr.shape[0] if arr.ndim == 2 else 1
        flat = arr.reshape(-1).astype(np.int64)
        keep = flat < size
        if arr.ndim == 2:  # row r's bin b is entry r * size + b of the flat output
            flat = (flat.reshape(arr.shape) + (xp.arange(rows, dtype=np.int64) * size)[:, None]
                    ).reshape(-1)
        flat = flat[keep]
        total = rows * size
        if binary_output:
            out = xp.zeros(total, weights.dtype)
            out[flat] = 1
        elif weights.size:
            out = xp.zeros(total, weights.dtype)
            _scatter_rows(xp, "add", out, flat, weights.reshape(-1)[keep], 1)
        else:
            out = xp.bincount(flat, minlength=total).astype(weights.dtype, copy=False)
        return out.reshape(arr.shape[:1] + (size,) if arr.ndim == 2 else (size,))
    return kernel


def _bincount_shape(arr, weights, *, minlength, maxlength, binary_output):
    size = minlength if 0 <= minlength == maxlength else None
    if maxlength == 0:
        size = 0
    return AbstractValue(((arr.shape[0],) if len(arr.shape) == 2 else ()) + (size,),
                         weights.dtype)


def _bincount_vjp(g, arr, weights, out, *, minlength, maxlength, binary_output):
    """The weights' gradient: ``g`` gathered at ``arr``; a dropped value reads the zero
    appended past the last bin."""
    if binary_output or _prod(weights.shape) == 0:
        return None, None
    rank = len(arr.shape)
    padded = pad(g, [[0, 0]] * (rank - 1) + [[0, 1]])
    size = shape_of(g, out_type=arr.dtype)[-1]
    index = minimum(arr, size)
    return None, execute(GATHER, (padded, index), {"axis": rank - 1, "batch_dims": rank - 1})


def _bincount_reference(arr, weights, *, minlength, maxlength, binary_output):
    arr, weights = np.asarray(arr), np.asarray(weights)
    size = _bin_size(arr, minlength, maxlength)
    rows = arr.reshape(arr.shape[:1] + (-1,)) if arr.ndim == 2 else arr.reshape(1, -1)
    wrows = weights.reshape(rows.shape) if weights.size else np.ones(rows.shape)
    out = np.zeros((rows.shape[0], size), weights.dtype)
    for r in range(rows.shape[0]):
        for v, w in zip(rows[r].tolist(), wrows[r].tolist()):
            if v < size:
                out[r, v] = 1 if binary_output else out[r, v] + w
    return out if arr.ndim == 2 else out.reshape(size)


def _bincount_samples(rng, dtype):
    np_dt = dtype.np_dtype

    def w(shape):
        return rng.integers(1, 5, size=shape).astype(np_dt) if dtype.is_integer else \
            rng.uniform(-2, 2, size=shape).astype(np_dt)

    a = np.array([1, 1, 3, 0, 5], np.int32)
    b = np.array([[1, 2, 2], [0, 4, 0]], np.int64)
    attrs = {"minlength": -1, "maxlength": -1, "binary_output": False}
    return [
        ((a, np.zeros((0,), np_dt)), attrs),
        ((a, w(a.shape)), attrs),
        ((a, w(a.shape)), dict(attrs, minlength=8)),
        ((a, w(a.shape)), dict(attrs, maxlength=3)),
        ((a, np.zeros((0,), np_dt)), dict(attrs, binary_output=True)),
        ((b, w(b.shape)), attrs),
        ((b, w(b.shape)), dict(attrs, minlength=2, maxlength=4)),
        ((np.zeros((0,), np.int32), np.zeros((0,), np_dt)), dict(attrs, minlength=2)),
    ]


def _bincount_bad(rng):
    attrs = {"minlength": -1, "maxlength": -1, "binary_output": False}
    empty = np.zeros((0,), np.float32)
    return [
        ((np.array([1, -1], np.int32), empty), attrs, errors.InvalidArgumentError),
        ((np.zeros((1, 1, 1), np.int32), empty), attrs, errors.InvalidArgumentError),
        ((np.array([1, 2], np.int32), np.ones(3, np.float32)), attrs,
         errors.InvalidArgumentError),
    ]


BINCOUNT = registry.primitive(
    "DenseBincount", _bincount_kernel, dtypes=_BIN_DTYPES, dtype_group=(1,),
    host_sync=HOST_VALUE_CHECK,
    shape_fn=_bincount_shape, vjp=_bincount_vjp, saves=(0, 1), family="math",
    reference=_bincount_reference, samples=_bincount_samples, bad_samples=_bincount_bad,
    sweep_dtypes=_BIN_DTYPES)


def _values_of_composites(arr, weights, axis):
    """A RaggedTensor or SparseTensor counts its values (and weights' values), as TF."""
    composite = hasattr(arr, "flat_values") or (
        hasattr(arr, "indices") and hasattr(arr, "dense_shape"))
    if not composite:
        return arr, weights
    if axis == -1:
        raise errors.UnimplementedError(
            None, "DenseBincount", "bincount: axis=-1 is not supported for a %s input; "
            "count all its values with axis=None, or convert it to a dense tensor first."
            % type(arr).__name__)

    def values(x):
        return x.flat_values if hasattr(x, "flat_values") else x.values

    if weights is not None and (hasattr(weights, "flat_values") or hasattr(weights,
                                                                           "dense_shape")):
        weights = values(weights)
    return values(arr), weights


def _length(value, what):
    """A static length attr; -1 stands for None."""
    if value is None:
        return -1
    return _static_int(value, what, "DenseBincount")


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=d.int32, name=None,
             axis=None, binary_output=False):
    """Counts the occurrences of each non-negative integer in ``arr``.

    ``out[v]`` is how often ``v`` occurs in ``arr`` (or the sum of the ``weights`` at those
    positions). The output has ``max(arr) + 1`` bins (0 for an empty ``arr``), at least
    ``minlength`` and at most ``maxlength``; larger values are dropped.

    Args:
        arr: A Tensor of non-negative values (non-integer values are cast to int32, as
            TF), or a RaggedTensor or SparseTensor, whose values are counted.
        weights: None, or a Tensor of arr's shape (int32, int64, float32 or float64); the
            output then has its dtype and ``dtype`` is ignored, as in TF.
        minlength: The least number of bins (a static int), or None.
        maxlength: The most number of bins (a static int >= 0), or None.
        dtype: The output's dtype without weights (int32, int64, float32 or float64).
        name: Unused.
        axis: None or 0 counts all of ``arr`` (flattened); -1 counts each row of a 2-D
            ``arr``, giving ``[rows, bins]``.
        binary_output: True gives 1 for each bin that is hit instead of a count; not
            allowed with ``weights``.

    Returns:
        A 1-D Tensor of bins, or ``[rows, bins]`` with ``axis=-1``. Its gradient with
        respect to ``weights`` is exact (TF has none; see the module docstring).

    Raises:
        InvalidArgumentError: For a negative value in ``arr``, weights whose shape differs
            from arr's, an arr of rank above 2 with ``axis=-1``, or a bad dtype.
        ValueError: For an axis other than None, 0 and -1, or ``weights`` together with
            ``binary_output``, as TF.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.bincount([1, 1, 3], weights=[0.5, 1.0, 2.0], minlength=5).numpy().tolist()
        [0.0, 1.5, 0.0, 2.0, 0.0]
        >>> ef.math.bincount([[1, 2], [0, 0]], axis=-1).numpy().tolist()
        [[0, 1, 1], [2, 0, 0]]
    """
    if weights is not None and binary_output:
        raise ValueError("bincount: arguments `binary_output` and `weights` are mutually "
                         "exclusive; pass only one.")
    if axis not in (None, 0, -1):
        raise ValueError("bincount: unsupported value for argument axis=%r; only None, 0 "
                         "and -1 are supported." % (axis,))
    arr, weights = _values_of_composites(arr, weights, axis)
    arr = _as_tensor(arr)
    if not arr.dtype.is_integer:
        arr = cast(arr, d.int32)
    minlength = max(_length(minlength, "minlength"), -1)  # a negative minlength is no bound
    if maxlength is not None:
        maxlength = _length(maxlength, "maxlength")
        if maxlength < 0:
            raise errors.InvalidArgumentError(
                None, "DenseBincount", "bincount: maxlength = %d must be non-negative (or "
                "None for no limit)." % maxlength)
    else:
        maxlength = -1
    if weights is None:
        out_dtype = d.as_dtype(dtype)
        if out_dtype not in _BIN_DTYPES:
            raise errors.InvalidArgumentError(
                None, "DenseBincount", "bincount: dtype must be one of int32, int64, "
                "float32, float64, got %s." % out_dtype.name)
        weights = _as_tensor(np.zeros((0,), out_dtype.np_dtype))
    else:
        weights = _as_tensor(weights)
    if axis != -1 or len(arr.shape) == 0:
        arr = reshape(arr, [-1])
        weights = reshape(weights, [-1])
    return execute(BINCOUNT, (arr, weights), {
        "minlength": minlength, "maxlength": maxlength, "binary_output": bool(binary_output)})


# --------------------------------------------------------------------------- histograms

def _histogram_kernel(xp):
    def kernel(values, value_range, *, nbins, dtype):
        if tuple(value_range.shape) != (2,):
            raise _fail("value_range must be a [2] tensor [low, high], got shape %s."
                        % _shape_str(value_range.shape))
        if nbins <= 0:
            raise _fail("nbins = %d must be a positive number." % nbins)
        low, high = value_range[0], value_range[1]
        if not bool(low < high):
            raise _fail("value_range must satisfy value_range[0] < value_range[1], got [%s, %s]."
                        % (low, high))
        flat = values.reshape(-1)
        if flat.dtype.kind == "f" and flat.size and bool(xp.isnan(flat).any()):
            raise _fail("histogram values must not contain NaN.")
        # TF's rule: the offset from low (in the values' dtype, values below low clamped to
        # it) over the bin width (in float64), truncated, the last bin taking the rest.
        step = float(high - low) / nbins
        offset = (xp.maximum(flat, low) - low).astype(np.float64)
        index = xp.minimum(offset / step, nbins - 1).astype(np.int64)
        return xp.bincount(index, minlength=nbins).astype(np.dtype(dtype), copy=False)
    return kernel


def _histogram_reference(values, value_range, *, nbins, dtype):
    values, (low, high) = np.asarray(values).reshape(-1), np.asarray(value_range)
    out = np.zeros(nbins, dtype)
    width = (float(high) - float(low)) / nbins
    for v in values.tolist():
        out[min(max(int((max(v, low) - low) / width), 0), nbins - 1)] += 1
    return out


HISTOGRAM_FIXED_WIDTH = registry.primitive(
    "HistogramFixedWidth", _histogram_kernel, dtypes=_BIN_DTYPES, dtype_group=(0, 1),
    host_sync=HOST_VALUE_CHECK,
    shape_fn=lambda values, value_range, *, nbins, dtype: AbstractValue((nbins,), dtype),
    vjp=None, family="math", reference=_histogram_reference, sweep_dtypes=_BIN_DTYPES,
    samples=lambda rng, dtype: [
        ((np.array([-1, 0, 1, 2, 4, 5, 7, 9]).astype(dtype.np_dtype),
          np.array([0, 5]).astype(dtype.np_dtype)), {"nbins": 5, "dtype": "int32"}),
        ((np.array([[0, 1], [2, 9]]).astype(dtype.np_dtype),
          np.array([0, 10]).astype(dtype.np_dtype)), {"nbins": 3, "dtype": "int64"}),
        ((np.zeros((0,), dtype.np_dtype), np.array([0, 1]).astype(dtype.np_dtype)),
         {"nbins": 2, "dtype": "int32"}),
    ],
    bad_samples=lambda rng: [
        ((np.ones(3, np.float32), np.array([1.0, 0.0], np.float32)),
         {"nbins": 2, "dtype": "int32"}, errors.InvalidArgumentError),
        ((np.ones(3, np.float32), np.array([0.0, 1.0], np.float32)),
         {"nbins": 0, "dtype": "int32"}, errors.InvalidArgumentError),
        ((np.array([np.nan], np.float32), np.array([0.0, 1.0], np.float32)),
         {"nbins": 2, "dtype": "int32"}, errors.InvalidArgumentError),
    ])


def histogram_fixed_width(values, value_range, nbins=100, dtype=d.int32, name=None):
    """Counts ``values`` into ``nbins`` equal-width bins spanning ``value_range``.

    Values below ``value_range[0]`` count in the first bin and values at or above
    ``value_range[1]`` in the last, as in TF.

    Args:
        values: A numeric Tensor of any shape (flattened).
        value_range: ``[low, high]`` with ``low < high``, of values' dtype.
        nbins: The number of bins (a static positive int).
        dtype: int32 (default) or int64, the counts' dtype.
        name: Unused.

    Returns:
        A ``[nbins]`` Tensor of counts.

    Raises:
        InvalidArgumentError: If ``low >= high``, ``nbins <= 0`` or a value is NaN.

    Example:
        >>> import eagerflow as ef
        >>> ef.histogram_fixed_width([-1.0, 0.0, 1.5, 2.0, 9.0], [0.0, 2.0], nbins=2).numpy()
        array([2, 3], dtype=int32)
    """
    dtype = d.as_dtype(dtype)
    if dtype not in (d.int32, d.int64):
        raise errors.InvalidArgumentError(
            None, "HistogramFixedWidth", "histogram_fixed_width: dtype must be int32 or int64, "
            "got %s." % dtype.name)
    return execute(HISTOGRAM_FIXED_WIDTH, (values, value_range), {
        "nbins": _static_int(nbins, "nbins", "HistogramFixedWidth"), "dtype": dtype.name})


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=d.int32, name=None):
    """The bin index of each of ``values`` for ``nbins`` equal bins over ``value_range``.

    TF's formula: ``floor(nbins * (v - low) / (high - low))`` in the values' float dtype,
    clipped to ``[0, nbins - 1]`` (values below the range get 0, values at or above its end
    ``nbins - 1``). The result is int32 whatever ``dtype`` says, as in TF.

    Args:
        values: A float Tensor of any shape.
        value_range: ``[low, high]`` of values' dtype.
        nbins: The number of bins (a static positive int).
        dtype: Accepted for TF compatibility (the result is int32).
        name: Unused.

    Returns:
        An int32 Tensor of values' shape.

    Raises:
        InvalidArgumentError: If ``nbins <= 0``.

    Example:
        >>> import eagerflow as ef
        >>> ef.histogram_fixed_width_bins([-1.0, 0.3, 0.6, 1.0], [0.0, 1.0], nbins=3).numpy()
        array([0, 0, 1, 2], dtype=int32)
    """
    nbins = _static_int(nbins, "nbins", "HistogramFixedWidthBins")
    if nbins <= 0:
        raise errors.InvalidArgumentError(
            None, "HistogramFixedWidthBins", "histogram_fixed_width_bins: nbins = %d must be "
            "a positive number." % nbins)
    values = _as_tensor(values)
    value_range = _as_tensor(value_range, dtype_hint=values.dtype)
    low, high = value_range[0], value_range[1]
    # Elementwise, so values keep their shape (TF flattens and reshapes back).
    scaled = truediv(subtract(values, low), subtract(high, low))
    indices = floor(multiply(scaled, float(nbins)))
    return cast(clip_by_value(indices, 0.0, float(nbins - 1)), d.int32)
