"""``tf.data.Dataset``: the public API of input pipelines.

A Dataset is an immutable description of a sequence of elements; each element is a tensor
or a (nested) tuple/dict of tensors. Every ``iter(dataset)`` starts a fresh pass. The
methods here check their arguments and build the implementation datasets found in
``sources``, ``batching``, ``mapping``, ``selection``, ``shuffling``, ``caching`` and
``prefetching``; each implementation provides three things: ``_elements()`` (a generator of
one pass), ``_compute_spec()`` and ``_cardinality()``. In-memory sources also provide
``_rows()`` (see :mod:`eagerflow.data.rows`), which lets ``batch`` slice arrays directly.

Example:
    >>> from eagerflow.data import Dataset
    >>> ds = Dataset.from_tensor_slices(([1, 2, 3, 4], [0, 1, 0, 1])).batch(2)
    >>> [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
    [([1, 2], [0, 1]), ([3, 4], [0, 1])]
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.data import arguments, rows as rows_lib, structure
from eagerflow.data.arguments import AUTOTUNE, INFINITE, UNKNOWN
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


class Dataset:
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

    # -- sources ----------------------------------------------------------------------------

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """A dataset of the slices of ``tensors`` along their first dimension.

        Args:
            tensors: A tensor, array or (nested) tuple/dict of them; a Python list is one
                tensor. Every component must have the same first dimension.
            name: Unused (TF compatibility).

        Returns:
            A Dataset with one element per row.

        Raises:
            InvalidArgumentError: If the first dimensions differ or a component is a scalar.

        Example:
            >>> import numpy as np
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.from_tensor_slices({"x": np.arange(6.0).reshape(3, 2),
            ...                                  "y": [0, 1, 2]})
            >>> [int(e["y"]) for e in ds]
            [0, 1, 2]
        """
        from eagerflow.data import sources

        return sources.TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors, name=None):
        """A dataset with a single element, ``tensors``.

        Example:
            >>> from eagerflow.data import Dataset
            >>> Dataset.from_tensors(([1, 2], 3)).element_spec[0].shape
            TensorShape([2])
        """
        from eagerflow.data import sources

        return sources.TensorDataset(tensors)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None):
        """A dataset whose elements a Python generator yields.

        ``generator`` is called (with ``args``, converted to numpy) at the start of every
        pass. Each yielded value is converted to ``output_signature``'s dtypes and checked
        against its structure and shapes.

        Args:
            generator: A callable returning an iterable.
            output_types: (Deprecated in TF) nested dtypes, used with ``output_shapes``.
            output_shapes: (Deprecated in TF) nested shapes; unknown if omitted.
            args: A tuple of arguments for ``generator``.
            output_signature: A nested structure of ``TensorSpec``.
            name: Unused (TF compatibility).

        Returns:
            A Dataset of unknown cardinality.

        Raises:
            TypeError: If ``generator`` is not callable or no signature is given; while
                iterating, if a yielded value does not match the signature.

        Example:
            >>> import eagerflow as ef
            >>> from eagerflow.data import Dataset
            >>> def gen():
            ...     for i in range(3):
            ...         yield i, [1.0] * i
            >>> ds = Dataset.from_generator(gen, output_signature=(
            ...     ef.TensorSpec([], ef.int32), ef.TensorSpec([None], ef.float32)))
            >>> [y.shape.as_list() for x, y in ds]
            [[0], [1], [2]]
        """
        from eagerflow.data import sources

        return sources.GeneratorDataset(generator, output_types, output_shapes, args,
                                        output_signature)

    @staticmethod
    def range(*args, output_type=None, name=None, dtype=None):
        """Integers from ``start`` to ``stop`` by ``step``: ``range(stop)``,
        ``range(start, stop)`` or ``range(start, stop, step)``, as Python's range.

        Args:
            *args: One to three integers.
            output_type: The element dtype (default int64); TF's name for it.
            name: Unused (TF compatibility).
            dtype: Another name for ``output_type``.

        Raises:
            InvalidArgumentError: If ``step`` is 0.
            TypeError: If both ``output_type`` and ``dtype`` are given.

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(5, 1, -2)]
            [5, 3]
        """
        from eagerflow.data import sources

        if output_type is not None and dtype is not None:
            raise TypeError("Dataset.range: give the element type as `output_type` or "
                            "`dtype`, not both.")
        return sources.RangeDataset(args, dtype if output_type is None else output_type)

    @staticmethod
    def zip(*args, datasets=None, name=None):
        """Zips datasets: element ``i`` is the structure of every dataset's element ``i``.

        Takes the datasets as arguments (``zip(a, b)``) or as one nested structure
        (``zip((a, b))``, ``zip({"x": a, "y": b})``). It stops at the shortest dataset.
        Unlike TF, a list of datasets is accepted and treated as a tuple.

        Example:
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.zip(Dataset.range(3), Dataset.range(10, 20))
            >>> [(int(a), int(b)) for a, b in ds]
            [(0, 10), (1, 11), (2, 12)]
        """
        from eagerflow.data import sources

        if datasets is not None and args:
            raise TypeError("Dataset.zip: pass the datasets either positionally or as "
                            "`datasets=`, not both.")
        if datasets is None:
            if not args:
                raise TypeError("Dataset.zip needs at least one dataset.")
            datasets = args[0] if len(args) == 1 else tuple(args)
        return sources.ZipDataset(datasets)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """Elements drawn at random from ``datasets`` with probabilities ``weights``.

        With ``stop_on_empty_dataset=False`` an exhausted dataset is dropped and sampling
        goes on among the rest (TF's default).

        Example:
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.sample_from_datasets(
            ...     [Dataset.range(3), Dataset.range(10, 13)], seed=1)
            >>> sorted(int(x) for x in ds)
            [0, 1, 2, 10, 11, 12]
        """
        from eagerflow.data import sampling

        return sampling.SampleDataset(datasets, weights, seed, stop_on_empty_dataset)

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        """Element ``i`` taken from ``datasets[choice_dataset[i]]``.

        Example:
            >>> from eagerflow.data import Dataset
            >>> a, b = Dataset.range(0, 3), Dataset.range(10, 13)
            >>> [int(x) for x in Dataset.choose_from_datasets(
            ...     [a, b], Dataset.from_tensor_slices([0, 1, 1, 0]))]
            [0, 10, 11, 1]
        """
        from eagerflow.data import sampling

        return sampling.ChooseDataset(datasets, choice_dataset, stop_on_empty_dataset)

    # -- combining and reordering -----------------------------------------------------------

    def concatenate(self, dataset, name=None):
        """This dataset's elements followed by ``dataset``'s.

        Raises:
            TypeError: If the element structures or dtypes differ (shapes are relaxed to the
                most specific shape compatible with both).

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(2).concatenate(Dataset.range(5, 7))]
            [0, 1, 5, 6]
        """
        from eagerflow.data import sources

        return sources.ConcatenateDataset(self, dataset)

    def repeat(self, count=None, name=None):
        """Repeats the dataset ``count`` times (forever if None or -1).

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(2).repeat(3)]
            [0, 1, 0, 1, 0, 1]
        """
        from eagerflow.data import selection

        return selection.RepeatDataset(self, arguments.count_arg(count, "count", "repeat"))

    def take(self, count, name=None):
        """The first ``count`` elements (all of them if -1).

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(10).take(3)]
            [0, 1, 2]
        """
        from eagerflow.data import selection

        return selection.TakeDataset(self, arguments.count_arg(count, "count", "take"))

    def skip(self, count, name=None):
        """All but the first ``count`` elements (none if -1).

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(5).skip(3)]
            [3, 4]
        """
        from eagerflow.data import selection

        return selection.SkipDataset(self, arguments.count_arg(count, "count", "skip"))

    def shard(self, num_shards, index, name=None):
        """Every ``num_shards``-th element starting at ``index``.

        Raises:
            InvalidArgumentError: If ``num_shards`` < 1 or ``index`` is not in
                ``[0, num_shards)``.

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(10).shard(3, 1)]
            [1, 4, 7]
        """
        from eagerflow.data import selection

        return selection.ShardDataset(self, num_shards, index)

    def enumerate(self, start=0, name=None):
        """Pairs each element with its int64 position: ``(start + i, element)``.

        Example:
            >>> from eagerflow.data import Dataset
            >>> [(int(i), int(x)) for i, x in Dataset.range(5, 7).enumerate(10)]
            [(10, 5), (11, 6)]
        """
        from eagerflow.data import selection

        return selection.EnumerateDataset(self, arguments.as_int(start, "start", "enumerate"))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None):
        """Shuffles the elements with a buffer of ``buffer_size`` elements.

        The buffer is filled with the first ``buffer_size`` elements; each output is drawn
        uniformly from the buffer and its slot refilled with the next input element. A
        buffer as large as the dataset gives a uniform permutation; ``buffer_size=1`` keeps
        the order. Seeds follow ``eagerflow.random.set_seed``: with a global seed set (or
        ``seed`` given) the order is the same in every fresh program.

        Args:
            buffer_size: Number of elements in the buffer (>= 1).
            seed: Optional operation seed.
            reshuffle_each_iteration: If True (the default), every pass (each ``iter`` or
                ``repeat`` epoch) has a different order; if False, every pass repeats the
                first pass's order.
            name: Unused (TF compatibility).

        Example:
            >>> from eagerflow.data import Dataset
            >>> sorted(int(x) for x in Dataset.range(5).shuffle(5, seed=1))
            [0, 1, 2, 3, 4]
        """
        from eagerflow.data import shuffling

        return shuffling.ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    # -- batching ----------------------------------------------------------------------------

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None):
        """Stacks consecutive elements into batches of ``batch_size``.

        The last batch is smaller when the count is not a multiple of ``batch_size``
        (dropped if ``drop_remainder``); the batch dimension of ``element_spec`` is None
        unless ``drop_remainder`` is True. Over in-memory sources, batches are slices of the
        source arrays.

        Args:
            batch_size: Elements per batch (>= 1).
            drop_remainder: Drop a last, smaller batch.
            num_parallel_calls: Accepted for TF compatibility (batches are built
                sequentially; they are slices or one numpy stack each).
            deterministic: Accepted for TF compatibility.
            name: Unused (TF compatibility).

        Raises:
            InvalidArgumentError: If ``batch_size`` < 1; while iterating, if elements of a
                batch have different shapes (use ``padded_batch``).

        Example:
            >>> from eagerflow.data import Dataset
            >>> [x.numpy().tolist() for x in Dataset.range(5).batch(2)]
            [[0, 1], [2, 3], [4]]
        """
        from eagerflow.data import batching

        arguments.parallelism(num_parallel_calls, "num_parallel_calls", "batch")
        return batching.BatchDataset(
            self, arguments.positive_int(batch_size, "batch_size", "batch"),
            arguments.as_bool(drop_remainder, "drop_remainder", "batch"))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None):
        """Batches elements of different shapes by padding them to a common shape.

        Args:
            batch_size: Elements per batch (>= 1).
            padded_shapes: Shapes (nested like the elements) to pad each component to;
                None or -1 dimensions pad to the largest in the batch. Default: pad every
                dimension to the largest in the batch.
            padding_values: Scalars (nested like the elements, or one scalar for all) to pad
                with; default 0 (False for bool).
            drop_remainder: Drop a last, smaller batch.
            name: Unused (TF compatibility).

        Raises:
            ValueError: If a padded shape is smaller than or of another rank than the
                component's static shape.

        Example:
            >>> import eagerflow as ef
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.range(1, 4).map(lambda x: ef.fill([x], x)).padded_batch(3)
            >>> next(iter(ds)).numpy().tolist()
            [[1, 0, 0], [2, 2, 0], [3, 3, 3]]
        """
        from eagerflow.data import batching

        return batching.PaddedBatchDataset(
            self, arguments.positive_int(batch_size, "batch_size", "padded_batch"),
            padded_shapes, padding_values,
            arguments.as_bool(drop_remainder, "drop_remainder", "padded_batch"))

    def ragged_batch(self, batch_size, drop_remainder=False, row_splits_dtype=None,
                     name=None):
        """Batches elements whose shapes differ into RaggedTensors (TF's ``ragged_batch``).

        A dense component with an unknown dimension becomes a RaggedTensor, ragged up to its
        last unknown dimension; components of fully known shape batch into dense tensors
        and ragged components into RaggedTensors with one more ragged dimension, as
        :meth:`batch` does.

        Args:
            batch_size: Elements per batch (>= 1).
            drop_remainder: Drop a last, smaller batch.
            row_splits_dtype: int64 (default) or int32, recorded in the element_spec (row
                splits are held as int64 either way).
            name: Unused (TF compatibility).

        Example:
            >>> import eagerflow as ef
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.range(4).map(lambda x: ef.range(x)).ragged_batch(3)
            >>> [rt.to_list() for rt in ds]
            [[[], [0], [0, 1]], [[0, 1, 2]]]
        """
        from eagerflow import dtypes as dtypes_lib
        from eagerflow.data import batching

        splits_dtype = dtypes_lib.int64 if row_splits_dtype is None else \
            dtypes_lib.as_dtype(row_splits_dtype)
        if splits_dtype not in (dtypes_lib.int64, dtypes_lib.int32):
            raise ValueError("Dataset.ragged_batch: row_splits_dtype must be int32 or int64, "
                             "got %s." % splits_dtype.name)
        return batching.BatchDataset(
            batching.DenseToRaggedDataset(self, splits_dtype),
            arguments.positive_int(batch_size, "batch_size", "ragged_batch"),
            arguments.as_bool(drop_remainder, "drop_remainder", "ragged_batch"))

    def unbatch(self, name=None):
        """Splits each element along its first dimension into elements (inverse of batch).

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(5).batch(2).unbatch()]
            [0, 1, 2, 3, 4]
        """
        from eagerflow.data import batching

        return batching.UnbatchDataset(self)

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """Groups elements into windows, each a (structure of) small Dataset(s).

        Windows start every ``shift`` elements (default ``size``) and take every
        ``stride``-th element, ``size`` of them; the last windows may be shorter unless
        ``drop_remainder``. A tuple element gives a tuple of datasets, one per component.

        Example:
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.range(7).window(3, shift=2)
            >>> [[int(x) for x in w] for w in ds]
            [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
            >>> [b.numpy().tolist() for b in ds.flat_map(lambda w: w.batch(3))][:2]
            [[0, 1, 2], [2, 3, 4]]
        """
        from eagerflow.data import windowing

        return windowing.WindowDataset(self, size, shift, stride, drop_remainder)

    def rebatch(self, batch_size, drop_remainder=False, name=None):
        """Re-batches batched elements to ``batch_size`` (``unbatch().batch(batch_size)``).

        Example:
            >>> from eagerflow.data import Dataset
            >>> [x.numpy().tolist() for x in Dataset.range(6).batch(4).rebatch(3)]
            [[0, 1, 2], [3, 4, 5]]
        """
        return self.unbatch().batch(batch_size, drop_remainder=drop_remainder)

    # -- functions ----------------------------------------------------------------------------

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """Applies ``map_func`` to every element.

        A tuple element is passed as positional arguments (``lambda x, y: ...``); a dict or
        a single tensor as one argument. The function runs eagerly for each element; its
        output spec is inferred as described in :mod:`eagerflow.data.functions`.

        Args:
            map_func: The function; it returns a tensor or a nested tuple/dict (a returned
                list becomes a tuple).
            num_parallel_calls: Run this many calls at once on a thread pool (an int or
                ``AUTOTUNE``); None runs them one at a time.
            deterministic: With parallel calls, keep the input order (the default, from
                ``Options.deterministic``); False yields results as they finish.
            name: Unused (TF compatibility).

        Example:
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.from_tensor_slices(([1, 2], [3, 4])).map(lambda x, y: x + y)
            >>> [int(v) for v in ds]
            [4, 6]
        """
        from eagerflow.data import mapping

        return mapping.MapDataset(self, map_func, num_parallel_calls, deterministic)

    def filter(self, predicate, name=None):
        """Keeps the elements for which ``predicate`` returns True (a scalar bool tensor).

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(6).filter(lambda x: x > 3)]
            [4, 5]
        """
        from eagerflow.data import mapping

        return mapping.FilterDataset(self, predicate)

    def take_while(self, predicate, name=None):
        """The elements before the first one for which ``predicate`` is False.

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(10).take_while(lambda x: x < 3)]
            [0, 1, 2]
        """
        from eagerflow.data import mapping

        return mapping.TakeWhileDataset(self, predicate)

    def flat_map(self, map_func, name=None):
        """Maps each element to a dataset and concatenates those datasets.

        Example:
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.from_tensor_slices([[1, 2], [3, 4]])
            >>> [int(x) for x in ds.flat_map(Dataset.from_tensor_slices)]
            [1, 2, 3, 4]
        """
        from eagerflow.data import mapping

        return mapping.FlatMapDataset(self, map_func)

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None):
        """Maps elements to datasets and interleaves their elements.

        ``cycle_length`` datasets are open at once; ``block_length`` consecutive elements
        are taken from each in turn. When one ends, the next input element opens a new
        dataset in its place.

        Args:
            map_func: element -> Dataset.
            cycle_length: Datasets open at once (default: the number of CPU cores).
            block_length: Consecutive elements from each (default 1).
            num_parallel_calls: If set, each open dataset is read ahead by a background
                thread; the output order is unchanged.
            deterministic: Accepted for TF compatibility (the order is always the
                deterministic one).
            name: Unused (TF compatibility).

        Example:
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.range(1, 6).interleave(
            ...     lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2,
            ...     block_length=4)
            >>> [int(x) for x in ds][:12]
            [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2]
        """
        from eagerflow.data import mapping

        return mapping.InterleaveDataset(self, map_func, cycle_length, block_length,
                                         num_parallel_calls)

    def scan(self, initial_state, scan_func, name=None):
        """A running state: ``(state, out) = scan_func(state, element)``; yields ``out``.

        Example:
            >>> import numpy as np
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.range(5).scan(np.int64(0), lambda s, x: (s + x, s + x))
            >>> [int(x) for x in ds]
            [0, 1, 3, 6, 10]
        """
        from eagerflow.data import mapping

        return mapping.ScanDataset(self, initial_state, scan_func)

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

    # -- performance ----------------------------------------------------------------------------

    def cache(self, filename="", name=None):
        """Caches the elements after the first complete pass.

        With ``filename=""`` the elements are kept in memory; otherwise they are written
        to the directory ``filename`` (``.npy`` files and a JSON index, no pickle) once the
        first pass completes, and every later pass, in this program or another, reads the
        files. A pass that stops early caches nothing.

        Example:
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.range(3).map(lambda x: x * 2).cache()
            >>> [int(x) for x in ds] == [int(x) for x in ds]
            True
        """
        from eagerflow.data import caching

        return caching.CacheDataset(self, filename)

    def prefetch(self, buffer_size, name=None):
        """Produces elements ahead of the consumer on a background thread.

        Args:
            buffer_size: Elements to hold ready (``AUTOTUNE`` picks a small buffer; 0 turns
                prefetching off).
            name: Unused (TF compatibility).

        Example:
            >>> from eagerflow.data import AUTOTUNE, Dataset
            >>> [int(x) for x in Dataset.range(3).prefetch(AUTOTUNE)]
            [0, 1, 2]
        """
        from eagerflow.data import prefetching

        return prefetching.PrefetchDataset(self, buffer_size)

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

    __slots__ = ("_dataset", "_gen", "__weakref__")

    def __init__(self, dataset):
        self._dataset = dataset
        self._gen = dataset._elements()

    def __iter__(self):
        return self

    def __next__(self):
        if _state.trace is not None:
            _refuse_in_trace()
        return next(self._gen)

    next = __next__

    def get_next(self):
        """The next element; raises ``OutOfRangeError`` at the end (as TF)."""
        try:
            return self.__next__()
        except StopIteration:
            raise errors.OutOfRangeError(None, "IteratorGetNext", "End of sequence") from None

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def close(self):
        """Ends the pass now, stopping any background work it started."""
        self._gen.close()


def _refuse_in_trace():
    raise errors.UnimplementedError(
        None, "Dataset", "Iterating a Dataset inside a traced @function is not supported "
        "yet: iterate outside the function and pass each element in as an argument.")
