"""Installs and removes the dispatch and executor hooks shared by the profiler and summaries.

The executor observer is installed while a profiler session records or while
``eagerflow.summary.trace_on`` collects graphs; otherwise the hooks are None and cost nothing
measurable (one global lookup per traced-function call, none per eager op).
"""

from __future__ import annotations

from eagerflow.framework import context
from eagerflow.function import executor as executor_lib
from eagerflow.ops import dispatch

__all__ = ["set_session", "add_graph_collector", "remove_graph_collector", "session"]

_session = None  # the recording profiler session, or None
_collectors = []  # lists that receive each Graph run while summary tracing is on


def session():
    """The active profiler session, or None."""
    return _session


def _observer(executor, args, captures):
    for graphs in _collectors:
        if all(g is not executor.graph for g in graphs):
            graphs.append(executor.graph)
    if _session is not None:
        return _session.run_executor(executor, args, captures)
    return executor._run(args, captures)


def _update():
    executor_lib.set_observer(_observer if (_session is not None or _collectors) else None)


def set_session(sess):
    """Installs (or with None removes) the profiler session's op and executor hooks."""
    global _session
    _session = sess
    dispatch.set_profiler(sess.record_op if sess is not None else None)
    context.state.profiling = sess is not None
    context.state.refresh()
    _update()


def add_graph_collector(graphs):
    """Appends each distinct Graph run by the executor to the list ``graphs``."""
    _collectors.append(graphs)
    _update()


def remove_graph_collector(graphs):
    for k, g in enumerate(_collectors):
        if g is graphs:
            del _collectors[k]
            break
    _update()
