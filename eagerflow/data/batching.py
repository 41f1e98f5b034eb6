"""Batching: ``batch``, ``padded_batch``, ``ragged_batch`` and ``unbatch``.

Ragged components (RaggedTensorSpec) batch into RaggedTensors with one more ragged
dimension and unbatch into their rows, and sparse ones (SparseTensorSpec) into
SparseTensors of one more dimension, as in tf.data (see ``ragged_elements`` and
``sparse_elements``).
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.data import ragged_elements, rows as rows_lib, sparse_elements, structure
from eagerflow.data.arguments import INFINITE, UNKNOWN
from eagerflow.data.dataset import Dataset
from eagerflow.data.iterator_state import UnaryIterator
from eagerflow.ragged import RaggedTensor, RaggedTensorSpec
from eagerflow.sparse.sparse_tensor import SparseTensor, SparseTensorSpec
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.tensor_shape import TensorShape, TensorSpec, as_shape

__all__ = ["BatchDataset", "PaddedBatchDataset", "UnbatchDataset", "DenseToRaggedDataset"]

host_value = structure.host_value


def _batched_spec(spec, batch_dim):
    def one(s):
        if isinstance(s, (RaggedTensorSpec, SparseTensorSpec)):
            return s._batch(batch_dim)
        if s.shape.rank is None:
            return TensorSpec(TensorShape(None), s.dtype)
        return TensorSpec([batch_dim] + s.shape.as_list(), s.dtype)

    return structure.map_structure(one, spec)


def _batched_cardinality(n, batch_size, drop_remainder):
    if n in (INFINITE, UNKNOWN):
        return n
    return n // batch_size if drop_remainder else -(-n // batch_size)


class _BatchIterator(UnaryIterator):
    """Lists of ``batch_size`` consecutive elements (a shorter last one unless
    ``drop_remainder``), made into batches by the dataset's ``_make``.

    A batch is collected within one ``next``, so between calls the state is the input's.
    """

    __slots__ = ()
    _op = "Batch"

    def __next__(self):
        dataset = self._dataset
        batch = []
        for element in self._input:
            batch.append(element)
            if len(batch) == dataset._batch_size:
                return dataset._make(batch)
        if batch and not dataset._drop_remainder:
            return dataset._make(batch)
        raise StopIteration


def stack_elements(batch, leaf_specs=None):
    """Stacks a list of elements component by component into one batched element.

    A component that ``leaf_specs`` (the flattened element_spec) says is ragged, or that
    holds RaggedTensors, is stacked into a RaggedTensor with one more ragged dimension.
    """
    columns = zip(*[structure.flatten(e) for e in batch])
    out = []
    for index, column in enumerate(columns):
        if leaf_specs is not None and isinstance(leaf_specs[index], RaggedTensorSpec) or \
                any(isinstance(t, RaggedTensor) for t in column):
            spec = leaf_specs[index] if leaf_specs is not None else None
            out.append(ragged_elements.stack(column, getattr(spec, "row_splits_dtype", None)))
            continue
        if leaf_specs is not None and isinstance(leaf_specs[index], SparseTensorSpec) or \
                any(isinstance(t, SparseTensor) for t in column):
            out.append(sparse_elements.stack(column))
            continue
        arrays = [host_value(t) for t in column]
        try:
            out.append(structure.wrap_array(np.stack(arrays)))
        except ValueError:
            first = arrays[0].shape
            other = next(j for j, a in enumerate(arrays) if a.shape != first)
            raise errors.InvalidArgumentError(
                None, "batch", "Cannot batch tensors with different shapes in component %d. "
                "First element had shape %s and element %d had shape %s. Use padded_batch "
                "to pad them to a common shape, or map them to one shape first."
                % (index, list(first), other, list(arrays[other].shape))) from None
    return structure.packer(batch[0])(out)


class BatchDataset(Dataset):
    """``batch``: slices over in-memory sources, one numpy stack per batch otherwise."""

    def __init__(self, input_dataset, batch_size, drop_remainder):
        super().__init__((input_dataset,))
        self._batch_size = batch_size
        self._drop_remainder = drop_remainder

    def _compute_spec(self):
        return _batched_spec(self._inputs[0].element_spec,
                             self._batch_size if self._drop_remainder else None)

    def _cardinality(self):
        return _batched_cardinality(self._inputs[0]._cardinality(), self._batch_size,
                                    self._drop_remainder)

    def _elements(self):
        rows = self._inputs[0]._rows()
        if rows is not None:
            return rows_lib.iterate_batches(rows, self._batch_size, self._drop_remainder)
        return self._stacked()

    def _stacked(self):
        leaf_specs = structure.flatten(self._inputs[0].element_spec)
        if not any(isinstance(s, (RaggedTensorSpec, SparseTensorSpec)) for s in leaf_specs):
            leaf_specs = None
        self._leaf_specs = leaf_specs
        return _BatchIterator(self)

    def _make(self, batch):
        return stack_elements(batch, self._leaf_specs)


class DenseToRaggedDataset(Dataset):
    """The first half of ``ragged_batch``: dense components with an unknown dimension become
    RaggedTensors (ragged up to their last unknown dimension), so that ``batch`` makes
    ragged batches of them, as TF's ``dense_to_ragged_batch`` does."""

    def __init__(self, input_dataset, row_splits_dtype):
        super().__init__((input_dataset,))
        spec = input_dataset.element_spec
        leaves = structure.flatten(spec)
        self._ragged_ranks = [
            r.ragged_rank if isinstance(r, RaggedTensorSpec) and not isinstance(
                s, RaggedTensorSpec) else 0
            for s, r in ((s, ragged_elements.to_ragged_spec(s, row_splits_dtype))
                         for s in leaves)]
        self._spec = structure.pack(
            spec, [ragged_elements.to_ragged_spec(s, row_splits_dtype) for s in leaves])

    def _cardinality(self):
        return self._inputs[0]._cardinality()

    def _elements(self):
        return _DenseToRaggedIterator(self)


class _DenseToRaggedIterator(UnaryIterator):
    __slots__ = ()
    _op = "DenseToRagged"

    def __next__(self):
        element = next(self._input)
        pack = structure.packer(self._dataset._spec)
        return pack([ragged_elements.from_dense(t, r) if r else t
                     for t, r in zip(structure.flatten(element), self._dataset._ragged_ranks)])


def _shape_of(value, what):
    """A padded shape given as a TensorShape, list, tuple or int tensor (-1 is None)."""
    if isinstance(value, Tensor):
        value = value.numpy().tolist()
    if isinstance(value, (list, tuple)):
        value = [None if d is None or (not isinstance(d, TensorShape) and int(d) == -1)
                 else d for d in value]
    try:
        return as_shape(value)
    except (TypeError, ValueError) as exc:
        raise ValueError("Dataset.padded_batch: %s is not a valid shape: %r (%s)."
                         % (what, value, exc)) from None


def _padding_value(value, spec, what):
    if value is None:
        return np.zeros((), spec.dtype.np_dtype)
    if isinstance(value, Tensor):
        if value.dtype is not spec.dtype:
            raise TypeError("Dataset.padded_batch: the padding value for %s has dtype %s but "
                            "the component is %s; give a value of the component's dtype."
                            % (what, value.dtype.name, spec.dtype.name))
        array = np.asarray(value)
    else:
        array = np.asarray(convert_to_tensor(value, dtype=spec.dtype))
    if array.ndim != 0:
        raise ValueError("Dataset.padded_batch: the padding value for %s must be a scalar, "
                         "got shape %s." % (what, array.shape))
    return array


class PaddedBatchDataset(Dataset):
    """``padded_batch``: pads each component to a common shape, then stacks."""

    def __init__(self, input_dataset, batch_size, padded_shapes, padding_values,
                 drop_remainder):
        super().__init__((input_dataset,))
        self._batch_size = batch_size
        self._drop_remainder = drop_remainder
        spec = input_dataset.element_spec
        leaves = structure.flatten(spec)
        paths = [p or "the element" for p in structure.leaf_paths(spec)]
        for path, s in zip(paths, leaves):
            if isinstance(s, (RaggedTensorSpec, SparseTensorSpec)):
                raise TypeError(
                    "Dataset.padded_batch is only supported for datasets of tensor "
                    "elements, but component %s is %r. Use batch (or ragged_batch) for "
                    "ragged and sparse components, or map them to dense tensors first "
                    "(RaggedTensor.to_tensor(), tf.sparse.to_dense)." % (path, s))
        if padded_shapes is None:
            for path, s in zip(paths, leaves):
                if s.shape.rank is None:
                    raise ValueError("Dataset.padded_batch: component %s has an unknown rank, "
                                     "so `padded_shapes` must be given." % path)
            shapes = [s.shape for s in leaves]
        else:
            shapes = _leaves_like(spec, padded_shapes, "padded_shapes")
            shapes = [_shape_of(v, "padded_shapes for " + p) for v, p in zip(shapes, paths)]
            for path, shape, s in zip(paths, shapes, leaves):
                if not _fits(shape, s.shape):
                    raise ValueError(
                        "Dataset.padded_batch: the padded shape %s is not compatible with "
                        "the shape %s of component %s (a padded shape needs the same rank "
                        "and dimensions at least as large)." % (shape, s.shape, path))
        if padding_values is None or not structure.is_nested(padding_values) \
                and structure.is_nested(spec):
            values = [padding_values] * len(leaves)
        else:
            values = _leaves_like(spec, padding_values, "padding_values")
        self._pads = [_padding_value(v, s, p) for v, s, p in zip(values, leaves, paths)]
        self._shapes = shapes
        self._spec = structure.pack(spec, [
            TensorSpec([batch_size if drop_remainder else None] + shape.as_list(), s.dtype)
            for shape, s in zip(shapes, leaves)])

    def _cardinality(self):
        return _batched_cardinality(self._inputs[0]._cardinality(), self._batch_size,
                                    self._drop_remainder)

    def _elements(self):
        return _BatchIterator(self)

    def _make(self, batch):
        columns = zip(*[structure.flatten(e) for e in batch])
        out = [self._pad(i, [np.asarray(t) for t in column])
               for i, column in enumerate(columns)]
        return structure.pack(batch[0], out)

    def _pad(self, index, arrays):
        padded = self._shapes[index].as_list()
        for a in arrays:
            if a.ndim != len(padded):
                raise errors.InvalidArgumentError(
                    None, "padded_batch", "Dataset.padded_batch: component %d has rank %d but "
                    "its padded shape %s has rank %d." % (index, a.ndim, padded, len(padded)))
        target = [d if d is not None else max(a.shape[k] for a in arrays)
                  for k, d in enumerate(padded)]
        pad = self._pads[index]
        out = np.full([len(arrays)] + target, pad, dtype=pad.dtype)
        for j, a in enumerate(arrays):
            if any(n > t for n, t in zip(a.shape, target)):
                raise errors.InvalidArgumentError(
                    None, "padded_batch", "Dataset.padded_batch: attempted to pad to a smaller "
                    "size than the input element: component %d has shape %s, padded shape "
                    "is %s." % (index, list(a.shape), target))
            out[(j,) + tuple(slice(0, n) for n in a.shape)] = a
        return structure.wrap_array(out)


def _fits(padded, shape):
    if padded.rank is None or shape.rank is None:
        return True
    if padded.rank != shape.rank:
        return False
    return all(p is None or s is None or p >= s for p, s in zip(padded, shape))


def _leaves_like(spec, value, what):
    try:
        return structure.flatten_up_to(spec, value, "Dataset.padded_batch: `%s`" % what)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


class UnbatchDataset(Dataset):
    """``unbatch``: splits every element along its first dimension."""

    def __init__(self, input_dataset):
        super().__init__((input_dataset,))

    def _compute_spec(self):
        def one(s):
            if isinstance(s, RaggedTensorSpec) and s.ragged_rank or \
                    isinstance(s, SparseTensorSpec):
                return s._unbatch()
            if s.shape.rank is None:
                return TensorSpec(TensorShape(None), s.dtype)
            if s.shape.rank == 0:
                raise ValueError("Dataset.unbatch: the elements have a scalar component "
                                 "(%s), which has no batch dimension to split."
                                 % structure.describe(s))
            return TensorSpec(s.shape[1:], s.dtype)

        return structure.map_structure(one, self._inputs[0].element_spec)

    def _cardinality(self):
        n = self._inputs[0]._cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        dims = {s.shape[0] if s.shape.rank else None
                for s in structure.flatten(self._inputs[0].element_spec)}
        if len(dims) == 1 and None not in dims:
            return n * dims.pop()
        return UNKNOWN

    def _elements(self):
        return _UnbatchIterator(self)


class _UnbatchIterator(UnaryIterator):
    """Saves the element being split and how many of its rows were returned."""

    __slots__ = ("_element", "_rows", "_at")
    _op = "Unbatch"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._element, self._rows, self._at = None, None, 0

    def _split(self, element):
        flat = structure.flatten(element)
        arrays = [ragged_elements.rows(t) if isinstance(t, RaggedTensor) else
                  sparse_elements.rows(t) if isinstance(t, SparseTensor) else
                  _read_only(t) for t in flat]
        if any(getattr(a, "ndim", 1) == 0 for a in arrays):
            raise errors.InvalidArgumentError(
                None, "unbatch", "Dataset.unbatch: an element has a scalar component, "
                "which has no batch dimension to split.")
        sizes = {len(a) for a in arrays}
        if len(sizes) > 1:
            raise errors.InvalidArgumentError(
                None, "unbatch", "Dataset.unbatch: the components of an element have "
                "different batch sizes %s; they must all have the same first "
                "dimension." % sorted(sizes))
        return arrays

    def __next__(self):
        while self._rows is None or self._at >= len(self._rows[0]):
            self._element = next(self._input)
            self._rows, self._at = self._split(self._element), 0
        i = self._at
        self._at += 1
        wrap = structure.wrap_array
        return structure.packer(self._element)(
            [a[i] if type(a) is list else wrap(a[i, ...]) for a in self._rows])

    def _save(self, writer):
        writer.int("open", self._element is not None)
        if self._element is not None:
            writer.elements("element", [self._element], "unbatch")
            writer.int("at", self._at)

    def _restore(self, reader):
        if reader.int("open"):
            (self._element,) = reader.elements("element", self._dataset._inputs[0].element_spec)
            self._rows = self._split(self._element)
            self._at = reader.count("at", len(self._rows[0]))


def _read_only(tensor):
    array = np.asarray(tensor)
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array
