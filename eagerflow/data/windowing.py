"""``window``: groups of elements as small datasets (TF's nested datasets).

Each output element has the input's structure with every component replaced by a Dataset of
that component's values in the window, so ``window(n).flat_map(lambda w: w.batch(n))``
turns windows back into tensors. Windows start every ``shift`` elements and take every
``stride``-th element, ``size`` of them; without ``drop_remainder`` the last windows may be
shorter.
"""

from __future__ import annotations

import collections
from contextlib import closing

from eagerflow.data import arguments, structure
from eagerflow.data.arguments import INFINITE, UNKNOWN
from eagerflow.data.dataset import Dataset

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
        size, shift, stride = self._size, self._shift, self._stride
        span = (size - 1) * stride + 1
        leaf_specs = structure.flatten(self._inputs[0].element_spec)
        buffer, base, start, exhausted = collections.deque(), 0, 0, False
        with closing(self._inputs[0]._elements()) as iterator:
            while True:
                while not exhausted and base + len(buffer) < start + span:
                    element = next(iterator, _END)
                    if element is _END:
                        exhausted = True
                    else:
                        buffer.append(element)
                while buffer and base < start:  # elements between windows (shift > span)
                    buffer.popleft()
                    base += 1
                if base < start or not buffer:
                    return
                members = [buffer[i] for i in range(0, min(span, len(buffer)), stride)]
                if len(members) < size and self._drop:
                    return
                columns = zip(*[structure.flatten(m) for m in members])
                pack = structure.packer(members[0])
                yield pack([ElementsDataset(list(column), spec)
                            for column, spec in zip(columns, leaf_specs)])
                start += shift
