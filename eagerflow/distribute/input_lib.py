"""Distributed input: global batches split across replicas, and per-replica pipelines.

``DistributedDataset`` wraps a dataset of *global* batches: each batch is split along its
first dimension into one slice per replica, as TF does: every replica gets
``ceil(global_batch / num_replicas)`` examples, in replica order, so a short last batch
leaves the last replicas fewer examples, possibly none (an empty batch, which the loss
helpers handle: ``compute_average_loss`` divides by the global batch size).

``DistributedDatasetsFromFunction`` calls ``dataset_fn(InputContext)`` once per worker; each
step takes one batch per local replica from it.

Example:
    >>> import eagerflow as ef
    >>> s = ef.distribute.get_strategy()
    >>> ds = ef.data.Dataset.range(4).batch(2)
    >>> [x.numpy().tolist() for x in s.experimental_distribute_dataset(ds)]
    [[0, 1], [2, 3]]
"""

from __future__ import annotations

from eagerflow import errors, nest
from eagerflow.distribute import values as values_lib
from eagerflow.framework import context
from eagerflow.tensor import Tensor, convert_to_tensor, wrap

__all__ = ["DistributedDataset", "DistributedDatasetsFromFunction", "DistributedIterator",
           "InputContext", "ValueContext", "split_batch"]


class InputContext:
    """What ``dataset_fn`` of ``distribute_datasets_from_function`` is told.

    Args:
        num_input_pipelines: How many pipelines (workers) there are.
        input_pipeline_id: This pipeline's index.
        num_replicas_in_sync: Replicas of the whole job.

    Example:
        >>> from eagerflow.distribute.input_lib import InputContext
        >>> InputContext(1, 0, 4).get_per_replica_batch_size(64)
        16
    """

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    num_input_pipelines = property(lambda self: self._num_input_pipelines)
    input_pipeline_id = property(lambda self: self._input_pipeline_id)
    num_replicas_in_sync = property(lambda self: self._num_replicas_in_sync)

    def get_per_replica_batch_size(self, global_batch_size):
        """``global_batch_size / num_replicas_in_sync``.

        Raises:
            ValueError: If it does not divide evenly.
        """
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError("The `global_batch_size` %r is not divisible by "
                             "`num_replicas_in_sync` %r " % (global_batch_size,
                                                             self._num_replicas_in_sync))
        return global_batch_size // self._num_replicas_in_sync

    def __repr__(self):
        return ("tf.distribute.InputContext(input pipeline id %d, total: %d)"
                % (self._input_pipeline_id, self._num_input_pipelines))


class ValueContext:
    """What ``experimental_distribute_values_from_function``'s ``value_fn`` is told."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self._replica_id = replica_id_in_sync_group
        self._num_replicas = num_replicas_in_sync

    replica_id_in_sync_group = property(lambda self: self._replica_id)
    num_replicas_in_sync = property(lambda self: self._num_replicas)


def split_batch(batch, global_batch_size, replica_ids, num_replicas, devices):
    """The slices of one global batch that ``replica_ids`` get, placed on ``devices``.

    Replica ``r`` gets rows ``[r * b, (r + 1) * b)`` (clipped to the batch), with
    ``b = ceil(global_batch_size / num_replicas)``.
    """
    per = -(-global_batch_size // num_replicas)
    leaves = nest.flatten(batch)
    out = []
    for r, device in zip(replica_ids, devices):
        parts = []
        for t in leaves:
            if not isinstance(t, Tensor):
                t = convert_to_tensor(t)
            n = t._value.shape[0] if t._value.ndim else None
            if n is None:
                raise errors.InvalidArgumentError(
                    None, "experimental_distribute_dataset", "A distributed dataset's "
                    "elements must be batched (rank >= 1) to be split across replicas; got "
                    "a scalar. Call dataset.batch(global_batch_size) first.")
            lo, hi = min(r * per, n), min((r + 1) * per, n)
            parts.append(_place(t._value[lo:hi], t._device, device))
        out.append(nest.pack_sequence_as(batch, parts))
    return out


def _place(array, source, device):
    if device is None or device is source:
        return wrap(array, source)
    from eagerflow.ops.dispatch import copy_to_device

    return copy_to_device(wrap(array, source), device)


def _first_dim(batch):
    for t in nest.flatten(batch):
        shape = getattr(t, "shape", None)
        if shape is not None and len(shape):
            return int(t._value.shape[0]) if isinstance(t, Tensor) else int(shape[0])
    raise errors.InvalidArgumentError(
        None, "experimental_distribute_dataset", "A distributed dataset's elements must be "
        "batched to be split across replicas. Call dataset.batch(global_batch_size) first.")


class DistributedIterator:
    """Iterates a distributed dataset: each element is a PerReplica of local slices."""

    def __init__(self, strategy, iterator, global_batch_size=None, per_replica_batches=False):
        self._strategy = strategy
        self._iterator = iterator
        self._global_batch_size = global_batch_size
        self._per_replica = per_replica_batches
        ext = strategy.extended
        self._ids = ext._replica_ids
        self._devices = [d or context.CPU0 for d in ext._devices]
        self._single = len(self._devices) == 1 and not ext._spans_workers

    def __iter__(self):
        return self

    def __next__(self):
        if self._per_replica:
            return self._next_per_replica()
        batch = next(self._iterator)
        if self._single:
            return batch if self._devices[0] is None else _to_device(batch, self._devices[0])
        if self._global_batch_size is None:
            self._global_batch_size = _first_dim(batch)
        parts = split_batch(batch, self._global_batch_size, self._ids,
                            self._strategy.num_replicas_in_sync, self._devices)
        return _per_replica(parts)

    def _next_per_replica(self):
        parts = []
        for device in self._devices:
            try:
                parts.append(_to_device(next(self._iterator), device))
            except StopIteration:
                if not parts:
                    raise
                # A replica whose pipeline ran out this step gets an empty batch.
                empty = nest.map_structure(lambda t, d=device: wrap(t._value[:0], d), parts[0])
                parts.append(empty)
        return parts[0] if self._single else _per_replica(parts)

    def get_next(self):
        """The next element (raises OutOfRangeError at the end, as TF)."""
        try:
            return next(self)
        except StopIteration:
            raise errors.OutOfRangeError(None, "get_next", "End of sequence") from None

    @property
    def element_spec(self):
        return None


def _to_device(batch, device):
    def move(t):
        if isinstance(t, Tensor) and t._device is not device:
            from eagerflow.ops.dispatch import copy_to_device

            return copy_to_device(t, device)
        return t

    return nest.map_structure(move, batch)


def _per_replica(parts):
    """One structure of PerReplica leaves from one structure per replica."""
    flats = [nest.flatten(p) for p in parts]
    leaves = [values_lib.PerReplica(vals) for vals in zip(*flats)]
    return nest.pack_sequence_as(parts[0], leaves)


class DistributedDataset:
    """A dataset of global batches, iterated as PerReplica slices (see module docs)."""

    def __init__(self, strategy, dataset, options=None):
        self._strategy = strategy
        self._dataset = dataset
        self._options = options

    def __iter__(self):
        return DistributedIterator(self._strategy, iter(self._dataset),
                                   self._static_batch_size())

    def _static_batch_size(self):
        spec = getattr(self._dataset, "element_spec", None)
        for s in nest.flatten(spec) if spec is not None else ():
            shape = getattr(s, "shape", None)
            dims = getattr(shape, "dims", None)
            if dims:
                first = dims[0]
                first = getattr(first, "value", first)
                if first is not None:
                    return int(first)
        return None  # taken from the first batch

    @property
    def element_spec(self):
        return getattr(self._dataset, "element_spec", None)

    def reduce(self, initial_state, reduce_func):
        state = initial_state
        for element in self:
            state = reduce_func(state, element)
        return state


class DistributedDatasetsFromFunction:
    """One pipeline per worker from ``dataset_fn(InputContext)``; a batch per replica."""

    def __init__(self, strategy, dataset_fn, options=None):
        ext = strategy.extended
        comm = ext._communicators[0]
        workers = max(1, comm.size // max(1, len(ext._devices)))
        worker = comm.rank // max(1, len(ext._devices))
        self._strategy = strategy
        self._context = InputContext(workers, worker, strategy.num_replicas_in_sync)
        self._dataset = dataset_fn(self._context)

    def __iter__(self):
        return DistributedIterator(self._strategy, iter(self._dataset),
                                   per_replica_batches=True)

    @property
    def element_spec(self):
        return getattr(self._dataset, "element_spec", None)
