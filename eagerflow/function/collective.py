"""Collective graph nodes: an all-reduce or all-gather that runs between graph partitions.

A strategy's replica traced inside ``@function`` emits one ``CollectiveReduce`` (k inputs,
k outputs: every tensor this replica reduces at that point) or ``CollectiveGather`` node,
placed on the replica's device. The node names a *group* (registered here by the strategy
with ``register_group``), its size, this replica's rank and an instance key that matches
the nodes of the same call on the other replicas.

The group decides how the ranks meet. ``LocalGroup`` is for ranks that are partitions of
one multi-device call (MirroredStrategy): each rank Sends its arrays to the others through
the call's rendezvous and Recvs theirs, then reduces in rank order, so every rank computes
the same, deterministic result, and a failing device aborts the waits as for any Recv.
A multi-worker strategy registers a group whose ranks are processes (its communicator).

Example:
    >>> from eagerflow.function import collective
    >>> collective.reduce_arrays([1.0, 2.0, 4.0], "sum")
    7.0
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from eagerflow import errors
from eagerflow.function import builtins
from eagerflow.function import executor as executor_lib
from eagerflow.function import multi_device
from eagerflow.function import rendezvous as rendezvous_lib
from eagerflow.ops.registry import AbstractValue

__all__ = ["register_group", "unregister_group", "LocalGroup", "reduce_arrays",
           "add_reduce_node", "add_gather_node"]

REDUCE_OPS = ("sum", "mean", "max", "min", "prod", "first")

_groups = {}
_keys = itertools.count(1)
_lock = threading.Lock()


def register_group(group):
    """Registers a group implementation; returns its key for node attrs."""
    with _lock:
        key = next(_keys)
        _groups[key] = group
    return key


def unregister_group(key):
    with _lock:
        _groups.pop(key, None)


def _group(key, op):
    group = _groups.get(key)
    if group is None:
        raise errors.FailedPreconditionError(
            None, op, "%s: collective group %d is not registered in this process (the "
            "strategy that traced this function is gone); trace it again under a live "
            "strategy." % (op, key))
    return group


def reduce_arrays(arrays, op):
    """Reduces arrays given in rank order, in that order (``first`` takes rank 0's)."""
    if op == "first":
        return arrays[0]
    acc = arrays[0]
    if len(arrays) == 1:
        return acc
    if op in ("sum", "mean"):
        acc = acc + arrays[1]
        for a in arrays[2:]:
            acc = acc + a
        if op == "mean":
            n = len(arrays)
            acc = acc // n if np.issubdtype(np.asarray(acc).dtype, np.integer) else acc / n
            acc = np.asarray(acc, dtype=np.asarray(arrays[0]).dtype)
        return acc
    fn = {"max": np.maximum, "min": np.minimum, "prod": np.multiply}[op]
    for a in arrays[1:]:
        acc = fn(acc, a)
    return acc


class LocalGroup:
    """Ranks that are the partitions (devices) of one multi-device call.

    Args:
        devices: The Device of each rank, in rank order.
    """

    def __init__(self, devices):
        self.devices = list(devices)
        self.size = len(self.devices)

    def _exchange(self, rank, instance, arrays, what):
        frame = multi_device.current_frame()
        if frame is None:
            raise errors.FailedPreconditionError(
                None, what, "%s ran outside a multi-device call: the replicas of a traced "
                "strategy step must run as one graph across their devices." % what)
        rendezvous, step_id, deadline = frame
        me = self.devices[rank].name
        tag = "collective:%d" % instance
        for j, device in enumerate(self.devices):
            if j != rank:
                rendezvous.send(rendezvous_lib.RendezvousKey(tag, me, device.name, step_id),
                                arrays)
        gathered = []
        for j, device in enumerate(self.devices):
            if j == rank:
                gathered.append(arrays)
            else:
                gathered.append(rendezvous.recv(rendezvous_lib.RendezvousKey(
                    tag, device.name, me, step_id), deadline, me))
        return gathered

    def all_reduce(self, rank, arrays, op, instance):
        gathered = self._exchange(rank, instance, arrays, builtins.COLLECTIVE_REDUCE)
        return [reduce_arrays([g[i] for g in gathered], op) for i in range(len(arrays))]

    def all_gather(self, rank, array, instance):
        gathered = self._exchange(rank, instance, [array], builtins.COLLECTIVE_GATHER)
        return np.concatenate([g[0] for g in gathered], axis=0)


# -- tracing ----------------------------------------------------------------------------------

def add_reduce_node(trace, tensors, op, group_key, group_size, rank, instance, device):
    """Adds a CollectiveReduce node to the trace; returns its symbolic outputs."""
    from eagerflow.function.symbolic import SymbolicTensor

    if op not in REDUCE_OPS:
        raise errors.InvalidArgumentError(None, builtins.COLLECTIVE_REDUCE, "Unknown reduction %r."
                                          % (op,))
    ins = [trace.to_symbolic(t) for t in tensors]
    avals = tuple(AbstractValue(t._node.avals[t._index].shape, t.dtype) for t in ins)
    node = trace.graph.add_node(
        builtins.COLLECTIVE_REDUCE, [(t._node, t._index) for t in ins],
        {"group_key": group_key, "group_size": group_size, "rank": rank,
         "instance_key": instance, "reduce_op": op}, avals, device=device,
        name="collective_reduce", stateful=True)
    return [SymbolicTensor(trace.graph, node, i) for i in range(len(ins))]


def add_gather_node(trace, tensor, group_key, group_size, rank, instance, device,
                    rows=None):
    """Adds a CollectiveGather node (concatenation along axis 0 in rank order).

    ``rows``: the output's first dimension where the ranks' inputs differ in length
    (default: ``group_size`` times this rank's).
    """
    from eagerflow.function.symbolic import SymbolicTensor

    t = trace.to_symbolic(tensor)
    shape = t._node.avals[t._index].shape
    if shape is not None and len(shape):
        first = shape[0] * group_size if shape[0] is not None else None
        first = first if rows is None else int(rows)
        shape = (first,) + tuple(shape[1:])
    node = trace.graph.add_node(
        builtins.COLLECTIVE_GATHER, [(t._node, t._index)],
        {"group_key": group_key, "group_size": group_size, "rank": rank,
         "instance_key": instance}, (AbstractValue(shape, t.dtype),), device=device,
        name="collective_gather", stateful=True)
    return SymbolicTensor(trace.graph, node, 0)


# -- executor steps ---------------------------------------------------------------------------

def _reduce_step(node, device, executor):
    attrs = node.attrs
    key, rank, instance, op = (attrs["group_key"], attrs["rank"], attrs["instance_key"],
                               attrs["reduce_op"])
    several = len(node.inputs) != 1

    def run(*arrays):
        out = _group(key, builtins.COLLECTIVE_REDUCE).all_reduce(rank, list(arrays), op, instance)
        return tuple(out) if several else out[0]

    return run


def _gather_step(node, device, executor):
    attrs = node.attrs
    key, rank, instance = attrs["group_key"], attrs["rank"], attrs["instance_key"]

    def run(array):
        return _group(key, builtins.COLLECTIVE_GATHER).all_gather(rank, array, instance)

    return run


executor_lib.BUILTIN_STEPS[builtins.COLLECTIVE_REDUCE] = _reduce_step
executor_lib.BUILTIN_STEPS[builtins.COLLECTIVE_GATHER] = _gather_step
