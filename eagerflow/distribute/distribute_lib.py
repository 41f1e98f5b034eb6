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

The base ``StrategyExtended`` is written for any set of *local replicas* (one device and
one thread each) joined by one ``Communicator`` per replica: MirroredStrategy uses a
``LocalCommunicator`` group; a multi-worker strategy gives its single local replica an MPI
communicator whose ranks are the global replica ids, and inherits everything else.

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
import enum
import queue
import threading

import numpy as np

from eagerflow import errors, nest
from eagerflow import variables as variables_lib
from eagerflow.distribute import values as values_lib
from eagerflow.distribute.communicator import LocalCommunicator
from eagerflow.framework import context
from eagerflow.framework import strategy_context
from eagerflow.tensor import Tensor, convert_to_tensor, wrap

__all__ = ["Strategy", "StrategyExtended", "ReplicaContext", "ReduceOp", "get_strategy",
           "has_strategy", "in_cross_replica_context", "get_replica_context",
           "get_cross_replica_context", "experimental_set_strategy"]

_state = context.state


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


# -- the replica context ---------------------------------------------------------------------

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


# -- running replicas ------------------------------------------------------------------------

class _Step:
    """The shared state of one ``run``: the merge-call group and the trace lock."""

    __slots__ = ("group", "merges", "lock", "traced", "instances", "instance_base")

    def __init__(self, n, timeout, traced):
        from eagerflow.distribute.communicator import LocalGroup

        self.group = LocalGroup(n, timeout) if n > 1 else None
        self.merges = [0] * n
        self.instances = [0] * n  # collectives traced so far, per local replica
        self.instance_base = None
        self.traced = traced
        # While tracing, the replicas share one graph builder: one runs at a time, handing
        # over at merge calls (TF's MirroredStrategy does the same).
        self.lock = threading.Lock() if traced and n > 1 else None


class _ReplicaThreads:
    """Persistent threads for local replicas 1..n-1 (replica 0 runs on the caller)."""

    def __init__(self, n):
        self._tasks = [queue.SimpleQueue() for _ in range(n)]
        self.done = queue.SimpleQueue()
        self._threads = []
        for k in range(1, n):
            t = threading.Thread(target=self._loop, args=(self._tasks[k],), daemon=True,
                                 name="eagerflow-replica-%d" % k)
            t.start()
            self._threads.append(t)

    def _loop(self, tasks):
        while True:
            task = tasks.get()
            if task is None:
                return
            try:
                task()
            finally:
                self.done.put(True)

    def submit(self, k, task):
        self._tasks[k].put(task)

    def close(self):
        for q in self._tasks[1:]:
            q.put(None)


class StrategyExtended:
    """The machinery of a strategy over local replicas joined by communicators.

    Args:
        container_strategy: The Strategy this extends.
        devices: One local Device per local replica (None for "wherever ops run").
        communicators: One Communicator per local replica, whose ``rank`` is that
            replica's global id and ``size`` the number of replicas in sync (default: a
            new LocalCommunicator group of ``len(devices)``).
        timeout: Seconds a replica waits for the others at a collective (default 60).
    """

    def __init__(self, container_strategy, devices, communicators=None, timeout=None):
        self._container = container_strategy
        self._devices = tuple(devices)
        self._timeout = 60.0 if timeout is None else float(timeout)
        self._make_local_communicators = communicators is None
        self._communicators = list(communicators) if communicators is not None else \
            self._new_local_communicators()
        if len(self._communicators) != len(self._devices):
            raise errors.InvalidArgumentError(
                None, None, "%d communicators for %d local replicas: pass one per replica."
                % (len(self._communicators), len(self._devices)))
        self._threads = None

    def _new_local_communicators(self):
        return LocalCommunicator.create_group(len(self._devices), self._timeout)

    def _collective_group(self):
        """How this strategy's traced collective nodes meet (``function.collective``):
        local replicas are partitions of one multi-device call. A multi-worker strategy
        returns a group over its communicator instead."""
        from eagerflow.function import collective

        return collective.LocalGroup([d or context.CPU0 for d in self._devices])

    # -- facts ---------------------------------------------------------------------------
    @property
    def _num_replicas_in_sync(self):
        return self._communicators[0].size

    @property
    def _replica_ids(self):
        return [c.rank for c in self._communicators]

    @property
    def _spans_workers(self):
        """True when replicas of other processes take part (a multi-worker strategy)."""
        return self._communicators[0].size > len(self._devices)

    @property
    def worker_devices(self):
        """The names of this worker's replica devices."""
        return tuple(d.name for d in self._devices if d is not None)

    @property
    def parameter_devices(self):
        """Where variables live (the replica devices, one copy each)."""
        return self.worker_devices

    @property
    def experimental_require_static_shapes(self):
        return False

    @property
    def should_checkpoint(self):
        return True

    @property
    def should_save_summary(self):
        return True

    def value_container(self, value):
        """The distributed variable ``value`` is a component of, or ``value``."""
        return getattr(value, "_distributed_container", None) or value

    def variable_created_in_scope(self, v):
        """True if ``v`` was made by this strategy."""
        return getattr(v, "_distribute_strategy", None) is self._container

    @contextlib.contextmanager
    def colocate_vars_with(self, colocate_with_variable):
        yield

    # -- variables -----------------------------------------------------------------------
    def _create_variable(self, next_creator, **kwargs):
        """The creator ``scope()`` pushes: one copy per replica device."""
        replica = strategy_context.current_replica_context()
        if replica is not None and replica._strategy is self._container and \
                not strategy_context.in_local_updates():
            # Made in replica context: every replica asks, one creates (cross-replica).
            return replica.merge_call(
                lambda strategy: self._create_variable(next_creator, **kwargs))
        V = variables_lib.VariableSynchronization
        sync = kwargs.get("synchronization", V.AUTO)
        sync = V(sync.value if isinstance(sync, V) else sync)
        if sync is V.NONE:
            raise ValueError("`NONE` variable synchronization mode is not supported with "
                             "tf.distribute strategy. Please change the `synchronization` "
                             "for variable: " + str(kwargs.get("name")))
        aggregation = kwargs.get("aggregation", variables_lib.VariableAggregation.NONE)
        aggregation = variables_lib.VariableAggregation(
            aggregation.value if isinstance(aggregation, variables_lib.VariableAggregation)
            else aggregation)
        if sync is V.ON_READ and kwargs.get("trainable"):
            raise ValueError("Synchronization value can be set to "
                             "VariableSynchronization.ON_READ only for non-trainable "
                             "variables. You have specified trainable=True and "
                             "synchronization=VariableSynchronization.ON_READ.")
        return self._make_variable(next_creator, kwargs, sync, aggregation)

    def _make_variable(self, next_creator, kwargs, sync, aggregation):
        initial = kwargs.get("initial_value")
        if callable(initial):
            with _device_scope(self._devices[0]):
                initial = initial()
        components = []
        base = kwargs.get("name")
        for i, device in enumerate(self._devices):
            kw = dict(kwargs)
            kw["initial_value"] = initial if i == 0 else components[0].read_value()
            if i:
                kw["name"] = "%s/replica_%d" % ((base or "Variable"), i)
                kw.pop("dtype", None)
            with _device_scope(device):
                components.append(next_creator(**kw))
        if len(components) == 1 and not self._spans_workers:
            return components[0]
        cls = values_lib.SyncOnReadVariable if sync is \
            variables_lib.VariableSynchronization.ON_READ else values_lib.MirroredVariable
        var = cls(self._container, components, aggregation)
        for c in components:
            c._distributed_container = var
        return var

    # -- running -------------------------------------------------------------------------
    def call_for_each_replica(self, fn, args, kwargs):
        """Runs ``fn`` on every local replica (threads) and regroups the results."""
        n = len(self._devices)
        traced = _state.trace is not None
        step = _Step(n, self._timeout, traced)
        strategy = self._container
        outer = strategy_context.snapshot()
        creators = variables_lib.creator_stack()
        name_scope = _state.name_scope
        trace = _state.trace
        results = [None] * n
        failures = [None] * n

        def body(k):
            ctx = ReplicaContext(strategy, self._replica_ids[k], k, step)
            a = values_lib.select_replica(k, args)
            kw = values_lib.select_replica(k, kwargs)
            on_caller = k == 0
            saved = None if on_caller else _enter_thread(outer, creators, name_scope, trace)
            if step.lock is not None:
                step.lock.acquire()
            token = strategy_context.push(strategy, ctx)
            try:
                with _device_scope(self._devices[k]):
                    results[k] = fn(*a, **kw)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the caller
                failures[k] = exc
                self._abort_step(step, exc)
            finally:
                strategy_context.pop(token)
                if step.lock is not None:
                    step.lock.release()
                if saved is not None:
                    _leave_thread(saved)

        if n == 1:
            body(0)
        else:
            threads = self._replica_threads(n)
            for k in range(1, n):
                threads.submit(k, lambda k=k: body(k))
            body(0)
            for _ in range(1, n):
                threads.done.get()
        if any(f is not None for f in failures):
            self._after_failure()
            raise _root_cause(failures)
        return values_lib.regroup(results)

    def _replica_threads(self, n):
        if self._threads is None:
            self._threads = _ReplicaThreads(n)
        return self._threads

    def _abort_step(self, step, exc):
        if step.group is not None:
            step.group.abort(exc)
        for c in self._communicators:
            group = getattr(c, "group", None)
            if group is not None:
                group.abort(exc)

    def _after_failure(self):
        """A failed step leaves the local group aborted: the next step gets a fresh one."""
        if self._make_local_communicators:
            self._communicators = self._new_local_communicators()

    def _merge_call(self, replica, merge_fn, args, kwargs):
        step = replica._step
        strategy = self._container
        if step is None or step.group is None:
            token = strategy_context.push(strategy, None)
            try:
                with _device_scope(None), strategy_context.no_local_updates():
                    return merge_fn(strategy, *args, **kwargs)
            finally:
                strategy_context.pop(token)
        k = replica._local_index
        seq = step.merges[k]
        step.merges[k] += 1

        def combine(payloads):
            fn = payloads[0][0]
            a = values_lib.regroup([p[1] for p in payloads])
            kw = values_lib.regroup([p[2] for p in payloads])
            if step.lock is not None:
                step.lock.acquire()
            token = strategy_context.push(strategy, None)
            try:
                with _device_scope(None), strategy_context.no_local_updates():
                    return fn(strategy, *a, **kw)
            finally:
                strategy_context.pop(token)
                if step.lock is not None:
                    step.lock.release()

        if step.lock is not None:
            step.lock.release()
        try:
            result = step.group.exchange(k, seq, "merge_call", getattr(
                merge_fn, "__name__", None), (merge_fn, args, kwargs), combine, None)
        finally:
            if step.lock is not None:
                step.lock.acquire()
        return values_lib.select_replica(k, result)

    # -- collectives in replica context ---------------------------------------------------
    def _all_reduce(self, replica, op, tensors):
        if self._num_replicas_in_sync == 1:
            return list(tensors)
        if _state.trace is not None:
            from eagerflow.distribute import collective_ops

            return collective_ops.all_reduce(self, replica, op, tensors)
        comm = self._communicators[replica._local_index]
        arrays = [_readonly(t._value) for t in tensors]
        out = comm.allreduce(arrays, op, name="all_reduce")
        device = self._devices[replica._local_index] or context.CPU0
        return [wrap(a, device) for a in out]

    def _broadcast(self, replica, tensors):
        if self._num_replicas_in_sync == 1:
            return list(tensors)
        if _state.trace is not None:
            from eagerflow.distribute import collective_ops

            return collective_ops.all_reduce(self, replica, "first", tensors)
        comm = self._communicators[replica._local_index]
        out = comm.broadcast([_readonly(t._value) for t in tensors], 0, name="broadcast")
        device = self._devices[replica._local_index] or context.CPU0
        return [wrap(a, device) for a in out]

    def _all_gather(self, replica, tensor, axis):
        from eagerflow.ops.array.reshape_ops import transpose

        if self._num_replicas_in_sync == 1:
            return tensor
        rank = len(tensor.shape)
        axis = axis + rank if axis < 0 else axis
        perm = None
        if axis:
            perm = [axis] + [d for d in range(rank) if d != axis]
            tensor = transpose(tensor, perm)
        if _state.trace is not None:
            from eagerflow.distribute import collective_ops

            out = collective_ops.all_gather(self, replica, tensor)
        else:
            comm = self._communicators[replica._local_index]
            device = self._devices[replica._local_index] or context.CPU0
            out = wrap(comm.allgather(_readonly(tensor._value), name="all_gather"), device)
        if perm is not None:
            inverse = [perm.index(d) for d in range(rank)]
            out = transpose(out, inverse)
        return out

    # -- cross-replica -------------------------------------------------------------------
    def _reduce(self, op, value):
        if isinstance(value, values_lib.DistributedValues) or \
                getattr(value, "_is_distributed_variable", False):
            local = [v.read_value() if getattr(v, "_is_variable", False) else v
                     for v in value.values]
            if isinstance(value, values_lib.SyncOnReadVariable):
                local = [value._read_component(c) for c in value.values]
            return self._reduce_components(op, local)
        if nest.is_nested(value):
            return nest.map_structure(lambda v: self._reduce(op, v), value)
        if self._num_replicas_in_sync == 1 or op == "mean":
            return _dense_tensor(value)
        raise ValueError("A non-DistributedValues value %s cannot be reduced with the given "
                         "reduce op %s." % (value, op.upper()))

    def _reduce_components(self, op, tensors):
        """Reduces this worker's component tensors in replica order (then across workers)."""
        tensors = [_dense_tensor(t) for t in tensors]
        with _device_scope(_host_of(tensors[0])):
            acc = tensors[0]
            for t in tensors[1:]:
                acc = acc + t
            if self._spans_workers:
                acc = self._cross_worker_all_reduce("sum", acc)
            if op == "mean":
                from eagerflow.ops.math.cast import cast

                n = self._num_replicas_in_sync
                acc = acc / cast(convert_to_tensor(n), acc.dtype) if acc.dtype.is_floating \
                    else acc // cast(convert_to_tensor(n), acc.dtype)
        return acc

    def _cross_worker_all_reduce(self, op, tensor):
        """All-reduces this worker's partial result with the other workers' (one replica
        per worker: its communicator joins them)."""
        comm = self._communicators[0]
        if _state.trace is not None:
            from eagerflow.distribute import collective_ops

            return collective_ops.all_reduce(self, ReplicaContext(
                self._container, comm.rank, 0), op, [tensor])[0]
        out = comm.allreduce([_readonly(tensor._value)], op, name="cross_worker_reduce")[0]
        return wrap(out, tensor._device)

    def _gather(self, local, axis):
        from eagerflow.ops.array.join_ops import concat

        local = [_dense_tensor(v) for v in local]
        with _device_scope(_host_of(local[0])):
            out = local[0] if len(local) == 1 else concat(local, axis=axis)
        if self._spans_workers:
            replica = ReplicaContext(self._container, self._communicators[0].rank, 0)
            out = self._all_gather(replica, out, axis)
        return out

    def reduce_to(self, reduce_op, value, destinations=None, options=None):
        """Reduces ``value`` (PerReplica or a tensor) across replicas; a tensor."""
        return self._reduce(reduce_op_name(reduce_op), value)

    def batch_reduce_to(self, reduce_op, value_destination_pairs, options=None):
        return [self.reduce_to(reduce_op, v, d) for v, d in value_destination_pairs]

    def update(self, var, fn, args=(), kwargs=None, group=True):
        """Runs ``fn(copy, *args, **kwargs)`` on each copy of ``var`` (its own copy only
        in replica context; there the caller guarantees every replica does the same).

        Returns:
            ``fn``'s result for the current (or the primary) copy.
        """
        kwargs = dict(kwargs or {})
        copies = getattr(var, "_components", None)
        if copies is None:
            return fn(var, *args, **kwargs)
        replica = strategy_context.current_replica_context()
        if replica is not None:
            with strategy_context.local_updates():
                return fn(var._component(), *values_lib.select_replica(
                    replica._local_index, args), **kwargs)
        out = None
        for i, c in enumerate(copies):
            with _device_scope(c._device):
                r = fn(c, *values_lib.select_replica(i, args), **values_lib.select_replica(
                    i, kwargs))
            out = r if i == 0 else out
        return out

    def update_non_slot(self, colocate_with, fn, args=(), kwargs=None, group=True):
        return fn(*args, **(kwargs or {}))

    def experimental_local_results(self, value):
        return self._container.experimental_local_results(value)


def _host_of(tensor):
    device = getattr(tensor, "_device", None)
    return device if isinstance(device, context.Device) else None


def _readonly(array):
    """A view that collectives cannot write into (the tensor owning it stays intact)."""
    if isinstance(array, np.generic):
        return np.asarray(array)  # a fresh 0-d array: nobody else holds it
    try:
        view = array.view()
        view.flags.writeable = False
        return view
    except AttributeError:
        return array


def _root_cause(failures):
    """The replica failure that caused the others (cancellations come last)."""
    found = [f for f in failures if f is not None]
    for f in found:
        if not getattr(f, "_group_cancelled", False):
            return f
    return found[0]


def _enter_thread(outer, creators, name_scope, trace):
    saved = (strategy_context.restore(outer), variables_lib.set_creator_stack(creators),
             _state.name_scope, context.set_trace_hook(trace))
    _state.name_scope = name_scope
    return saved


def _leave_thread(saved):
    strategy_context.restore(saved[0])
    variables_lib.set_creator_stack(saved[1])
    _state.name_scope = saved[2]
    context.set_trace_hook(saved[3])


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
