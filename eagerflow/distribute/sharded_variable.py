"""Variables split along their first axis across parameter servers, and the partitioners
that decide how many pieces (TF's ``tf.distribute.experimental.partitioners``).

A ``ShardedVariable`` looks like one variable to model code: its shape is the whole shape,
reading it concatenates the shards, assigning splits the value, ``ef.gather`` and
``ef.nn.embedding_lookup`` fetch each row from the shard that holds it (so only the rows
asked for cross the wire), and a checkpoint stores it as one whole tensor, so it restores
into any number of shards. Shards are contiguous row ranges; when the rows do not divide
evenly the first shards get one more (as TF does).

Example:
    >>> from eagerflow.distribute import sharded_variable as sv
    >>> sv.FixedShardsPartitioner(3)([10, 4], "float32")
    [3, 1]
    >>> sv.shard_sizes(10, 3)
    [4, 3, 3]
"""

from __future__ import annotations

import math

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.function import builtins

__all__ = ["Partitioner", "FixedShardsPartitioner", "MinSizePartitioner",
           "MaxSizePartitioner", "ShardedVariable", "shard_sizes"]


def shard_sizes(rows, num_shards):
    """Rows per shard: as even as possible, the first shards one larger."""
    base, extra = divmod(int(rows), int(num_shards))
    return [base + (1 if k < extra else 0) for k in range(int(num_shards))]


def _shape_list(shape):
    dims = list(getattr(shape, "as_list", lambda: shape)())
    if any(d is None for d in dims):
        raise errors.InvalidArgumentError(
            None, "Partitioner", "Cannot partition a variable of shape %s: every dimension "
            "must be known." % (dims,))
    return [int(d) for d in dims]


def _bytes_per_row(shape, dtype, bytes_per_string):
    dtype = dtypes_lib.as_dtype(dtype)
    size = bytes_per_string if dtype is dtypes_lib.string else dtype.size
    return size * math.prod(shape[1:])


class Partitioner:
    """Decides how a variable is split: ``partitioner(shape, dtype)`` returns the number of
    pieces along each axis (only the first may be above 1)."""

    def __call__(self, shape, dtype, axis=0):
        raise NotImplementedError


class FixedShardsPartitioner(Partitioner):
    """Splits every variable into ``num_shards`` pieces (fewer when it has fewer rows).

    Args:
        num_shards: A positive number of shards.
    """

    def __init__(self, num_shards):
        if int(num_shards) < 1:
            raise errors.InvalidArgumentError(
                None, "FixedShardsPartitioner", "num_shards must be positive, got %r." % (
                    num_shards,))
        self._num_shards = int(num_shards)

    def __call__(self, shape, dtype, axis=0):
        shape = _shape_list(shape)
        if not shape:
            return []
        return [min(self._num_shards, shape[0])] + [1] * (len(shape) - 1)


class MinSizePartitioner(Partitioner):
    """As many shards as keep each at least ``min_shard_bytes`` (at most ``max_shards``).

    Args:
        min_shard_bytes: Smallest bytes per shard (default 256 KiB).
        max_shards: Largest number of shards.
        bytes_per_string: Bytes counted per string element.
    """

    def __init__(self, min_shard_bytes=256 << 10, max_shards=1, bytes_per_string=16):
        if min_shard_bytes < 1 or max_shards < 1 or bytes_per_string < 1:
            raise errors.InvalidArgumentError(
                None, "MinSizePartitioner", "min_shard_bytes, max_shards and bytes_per_string "
                "must be positive.")
        self._min = int(min_shard_bytes)
        self._max_shards = int(max_shards)
        self._bps = int(bytes_per_string)

    def __call__(self, shape, dtype, axis=0):
        shape = _shape_list(shape)
        if not shape:
            return []
        total = shape[0] * _bytes_per_row(shape, dtype, self._bps)
        shards = max(1, min(shape[0], self._max_shards, total // self._min))
        return [shards] + [1] * (len(shape) - 1)


class MaxSizePartitioner(Partitioner):
    """As few shards as keep each at most ``max_shard_bytes`` (at most ``max_shards``).

    Args:
        max_shard_bytes: Largest bytes per shard.
        max_shards: Largest number of shards (None: no limit).
        bytes_per_string: Bytes counted per string element.
    """

    def __init__(self, max_shard_bytes, max_shards=None, bytes_per_string=16):
        if max_shard_bytes < 1 or (max_shards is not None and max_shards < 1) or \
                bytes_per_string < 1:
            raise errors.InvalidArgumentError(
                None, "MaxSizePartitioner", "max_shard_bytes, max_shards and "
                "bytes_per_string must be positive.")
        self._max = int(max_shard_bytes)
        self._max_shards = max_shards
        self._bps = int(bytes_per_string)

    def __call__(self, shape, dtype, axis=0):
        shape = _shape_list(shape)
        if not shape:
            return []
        row = max(1, _bytes_per_row(shape, dtype, self._bps))
        rows_per_shard = max(1, self._max // row)
        shards = max(1, min(shape[0], -(-shape[0] // rows_per_shard)))
        if self._max_shards is not None:
            shards = min(shards, int(self._max_shards))
        return [shards] + [1] * (len(shape) - 1)


class ShardedVariable:
    """One variable stored as row shards (each a variable on its own parameter server).

    Args:
        variables: The shards, in row order; all of one dtype, equal beyond axis 0.
        name: The whole variable's name.

    Attributes:
        variables: The shard variables.
    """

    _is_sharded_variable = True

    def __init__(self, variables, name=None):
        variables = list(variables)
        if not variables:
            raise errors.InvalidArgumentError(None, "ShardedVariable", "no shards given")
        first = variables[0]
        for v in variables[1:]:
            if v.dtype is not first.dtype or list(v.shape)[1:] != list(first.shape)[1:]:
                raise errors.InvalidArgumentError(
                    None, "ShardedVariable", "shards must share dtype and trailing shape: %s "
                    "%s vs %s %s" % (first.dtype.name, list(first.shape), v.dtype.name,
                                     list(v.shape)))
        self.variables = variables
        self._name = name or first.name.split("/part_")[0]
        rows = [int(v.shape[0]) for v in variables]
        self._offsets = list(np.cumsum([0] + rows[:-1]))
        self._rows = rows
        from eagerflow.tensor_shape import TensorShape

        self._shape = TensorShape([sum(rows)] + list(first.shape)[1:])

    # -- looks like one variable ----------------------------------------------------------
    name = property(lambda self: self._name)
    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self.variables[0].dtype)
    trainable = property(lambda self: self.variables[0].trainable)

    def get_shape(self):
        return self._shape

    def read_value(self):
        """The whole value (the shards concatenated along axis 0)."""
        import eagerflow as ef

        return ef.concat([v.read_value() for v in self.variables], 0)

    value = read_value

    def _as_tensor(self, dtype=None):
        return self.read_value()

    def numpy(self):
        return np.concatenate([v.numpy() for v in self.variables], axis=0)

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def _split(self, value):
        import eagerflow as ef

        value = ef.convert_to_tensor(value, dtype=self.dtype)
        if list(value.shape) != list(self._shape):
            raise errors.InvalidArgumentError(
                None, builtins.ASSIGN_VARIABLE, "Cannot assign a value of shape %s to sharded "
                "variable %s of shape %s." % (list(value.shape), self._name,
                                              list(self._shape)))
        return ef.split(value, self._rows, axis=0)

    def assign(self, value, use_locking=None, name=None, read_value=True):
        for v, part in zip(self.variables, self._split(value)):
            v.assign(part, read_value=False)
        return self if read_value else None

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        for v, part in zip(self.variables, self._split(delta)):
            v.assign_add(part, read_value=False)
        return self if read_value else None

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        for v, part in zip(self.variables, self._split(delta)):
            v.assign_sub(part, read_value=False)
        return self if read_value else None

    def _gather(self, indices, axis=None):
        """Rows ``indices`` (axis 0): each shard gathers its own rows where it lives and
        only those travel; the pieces are summed into place (each id hits one shard)."""
        import eagerflow as ef

        if axis not in (None, 0):
            return ef.gather(self.read_value(), indices, axis=axis)
        ids = ef.convert_to_tensor(indices)
        if len(self.variables) == 1:
            return ef.gather(self.variables[0], ids)
        self._check_ids(ids)
        out = None
        trailing = len(self._shape) - 1
        for v, start, rows in zip(self.variables, self._offsets, self._rows):
            local = ids - ef.cast(int(start), ids.dtype)
            inside = ef.logical_and(local >= 0, local < rows)
            safe = ef.where(inside, local, ef.zeros_like(local))
            with ef.device(getattr(v, "device", None) or None):
                rows_here = ef.gather(v, safe)
            mask = ef.reshape(ef.cast(inside, self.dtype),
                              ef.concat([ef.shape(inside), [1] * trailing], 0)) \
                if trailing else ef.cast(inside, self.dtype)
            piece = rows_here * mask
            out = piece if out is None else out + piece
        return out

    def _check_ids(self, ids):
        """Ids outside ``[0, rows)`` raise as a gather from one variable does (each shard
        masks the ids it does not hold, so without this an id no shard holds reads zeros)."""
        import eagerflow as ef
        from eagerflow.function.assertions import Assert
        from eagerflow.ops.static_value import constant_value

        total = int(self._shape[0])
        known = ids.numpy() if ef.executing_eagerly() else constant_value(ids)
        if known is not None:
            flat = np.asarray(known).reshape(-1)
            bad = np.flatnonzero((flat < 0) | (flat >= total))
            if bad.size:
                raise errors.InvalidArgumentError(
                    None, "GatherV2", "indices[%d] = %d is not in [0, %d) (sharded variable "
                    "%s)" % (bad[0], flat[bad[0]], total, self._name))
            return
        Assert(ef.reduce_all(ef.logical_and(ids >= 0, ids < ef.cast(total, ids.dtype))),
               ["indices of a gather from sharded variable %s must be in [0, %d); got"
                % (self._name, total), ids])

    def __repr__(self):
        return "<ShardedVariable %r shape=%s dtype=%s shards=%d>" % (
            self._name, list(self._shape), self.dtype.name, len(self.variables))


def _register():
    from eagerflow.ops import composite

    composite.register("gather", lambda params, indices, axis=None: params._gather(
        indices, axis), kind="sharded")


_register()
