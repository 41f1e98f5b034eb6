"""``StrategyExtended``: how a strategy runs a step on its local replicas (one device and
one thread each, joined by one ``Communicator`` per replica) and combines their values.

MirroredStrategy uses a ``LocalCommunicator`` group; a multi-worker strategy gives its single
local replica an MPI communicator whose ranks are the global replica ids, and inherits
everything else. Every wait has a deadline, and a replica that fails ends the step on every
replica with its error.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time

import numpy as np

from eagerflow import errors, nest
from eagerflow import variables as variables_lib
from eagerflow.backend import blas_threads
from eagerflow.distribute import values as values_lib
from eagerflow.distribute.communicator import LocalCommunicator
from eagerflow.framework import context
from eagerflow.framework import strategy_context
from eagerflow.tensor import convert_to_tensor, wrap
from eagerflow.distribute.replica_context import (
    ReplicaContext,
    _dense_tensor,
    _device_scope,
    reduce_op_name,
)

__all__ = ["StrategyExtended"]


_state = context.state


class _Step:
    """The shared state of one ``run``: the merge-call group and the trace lock."""

    __slots__ = ("group", "merges", "lock", "traced", "instances", "instance_base",
                 "failed_at")

    def __init__(self, n, timeout, traced):
        from eagerflow.distribute.communicator import LocalGroup

        self.group = LocalGroup(n, timeout) if n > 1 else None
        self.merges = [0] * n
        self.instances = [0] * n  # collectives traced so far, per local replica
        self.instance_base = None
        self.failed_at = None
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
        self._run_lock = threading.Lock()
        # Replicas on CPUs compute at once: they share the BLAS threads between them.
        self._cpu_replicas = sum(d is not None and d.backend_index == 0 for d in self._devices)

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
        elif self._run_lock.acquire(blocking=False):
            try:
                with blas_threads.share(self._cpu_replicas):
                    self._run_on_threads(self._replica_threads(n), n, body, step, failures)
            finally:
                self._run_lock.release()
        else:
            # Another thread is running a step of this strategy: threads of our own.
            threads = _ReplicaThreads(n)
            try:
                self._run_on_threads(threads, n, body, step, failures)
            finally:
                threads.close()
        if any(f is not None for f in failures):
            self._after_failure()
            raise _root_cause(failures)
        return values_lib.regroup(results)

    def _run_on_threads(self, threads, n, body, step, failures):
        for k in range(1, n):
            threads.submit(k, lambda k=k: body(k))
        body(0)
        pending = n - 1
        while pending:
            try:
                threads.done.get(timeout=0.25)
                pending -= 1
            except queue.Empty:
                # A replica stuck outside any collective (an endless loop in user code)
                # must not hang the caller once the step has failed: give it the
                # strategy's timeout, then report the failure and retire its thread.
                if step.failed_at is not None and \
                        time.monotonic() - step.failed_at > self._timeout:
                    if threads is self._threads:
                        self._threads = None
                    threads.close()
                    stuck = [k for k in range(n) if failures[k] is None]
                    failures.append(errors.DeadlineExceededError(
                        None, "run", "Replica(s) %s did not finish within %gs of the step "
                        "failing; they are left running." % (stuck, self._timeout)))
                    return

    def _replica_threads(self, n):
        if self._threads is None:
            self._threads = _ReplicaThreads(n)
        return self._threads

    def _abort_step(self, step, exc):
        if step.failed_at is None:
            step.failed_at = time.monotonic()
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
