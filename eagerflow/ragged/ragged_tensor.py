"""``RaggedTensor``: rows of different lengths, as a flat values tensor plus row partitions.

A RaggedTensor of ragged rank ``k`` is ``k`` int64 ``row_splits`` vectors over one dense
``flat_values`` tensor: row ``i`` of a level is ``values[splits[i]:splits[i + 1]]``. It is a
composite of ordinary tensors, so every operation on it is ordinary ops on those tensors:
it runs eagerly, traces into ``@function`` graphs, and gradients flow to ``flat_values``.
Its type, ``RaggedTensorSpec``, lives here too (each builds the other). The ``tf.ragged``
functions are in :mod:`eagerflow.ragged.ragged_array_ops`, and the public ops' handling of
RaggedTensor arguments in :mod:`eagerflow.ragged.ragged_dispatch`.

Example:
    >>> import eagerflow as ef
    >>> rt = ef.ragged.constant([[1, 2], [], [3]])
    >>> rt.row_lengths().numpy().tolist(), rt.to_tensor().numpy().tolist()
    ([2, 0, 1], [[1, 2], [0, 0], [3, 0]])
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.ragged.ragged_ops import ragged_to_dense
from eagerflow import _api as api
from eagerflow.ops import operators as _operators
from eagerflow.ops.math.cast import cast
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["RaggedTensor", "RaggedTensorSpec"]


def _splits(value, what):
    t = convert_to_tensor(value)
    if t.dtype not in (d.int64, d.int32):
        raise errors.InvalidArgumentError(
            None, "RaggedTensor", "%s must be int32 or int64, got %s." % (what, t.dtype.name))
    if t.ndim != 1:
        raise errors.InvalidArgumentError(
            None, "RaggedTensor", "%s must be a vector, got shape %s." % (what, t.shape))
    return cast(t, d.int64)


class RaggedTensor:
    """A tensor with one or more ragged dimensions (``tf.RaggedTensor``).

    Build one with :func:`constant` or the ``from_*`` factories; never call the
    constructor directly.
    """

    _is_ragged = True
    # A composite for tracing (see eagerflow.nest): a @function takes a RaggedTensor apart
    # into its flat values and row splits, gives each a placeholder and rebuilds it inside.
    _nest_composite = True

    def _composite_components(self):
        return (self.flat_values,) + self.nested_row_splits

    @property
    def _type_spec(self):
        # What a @function keys a RaggedTensor argument on, as TF: the number of rows and
        # the inner dimensions, not the number of values.
        return RaggedTensorSpec.from_value(self)

    def _from_components(self, components):
        flat, *splits = components
        uniform, v = [], self
        while isinstance(v, RaggedTensor):
            uniform.append(v._uniform)
            v = v._values
        result = flat
        for s, u in zip(reversed(splits), reversed(uniform)):
            result = RaggedTensor(result, s, _internal=True, _uniform=u)
        return result

    def __init__(self, values, row_splits, _internal=False, _uniform=None):
        if not _internal:
            raise errors.InvalidArgumentError(
                None, "RaggedTensor", "Use RaggedTensor.from_row_splits (or ragged.constant) "
                "to build a RaggedTensor.")
        self._values = values
        self._row_splits = row_splits
        # The static length of every row, when this partition is known to be uniform (one
        # made by broadcasting): the shape then says it, as TF's uniform_row_length does.
        self._uniform = _uniform

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        """Rows ``values[row_splits[i]:row_splits[i + 1]]``.

        Example:
            >>> import eagerflow as ef
            >>> ef.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 3]).to_list()
            [[1, 2], [3]]
        """
        values = values if isinstance(values, RaggedTensor) else convert_to_tensor(values)
        splits = _splits(row_splits, "row_splits")
        if validate and splits.__class__ is Tensor:  # eager: values to check (not traced)
            s = np.asarray(splits._value)
            nvals = _nrows_of(values)
            if s.size == 0 or s[0] != 0 or np.any(np.diff(s) < 0) or (
                    nvals is not None and s[-1] != nvals):
                raise errors.InvalidArgumentError(
                    None, "RaggedTensor", "row_splits must start at 0, never decrease, and end "
                    "at the number of values (%s); got %s." % (nvals, s.tolist()))
        return cls(values, splits, _internal=True)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        """Rows of the given lengths, in order.

        Example:
            >>> import eagerflow as ef
            >>> ef.RaggedTensor.from_row_lengths([1, 2, 3], [1, 0, 2]).to_list()
            [[1], [], [2, 3]]
        """
        lengths = _splits(row_lengths, "row_lengths")
        splits = api.concat([convert_to_tensor(np.zeros(1, np.int64)),
                                   api.cumsum(lengths)], 0)
        return cls.from_row_splits(values, splits, validate=validate)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate=True):
        """Value ``i`` goes in row ``value_rowids[i]`` (ids sorted ascending).

        Example:
            >>> import eagerflow as ef
            >>> ef.RaggedTensor.from_value_rowids([1, 2, 3], [0, 0, 2]).to_list()
            [[1, 2], [], [3]]
        """
        ids = np.asarray(_splits(value_rowids, "value_rowids")._value)
        if ids.size and np.any(np.diff(ids) < 0):
            raise errors.InvalidArgumentError(
                None, "RaggedTensor", "value_rowids must be sorted ascending, got %s."
                % ids.tolist())
        n = int(nrows) if nrows is not None else (int(ids[-1]) + 1 if ids.size else 0)
        lengths = np.bincount(ids, minlength=n)[:n] if ids.size else np.zeros(n, np.int64)
        return cls.from_row_lengths(values, lengths.astype(np.int64), validate=validate)

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None, validate=True):
        """Several levels of row splits, outermost first."""
        result = flat_values
        for splits in reversed(list(nested_row_splits)):
            result = cls.from_row_splits(result, splits, validate=validate)
        return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None,
                                validate=True):
        """Several levels of row lengths, outermost first."""
        result = flat_values
        for lengths in reversed(list(nested_row_lengths)):
            result = cls.from_row_lengths(result, lengths, validate=validate)
        return result

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1, name=None):
        """Rows of a dense tensor, cut at ``lengths`` or where ``padding`` starts.

        Example:
            >>> import eagerflow as ef
            >>> ef.RaggedTensor.from_tensor([[1, 0], [2, 3]], padding=0).to_list()
            [[1], [2, 3]]
        """
        t = convert_to_tensor(tensor)
        if t.ndim < 2:
            raise errors.InvalidArgumentError(
                None, "RaggedTensor", "from_tensor needs rank >= 2, got %d." % t.ndim)
        arr = np.asarray(t._value)
        if lengths is not None:
            lens = np.asarray(convert_to_tensor(lengths)._value).astype(np.int64)
        elif padding is not None:
            pad = np.asarray(convert_to_tensor(padding, dtype=t.dtype)._value)
            is_pad = arr == pad
            if is_pad.ndim > 2:
                is_pad = is_pad.reshape(is_pad.shape[:2] + (-1,)).all(-1)
            keep = ~is_pad[:, ::-1]
            lens = np.where(keep.any(1), arr.shape[1] - np.argmax(keep, 1), 0).astype(np.int64)
        else:
            lens = np.full(arr.shape[0], arr.shape[1], np.int64)
        mask = np.arange(arr.shape[1])[None, :] < lens[:, None]
        return cls.from_row_lengths(api.boolean_mask(t, mask), lens)

    # -- structure ------------------------------------------------------------------------
    @property
    def values(self):
        """The values of the outermost ragged level (a Tensor or RaggedTensor)."""
        return self._values

    @property
    def row_splits(self):
        """The outermost level's int64 row splits."""
        return self._row_splits

    @property
    def flat_values(self):
        """The innermost dense values tensor."""
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v._values
        return v

    @property
    def nested_row_splits(self):
        """The row splits of every ragged level, outermost first."""
        out, v = [self._row_splits], self._values
        while isinstance(v, RaggedTensor):
            out.append(v._row_splits)
            v = v._values
        return tuple(out)

    @property
    def ragged_rank(self):
        """The number of ragged (partitioned) dimensions."""
        return len(self.nested_row_splits)

    @property
    def dtype(self):
        return self.flat_values.dtype

    @property
    def shape(self):
        """The static shape: rows, then None for each ragged dim, then the values' inner dims."""
        n = self._row_splits.shape[0]
        inner = self._values.shape
        return TensorShape([None if n is None else n - 1, self._uniform] + list(inner)[1:])

    @property
    def uniform_row_length(self):
        """The length of every row when this partition is uniform and known to be, else None."""
        if self._uniform is None:
            return None
        return convert_to_tensor(np.asarray(self._uniform, self._row_splits.dtype.np_dtype))

    @property
    def ndim(self):
        return len(self.shape)

    def nrows(self, out_type=d.int64, name=None):
        """The number of rows."""
        return cast(api.shape(self._row_splits)[0] - 1, out_type)

    def row_lengths(self, axis=1, name=None):
        """The length of each row (of the dimension ``axis``)."""
        if axis == 1:
            return self._row_splits[1:] - self._row_splits[:-1]
        if axis > 1 and isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.row_lengths(axis - 1))
        raise errors.InvalidArgumentError(
            None, "RaggedTensor", "row_lengths: axis %r is not a ragged dimension." % axis)

    def nested_row_lengths(self, name=None):
        """The row lengths of every ragged level, outermost first."""
        return tuple(s[1:] - s[:-1] for s in self.nested_row_splits)

    def value_rowids(self, name=None):
        """The row of each value of the outermost level.

        Example:
            >>> import eagerflow as ef
            >>> ef.ragged.constant([[1, 2], [], [3]]).value_rowids().numpy().tolist()
            [0, 0, 2]
        """
        # Value j lies in the row whose end is the first split above j: a search over the
        # splits, which traces (a symbolic tensor has no values to repeat).
        splits = self._row_splits
        return api.searchsorted(splits[1:], api.range(splits[-1], dtype=d.int64),
                                side="right", out_type=d.int64)

    def with_values(self, new_values):
        """The same outer partition over other values."""
        return RaggedTensor(new_values, self._row_splits, _internal=True, _uniform=self._uniform)

    def with_flat_values(self, new_values):
        """The same partitions over other flat values (same outer size)."""
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(convert_to_tensor(new_values))

    def merge_dims(self, outer_axis, inner_axis):
        """Merges dimensions ``outer_axis..inner_axis`` into one.

        Example:
            >>> import eagerflow as ef
            >>> ef.ragged.constant([[[1], [2, 3]], [[4]]]).merge_dims(1, 2).to_list()
            [[1, 2, 3], [4]]
        """
        rank = self.ndim
        outer_axis %= rank
        inner_axis %= rank
        if outer_axis >= inner_axis:
            return self
        if outer_axis == 0:
            flat = self
            for _ in range(inner_axis):
                flat = flat.values if isinstance(flat, RaggedTensor) else \
                    api.reshape(flat, [-1] + flat.shape.as_list()[2:])
            return flat
        if outer_axis > 1:
            return self.with_values(self._values.merge_dims(outer_axis - 1, inner_axis - 1))
        # Rows of this level now span the merged rows below: compose the splits down.
        splits = self._row_splits
        v = self._values
        for _ in range(inner_axis - 1):
            if not isinstance(v, RaggedTensor):
                raise errors.UnimplementedError(
                    None, "RaggedTensor", "merge_dims of uniform inner dimensions of a ragged "
                    "tensor is not supported; convert with to_tensor first.")
            splits = api.gather(v.row_splits, splits)
            v = v.values
        return RaggedTensor(self._values.merge_dims(0, inner_axis - 1), splits, _internal=True)

    def bounding_shape(self, axis=None, out_type=d.int64, name=None):
        """The shape of the smallest dense tensor that holds this one."""
        dims = [int(self._row_splits.shape[0]) - 1]
        v = self
        while isinstance(v, RaggedTensor):
            lengths = np.asarray(v.row_lengths()._value)
            dims.append(int(lengths.max()) if lengths.size else 0)
            v = v._values
        dims.extend(v.shape.as_list()[1:])
        out = convert_to_tensor(np.asarray(dims, dtype=out_type.as_numpy_dtype))
        return out if axis is None else out[axis]

    # -- conversion -----------------------------------------------------------------------
    def to_tensor(self, default_value=None, name=None, shape=None):
        """A dense tensor, rows padded with ``default_value`` (zero or b"").

        Each ragged level is densified by one ``RaggedToDense`` op, innermost first, so
        this traces and gradients reach ``flat_values``. ``shape`` fixes dimensions
        (truncating or padding rows), None entries keep the longest row.

        Example:
            >>> import eagerflow as ef
            >>> ef.ragged.constant([[1, 2, 3], [4]]).to_tensor(shape=[None, 2]).numpy().tolist()
            [[1, 2], [4, 0]]
        """
        widths = [-1] * (self.ragged_rank + 1)
        if shape is not None:
            want = TensorShape(shape).as_list()
            widths = [-1 if w is None else int(w) for w in want[:self.ragged_rank + 1]] + \
                [-1] * max(0, self.ragged_rank + 1 - len(want))
        return self._densify(default_value, widths[1:])

    def _densify(self, default_value, widths):
        values = self._values._densify(default_value, widths[1:]) \
            if isinstance(self._values, RaggedTensor) else self._values
        return ragged_to_dense(values, self._row_splits, default_value, widths[0])

    @classmethod
    def from_sparse(cls, st_input, name=None, row_splits_dtype=d.int64):
        """The RaggedTensor of a rank-2 SparseTensor whose rows fill their leftmost columns
        (``tf.RaggedTensor.from_sparse``): what a batch of ``VarLenFeature`` parses to.

        Raises:
            InvalidArgumentError: If the SparseTensor is not rank 2, not in row-major order,
                or a row has a gap (it is not "ragged-right").

        Example:
            >>> import eagerflow as ef
            >>> st = ef.SparseTensor([[0, 0], [0, 1], [2, 0]], [1, 2, 3], [3, 5])
            >>> ef.RaggedTensor.from_sparse(st).to_list()
            [[1, 2], [], [3]]
        """
        idx = np.asarray(st_input.indices._value)
        shape = np.asarray(st_input.dense_shape._value)
        if shape.size != 2:
            raise errors.InvalidArgumentError(
                None, "RaggedTensorFromSparse", "from_sparse needs a rank-2 SparseTensor, got "
                "rank %d." % shape.size)
        rows = idx[:, 0] if idx.size else np.zeros(0, np.int64)
        lengths = np.bincount(rows, minlength=int(shape[0]))[:int(shape[0])].astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if lengths.size else lengths
        expect_cols = np.arange(len(rows)) - np.repeat(starts, lengths)
        if idx.size and (np.any(np.diff(rows) < 0) or not np.array_equal(idx[:, 1],
                                                                          expect_cols)):
            raise errors.InvalidArgumentError(
                None, "RaggedTensorFromSparse", "from_sparse needs indices in row-major order "
                "with each row's values in its leftmost columns (ragged-right); reorder with "
                "tf.sparse.reorder, or densify with tf.sparse.to_dense.")
        return cls.from_row_lengths(st_input.values, lengths)

    def to_sparse(self, name=None):
        """The SparseTensor of this RaggedTensor (``tf.RaggedTensor.to_sparse``): each value at
        its row and position, the dense shape the bounding shape.

        Example:
            >>> import eagerflow as ef
            >>> st = ef.ragged.constant([[1, 2], [], [3]]).to_sparse()
            >>> st.indices.numpy().tolist(), st.dense_shape.numpy().tolist()
            ([[0, 0], [0, 1], [2, 0]], [3, 2])
        """
        from eagerflow.sparse.sparse_tensor import SparseTensor

        columns = []
        # The index of every flat value at each ragged level, outermost first.
        splits = [np.asarray(s._value) for s in self.nested_row_splits]
        n = int(splits[-1][-1])
        position = np.arange(n, dtype=np.int64)
        for s in reversed(splits):
            rows = np.searchsorted(s[1:], position, side="right").astype(np.int64)
            columns.insert(0, position - s[rows])
            position = rows
        columns.insert(0, position)
        flat = self.flat_values
        inner = flat.shape.as_list()[1:]
        indices = np.stack(columns, 1)
        if inner:
            grid = np.indices(inner).reshape(len(inner), -1).T
            indices = np.concatenate([np.repeat(indices, len(grid), 0),
                                      np.tile(grid, (len(indices), 1))], 1)
            flat = api.reshape(flat, [-1])
        shape = np.asarray(self.bounding_shape()._value, np.int64)
        return SparseTensor(indices, flat, shape)

    def to_list(self):
        """Nested Python lists of the values."""
        flat = self.flat_values.numpy()
        rows = list(flat) if np.ndim(flat) else [flat]
        rows = [r.tolist() if isinstance(r, np.ndarray) else
                (r.item() if isinstance(r, np.generic) else r) for r in rows]
        for splits in reversed(self.nested_row_splits):
            s = np.asarray(splits._value).tolist()
            rows = [rows[s[i]:s[i + 1]] for i in range(len(s) - 1)]
        return rows

    def numpy(self):
        """An object array of per-row numpy arrays (TF's ragged ``numpy()``)."""
        values = self._values.numpy() if isinstance(self._values, RaggedTensor) else \
            self._values.numpy()
        s = np.asarray(self._row_splits._value)
        out = np.empty(len(s) - 1, dtype=object)
        for i in range(len(s) - 1):
            out[i] = values[s[i]:s[i + 1]]
        return out

    # -- indexing -------------------------------------------------------------------------
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        if not key:
            return self
        first, rest = key[0], key[1:]
        if first is Ellipsis:
            raise errors.UnimplementedError(
                None, "RaggedTensor", "Ellipsis indexing of a RaggedTensor is not supported.")
        s = np.asarray(self._row_splits._value)
        nrows = len(s) - 1
        if isinstance(first, slice):
            rows = range(nrows)[first]
            lengths = s[1:] - s[:-1]
            picked = np.asarray(list(rows), np.int64)
            value_idx = np.concatenate([np.arange(s[r], s[r + 1]) for r in picked]) \
                if picked.size else np.zeros(0, np.int64)
            values = gather_rows(self._values, value_idx)
            outer = RaggedTensor.from_row_lengths(values, lengths[picked].astype(np.int64))
            if not rest:
                return outer
            inner = [outer[i][rest] for i in range(len(picked))]
            return _stack_rows(inner)
        i = int(first)
        if not -nrows <= i < nrows:
            raise errors.InvalidArgumentError(
                None, "RaggedTensor", "index %d is out of range for %d rows." % (i, nrows))
        i %= nrows
        row = _slice_rows(self._values, int(s[i]), int(s[i + 1]))
        return row[rest] if rest else row

    def __len__(self):
        return int(self._row_splits.shape[0]) - 1

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return "<tf.RaggedTensor %s>" % (self.to_list(),)

    __str__ = __repr__

    # -- element-wise arithmetic on flat values ---------------------------------------------
    # Tensor's own operators: each is a call of the public op, which dispatches a
    # RaggedTensor argument to _elementwise, so ``rt + x`` and ``ef.add(rt, x)`` are one path
    # (partitions checked, dense operands broadcast by TF's ragged rules).
    __add__, __radd__ = _operators.__add__, _operators.__radd__
    __sub__, __rsub__ = _operators.__sub__, _operators.__rsub__
    __mul__, __rmul__ = _operators.__mul__, _operators.__rmul__
    __truediv__, __rtruediv__ = _operators.__truediv__, _operators.__rtruediv__
    __floordiv__, __rfloordiv__ = _operators.__floordiv__, _operators.__rfloordiv__
    __mod__, __rmod__ = _operators.__mod__, _operators.__rmod__
    __pow__, __rpow__ = _operators.__pow__, _operators.__rpow__
    __and__, __rand__ = _operators.__and__, _operators.__rand__
    __or__, __ror__ = _operators.__or__, _operators.__ror__
    __xor__, __rxor__ = _operators.__xor__, _operators.__rxor__
    __lt__, __le__ = _operators.__lt__, _operators.__le__
    __gt__, __ge__ = _operators.__gt__, _operators.__ge__
    __neg__, __abs__, __invert__ = _operators.__neg__, _operators.__abs__, _operators.__invert__

    def __eq__(self, o):
        return api.equal(self, o)

    def __ne__(self, o):
        return api.not_equal(self, o)

    __hash__ = None


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
        dims = self.shape.as_list() if self.shape.rank is not None else []
        result = flat
        for level in reversed(range(len(splits))):
            uniform = dims[level + 1] if level + 1 < len(dims) else None
            result = RaggedTensor(result, splits[level], _internal=True, _uniform=uniform)
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


def same_partitions(a, b):
    """True when two RaggedTensors have equal row splits at every level (element-wise ops
    on both need it)."""
    sa, sb = a.nested_row_splits, b.nested_row_splits
    if len(sa) != len(sb):
        return False
    for x, y in zip(sa, sb):
        if x is y:
            continue  # one partition shared (with_flat_values results): no values to read
        if not (hasattr(x, "_value") and hasattr(y, "_value")):
            raise errors.UnimplementedError(
                None, "RaggedTensor", "while tracing, element-wise ops on two RaggedTensors "
                "need the same row_splits tensors (build one from the other with "
                "with_flat_values); their values cannot be compared in a graph.")
        if not np.array_equal(np.asarray(x._value), np.asarray(y._value)):
            return False
    return True


def _nrows_of(values):
    if isinstance(values, RaggedTensor):
        return len(values)
    shape = values.shape.as_list()
    return shape[0] if shape else None


def gather_rows(values, idx):
    """Rows ``idx`` (a numpy index vector) of a Tensor or RaggedTensor."""
    if isinstance(values, RaggedTensor):
        s = np.asarray(values.row_splits._value)
        inner = np.concatenate([np.arange(s[r], s[r + 1]) for r in idx]) if len(idx) else \
            np.zeros(0, np.int64)
        return RaggedTensor.from_row_lengths(gather_rows(values.values, inner),
                                             (s[1:] - s[:-1])[idx].astype(np.int64))
    return api.gather(values, convert_to_tensor(np.asarray(idx, np.int64)))


def _slice_rows(values, start, stop):
    return gather_rows(values, np.arange(start, stop, dtype=np.int64))


def _stack_rows(rows):
    if rows and all(isinstance(r, Tensor) and r.ndim == 0 for r in rows):
        return api.stack(rows)
    return stack_rows(rows)


# The row axis (axis 0) of stack and concat: indexing builds its results with them, and
# ragged_array_ops' public stack and concat are these plus argument checks and other axes.
def stack_rows(values):
    """Tensors or RaggedTensors (each one row) stacked into a RaggedTensor along axis 0."""
    if all(isinstance(v, RaggedTensor) for v in values):
        return RaggedTensor.from_row_lengths(concat_rows(values),
                                             np.asarray([len(v) for v in values], np.int64))
    lengths = np.asarray([int(v.shape[0]) if v.ndim else 1 for v in values], np.int64)
    flat = api.concat([v if v.ndim else api.reshape(v, [1]) for v in values], 0)
    return RaggedTensor.from_row_lengths(flat, lengths)


def concat_rows(values):
    """RaggedTensors concatenated along axis 0 (their rows one after another)."""
    flat = concat_values([v.values for v in values])
    lengths = api.concat([v.row_lengths() for v in values], 0)
    return RaggedTensor.from_row_lengths(flat, lengths)


def concat_values(parts):
    """Tensors, or RaggedTensors (dense parts converted), concatenated along axis 0."""
    if any(isinstance(p, RaggedTensor) for p in parts):
        return concat_rows([p if isinstance(p, RaggedTensor) else RaggedTensor.from_tensor(p)
                            for p in parts])
    return api.concat(list(parts), 0)
