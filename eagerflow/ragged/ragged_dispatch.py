"""Public ops on RaggedTensors, as TF's ragged dispatch runs them: ``tf.concat``, ``tf.stack``,
``tf.gather``, the reductions and every elementwise primitive accept RaggedTensors.

Each is registered with :mod:`eagerflow.ops.composite` when ``eagerflow.ragged`` is imported
(as it is before any of its modules), so a public op meets no RaggedTensor without its
implementation.

Example:
    >>> import eagerflow as ef
    >>> ef.reduce_max(ef.ragged.constant([[1, 5], [3]]), axis=1).numpy().tolist()
    [5, 3]
"""

from __future__ import annotations


from eagerflow import _api as api
from eagerflow import errors
from eagerflow import math as segments
from eagerflow.ops import composite
from eagerflow.ops.dispatch import execute
from eagerflow.ragged import ragged_broadcast
from eagerflow.ragged.ragged_array_ops import concat, gather, stack
from eagerflow.ragged.ragged_tensor import RaggedTensor, same_partitions

__all__ = []


def _dispatch_gather(params, indices, axis=None):
    if axis not in (None, 0):
        raise errors.UnimplementedError(
            None, "RaggedGather", "gather on a RaggedTensor supports axis 0, got %r." % axis)
    return gather(params, indices)


def _reduce(kind):
    """A tf.math reduction over a RaggedTensor: all values, the rows axis or the ragged axis."""
    def reduce(rt, axis=None, keepdims=False):
        if keepdims:
            raise errors.UnimplementedError(
                None, "RaggedReduce", "keepdims=True is not supported for RaggedTensors.")
        flat = rt.flat_values
        if axis is None:
            return getattr(api, "reduce_" + kind)(flat)
        if isinstance(axis, (list, tuple)):
            raise errors.UnimplementedError(
                None, "RaggedReduce", "ragged reductions take one axis, got %r." % (axis,))
        axis %= rt.ndim
        if rt.ragged_rank != 1 or axis > 1:
            raise errors.UnimplementedError(
                None, "RaggedReduce", "ragged reductions support ragged_rank 1 over axis 0 or "
                "1, got ragged_rank %d, axis %d." % (rt.ragged_rank, axis))
        if axis == 1 and rt.shape[0] is None:
            # Traced with an unknown number of rows (a RaggedTensorSpec signature): segment
            # ops need a static count, so reduce the padded rows, padding neutral.
            if kind in ("sum", "mean"):
                total = api.reduce_sum(rt.to_tensor(), 1)
                if kind == "sum":
                    return total
                lengths = api.cast(rt.row_lengths(), flat.dtype)
                return total / api.reshape(lengths, [-1] + [1] * (flat.ndim - 1))
            pad = flat.dtype.min if kind == "max" else flat.dtype.max
            return getattr(api, "reduce_" + kind)(rt.to_tensor(default_value=pad), 1)
        if axis == 1:
            ids = rt.value_rowids()
            n = len(rt)
            if kind in ("sum", "mean"):
                total = segments.unsorted_segment_sum(flat, ids, n)
                if kind == "sum":
                    return total
                lengths = api.cast(rt.row_lengths(), flat.dtype)
                shape = [-1] + [1] * (flat.ndim - 1)
                return total / api.reshape(lengths, shape)
            return getattr(segments, "unsorted_segment_" + kind)(flat, ids, n)
        # axis 0: down the columns of the padded rows, the padding neutral for the reduction
        if kind == "sum":
            return api.reduce_sum(rt.to_tensor(), 0)
        if kind == "mean":
            ones = rt.with_flat_values(api.ones_like(flat))
            return api.reduce_sum(rt.to_tensor(), 0) / api.reduce_sum(ones.to_tensor(), 0)
        pad = flat.dtype.min if kind == "max" else flat.dtype.max
        return getattr(api, "reduce_" + kind)(rt.to_tensor(default_value=pad), 0)
    return reduce


def _elementwise(prim, args, attrs):
    """An elementwise primitive with RaggedTensor arguments, run on their flat values (TF's
    ragged dispatch). Dense arguments broadcast by TF's ragged rules (ragged_broadcast):
    scalars and tensors over the inner (uniform) dimensions directly, deeper ones gathered
    onto the flat values."""
    template = next(a for a in args if isinstance(a, RaggedTensor))
    for a in args:
        if isinstance(a, RaggedTensor) and a is not template and \
                not same_partitions(template, a):
            raise errors.InvalidArgumentError(
                None, prim.name, "%s: the RaggedTensor arguments have different row "
                "partitions; element-wise ops need the same row_splits." % prim.name)
    if any(not isinstance(a, RaggedTensor) and ragged_broadcast.needs_broadcast(template, a)
           for a in args):
        result, out = ragged_broadcast.broadcast_operands(prim.name, template, args)
        return result.with_flat_values(execute(prim, tuple(out), attrs))
    out = [a.flat_values if isinstance(a, RaggedTensor) else a for a in args]
    return template.with_flat_values(execute(prim, tuple(out), attrs))


def _register():
    composite.register("elementwise", _elementwise)
    composite.register("concat", concat)
    composite.register("stack", stack)
    composite.register("gather", _dispatch_gather)
    for kind in ("sum", "mean", "max", "min"):
        composite.register("reduce_" + kind, _reduce(kind))


_register()
