"""Which worker writes: the chief's file is kept, the others wait (Keras under multi-worker).

Keras never imports ``eagerflow.distribute``; it asks the strategy a model runs under, by
TF's names: ``strategy.extended.should_checkpoint`` (True on the chief, rank 0, and in
every single-process strategy) and, for a multi-worker strategy,
``strategy.extended.barrier(name=...)`` (a barrier with the collective deadline).

Example:
    >>> from eagerflow.framework import worker_context
    >>> worker_context.is_chief(None)
    True
    >>> with worker_context.chief_writes(None, "a file") as write:
    ...     write
    True
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

__all__ = ["is_chief", "chief_writes", "write_path", "multi_worker"]


def _extended(strategy):
    return getattr(strategy, "extended", None)


def multi_worker(strategy):
    """True when ``strategy`` joins several processes."""
    return bool(getattr(_extended(strategy), "_in_multi_worker_mode", False))


def is_chief(strategy):
    """True on the process that writes files, logs and progress (always, without workers)."""
    return bool(getattr(_extended(strategy), "should_checkpoint", True))


@contextlib.contextmanager
def chief_writes(strategy, what):
    """Yields True where the write should happen; afterwards every worker waits for it.

    The chief writes (atomically, as every eagerflow writer does) while the others skip
    straight to the barrier, so when any worker continues the file is complete. The
    barrier is kept even if the write raises, so the others are not left waiting.
    """
    chief = is_chief(strategy)
    try:
        yield chief
    finally:
        if multi_worker(strategy):
            _extended(strategy).barrier(name="after the chief wrote %s" % what)


@contextlib.contextmanager
def write_path(strategy, path):
    """Yields where this worker saves ``path``: the path itself on the chief, a temporary
    path elsewhere (removed afterwards); then every worker waits for the chief.

    Every worker runs the same save code, as TF's workers do: reading some variables
    (on-read synchronized metrics) is a collective that all ranks must join, so the
    others cannot simply skip the save. Only the chief's file is kept.
    """
    if not multi_worker(strategy):
        yield path
        return
    chief = is_chief(strategy)
    scratch = None if chief else tempfile.mkdtemp(prefix="eagerflow-worker-save-")
    try:
        yield path if chief else os.path.join(scratch, os.path.basename(os.fspath(path)))
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        _extended(strategy).barrier(name="after the chief wrote %s" % os.fspath(path))
