"""``tf.data.Dataset``: the public API of input pipelines.

A Dataset is an immutable description of a sequence of elements; each element is a tensor
or a (nested) tuple/dict of tensors. Every ``iter(dataset)`` starts a fresh pass.

This module holds what a Dataset is (iteration, ``element_spec``, cardinality, options);
Dataset inherits its sources (``from_tensor_slices``, ``range``, ...) from
:mod:`eagerflow.data.source_methods` and its transformations (``map``, ``batch``, ...) from
:mod:`eagerflow.data.transformation_methods`. Those methods check their arguments and build
the implementation datasets found in ``sources``, ``batching``, ``mapping``, ``selection``,
``shuffling``, ``caching``, ``prefetching`` and ``options``; each implementation provides
three things: ``_elements()`` (an iterator of one pass: a
:class:`~eagerflow.data.iterator_state.StatefulIterator` when its position can be saved,
see :mod:`eagerflow.data.iterator_state`), ``_compute_spec()`` and ``_cardinality()``.
In-memory sources also provide ``_rows()`` (see :mod:`eagerflow.data.rows`), which lets
``batch`` slice arrays directly.

The methods import the implementation modules locally, when called, not at the top: those
modules define Dataset's subclasses, so they import this module. A base class whose methods
construct its subclasses (tf.data's DatasetV2 is built the same way) has this cycle by
nature; ``eagerflow.data`` imports every implementation module, so a local import is a
dictionary lookup.

Example:
    >>> from eagerflow.data import Dataset
    >>> ds = Dataset.from_tensor_slices(([1, 2, 3, 4], [0, 1, 0, 1])).batch(2)
    >>> [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
    [([1, 2], [0, 1]), ([3, 4], [0, 1])]
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.data import rows as rows_lib, structure
from eagerflow.data.arguments import AUTOTUNE, INFINITE, UNKNOWN
from eagerflow.data.source_methods import SourceMethods
from eagerflow.data.transformation_methods import TransformationMethods
from eagerflow.framework import context as _context
from eagerflow.tensor import convert_to_tensor

__all__ = ["Dataset", "DatasetIterator", "AUTOTUNE", "INFINITE", "UNKNOWN"]

_state = _context.state


def _numpy(value):
    """A leaf as numpy, as TF's as_numpy_iterator gives it (a SparseTensor densified)."""
    if getattr(value, "_is_sparse", False):
        from eagerflow.sparse.sparse_ops import to_dense

        return to_dense(value).numpy()
    return value.numpy()


class Dataset(SourceMethods, TransformationMethods):
    """A sequence of elements, each a tensor or a nested tuple/dict of tensors.

    Build one with a source (:meth:`from_tensor_slices`, :meth:`from_tensors`,
    :meth:`from_generator`, :meth:`range`, :meth:`zip`) and chain transformations; iterate
    with a Python ``for`` loop. Iteration runs eagerly (inside ``@function`` it is not
    supported yet: iterate outside and pass elements in).

    Example:
        >>> from eagerflow.data import Dataset
        >>> ds = Dataset.range(10).filter(lambda x: x % 2 == 0).map(lambda x: x * 10)
        >>> [int(x) for x in ds]
        [0, 20, 40, 60, 80]
    """

    def __init__(self, inputs=()):
        self._inputs = tuple(inputs)
        self._spec = None
        self._options = None

    # -- what implementations provide ---------------------------------------------------------

    def _elements(self):
        """A generator over one pass: yields elements (structures of Tensors)."""
        rows = self._rows()
        if rows is None:
            raise NotImplementedError(type(self).__name__ + "._elements")
        return rows_lib.iterate_elements(rows)

    def _compute_spec(self):
        raise NotImplementedError(type(self).__name__ + "._compute_spec")

    def _cardinality(self):
        return UNKNOWN

    def _rows(self):
        """A :class:`rows.Rows` when the elements are addressable by position, else None."""
        return None

    # -- iteration ------------------------------------------------------------------------------

    def __iter__(self):
        """A new iterator over the elements; each call starts a fresh pass.

        This is the single entry point of iteration: a traced function hooks in here.
        """
        if _state.trace is not None:
            _refuse_in_trace()
        return DatasetIterator(self)

    def as_numpy_iterator(self):
        """An iterator over the elements with every tensor converted to numpy.

        Returns:
            An iterator of numpy arrays (numpy scalars for 0-d tensors) in the structure of
            the elements.

        Example:
            >>> from eagerflow.data import Dataset
            >>> [x.tolist() for x in Dataset.from_tensor_slices([[1, 2], [3, 4]])
            ...  .as_numpy_iterator()]
            [[1, 2], [3, 4]]
        """
        for element in self:
            yield structure.map_structure(_numpy, element)

    @property
    def element_spec(self):
        """The type of each element: a (nested) ``TensorSpec``; ``None`` marks dims that
        vary between elements.

        Example:
            >>> from eagerflow.data import Dataset
            >>> Dataset.range(5).batch(2).element_spec
            TensorSpec(shape=(None,), dtype=tf.int64, name=None)
        """
        spec = self._spec
        if spec is None:
            spec = self._spec = self._compute_spec()
        return spec

    def cardinality(self):
        """The number of elements as a scalar int64 tensor.

        Returns ``INFINITE_CARDINALITY`` (-1) for an infinite dataset and
        ``UNKNOWN_CARDINALITY`` (-2) when it cannot be known without iterating (after
        ``filter``, ``from_generator``...).

        Example:
            >>> from eagerflow.data import Dataset
            >>> int(Dataset.range(10).batch(3).cardinality())
            4
            >>> int(Dataset.range(10).repeat().cardinality())
            -1
        """
        return convert_to_tensor(np.int64(self._cardinality()))

    def __len__(self):
        """The number of elements; TypeError if infinite or unknown (as TF)."""
        n = self._cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self):
        return True  # __len__ exists, but a dataset (even an infinite one) is always truthy

    def __repr__(self):
        return "<%s element_spec=%s>" % (type(self).__name__, self.element_spec)

    def reduce(self, initial_state, reduce_func, name=None):
        """Folds the elements into one state: ``state = reduce_func(state, element)``.

        Args:
            initial_state: The starting state (a nested structure; values become tensors).
            reduce_func: ``(state, element) -> new state`` with the same structure and
                dtypes (an element that is a tuple is passed as one argument).
            name: Unused (TF compatibility).

        Returns:
            The final state.

        Raises:
            TypeError: If the new state's structure or dtypes differ from the initial one.

        Example:
            >>> import numpy as np
            >>> from eagerflow.data import Dataset
            >>> int(Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x))
            10
        """
        from eagerflow.data import functions

        functions.check_callable(reduce_func, "reduce_func", "reduce")
        state = structure.to_tensors(initial_state, "initial_state")
        state_spec = structure.spec_of(state)
        if _context.state.trace is not None:
            # Inside a traced function the fold runs when the graph runs, as TF's.
            from eagerflow.function.autograph.dataset_loop import reduce_dataset

            return reduce_dataset(self, state, lambda s, e: structure.check_state(
                structure.to_tensors(reduce_func(s, e), "state"), state_spec, "reduce"))
        for element in self:
            new = structure.to_tensors(reduce_func(state, element), "state")
            state = structure.check_state(new, state_spec, "reduce")
        return state

    def get_single_element(self, name=None):
        """The only element of a dataset that has exactly one.

        Raises:
            InvalidArgumentError: If the dataset is empty or has more than one element.

        Example:
            >>> from eagerflow.data import Dataset
            >>> int(Dataset.from_tensors(7).get_single_element())
            7
        """
        iterator = self._elements()
        try:
            first = next(iterator, None)
            if first is None:
                raise errors.InvalidArgumentError(
                    None, "get_single_element", "Dataset was empty.")
            if next(iterator, None) is not None:
                raise errors.InvalidArgumentError(
                    None, "get_single_element", "Dataset had more than one element.")
        finally:
            iterator.close()
        return first

    # -- composing and options ---------------------------------------------------------------

    def apply(self, transformation_func):
        """Returns ``transformation_func(self)``, which must be a Dataset.

        Example:
            >>> from eagerflow.data import Dataset
            >>> len(Dataset.range(10).apply(lambda ds: ds.take(4)))
            4
        """
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError("Dataset.apply: `transformation_func` must return a Dataset, "
                            "got %s." % type(result).__name__)
        return result

    def with_options(self, options, name=None):
        """This dataset with ``options`` (a ``tf.data.Options``) merged in.

        Example:
            >>> from eagerflow.data import Dataset, Options
            >>> opts = Options()
            >>> opts.deterministic = False
            >>> Dataset.range(3).with_options(opts).options().deterministic
            False
        """
        from eagerflow.data import options as options_lib

        return options_lib.OptionsDataset(self, options)

    def options(self):
        """The ``tf.data.Options`` of this dataset (merged from its inputs)."""
        from eagerflow.data import options as options_lib

        return options_lib.merged_options(self)


class DatasetIterator:
    """An iterator over one pass of a Dataset (``iter(dataset)``).

    Stopping early is safe: when the iterator is closed or garbage-collected, background
    threads of the pass (prefetch, parallel map) stop.

    Example:
        >>> from eagerflow.data import Dataset
        >>> it = iter(Dataset.range(2))
        >>> int(next(it)), int(it.get_next())
        (0, 1)
    """

    __slots__ = ("_dataset", "_gen", "_exhausted", "__weakref__")

    def __init__(self, dataset):
        self._dataset = dataset
        self._gen = dataset._elements()
        self._exhausted = False

    def __iter__(self):
        return self

    def __next__(self):
        if _state.trace is not None:
            _refuse_in_trace()
        if self._exhausted:
            raise StopIteration
        try:
            return next(self._gen)
        except StopIteration:
            self._exhausted = True
            raise

    next = __next__

    def get_next(self):
        """The next element; raises ``OutOfRangeError`` at the end (as TF)."""
        try:
            return self.__next__()
        except StopIteration:
            raise errors.OutOfRangeError(None, "IteratorGetNext", "End of sequence") from None

    # -- checkpointing (``tf.train.Checkpoint(iterator=it)``) --------------------------------

    def _save_state(self):
        """This pass's position as bytes (see :mod:`eagerflow.data.iterator_state`).

        Raises:
            UnimplementedError: If a dataset of the pipeline cannot save its position
                (``from_generator``, as in TF).
            FailedPreconditionError: If a function of the pipeline is stateful and the
                options' ``experimental_external_state_policy`` is FAIL (the default).
        """
        from eagerflow.data import iterator_state

        writer = iterator_state.StateWriter(
            policy=self._dataset.options().experimental_external_state_policy)
        writer.int("exhausted", self._exhausted)
        # Shuffle epoch counters belong to the datasets (TF's seed generators): saved here
        # for the whole pipeline, including shuffles whose pass has not started.
        writer.ints("shuffle_epochs", [d._epochs for d in _shuffles(self._dataset)])
        writer.save_input("", self._gen, self._dataset)
        return iterator_state.to_bytes(writer)

    def _restore_state(self, data):
        """Continues from a position :meth:`_save_state` returned, for the same pipeline.

        Raises:
            NotFoundError: If the state was saved from a pipeline of another shape.
            DataLossError: If the state is corrupt.
        """
        from eagerflow.data import iterator_state

        reader = iterator_state.from_bytes(data)
        shuffles = _shuffles(self._dataset)
        fresh = self._dataset._elements()
        try:
            reader.restore_input("", fresh, self._dataset)
            exhausted = bool(reader.int("exhausted"))
            epochs = reader.ints("shuffle_epochs", len(shuffles)).tolist()
        except BaseException:
            fresh.close()
            raise
        for dataset, epoch in zip(shuffles, epochs):
            dataset._epochs = max(0, epoch)
        self._gen.close()
        self._gen, self._exhausted = fresh, exhausted

    def _serialize_to_tensors(self):
        """``{"ITERATOR_STATE": uint8 tensor}``: the checkpoint key TF uses for iterators."""
        return {"ITERATOR_STATE": np.frombuffer(self._save_state(), np.uint8)}

    def _restore_from_tensors(self, tensors):
        value = tensors["ITERATOR_STATE"]
        if value.dtype != np.uint8 or value.ndim != 1:
            raise errors.DataLossError(
                None, "DeserializeIterator", "The saved iterator state must be a uint8 "
                "vector, got %s of shape %s." % (value.dtype, value.shape))
        self._restore_state(value.tobytes())

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def close(self):
        """Ends the pass now, stopping any background work it started."""
        self._gen.close()


def _shuffles(dataset):
    """The shuffle datasets of a pipeline, inputs first, each once."""
    from eagerflow.data.shuffling import ShuffleDataset

    seen, out = set(), []

    def visit(d):
        if id(d) in seen:
            return
        seen.add(id(d))
        for child in d._inputs:
            visit(child)
        if isinstance(d, ShuffleDataset):
            out.append(d)

    visit(dataset)
    return out


def _refuse_in_trace():
    raise errors.UnimplementedError(
        None, "Dataset", "Iterating a Dataset inside a traced @function is not supported "
        "yet: iterate outside the function and pass each element in as an argument.")
