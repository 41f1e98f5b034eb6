"""Source datasets: slices of arrays, single elements, generators, ranges, zip, concatenate."""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.data import arguments, ragged_elements, rows as rows_lib, sparse_elements
from eagerflow.data import iterator_state, structure
from eagerflow.data.arguments import INFINITE, UNKNOWN
from eagerflow.data.dataset import Dataset
from eagerflow.data.iterator_state import StatefulIterator
from eagerflow.ragged import RaggedTensor, RaggedTensorSpec
from eagerflow.ragged import constant as ragged_constant
from eagerflow.sparse.sparse_tensor import SparseTensorSpec
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.tensor_shape import TensorShape, TensorSpec, as_shape

__all__ = ["TensorSliceDataset", "TensorDataset", "GeneratorDataset", "RangeDataset",
           "CounterDataset", "ZipDataset", "ConcatenateDataset", "ListDataset"]


def _refuse_dataset(value, method):
    if any(isinstance(leaf, Dataset) for leaf in structure.flatten(value)):
        raise TypeError("Dataset.%s takes tensors or arrays, not a Dataset; to combine "
                        "datasets use Dataset.zip or concatenate." % method)


def _composite(value):
    """The helper module for a RaggedTensor or SparseTensor component."""
    return ragged_elements if ragged_elements.is_ragged(value) else sparse_elements


def _spec_of_composite(value):
    return RaggedTensorSpec.from_value(value) if ragged_elements.is_ragged(value) else \
        SparseTensorSpec.from_value(value)


class TensorSliceDataset(Dataset):
    """``from_tensor_slices``: one element per row of every component (read-only copies)."""

    def __init__(self, tensors):
        super().__init__()
        _refuse_dataset(tensors, "from_tensor_slices")
        leaves = structure.flatten(tensors)
        if not leaves:
            raise errors.InvalidArgumentError(
                None, "from_tensor_slices", "Dataset.from_tensor_slices needs at least one "
                "component, got an empty structure %r." % (tensors,))
        ragged = [ragged_elements.is_ragged(leaf) or sparse_elements.is_sparse(leaf)
                  for leaf in leaves]
        arrays = [leaf if r else structure.host_array(leaf) for leaf, r in zip(leaves, ragged)]
        paths = structure.leaf_paths(tensors)
        for path, array in zip(paths, arrays):
            if array.ndim == 0:
                raise errors.InvalidArgumentError(
                    None, "from_tensor_slices", "Dataset.from_tensor_slices: component %s "
                    "is a scalar and has no first dimension to slice; use "
                    "Dataset.from_tensors for a single element." % (path or "tensors"))
        sizes = [_composite(a).nrows(a) if r else a.shape[0] for a, r in zip(arrays, ragged)]
        if len(set(sizes)) > 1:
            listing = ", ".join("%s has %d" % (p or "tensors", n) for p, n in zip(paths, sizes))
            raise errors.InvalidArgumentError(
                None, "from_tensor_slices", "Dataset.from_tensor_slices: all components "
                "must have the same size in their first dimension, but %s. Slice or pad "
                "them to a common length." % listing)
        self._arrays = arrays
        self._ragged = any(ragged)
        self._composite = ragged
        self._size = sizes[0]
        self._spec = structure.pack(tensors, [
            _spec_of_composite(a)._unbatch() if r else
            structure.spec_of_array(a, batched=True) for a, r in zip(arrays, ragged)])

    def _cardinality(self):
        return self._size

    def _elements(self):
        if not self._ragged:
            return super()._elements()
        return self._ragged_elements()

    def _ragged_elements(self):
        # Rows of a RaggedTensor or SparseTensor are not addressable as array rows, so
        # these slices go element by element (no Rows fast path).
        columns = [_composite(a).rows(a) if r else None
                   for a, r in zip(self._arrays, self._composite)]
        pack = structure.packer(self._spec)
        wrap = structure.wrap_array
        arrays = self._arrays
        return IndexIterator(self._size, lambda i: pack(
            [wrap(a[i, ...]) if c is None else c[i] for a, c in zip(arrays, columns)]))

    def _rows(self):
        if self._ragged:
            return None
        arrays = self._arrays
        return rows_lib.Rows(lambda index: tuple(a[index] for a in arrays), self._size,
                             self._spec)


class TensorDataset(Dataset):
    """``from_tensors``: a single element."""

    def __init__(self, tensors):
        super().__init__()
        _refuse_dataset(tensors, "from_tensors")
        self._element = structure.to_tensors(tensors)
        self._spec = structure.spec_of(self._element)

    def _cardinality(self):
        return 1

    def _elements(self):
        element = self._element
        return IndexIterator(1, lambda i: element)


class ListDataset(Dataset):
    """``experimental.from_list``: the given elements, which may differ in shape."""

    def __init__(self, elements):
        super().__init__()
        if isinstance(elements, Dataset) or not isinstance(elements, (list, tuple)):
            raise TypeError("from_list: `elements` must be a list of elements, got %s."
                            % type(elements).__name__)
        if not elements:
            raise ValueError("from_list: `elements` must not be empty (the element type "
                             "comes from the elements).")
        self._elements_list = [structure.to_tensors(e) for e in elements]
        spec = structure.spec_of(self._elements_list[0])
        for element in self._elements_list[1:]:
            spec = structure.relax_specs(spec, structure.spec_of(element), "from_list")
        self._spec = spec

    def _cardinality(self):
        return len(self._elements_list)

    def _elements(self):
        return IndexIterator(len(self._elements_list), self._elements_list.__getitem__)


def _signature_from_types(output_types, output_shapes):
    types = output_types
    if isinstance(types, list):
        types = tuple(types)
    type_leaves = structure.flatten(types)
    if output_shapes is None:
        shape_leaves = [None] * len(type_leaves)
    else:
        shapes = output_shapes
        if structure.is_nested(types) and isinstance(shapes, list) \
                and not structure.is_nested(shapes) and len(shapes) == len(types) \
                and all(isinstance(s, (list, tuple, TensorShape)) or s is None
                        for s in shapes):
            shapes = tuple(shapes)
        shape_leaves = structure.flatten_up_to(types, shapes, "output_shapes")
    specs = [TensorSpec(TensorShape(None) if s is None else as_shape(s),
                        dtypes_lib.as_dtype(t)) for t, s in zip(type_leaves, shape_leaves)]
    return structure.pack(types, specs)


def _short(value):
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."


def _yielded_array(value, spec, path):
    """Converts one yielded leaf to ``spec``'s dtype and checks its shape."""
    target = spec.dtype.np_dtype
    where = "component %s" % path if path else "the element"
    if isinstance(value, Tensor):
        value = np.asarray(value)
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype != target and not np.can_cast(array.dtype, target, "same_kind"):
            raise TypeError(
                "Dataset.from_generator: `generator` yielded %s of dtype %s where the "
                "output_signature expects %s; convert it in the generator (e.g. "
                "array.astype(...))." % (where, array.dtype, spec.dtype.name))
        array = np.array(array, dtype=target, copy=True)
    else:
        try:
            array = np.array(np.asarray(convert_to_tensor(value, dtype=spec.dtype)),
                             copy=True)
        except (TypeError, ValueError, errors.OpError) as exc:
            raise TypeError(
                "Dataset.from_generator: `generator` yielded %s = %s, which cannot be "
                "converted to the expected dtype %s: %s"
                % (where, _short(value), spec.dtype.name, exc)) from None
    if not spec.shape.is_compatible_with(array.shape):
        raise errors.InvalidArgumentError(
            None, "from_generator", "Dataset.from_generator: `generator` yielded %s of "
            "shape %s where an element of shape %s was expected (output_signature)."
            % (where, tuple(array.shape), spec.shape))
    array.flags.writeable = False
    return array


def _yielded_ragged(value, spec, path):
    """A yielded RaggedTensor (or nested lists, made one) checked against its spec."""
    where = "component %s" % path if path else "the element"
    if not isinstance(value, RaggedTensor):
        try:
            value = ragged_constant(value, dtype=spec.dtype, ragged_rank=spec.ragged_rank)
        except (TypeError, ValueError, errors.OpError) as exc:
            raise TypeError(
                "Dataset.from_generator: `generator` yielded %s = %s where the "
                "output_signature expects %r, and it cannot be made a RaggedTensor: %s"
                % (where, _short(value), spec, exc)) from None
    if not spec.is_compatible_with(value):
        raise errors.InvalidArgumentError(
            None, "from_generator", "Dataset.from_generator: `generator` yielded %s = %r "
            "(%r) where the output_signature expects %r." % (
                where, value, RaggedTensorSpec.from_value(value), spec))
    return value


class GeneratorDataset(Dataset):
    """``from_generator``: elements yielded by a Python generator, checked on the way."""

    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        super().__init__()
        if not callable(generator):
            raise TypeError("Dataset.from_generator: `generator` must be a Python callable "
                            "(a generator function), got %r." % (generator,))
        if output_signature is not None:
            if output_types is not None or output_shapes is not None:
                raise TypeError("Dataset.from_generator: `output_types` and `output_shapes` "
                                "cannot be used together with `output_signature`.")
            if isinstance(output_signature, list):
                output_signature = tuple(output_signature)
            for leaf in structure.flatten(output_signature):
                if not isinstance(leaf, (TensorSpec, RaggedTensorSpec)):
                    raise TypeError("Dataset.from_generator: every leaf of "
                                    "`output_signature` must be a tf.TensorSpec or "
                                    "tf.RaggedTensorSpec, got %r." % (leaf,))
            spec = output_signature
        elif output_types is None:
            raise TypeError("Dataset.from_generator: at least one of `output_types` and "
                            "`output_signature` must be specified.")
        else:
            spec = _signature_from_types(output_types, output_shapes)
        self._generator = generator
        self._args = () if args is None else tuple(
            np.asarray(structure.tensor_of(a, "argument")) for a in args)
        self._spec = spec
        self._leaf_specs = structure.flatten(spec)
        self._paths = structure.leaf_paths(spec)
        self._pack = structure.packer(spec)

    def _checkpoint_error(self, prefix, policy):
        """TF's errors for saving a ``from_generator`` pass: the generator's Python state
        cannot be saved (FailedPrecondition, as for any stateful function, unless the
        external state policy ignores it; then Unimplemented)."""
        from eagerflow.data.options import ExternalStatePolicy

        if policy == ExternalStatePolicy.FAIL:
            return errors.FailedPreconditionError(
                None, "SerializeIterator", "Dataset.from_generator (in the iterator %s): "
                "the Python generator is stateful, so the iterator's position cannot be "
                "saved. Build the pipeline from from_tensor_slices, range or files to "
                "checkpoint its position, or checkpoint the model only." % prefix)
        return errors.UnimplementedError(
            None, "SerializeIterator", "GeneratorDataset does not support checkpointing (in "
            "the iterator %s): a Python generator's position cannot be saved." % prefix)

    def _elements(self):
        produced = self._generator(*self._args)
        try:
            iterator = iter(produced)
        except TypeError:
            raise TypeError("Dataset.from_generator: `generator` must return an iterable "
                            "(use `yield`), got %s." % type(produced).__name__) from None
        wrap = structure.wrap_array
        try:
            for value in iterator:
                leaves = structure.flatten_up_to(self._spec, value,
                                        "Dataset.from_generator: `generator` yielded an "
                                        "element that does not match output_signature")
                yield self._pack([
                    _yielded_ragged(v, s, p) if isinstance(s, RaggedTensorSpec) and
                    s.ragged_rank else wrap(_yielded_array(v, s, p))
                    for v, s, p in zip(leaves, self._leaf_specs, self._paths)])
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()


class RangeDataset(Dataset):
    """``range``: ``start + step * i`` for ``i`` in ``[0, n)``, computed on demand."""

    def __init__(self, args, dtype):
        super().__init__()
        if not 1 <= len(args) <= 3:
            raise TypeError("Dataset.range takes 1 to 3 positional arguments (stop | start, "
                            "stop[, step]), got %d." % len(args))
        names = {1: ("stop",), 2: ("start", "stop"), 3: ("start", "stop", "step")}[len(args)]
        values = [arguments.as_int(v, n, "range") for v, n in zip(args, names)]
        start, stop, step = {1: lambda: (0, values[0], 1), 2: lambda: (*values, 1),
                             3: lambda: tuple(values)}[len(args)]()
        if step == 0:
            raise errors.InvalidArgumentError(None, "range", "Dataset.range: `step` must "
                                              "not be 0.")
        self._start, self._step = start, step
        self._size = len(range(start, stop, step))
        self._dtype = dtypes_lib.int64 if dtype is None else dtypes_lib.as_dtype(dtype)
        self._spec = TensorSpec([], self._dtype)

    def _cardinality(self):
        return self._size

    def _rows(self):
        start, step, np_dtype = self._start, self._step, self._dtype.np_dtype

        def gather(index):
            if isinstance(index, slice):
                positions = np.arange(index.start, index.stop, index.step, dtype=np.int64)
            else:
                positions = index
            values = (start + step * positions).astype(np_dtype, copy=False)
            values.flags.writeable = False
            return (values,)

        return rows_lib.Rows(gather, self._size, self._spec)


class CounterDataset(Dataset):
    """``tf.data.experimental.Counter``: ``start, start + step, ...`` forever."""

    def __init__(self, start, step, dtype):
        super().__init__()
        self._start = arguments.as_int(start, "start", "Counter")
        self._step = arguments.as_int(step, "step", "Counter")
        self._dtype = dtypes_lib.as_dtype(dtype)
        self._spec = TensorSpec([], self._dtype)

    def _cardinality(self):
        return INFINITE

    def _elements(self):
        np_dtype, start, step = self._dtype.np_dtype, self._start, self._step
        return IndexIterator(None, lambda i: structure.wrap_array(
            np.array(start + step * i, np_dtype)))


def _as_dataset_structure(datasets):
    if isinstance(datasets, list):
        datasets = tuple(datasets)
    if isinstance(datasets, tuple):
        datasets = type(datasets)(*[_as_dataset_structure(d) for d in datasets]) \
            if hasattr(datasets, "_fields") else tuple(_as_dataset_structure(d)
                                                       for d in datasets)
    leaves = structure.flatten(datasets)
    bad = [leaf for leaf in leaves if not isinstance(leaf, Dataset)]
    if bad or not leaves:
        raise TypeError("Dataset.zip takes a (nested) structure of Dataset objects; got %s."
                        % (_short(bad[0]) if bad else "an empty structure"))
    return datasets


class ZipDataset(Dataset):
    """``zip``: the i-th elements of several datasets, in their structure."""

    def __init__(self, datasets):
        self._datasets = _as_dataset_structure(datasets)
        super().__init__(structure.flatten(self._datasets))

    def _compute_spec(self):
        return structure.map_structure(lambda d: d.element_spec, self._datasets)

    def _cardinality(self):
        result = INFINITE
        for dataset in self._inputs:
            n = dataset._cardinality()
            if n == UNKNOWN:
                return UNKNOWN
            if n != INFINITE and (result == INFINITE or n < result):
                result = n
        return result

    def _elements(self):
        return _ZipIterator(self)

    def _rows(self):
        # Equal plain sources zip by position: one gather per input.
        parts = [d._rows() for d in self._inputs]
        if not all(p is not None and p.plain for p in parts):
            return None
        size = min(p.size for p in parts)
        gathers = [p.gather for p in parts]

        def gather(index):
            out = []
            for g in gathers:
                out.extend(g(index))
            return tuple(out)

        return rows_lib.Rows(gather, size, self.element_spec)


class ConcatenateDataset(Dataset):
    """``concatenate``: one dataset's elements, then the other's."""

    def __init__(self, first, second):
        if not isinstance(second, Dataset):
            raise TypeError("Dataset.concatenate: `dataset` must be a Dataset, got %s."
                            % type(second).__name__)
        super().__init__((first, second))
        self._spec = structure.relax_specs(first.element_spec, second.element_spec,
                                           "Dataset.concatenate")

    def _cardinality(self):
        a, b = (d._cardinality() for d in self._inputs)
        if INFINITE in (a, b):
            return INFINITE
        if UNKNOWN in (a, b):
            return UNKNOWN
        return a + b

    def _elements(self):
        return _ConcatenateIterator(self)


class IndexIterator(StatefulIterator):
    """Elements ``make(0), make(1), ...`` up to ``size`` (None: forever); saves the index.

    Example:
        >>> from eagerflow.data.sources import IndexIterator
        >>> list(IndexIterator(3, lambda i: i * 10))
        [0, 10, 20]
    """

    __slots__ = ("_size", "_make", "_next")
    _op = "Index"

    def __init__(self, size, make):
        self._size, self._make, self._next = size, make, 0

    def __next__(self):
        i = self._next
        if self._size is not None and i >= self._size:
            raise StopIteration
        self._next = i + 1
        return self._make(i)

    def save(self, writer):
        writer.int("next", self._next)

    def restore(self, reader):
        i = reader.int("next")
        if i < 0 or (self._size is not None and i > self._size):
            raise iterator_state._not_found(reader.prefix, "saved index %d of %s elements"
                                            % (i, self._size))
        self._next = i


class _ZipIterator(StatefulIterator):
    __slots__ = ("_dataset", "_iterators", "_pack", "_done")
    _op = "Zip"

    def __init__(self, dataset):
        self._dataset = dataset
        self._iterators = [d._elements() for d in dataset._inputs]
        self._pack = structure.packer(dataset._datasets)
        self._done = False

    def __next__(self):
        if self._done:
            raise StopIteration
        items = []
        for iterator in self._iterators:
            item = next(iterator, None)
            if item is None:
                self._done = True
                raise StopIteration
            items.append(item)
        return self._pack(items)

    def close(self):
        for iterator in self._iterators:
            iterator.close()

    def save(self, writer):
        writer.int("done", self._done)
        for i, (iterator, d) in enumerate(zip(self._iterators, self._dataset._inputs)):
            writer.save_input("[%d]" % i, iterator, d)

    def restore(self, reader):
        self._done = bool(reader.int("done"))
        for i, (iterator, d) in enumerate(zip(self._iterators, self._dataset._inputs)):
            reader.restore_input("[%d]" % i, iterator, d)


class _ConcatenateIterator(StatefulIterator):
    __slots__ = ("_dataset", "_which", "_current")
    _op = "Concatenate"

    def __init__(self, dataset):
        self._dataset = dataset
        self._which = 0
        self._current = dataset._inputs[0]._elements()

    def __next__(self):
        inputs = self._dataset._inputs
        while self._current is not None:
            for item in self._current:
                return item
            self._current.close()
            self._which += 1
            self._current = inputs[self._which]._elements() if self._which < len(
                inputs) else None
        raise StopIteration

    def close(self):
        if self._current is not None:
            self._current.close()

    def save(self, writer):
        writer.int("which", self._which)
        if self._current is not None:
            writer.save_input("[%d]" % self._which, self._current,
                              self._dataset._inputs[self._which])

    def restore(self, reader):
        inputs = self._dataset._inputs
        which = reader.int("which")
        if not 0 <= which <= len(inputs):
            raise iterator_state._not_found(reader.prefix, "bad saved input %d" % which)
        self._current.close()
        self._which = which
        self._current = inputs[which]._elements() if which < len(inputs) else None
        if self._current is not None:
            reader.restore_input("[%d]" % which, self._current, inputs[which])
