"""``window``: groups of elements as small datasets (TF's nested datasets).

Each output element has the input's structure with every component replaced by a Dataset of
that component's values in the window, so ``window(n).flat_map(lambda w: w.batch(n))``
turns windows back into tensors. Windows start every ``shift`` elements and take every
``stride``-th element, ``size`` of them; without ``drop_remainder`` the last windows may be
shorter.
"""

from __future__ import annotations

import collections

from eagerflow.data import arguments, structure
from eagerflow.data.arguments import INFINITE, UNKNOWN
from eagerflow.data.dataset import Dataset
from eagerflow.data.iterator_state import UnaryIterator, _not_found

__all__ = ["WindowDataset", "ElementsDataset"]

_END = object()


class ElementsDataset(Dataset):
    """A dataset over a list of elements already in memory, with a given spec."""

    def __init__(self, elements, spec):
        super().__init__()
        self._items = elements
        self._spec = spec

    def _cardinality(self):
        return len(self._items)

    def _elements(self):
        from eagerflow.data.sources import IndexIterator

        return IndexIterator(len(self._items), self._items.__getitem__)


class WindowDataset(Dataset):
    """``window``: per window, a structure of datasets (one per component)."""

    def __init__(self, input_dataset, size, shift, stride, drop_remainder):
        super().__init__((input_dataset,))
        self._size = arguments.positive_int(size, "size", "window")
        self._shift = self._size if shift is None else arguments.positive_int(
            shift, "shift", "window")
        self._stride = arguments.positive_int(stride, "stride", "window")
        self._drop = arguments.as_bool(drop_remainder, "drop_remainder", "window")

    def _compute_spec(self):
        return structure.map_structure(structure.DatasetSpec, self._inputs[0].element_spec)

    def _cardinality(self):
        n = self._inputs[0]._cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        if self._drop:
            rest = n - ((self._size - 1) * self._stride + 1)
            return 0 if rest < 0 else rest // self._shift + 1
        return -(-n // self._shift)

    def _elements(self):
        return _WindowIterator(self)


class _WindowIterator(UnaryIterator):
    """Saves the input elements it holds for the next windows and where they start."""

    __slots__ = ("_buffer", "_base", "_start", "_exhausted", "_done")
    _op = "Window"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._buffer = collections.deque()
        self._base = self._start = 0  # input positions of buffer[0] and the next window
        self._exhausted = self._done = False

    def __next__(self):
        dataset = self._dataset
        size, shift, stride = dataset._size, dataset._shift, dataset._stride
        span = (size - 1) * stride + 1
        buffer = self._buffer
        if self._done:
            raise StopIteration
        while not self._exhausted and self._base + len(buffer) < self._start + span:
            element = next(self._input, _END)
            if element is _END:
                self._exhausted = True
            else:
                buffer.append(element)
        while buffer and self._base < self._start:  # elements between windows (shift > span)
            buffer.popleft()
            self._base += 1
        if self._base < self._start or not buffer:
            self._done = True
            raise StopIteration
        members = [buffer[i] for i in range(0, min(span, len(buffer)), stride)]
        if len(members) < size and dataset._drop:
            self._done = True
            raise StopIteration
        columns = zip(*[structure.flatten(m) for m in members])
        pack = structure.packer(members[0])
        leaf_specs = structure.flatten(dataset._inputs[0].element_spec)
        self._start += shift
        return pack([ElementsDataset(list(column), spec)
                     for column, spec in zip(columns, leaf_specs)])

    def _save(self, writer):
        writer.ints("position", (self._base, self._start, self._exhausted, self._done))
        writer.elements("buffer", list(self._buffer), "window")

    def _restore(self, reader):
        base, start, exhausted, done = reader.ints("position", 4).tolist()
        if base < 0 or start < 0:
            raise _not_found(reader.prefix, "negative saved window positions")
        self._base, self._start = base, start
        self._exhausted, self._done = bool(exhausted), bool(done)
        self._buffer = collections.deque(
            reader.elements("buffer", self._dataset._inputs[0].element_spec))
