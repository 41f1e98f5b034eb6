"""``SparseTensor`` and ``tf.sparse``: COO tensors (indices, values, dense_shape).

A SparseTensor is three ordinary tensors: int64 ``indices`` of shape ``[N, rank]``, ``values``
of shape ``[N]`` and an int64 ``dense_shape``. The operations are composites of existing
ops (scatter, gather, segment sums), so they trace and gradients reach ``values``.
Index bookkeeping that depends only on the (integer) indices runs on the host.

Example:
    >>> import eagerflow as ef
    >>> st = ef.sparse.SparseTensor([[0, 1], [2, 0]], [5.0, 7.0], [3, 2])
    >>> ef.sparse.to_dense(st).numpy().tolist()
    [[0.0, 5.0], [0.0, 0.0], [7.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import _api as api
from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.math import unsorted_segment_sum
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["SparseTensor", "SparseTensorSpec", "to_dense", "from_dense", "add", "reorder",
           "reshape", "sparse_dense_matmul", "reduce_sum", "retain", "slice", "concat"]


def _host(t):
    return np.asarray(t._value)


class SparseTensor:
    """A sparse tensor in coordinate form (``tf.sparse.SparseTensor``).

    Args:
        indices: ``[N, rank]`` int64 coordinates of the non-zero values.
        values: ``[N]`` values.
        dense_shape: The dense shape (``rank`` ints).

    Raises:
        InvalidArgumentError: If the pieces do not fit together or an index is out of range.
    """

    _is_sparse = True

    @classmethod
    def _from_parts(cls, indices, values, dense_shape):
        """A SparseTensor of three int64/value tensors, unchecked (symbolic ones included)."""
        out = cls.__new__(cls)
        out.indices, out.values, out.dense_shape = indices, values, dense_shape
        return out

    def __init__(self, indices, values, dense_shape):
        self.indices = api.cast(convert_to_tensor(indices, dtype_hint=d.int64), d.int64)
        self.values = convert_to_tensor(values)
        self.dense_shape = api.cast(convert_to_tensor(dense_shape, dtype_hint=d.int64), d.int64)
        idx, shape = _host(self.indices), _host(self.dense_shape)
        if idx.size == 0:
            idx = idx.reshape(0, shape.size)
        if idx.ndim != 2 or shape.ndim != 1 or idx.shape[1] != shape.size or \
                self.values.shape.as_list() != [idx.shape[0]]:
            raise errors.InvalidArgumentError(
                None, "SparseTensor", "indices must be [N, rank], values [N] and dense_shape "
                "[rank]; got indices %s, values %s, dense_shape %s."
                % (list(idx.shape), self.values.shape.as_list(), list(shape.shape)))
        if idx.size and (idx.min() < 0 or np.any(idx >= shape[None, :])):
            raise errors.InvalidArgumentError(
                None, "SparseTensor", "an index is out of bounds for dense_shape %s."
                % shape.tolist())
        if self.indices.shape.as_list() != list(idx.shape):
            self.indices = convert_to_tensor(idx.astype(np.int64))

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        """The static shape: dense_shape's values when known (eagerly), else its rank."""
        if self.dense_shape.__class__ is Tensor:
            return TensorShape([int(s) for s in _host(self.dense_shape)])
        rank = self.dense_shape.shape[0]
        return TensorShape(None if rank is None else [None] * rank)

    @property
    def ndim(self):
        return self.shape.rank

    @classmethod
    def from_value(cls, value):
        return value if isinstance(value, SparseTensor) else from_dense(value)

    def __repr__(self):
        return "SparseTensor(indices=%s, values=%s, dense_shape=%s)" % (
            _host(self.indices).tolist(), self.values.numpy().tolist(),
            _host(self.dense_shape).tolist())


class SparseTensorSpec:
    """The type of a SparseTensor: shape and dtype (``tf.SparseTensorSpec``).

    Example:
        >>> import eagerflow as ef
        >>> ef.sparse.SparseTensorSpec([None, 3], ef.float32).shape.as_list()
        [None, 3]
    """

    def __init__(self, shape=None, dtype=d.float32):
        self.shape = TensorShape(shape)
        self.dtype = d.as_dtype(dtype)

    @classmethod
    def from_value(cls, value):
        """The spec of a SparseTensor."""
        return cls(value.shape, value.dtype)

    @property
    def value_type(self):
        return SparseTensor

    def is_compatible_with(self, value):
        """True for a SparseTensor (or spec) of this dtype and a compatible shape."""
        if isinstance(value, SparseTensorSpec):
            return value.dtype is self.dtype and self.shape.is_compatible_with(value.shape)
        return isinstance(value, SparseTensor) and value.dtype is self.dtype and \
            self.shape.is_compatible_with(value.shape)

    def most_specific_compatible_type(self, other):
        """The spec that accepts values of both (unknown dims where they differ).

        Raises:
            TypeError: If the dtypes differ or ``other`` is not a SparseTensorSpec.
        """
        if not isinstance(other, SparseTensorSpec) or other.dtype is not self.dtype:
            raise TypeError("No spec is compatible with both %r and %r." % (self, other))
        return SparseTensorSpec(self.shape.most_specific_compatible_shape(other.shape),
                                self.dtype)

    def _batch(self, batch_size):
        dims = None if self.shape.rank is None else [batch_size] + self.shape.as_list()
        return SparseTensorSpec(dims, self.dtype)

    def _unbatch(self):
        return SparseTensorSpec(self.shape[1:], self.dtype)

    def __repr__(self):
        return "SparseTensorSpec(TensorShape(%s), tf.%s)" % (
            self.shape.as_list() if self.shape.rank is not None else None, self.dtype.name)

    def __eq__(self, other):
        return isinstance(other, SparseTensorSpec) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))


def _check(sp, op):
    if not isinstance(sp, SparseTensor):
        raise errors.InvalidArgumentError(
            None, op, "%s needs a SparseTensor, got %s." % (op, type(sp).__name__))


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor of a SparseTensor (``tf.sparse.to_dense``).

    Duplicate indices are refused when ``validate_indices`` is true, as in TF.
    """
    _check(sp_input, "SparseToDense")
    if validate_indices:
        idx = _host(sp_input.indices)
        if len(np.unique(idx, axis=0)) != len(idx):
            raise errors.InvalidArgumentError(
                None, "SparseToDense", "to_dense: indices contain duplicates.")
    shape = [int(s) for s in _host(sp_input.dense_shape)]
    if 0 in shape:  # nothing to scatter (an empty VarLenFeature row): the empty tensor
        return convert_to_tensor(np.zeros(shape, sp_input.dtype.np_dtype))
    dense = api.scatter_nd(sp_input.indices, sp_input.values, shape)
    if default_value is None or (default_value == 0 and sp_input.dtype is not d.string):
        if sp_input.dtype is d.string:
            default_value = b""
        else:
            return dense
    mask = api.scatter_nd(sp_input.indices, api.ones_like(sp_input.values, dtype=d.bool)
                          if sp_input.dtype is not d.string else
                          convert_to_tensor(np.ones(len(_host(sp_input.indices)), bool)), shape)
    fill = api.fill(shape, convert_to_tensor(default_value, dtype=sp_input.dtype))
    return api.where(mask, dense, fill)


def from_dense(tensor, name=None):
    """The SparseTensor of a dense tensor's non-zero (non-empty) entries.

    Example:
        >>> import eagerflow as ef
        >>> ef.sparse.from_dense([[0, 3], [4, 0]]).indices.numpy().tolist()
        [[0, 1], [1, 0]]
    """
    t = convert_to_tensor(tensor)
    zero = b"" if t.dtype is d.string else 0
    idx = np.argwhere(_host(t) != zero).astype(np.int64)
    return SparseTensor(idx, api.gather_nd(t, idx) if idx.size else
                        api.reshape(t, [-1])[:0], np.asarray(t.shape.as_list(), np.int64))


def reorder(sp_input, name=None):
    """The same SparseTensor with indices in row-major order (``tf.sparse.reorder``)."""
    _check(sp_input, "SparseReorder")
    idx = _host(sp_input.indices)
    order = np.lexsort(idx.T[::-1]) if idx.size else np.zeros(0, np.int64)
    return SparseTensor(idx[order], api.gather(sp_input.values, order), sp_input.dense_shape)


def add(a, b, threshold=0, name=None):
    """Adds a SparseTensor and a SparseTensor (sparse result) or a dense tensor (dense).

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
        return to_dense(a) + convert_to_tensor(b, dtype=a.dtype)
    if _host(a.dense_shape).tolist() != _host(b.dense_shape).tolist():
        raise errors.InvalidArgumentError(
            None, "SparseAdd", "sparse.add: dense shapes differ: %s and %s."
            % (_host(a.dense_shape).tolist(), _host(b.dense_shape).tolist()))
    idx = np.concatenate([_host(a.indices), _host(b.indices)])
    unique, inverse = np.unique(idx, axis=0, return_inverse=True)
    values = unsorted_segment_sum(api.concat([a.values, b.values], 0), inverse.reshape(-1),
                                  len(unique))
    if threshold:
        keep = np.abs(np.asarray(values.numpy())) >= threshold
        unique, values = unique[keep], api.boolean_mask(values, keep)
    return SparseTensor(unique.reshape(-1, idx.shape[1]), values, a.dense_shape)


def reshape(sp_input, shape, name=None):
    """The same values under a new dense shape (one -1 allowed), as ``tf.sparse.reshape``."""
    _check(sp_input, "SparseReshape")
    old = _host(sp_input.dense_shape)
    new = np.asarray(shape, np.int64).reshape(-1)
    total = int(np.prod(old))
    if (new == -1).sum() > 1:
        raise errors.InvalidArgumentError(
            None, "SparseReshape", "sparse.reshape: at most one -1 in shape %s." % new.tolist())
    if (new == -1).any():
        known = int(np.prod(new[new != -1]))
        new[new == -1] = total // known if known else 0
    if int(np.prod(new)) != total:
        raise errors.InvalidArgumentError(
            None, "SparseReshape", "sparse.reshape: cannot reshape %s (%d elements) to %s."
            % (old.tolist(), total, new.tolist()))
    linear = np.ravel_multi_index(_host(sp_input.indices).T, old) if total else \
        np.zeros(0, np.int64)
    idx = np.stack(np.unravel_index(linear, new), 1).astype(np.int64) if linear.size else \
        np.zeros((0, new.size), np.int64)
    return SparseTensor(idx, sp_input.values, new)


def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """A sparse ``[M, K]`` matrix times a dense ``[K, N]`` one (``tf.sparse.sparse_dense_matmul``).

    The product is a gather of ``b``'s rows and a segment sum, so gradients reach both the
    sparse values and ``b``.
    """
    _check(sp_a, "SparseTensorDenseMatMul")
    b = convert_to_tensor(b, dtype=sp_a.dtype)
    if adjoint_b:
        b = api.transpose(b)
    idx = _host(sp_a.indices)
    rows, cols = (idx[:, 1], idx[:, 0]) if adjoint_a else (idx[:, 0], idx[:, 1])
    m = int(_host(sp_a.dense_shape)[1 if adjoint_a else 0])
    k = int(_host(sp_a.dense_shape)[0 if adjoint_a else 1])
    if b.shape[0] != k:
        raise errors.InvalidArgumentError(
            None, "SparseTensorDenseMatMul", "sparse_dense_matmul: inner dimensions differ "
            "(%d and %d)." % (k, b.shape[0]))
    contrib = api.gather(b, cols) * api.reshape(sp_a.values, [-1, 1])
    return unsorted_segment_sum(contrib, rows, m)


def reduce_sum(sp_input, axis=None, keepdims=False, output_is_sparse=False, name=None):
    """Sums a SparseTensor's values over ``axis`` (``tf.sparse.reduce_sum``); dense result."""
    _check(sp_input, "SparseReduceSum")
    if axis is None:
        out = api.reduce_sum(sp_input.values)
        return api.reshape(out, [1] * len(sp_input.shape)) if keepdims else out
    return api.reduce_sum(to_dense(sp_input), axis=axis, keepdims=keepdims)


def retain(sp_input, to_retain):
    """Keeps the entries where the bool vector ``to_retain`` is true (``tf.sparse.retain``)."""
    _check(sp_input, "SparseRetain")
    keep = np.asarray(convert_to_tensor(to_retain, dtype=d.bool)._value)
    if keep.shape != (len(_host(sp_input.indices)),):
        raise errors.InvalidArgumentError(
            None, "SparseRetain", "retain: to_retain must have one bool per value (%d), got "
            "shape %s." % (len(_host(sp_input.indices)), list(keep.shape)))
    return SparseTensor(_host(sp_input.indices)[keep], api.boolean_mask(sp_input.values, keep),
                        sp_input.dense_shape)


def slice(sp_input, start, size, name=None):  # noqa: A001 - TF's name
    """The entries inside the box ``[start, start + size)``, re-indexed from ``start``."""
    _check(sp_input, "SparseSlice")
    start = np.asarray(start, np.int64)
    shape = _host(sp_input.dense_shape)
    stop = np.minimum(start + np.asarray(size, np.int64), shape)
    idx = _host(sp_input.indices)
    keep = np.all((idx >= start) & (idx < stop), axis=1) if idx.size else np.zeros(0, bool)
    return SparseTensor(idx[keep] - start, api.boolean_mask(sp_input.values, keep),
                        np.maximum(stop - start, 0))


def concat(axis, sp_inputs, expand_nonconcat_dims=False, name=None):
    """Concatenates SparseTensors along ``axis`` (``tf.sparse.concat``)."""
    for sp in sp_inputs:
        _check(sp, "SparseConcat")
    shapes = [_host(sp.dense_shape) for sp in sp_inputs]
    rank = len(shapes[0])
    axis %= rank
    out_shape = shapes[0].copy()
    if expand_nonconcat_dims:
        out_shape = np.max(shapes, axis=0)
    elif any(np.delete(s, axis).tolist() != np.delete(shapes[0], axis).tolist() for s in shapes):
        raise errors.InvalidArgumentError(
            None, "SparseConcat", "sparse.concat: shapes %s differ outside axis %d."
            % ([s.tolist() for s in shapes], axis))
    offset, parts = 0, []
    for sp, s in zip(sp_inputs, shapes):
        idx = _host(sp.indices).copy()
        idx[:, axis] += offset
        parts.append(idx)
        offset += int(s[axis])
    out_shape[axis] = offset
    return reorder(SparseTensor(np.concatenate(parts), api.concat([sp.values for sp in sp_inputs],
                                                                  0), out_shape))
