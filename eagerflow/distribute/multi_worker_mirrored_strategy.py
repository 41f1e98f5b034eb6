"""MultiWorkerMirroredStrategy: synchronous data-parallel training over MPI processes.

Launch the same script on every worker with ``mpirun``::

    mpirun -n 2 python train.py          # mpirun is in the environment's bin/

Each process is one worker with one replica; ``rank`` and ``size`` come from MPI, so no
``TF_CONFIG`` is needed (a ``TFConfigClusterResolver`` is accepted when it agrees with
MPI). A plain ``python train.py`` is a one-worker job of the same script, without MPI.

What the strategy does, and why:

- Variables made in ``scope()`` take rank 0's initial value (one broadcast each, at
  creation), so every worker starts identical whatever its random seed.
- Gradients applied by an optimizer inside ``strategy.run`` (and any
  ``ReplicaContext.all_reduce``) go through gradient buckets
  (:mod:`eagerflow.distribute.bucketing`): a plan built once per set of shapes, a few
  fused all-reduces per step, checked on the first step to be the same on every rank.
  Inside ``@function`` the all-reduce is a ``CollectiveReduce`` graph node that runs the
  same buckets.
- ``experimental_distribute_dataset`` gives each worker its share of every global batch
  (:mod:`eagerflow.distribute.multi_worker_input`) and keeps the step count equal.
- Every collective has a deadline (``CommunicationOptions.timeout_seconds`` or
  ``EAGERFLOW_COLLECTIVE_TIMEOUT``); a rank that does not arrive gets a stall report,
  then the whole job stops with it; a rank that dies ends the job within milliseconds.
  Restart the same command and resume from a checkpoint (``BackupAndRestore``).

Communication does not overlap the backward pass: MPI makes no progress here while a
process computes without calling it (measured; see DISTRIBUTION-NOTES), so the
gradients are reduced after ``tape.gradient``, in a few large calls.

Example:
    >>> import eagerflow as ef
    >>> strategy = ef.distribute.MultiWorkerMirroredStrategy()  # 1 worker without mpirun
    >>> with strategy.scope():
    ...     v = ef.Variable(2.0)
    >>> strategy.num_replicas_in_sync, float(v)
    (1, 2.0)
"""

from __future__ import annotations

import operator

import numpy as np

from eagerflow import errors
from eagerflow.distribute.collective_util import (CommunicationImplementation,
                                                   CommunicationOptions)
from eagerflow.distribute.communicator import LocalCommunicator
from eagerflow.distribute.distribute_lib import Strategy, StrategyExtended
from eagerflow.framework import context

__all__ = ["MultiWorkerMirroredStrategy", "GradientReducer"]


class GradientReducer:
    """All-reduces lists of arrays through bucket plans, one plan per set of shapes.

    Args:
        comm: The Communicator.
        options: CommunicationOptions (``bytes_per_pack``, ``compression``).
    """

    def __init__(self, comm, options):
        self._comm = comm
        self._options = options
        self._plans = {}

    def reduce(self, arrays, op, name="gradients"):
        """The reduced arrays; the given arrays are never written (they may be a
        tensor's or a variable's storage): tensors the plan reduces in place (over the
        bucket cap, or alone in theirs) are copied first; bucketed ones are only read.

        The per-tensor work runs in C loops (map, tuple): with 200 small gradients the
        reducer costs about 10 us over the plan (it was about 450 us with a read-only
        view and a dtype lookup per tensor).
        """
        from eagerflow.distribute.bucketing import BucketPlan

        arrays = list(map(np.asarray, arrays))
        if op == "first":
            return self._comm.broadcast([np.array(a) for a in arrays], 0, name=name)
        key = (tuple(map(_SHAPE, arrays)), tuple(map(_DTYPE, arrays)))
        plan = self._plans.get(key, _NO_PLAN)
        if plan is _NO_PLAN:
            plan = None
            if all(d.kind == "f" for d in key[1]):
                plan = BucketPlan(key[0], key[1], self._options.bytes_per_pack,
                                  compression=self._options.compression)
            self._plans[key] = plan
        if plan is None or op not in ("sum", "mean"):
            return self._comm.allreduce([np.array(a) for a in arrays], op, name=name)
        for i in plan.in_place:
            arrays[i] = np.array(arrays[i])
        return plan.all_reduce(self._comm, arrays, op, name=name)


_NO_PLAN = object()
_SHAPE = operator.attrgetter("shape")
_DTYPE = operator.attrgetter("dtype")


class _WorkerGroup:
    """The ``function.collective`` group of a traced multi-worker step: ranks are processes."""

    def __init__(self, reducer, comm):
        self._reducer = reducer
        self._comm = comm
        self.size = comm.size

    def all_reduce(self, rank, arrays, op, instance):
        return self._reducer.reduce(list(arrays), op, name="all_reduce (traced)")

    def all_gather(self, rank, array, instance):
        return self._comm.allgather(np.asarray(array), name="all_gather (traced)")


class MultiWorkerExtended(StrategyExtended):
    """One local replica whose communicator joins the workers (MPI or a world of one)."""

    def __init__(self, container, comm, options, resolver):
        from eagerflow.distribute.mirrored_strategy import default_devices

        self._comm = comm
        self._options = options
        self._cluster_resolver = resolver
        self._reducer = GradientReducer(comm, options)
        super().__init__(container, [default_devices()[0]], [comm],
                         timeout=comm.default_timeout)
        self._sharded_updates = None
        if options.shard_optimizer_updates and comm.size > 1:
            from eagerflow.distribute.update_sharding import ShardedUpdates

            self._sharded_updates = ShardedUpdates(self)

    # -- facts ---------------------------------------------------------------------------
    @property
    def _in_multi_worker_mode(self):
        return self._comm.size > 1

    @property
    def should_checkpoint(self):
        """Only the chief (rank 0) writes checkpoints, saved models and logs."""
        return self._comm.rank == 0

    @property
    def should_save_summary(self):
        return self._comm.rank == 0

    @property
    def task_type(self):
        return "worker"

    @property
    def task_id(self):
        return self._comm.rank

    @property
    def communicator(self):
        return self._comm

    def barrier(self, name=None, timeout=None):
        """Waits for every worker (with the collective deadline)."""
        self._comm.barrier(name=name, timeout=timeout)

    def _collective_group(self):
        return _WorkerGroup(self._reducer, self._comm)

    # -- variables: rank 0's initial values everywhere -----------------------------------
    def _make_variable(self, next_creator, kwargs, sync, aggregation):
        if self._comm.size > 1:
            from eagerflow.distribute.distribute_lib import _device_scope
            from eagerflow.tensor import convert_to_tensor

            from eagerflow.distribute.distribute_lib import _state

            initial = kwargs.get("initial_value")
            trace = _state.trace
            # Inside a trace the value is made eagerly (as Variable itself does: TF's
            # init_scope), so there is a concrete value to broadcast.
            previous = context.set_trace_hook(None) if trace is not None else None
            try:
                if callable(initial):
                    with _device_scope(self._devices[0]):
                        initial = initial()
                if trace is not None and getattr(initial, "_graph", None) is not None:
                    initial = trace.lift(initial)
            finally:
                if trace is not None:
                    context.set_trace_hook(previous)
            if initial is None:
                return super()._make_variable(next_creator, kwargs, sync, aggregation)
            value = convert_to_tensor(initial, dtype=kwargs.get("dtype"))
            array = np.array(value._value)
            self._comm.broadcast([array], 0, name="initial value of %s"
                                 % (kwargs.get("name") or "a variable"))
            kwargs = dict(kwargs, initial_value=array)
        return super()._make_variable(next_creator, kwargs, sync, aggregation)

    def _reduce(self, op, value):
        # One local replica: ``run`` returns its plain value, which is this worker's
        # replica value (as TF's MultiWorkerMirroredStrategy treats it).
        from eagerflow import nest
        from eagerflow.distribute import values as values_lib

        if self._spans_workers and not nest.is_nested(value) and not isinstance(
                value, values_lib.DistributedValues) and \
                not getattr(value, "_is_distributed_variable", False):
            return self._reduce_components(op, [value])
        return super()._reduce(op, value)

    # -- gradients through the buckets ---------------------------------------------------
    def _all_reduce(self, replica, op, tensors):
        from eagerflow.distribute.distribute_lib import _state
        from eagerflow.tensor import wrap

        if self._num_replicas_in_sync == 1 or _state.trace is not None:
            return super()._all_reduce(replica, op, tensors)
        out = self._reducer.reduce([t._value for t in tensors], op)
        device = self._devices[0] or context.CPU0
        return [wrap(a, device) for a in out]


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous training across processes started by ``mpirun`` (TF's strategy).

    Args:
        cluster_resolver: None (rank and size from MPI; one worker without ``mpirun``),
            an ``MPIClusterResolver``, or a ``TFConfigClusterResolver`` whose worker count
            and index must match MPI's size and rank.
        communication_options: ``tf.distribute.experimental.CommunicationOptions``:
            ``bytes_per_pack`` (bucket cap), ``timeout_seconds`` (every collective's
            deadline), ``implementation`` (AUTO/RING; NCCL is not available),
            ``compression`` (eagerflow: None, "fp16" or "bf16"),
            ``shard_optimizer_updates`` (eagerflow: each worker updates its rows only).

    Raises:
        InvalidArgumentError: the resolver disagrees with MPI, or NCCL was asked for.
        FailedPreconditionError: started by ``mpirun`` but mpi4py is missing.

    Example:
        >>> import eagerflow as ef
        >>> s = ef.distribute.MultiWorkerMirroredStrategy()
        >>> s.cluster_resolver.task_type, s.cluster_resolver.task_id
        ('worker', 0)
    """

    def __init__(self, cluster_resolver=None, communication_options=None):
        from eagerflow.distribute import cluster_resolver as resolvers

        options = CommunicationOptions().merge(communication_options)
        if options.implementation is CommunicationImplementation.NCCL:
            raise errors.InvalidArgumentError(
                None, "MultiWorkerMirroredStrategy", "CommunicationImplementation.NCCL is "
                "not available in this build; use AUTO or RING (MPI)")
        mpi = resolvers.MPIClusterResolver()
        if cluster_resolver is None:
            cluster_resolver = mpi
        elif cluster_resolver is not mpi and not isinstance(cluster_resolver,
                                                            resolvers.MPIClusterResolver):
            want = (cluster_resolver.num_workers, cluster_resolver.worker_index)
            if want != (mpi.num_workers, mpi.worker_index):
                raise errors.InvalidArgumentError(
                    None, "MultiWorkerMirroredStrategy", "the cluster resolver describes "
                    "worker %d of %d but MPI started this process as rank %d of %d; "
                    "launch with `mpirun -n %d python ...` (rank = worker index)"
                    % (want[1], want[0], mpi.worker_index, mpi.num_workers, want[0]))
        if mpi.num_workers > 1:
            from eagerflow.distribute.mpi_communicator import MPICommunicator

            comm = MPICommunicator(mpi.comm, default_timeout=options.timeout_seconds)
        else:
            from eagerflow.distribute.mpi_communicator import default_timeout_from_env

            comm = LocalCommunicator.create_group(
                1, options.timeout_seconds or default_timeout_from_env())[0]
        self._cluster_resolver = cluster_resolver
        super().__init__(MultiWorkerExtended(self, comm, options, cluster_resolver))

    @property
    def cluster_resolver(self):
        return self._cluster_resolver

    def experimental_distribute_dataset(self, dataset, options=None):
        """This worker's share of each global batch (see ``multi_worker_input``)."""
        from eagerflow.distribute import multi_worker_input

        return multi_worker_input.MultiWorkerDataset(self, dataset, options)
