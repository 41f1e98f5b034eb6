"""The replica context (``ReplicaContext``: ``all_reduce``, ``all_gather``, ``merge_call``)
and the reduction kinds (``ReduceOp``) a strategy combines values with.
"""

from __future__ import annotations

import contextlib
import enum


from eagerflow import nest
from eagerflow import variables as variables_lib
from eagerflow.framework import context
from eagerflow.framework import strategy_context
from eagerflow.tensor import Tensor, convert_to_tensor


__all__ = ["ReplicaContext", "ReduceOp", "reduce_op_name"]


class ReduceOp(enum.Enum):
    """How values from replicas combine: ``SUM`` or ``MEAN``."""

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        """The ReduceOp of a VariableAggregation (SUM or MEAN)."""
        mapping = {variables_lib.VariableAggregation.SUM: ReduceOp.SUM,
                   variables_lib.VariableAggregation.MEAN: ReduceOp.MEAN}
        if aggregation not in mapping:
            raise ValueError("Could not convert from `tf.VariableAggregation` %s to "
                             "`tf.distribute.ReduceOp` type" % aggregation)
        return mapping[aggregation]


def reduce_op_name(reduce_op):
    """``"sum"`` or ``"mean"`` from a ReduceOp or its name."""
    if isinstance(reduce_op, ReduceOp):
        return reduce_op.value.lower()
    if isinstance(reduce_op, str) and reduce_op.upper() in ("SUM", "MEAN"):
        return reduce_op.lower()
    raise ValueError("reduce_op must be tf.distribute.ReduceOp.SUM or ReduceOp.MEAN, got %r"
                     % (reduce_op,))


@contextlib.contextmanager
def _device_scope(device):
    if device is None:
        yield
        return
    token = context.push_device_scope(device.spec)
    try:
        yield
    finally:
        context.pop_device_scope(token)


class ReplicaContext:
    """What one replica sees inside ``strategy.run``: its id and the collectives.

    Args:
        strategy: The strategy.
        replica_id_in_sync_group: This replica's global id.
        local_index: This replica's index among this worker's replicas.
        step: The running step (shared by the local replicas of one ``run``).
    """

    def __init__(self, strategy, replica_id_in_sync_group, local_index=0, step=None):
        self._strategy = strategy
        self._replica_id = int(replica_id_in_sync_group)
        self._local_index = local_index
        self._step = step
        self._token = None

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        """This replica's id, ``0 .. num_replicas_in_sync - 1`` (an int32 tensor)."""
        from eagerflow.tensor import constant

        return constant(self._replica_id, dtype="int32")

    @property
    def devices(self):
        device = self._strategy._extended._devices[self._local_index]
        return (device.name,) if device is not None else ()

    def __enter__(self):
        self._token = strategy_context.push(self._strategy, self)
        return self

    def __exit__(self, *exc):
        strategy_context.pop(self._token)
        return False

    def all_reduce(self, reduce_op, value, options=None):
        """Reduces ``value`` (a nested structure of tensors) across all replicas.

        Every replica gets the same result. Eagerly the replicas meet in the strategy's
        communicator; inside ``@function`` each tensor becomes a collective node.

        Example:
            >>> import eagerflow as ef
            >>> ctx = ef.distribute.get_replica_context()
            >>> float(ctx.all_reduce("SUM", ef.constant(2.0)))
            2.0
        """
        op = reduce_op_name(reduce_op)
        flat = nest.flatten(value)
        if not flat:
            return value
        tensors = [_dense_tensor(v) for v in flat]
        out = self._strategy._extended._all_reduce(self, op, tensors)
        return nest.pack_sequence_as(value, out)

    def all_gather(self, value, axis, options=None):
        """Concatenates every replica's ``value`` along ``axis``, in replica order."""
        flat = [_dense_tensor(v) for v in nest.flatten(value)]
        out = [self._strategy._extended._all_gather(self, t, axis) for t in flat]
        return nest.pack_sequence_as(value, out)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Runs ``merge_fn(strategy, *args, **kwargs)`` once, in cross-replica context.

        Every local replica must call it; ``args`` from the replicas arrive regrouped
        (PerReplica where they differ). Each replica gets the result (its own component
        where the result is PerReplica).
        """
        return self._strategy._extended._merge_call(self, merge_fn, tuple(args),
                                                    dict(kwargs or {}))

    def _aggregate_for_write(self, aggregation, variable, value, method):
        """The value a replica-context write to a mirrored variable actually writes."""
        V = variables_lib.VariableAggregation
        t = convert_to_tensor(value, dtype=variable.dtype)
        if self.num_replicas_in_sync == 1:
            return t
        if aggregation is V.ONLY_FIRST_REPLICA:
            return self._strategy._extended._broadcast(self, [t])[0]
        if aggregation is V.MEAN and not t.dtype.is_floating:
            raise ValueError("MEAN aggregation of %s on variable %s needs a floating dtype "
                             "(got %s); use SUM or ONLY_FIRST_REPLICA."
                             % (method, variable.name, t.dtype.name))
        return self.all_reduce("SUM" if aggregation is V.SUM else "MEAN", t)

    def __repr__(self):
        return "<ReplicaContext replica %d of %d>" % (self._replica_id,
                                                      self.num_replicas_in_sync)


def _dense_tensor(value):
    from eagerflow.indexed_slices import IndexedSlices

    if isinstance(value, IndexedSlices):
        return convert_to_tensor(value)
    if getattr(value, "_is_variable", False):
        return value.read_value()
    if isinstance(value, Tensor) or hasattr(value, "_graph"):
        return value
    return convert_to_tensor(value)
