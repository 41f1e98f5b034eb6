"""Value lookups: unique, unique_with_counts and searchsorted.

``unique`` keeps values in order of first occurrence (not sorted), with the index of each
input's value; ``searchsorted`` finds insertion points in sorted rows (``LowerBound`` and
``UpperBound``) by counting comparisons in blocks of at most ``_SEARCH_BLOCK`` elements,
and with one binary search per row beyond that.
"""

from __future__ import annotations

import collections

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, REAL
from eagerflow.ops.indexing import _INDEX_DTYPES, _fail, _prod, _shape_str, _values
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import HOST_VALUE_SHAPE

__all__ = ["unique", "unique_with_counts", "searchsorted"]

EXPORTS = {
    "": ["unique", "unique_with_counts", "searchsorted"],
}


# --------------------------------------------------------------------------- unique

def _unique_parts(xp, x, out_idx):
    """(values in first-occurrence order, index of each x into them, counts)."""
    if x.ndim != 1:
        raise _fail("unique expects a 1-D vector, got shape %s. Flatten it first, e.g. "
                    "eagerflow.reshape(x, [-1])." % _shape_str(x.shape))
    if out_idx not in ("int32", "int64"):
        raise _fail("out_idx must be int32 or int64, got %s." % out_idx)
    idx_dtype = np.dtype(out_idx)
    if x.shape[0] == 0:
        empty = xp.zeros((0,), idx_dtype)
        return x[:0].copy(), empty, empty
    try:  # NaN != NaN: each NaN is its own value, as in TF
        _, first, inverse, counts = xp.unique(
            x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    except TypeError:  # backends without equal_nan
        _, first, inverse, counts = xp.unique(
            x, return_index=True, return_inverse=True, return_counts=True)
    order = xp.argsort(first)  # sorted-unique position -> first-occurrence rank
    rank = xp.empty_like(order)
    rank[order] = xp.arange(order.shape[0])
    return (x[first[order]], rank[inverse.reshape(-1)].astype(idx_dtype),
            counts[order].astype(idx_dtype))


def _unique_reference(x, *, out_idx, counts=False):
    x = np.asarray(x)
    values, idx, seen = [], [], {}
    for v in x.tolist():
        key = ("nan", len(values)) if v != v else v
        if key not in seen:
            seen[key] = len(values)
            values.append(v)
        idx.append(seen[key])
    y = np.array(values, x.dtype).reshape(-1)
    i = np.array(idx, out_idx).reshape(-1)
    if not counts:
        return y, i
    return y, i, np.bincount(i, minlength=len(values)).astype(out_idx)


def _unique_samples(rng, dtype):
    return [((np.asarray(_values(rng, (7,), dtype)[[0, 1, 0, 2, 1, 3, 0]]),),
             {"out_idx": "int32"}),
            ((_values(rng, (5,), dtype),), {"out_idx": "int64"}),
            ((_values(rng, (0,), dtype),), {"out_idx": "int32"}),
            ((_values(rng, (1,), dtype),), {"out_idx": "int32"})]


def _unique_bad(rng):
    return [((np.ones((2, 2), np.float32),), {"out_idx": "int32"}, errors.InvalidArgumentError),
            ((np.ones((2,), np.float32),), {"out_idx": "float32"},
             errors.InvalidArgumentError)]


# TF returns its multi-output op results as namedtuples: ``ef.unique(x).y`` works too.
UniqueResult = collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCountsResult = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])

UNIQUE = registry.primitive(
    "Unique", lambda xp: (lambda x, *, out_idx: _unique_parts(xp, x, out_idx)[:2]),
    host_sync=HOST_VALUE_SHAPE,
    dtypes=ALL, num_outputs=2, vjp=None, family="array",
    shape_fn=lambda x, *, out_idx: (AbstractValue((None,), x.dtype),
                                    AbstractValue(x.shape, out_idx)),
    reference=_unique_reference, samples=_unique_samples, bad_samples=_unique_bad,
    sweep_dtypes=(d.float32, d.int32, d.int64, d.bool))
UNIQUE_WITH_COUNTS = registry.primitive(
    "UniqueWithCounts", lambda xp: (lambda x, *, out_idx: _unique_parts(xp, x, out_idx)),
    host_sync=HOST_VALUE_SHAPE,
    dtypes=ALL, num_outputs=3, vjp=None, family="array",
    shape_fn=lambda x, *, out_idx: (AbstractValue((None,), x.dtype),
                                    AbstractValue(x.shape, out_idx),
                                    AbstractValue((None,), out_idx)),
    reference=lambda x, *, out_idx: _unique_reference(x, out_idx=out_idx, counts=True),
    samples=_unique_samples, bad_samples=_unique_bad,
    sweep_dtypes=(d.float32, d.int32, d.int64, d.bool))


def unique(x, out_idx=d.int32, name=None):
    """Unique values of a 1-D tensor, in order of first occurrence (not sorted).

    Args:
        x: A 1-D Tensor.
        out_idx: int32 (default) or int64, the dtype of ``idx``.
        name: Unused.

    Returns:
        A namedtuple ``(y, idx)``: the unique values, and for each entry of x its position in y
        (``x == gather(y, idx)``). Each NaN counts as a distinct value, as in TF.

    Raises:
        InvalidArgumentError: If x is not 1-D.

    Example:
        >>> import eagerflow as ef
        >>> y, idx = ef.unique([4, 1, 4, 2])
        >>> y.numpy().tolist(), idx.numpy().tolist()
        ([4, 1, 2], [0, 1, 0, 2])
    """
    return UniqueResult(*execute(UNIQUE, (x,), {"out_idx": d.as_dtype(out_idx).name}))


def unique_with_counts(x, out_idx=d.int32, name=None):
    """Like :func:`unique`, also returning how often each unique value occurs.

    Args:
        x: A 1-D Tensor.
        out_idx: int32 (default) or int64, the dtype of ``idx`` and ``count``.
        name: Unused.

    Returns:
        A namedtuple ``(y, idx, count)``.

    Example:
        >>> import eagerflow as ef
        >>> y, idx, count = ef.unique_with_counts([4, 1, 4])
        >>> count.numpy().tolist()
        [2, 1]
    """
    return UniqueWithCountsResult(
        *execute(UNIQUE_WITH_COUNTS, (x,), {"out_idx": d.as_dtype(out_idx).name}))


# --------------------------------------------------------------------------- searchsorted

_SEARCH_BLOCK = 1 << 22  # elements of the comparison block searched at once


def _bound_kernel(side):
    def factory(xp):
        def kernel(sorted_sequence, values, *, out_type):
            s, v = sorted_sequence, values
            if s.ndim == 0 or v.ndim == 0:
                raise _fail("sorted_sequence and values must be at least 1-D, got shapes %s "
                            "and %s." % (_shape_str(s.shape), _shape_str(v.shape)))
            if s.shape[:-1] != v.shape[:-1]:
                raise _fail("sorted_sequence and values must have the same leading dims (all "
                            "but the last), got shapes %s and %s."
                            % (_shape_str(s.shape), _shape_str(v.shape)))
            n, m = s.shape[-1], v.shape[-1]
            rows = _prod(s.shape[:-1])
            s2, v2 = s.reshape(rows, n), v.reshape(rows, m)
            out = xp.empty((rows, m), np.dtype(out_type))
            if n * m <= _SEARCH_BLOCK:
                # Counting comparisons is std::lower_bound/upper_bound on sorted rows,
                # NaN included (a NaN value is placed first by 'left', last by 'right').
                step = max(1, _SEARCH_BLOCK // max(n * m, 1))
                for r in range(0, rows, step):
                    seq, val = s2[r:r + step, None, :], v2[r:r + step, :, None]
                    hits = (seq < val) if side == "left" else ~(val < seq)
                    out[r:r + step] = hits.sum(axis=-1)
            else:
                for r in range(rows):
                    out[r] = xp.searchsorted(s2[r], v2[r], side=side)
            return out.reshape(v.shape)
        return kernel
    return factory


def _bound_reference(side):
    def reference(sorted_sequence, values, *, out_type):
        s, v = np.asarray(sorted_sequence), np.asarray(values)
        out = np.empty(v.shape, out_type)
        for pos in np.ndindex(*v.shape[:-1]):
            out[pos] = np.searchsorted(s[pos], v[pos], side=side)
        return out
    return reference


def _bound_samples(rng, dtype):
    def seq(*shape):
        return np.sort(_values(rng, shape, dtype), axis=-1)

    return [
        ((seq(6), _values(rng, (4,), dtype)), {"out_type": "int32"}),
        ((seq(2, 5), _values(rng, (2, 3), dtype)), {"out_type": "int64"}),
        ((seq(2, 3, 4), _values(rng, (2, 3, 2), dtype)), {"out_type": "int32"}),
        ((seq(0), _values(rng, (3,), dtype)), {"out_type": "int32"}),
        ((seq(4), _values(rng, (0,), dtype)), {"out_type": "int32"}),
    ]


def _bound_bad(rng):
    bad = errors.InvalidArgumentError
    return [((np.arange(3.0), np.float64(1.0)), {"out_type": "int32"}, bad),
            ((np.ones((2, 3)), np.ones((3, 3))), {"out_type": "int32"}, bad)]


LOWER_BOUND, UPPER_BOUND = (registry.primitive(
    name, _bound_kernel(side), dtypes=REAL, vjp=None, family="array",
    shape_fn=lambda s, v, *, out_type: AbstractValue(v.shape, out_type),
    reference=_bound_reference(side), samples=_bound_samples, bad_samples=_bound_bad,
    sweep_dtypes=(d.float32, d.float64, d.int32))
    for name, side in (("LowerBound", "left"), ("UpperBound", "right")))


def searchsorted(sorted_sequence, values, side="left", out_type=d.int32, name=None):
    """Finds where ``values`` would be inserted into sorted rows to keep them sorted.

    Searches along the innermost dimension; leading dims are batch dims and must match.

    Args:
        sorted_sequence: An N-D Tensor sorted along its last dimension.
        values: An N-D Tensor of the same dtype and leading dims.
        side: ``'left'`` (first suitable position) or ``'right'`` (last).
        out_type: int32 (default) or int64.
        name: Unused.

    Returns:
        A Tensor of values' shape and ``out_type``.

    Raises:
        InvalidArgumentError: For a bad side or mismatched leading dims.

    Example:
        >>> import eagerflow as ef
        >>> ef.searchsorted([1.0, 2.0, 3.0], [2.0, 0.5], side="right").numpy().tolist()
        [2, 0]
    """
    if side not in ("left", "right"):
        raise errors.InvalidArgumentError(
            None, "searchsorted", "searchsorted: side must be 'left' or 'right', got %r."
            % (side,))
    out_type = d.as_dtype(out_type)
    if out_type not in _INDEX_DTYPES:
        raise errors.InvalidArgumentError(
            None, "searchsorted", "searchsorted: out_type must be int32 or int64, got %s."
            % out_type.name)
    prim = LOWER_BOUND if side == "left" else UPPER_BOUND
    return execute(prim, (sorted_sequence, values), {"out_type": out_type.name})
