"""``SparseTensor`` and ``SparseTensorSpec``: COO tensors (indices, values, dense_shape).

A SparseTensor is three ordinary tensors: int64 ``indices`` of shape ``[N, rank]``, ``values``
of shape ``[N]`` and an int64 ``dense_shape`` of shape ``[rank]``, plus a static shape (the
dense shape as far as it is known before running: all of it eagerly, the signature's
dimensions in a traced function). Like TF's composite tensors it crosses ``@function``
boundaries as those three components: a function traced for one SparseTensor serves every
other with the same static shape and dtype, whatever its number of values. The operations
of ``tf.sparse`` live in :mod:`eagerflow.sparse.sparse_ops`.

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
from eagerflow.ops.static_value import constant_value
from eagerflow.tensor import convert_to_tensor
from eagerflow.tensor_shape import TensorShape, TensorSpec

__all__ = ["SparseTensor", "SparseTensorSpec"]


def _static_shape(dense_shape, rank=None):
    """The static shape a dense_shape tensor gives: its values when known, else its rank."""
    value = constant_value(dense_shape)
    if value is not None:
        return TensorShape([int(s) for s in np.asarray(value).reshape(-1)])
    if rank is None:
        shape = dense_shape.shape
        rank = shape[0] if shape.rank == 1 else None
    return TensorShape(None if rank is None else [None] * rank)


class SparseTensor:
    """A sparse tensor in coordinate form (``tf.sparse.SparseTensor``).

    Args:
        indices: ``[N, rank]`` int64 coordinates of the non-zero values.
        values: ``[N]`` values.
        dense_shape: The dense shape (``rank`` ints, or an int64 vector tensor).

    Raises:
        InvalidArgumentError: If the pieces do not fit together or an index is out of range.
    """

    _is_sparse = True
    # A composite for tracing (see eagerflow.nest): a @function takes it apart into its
    # indices, values and dense shape, gives each a placeholder and rebuilds it inside.
    _nest_composite = True

    @classmethod
    def _from_parts(cls, indices, values, dense_shape, shape=None):
        """A SparseTensor of three component tensors, unchecked (symbolic ones included).

        ``shape`` is the static shape known beyond what ``dense_shape`` itself says (a
        signature's, or the input's for ops that keep it).
        """
        out = cls.__new__(cls)
        out.indices, out.values, out.dense_shape = indices, values, dense_shape
        static = _static_shape(dense_shape)
        if shape is not None:
            try:
                static = static.merge_with(shape)
            except ValueError:  # the components' own (eager) shape is the truth
                pass
        out._shape = static
        return out

    def __init__(self, indices, values, dense_shape):
        self.indices = api.cast(convert_to_tensor(indices, dtype_hint=d.int64), d.int64)
        self.values = convert_to_tensor(values)
        self.dense_shape = api.cast(convert_to_tensor(dense_shape, dtype_hint=d.int64),
                                    d.int64)
        idx, shape = constant_value(self.indices), constant_value(self.dense_shape)
        if idx is not None and shape is not None and idx.size == 0 and \
                idx.shape != (0, shape.size):
            idx = np.zeros((0, shape.size), np.int64)  # [] for "no values"
            self.indices = convert_to_tensor(idx)
        self._check_ranks()
        if idx is not None and shape is not None and idx.size and (
                idx.min() < 0 or np.any(idx >= shape[None, :])):
            raise errors.InvalidArgumentError(
                None, "SparseTensor", "an index is out of bounds for dense_shape %s."
                % shape.tolist())
        self._shape = _static_shape(self.dense_shape)

    def _check_ranks(self):
        i, v, s = self.indices.shape, self.values.shape, self.dense_shape.shape
        ok = i.rank in (None, 2) and v.rank in (None, 1) and s.rank in (None, 1)
        if ok and i.rank == 2 and s.rank == 1:
            ok = i[1] is None or s[0] is None or i[1] == s[0]
        if ok and i.rank == 2 and v.rank == 1:
            ok = i[0] is None or v[0] is None or i[0] == v[0]
        if not ok:
            raise errors.InvalidArgumentError(
                None, "SparseTensor", "indices must be [N, rank], values [N] and dense_shape "
                "[rank]; got indices %s, values %s, dense_shape %s."
                % (i.as_list() if i.rank is not None else None,
                   v.as_list() if v.rank is not None else None,
                   s.as_list() if s.rank is not None else None))

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        """The static shape: dense_shape's values when known (eagerly), else the rank and
        whatever the signature fixed."""
        return self._shape

    @property
    def ndim(self):
        return self.shape.rank

    def get_shape(self):
        return self.shape

    @property
    def _type_spec(self):
        return SparseTensorSpec(self.shape, self.dtype)

    def _composite_components(self):
        return (self.indices, self.values, self.dense_shape)

    def _from_components(self, components):
        return SparseTensor._from_parts(*components, shape=self._shape)

    def with_values(self, new_values):
        """The same indices and shape over other values (``SparseTensor.with_values``).

        Example:
            >>> import eagerflow as ef
            >>> st = ef.sparse.SparseTensor([[0, 0]], [2.0], [1, 2])
            >>> st.with_values(st.values * 3).values.numpy().tolist()
            [6.0]
        """
        return SparseTensor._from_parts(self.indices, convert_to_tensor(new_values),
                                        self.dense_shape, self._shape)

    @classmethod
    def from_value(cls, value):
        if isinstance(value, SparseTensor):
            return value
        from eagerflow.sparse.sparse_ops import from_dense

        return from_dense(value)

    def __repr__(self):
        def text(t):
            value = constant_value(t)
            return value.tolist() if value is not None else repr(t)

        return "SparseTensor(indices=%s, values=%s, dense_shape=%s)" % (
            text(self.indices), text(self.values), text(self.dense_shape))


class SparseTensorSpec:
    """The type of a SparseTensor: shape and dtype (``tf.SparseTensorSpec``).

    In an ``input_signature`` it stands for a SparseTensor argument with any number of
    values: the traced function sees indices ``[None, rank]``, values ``[None]`` and a
    ``[rank]`` dense shape, and a static shape with this spec's known dimensions.

    Example:
        >>> import eagerflow as ef
        >>> ef.sparse.SparseTensorSpec([None, 3], ef.float32).shape.as_list()
        [None, 3]
    """

    _nest_composite = True  # its components are the specs of the three tensors

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

    def _composite_components(self):
        rank = self.shape.rank
        return (TensorSpec([None, rank], d.int64), TensorSpec([None], self.dtype),
                TensorSpec([rank], d.int64))

    def _from_components(self, components):
        return SparseTensor._from_parts(*components, shape=self.shape)

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
