"""Sorting: ``sort``, ``argsort``, ``top_k`` and ``in_top_k``.

Every sort here is stable: equal values keep their input order (lower index first), in
both directions, as ``top_k`` documents for TF. NaN sorts as larger than every number (last
when ascending, first when descending).

The gradients of ``sort`` and ``top_k`` put each output cotangent back at its source
position. Two small private primitives do this, ``TakeAlongAxis`` and ``PutAlongAxis``
(each other's adjoints for indices without repeats, which is what a sort produces), so
this module depends on no other indexing family.

Example:
    >>> import eagerflow as ef
    >>> ef.sort(ef.constant([3, 1, 2]), direction="DESCENDING").numpy().tolist()
    [3, 2, 1]
"""

from __future__ import annotations

import collections

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, REAL
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["sort", "argsort", "top_k", "in_top_k", "TopKV2"]

EXPORTS = {
    "": ["sort", "argsort"],
    "math": ["top_k", "in_top_k"],
    "nn": ["top_k", "in_top_k"],
}

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------

def _argsort(xp, x, axis):
    if xp.name == "numpy":
        return xp.argsort(x, axis=axis, kind="stable")
    return xp.argsort(x, axis=axis)  # cupy's sorts are stable radix sorts


def _stable_order(xp, x, axis, descending):
    """Indices that sort ``x`` along ``axis``; ties keep the lower index first.

    Descending: sort the reversed array ascending (stable), reverse the result and map the
    positions back, which keeps equal values in increasing index order.
    """
    if not descending:
        return _argsort(xp, x, axis)
    n = x.shape[axis]
    order = xp.flip(_argsort(xp, xp.flip(x, axis), axis), axis)
    return (n - 1) - order


def _sort_kernel(xp):
    def kernel(x, *, axis, descending):
        order = _stable_order(xp, x, axis, descending)
        return xp.take_along_axis(x, order, axis), order.astype(np.int32)
    return kernel


def _top_k_kernel(xp):
    def kernel(x, *, k, sorted, index_type):  # noqa: A002 - TF's attribute name
        n = x.shape[-1]
        if not 0 <= k <= n:
            raise errors.InvalidArgumentError(
                None, None, "input must have at least k=%d columns along its last dimension, "
                "got shape %s. Use k <= %d." % (k, list(x.shape), n))
        order = _stable_order(xp, x, x.ndim - 1, True)[..., :k]
        return (xp.take_along_axis(x, order, -1),
                order.astype(d.as_dtype(index_type).np_dtype))
    return kernel


def _along_index(xp, idx, axis):
    """An advanced index that picks ``idx`` along ``axis`` and keeps every other axis."""
    index = []
    for dim, size in enumerate(idx.shape):
        if dim == axis:
            index.append(idx)
        else:
            shape = [1] * idx.ndim
            shape[dim] = size
            index.append(xp.arange(size).reshape(shape))
    return tuple(index)


def _take_kernel(xp):
    def kernel(x, idx, *, axis):
        return x[_along_index(xp, idx, axis)]
    return kernel


def _put_kernel(xp):
    def kernel(updates, idx, like, *, axis):
        out = xp.zeros(like.shape, dtype=updates.dtype)
        out[_along_index(xp, idx, axis)] = updates
        return out
    return kernel


def _in_top_k_kernel(xp):
    def kernel(predictions, targets, *, k):
        if predictions.ndim != 2 or targets.ndim != 1 or \
                predictions.shape[0] != targets.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, "predictions must be [batch, classes] and targets [batch], got "
                "shapes %s and %s." % (list(predictions.shape), list(targets.shape)))
        classes = predictions.shape[1]
        valid = (targets >= 0) & (targets < classes)
        safe = xp.where(valid, targets, 0).astype(np.int64)
        if classes == 0:
            return xp.zeros(targets.shape, dtype=bool)
        target = xp.take_along_axis(predictions, safe[:, None], 1)
        better = (predictions > target).sum(axis=1)
        return valid & xp.isfinite(target[:, 0]) & (better < k)
    return kernel


# --------------------------------------------------------------------------------------
# numpy references and samples
# --------------------------------------------------------------------------------------

def _ref_order(x, axis, descending):
    # Independent of the kernel's trick: a stable sort of the negated values.
    key = -x.astype(np.float64) if descending else x
    return np.argsort(key, axis=axis, kind="stable")


def _ref_sort(x, *, axis, descending):
    order = _ref_order(x, axis, descending)
    return np.take_along_axis(x, order, axis), order.astype(np.int32)


def _ref_top_k(x, *, k, sorted, index_type):  # noqa: A002
    order = _ref_order(x, x.ndim - 1, True)[..., :k]
    return np.take_along_axis(x, order, -1), order.astype(d.as_dtype(index_type).np_dtype)


def _ref_in_top_k(predictions, targets, *, k):
    out = np.zeros(targets.shape, bool)
    for i, t in enumerate(targets):
        if 0 <= t < predictions.shape[1] and np.isfinite(predictions[i, t]):
            out[i] = np.sum(predictions[i] > predictions[i, t]) < k
    return out


def _values(rng, shape, dtype):
    if dtype.is_integer:
        return rng.integers(-3, 4, size=shape).astype(dtype.np_dtype)  # many ties
    return rng.uniform(-3, 3, size=shape).astype(dtype.np_dtype)


def _sort_samples(rng, dtype):
    out = []
    for shape, axis in (((5,), 0), ((2, 7), 1), ((4, 3), 0), ((2, 3, 4), 1), ((0,), 0),
                        ((3, 0), 1), ((1,), 0)):
        for descending in (False, True):
            out.append(((_values(rng, shape, dtype),), {"axis": axis, "descending": descending}))
    return out


def _sort_grad_samples(rng):
    return [((args[0],), attrs) for args, attrs in _sort_samples(rng, d.float64)]


def _sort_bad(rng):
    return [((np.zeros((2, 3)),), {"axis": 2, "descending": False},
             errors.InvalidArgumentError)]


def _top_k_samples(rng, dtype):
    out = []
    for shape, k in (((5,), 3), ((2, 9), 2), ((2, 3), 0), ((2, 3), 3), ((3, 0), 0),
                     ((2, 2, 5), 4)):
        for index_type in ("int32", "int64"):
            out.append(((_values(rng, shape, dtype),),
                        {"k": k, "sorted": True, "index_type": index_type}))
    return out


def _top_k_grad_samples(rng):
    return [((args[0],), attrs) for args, attrs in _top_k_samples(rng, d.float64)]


def _top_k_bad(rng):
    x = np.zeros((2, 3))
    return [((x,), {"k": 4, "sorted": True, "index_type": "int32"},
             errors.InvalidArgumentError),
            ((x,), {"k": -1, "sorted": True, "index_type": "int32"},
             errors.InvalidArgumentError)]


def _along_samples(rng, dtype):
    out = []
    for shape, axis, k in (((5,), 0, 5), ((2, 6), 1, 3), ((4, 3), 0, 2), ((2, 3, 4), 2, 4)):
        x = _values(rng, shape, dtype)
        idx = np.argsort(rng.random(shape), axis=axis)
        idx = np.take(idx, np.arange(k), axis=axis).astype(np.int32)
        out.append(((x, idx), {"axis": axis}))
    return out


def _put_samples(rng, dtype):
    out = []
    for (x, idx), attrs in _along_samples(rng, dtype):
        updates = _values(rng, idx.shape, dtype)
        out.append(((updates, idx, np.zeros(x.shape, dtype.np_dtype)), attrs))
    return out


def _ref_put(updates, idx, like, *, axis):
    out = np.zeros(like.shape, updates.dtype)
    np.put_along_axis(out, idx.astype(np.int64), updates, axis)
    return out


def _in_top_k_samples(rng, dtype):
    preds = _values(rng, (6, 5), dtype)
    if dtype.is_floating:
        preds[1, 2] = np.nan
        preds[2, :] = preds[2, 0]  # all tied: every class is in the top k
    targets = np.array([0, 2, 3, 4, 9, -1], np.int32)
    return [((preds, targets), {"k": k}) for k in (0, 1, 2, 5)]


def _in_top_k_bad(rng):
    return [((np.zeros((3,), np.float32), np.zeros((3,), np.int32)), {"k": 1},
             errors.InvalidArgumentError),
            ((np.zeros((3, 2), np.float32), np.zeros((2,), np.int32)), {"k": 1},
             errors.InvalidArgumentError)]


# --------------------------------------------------------------------------------------
# Shape rules and gradients
# --------------------------------------------------------------------------------------

def _sort_shape(x, *, axis, descending):
    return AbstractValue(x.shape, x.dtype), AbstractValue(x.shape, d.int32)


def _top_k_shape(x, *, k, sorted, index_type):  # noqa: A002
    shape = None if x.shape is None else x.shape[:-1] + (k,)
    return AbstractValue(shape, x.dtype), AbstractValue(shape, index_type)


def _sort_vjp(g, x, out, *, axis, descending):
    values, order = out
    return execute(PUT_ALONG_AXIS, (g[0], order, values), {"axis": axis})


def _top_k_vjp(g, x, out, *, k, sorted, index_type):  # noqa: A002
    return execute(PUT_ALONG_AXIS, (g[0], out[1], x), {"axis": x.shape.rank - 1})


def _take_vjp(g, x, idx, out, *, axis):
    return execute(PUT_ALONG_AXIS, (g, idx, x), {"axis": axis}), None


def _put_vjp(g, updates, idx, like, out, *, axis):
    return execute(TAKE_ALONG_AXIS, (g, idx), {"axis": axis}), None, None


SORT = registry.primitive(
    "Sort", _sort_kernel, dtypes=REAL, num_outputs=2, shape_fn=_sort_shape, vjp=_sort_vjp,
    saves=("out",), reference=_ref_sort, samples=_sort_samples,
    grad_samples=_sort_grad_samples, bad_samples=_sort_bad, family="sort",
    sweep_dtypes=(d.float32, d.float64, d.int32))

TOP_K = registry.primitive(
    "TopKV2", _top_k_kernel, dtypes=REAL, num_outputs=2, shape_fn=_top_k_shape,
    vjp=_top_k_vjp, saves=(0, "out"), reference=_ref_top_k, samples=_top_k_samples,
    grad_samples=_top_k_grad_samples, bad_samples=_top_k_bad, family="sort",
    sweep_dtypes=(d.float32, d.float64, d.int32))

TAKE_ALONG_AXIS = registry.primitive(
    "TakeAlongAxis", _take_kernel, dtypes=ALL, dtype_group=(0,),
    shape_fn=lambda x, idx, *, axis: AbstractValue(idx.shape, x.dtype),
    vjp=_take_vjp, saves=(0, 1),
    reference=lambda x, idx, *, axis: np.take_along_axis(x, idx.astype(np.int64), axis),
    samples=_along_samples, family="sort",
    doc="Gradient helper: x picked at idx along axis (idx without repeats).")

PUT_ALONG_AXIS = registry.primitive(
    "PutAlongAxis", _put_kernel, dtypes=ALL, dtype_group=(0,),
    shape_fn=lambda updates, idx, like, *, axis: AbstractValue(like.shape, updates.dtype),
    vjp=_put_vjp, saves=(1,), reference=_ref_put, samples=_put_samples, family="sort",
    doc="Gradient helper: zeros shaped like `like` with updates placed at idx along axis.")

IN_TOP_K = registry.primitive(
    "InTopKV2", _in_top_k_kernel, dtypes=REAL, dtype_group=(0,),
    shape_fn=lambda p, t, *, k: AbstractValue(t.shape, d.bool), reference=_ref_in_top_k,
    samples=_in_top_k_samples, bad_samples=_in_top_k_bad, family="sort",
    sweep_dtypes=(d.float32, d.float64))


# --------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------

def _prepare(values, axis, direction, op):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise errors.InvalidArgumentError(
            None, op, "%s: direction must be 'ASCENDING' or 'DESCENDING', got %r."
            % (op, direction))
    x = values if values.__class__ is Tensor else convert_to_tensor(values)
    rank = x.shape.rank
    try:
        a = int(axis.numpy()) if hasattr(axis, "numpy") else int(axis)
    except (TypeError, ValueError):
        raise errors.InvalidArgumentError(
            None, op, "%s: axis must be a single int, got %r." % (op, axis)) from None
    if rank is not None:
        if not -rank <= a < rank:
            raise errors.InvalidArgumentError(
                None, op, "%s: axis %d is out of range for an input of rank %d; valid axes "
                "are in [%d, %d]." % (op, a, rank, -rank, rank - 1) if rank else
                "%s needs an input of rank >= 1, got a scalar." % op)
        a %= rank
    return x, {"axis": a, "descending": direction == "DESCENDING"}


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """Sorts a tensor along an axis.

    The sort is stable. NaN is treated as larger than every number.

    Args:
        values: A real tensor of rank >= 1.
        axis: The axis to sort along (default -1, the last).
        direction: ``'ASCENDING'`` (default) or ``'DESCENDING'``.
        name: Unused (TF compatibility).

    Returns:
        A tensor of the same shape and dtype, sorted along ``axis``.

    Raises:
        InvalidArgumentError: If ``direction`` or ``axis`` is invalid.

    Example:
        >>> import eagerflow as ef
        >>> ef.sort(ef.constant([[3.0, 1.0], [0.0, 2.0]])).numpy().tolist()
        [[1.0, 3.0], [0.0, 2.0]]
    """
    x, attrs = _prepare(values, axis, direction, "sort")
    return execute(SORT, (x,), attrs)[0]


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """Returns the indices that sort a tensor along an axis (int32).

    The order is always stable (ties keep increasing index order), which satisfies
    ``stable=True`` and is one valid answer for ``stable=False``.

    Args:
        values: A real tensor of rank >= 1.
        axis: The axis to sort along (default -1, the last).
        direction: ``'ASCENDING'`` (default) or ``'DESCENDING'``.
        stable: Accepted for TF compatibility; the sort is always stable.
        name: Unused (TF compatibility).

    Returns:
        An int32 tensor of the same shape as ``values``.

    Raises:
        InvalidArgumentError: If ``direction`` or ``axis`` is invalid.

    Example:
        >>> import eagerflow as ef
        >>> ef.argsort(ef.constant([1, 10, 26.9, 2.8, 166.32, 62.3])).numpy().tolist()
        [0, 3, 1, 2, 5, 4]
    """
    x, attrs = _prepare(values, axis, direction, "argsort")
    return execute(SORT, (x,), attrs)[1]


def top_k(input, k=1, sorted=True, index_type=d.int32, name=None):  # noqa: A002
    """Finds the ``k`` largest entries along the last dimension, and their indices.

    Equal values are returned lower index first. The values always come sorted in
    descending order (a valid answer for ``sorted=False`` too).

    Args:
        input: A real tensor of rank >= 1 whose last dimension is at least ``k``.
        k: The number of entries to find (an int or a scalar int tensor), >= 0.
        sorted: Accepted for TF compatibility; results are always sorted.
        index_type: The dtype of ``indices``: int32 (default), int16 or int64.
        name: Unused (TF compatibility).

    Returns:
        ``TopKV2(values, indices)``, each of shape ``input.shape[:-1] + [k]``.

    Raises:
        InvalidArgumentError: If ``k`` is negative or larger than the last dimension, or the
            input is a scalar.

    Example:
        >>> import eagerflow as ef
        >>> result = ef.math.top_k([1, 2, 98, 1, 1, 99, 3, 1, 3, 96, 4, 1], k=3)
        >>> result.values.numpy().tolist(), result.indices.numpy().tolist()
        ([99, 98, 96], [5, 2, 9])
    """
    x = input if input.__class__ is Tensor else convert_to_tensor(input)
    from eagerflow.ops.array import scalar_int

    k = scalar_int(k, "top_k", "k")  # a DynamicScalar when known only at run time
    index_type = d.as_dtype(index_type)
    if index_type not in (d.int16, d.int32, d.int64):
        raise errors.InvalidArgumentError(
            None, "top_k", "top_k: index_type must be int16, int32 or int64, got %s."
            % index_type.name)
    rank = x.shape.rank
    if rank == 0:
        raise errors.InvalidArgumentError(
            None, "top_k", "top_k: input must have rank >= 1, got a scalar. Use a 1-D tensor.")
    if k.__class__ is int and k < 0:
        raise errors.InvalidArgumentError(
            None, "top_k", "top_k: k must be non-negative, got %d." % k)
    values, indices = execute(TOP_K, (x,), {"k": k, "sorted": True,
                                             "index_type": index_type.name})
    return TopKV2(values, indices)


def in_top_k(targets, predictions, k, name=None):
    """Says whether each target class is among the ``k`` highest predictions of its row.

    A target is in the top k when fewer than k classes have a strictly higher prediction, so
    classes tied at the boundary all count as in. A target out of ``[0, classes)`` or with
    a non-finite prediction gives False.

    Args:
        targets: A [batch] int32 or int64 tensor of class ids.
        predictions: A [batch, classes] real tensor.
        k: The number of top predictions to consider (int or scalar int tensor).
        name: Unused (TF compatibility).

    Returns:
        A [batch] bool tensor.

    Raises:
        InvalidArgumentError: If the shapes do not fit or ``targets`` is not integer.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.in_top_k([2, 0], [[0.1, 0.3, 0.6], [0.5, 0.2, 0.3]], 1).numpy().tolist()
        [True, True]
    """
    t = targets if targets.__class__ is Tensor else convert_to_tensor(targets)
    if t.dtype not in (d.int32, d.int64):
        raise errors.InvalidArgumentError(
            None, "in_top_k", "in_top_k: targets must be int32 or int64, got %s." % t.dtype.name)
    k = int(k.numpy()) if hasattr(k, "numpy") else int(k)
    return execute(IN_TOP_K, (predictions, t), {"k": k})

