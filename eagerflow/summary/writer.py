"""Event files and the writer state that summary ops write through.

A ``SummaryWriter`` appends TFRecord-framed ``Event`` protos to
``<logdir>/events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``; the first event names the
file format version, as TensorBoard expects. Events wait in a queue flushed when it holds
``max_queue`` events, when ``flush_millis`` have passed since the last flush (checked at each
write: there is no background thread), on ``flush()``, and on ``close()``.

The default writer and the default step are per thread, as in TF: ``writer.as_default(step)``
installs both for a ``with`` block; ``set_as_default`` installs them until replaced.

Example:
    >>> import tempfile, eagerflow as ef
    >>> writer = ef.summary.create_file_writer(tempfile.mkdtemp())
    >>> with writer.as_default(step=1):
    ...     ok = ef.summary.scalar("loss", 0.5)
    >>> bool(ok)
    True
    >>> writer.close()
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import time

from eagerflow.summary import records

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "state"]


class _State(threading.local):
    writer = None  # the default SummaryWriter of this thread, or None
    step = None  # the default step (int, Tensor or Variable), or None
    record_if = True  # bool or a callable returning one


state = _State()
_file_counter = itertools.count()


def _pb():
    # Imported on first use so `import eagerflow` does not load protobuf.
    from eagerflow.summary import event_pb2

    return event_pb2


class SummaryWriter:
    """Writes summaries of one run to an event file.

    Create with :func:`create_file_writer`. The file is created by ``init()`` (called on the
    first write), so constructing a writer touches no disk.

    Attributes:
        logdir: The directory of the event file.
        path: The event file's path (None until the file exists).
    """

    def __init__(self, logdir, max_queue=10, flush_millis=120000, filename_suffix=""):
        self.logdir = os.fspath(logdir)
        self._max_queue = max_queue
        self._flush_secs = flush_millis / 1000.0
        self._suffix = filename_suffix
        self._queue = []
        self._file = None
        self._closed = False
        self._last_flush = time.time()
        self._lock = threading.Lock()
        self.path = None

    def init(self):
        """Creates the log directory and the event file (idempotent)."""
        with self._lock:
            self._open()

    def _open(self):
        if self._file is not None:
            return
        if self._closed:
            raise ValueError("SummaryWriter for %r is closed; create a new writer with "
                             "eagerflow.summary.create_file_writer." % self.logdir)
        os.makedirs(self.logdir, exist_ok=True)
        name = "events.out.tfevents.%010d.%s.%d.%d%s" % (
            int(time.time()), socket.gethostname(), os.getpid(), next(_file_counter),
            self._suffix)
        self.path = os.path.join(self.logdir, name)
        self._file = open(self.path, "ab")
        event = _pb().Event(wall_time=time.time(), file_version="brain.Event:2")
        self._file.write(records.frame(event.SerializeToString()))
        self._file.flush()

    def write_event(self, event):
        """Queues one ``Event`` proto; flushes when the queue or the flush interval is full."""
        with self._lock:
            self._open()
            if not event.wall_time:
                event.wall_time = time.time()
            self._queue.append(records.frame(event.SerializeToString()))
            if len(self._queue) >= self._max_queue or \
                    time.time() - self._last_flush >= self._flush_secs:
                self._flush_locked()

    def _flush_locked(self):
        if self._file is not None:
            if self._queue:
                self._file.write(b"".join(self._queue))
                self._queue.clear()
            self._file.flush()
        self._last_flush = time.time()

    def flush(self):
        """Writes queued events to the file."""
        with self._lock:
            self._flush_locked()

    def close(self):
        """Flushes and closes the file; later writes raise ValueError."""
        with self._lock:
            self._flush_locked()
            if self._file is not None:
                self._file.close()
                self._file = None
            self._closed = True
        if state.writer is self:
            state.writer = None

    def set_as_default(self, step=None):
        """Makes this the default writer of the thread (and ``step`` the default step).

        Args:
            step: Optional default step for summary ops called without one.
        """
        state.writer = self
        if step is not None:
            state.step = step

    @contextlib.contextmanager
    def as_default(self, step=None):
        """A context in which summary ops write here (and use ``step`` when given none).

        Args:
            step: Optional default step (int, Tensor or Variable, read at each write).

        Yields:
            This writer.
        """
        old_writer, old_step = state.writer, state.step
        state.writer = self
        if step is not None:
            state.step = step
        try:
            yield self
        finally:
            self.flush()
            state.writer = old_writer
            state.step = old_step

    def __enter__(self):
        # tf.summary writers also work directly as context managers.
        self._ctx = self.as_default()
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class _NoopWriter(SummaryWriter):
    """A writer that drops everything (``create_noop_writer``)."""

    def __init__(self):
        super().__init__(os.devnull)

    def init(self):
        pass

    def write_event(self, event):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None, experimental_trackable=False, experimental_mesh=None):
    """Creates a summary writer for ``logdir``.

    Args:
        logdir: Directory of the event file (created on the first write).
        max_queue: Events queued before a flush (default 10).
        flush_millis: Longest interval between flushes, checked at each write (default
            120000).
        filename_suffix: Appended to the event file name (default "").
        name: Ignored (TF compatibility).
        experimental_trackable: Ignored (TF compatibility).
        experimental_mesh: Ignored (TF compatibility).

    Returns:
        A SummaryWriter.

    Raises:
        ValueError: ``logdir`` is None or empty, or ``max_queue``/``flush_millis`` is
            not positive.

    Example:
        >>> import tempfile, eagerflow as ef
        >>> w = ef.summary.create_file_writer(tempfile.mkdtemp(), max_queue=5)
        >>> w.close()
    """
    del name, experimental_trackable, experimental_mesh
    if logdir is None or not os.fspath(logdir):
        raise ValueError("create_file_writer: logdir must be a directory path, got %r."
                         % (logdir,))
    max_queue = 10 if max_queue is None else int(max_queue)
    flush_millis = 120000 if flush_millis is None else int(flush_millis)
    if max_queue < 1:
        raise ValueError("create_file_writer: max_queue must be >= 1, got %d." % max_queue)
    if flush_millis < 0:
        raise ValueError("create_file_writer: flush_millis must be >= 0, got %d."
                         % flush_millis)
    return SummaryWriter(logdir, max_queue, flush_millis, filename_suffix or "")


def create_noop_writer():
    """A writer that writes nothing (useful to disable summaries in one place).

    Returns:
        A SummaryWriter whose writes are dropped.

    Example:
        >>> import eagerflow as ef
        >>> with ef.summary.create_noop_writer().as_default(step=0):
        ...     _ = ef.summary.scalar("x", 1.0)
    """
    return _NoopWriter()
