"""Which distribution strategy is active on this thread, for the layers below distribute.

A strategy's ``scope()`` and its replica threads push ``(strategy, replica_context)``
entries here; ``eagerflow.distribute`` owns the strategies, and code below it (Keras
models and optimizers, ``nn.compute_average_loss``) asks this module, so nothing below L6
imports ``eagerflow.distribute``. Outside every scope ``current()`` is None, which callers
read as the default strategy: one replica, no aggregation.

The entries are duck-typed: a strategy has ``num_replicas_in_sync``, ``run``, ``reduce``,
``experimental_distribute_dataset`` and ``extended``; a replica context has
``num_replicas_in_sync``, ``replica_id_in_sync_group`` and ``all_reduce``.

Example:
    >>> from eagerflow.framework import strategy_context
    >>> strategy_context.current() is None
    True
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["current", "current_strategy", "current_replica_context", "push", "pop",
           "num_replicas_in_sync", "local_updates", "in_local_updates"]


class _Stack(threading.local):
    entries = ()  # (strategy, replica context or None) tuples, innermost last
    local_updates = False


_stack = _Stack()


def current():
    """The innermost ``(strategy, replica_context)`` on this thread, or None.

    ``replica_context`` is None in a strategy's cross-replica context (directly inside
    ``scope()``, or inside a ``merge_call``).
    """
    entries = _stack.entries
    return entries[-1] if entries else None


def current_strategy():
    """The strategy of the innermost scope on this thread, or None (the default)."""
    entries = _stack.entries
    return entries[-1][0] if entries else None


def current_replica_context():
    """The replica context of this thread, or None (cross-replica, or no strategy)."""
    entries = _stack.entries
    return entries[-1][1] if entries else None


def num_replicas_in_sync():
    """Replicas of the active strategy (1 outside any scope)."""
    entries = _stack.entries
    return entries[-1][0].num_replicas_in_sync if entries else 1


def push(strategy, replica_context):
    """Enters ``(strategy, replica_context)`` on this thread; returns a token for pop."""
    previous = _stack.entries
    _stack.entries = previous + ((strategy, replica_context),)
    return previous


def pop(token):
    """Leaves the entry ``push`` returned ``token`` for."""
    _stack.entries = token


def snapshot():
    """This thread's entries, to install on a helper thread with ``restore``."""
    return _stack.entries


def restore(entries):
    """Replaces this thread's entries (a replica thread starting a caller's step)."""
    previous = _stack.entries
    _stack.entries = entries
    return previous


def in_local_updates():
    """True inside ``local_updates()`` on this thread."""
    return _stack.local_updates


@contextlib.contextmanager
def local_updates():
    """Writes to mirrored variables in replica context go to this replica's copy only.

    For code whose replicas all compute the same update from already all-reduced values
    (an optimizer's step): the copies stay identical without a collective per write, as
    TF's ``StrategyExtended.update`` does.
    """
    previous = _stack.local_updates
    _stack.local_updates = True
    try:
        yield
    finally:
        _stack.local_updates = previous


@contextlib.contextmanager
def no_local_updates():
    """Leaves ``local_updates`` for the block (a merge call's cross-replica code)."""
    previous = _stack.local_updates
    _stack.local_updates = False
    try:
        yield
    finally:
        _stack.local_updates = previous
