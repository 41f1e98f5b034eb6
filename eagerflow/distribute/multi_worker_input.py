"""Input for a multi-worker strategy: each worker's share of the data, the same step count.

``experimental_distribute_dataset(dataset)`` under MultiWorkerMirroredStrategy takes a
dataset of *global* batches and gives each worker its share, by the dataset's
``options().experimental_distribute.auto_shard_policy`` (TF's ``AutoShardPolicy``):

- ``FILE``: the file names are sharded: the input of the pipeline's first
  ``interleave``/``flat_map`` (the dataset of file names, as in
  ``Dataset.from_tensor_slices(files).interleave(read)``) gets ``.shard(workers, index)``;
  each worker reads its own files and batches ``global_batch / workers`` examples.
  A pipeline with no such stage fails with an error (as TF).
- ``DATA``: elements are sharded before the last ``batch``: ``x.batch(B)`` becomes
  ``x.shard(workers, index).batch(B / workers)``. Worker ``i`` processes only its
  elements, and the union of the workers' k-th batches is exactly the k-th global batch,
  so training sees the same examples per step as one process (summed in another order).
- ``AUTO`` (default): FILE where the pipeline reads files, else DATA.
- ``OFF``: every worker reads every global batch and keeps its slice of it (rows
  ``[i * b, (i + 1) * b)``, ``b = ceil(B / workers)``): the same split as MirroredStrategy.

DATA needs a ``batch`` whose size the worker count divides; otherwise the OFF split is
used (still exact). Whatever the policy, the workers agree at every step whether any of
them still has data (one tiny all-reduce): a worker whose share ran out gets an empty
batch (zero rows) until all have run out, so uneven data never leaves a rank waiting in a
collective the others never reach.
"""

from __future__ import annotations

import copy

import numpy as np

from eagerflow import errors, nest
from eagerflow.distribute import input_lib
from eagerflow.framework import context
from eagerflow.tensor import Tensor, wrap

__all__ = ["MultiWorkerDataset", "shard_for_worker"]


def _policy(dataset, options):
    from eagerflow.data.options import AutoShardPolicy

    policy = None
    for opts in (options, _dataset_options(dataset)):
        dist = getattr(opts, "experimental_distribute", None)
        value = getattr(dist, "auto_shard_policy", None) if dist is not None else None
        if value is not None:
            policy = value
            break
    return AutoShardPolicy(int(policy)) if policy is not None else AutoShardPolicy.AUTO


def _dataset_options(dataset):
    try:
        return dataset.options()
    except Exception:  # noqa: BLE001 - a dataset-like object without options
        return None


def _chain(dataset):
    """The unary chain from the output dataset towards its source."""
    out = [dataset]
    while len(getattr(out[-1], "_inputs", ())) == 1:
        out.append(out[-1]._inputs[0])
    return out


def _rebuild(chain, k, replacement):
    """The chain's output dataset with node ``k`` replaced by ``replacement``."""
    node = replacement
    for parent in reversed(chain[:k]):
        twin = copy.copy(parent)
        twin._inputs = (node,)
        twin._spec = None
        node = twin
    return node


def shard_for_worker(dataset, num_workers, index, options=None):
    """This worker's dataset and whether each of its batches must still be split.

    Returns:
        ``(dataset, split)``: with ``split`` True the dataset still yields global
        batches (OFF, or DATA that could not be rewritten) and each is split by rank.

    Raises:
        InvalidArgumentError: FILE was asked for and the pipeline reads no files.
    """
    from eagerflow.data.batching import BatchDataset
    from eagerflow.data.mapping import FlatMapDataset, InterleaveDataset
    from eagerflow.data.options import AutoShardPolicy

    policy = _policy(dataset, options)
    if num_workers == 1 or policy is AutoShardPolicy.OFF or not hasattr(dataset, "_inputs"):
        return dataset, num_workers > 1
    chain = _chain(dataset)
    batch_at = next((k for k, d in enumerate(chain) if isinstance(d, BatchDataset)), None)
    readers = [k for k, d in enumerate(chain) if isinstance(d, (InterleaveDataset,
                                                                FlatMapDataset))]
    divisible = batch_at is not None and chain[batch_at]._batch_size % num_workers == 0
    if policy in (AutoShardPolicy.FILE, AutoShardPolicy.AUTO) and readers and divisible \
            and readers[-1] > batch_at:
        k = readers[-1]  # the stage nearest the source reads the files
        reader = chain[k]
        files = reader._inputs[0].shard(num_workers, index)
        twin = copy.copy(reader)
        twin._inputs = (files,)
        twin._spec = None
        sharded = _rebuild(chain, k, twin)
        return _rebatch(sharded, batch_at, num_workers), False
    if policy is AutoShardPolicy.FILE:
        raise errors.InvalidArgumentError(
            None, "experimental_distribute_dataset", "AutoShardPolicy.FILE: found no stage "
            "that reads files (an interleave or flat_map over a dataset of file names, "
            "before a batch the %d workers divide); use AutoShardPolicy.DATA or OFF"
            % num_workers)
    if divisible:
        batch = chain[batch_at]
        sharded = BatchDataset(batch._inputs[0].shard(num_workers, index),
                               batch._batch_size // num_workers, batch._drop_remainder)
        return _rebuild(chain, batch_at, sharded), False
    return dataset, True


def _rebatch(dataset, batch_at, num_workers):
    """The chain with its batch at ``batch_at`` made ``num_workers`` times smaller."""
    from eagerflow.data.batching import BatchDataset

    chain = _chain(dataset)
    batch = chain[batch_at]
    smaller = BatchDataset(batch._inputs[0], batch._batch_size // num_workers,
                           batch._drop_remainder)
    return _rebuild(chain, batch_at, smaller)


class MultiWorkerDataset:
    """This worker's share of a dataset of global batches (see the module docs)."""

    def __init__(self, strategy, dataset, options=None):
        ext = strategy.extended
        self._strategy = strategy
        self._comm = ext._communicators[0]
        self._dataset = dataset
        self._local, self._split = shard_for_worker(dataset, self._comm.size,
                                                    self._comm.rank, options)

    def __iter__(self):
        return MultiWorkerIterator(self._strategy, iter(self._local), self._split,
                                   input_lib.DistributedDataset(
                                       self._strategy, self._dataset)._static_batch_size())

    @property
    def element_spec(self):
        return getattr(self._dataset, "element_spec", None)

    def reduce(self, initial_state, reduce_func):
        state = initial_state
        for element in self:
            state = reduce_func(state, element)
        return state


class MultiWorkerIterator:
    """Yields this worker's batch of each step until every worker has run out."""

    def __init__(self, strategy, iterator, split, global_batch_size):
        self._strategy = strategy
        self._iterator = iterator
        self._split = split
        self._global = global_batch_size
        ext = strategy.extended
        self._comm = ext._communicators[0]
        self._device = ext._devices[0] or context.CPU0
        self._last = None
        self._done = False

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        try:
            batch = next(self._iterator)
            have = 1
        except StopIteration:
            batch, have = None, 0
        flags = self._comm.allreduce([np.array([have], np.int32)], "max",
                                     name="distributed dataset: any worker has data")[0]
        if not flags[0]:
            self._done = True
            raise StopIteration
        if batch is None:
            if self._last is None:
                raise errors.OutOfRangeError(
                    None, "experimental_distribute_dataset", "worker %d has no data at all "
                    "while others still do; give every worker at least one batch"
                    % self._comm.rank)
            batch = nest.map_structure(lambda t: wrap(t._value[:0], t._device), self._last)
        elif self._split:
            if self._global is None:
                self._global = input_lib._first_dim(batch)
            batch = input_lib.split_batch(batch, self._global, [self._comm.rank],
                                          self._comm.size, [self._device])[0]
        else:
            batch = input_lib._to_device(batch, self._device)
        self._last = batch
        return input_lib._per_replica([_tensors(batch)])

    def get_next(self):
        """The next element (raises OutOfRangeError at the end, as TF)."""
        try:
            return next(self)
        except StopIteration:
            raise errors.OutOfRangeError(None, "get_next", "End of sequence") from None

    @property
    def element_spec(self):
        return None


def _tensors(batch):
    return nest.map_structure(lambda t: t if isinstance(t, Tensor) else wrap(np.asarray(t)),
                              batch)
