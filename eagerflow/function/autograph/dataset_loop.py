"""``for element in dataset`` inside a traced function: a graph loop over a fresh iterator.

As in TF, each run of the graph iterates the dataset anew, when the graph runs (not at
trace time). The loop is the same ``while_loop`` as a ``for`` over a tensor; its elements
come from three ``PyFunction`` nodes on a per-run iterator: one starts a pass and returns
its handle, the loop's condition asks for the next element (False at the end), and the
body takes it, with the static shapes of ``dataset.element_spec``. A final node closes the
pass (also after a ``break``). Because these nodes run Python, such a graph cannot be
serialized (serialization says so).
"""

from __future__ import annotations

import itertools
import threading

from eagerflow import dtypes as d
from eagerflow import nest

__all__ = ["for_dataset", "reduce_dataset"]

_PASSES = {}  # handle -> [iterator, pending element]
_HANDLES = itertools.count(1)
_LOCK = threading.Lock()


class _DatasetSource:
    """Elements of ``dataset`` for ``operators._tf_loop``, read when the graph runs."""

    def __init__(self, dataset):
        from eagerflow.function.py_function import py_function

        self.dataset = dataset
        self.spec = dataset.element_spec
        self.flat_spec = nest.flatten(self.spec)

        def start():
            # Runs when the graph runs (eagerly): the dataset's own __iter__ starts a pass,
            # so this layer needs no import of the data library.
            with _LOCK:
                handle = next(_HANDLES)
                _PASSES[handle] = [iter(dataset), None]
            return handle

        self.handle = py_function(start, [], Tout=d.int64)

    def more(self, counter):
        from eagerflow.function.py_function import py_function

        def fetch(handle):
            entry = _PASSES.get(int(handle))
            if entry is None:
                return False
            try:
                entry[1] = next(entry[0])
            except StopIteration:
                _close(int(handle))
                return False
            return True

        return py_function(fetch, [self.handle], Tout=d.bool)

    def at(self, counter):
        from eagerflow.function.py_function import py_function

        def take(handle):
            return nest.flatten(_PASSES[int(handle)][1])

        flat = py_function(take, [self.handle], Tout=[s.dtype for s in self.flat_spec])
        for t, s in zip(flat, self.flat_spec):
            t.set_shape(s.shape)
        return nest.pack_sequence_as(self.spec, flat)

    def finish(self, counter):
        from eagerflow.function.py_function import py_function

        def close(handle, _):
            _close(int(handle))
            return []

        py_function(close, [self.handle, counter], Tout=[])


def _close(handle):
    with _LOCK:
        entry = _PASSES.pop(handle, None)
    if entry is not None:
        try:
            entry[0].close()
        except Exception:  # noqa: BLE001 - closing a finished pass is best effort
            pass


def for_dataset(dataset, extra_test, body, get_state, set_state, names, loop_vars, opts):
    """Runs a converted ``for`` over ``dataset`` as a graph loop."""
    from eagerflow.function.autograph import operators

    operators._tf_loop(None, extra_test, body, get_state, set_state, names, loop_vars, opts,
                       _DatasetSource(dataset))


def reduce_dataset(dataset, state, step):
    """``dataset.reduce`` inside a traced function: the same graph loop, whose one loop
    variable is the state (``state = step(state, element)``)."""
    box = list(nest.flatten(state))  # one loop variable per tensor of the state

    def body(element):
        box[:] = nest.flatten(step(nest.pack_sequence_as(state, box), element))

    def get_state():
        return tuple(box)

    def set_state(values):
        box[:] = list(values)

    names = tuple("state_%d" % k for k in range(len(box)))
    for_dataset(dataset, None, body, get_state, set_state, names, tuple(range(len(box))), {})
    return nest.pack_sequence_as(state, box)
