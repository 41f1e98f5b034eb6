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

The producer holds references only to the input dataset, the queue and the flag, never to
the consumer, so dropping the consumer's iterator really ends the pass.
"""

from __future__ import annotations

import queue
import threading

from eagerflow import errors
from eagerflow.data import arguments
from eagerflow.data.dataset import Dataset

__all__ = ["PrefetchDataset", "background"]

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


def _produce(start_pass, out, stop):
    """The producer thread: runs one input pass into ``out`` until done or stopped."""
    def put(item):
        while not stop.is_set():
            try:
                out.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    try:
        iterator = start_pass()
    except BaseException as exc:  # noqa: BLE001 - handed to the consumer
        put(_Failure(exc))
        return
    try:
        for element in iterator:
            if not put(element):
                return
        put(_END)
    except BaseException as exc:  # noqa: BLE001 - handed to the consumer
        put(_Failure(exc))
    finally:
        iterator.close()


def background(start_pass, buffer_size, name="eagerflow-data-prefetch"):
    """Runs ``start_pass()`` (a generator factory) on a daemon thread; yields its items.

    Args:
        start_pass: Callable returning the generator to run.
        buffer_size: The most items produced ahead of the consumer (>= 1).
        name: The thread's name.

    Yields:
        The items, in order; the producer's exception is raised here.

    Example:
        >>> from eagerflow.data.prefetching import background
        >>> list(background(lambda: (i * i for i in range(4)), buffer_size=2))
        [0, 1, 4, 9]
    """
    out = queue.Queue(maxsize=buffer_size)
    stop = threading.Event()
    thread = threading.Thread(target=_produce, args=(start_pass, out, stop), name=name,
                              daemon=True)
    thread.start()
    try:
        while True:
            item = out.get()
            if item is _END:
                return
            if type(item) is _Failure:
                raise item.error
            yield item
    finally:
        stop.set()
        # Unblock a producer waiting on a full queue; it then sees ``stop`` and ends.
        try:
            while True:
                out.get_nowait()
        except queue.Empty:
            pass


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
        return background(self._inputs[0]._elements, self._buffer_size)

