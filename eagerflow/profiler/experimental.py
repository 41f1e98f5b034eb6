"""``eagerflow.profiler.experimental``: start/stop a profile, ``Profile`` and ``Trace`` scopes.

While profiling, every eager op of the profiling thread is timed (wall time, device, input
shapes and dtypes), and every call of a traced function runs its graph one step at a time so
each step is timed too (slower than the generated code: profile to find hot ops, not to
measure the fastest absolute time). ``stop`` writes
``<logdir>/plugins/profile/<run>/trace.json`` in the Chrome trace format (open it in
chrome://tracing or https://ui.perfetto.dev) and prints the top ops by total time.

Example:
    >>> import tempfile, eagerflow as ef
    >>> logdir = tempfile.mkdtemp()
    >>> with ef.profiler.experimental.Profile(logdir, options=ef.profiler.experimental.
    ...         ProfilerOptions(verbose=0)):
    ...     y = ef.add(ef.ones([4]), 1.0)
"""

from __future__ import annotations

import collections
import os
import sys
import time

from eagerflow import errors
from eagerflow.profiler import hooks
from eagerflow.profiler.session import Session, dumps, format_summary, write_atomic

__all__ = ["start", "stop", "Profile", "Trace", "ProfilerOptions", "server"]

ProfilerOptions = collections.namedtuple(
    "ProfilerOptions", ["host_tracer_level", "python_tracer_level", "device_tracer_level",
                        "delay_ms", "verbose", "top"])
ProfilerOptions.__new__.__defaults__ = (2, 0, 1, None, 1, 20)
ProfilerOptions.__doc__ = """Options of a profile (TF's fields, plus eagerflow's two).

Args:
    host_tracer_level: Accepted for TF compatibility (ops are always traced).
    python_tracer_level: Accepted for TF compatibility.
    device_tracer_level: Accepted for TF compatibility.
    delay_ms: Accepted for TF compatibility.
    verbose: 1 prints the summary table on ``stop`` (default), 0 prints nothing.
    top: Rows of the summary table (default 20).
"""

_options = None
last_summary = None  # rows of the last stopped profile: (op, calls, total_ms, mean_us, %)
last_trace_path = None


def start(logdir, options=None):
    """Starts profiling the ops of this thread and the graphs it runs.

    Args:
        logdir: Directory the trace is written under when the profile stops.
        options: Optional ``ProfilerOptions``.

    Raises:
        eagerflow.errors.AlreadyExistsError: A profile is already running.

    Example:
        >>> import tempfile, eagerflow as ef
        >>> opts = ef.profiler.experimental.ProfilerOptions(verbose=0)
        >>> ef.profiler.experimental.start(tempfile.mkdtemp(), opts)
        >>> _ = ef.multiply(ef.ones([2]), 3.0)
        >>> ef.profiler.experimental.stop(save=False)
    """
    global _options
    if hooks.session() is not None:
        raise errors.AlreadyExistsError(
            None, None, "Another profiler is running: call eagerflow.profiler.experimental."
            "stop() before starting a new one.")
    if options is not None and not isinstance(options, ProfilerOptions):
        raise ValueError("start: options must be a ProfilerOptions, got %r." % (options,))
    _options = options or ProfilerOptions()
    hooks.set_session(Session(os.fspath(logdir) if logdir is not None else None))


def stop(save=True):
    """Stops the profile, writes its trace and prints the top ops by total time.

    Args:
        save: False drops the trace instead of writing it (eagerflow extension).

    Returns:
        None. The summary rows are kept in ``last_summary`` and the trace's path in
        ``last_trace_path``.

    Raises:
        eagerflow.errors.UnavailableError: No profile is running.
    """
    global last_summary, last_trace_path
    sess = hooks.session()
    if sess is None:
        raise errors.UnavailableError(
            None, None, "Cannot export profiling results. No profiler is running: call "
            "eagerflow.profiler.experimental.start(logdir) first.")
    hooks.set_session(None)
    options = _options or ProfilerOptions()
    last_summary = sess.summary(options.top)
    last_trace_path = None
    if save and sess.logdir is not None:
        last_trace_path = export(sess, sess.logdir)
    if options.verbose:
        print(format_summary(last_summary), file=sys.stdout)


def export(sess, logdir):
    """Writes a session's Chrome trace under ``logdir``; returns the file's path."""
    run = time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime(sess.wall_start))
    path = os.path.join(logdir, "plugins", "profile", run, "trace.json")
    write_atomic(path, dumps(sess.chrome_trace()))
    return path


class Profile:
    """Profiles the block: ``start(logdir, options)`` on entry, ``stop()`` on exit.

    Args:
        logdir: Directory of the trace.
        options: Optional ``ProfilerOptions``.

    Example:
        >>> import tempfile, eagerflow as ef
        >>> with ef.profiler.experimental.Profile(
        ...         tempfile.mkdtemp(), ef.profiler.experimental.ProfilerOptions(verbose=0)):
        ...     _ = ef.square(ef.ones([3]))
    """

    def __init__(self, logdir, options=None):
        self._logdir = logdir
        self._options = options

    def __enter__(self):
        start(self._logdir, self._options)
        return self

    def __exit__(self, *exc):
        stop()


class Trace:
    """Marks a span (a training step, a phase) in the profile; free when not profiling.

    Args:
        name: The span's name in the trace viewer.
        **kwargs: Shown as the span's arguments (``step_num=3``, ``_r=1`` as in TF).

    Example:
        >>> import eagerflow as ef
        >>> with ef.profiler.experimental.Trace("train", step_num=1):
        ...     _ = ef.ones([2])
    """

    def __init__(self, name, **kwargs):
        self._name = name
        self._args = kwargs
        self._start = None

    def __enter__(self):
        if hooks.session() is not None:
            self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        sess = hooks.session()
        if sess is not None and self._start is not None:
            sess.add(self._name, "trace", self._start, time.perf_counter_ns() - self._start,
                     "/job:localhost/replica:0/task:0/device:CPU:0",
                     {k: str(v) for k, v in self._args.items()})
        self._start = None


class _Server:
    @staticmethod
    def start(port):
        raise errors.UnimplementedError(
            None, None, "eagerflow.profiler.experimental.server.start: remote profiling is "
            "not supported; use start(logdir)/stop() in the process instead.")


server = _Server()
