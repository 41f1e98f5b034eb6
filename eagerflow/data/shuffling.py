"""``shuffle``: TF's buffer algorithm, seeded by eagerflow's random-seed rules.

The algorithm: fill a buffer with the first ``buffer_size`` elements; then for each further
input element emit a uniformly chosen buffer element and put the new one in its slot; when
the input ends, emit what is left of the buffer in uniformly random order. With a buffer
at least as large as the dataset every order is equally likely; a buffer of 1 keeps the
order.

Seeds: ``(seed, seed2)`` come from :func:`eagerflow.ops.random.random_stateful.get_seed`
when the dataset is created, as for every random op, so a global
``eagerflow.random.set_seed`` makes the order the same in every fresh program. Without any
seed the pair comes from OS entropy.
Each pass (each ``iter``, each ``repeat`` epoch) draws from ``numpy``'s Philox-backed
``default_rng([seed, seed2, epoch])``, taking the next epoch when its iterator is made (as
TF reads its seed generator at iterator creation); ``reshuffle_each_iteration=False`` pins
the epoch at 0 so every pass has the first pass's order. The numbers are eagerflow's own:
orders are not TF's for the same seed.

The element path and the index-block path of in-memory sources run the same function on the
same number of items with the same generator, so they produce the same order.
"""

from __future__ import annotations

import itertools
import os
import threading

import numpy as np

from eagerflow.data import arguments, rows as rows_lib
from eagerflow.data.dataset import Dataset
from eagerflow.data.iterator_state import StatefulIterator, _not_found
from eagerflow.ops.random import random_stateful

__all__ = ["ShuffleDataset", "BufferShuffle", "buffer_shuffle"]

_DRAW_BLOCK = 1024  # random slot indices drawn per call to the generator
_INDEX_CHUNK = 1024  # positions per index block on the in-memory path


class BufferShuffle:
    """TF's buffer algorithm over the items of ``source``, returning lists of them.

    While streaming it returns lists of up to ``chunk`` items; when the input ends, the
    whole remaining buffer at once. Its state (the buffer, the input items not yet taken,
    the random slots drawn ahead and the generator) can be saved by its owner, which saves
    the source's state beside it.

    Args:
        source: An iterator of lists of items (one element, or a block of positions).
        buffer_size: The number of items held at once (>= 1).
        rng: A ``numpy.random.Generator``.
        chunk: How many streamed items to collect before returning a list.

    Example:
        >>> import numpy as np
        >>> from eagerflow.data.shuffling import BufferShuffle
        >>> rng = np.random.default_rng(0)
        >>> [x for part in BufferShuffle(iter([[0, 1], [2, 3, 4]]), 1, rng, 1) for x in part]
        [0, 1, 2, 3, 4]
    """

    __slots__ = ("source", "buffer_size", "rng", "chunk", "buffer", "pending", "at", "draws",
                 "k", "drained")

    def __init__(self, source, buffer_size, rng, chunk):
        self.source = source
        self.buffer_size = buffer_size
        self.rng = rng
        self.chunk = chunk
        self.buffer, self.draws, self.k = [], [], 0
        self.pending, self.at = [], 0  # input items taken from the source, from ``at`` on
        self.drained = False  # the input ended and the rest was returned

    def __iter__(self):
        return self

    def _refill(self):
        """False at the end of the source."""
        for items in self.source:
            if items:
                self.pending, self.at = items, 0
                return True
        return False

    def __next__(self):
        if self.drained:
            raise StopIteration
        buffer, size, chunk = self.buffer, self.buffer_size, self.chunk
        out = []
        while True:
            if self.at >= len(self.pending) and not self._refill():
                break
            pending, at = self.pending, self.at
            # Streaming: the loop runs over a local list, one slot draw per item.
            while len(buffer) < size and at < len(pending):
                buffer.append(pending[at])
                at += 1
            draws, k = self.draws, self.k
            for item in itertools.islice(pending, at, None):
                if k == len(draws):
                    draws, k = self.rng.integers(0, size, _DRAW_BLOCK).tolist(), 0
                slot = draws[k]
                k += 1
                at += 1
                out.append(buffer[slot])
                buffer[slot] = item
                if len(out) >= chunk:
                    break
            self.draws, self.k, self.at = draws, k, at
            if len(out) >= chunk:
                return out
        if out:
            return out
        self.drained = True
        if buffer:
            self.buffer = []
            return [buffer[j] for j in self.rng.permutation(len(buffer)).tolist()]
        raise StopIteration

    def save(self, writer, save_items):
        writer.int("drained", self.drained)
        writer.ints("draws", self.draws[self.k:])
        writer.rng("rng", self.rng)
        save_items(writer, "buffer", self.buffer)
        save_items(writer, "input", self.pending[self.at:])

    def restore(self, reader, load_items):
        self.drained = bool(reader.int("drained"))
        self.draws, self.k = reader.ints("draws").tolist(), 0
        self.rng = reader.rng("rng")
        self.buffer = load_items(reader, "buffer")
        self.pending, self.at = load_items(reader, "input"), 0
        if len(self.buffer) > self.buffer_size or any(
                not 0 <= d < self.buffer_size for d in self.draws) or (
                not self.drained and self.draws and len(self.buffer) < self.buffer_size):
            raise _not_found(reader.prefix, "the saved buffer does not fit buffer_size %d"
                             % self.buffer_size)


class _Singles:
    """An element iterator as a source of one-element lists."""

    __slots__ = ("it",)

    def __init__(self, it):
        self.it = it

    def __iter__(self):
        return self

    def __next__(self):
        return [next(self.it)]


class _PositionLists:
    """A block stream as a source of lists of positions (chunks of at most 4096)."""

    __slots__ = ("it",)

    def __init__(self, it):
        self.it = it

    def __iter__(self):
        return self

    def __next__(self):
        return rows_lib._as_array(next(self.it)).tolist()


def buffer_shuffle(items, buffer_size, rng, chunk):
    """Yields lists of ``items`` in shuffled order (see :class:`BufferShuffle`).

    Example:
        >>> import numpy as np
        >>> from eagerflow.data.shuffling import buffer_shuffle
        >>> rng = np.random.default_rng(0)
        >>> [x for part in buffer_shuffle(range(5), 1, rng, 1) for x in part]
        [0, 1, 2, 3, 4]
    """
    return BufferShuffle(_Singles(iter(items)), buffer_size, rng, chunk)


def _entropy_seeds():
    words = np.frombuffer(os.urandom(16), np.uint64) >> np.uint64(1)
    return int(words[0]), int(words[1])


class ShuffleDataset(Dataset):
    """``shuffle``: a buffer of ``buffer_size`` elements, a new order per pass.

    The epoch counter (how many passes have drawn an order) belongs to the dataset, as
    TF's seed generator does: every ``iter`` and every ``repeat`` epoch takes the next
    one. A saved iterator stores the counters of every shuffle of its pipeline, so a
    restored pipeline's later passes continue the sequence of orders too.
    """

    def __init__(self, input_dataset, buffer_size, seed, reshuffle_each_iteration):
        super().__init__((input_dataset,))
        self._buffer_size = arguments.positive_int(buffer_size, "buffer_size", "shuffle")
        if seed is not None:
            seed = arguments.as_int(seed, "seed", "shuffle")
        seed, seed2 = random_stateful.get_seed(seed)
        self._seeds = _entropy_seeds() if seed is None else (seed, seed2)
        self._reshuffle = True if reshuffle_each_iteration is None else arguments.as_bool(
            reshuffle_each_iteration, "reshuffle_each_iteration", "shuffle")
        self._epochs = 0
        self._lock = threading.Lock()

    def _next_rng(self):
        epoch = 0
        if self._reshuffle:
            with self._lock:
                epoch, self._epochs = self._epochs, self._epochs + 1
        return np.random.Generator(np.random.Philox(np.random.SeedSequence(
            [self._seeds[0], self._seeds[1], epoch])))

    def _compute_spec(self):
        return self._inputs[0].element_spec

    def _cardinality(self):
        return self._inputs[0]._cardinality()

    def _elements(self):
        rows = self._rows()
        if rows is not None:
            return rows_lib.iterate_elements(rows)
        return _ShuffleIterator(self, self._inputs[0]._elements())

    def _rows(self):
        inner = self._inputs[0]._rows()
        if inner is None:
            return None

        def blocks():
            return _ShuffleBlocks(self, rows_lib.chunked(inner.blocks(), _INDEX_CHUNK),
                                  inner.size)

        return rows_lib.Rows(inner.gather, inner.size, inner.template, blocks)


class _ShuffleIterator(StatefulIterator):
    """The element path: one pass's shuffled elements."""

    __slots__ = ("_dataset", "_input", "_shuffle", "_pending", "_at")
    _op = "Shuffle"

    def __init__(self, dataset, input_iterator):
        self._dataset = dataset
        self._input = input_iterator
        self._pending, self._at = [], 0
        # The order is drawn when the iterator is made, as TF's seed generator is read at
        # iterator creation: ``it1, it2 = iter(ds), iter(ds)`` get epochs 0 and 1 whichever
        # is read first (a restore replaces it).
        self._shuffle = None
        self._start()

    def _start(self):
        self._shuffle = BufferShuffle(self._source(), self._dataset._buffer_size,
                                      self._dataset._next_rng(), self._chunk())

    def _chunk(self):
        return 1

    def _source(self):
        return _Singles(self._input)

    def __next__(self):
        if self._at < len(self._pending):
            self._at += 1
            return self._pending[self._at - 1]
        if self._shuffle is None:
            self._start()
        self._pending, self._at = self._next_items(), 1
        return self._pending[0]

    def _next_items(self):
        return next(self._shuffle)

    def close(self):
        self._input.close()

    def _save_items(self, writer, name, items):
        writer.elements(name, items, "shuffle")

    def _load_items(self, reader, name):
        return reader.elements(name, self._dataset.element_spec)

    def _child_name(self):
        return self._dataset._inputs[0]

    def save(self, writer):
        writer.int("started", self._shuffle is not None)
        if self._shuffle is not None:
            self._save_items(writer, "pending", self._pending[self._at:])
            self._shuffle.save(writer, self._save_items)
        writer.save_input("", self._input, self._child_name())

    def restore(self, reader):
        self._shuffle = None
        self._pending, self._at = [], 0
        if reader.int("started"):
            self._pending = self._load_items(reader, "pending")
            self._shuffle = BufferShuffle(self._source(), self._dataset._buffer_size, None,
                                          self._chunk())
            self._shuffle.restore(reader, self._load_items)
        reader.restore_input("", self._input, self._child_name())


class _ShuffleBlocks(_ShuffleIterator):
    """The in-memory path: shuffled positions, returned as int64 index blocks."""

    __slots__ = ("_size",)

    def __init__(self, dataset, positions, size):
        self._size = size
        super().__init__(dataset, positions)

    def _chunk(self):
        return _INDEX_CHUNK

    def _source(self):
        return _PositionLists(self._input)

    def __next__(self):
        if self._shuffle is None:
            self._start()
        return np.asarray(next(self._shuffle), np.int64)

    def _save_items(self, writer, name, items):
        writer.ints(name, items)

    def _load_items(self, reader, name):
        items = reader.ints(name).tolist()
        if any(not 0 <= p < self._size for p in items):
            raise _not_found(reader.prefix, "saved positions beyond the %d rows" % self._size)
        return items

    def _child_name(self):
        return self._input._op
