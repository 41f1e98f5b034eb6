"""The Strategy API: scopes, replica and cross-replica contexts, run, reduce.

A ``Strategy`` runs a step function once per replica (``run``) and combines what the
replicas computed (``reduce``, ``gather``). Code runs in one of two contexts:

* *replica context*: inside ``strategy.run``; ``get_replica_context()`` gives this
  replica's ``ReplicaContext`` (``all_reduce``, ``all_gather``, ``merge_call``).
* *cross-replica context*: directly inside ``strategy.scope()`` or inside a
  ``merge_call``; ``get_replica_context()`` is None there.

Outside every scope the *default strategy* is in force: one replica, no aggregation, and
a default replica context, so library code can call ``get_replica_context().all_reduce``
without checking whether a strategy is active.

The base ``StrategyExtended`` (:mod:`eagerflow.distribute.strategy_extended`) is written for
any set of *local replicas* (one device and one thread each) joined by one ``Communicator``
per replica; ``ReplicaContext`` and ``ReduceOp`` are in
:mod:`eagerflow.distribute.replica_context`. This module holds ``Strategy``, its scope and the
default strategy, and every name above imports from here as before.

Example:
    >>> import eagerflow as ef
    >>> strategy = ef.distribute.get_strategy()  # the default strategy
    >>> strategy.num_replicas_in_sync
    1
    >>> float(strategy.run(lambda x: x * 2.0, args=(ef.constant(3.0),)))
    6.0
"""

from __future__ import annotations

import contextlib
import threading


from eagerflow import nest
from eagerflow import variables as variables_lib
from eagerflow.distribute import values as values_lib
from eagerflow.framework import context
from eagerflow.framework import strategy_context
from eagerflow.tensor import convert_to_tensor
from eagerflow.distribute.replica_context import (
    ReduceOp,
    ReplicaContext,
    _device_scope,
    reduce_op_name,
)
from eagerflow.distribute.strategy_extended import StrategyExtended

__all__ = ["Strategy", "StrategyExtended", "ReplicaContext", "ReduceOp", "get_strategy",
           "has_strategy", "in_cross_replica_context", "get_replica_context",
           "get_cross_replica_context", "experimental_set_strategy"]

_state = context.state


# -- contexts ---------------------------------------------------------------------------------

def get_strategy():
    """The current strategy: the innermost ``scope()``'s, else the default strategy.

    Example:
        >>> import eagerflow as ef
        >>> ef.distribute.get_strategy() is ef.distribute.get_strategy()
        True
    """
    strategy = strategy_context.current_strategy()
    return _default_strategy() if strategy is None else strategy


def has_strategy():
    """True inside a (non-default) strategy's scope or replica context."""
    strategy = strategy_context.current_strategy()
    return strategy is not None and not isinstance(strategy, _DefaultStrategy)


def in_cross_replica_context():
    """True directly inside ``strategy.scope()`` or a ``merge_call`` (not in ``run``)."""
    entry = strategy_context.current()
    return entry is not None and entry[1] is None


def get_replica_context():
    """This replica's ReplicaContext; None in cross-replica context.

    Outside every scope it is the default strategy's replica context (one replica).
    """
    entry = strategy_context.current()
    if entry is None:
        return _default_strategy()._default_replica_context
    return entry[1]


def get_cross_replica_context():
    """The strategy in cross-replica context (the default outside scopes), else None."""
    entry = strategy_context.current()
    if entry is None:
        return _default_strategy()
    return entry[0] if entry[1] is None else None


@contextlib.contextmanager
def experimental_set_strategy(strategy):
    """Enters ``strategy.scope()`` (or, with None, leaves the default in force)."""
    if strategy is None:
        yield
        return
    with strategy.scope():
        yield


# -- the strategy ----------------------------------------------------------------------------

class Strategy:
    """Runs computation on several replicas and combines their results (TF 2's API).

    Subclasses provide a ``StrategyExtended``; everything users call is defined here.

    Args:
        extended: The StrategyExtended that implements this strategy.
    """

    def __init__(self, extended):
        self._extended = extended
        self._scope_depth = 0

    @property
    def extended(self):
        """The StrategyExtended: less common methods (update, reduce_to, devices)."""
        return self._extended

    @property
    def num_replicas_in_sync(self):
        """How many replicas take part in every step (all workers together)."""
        return self._extended._num_replicas_in_sync

    def scope(self):
        """A context manager: variables made inside are distributed by this strategy.

        Also makes this the current strategy (``get_strategy()``) in cross-replica
        context. Entering the scope of a different strategy inside it raises.

        Example:
            >>> import eagerflow as ef
            >>> s = ef.distribute.OneDeviceStrategy("/cpu:0")
            >>> with s.scope():
            ...     ef.distribute.get_strategy() is s
            True
        """
        return _Scope(self)

    def run(self, fn, args=(), kwargs=None, options=None):
        """Runs ``fn(*args, **kwargs)`` once per replica; returns their results.

        ``PerReplica`` arguments (from a distributed dataset) give each replica its own
        component; other arguments go to every replica as they are. Replicas run
        concurrently, one thread each, on their own devices; inside ``@function`` each
        replica's ops are placed on its device and collectives become graph nodes.

        Returns:
            The structure ``fn`` returned; leaves that differ between replicas are
            ``PerReplica``. With one replica, ``fn``'s result itself.

        Raises:
            Whatever a replica raised: the first failure stops every replica.
        """
        if not callable(fn):
            raise TypeError("strategy.run needs a callable, got %r" % (fn,))
        with self.scope():  # as in TF: variables made by ``fn`` are this strategy's
            return self._extended.call_for_each_replica(fn, tuple(args), dict(kwargs or {}))

    def reduce(self, reduce_op, value, axis=None):
        """Combines a per-replica value across replicas (cross-replica context).

        Args:
            reduce_op: ``ReduceOp.SUM`` or ``ReduceOp.MEAN`` (or "SUM"/"MEAN").
            value: A PerReplica (or a tensor, taken as the same on every replica).
            axis: None reduces across replicas only; an int also reduces each replica's
                value along that axis (MEAN then divides by the total count along it).

        Returns:
            A Tensor.

        Example:
            >>> import eagerflow as ef
            >>> s = ef.distribute.get_strategy()
            >>> float(s.reduce("SUM", ef.constant([1.0, 2.0]), axis=0))
            3.0
        """
        _require_cross_replica("reduce")
        op = reduce_op_name(reduce_op)
        if axis is None:
            return self._extended._reduce(op, value)
        from eagerflow.ops.math.cast import cast
        from eagerflow.ops.reduce.reductions import reduce_sum
        from eagerflow.ops.array.shape_ops import shape

        local = self.experimental_local_results(value)
        sums = [reduce_sum(v, axis=axis) for v in local]
        total = self._extended._reduce_components("sum", sums) if len(local) > 1 or \
            self._extended._spans_workers else sums[0]
        if op == "sum":
            return total
        counts = [shape(convert_to_tensor(v), out_type="int64")[axis] for v in local]
        count = self._extended._reduce_components("sum", counts) if len(local) > 1 or \
            self._extended._spans_workers else counts[0]
        return total / cast(count, total.dtype)

    def gather(self, value, axis):
        """Concatenates every replica's value along ``axis`` (cross-replica context)."""
        _require_cross_replica("gather")
        return self._extended._gather(self.experimental_local_results(value), axis)

    def experimental_local_results(self, value):
        """The components of ``value`` on this worker's replicas, as a tuple."""
        if isinstance(value, values_lib.DistributedValues):
            return value.values
        if getattr(value, "_is_distributed_variable", False):
            return value.values
        if nest.is_nested(value):
            flats = [self.experimental_local_results(v) for v in nest.flatten(value)]
            n = max((len(f) for f in flats), default=1)
            return tuple(nest.pack_sequence_as(value, [f[min(i, len(f) - 1)] for f in flats])
                         for i in range(n))
        return (value,)

    def experimental_distribute_dataset(self, dataset, options=None):
        """A dataset whose iterator yields PerReplica slices of each global batch.

        ``dataset`` yields global batches; each is split along its first dimension, as
        TF does: every replica gets ``ceil(global_batch / replicas)`` examples, filled in
        replica order, so a short last batch leaves the last replicas fewer (possibly
        zero) examples.
        """
        from eagerflow.distribute import input_lib

        return input_lib.DistributedDataset(self, dataset, options)

    def experimental_split_global_batch(self, batch, global_batch_size=None):
        """One global batch as PerReplica slices, split as ``experimental_distribute_dataset``
        splits (an eagerflow addition: Keras ``fit`` uses it for array inputs).

        Args:
            batch: A structure of tensors whose first dimension is the batch.
            global_batch_size: The full batch size (default: this batch's), which fixes
                every replica's share ``ceil(global_batch_size / replicas)``.

        Returns:
            The batch itself with one replica, else a structure of PerReplica.
        """
        from eagerflow.distribute import input_lib

        ext = self._extended
        if len(ext._devices) == 1 and not ext._spans_workers:
            return batch
        if global_batch_size is None:
            global_batch_size = input_lib._first_dim(batch)
        parts = input_lib.split_batch(batch, global_batch_size, ext._replica_ids,
                                      self.num_replicas_in_sync,
                                      [d or context.CPU0 for d in ext._devices])
        return input_lib._per_replica(parts)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """Calls ``dataset_fn(InputContext)`` once per local replica; iterates them together.

        Each dataset must yield per-replica batches already (use
        ``input_context.get_per_replica_batch_size(global_batch)``).
        """
        from eagerflow.distribute import input_lib

        return input_lib.DistributedDatasetsFromFunction(self, dataset_fn, options)

    def experimental_distribute_values_from_function(self, value_fn):
        """A PerReplica of ``value_fn(ValueContext)`` for each local replica."""
        from eagerflow.distribute import input_lib

        out = []
        for i, device in enumerate(self._extended._devices):
            ctx = input_lib.ValueContext(self._extended._replica_ids[i],
                                         self.num_replicas_in_sync)
            with _device_scope(device):
                out.append(value_fn(ctx))
        return out[0] if len(out) == 1 and not self._extended._spans_workers else \
            values_lib.PerReplica(out)

    def __repr__(self):
        return "<%s with %d replica(s)>" % (type(self).__name__, self.num_replicas_in_sync)


class _Scope:
    __slots__ = ("_strategy", "_token", "_creator")

    def __init__(self, strategy):
        self._strategy = strategy

    def __enter__(self):
        current = strategy_context.current_strategy()
        if current is not None and current is not self._strategy and \
                not isinstance(current, _DefaultStrategy):
            raise RuntimeError("Mixing different tf.distribute.Strategy objects: %s is not %s"
                               % (self._strategy, current))
        self._token = strategy_context.push(self._strategy, None)
        # A nested scope of the same strategy (fit inside a scope, run inside fit) keeps
        # the one creator already pushed: each variable is distributed once.
        self._creator = None if current is self._strategy else \
            variables_lib.variable_creator_scope(self._strategy._extended._create_variable)
        if self._creator is not None:
            self._creator.__enter__()
        return self._strategy

    def __exit__(self, *exc):
        try:
            if self._creator is not None:
                self._creator.__exit__(*exc)
        finally:
            strategy_context.pop(self._token)
        return False


def _require_cross_replica(what):
    entry = strategy_context.current()
    if entry is not None and entry[1] is not None and \
            not isinstance(entry[0], _DefaultStrategy):
        raise RuntimeError(
            "Method %s requires being in cross-replica context, use "
            "get_replica_context().merge_call()" % what)


# -- the replica context ---------------------------------------------------------------------


# -- running replicas ------------------------------------------------------------------------


# -- the default strategy --------------------------------------------------------------------

class _DefaultExtended(StrategyExtended):
    """One replica, wherever ops run; no threads, no copies."""

    def __init__(self, container):
        super().__init__(container, [None])

    def _create_variable(self, next_creator, **kwargs):
        return next_creator(**kwargs)

    def call_for_each_replica(self, fn, args, kwargs):
        token = strategy_context.push(self._container, self._container._default_replica_context)
        try:
            return fn(*args, **kwargs)
        finally:
            strategy_context.pop(token)


class _DefaultStrategy(Strategy):
    """What ``get_strategy()`` returns outside every scope: one replica, no distribution."""

    def __init__(self):
        super().__init__(_DefaultExtended(self))
        self._default_replica_context = ReplicaContext(self, 0)

    def scope(self):
        return contextlib.nullcontext(self)


_default = []
_default_lock = threading.Lock()


def _default_strategy():
    if not _default:
        with _default_lock:
            if not _default:
                _default.append(_DefaultStrategy())
    return _default[0]
