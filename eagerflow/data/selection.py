"""Transformations that choose or number elements: repeat, take, skip, shard, enumerate.

Each works element by element, and repeat/take/skip/shard also work on the index blocks of
in-memory sources (see :mod:`eagerflow.data.rows`), so batching after them keeps slicing
arrays directly.
"""

from __future__ import annotations

import itertools
from contextlib import closing

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.data import arguments, rows as rows_lib, structure
from eagerflow.data.arguments import INFINITE, UNKNOWN
from eagerflow.data.dataset import Dataset
from eagerflow.tensor_shape import TensorSpec

__all__ = ["RepeatDataset", "TakeDataset", "SkipDataset", "ShardDataset", "EnumerateDataset"]


class _Unary(Dataset):
    """A transformation with one input whose elements keep the input's spec."""

    def __init__(self, input_dataset):
        super().__init__((input_dataset,))

    @property
    def _input(self):
        return self._inputs[0]

    def _compute_spec(self):
        return self._input.element_spec

    def _rows_with(self, blocks):
        """Rows over the input's rows with another pass plan (None if not row-backed)."""
        inner = self._input._rows()
        if inner is None:
            return None
        return rows_lib.Rows(inner.gather, inner.size, inner.template,
                             blocks=lambda: blocks(inner.blocks))


class RepeatDataset(_Unary):
    """``repeat``: ``count`` passes over the input (-1: forever)."""

    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = count

    def _cardinality(self):
        n = self._input._cardinality()
        if self._count < 0:
            return 0 if n == 0 else INFINITE
        if self._count == 0:
            return 0
        if n in (INFINITE, UNKNOWN):
            return n
        return n * self._count

    def _elements(self):
        rows = self._rows()
        if rows is not None:
            return rows_lib.iterate_elements(rows)
        return self._passes()

    def _passes(self):
        passes = itertools.count() if self._count < 0 else range(self._count)
        for _ in passes:
            empty = True
            with closing(self._input._elements()) as iterator:
                for element in iterator:
                    empty = False
                    yield element
            if empty:
                return  # repeating an empty pass forever would never yield: stop, as TF

    def _rows(self):
        count = None if self._count < 0 else self._count
        return self._rows_with(lambda start_pass: rows_lib.repeat_blocks(start_pass, count))


class TakeDataset(_Unary):
    """``take``: the first ``count`` elements (-1: all)."""

    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = count

    def _cardinality(self):
        n = self._input._cardinality()
        if n == UNKNOWN:
            return UNKNOWN
        if n == INFINITE:
            return self._count
        return n if self._count < 0 else min(n, self._count)

    def _elements(self):
        rows = self._rows()
        if rows is not None:
            return rows_lib.iterate_elements(rows)
        return self._taken()

    def _taken(self):
        if self._count == 0:
            return
        with closing(self._input._elements()) as iterator:
            if self._count < 0:
                yield from iterator
                return
            for position, element in enumerate(iterator, 1):
                yield element
                if position == self._count:
                    return

    def _rows(self):
        if self._count < 0:
            return self._input._rows()
        count = self._count
        return self._rows_with(lambda start_pass: rows_lib.take_blocks(start_pass(), count))


class SkipDataset(_Unary):
    """``skip``: all but the first ``count`` elements (-1: none)."""

    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = count

    def _cardinality(self):
        n = self._input._cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        return 0 if self._count < 0 else max(0, n - self._count)

    def _elements(self):
        rows = self._rows()
        if rows is not None:
            return rows_lib.iterate_elements(rows)
        return self._skipped()

    def _skipped(self):
        with closing(self._input._elements()) as iterator:
            if self._count < 0:
                for _ in iterator:  # TF skips the whole input, reading it
                    pass
                return
            yield from itertools.islice(iterator, self._count, None)

    def _rows(self):
        count = self._count
        if count < 0:
            return self._rows_with(lambda start_pass: iter(()))
        return self._rows_with(lambda start_pass: rows_lib.skip_blocks(start_pass(), count))


class ShardDataset(_Unary):
    """``shard``: the elements whose position is ``index`` modulo ``num_shards``."""

    def __init__(self, input_dataset, num_shards, index):
        super().__init__(input_dataset)
        self._num = arguments.positive_int(num_shards, "num_shards", "shard")
        self._index = arguments.as_int(index, "index", "shard")
        if not 0 <= self._index < self._num:
            raise errors.InvalidArgumentError(
                None, "shard", "Dataset.shard: `index` must be in [0, num_shards) = [0, %d), "
                "got %d." % (self._num, self._index))

    def _cardinality(self):
        n = self._input._cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        return n // self._num + (1 if self._index < n % self._num else 0)

    def _elements(self):
        rows = self._rows()
        if rows is not None:
            return rows_lib.iterate_elements(rows)
        return self._sharded()

    def _sharded(self):
        with closing(self._input._elements()) as iterator:
            yield from itertools.islice(iterator, self._index, None, self._num)

    def _rows(self):
        num, index = self._num, self._index
        return self._rows_with(
            lambda start_pass: rows_lib.shard_blocks(start_pass(), num, index))


class EnumerateDataset(_Unary):
    """``enumerate``: ``(start + i, element)`` with an int64 counter."""

    def __init__(self, input_dataset, start):
        super().__init__(input_dataset)
        self._start = start

    def _compute_spec(self):
        return (TensorSpec([], dtypes_lib.int64), self._input.element_spec)

    def _cardinality(self):
        return self._input._cardinality()

    def _elements(self):
        wrap = structure.wrap_array
        with closing(self._input._elements()) as iterator:
            for position, element in enumerate(iterator, self._start):
                yield wrap(np.array(position, np.int64)), element


class AssertCardinalityDataset(_Unary):
    """``experimental.assert_cardinality``: declares the count and checks it while reading."""

    def __init__(self, input_dataset, expected):
        super().__init__(input_dataset)
        self._expected = arguments.as_int(expected, "expected_cardinality",
                                          "assert_cardinality")

    def _cardinality(self):
        return self._expected

    def _elements(self):
        expected, count = self._expected, 0
        with closing(self._input._elements()) as iterator:
            for element in iterator:
                count += 1
                if expected >= 0 and count > expected:
                    raise errors.FailedPreconditionError(
                        None, "assert_cardinality", "Input dataset was expected to contain "
                        "%d elements but contained at least %d elements." % (expected, count))
                yield element
        if expected == INFINITE or 0 <= count < expected:
            raise errors.FailedPreconditionError(
                None, "assert_cardinality", "Input dataset was expected to contain %s "
                "elements but contained only %d elements."
                % ("an infinite number of" if expected == INFINITE else expected, count))
