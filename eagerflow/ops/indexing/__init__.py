"""Indexing primitives: gather, scatter, segment reductions, masks, one_hot, unique, search.

Index inputs (``indices``, ``segment_ids``, masks) are outside each primitive's dtype group:
they are int32/int64 (bool for masks) whatever the data's dtype.

Indices are validated on every device. An index out of range raises InvalidArgumentError
naming its position and value (``indices[3] = 7 is not in [0, 5)``); numpy would wrap a
negative index silently, and TF on a GPU writes zeros instead of failing.

Gradients are dense tensors: where TF returns ``tf.IndexedSlices`` for a gather's params,
eagerflow returns the same values scattered into zeros of params' shape.

The family is one module per concept in this package:

* :mod:`eagerflow.ops.indexing.gather_ops`: gather (``GatherV2`` and its gradient).
* :mod:`eagerflow.ops.indexing.index_nd_ops`: gather_nd, scatter_nd, tensor_scatter_nd_*.
* :mod:`eagerflow.ops.indexing.segment_ops`: unsorted_segment_sum/max/min/mean, segment_sum.
* :mod:`eagerflow.ops.indexing.mask_ops`: boolean_mask, one_hot, where_indices.
* :mod:`eagerflow.ops.indexing.search_ops`: unique, unique_with_counts, searchsorted.
* :mod:`eagerflow.ops.indexing.histogram_ops`: math.bincount, histogram_fixed_width.
* this package's ``__init__``: the index checks and helpers they share.

Example:
    >>> import eagerflow as ef
    >>> ef.gather(ef.constant([10, 20, 30]), [2, 0]).numpy().tolist()
    [30, 10]

The helpers here are shared by the indexing family's modules: index checks, the scatter
loop, samples.

Index checks raise InvalidArgumentError naming the offending position and value
(``indices[3] = 7 is not in [0, 5)``) instead of letting numpy wrap negative indices.
``_scatter_rows``, which the scatters, segment sums and gather's gradient share, combines
rows into a flat output in place with the ufunc's ``.at`` (cupyx's scatter functions on
cupy versions without it).
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = []

EXPORTS = {}


_INDEX_DTYPES = (d.int32, d.int64)


# --------------------------------------------------------------------------- helpers

def _fail(message):
    # Dispatch prefixes the op name, input shapes/dtypes and device.
    return errors.InvalidArgumentError(None, None, message)


def _shape_str(shape):
    return "[%s]" % ", ".join("?" if s is None else str(s) for s in shape)


def _prod(dims):
    out = 1
    for dim in dims:
        out *= int(dim)
    return out


def _check_index_dtype(array, what):
    if array.dtype.kind not in "iu":
        raise _fail("%s must be an integer tensor (int32 or int64), got %s. Cast it first, "
                    "e.g. eagerflow.cast(%s, eagerflow.int32)." % (what, array.dtype.name, what))


def _position(pos):
    return "[%s]" % ",".join(str(int(p)) for p in pos) if len(pos) else ""


def _check_range(xp, idx, limit, what):
    """Raises for the first entry of ``idx`` outside [0, limit), naming position and value."""
    if idx.size == 0:
        return
    if int(idx.min()) >= 0 and int(idx.max()) < limit:
        return
    host = np.asarray(xp.to_numpy(idx))
    pos = tuple(np.argwhere((host < 0) | (host >= limit))[0])
    raise _fail("%s%s = %d is not in [0, %d)" % (what, _position(pos), int(host[pos]), limit))


_AT_FALLBACK = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}


def _scatter_rows(xp, op, flat, rows, values, width):
    """Combines rows of ``values`` into ``flat`` viewed as ``[R, width]``, in place.

    ``flat`` is a contiguous 1-D array, ``rows`` the target row of each row of ``values``
    (flattened). ``op`` is "update" (assignment) or a ufunc name ("add", "maximum",
    "minimum") whose ``.at`` combines repeated rows. Everything is flattened to 1-D first:
    numpy's ``ufunc.at`` is several times faster on a 1-D index.
    """
    rows = rows.reshape(-1).astype(np.int64, copy=False)
    if width != 1:
        rows = (rows[:, None] * width + xp.arange(width)).reshape(-1)
    values = values.reshape(-1)
    if op == "update":
        flat[rows] = values
        return
    at = getattr(getattr(xp, op), "at", None)
    if at is not None:
        try:
            at(flat, rows, values)
            return
        except NotImplementedError:
            pass
    import cupyx  # only reached on the GPU backend, by cupy versions without ufunc.at

    getattr(cupyx, _AT_FALLBACK[op])(flat, rows, values)


def _static_int(value, what, op):
    """A Python int from an int, numpy integer or eager scalar int tensor (attrs are static)."""
    if value.__class__ is int:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    array = value._value if isinstance(value, Tensor) else value
    if isinstance(value, (Tensor, np.ndarray)) and array.dtype.kind in "iu" and array.ndim == 0:
        return int(value)
    raise errors.InvalidArgumentError(
        None, op, "%s: %s must be a static integer, got %r." % (op, what, value))


def _as_tensor(value, dtype_hint=None):
    if value.__class__ is Tensor:
        return value
    return convert_to_tensor(value, dtype_hint=dtype_hint)


def _rank(t):
    return len(t.shape)


def _add_trailing_axes(t, count):
    """``t[..., None, None, ...]`` with ``count`` new axes (a StridedSlice, so traceable)."""
    if count == 0:
        return t
    # slicing (tensor __getitem__) is built on this package's gather and mask ops.
    from eagerflow.ops.array import slicing

    return slicing.getitem(t, (Ellipsis,) + (None,) * count)


def _ints(rng, high, shape, dtype=np.int32):
    return rng.integers(0, max(high, 1), size=shape).astype(dtype)


def _values(rng, shape, dtype):
    np_dt = dtype.np_dtype
    if dtype.is_bool:
        return rng.random(shape) > 0.5
    if dtype.is_integer:
        return rng.integers(0, 9, size=shape).astype(np_dt)
    out = rng.uniform(-3, 3, size=shape)
    if dtype.is_complex:
        out = out + 1j * rng.uniform(-3, 3, size=shape)
    return np.asarray(out).astype(np_dt)
