"""Segment reductions: unsorted_segment_sum/max/min/mean and segment_sum.

``segment_ids`` assign each row of ``data`` to an output row; the unsorted ops take
``num_segments`` and drop entries with a negative id, as TF does. An empty segment gives 0
for sums and means, and the dtype's lowest (max) or highest (min) value, as in TF.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.array import scalar_int
from eagerflow.ops.math.arithmetic import (
    ONES_LIKE_fn, SELECT, equal, greater, less, truediv, zeros_like_t,
)
from eagerflow.ops.math.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import NUMERIC, REAL
from eagerflow.ops.indexing.gather_ops import GATHER
from eagerflow.ops.indexing import (
    _add_trailing_axes, _as_tensor, _check_index_dtype, _fail, _ints, _position, _prod, _rank,
    _scatter_rows, _shape_str, _values,
)
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import HOST_INDEX_CHECK, HOST_VALUE_SHAPE

__all__ = [
    "unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
    "unsorted_segment_mean", "segment_sum",
]

EXPORTS = {
    "math": ["unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
             "unsorted_segment_mean", "segment_sum"],
}


# --------------------------------------------------------------------------- segments

def _segment_prepare(xp, data, segment_ids, num_segments):
    """Validates an unsorted segment op; returns (flat ids, flat data, row shape)."""
    _check_index_dtype(segment_ids, "segment_ids")
    if num_segments < 0:
        raise _fail("num_segments = %d must be >= 0." % num_segments)
    if tuple(data.shape[:segment_ids.ndim]) != tuple(segment_ids.shape):
        raise _fail("data.shape = %s must start with segment_ids.shape = %s."
                    % (_shape_str(data.shape), _shape_str(segment_ids.shape)))
    rest = tuple(data.shape[segment_ids.ndim:])
    n = segment_ids.size
    if n and int(segment_ids.max()) >= num_segments:
        host = np.asarray(xp.to_numpy(segment_ids))
        pos = tuple(np.argwhere(host >= num_segments)[0])
        raise _fail("segment_ids%s = %d is out of range [0, %d)."
                    % (_position(pos), int(host[pos]), num_segments))
    ids = segment_ids.reshape(n)
    rows = data.reshape((n,) + rest)
    if n and int(ids.min()) < 0:
        keep = ids >= 0  # TF drops entries with a negative segment id
        ids, rows = ids[keep], rows[keep]
    return ids, rows, rest


def _unsorted_segment_kernel(op):
    def factory(xp):
        def kernel(data, segment_ids, *, num_segments):
            ids, rows, rest = _segment_prepare(xp, data, segment_ids, num_segments)
            shape = (num_segments,) + rest
            if op == "add":
                out = xp.zeros(shape, data.dtype)
            else:  # empty segments hold the dtype's lowest/highest finite value, as in TF
                limit = d.from_numpy(data.dtype)
                out = xp.full(shape, limit.min if op == "maximum" else limit.max, data.dtype)
            _scatter_rows(xp, op, out.reshape(-1), ids, rows, _prod(rest))
            return out
        return kernel
    return factory


def _unsorted_segment_reference(op):
    def reference(data, segment_ids, *, num_segments):
        data, ids = np.asarray(data), np.asarray(segment_ids)
        rest = data.shape[ids.ndim:]
        limit = d.from_numpy(data.dtype)
        init = {"add": 0, "maximum": limit.min, "minimum": limit.max}[op]
        out = np.full((num_segments,) + rest, init, data.dtype)
        for pos in np.ndindex(*ids.shape):
            s = int(ids[pos])
            if s >= 0:
                out[s] = getattr(np, op)(out[s], data[pos])
        return out
    return reference


def _segment_samples(rng, dtype):
    v = lambda *s: _values(rng, s, dtype)  # noqa: E731
    return [
        ((v(6), np.array([0, 2, 0, 3, 2, 0], np.int32)), {"num_segments": 5}),
        ((v(4, 3), np.array([1, 1, 0, -1], np.int64)), {"num_segments": 3}),
        ((v(2, 3, 2), _ints(rng, 4, (2, 3))), {"num_segments": 4}),
        ((v(3), np.int32(1)), {"num_segments": 2}),
        ((v(0, 2), np.zeros((0,), np.int32)), {"num_segments": 2}),
        ((v(3), np.array([0, 1, 0], np.int32)), {"num_segments": 2}),
    ]


def _segment_grad_samples(rng):
    # Distinct values (no ties: max/min are differentiable) and no empty segment (an empty
    # max segment holds -1.8e308, which drowns a finite difference).
    cases = [((6,), np.array([0, 2, 0, 3, 2, 1], np.int32), 4),
             ((4, 3), np.array([1, 1, 0, -1], np.int64), 2),
             ((2, 3, 2), np.array([[0, 1, 2], [2, 1, 0]], np.int32), 3),
             ((3,), np.int32(0), 1)]
    out = []
    for shape, ids, num in cases:
        size = int(np.prod(shape))
        data = rng.permutation(size).reshape(shape) + rng.uniform(0, 0.5, size=shape)
        out.append(((data.astype(np.float64), ids), {"num_segments": num}))
    return out


def _segment_bad(rng):
    bad = errors.InvalidArgumentError
    x = np.ones((4,), np.float32)
    return [
        ((x, np.array([0, 1, 5, 0], np.int32)), {"num_segments": 3}, bad),
        ((x, np.array([0, 1], np.int32)), {"num_segments": 3}, bad),
        ((x, np.array([0, 1, 2, 0], np.float32)), {"num_segments": 3}, bad),
        ((x, np.array([0, 1, 2, 0], np.int32)), {"num_segments": -1}, bad),
    ]


def _gather_drop_negatives(params, ids):
    """``gather(params, ids)`` with rows for negative ids zeroed (segment-op gradients)."""
    negative = less(ids, 0)
    safe = execute(SELECT, (negative, zeros_like_t(ids), ids))
    gathered = execute(GATHER, (params, safe), {"axis": 0, "batch_dims": 0})
    mask = _add_trailing_axes(negative, _rank(gathered) - _rank(ids))
    return execute(SELECT, (mask, zeros_like_t(gathered), gathered)), mask


def _segment_sum_vjp(g, data, segment_ids, out, *, num_segments):
    return _gather_drop_negatives(g, segment_ids)[0], None


def _segment_minmax_vjp(g, data, segment_ids, out, *, num_segments):
    gathered_out, dropped = _gather_drop_negatives(out, segment_ids)
    selected = equal(data, gathered_out)
    selected = execute(SELECT, (dropped, zeros_like_t(selected), selected))
    count = execute(UNSORTED_SEGMENT_SUM, (cast(selected, g.dtype), segment_ids),
                    {"num_segments": num_segments})
    # Empty segments count 1, not 0: no inf that a higher-order gradient could turn to NaN.
    count = execute(SELECT, (greater(count, 0), count, ONES_LIKE_fn(count)))
    shared = _gather_drop_negatives(g / count, segment_ids)[0]
    return execute(SELECT, (selected, shared, zeros_like_t(shared))), None


def _segment_shape(data, segment_ids, *, num_segments):
    return AbstractValue((num_segments,) + data.shape[segment_ids.ndim:], data.dtype)


def _declare_segment(name, op, dtypes, vjp, saves):
    return registry.primitive(
        name, _unsorted_segment_kernel(op), dtypes=dtypes, dtype_group=(0,),
        host_sync=HOST_INDEX_CHECK,
        shape_fn=_segment_shape, vjp=vjp, saves=saves,
        reference=_unsorted_segment_reference(op), samples=_segment_samples,
        grad_samples=_segment_grad_samples, bad_samples=_segment_bad, family="math")


UNSORTED_SEGMENT_SUM = _declare_segment(
    "UnsortedSegmentSum", "add", NUMERIC, _segment_sum_vjp, (1,))
UNSORTED_SEGMENT_MAX = _declare_segment(
    "UnsortedSegmentMax", "maximum", REAL, _segment_minmax_vjp, (0, 1, "out"))
UNSORTED_SEGMENT_MIN = _declare_segment(
    "UnsortedSegmentMin", "minimum", REAL, _segment_minmax_vjp, (0, 1, "out"))


def _segment_sum_kernel(xp):
    def kernel(data, segment_ids):
        _check_index_dtype(segment_ids, "segment_ids")
        if segment_ids.ndim != 1:
            raise _fail("segment_ids must be 1-D, got shape %s." % _shape_str(segment_ids.shape))
        if data.ndim < 1 or data.shape[0] != segment_ids.shape[0]:
            raise _fail("segment_ids (%d entries) must have the size of data's first dimension "
                        "(data shape %s)." % (segment_ids.shape[0], _shape_str(data.shape)))
        n = segment_ids.shape[0]
        count = 0
        if n:
            if int(segment_ids[0]) < 0:
                raise _fail("segment_ids[0] = %d must be >= 0." % int(segment_ids[0]))
            if n > 1 and bool((segment_ids[1:] < segment_ids[:-1]).any()):
                host = np.asarray(xp.to_numpy(segment_ids))
                i = int(np.argwhere(host[1:] < host[:-1])[0][0]) + 1
                raise _fail("segment ids are not increasing: segment_ids[%d] = %d < "
                            "segment_ids[%d] = %d. Sort them, or use unsorted_segment_sum."
                            % (i, host[i], i - 1, host[i - 1]))
            count = int(segment_ids[-1]) + 1
        out = xp.zeros((count,) + data.shape[1:], data.dtype)
        _scatter_rows(xp, "add", out.reshape(-1), segment_ids, data, _prod(data.shape[1:]))
        return out
    return kernel


def _segment_sum_reference(data, segment_ids):
    data, ids = np.asarray(data), np.asarray(segment_ids)
    count = int(ids[-1]) + 1 if ids.size else 0
    return np.stack([data[ids == s].sum(axis=0) for s in range(count)]).astype(data.dtype) \
        if count else np.zeros((0,) + data.shape[1:], data.dtype)


SEGMENT_SUM = registry.primitive(
    "SegmentSum", _segment_sum_kernel, dtypes=NUMERIC, dtype_group=(0,),
    host_sync=HOST_VALUE_SHAPE,
    shape_fn=lambda data, ids: AbstractValue((None,) + data.shape[1:], data.dtype),
    vjp=lambda g, data, ids, out: (
        execute(GATHER, (g, ids), {"axis": 0, "batch_dims": 0}), None),
    saves=(1,), reference=_segment_sum_reference, family="math",
    samples=lambda rng, dtype: [
        ((_values(rng, (5,), dtype), np.array([0, 0, 1, 3, 3], np.int32)), {}),
        ((_values(rng, (4, 2), dtype), np.array([1, 1, 2, 2], np.int64)), {}),
        ((_values(rng, (0, 2), dtype), np.zeros((0,), np.int32)), {}),
    ],
    bad_samples=lambda rng: [
        ((np.ones(3, np.float32), np.array([0, 2, 1], np.int32)), {},
         errors.InvalidArgumentError),
        ((np.ones(3, np.float32), np.array([-1, 0, 1], np.int32)), {},
         errors.InvalidArgumentError),
        ((np.ones(3, np.float32), np.array([0, 1], np.int32)), {},
         errors.InvalidArgumentError),
        ((np.ones((3, 2), np.float32), np.zeros((3, 2), np.int32)), {},
         errors.InvalidArgumentError),
    ])


def _segment_public(prim, pyname, summary, example):
    def op(data, segment_ids, num_segments, name=None):
        if num_segments.__class__ is not int:
            num_segments = scalar_int(num_segments, prim.name, "num_segments")
        return execute(prim, (data, segment_ids), {"num_segments": num_segments})

    op.__name__ = op.__qualname__ = pyname
    op.__doc__ = """%s

    ``output[i]`` combines every ``data[j...]`` whose ``segment_ids[j...] == i``;
    segment_ids must be a prefix of data's shape, entries with a negative id are dropped
    and ids must be < num_segments.

    Args:
        data: A Tensor.
        segment_ids: An int32/int64 Tensor whose shape is a prefix of data's shape.
        num_segments: The number of output segments (a static int).
        name: Unused.

    Returns:
        A Tensor of shape ``[num_segments] + data.shape[rank(segment_ids):]``.

    Raises:
        InvalidArgumentError: For ids >= num_segments or mismatched shapes.

    Example:
        >>> import eagerflow as ef
        >>> %s
    """ % (summary, example)
    return op


unsorted_segment_sum = _segment_public(
    UNSORTED_SEGMENT_SUM, "unsorted_segment_sum", "Sums the segments of ``data``.",
    "ef.math.unsorted_segment_sum([1, 2, 3], [1, 0, 1], 2).numpy().tolist()\n"
    "        [2, 4]")
unsorted_segment_max = _segment_public(
    UNSORTED_SEGMENT_MAX, "unsorted_segment_max",
    "Maximum over each segment; an empty segment holds the dtype's lowest value.",
    "ef.math.unsorted_segment_max([1, 2, 3], [1, 0, 1], 2).numpy().tolist()\n"
    "        [2, 3]")
unsorted_segment_min = _segment_public(
    UNSORTED_SEGMENT_MIN, "unsorted_segment_min",
    "Minimum over each segment; an empty segment holds the dtype's highest value.",
    "ef.math.unsorted_segment_min([1, 2, 3], [1, 0, 1], 2).numpy().tolist()\n"
    "        [2, 1]")


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """Mean over each segment of ``data``; an empty segment gives 0.

    Args:
        data: A floating or complex Tensor (integers are divided as by ``truediv``).
        segment_ids: An int32/int64 Tensor whose shape is a prefix of data's shape;
            negative ids are dropped.
        num_segments: The number of output segments (a static int).
        name: Unused.

    Returns:
        A Tensor of shape ``[num_segments] + data.shape[rank(segment_ids):]``.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.unsorted_segment_mean([1.0, 2.0, 4.0], [1, 0, 1], 3).numpy().tolist()
        [2.0, 2.5, 0.0]
    """
    if num_segments.__class__ is not int:
        num_segments = scalar_int(num_segments, "UnsortedSegmentSum", "num_segments")
    attrs = {"num_segments": num_segments}
    data = _as_tensor(data)
    total = execute(UNSORTED_SEGMENT_SUM, (data, segment_ids), attrs)
    count = execute(UNSORTED_SEGMENT_SUM, (ONES_LIKE_fn(data), segment_ids), attrs)
    count = execute(SELECT, (greater(count, 0), count, ONES_LIKE_fn(count)))
    return truediv(total, count)


def segment_sum(data, segment_ids, name=None):
    """Sums segments of ``data`` given sorted, non-negative 1-D ``segment_ids``.

    Args:
        data: A Tensor whose first dimension matches ``segment_ids``.
        segment_ids: A sorted (non-decreasing) 1-D int32/int64 Tensor of ids >= 0.
        name: Unused.

    Returns:
        A Tensor of shape ``[segment_ids[-1] + 1] + data.shape[1:]`` (ids that do not occur
        give zeros).

    Raises:
        InvalidArgumentError: If the ids are not sorted, are negative or do not match data.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.segment_sum([1, 2, 3, 4], [0, 0, 2, 2]).numpy().tolist()
        [3, 0, 7]
    """
    return execute(SEGMENT_SUM, (data, segment_ids))
