"""``prefetch``: producing elements ahead of the consumer on a background thread.

The producer thread runs the input pass and puts its elements into a bounded queue; the
consumer takes them out. The rules that keep it from hanging:

* an exception in the producer is put into the queue and raised in the consumer;
* when the consumer stops early (``break``, ``close()``, the iterator garbage-collected),
  it sets a stop flag and empties the queue, so a producer blocked on a full queue wakes up,
  sees the flag and ends, closing its input pass on its own thread (a generator must be
  closed by the thread running it);
* the producer never waits on the queue without a timeout, so it also notices the flag
  while the queue stays full, and it is a daemon thread, so a producer stuck inside slow
  user code cannot keep the program from exiting.

The producer holds references only to the input pass, the queue and the flags, never to
the consumer, so dropping the consumer's iterator really ends the pass.

Saving the position (``tf.train.Checkpoint(iterator=...)``) asks the producer to park
between two elements (it checks the request before each element and on every queue
timeout, so a wait lasts at most the time to make one element), moves what it made ahead
into the iterator's own buffer, saves that buffer and the input pass, and lets the producer
go on. A restored iterator returns the saved buffer first.
"""

from __future__ import annotations

import collections
import queue
import threading

from eagerflow import errors
from eagerflow.data import arguments
from eagerflow.data.dataset import Dataset
from eagerflow.data.iterator_state import StatefulIterator

__all__ = ["PrefetchDataset", "BackgroundIterator", "background"]

# AUTOTUNE: TF tunes the buffer at run time; a few elements cover the usual case of
# overlapping one training step with the preparation of the next.
_AUTOTUNE_BUFFER = 4
_POLL_S = 0.1


class _End:
    pass


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


_END = _End()


class _Control:
    """What the consumer and a parked producer share while a position is saved."""

    __slots__ = ("cond", "request", "parked", "pending")

    def __init__(self):
        self.cond = threading.Condition()
        self.request = False  # the consumer asks the producer to park
        self.parked = False
        self.pending = None  # (item,) the producer held when it parked; None once taken


def _park(control, stop, item, holding):
    """Parks the producer while the consumer saves; True if the held item was taken."""
    with control.cond:
        if not control.request:
            return False
        control.pending = (item,) if holding else None
        control.parked = True
        control.cond.notify_all()
        while control.request and not stop.is_set():
            control.cond.wait(_POLL_S)
        control.parked = False
        taken = holding and control.pending is None
        control.pending = None
        return taken


def _produce(source, out, stop, control):
    """The producer thread: runs one input pass into ``out`` until done or stopped."""
    def put(item):
        while not stop.is_set():
            if control.request and _park(control, stop, item, True):
                return True  # the consumer took it while saving
            try:
                out.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    try:
        while True:  # put() returns False once stop is set
            if control.request:
                _park(control, stop, None, False)
            try:
                element = next(source)
            except StopIteration:
                put(_END)
                return
            if not put(element):
                return
    except BaseException as exc:  # noqa: BLE001 - handed to the consumer
        put(_Failure(exc))
    finally:
        source.close()


class BackgroundIterator(StatefulIterator):
    """Runs ``source`` (an iterator) on a daemon thread, up to ``buffer_size`` ahead.

    Saving parks the producer between two elements, stores the elements produced ahead
    (TF saves its prefetch buffer too) and the source's state, and lets it go on.

    Args:
        source: The input iterator (a pass of the input dataset).
        buffer_size: The most items produced ahead of the consumer (>= 1).
        name: The thread's name.
        dataset: The input dataset (names the source in saved state).
    """

    __slots__ = ("_source", "_buffer_size", "_name", "_dataset", "_spec", "_ready", "_end",
                 "_queue", "_stop", "_control", "_thread", "__weakref__")
    _op = "Prefetch"

    def __init__(self, source, buffer_size, name, dataset):
        self._source = source
        self._buffer_size = buffer_size
        self._name = name
        self._dataset = dataset
        self._ready = collections.deque()  # produced ahead, then saved and restored
        self._end = False  # the source is exhausted once _ready is empty
        self._queue = self._thread = None
        self._stop = threading.Event()
        self._control = _Control()

    def _start(self):
        self._queue = queue.Queue(maxsize=self._buffer_size)
        # The thread holds the source, the queue and the flags, never this object, so
        # dropping the consumer's iterator really ends the pass.
        self._thread = threading.Thread(
            target=_produce, args=(self._source, self._queue, self._stop, self._control),
            name=self._name, daemon=True)
        self._thread.start()

    def __next__(self):
        if self._ready:
            return self._ready.popleft()
        if self._end:
            raise StopIteration
        if self._thread is None:
            self._start()
        item = self._queue.get()
        if item is _END:
            self._end = True
            raise StopIteration
        if type(item) is _Failure:
            self._end = True
            raise item.error
        return item

    def close(self):
        self._stop.set()
        if self._thread is None:
            self._source.close()
            return
        # Unblock a producer waiting on a full queue; it then sees ``stop`` and ends.
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass

    def __del__(self):
        self.close()

    def _drain(self):
        """Moves what the producer made ahead into ``_ready`` (the producer is parked)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _END:
                self._end = True
                break
            if type(item) is _Failure:
                self._end = True
                raise item.error
            self._ready.append(item)
        pending = self._control.pending
        if pending is not None:
            self._ready.append(pending[0])
            self._control.pending = None

    def save(self, writer):
        control = self._control
        if self._thread is None:
            self._save_fields(writer)
            return
        with control.cond:
            control.request = True
            try:
                while not control.parked and self._thread.is_alive():
                    control.cond.wait(_POLL_S)
                self._drain()
                self._save_fields(writer)
            finally:
                control.request = False
                control.cond.notify_all()

    def _save_fields(self, writer):
        writer.elements("buffer", list(self._ready), "prefetch")
        writer.int("end", self._end)
        writer.save_input("", self._source, self._dataset)

    def restore(self, reader):
        self._ready = collections.deque(reader.elements("buffer", self._dataset.element_spec))
        self._end = bool(reader.int("end"))
        reader.restore_input("", self._source, self._dataset)


def background(start_pass, buffer_size, name="eagerflow-data-prefetch", dataset=None):
    """Runs ``start_pass()`` (an iterator factory) on a daemon thread; yields its items.

    Args:
        start_pass: Callable returning the iterator to run.
        buffer_size: The most items produced ahead of the consumer (>= 1).
        name: The thread's name.
        dataset: The dataset ``start_pass`` iterates (for saving positions).

    Returns:
        A :class:`BackgroundIterator`; the producer's exception is raised by ``next``.

    Example:
        >>> from eagerflow.data.prefetching import background
        >>> list(background(lambda: (i * i for i in range(4)), buffer_size=2))
        [0, 1, 4, 9]
    """
    return BackgroundIterator(start_pass(), buffer_size, name, dataset)


class PrefetchDataset(Dataset):
    """``prefetch``: the input's elements, produced ahead on a background thread."""

    def __init__(self, input_dataset, buffer_size):
        super().__init__((input_dataset,))
        size = arguments.as_int(buffer_size, "buffer_size", "prefetch")
        if size == arguments.AUTOTUNE:
            size = _AUTOTUNE_BUFFER
        elif size < 0:
            raise errors.InvalidArgumentError(
                None, "prefetch", "Dataset.prefetch: `buffer_size` must be >= 0 or "
                "tf.data.AUTOTUNE (-1), got %d." % size)
        self._buffer_size = size

    def _compute_spec(self):
        return self._inputs[0].element_spec

    def _cardinality(self):
        return self._inputs[0]._cardinality()

    def _elements(self):
        if self._buffer_size == 0:
            return self._inputs[0]._elements()
        return background(self._inputs[0]._elements, self._buffer_size,
                          dataset=self._inputs[0])

