"""Transformations that choose or number elements: repeat, take, skip, shard, enumerate.

Each works element by element, and repeat/take/skip/shard also work on the index blocks of
in-memory sources (see :mod:`eagerflow.data.rows`), so batching after them keeps slicing
arrays directly.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.data import arguments, rows as rows_lib, structure
from eagerflow.data.arguments import INFINITE, UNKNOWN
from eagerflow.data.dataset import Dataset
from eagerflow.data.iterator_state import StatefulIterator, UnaryIterator, _not_found
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
        return _RepeatIterator(self)

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
        return _TakeIterator(self)

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
        return _SkipIterator(self)

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
        return _ShardIterator(self)

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
        return _EnumerateIterator(self)


class AssertCardinalityDataset(_Unary):
    """``experimental.assert_cardinality``: declares the count and checks it while reading."""

    def __init__(self, input_dataset, expected):
        super().__init__(input_dataset)
        self._expected = arguments.as_int(expected, "expected_cardinality",
                                          "assert_cardinality")

    def _cardinality(self):
        return self._expected

    def _elements(self):
        return _AssertCardinalityIterator(self)


# -- the element path's iterators (their positions can be saved) -----------------------------


class _RepeatIterator(StatefulIterator):
    __slots__ = ("_dataset", "_input", "_passes", "_empty", "_done")
    _op = "Repeat"

    def __init__(self, dataset):
        self._dataset = dataset
        self._input = None
        self._passes = 0  # passes started
        self._empty = True  # the current pass has produced nothing yet
        self._done = False
        if dataset._count != 0:  # the first pass starts with the iterator, as in TF
            self._input = dataset._input._elements()
            self._passes = 1

    def __next__(self):
        if self._done:
            raise StopIteration
        count = self._dataset._count
        while True:
            if self._input is None:
                if 0 <= count <= self._passes:
                    self._done = True
                    raise StopIteration
                self._input = self._dataset._input._elements()
                self._passes += 1
                self._empty = True
            for element in self._input:
                self._empty = False
                return element
            self._input.close()
            self._input = None
            if self._empty:
                # Repeating an empty pass forever would never yield: stop, as TF.
                self._done = True
                raise StopIteration

    def close(self):
        if self._input is not None:
            self._input.close()

    def save(self, writer):
        writer.ints("passes_empty_done", (self._passes, self._empty, self._done))
        writer.int("in_pass", self._input is not None)
        if self._input is not None:
            writer.save_input("", self._input, self._dataset._input)

    def restore(self, reader):
        passes, empty, done = reader.ints("passes_empty_done", 3).tolist()
        count = self._dataset._count
        if passes < 0 or 0 <= count < passes:
            raise _not_found(reader.prefix, "saved passes %d of %d" % (passes, count))
        self._passes, self._empty, self._done = passes, bool(empty), bool(done)
        if self._input is not None:
            self._input.close()
        self._input = None
        if reader.int("in_pass"):
            self._input = self._dataset._input._elements()
            reader.restore_input("", self._input, self._dataset._input)


class _TakeIterator(UnaryIterator):
    __slots__ = ("_taken",)
    _op = "Take"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._taken = 0

    def __next__(self):
        count = self._dataset._count
        if 0 <= count <= self._taken:
            raise StopIteration
        element = next(self._input)
        self._taken += 1
        return element

    def _save(self, writer):
        writer.int("taken", self._taken)

    def _restore(self, reader):
        count = self._dataset._count
        self._taken = reader.count("taken", count if count >= 0 else None)


class _SkipIterator(UnaryIterator):
    __slots__ = ("_skipped",)
    _op = "Skip"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._skipped = 0

    def __next__(self):
        count = self._dataset._count
        if count < 0:
            for _ in self._input:  # TF skips the whole input, reading it
                pass
            raise StopIteration
        while self._skipped < count:
            next(self._input)
            self._skipped += 1
        return next(self._input)

    def _save(self, writer):
        writer.int("skipped", self._skipped)

    def _restore(self, reader):
        self._skipped = reader.count("skipped", max(0, self._dataset._count))


class _ShardIterator(UnaryIterator):
    __slots__ = ("_position",)
    _op = "Shard"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._position = 0  # place in the input of the next element read

    def __next__(self):
        num, index = self._dataset._num, self._dataset._index
        while True:
            element = next(self._input)
            self._position += 1
            if (self._position - 1) % num == index:
                return element

    def _save(self, writer):
        writer.int("position", self._position)

    def _restore(self, reader):
        self._position = reader.count("position")


class _EnumerateIterator(UnaryIterator):
    __slots__ = ("_position",)
    _op = "Enumerate"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._position = dataset._start

    def __next__(self):
        element = next(self._input)
        self._position += 1
        return structure.wrap_array(np.array(self._position - 1, np.int64)), element

    def _save(self, writer):
        writer.int("position", self._position)

    def _restore(self, reader):
        self._position = reader.int("position")


class _AssertCardinalityIterator(UnaryIterator):
    __slots__ = ("_count",)
    _op = "AssertCardinality"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._count = 0

    def __next__(self):
        expected = self._dataset._expected
        try:
            element = next(self._input)
        except StopIteration:
            if expected == INFINITE or 0 <= self._count < expected:
                raise errors.FailedPreconditionError(
                    None, "assert_cardinality", "Input dataset was expected to contain %s "
                    "elements but contained only %d elements."
                    % ("an infinite number of" if expected == INFINITE else expected,
                       self._count)) from None
            raise
        self._count += 1
        if expected >= 0 and self._count > expected:
            raise errors.FailedPreconditionError(
                None, "assert_cardinality", "Input dataset was expected to contain "
                "%d elements but contained at least %d elements." % (expected, self._count))
        return element

    def _save(self, writer):
        writer.int("count", self._count)

    def _restore(self, reader):
        self._count = reader.count("count")
