"""ParameterServerStrategy (TF 2's ``tf.distribute.experimental.ParameterServerStrategy``).

Variables made in ``strategy.scope()`` live on the parameter-server tasks: round-robin, one
whole variable per ps task in creation order, or split into row shards by a
``variable_partitioner`` (a :class:`ShardedVariable`, shards placed round-robin too). The
coordinator process (the chief) keeps only a stand-in of each variable: its dtype and shape.
Reads and writes go through graphs placed on the variable's task: a traced step reads a
variable with a ReadVariableOp partitioned onto its ps, and an eager ``v.numpy()`` or
``v.assign(x)`` on the chief runs a one-node graph there (traced once per variable).

Training is asynchronous: a ``ClusterCoordinator`` schedules step functions on the workers,
each of which reads the variables, computes its gradients and applies them on the ps
without waiting for the others.

Example:
    >>> from eagerflow.distribute import parameter_server_strategy as pss
    >>> pss.PSVariable.__mro__[1].__name__
    'Variable'
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from eagerflow import errors
from eagerflow import variables as variables_lib
from eagerflow.distribute import cluster as cluster_lib
from eagerflow.distribute import distribute_lib
from eagerflow.distribute.sharded_variable import ShardedVariable, shard_sizes
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function import task_partition

__all__ = ["ParameterServerStrategy", "PSVariable"]


class PSVariable(variables_lib.Variable):
    """A variable held by a parameter-server task; this process holds its description.

    Inside a traced function it is an ordinary variable whose ops run on its task. Eager
    reads and writes here run small graphs on that task.
    """

    _is_distributed_variable = True

    def __init__(self, task, strategy, **kwargs):
        super().__init__(**kwargs)
        self._task = task
        self._distribute_strategy = strategy
        self._functions = {}
        self._functions_lock = threading.Lock()
        value = self._value
        # The value lives on the ps: keep a read-only, zero-byte array of the right dtype
        # and shape here (a write to it would be a bug, and raises).
        self._value = np.broadcast_to(np.zeros((), value.dtype), value.shape)
        previous = context.set_trace_hook(None)  # made during a trace: push it eagerly
        try:
            self._remote("assign")(value)
        finally:
            context.set_trace_hook(previous)

    @property
    def device(self):
        return self._task + "/device:CPU:0"

    @property
    def _update_device(self):
        # Optimizers run this variable's update on its ps (only the gradient travels).
        return self.device

    def _remote(self, kind):
        fn = self._functions.get(kind)
        if fn is None:
            from eagerflow.function.function import function
            from eagerflow.tensor_shape import TensorSpec

            with self._functions_lock:
                fn = self._functions.get(kind)
                if fn is None:
                    spec = TensorSpec(self.shape, self.dtype)
                    if kind == "read":
                        fn = function(lambda: variables_lib.Variable.read_value(self),
                                      autograph=False)
                    else:
                        method = getattr(variables_lib.Variable, kind)
                        fn = function(lambda v: method(self, v, read_value=False),
                                      input_signature=[spec], autograph=False)
                    self._functions[kind] = fn
        return fn

    def read_value(self):
        if context.state.trace is not None:
            return super().read_value()
        t = self._remote("read")()
        if context.state.tapes:
            context.variable_read_hook(self, t)
        return t

    def numpy(self):
        return self.read_value().numpy()

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def _eager_write(self, kind, value):
        from eagerflow.tensor import convert_to_tensor

        t = convert_to_tensor(value, dtype=self.dtype)
        if kind == "assign":
            self._check_shape(t.shape, builtins.ASSIGN_VARIABLE)
        self._remote(kind)(t)

    def assign(self, value, use_locking=None, name=None, read_value=True):
        if context.state.trace is not None:
            return super().assign(value, use_locking, name, read_value)
        self._eager_write("assign", value)
        return self if read_value else None

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        if context.state.trace is not None:
            return super().assign_add(delta, use_locking, name, read_value)
        self._eager_write("assign_add", delta)
        return self if read_value else None

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        if context.state.trace is not None:
            return super().assign_sub(delta, use_locking, name, read_value)
        self._eager_write("assign_sub", delta)
        return self if read_value else None

    def __repr__(self):
        return "<PSVariable %r shape=%s dtype=%s on %s>" % (
            self.name, list(self.shape), self.dtype.name, self._task)


class ParameterServerStrategyExtended(distribute_lib.StrategyExtended):
    """Places variables on the ps tasks; one replica (the worker running a closure)."""

    def __init__(self, container, runtime, spec, variable_partitioner):
        super().__init__(container, [None])
        self._runtime = runtime
        self._spec = spec
        self._ps_tasks = [task_partition.task_name("ps", i) for i in spec.task_indices("ps")]
        self._worker_tasks = [task_partition.task_name("worker", i)
                              for i in spec.task_indices("worker")]
        self._partitioner = variable_partitioner
        self._next_ps = 0
        # Tasks find variables by name: unique across every strategy of this job.
        self._names = runtime.__dict__.setdefault("variable_names", set())
        self._lock = threading.Lock()
        self._colocate_task = None

    @property
    def parameter_devices(self):
        return tuple(t + "/device:CPU:0" for t in self._ps_tasks)

    @property
    def worker_devices(self):
        return tuple(t + "/device:CPU:0" for t in self._worker_tasks)

    @contextlib.contextmanager
    def colocate_vars_with(self, colocate_with_variable):
        """Variables made in the block go to the task of ``colocate_with_variable``."""
        previous = self._colocate_task
        self._colocate_task = getattr(colocate_with_variable, "_task", None)
        try:
            yield
        finally:
            self._colocate_task = previous

    def _take_task(self):
        with self._lock:
            if self._colocate_task is not None:
                return self._colocate_task
            task = self._ps_tasks[self._next_ps % len(self._ps_tasks)]
            self._next_ps += 1
            return task

    def _unique(self, name):
        """A name no other variable of this job has: tasks find variables by name."""
        with self._lock:
            base = name.split(":")[0]
            candidate, k = base, 0
            while candidate in self._names:
                k += 1
                candidate = "%s_%d" % (base, k)
            self._names.add(candidate)
            return candidate

    def _create_variable(self, next_creator, **kwargs):
        kwargs = dict(kwargs)
        initial = kwargs.get("initial_value")
        if callable(initial):
            previous = context.set_trace_hook(None)
            try:
                initial = initial()
            finally:
                context.set_trace_hook(previous)
        kwargs["initial_value"] = initial
        shards = 1
        if self._partitioner is not None:
            from eagerflow.tensor import convert_to_tensor

            value = convert_to_tensor(initial, dtype=kwargs.get("dtype"))
            if value.shape.rank:
                parts = self._partitioner(list(value.shape), value.dtype)
                shards = int(parts[0]) if parts else 1
            if shards > 1:
                return self._sharded(value, shards, kwargs)
        return self._one(kwargs)

    def _one(self, kwargs):
        scope = context.state.name_scope or ""
        base = kwargs.get("name") or "Variable"
        kwargs["name"] = self._unique(scope + base)[len(scope):]
        return PSVariable(self._take_task(), self._container, **kwargs)

    def _sharded(self, value, shards, kwargs):
        import eagerflow as ef

        base = kwargs.get("name") or "Variable"
        pieces = ef.split(value, shard_sizes(value.shape[0], shards), axis=0)
        variables = []
        for k, piece in enumerate(pieces):
            kw = dict(kwargs, initial_value=piece, name="%s/part_%d" % (base, k))
            kw.pop("dtype", None)
            variables.append(self._one(kw))
        scope = context.state.name_scope or ""
        return ShardedVariable(variables, name=scope + base)

    def call_for_each_replica(self, fn, args, kwargs):
        with self._container.scope():
            return fn(*args, **kwargs)


class ParameterServerStrategy(distribute_lib.Strategy):
    """Variables on parameter-server tasks, steps scheduled on workers by a coordinator.

    This process must be the chief (the coordinator): the cluster has a ``chief`` job,
    one or more ``ps`` tasks and one or more ``worker`` tasks, each of which runs the same
    script and serves (``ef.distribute.Server(...).join()``).

    Args:
        cluster_resolver: A ClusterResolver (e.g. ``TFConfigClusterResolver``).
        variable_partitioner: None (whole variables, round-robin over ps tasks) or a
            partitioner such as ``FixedShardsPartitioner(2)``.

    Raises:
        InvalidArgumentError: The cluster lacks a ps or worker job.

    Example:
        >>> import eagerflow as ef
        >>> ef.distribute.experimental.ParameterServerStrategy.__name__
        'ParameterServerStrategy'
    """

    def __init__(self, cluster_resolver, variable_partitioner=None):
        spec = cluster_resolver.cluster_spec()
        for job in ("ps", "worker"):
            if job not in spec.jobs or not spec.num_tasks(job):
                raise errors.InvalidArgumentError(
                    None, "ParameterServerStrategy", "The cluster needs a %r job (jobs: %s): "
                    "describe chief, ps and worker tasks in TF_CONFIG." % (job, spec.jobs))
        runtime = cluster_lib.current_runtime()
        if runtime is None:
            cluster_lib.experimental_connect_to_cluster(
                cluster_resolver, job_name=getattr(cluster_resolver, "task_type", None)
                or "chief", task_index=getattr(cluster_resolver, "task_id", None) or 0)
            runtime = cluster_lib.current_runtime()
        super().__init__(ParameterServerStrategyExtended(self, runtime, spec,
                                                         variable_partitioner))
        self._cluster_resolver = cluster_resolver

    @property
    def cluster_resolver(self):
        return self._cluster_resolver

    def _coordinator_for_fit(self):
        """The ClusterCoordinator Keras ``fit`` schedules its steps with (made on first use,
        as TF's fit does, unless one exists)."""
        coordinator = getattr(self, "_coordinator", None)
        if coordinator is None:
            from eagerflow.distribute.coordinator import ClusterCoordinator

            coordinator = ClusterCoordinator(self)
        return coordinator
