"""``RaggedTensorSpec``: the type of a RaggedTensor (shape, dtype, ragged rank).

Example:
    >>> import eagerflow as ef
    >>> ef.RaggedTensorSpec([None, None], ef.float32).ragged_rank
    1
"""

from __future__ import annotations

from eagerflow import dtypes as d
from eagerflow.ragged.ragged_tensor import RaggedTensor
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["RaggedTensorSpec"]


class RaggedTensorSpec:
    """The type of a RaggedTensor (``tf.RaggedTensorSpec``): shape, dtype, ragged rank.

    It describes ``@function`` arguments (in ``input_signature``) and dataset elements
    (``Dataset.element_spec``). As in TF, a spec of ragged rank 0 describes a value that is a
    dense Tensor: what ``from_tensor_slices`` of a RaggedTensor with ragged rank 1 yields.

    Args:
        shape: The static shape: rows, then ``None`` for each ragged dimension, then the
            inner dense dimensions.
        dtype: The dtype of the values.
        ragged_rank: The number of ragged dimensions (default: rank - 1).
        row_splits_dtype: int64 or int32 (recorded; row splits are held as int64).
        flat_values_spec: Unused (TF compatibility).

    Example:
        >>> import eagerflow as ef
        >>> ef.RaggedTensorSpec([None, None], ef.int32).ragged_rank
        1
        >>> ef.RaggedTensorSpec.from_value(ef.ragged.constant([[1], [2, 3]]))
        RaggedTensorSpec(TensorShape([2, None]), tf.int32, 1, tf.int64)
    """

    # A composite (see eagerflow.nest): its components are the specs of the flat values and
    # of each level's row splits, and it builds a RaggedTensor from tensors of those specs.
    _nest_composite = True

    def __init__(self, shape=None, dtype=d.float32, ragged_rank=None,
                 row_splits_dtype=d.int64, flat_values_spec=None):
        self.shape = TensorShape(shape)
        self.dtype = d.as_dtype(dtype)
        rank = self.shape.rank
        self.ragged_rank = (rank - 1 if rank is not None else 1) if ragged_rank is None \
            else int(ragged_rank)
        if self.ragged_rank < 0 or rank is not None and self.ragged_rank >= max(rank, 1):
            raise ValueError("RaggedTensorSpec: ragged_rank must be in [0, rank - 1] for a "
                             "shape of rank %s, got %d." % (rank, self.ragged_rank))
        self.row_splits_dtype = d.as_dtype(row_splits_dtype)
        if self.row_splits_dtype not in (d.int64, d.int32):
            raise ValueError("RaggedTensorSpec: row_splits_dtype must be int32 or int64, got "
                             "%s." % self.row_splits_dtype.name)

    @classmethod
    def from_value(cls, value):
        """The spec of a RaggedTensor (its static shape, dtype and ragged rank)."""
        if not isinstance(value, RaggedTensor):
            raise TypeError("RaggedTensorSpec.from_value expects a RaggedTensor, got %s."
                            % type(value).__name__)
        return cls(value.shape, value.dtype, value.ragged_rank)

    @property
    def value_type(self):
        return RaggedTensor if self.ragged_rank else Tensor

    def _composite_components(self):
        from eagerflow.tensor_shape import TensorSpec

        dims = self.shape.as_list() if self.shape.rank is not None else None
        flat = TensorSpec(None if dims is None else [None] + dims[self.ragged_rank + 1:],
                          self.dtype)
        if not self.ragged_rank:
            return (TensorSpec(self.shape, self.dtype),)
        outer = dims[0] if dims else None
        splits = [TensorSpec([None if outer is None else outer + 1], d.int64)]
        splits += [TensorSpec([None], d.int64)] * (self.ragged_rank - 1)
        return (flat,) + tuple(splits)

    def _from_components(self, components):
        flat, *splits = components
        result = flat
        for s in reversed(splits):
            result = RaggedTensor(result, s, _internal=True)
        return result

    def is_compatible_with(self, value):
        """True for a value (or spec) of this dtype, ragged rank and a compatible shape."""
        if isinstance(value, RaggedTensorSpec):
            return value.dtype is self.dtype and value.ragged_rank == self.ragged_rank \
                and self.shape.is_compatible_with(value.shape)
        if not self.ragged_rank:
            return isinstance(value, Tensor) and value.dtype is self.dtype and \
                self.shape.is_compatible_with(value.shape)
        return isinstance(value, RaggedTensor) and value.dtype is self.dtype and \
            value.ragged_rank == self.ragged_rank and self.shape.is_compatible_with(value.shape)

    def most_specific_compatible_type(self, other):
        """The spec that accepts values of both (unknown dims where they differ).

        Raises:
            TypeError: If the dtypes or ragged ranks differ.
        """
        if not isinstance(other, RaggedTensorSpec) or other.dtype is not self.dtype or \
                other.ragged_rank != self.ragged_rank:
            raise TypeError("No spec is compatible with both %r and %r." % (self, other))
        return RaggedTensorSpec(self.shape.most_specific_compatible_shape(other.shape),
                                self.dtype, self.ragged_rank, self.row_splits_dtype)

    def _batch(self, batch_size):
        """The spec of ``batch_size`` such values stacked (one more ragged dimension)."""
        dims = [None] if self.shape.rank is None else self.shape.as_list()
        return RaggedTensorSpec([batch_size] + dims, self.dtype, self.ragged_rank + 1,
                                self.row_splits_dtype)

    def _unbatch(self):
        """The spec of one row of such a value (one ragged dimension fewer)."""
        return RaggedTensorSpec(self.shape[1:], self.dtype, self.ragged_rank - 1,
                                self.row_splits_dtype)

    def __repr__(self):
        return "RaggedTensorSpec(TensorShape(%s), tf.%s, %d, tf.%s)" % (
            self.shape.as_list() if self.shape.rank is not None else None, self.dtype.name,
            self.ragged_rank, self.row_splits_dtype.name)

    def __eq__(self, other):
        return isinstance(other, RaggedTensorSpec) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))
