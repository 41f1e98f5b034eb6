"""Collectives inside a traced replica step: graph nodes, one per replica and call.

Tracing ``strategy.run`` inside ``@function`` runs each replica's Python once (one at a
time) under that replica's device scope; where a replica all-reduces, this module adds a
``CollectiveReduce`` node (``eagerflow.function.collective``) with the strategy's group, the
replica's rank and an instance key that the same call on every replica shares. When the
function runs, the multi-device executor runs the replicas' partitions concurrently and the
nodes meet at run time, so one trace drives every replica.
"""

from __future__ import annotations

import itertools

from eagerflow.framework import context
from eagerflow.function import collective

__all__ = ["all_reduce", "all_gather", "next_instance"]

_state = context.state
_bases = itertools.count(1)
_unstepped = itertools.count()

_STRIDE = 1 << 20


def new_base():
    """The first instance key of a new traced step (its calls count up from there)."""
    return next(_bases) * _STRIDE


def next_instance(replica):
    """The instance key of this replica's next collective (the same on every replica)."""
    step = replica._step
    if step is None:
        return next(_unstepped)
    k = replica._local_index
    if step.instance_base is None:
        step.instance_base = new_base()
    key = step.instance_base + step.instances[k]
    step.instances[k] += 1
    return key


def _group_of(extended):
    key = getattr(extended, "_collective_key", None)
    if key is None:
        key = extended._collective_key = collective.register_group(
            extended._collective_group())
    return key


def all_reduce(extended, replica, op, tensors):
    """CollectiveReduce of ``tensors`` for ``replica``; returns its symbolic outputs."""
    device = extended._devices[replica._local_index]
    return collective.add_reduce_node(
        _state.trace, tensors, op, _group_of(extended), extended._num_replicas_in_sync,
        replica._replica_id, next_instance(replica), device.name if device else "")


def all_gather(extended, replica, tensor, rows=None):
    """CollectiveGather of ``tensor`` along axis 0 (``rows``: the result's length there,
    where the replicas' lengths differ)."""
    device = extended._devices[replica._local_index]
    return collective.add_gather_node(
        _state.trace, tensor, _group_of(extended), extended._num_replicas_in_sync,
        replica._replica_id, next_instance(replica), device.name if device else "", rows)
