"""``tf.sparse``: operations on SparseTensors, eager and traced alike.

Each operation works on the component tensors with ordinary ops (gathers, sorts, segment
sums, boolean masks) or with the sparse primitives of :mod:`eagerflow.ops.sparse` where an
output's size is a dense shape's value, so it runs the same eagerly and inside
``@function`` (where the number of values is unknown), and gradients reach ``values`` (and
the dense operand of ``sparse_dense_matmul``). Row-major order is a lexicographic sort, one
stable argsort per dimension, so no coordinate is ever linearized (that would overflow for
large dense shapes); only ``reshape`` linearizes, as TF's does.

Example:
    >>> import eagerflow as ef
    >>> a = ef.sparse.SparseTensor([[0, 0]], [1.0], [2, 2])
    >>> ef.sparse.to_dense(ef.sparse.add(a, a)).numpy().tolist()
    [[2.0, 0.0], [0.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import _api as api
from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.math import segment_sum
from eagerflow.ops.sparse.sparse_ops import (
    sparse_dense_matmul_op, sparse_reshape_op, sparse_to_dense,
)
from eagerflow.ops.static_value import constant_value
from eagerflow.sparse.sparse_tensor import SparseTensor
from eagerflow.tensor import convert_to_tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["to_dense", "from_dense", "add", "reorder", "reshape", "sparse_dense_matmul",
           "reduce_sum", "retain", "slice", "concat"]


def _check(sp, op):
    if not isinstance(sp, SparseTensor):
        raise errors.InvalidArgumentError(
            None, op, "%s needs a SparseTensor, got %s." % (op, type(sp).__name__))


def _rank(sp, op):
    rank = sp.shape.rank
    if rank is None:
        rank = sp.indices.shape[1] if sp.indices.shape.rank == 2 else None
    if rank is None:
        raise errors.InvalidArgumentError(
            None, op, "%s needs the SparseTensor's rank to be known when it is traced; give "
            "the SparseTensorSpec a shape (e.g. [None, None])." % op)
    return rank


def _nvalues(sp):
    return api.shape(sp.indices, out_type=d.int64)[0]


def _row_major_order(indices, rank):
    """The permutation that sorts ``indices`` rows lexicographically (stable)."""
    perm = api.range(api.shape(indices, out_type=d.int64)[0], dtype=d.int64)
    for k in reversed(range(rank)):
        column = api.gather(indices[:, k], perm)
        perm = api.gather(perm, api.argsort(column, stable=True))
    return perm


def _coalesce(indices, values, rank):
    """Sorted unique indices and the summed values of each, and the count summed in each."""
    perm = _row_major_order(indices, rank)
    indices, values = api.gather(indices, perm), api.gather(values, perm)
    # A row starts a new entry when it is the first or differs from the one before it.
    previous = api.concat([indices[:1], indices[:-1]], 0)
    first = api.equal(api.range(api.shape(indices, out_type=d.int64)[0], dtype=d.int64), 0)
    starts = api.logical_or(api.reduce_any(api.not_equal(indices, previous), axis=1), first)
    ids = api.cumsum(api.cast(starts, d.int64)) - 1
    counts = segment_sum(api.ones_like(ids), ids)
    return api.boolean_mask(indices, starts), segment_sum(values, ids), counts


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor of a SparseTensor (``tf.sparse.to_dense``).

    With ``validate_indices`` (the default) the indices must be unique and in row-major
    order, as in TF (``reorder`` sorts them); the check runs whenever the op runs.

    Args:
        sp_input: A SparseTensor.
        default_value: The value of the cells no index names (0, or b"" for strings).
        validate_indices: Check the indices' order and uniqueness.
        name: Unused.

    Returns:
        A Tensor of shape ``dense_shape``.

    Raises:
        InvalidArgumentError: For out-of-range, repeated or unordered indices.

    Example:
        >>> import eagerflow as ef
        >>> st = ef.sparse.SparseTensor([[1]], [4], [3])
        >>> ef.sparse.to_dense(st, default_value=-1).numpy().tolist()
        [-1, 4, -1]
    """
    _check(sp_input, "SparseToDense")
    out = sparse_to_dense(sp_input.indices, sp_input.values, sp_input.dense_shape,
                          default_value, validate_indices)
    if sp_input.shape.rank is not None:
        out.set_shape(sp_input.shape)
    return out


def from_dense(tensor, name=None):
    """The SparseTensor of a dense tensor's non-zero (non-empty) entries.

    Example:
        >>> import eagerflow as ef
        >>> ef.sparse.from_dense([[0, 3], [4, 0]]).indices.numpy().tolist()
        [[0, 1], [1, 0]]
    """
    t = convert_to_tensor(tensor)
    zero = convert_to_tensor(b"" if t.dtype is d.string else 0, dtype=t.dtype)
    indices = api.where(api.not_equal(t, zero))
    return SparseTensor._from_parts(indices, api.boolean_mask(t, api.not_equal(t, zero)),
                                    api.shape(t, out_type=d.int64), t.shape)


def reorder(sp_input, name=None):
    """The same SparseTensor with indices in row-major order (``tf.sparse.reorder``).

    Example:
        >>> import eagerflow as ef
        >>> st = ef.sparse.SparseTensor([[1, 0], [0, 2]], [1, 2], [2, 3])
        >>> ef.sparse.reorder(st).indices.numpy().tolist()
        [[0, 2], [1, 0]]
    """
    _check(sp_input, "SparseReorder")
    perm = _row_major_order(sp_input.indices, _rank(sp_input, "SparseReorder"))
    return SparseTensor._from_parts(api.gather(sp_input.indices, perm),
                                    api.gather(sp_input.values, perm), sp_input.dense_shape,
                                    sp_input.shape)


def add(a, b, threshold=0, name=None):
    """Adds a SparseTensor and a SparseTensor (sparse result) or a dense tensor (dense).

    As TF's ``SparseAdd``, a sum of two values whose magnitude is below ``threshold`` is
    dropped (values present in only one operand are kept). The result's indices are in
    row-major order whatever the operands' order.

    Example:
        >>> import eagerflow as ef
        >>> a = ef.sparse.SparseTensor([[0, 0]], [1.0], [2, 2])
        >>> ef.sparse.to_dense(ef.sparse.add(a, a)).numpy().tolist()
        [[2.0, 0.0], [0.0, 0.0]]
    """
    if not isinstance(a, SparseTensor):
        a, b = b, a
    _check(a, "SparseAdd")
    if not isinstance(b, SparseTensor):
        b = convert_to_tensor(b, dtype=a.dtype)
        return to_dense(a, validate_indices=False) + b
    if a.dtype is not b.dtype:
        raise errors.InvalidArgumentError(
            None, "SparseAdd", "sparse.add: the operands have dtypes %s and %s; cast one."
            % (a.dtype.name, b.dtype.name))
    if not a.shape.is_compatible_with(b.shape):
        raise errors.InvalidArgumentError(
            None, "SparseAdd", "sparse.add: dense shapes differ: %s and %s."
            % (a.shape, b.shape))
    indices, values, counts = _coalesce(api.concat([a.indices, b.indices], 0),
                                        api.concat([a.values, b.values], 0),
                                        _rank(a, "SparseAdd"))
    threshold = convert_to_tensor(threshold)
    known = constant_value(threshold)
    if known is None or np.any(known != 0):
        thresh = api.cast(threshold, api.abs(values).dtype)
        keep = api.logical_or(api.less(counts, 2), api.greater_equal(api.abs(values), thresh))
        indices, values = api.boolean_mask(indices, keep), api.boolean_mask(values, keep)
    return SparseTensor._from_parts(indices, values, a.dense_shape, a.shape.merge_with(b.shape))


def reshape(sp_input, shape, name=None):
    """The same values under a new dense shape (one -1 allowed), as ``tf.sparse.reshape``.

    Example:
        >>> import eagerflow as ef
        >>> st = ef.sparse.SparseTensor([[1, 1]], [5], [2, 2])
        >>> ef.sparse.reshape(st, [-1]).indices.numpy().tolist()
        [[3]]
    """
    _check(sp_input, "SparseReshape")
    new = api.cast(convert_to_tensor(shape, dtype_hint=d.int64), d.int64)
    indices, dense_shape = sparse_reshape_op(sp_input.indices, sp_input.dense_shape, new)
    static = None
    known = constant_value(new)
    if known is not None and (known != -1).all():
        static = TensorShape([int(s) for s in known])
    return SparseTensor._from_parts(indices, sp_input.values, dense_shape, static)


def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """A sparse ``[M, K]`` matrix times a dense ``[K, N]`` one (``tf.sparse.sparse_dense_matmul``).

    Gradients reach both the sparse values and ``b``, as in TF.

    Example:
        >>> import eagerflow as ef
        >>> st = ef.sparse.SparseTensor([[0, 1]], [2.0], [1, 2])
        >>> ef.sparse.sparse_dense_matmul(st, [[1.0], [3.0]]).numpy().tolist()
        [[6.0]]
    """
    _check(sp_a, "SparseTensorDenseMatMul")
    b = convert_to_tensor(b, dtype=sp_a.dtype)
    out = sparse_dense_matmul_op(sp_a.indices, sp_a.values, sp_a.dense_shape, b,
                                 adjoint_a, adjoint_b)
    if sp_a.shape.rank == 2:
        out.set_shape([sp_a.shape[1 if adjoint_a else 0], out.shape[1]])
    return out


def _axes(axis, rank, op):
    if axis is None:
        return list(range(rank))
    axes = [int(a) for a in np.asarray(constant_value(convert_to_tensor(axis)) if not
                                       isinstance(axis, (int, list, tuple)) else axis
                                       ).reshape(-1)]
    for a in axes:
        if not -rank <= a < rank:
            raise errors.InvalidArgumentError(
                None, op, "axis %d is out of range for a SparseTensor of rank %d." % (a, rank))
    return sorted({a % rank for a in axes})


def reduce_sum(sp_input, axis=None, keepdims=False, output_is_sparse=False, name=None):
    """Sums a SparseTensor's values over ``axis`` (``tf.sparse.reduce_sum``).

    The values are summed per coordinate of the dimensions kept (repeated indices add up,
    as in TF); the result is dense unless ``output_is_sparse``.

    Example:
        >>> import eagerflow as ef
        >>> st = ef.sparse.SparseTensor([[0, 1], [1, 0], [1, 2]], [1.0, 2.0, 3.0], [2, 3])
        >>> ef.sparse.reduce_sum(st, axis=1).numpy().tolist()
        [1.0, 5.0]
    """
    _check(sp_input, "SparseReduceSum")
    rank = _rank(sp_input, "SparseReduceSum")
    axes = _axes(axis, rank, "SparseReduceSum")
    if axis is None and not keepdims and not output_is_sparse:
        return api.reduce_sum(sp_input.values)
    kept = [k for k in range(rank) if k not in axes]
    dims = sp_input.shape.as_list() if sp_input.shape.rank is not None else [None] * rank
    if keepdims:
        mask = convert_to_tensor(np.asarray([k in kept for k in range(rank)], np.int64))
        indices = sp_input.indices * mask
        dense_shape = sp_input.dense_shape * mask + (1 - mask)
        static = [dims[k] if k in kept else 1 for k in range(rank)]
    else:
        indices = api.gather(sp_input.indices, kept, axis=1)
        dense_shape = api.gather(sp_input.dense_shape, kept)
        static = [dims[k] for k in kept]
    indices, values, _ = _coalesce(indices, sp_input.values, len(static))
    out = SparseTensor._from_parts(indices, values, dense_shape, static)
    return out if output_is_sparse else to_dense(out)


def retain(sp_input, to_retain):
    """Keeps the entries where the bool vector ``to_retain`` is true (``tf.sparse.retain``).

    Example:
        >>> import eagerflow as ef
        >>> st = ef.sparse.SparseTensor([[0], [2]], [1, 2], [3])
        >>> ef.sparse.retain(st, [False, True]).values.numpy().tolist()
        [2]
    """
    _check(sp_input, "SparseRetain")
    keep = convert_to_tensor(to_retain, dtype=d.bool)
    n = sp_input.values.shape[0] if sp_input.values.shape.rank == 1 else None
    if keep.shape.rank != 1 or None not in (n, keep.shape[0]) and keep.shape[0] != n:
        raise errors.InvalidArgumentError(
            None, "SparseRetain", "retain: to_retain must have one bool per value (%s), got "
            "shape %s." % (n, keep.shape))
    return SparseTensor._from_parts(api.boolean_mask(sp_input.indices, keep),
                                    api.boolean_mask(sp_input.values, keep),
                                    sp_input.dense_shape, sp_input.shape)


def slice(sp_input, start, size, name=None):  # noqa: A001 - TF's name
    """The entries inside the box ``[start, start + size)``, re-indexed from ``start``.

    The result's dense shape is the box clipped to the input's shape (``tf.sparse.slice``).

    Example:
        >>> import eagerflow as ef
        >>> st = ef.sparse.SparseTensor([[0, 1], [2, 2]], [1, 2], [3, 3])
        >>> ef.sparse.slice(st, [1, 1], [5, 5]).indices.numpy().tolist()
        [[1, 1]]
    """
    _check(sp_input, "SparseSlice")
    rank = _rank(sp_input, "SparseSlice")
    start = api.cast(convert_to_tensor(start, dtype_hint=d.int64), d.int64)
    size = api.cast(convert_to_tensor(size, dtype_hint=d.int64), d.int64)
    for what, t in (("start", start), ("size", size)):
        if t.shape.rank != 1 or t.shape[0] not in (None, rank):
            raise errors.InvalidArgumentError(
                None, "SparseSlice", "slice: %s must have one entry per dimension (%d), got "
                "shape %s." % (what, rank, t.shape))
    stop = api.minimum(start + size, sp_input.dense_shape)
    inside = api.logical_and(api.greater_equal(sp_input.indices, start),
                             api.less(sp_input.indices, stop))
    keep = api.reduce_all(inside, axis=1)
    return SparseTensor._from_parts(api.boolean_mask(sp_input.indices, keep) - start,
                                    api.boolean_mask(sp_input.values, keep),
                                    api.maximum(stop - start, 0))


def concat(axis, sp_inputs, expand_nonconcat_dims=False, name=None):
    """Concatenates SparseTensors along ``axis`` (``tf.sparse.concat``); indices of the
    result are in row-major order.

    With ``expand_nonconcat_dims`` the other dimensions may differ and the result takes the
    largest of each.

    Example:
        >>> import eagerflow as ef
        >>> a = ef.sparse.SparseTensor([[0, 0]], [1], [1, 2])
        >>> ef.sparse.to_dense(ef.sparse.concat(1, [a, a])).numpy().tolist()
        [[1, 0, 1, 0]]
    """
    sp_inputs = list(sp_inputs)
    if not sp_inputs:
        raise errors.InvalidArgumentError(None, "SparseConcat", "concat needs a SparseTensor.")
    for sp in sp_inputs:
        _check(sp, "SparseConcat")
    rank = _rank(sp_inputs[0], "SparseConcat")
    if any(_rank(sp, "SparseConcat") != rank for sp in sp_inputs):
        raise errors.InvalidArgumentError(
            None, "SparseConcat", "sparse.concat: the inputs have ranks %s; they must be "
            "equal." % [sp.shape.rank for sp in sp_inputs])
    axis = int(axis)
    if not -rank <= axis < rank:
        raise errors.InvalidArgumentError(
            None, "SparseConcat", "sparse.concat: axis %d is out of range for rank %d."
            % (axis, rank))
    axis %= rank
    statics = [sp.shape.as_list() if sp.shape.rank is not None else [None] * rank
               for sp in sp_inputs]
    if not expand_nonconcat_dims:
        for k in range(rank):
            known = {s[k] for s in statics if s[k] is not None}
            if k != axis and len(known) > 1:
                raise errors.InvalidArgumentError(
                    None, "SparseConcat", "sparse.concat: shapes %s differ outside axis %d; "
                    "pass expand_nonconcat_dims=True to take the largest of each."
                    % (statics, axis))
    unit = convert_to_tensor(np.eye(rank, dtype=np.int64)[axis])
    offset = convert_to_tensor(np.zeros((), np.int64))
    parts = []
    for sp in sp_inputs:
        parts.append(sp.indices + offset * unit)
        offset = offset + sp.dense_shape[axis]
    shapes = api.stack([sp.dense_shape for sp in sp_inputs])
    others = api.reduce_max(shapes, 0) if expand_nonconcat_dims else shapes[0]
    dense_shape = others * (1 - unit) + offset * unit
    static = []
    for k in range(rank):
        col = [s[k] for s in statics]
        if k == axis:
            static.append(None if None in col else sum(col))
        elif expand_nonconcat_dims:
            static.append(None if None in col else max(col))
        else:
            static.append(next((c for c in col if c is not None), None))
    joined = SparseTensor._from_parts(api.concat(parts, 0),
                                      api.concat([sp.values for sp in sp_inputs], 0),
                                      dense_shape, static)
    return reorder(joined)
