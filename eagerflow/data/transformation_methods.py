"""The transformations of a Dataset (``map``, ``batch``, ``shuffle``, ``take``, ``cache``,
``prefetch``, ...): methods of :class:`eagerflow.data.Dataset`, which inherits them from this
class. Each checks its arguments and returns the implementation dataset that does the work.

The methods import their implementation modules locally (why: see
:mod:`eagerflow.data.dataset`).

Example:
    >>> from eagerflow.data import Dataset
    >>> [x.numpy().tolist() for x in Dataset.range(5).map(lambda x: x * 2).batch(2)]
    [[0, 2], [4, 6], [8]]
"""

from __future__ import annotations

from eagerflow.data import arguments

__all__ = ["TransformationMethods"]


class TransformationMethods:
    """The transformations of :class:`eagerflow.data.Dataset` (see the module docstring)."""

    __slots__ = ()

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
