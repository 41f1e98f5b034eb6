"""Distributed values: one value per replica, and variables with one copy per device.

``PerReplica`` holds what each replica computed (``strategy.run`` returns one when the
replicas' results differ). ``MirroredVariable`` keeps one identical copy of a variable on
every replica's device and is an ``eagerflow.Variable`` to user code; writes keep the copies
identical (``aggregation`` says how replicas' updates combine). ``SyncOnReadVariable``
(metrics) lets each replica update its own copy freely and aggregates the copies when read
in cross-replica context.

Example:
    >>> from eagerflow.distribute.values import PerReplica
    >>> PerReplica((1.0, 2.0)).values
    (1.0, 2.0)
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.framework import strategy_context
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.variables import Variable, VariableAggregation

__all__ = ["DistributedValues", "PerReplica", "Mirrored", "MirroredVariable",
           "SyncOnReadVariable", "DistributedVariableMixin"]

_state = context.state
_new = object.__new__

# TensorFlow's message, word for word, so answers found for TF apply here too.
NO_AGGREGATION_MESSAGE = (
    "You must specify an aggregation method to update a MirroredVariable in Replica "
    "Context. You can do so by passing an explicit value for argument `aggregation` to "
    "tf.Variable(..).e.g. `tf.Variable(..., aggregation=tf.VariableAggregation.SUM)`"
    "`tf.VariableAggregation` lists the possible aggregation methods.This is required "
    "because MirroredVariable should always be kept in sync. When updating them or "
    "assigning to them in a replica context, we automatically try to aggregate the values "
    "before updating the variable. For this aggregation, we need to know the aggregation "
    "method. Another alternative is to not try to update such MirroredVariable in replica "
    "context, but in cross replica context. You can enter cross replica context by calling "
    "`tf.distribute.get_replica_context().merge_call(merge_fn, ..)`.Inside `merge_fn`, you "
    "can then update the MirroredVariable using `tf.distribute.StrategyExtended.update()`.")


class DistributedValues:
    """A value with one component per local replica (base of PerReplica and Mirrored).

    Args:
        values: The components, in local replica order.
    """

    # Traced functions take these apart into their components and rebuild them (TF's
    # composite tensors); ``nest`` without ``expand_composites`` sees a leaf.
    _nest_composite = True

    def __init__(self, values):
        self._values = tuple(values)

    def _composite_components(self):
        return list(self._values)

    def _from_components(self, components):
        return type(self)(components)

    @property
    def values(self):
        """The components, one per local replica."""
        return self._values

    def _get(self):
        """The component of the current replica (the first in cross-replica context)."""
        ctx = strategy_context.current_replica_context()
        if ctx is None:
            return self._values[0]
        return self._values[ctx._local_index]

    def __repr__(self):
        body = ",\n".join("  %d: %r" % (i, v) for i, v in enumerate(self._values))
        return "%s:{\n%s\n}" % (type(self).__name__, body)


class PerReplica(DistributedValues):
    """What each replica computed: ``values[i]`` belongs to local replica ``i``."""


class Mirrored(DistributedValues):
    """A value that is the same on every replica (one copy per device)."""


def _local_index():
    ctx = strategy_context.current_replica_context()
    return None if ctx is None else ctx._local_index


class DistributedVariableMixin:
    """The parts the distributed variables share: components, reading, and the three
    assignments, each routed through the class's ``_update(method, value, read_value)``."""

    _is_distributed_variable = True

    def assign(self, value, use_locking=None, name=None, read_value=True):
        return self._update("assign", value, read_value)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("assign_add", delta, read_value)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("assign_sub", delta, read_value)

    def _setup(self, strategy, components, aggregation):
        primary = components[0]
        self._distribute_strategy = strategy
        self._components = tuple(components)
        self._primary = primary
        self._tid = context.new_id()
        self._trainable = primary._trainable
        self._name = primary._name
        self._constraint = primary._constraint
        self._synchronization = primary._synchronization
        self._aggregation = VariableAggregation(aggregation)
        self._shape = primary._shape
        self._initial_value = primary._initial_value

    # The array and device internal code reads directly (saving, repr): the copy of the
    # current replica, the primary in cross-replica context.
    @property
    def _value(self):
        return self._component()._value

    @property
    def _device(self):
        return self._component()._device

    def _write(self, array):
        for c in self._components:
            c._write(array)

    def _component(self):
        i = _local_index()
        return self._components[0 if i is None else i]

    @property
    def values(self):
        """The per-device copies, one per local replica."""
        return self._components

    @property
    def primary(self):
        return self._primary

    @property
    def distribute_strategy(self):
        return self._distribute_strategy

    @property
    def device(self):
        return self._component().device

    @property
    def dtype(self):
        return self._primary.dtype

    def _read_component(self, component):
        # The read is recorded under this variable's own id, so
        # ``tape.gradient(loss, mirrored_variable)`` works in every replica.
        st = _state
        if st.trace is None:
            t = _new(Tensor)
            t._value = component._value
            t._device = component._device
            t._tid = 0
        else:
            t = st.trace.read_variable(component)
        if st.tapes:
            context.variable_read_hook(self, t)
        return t

    def numpy(self):
        return self.read_value().numpy()

    def __array__(self, dtype=None, copy=None):
        return self.read_value().__array__(dtype, copy)

    def __deepcopy__(self, memo):
        copy = Variable(self.read_value().numpy(), trainable=self._trainable,
                        name=self._name.split(":")[0], constraint=self._constraint,
                        synchronization=self._synchronization,
                        aggregation=self._aggregation, shape=self._shape)
        memo[id(self)] = copy
        return copy

    def _check_not_traced_per_replica(self, value):
        if isinstance(value, DistributedValues):
            raise errors.InvalidArgumentError(
                None, "assign", "Cannot assign a %s to variable %s: pass a tensor (in replica "
                "context each replica passes its own)." % (type(value).__name__, self._name))


class MirroredVariable(DistributedVariableMixin, Variable):
    """A variable with one identical copy on each replica's device.

    Reads give the current replica's copy. In cross-replica context a write goes to every
    copy. In replica context a write is first combined across replicas by the variable's
    ``aggregation``: SUM or MEAN all-reduce the value, ONLY_FIRST_REPLICA takes the first
    replica's; with NONE the write raises TF's error (it would let the copies drift apart).
    Optimizers, whose replicas compute the same update from all-reduced gradients, write
    each copy directly (``strategy_context.local_updates``).

    Args:
        strategy: The strategy that made it.
        components: The per-device Variables (the first is the primary).
        aggregation: A VariableAggregation.
    """

    def __init__(self, strategy, components, aggregation):
        self._setup(strategy, components, aggregation)

    def read_value(self):
        return self._read_component(self._component())

    def _update(self, method, value, read_value):
        self._check_not_traced_per_replica(value)
        replica = strategy_context.current_replica_context()
        if replica is None:
            # Cross-replica: every copy takes the value.
            for c in self._components:
                getattr(c, method)(value, read_value=False)
        elif strategy_context.in_local_updates():
            getattr(self._component(), method)(value, read_value=False)
        else:
            aggregation = self._aggregation
            if aggregation is VariableAggregation.NONE and replica.num_replicas_in_sync > 1:
                raise ValueError(NO_AGGREGATION_MESSAGE)
            if aggregation is not VariableAggregation.NONE:
                value = replica._aggregate_for_write(aggregation, self, value, method)
            getattr(self._component(), method)(value, read_value=False)
        return self if read_value else None

    def _scatter(self, sparse_delta, mode, op):
        replica = strategy_context.current_replica_context()
        if replica is not None and not strategy_context.in_local_updates() and \
                replica.num_replicas_in_sync > 1:
            raise errors.UnimplementedError(
                None, op, "%s on MirroredVariable %s in replica context: scatter updates are "
                "not aggregated across replicas; apply them in cross-replica context "
                "(merge_call) or with dense assign_add." % (op, self._name))
        targets = self._components if replica is None else (self._component(),)
        for c in targets:
            c._scatter(sparse_delta, mode, op)
        return self

    def _scatter_nd(self, indices, updates, mode, op):
        replica = strategy_context.current_replica_context()
        targets = self._components if replica is None else (self._component(),)
        for c in targets:
            c._scatter_nd(indices, updates, mode, op)
        return self

    def __repr__(self):
        body = ",\n".join("  %d: %r" % (i, c) for i, c in enumerate(self._components))
        return "MirroredVariable:{\n%s\n}" % body


class SyncOnReadVariable(DistributedVariableMixin, Variable):
    """A variable each replica updates locally, aggregated when read across replicas.

    For metrics: in replica context reads and writes use the replica's own copy, with no
    communication. In cross-replica context a read combines the copies by ``aggregation``
    (SUM, MEAN or ONLY_FIRST_REPLICA), and ``assign`` sets every copy so that the
    aggregate is the value (SUM divides it by the number of replicas), as in TF.

    Args:
        strategy: The strategy that made it.
        components: The per-device Variables.
        aggregation: A VariableAggregation (NONE reads the first copy).
    """

    def __init__(self, strategy, components, aggregation):
        self._setup(strategy, components, aggregation)

    def read_value(self):
        if strategy_context.current_replica_context() is not None:
            return self._read_component(self._component())
        return self._aggregated()

    def _aggregated(self):
        agg = self._aggregation
        if agg in (VariableAggregation.NONE, VariableAggregation.ONLY_FIRST_REPLICA) or \
                len(self._components) == 1 and not self._distribute_strategy.extended \
                ._spans_workers:
            return self._read_component(self._primary)
        reduce_op = "sum" if agg is VariableAggregation.SUM else "mean"
        return self._distribute_strategy.extended._reduce_components(
            reduce_op, [self._read_component(c) for c in self._components])

    def _update(self, method, value, read_value):
        self._check_not_traced_per_replica(value)
        if strategy_context.current_replica_context() is not None:
            getattr(self._component(), method)(value, read_value=False)
            return self if read_value else None
        n = self._distribute_strategy.num_replicas_in_sync
        if method != "assign" and self._aggregation is VariableAggregation.SUM and n > 1:
            raise ValueError("SyncOnReadVariable does not support `%s` in cross-replica "
                             "context when aggregation is set to "
                             "`tf.VariableAggregation.SUM`." % method)
        if method == "assign" and self._aggregation is VariableAggregation.SUM and n > 1:
            t = convert_to_tensor(value, dtype=self.dtype)
            value = _divide(t, n)
        for c in self._components:
            getattr(c, method)(value, read_value=False)
        return self if read_value else None

    def __repr__(self):
        body = ",\n".join("  %d: %r" % (i, c) for i, c in enumerate(self._components))
        return "SyncOnReadVariable:{\n%s\n}" % body


def _divide(t, n):
    from eagerflow.ops.math.arithmetic import divide
    from eagerflow.ops.math.cast import cast

    if np.issubdtype(t.dtype.as_numpy_dtype, np.integer):
        from eagerflow.ops.math.arithmetic import floordiv

        return floordiv(t, cast(convert_to_tensor(n), t.dtype))
    return divide(t, cast(convert_to_tensor(n), t.dtype))


def select_replica(local_index, structure):
    """``structure`` with every DistributedValues replaced by its ``local_index`` component."""
    from eagerflow import nest

    def pick(x):
        if isinstance(x, DistributedValues):
            return x._values[local_index]
        return x

    return nest.map_structure(pick, structure)


def regroup(per_replica_results, wrap_class=PerReplica):
    """One structure from a structure per replica: leaves that differ become PerReplica.

    Leaves that are the same object on every replica (a mirrored variable, a Python
    constant) stay as they are.
    """
    from eagerflow import nest

    first = per_replica_results[0]
    if len(per_replica_results) == 1:
        return first
    flats = [nest.flatten(r) for r in per_replica_results]
    for k, flat in enumerate(flats[1:], 1):
        if len(flat) != len(flats[0]):
            raise errors.InvalidArgumentError(
                None, "run", "Replica %d returned a structure with %d leaves, replica 0 one "
                "with %d; every replica must return the same structure."
                % (k, len(flat), len(flats[0])))
    leaves = []
    for values in zip(*flats):
        if all(v is values[0] for v in values[1:]):
            leaves.append(values[0])
        else:
            leaves.append(wrap_class(values))
    return nest.pack_sequence_as(first, leaves)

