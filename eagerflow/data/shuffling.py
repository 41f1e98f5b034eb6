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
``default_rng([seed, seed2, epoch])``; ``reshuffle_each_iteration=False`` pins the epoch at 0
so every pass has the first pass's order. The numbers are eagerflow's own: orders are not
TF's for the same seed.

The element path and the index-block path of in-memory sources run the same function on the
same number of items with the same generator, so they produce the same order.
"""

from __future__ import annotations

import itertools
import os
from contextlib import closing

import numpy as np

from eagerflow.data import arguments, rows as rows_lib
from eagerflow.data.dataset import Dataset
from eagerflow.ops.random import random_stateful

__all__ = ["ShuffleDataset", "buffer_shuffle"]

_DRAW_BLOCK = 1024  # random slot indices drawn per call to the generator
_INDEX_CHUNK = 1024  # positions per index block on the in-memory path


def buffer_shuffle(items, buffer_size, rng, chunk):
    """Yields lists of ``items`` in shuffled order (lists of up to ``chunk`` items while
    streaming, then the whole remaining buffer at the end).

    Args:
        items: Any iterable.
        buffer_size: The number of items held at once (>= 1).
        rng: A ``numpy.random.Generator``.
        chunk: How many streamed items to collect before yielding a list.

    Example:
        >>> import numpy as np
        >>> from eagerflow.data.shuffling import buffer_shuffle
        >>> rng = np.random.default_rng(0)
        >>> [x for part in buffer_shuffle(range(5), 1, rng, 1) for x in part]
        [0, 1, 2, 3, 4]
    """
    items = iter(items)
    buffer = list(itertools.islice(items, buffer_size))
    draws, k, out = [], 0, []
    for item in items:
        if k == len(draws):
            draws, k = rng.integers(0, buffer_size, _DRAW_BLOCK).tolist(), 0
        slot = draws[k]
        k += 1
        out.append(buffer[slot])
        buffer[slot] = item
        if len(out) >= chunk:
            yield out
            out = []
    if out:
        yield out
    if buffer:
        yield [buffer[j] for j in rng.permutation(len(buffer)).tolist()]


def _entropy_seeds():
    words = np.frombuffer(os.urandom(16), np.uint64) >> np.uint64(1)
    return int(words[0]), int(words[1])


class ShuffleDataset(Dataset):
    """``shuffle``: a buffer of ``buffer_size`` elements, a new order per pass."""

    def __init__(self, input_dataset, buffer_size, seed, reshuffle_each_iteration):
        super().__init__((input_dataset,))
        self._buffer_size = arguments.positive_int(buffer_size, "buffer_size", "shuffle")
        if seed is not None:
            seed = arguments.as_int(seed, "seed", "shuffle")
        seed, seed2 = random_stateful.get_seed(seed)
        self._seeds = _entropy_seeds() if seed is None else (seed, seed2)
        self._reshuffle = True if reshuffle_each_iteration is None else arguments.as_bool(
            reshuffle_each_iteration, "reshuffle_each_iteration", "shuffle")
        self._epochs = itertools.count()

    def _next_rng(self):
        epoch = next(self._epochs) if self._reshuffle else 0
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
        return self._shuffled()

    def _shuffled(self):
        rng = self._next_rng()
        with closing(self._inputs[0]._elements()) as iterator:
            for chunk in buffer_shuffle(iterator, self._buffer_size, rng, 1):
                yield from chunk

    def _rows(self):
        inner = self._inputs[0]._rows()
        if inner is None:
            return None

        def blocks():
            rng = self._next_rng()
            positions = rows_lib.stream_positions(inner.blocks())
            for chunk in buffer_shuffle(positions, self._buffer_size, rng, _INDEX_CHUNK):
                yield np.asarray(chunk, np.int64)

        return rows_lib.Rows(inner.gather, inner.size, inner.template, blocks)
