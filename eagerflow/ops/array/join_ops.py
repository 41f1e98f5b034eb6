"""Joining and splitting: concat, split, stack and unstack.

Concat and split (``ConcatV2``, ``SplitV``, ``Split``) are each other's gradients, as are
stack and unstack (``Pack``, ``Unpack``). Split and unstack return views of their input.
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import ZEROS_LIKE
from eagerflow.ops.math.broadcast import SUM_TO_SHAPE
from eagerflow.ops.array import (
    _SWEEP, _as_tensor, _axis, _dims, _err, _new_axis, _range, _scalar_axis, int_tuple,
)
from eagerflow.ops.array.creation_ops import FILL
from eagerflow.ops import composite
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, _sample_values
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor, is_tensor

__all__ = ["concat", "stack", "unstack", "split"]

EXPORTS = {
    "": ["concat", "stack", "unstack", "split"],
}


def _zeros_shaped(template, shape):
    """Zeros of ``shape`` with the dtype and device of ``template``."""
    zero = execute(SUM_TO_SHAPE, (execute(ZEROS_LIKE, (template,)),), {"shape": ()})
    return execute(FILL, (zero,), {"shape": int_tuple(shape, "zeros")})


# --- ConcatV2 / SplitV / Split ----------------------------------------------------------------

def _concat_axis_and_check(shapes, axis):
    """Validates concat inputs (tuples of dims, None allowed) and returns the axis."""
    rank = len(shapes[0])
    if rank == 0:
        raise _err("cannot concatenate 0-d tensors (input 0 is a scalar); use stack to join "
                   "scalars into a vector.")
    a = _axis(axis, rank)
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != rank:
            raise _err("input %d has rank %d (shape %s) but input 0 has rank %d (shape %s); "
                       "all inputs must have the same rank." % (i, len(s), list(s), rank,
                                                                list(shapes[0])))
        for k in _range(rank):
            if k != a and s[k] != shapes[0][k] and None not in (s[k], shapes[0][k]):
                raise _err("input %d has shape %s, incompatible with input 0's shape %s: "
                           "every dimension except the concat axis %d must match."
                           % (i, list(s), list(shapes[0]), a))
    return a


def _concat_kernel(xp):
    concatenate = xp.concatenate

    def kernel(*xs, axis):
        a = _concat_axis_and_check([x.shape for x in xs], axis)
        if len(xs) == 1:
            return xs[0]
        return concatenate(xs, axis=a)
    return kernel


def _concat_shape(*xs, axis):
    shapes = [_dims(x) for x in xs]
    if any(s is None for s in shapes):
        return AbstractValue(None, xs[0].dtype)
    a = _concat_axis_and_check(shapes, axis)
    out = list(shapes[0])
    for k in _range(len(out)):
        if k != a:
            out[k] = next((s[k] for s in shapes if s[k] is not None), None)
    sizes = [s[a] for s in shapes]
    out[a] = None if None in sizes else sum(sizes)
    return AbstractValue(out, xs[0].dtype)


def _split_sizes_for_grad(inputs, axis, op):
    sizes = []
    for x in inputs:
        dims = _dims(x)
        sizes.append(None if dims is None else dims[axis])
    if sizes.count(None) > 1:
        raise errors.UnimplementedError(
            None, op, "%s: the gradient needs the sizes of the inputs along axis %d, but %d of "
            "them are unknown in this trace. Give the inputs static sizes along that axis "
            "(input_signature)." % (op, axis, sizes.count(None)))
    return tuple(-1 if s is None else s for s in sizes)


def _concat_vjp(g, *args, axis):
    inputs = args[:-1]
    a = _axis(axis, len(g.shape))
    sizes = [None if _dims(x) is None else _dims(x)[a] for x in inputs]
    if sizes.count(None) > 1:
        return _concat_vjp_dynamic(g, inputs, a)
    sizes = _split_sizes_for_grad(inputs, a, "ConcatV2")
    return tuple(execute(SPLITV, (g,), {"size_splits": sizes, "axis": a}))


def _concat_vjp_dynamic(g, inputs, axis):
    """The gradient when several inputs' sizes along ``axis`` are known only at run time (a
    traced function over values of any length): each input's slice of ``g`` is a gather of
    the positions it occupied, whose bounds are computed from the inputs' shapes."""
    from eagerflow import dtypes as d
    from eagerflow.ops.array.range_dynamic import DYNAMIC_RANGE
    from eagerflow.ops.array.shape_ops import shape
    from eagerflow.ops.indexing.gather_ops import gather

    out = []
    start = convert_to_tensor(np.zeros((), np.int64))
    one = convert_to_tensor(np.ones((), np.int64))
    for x in inputs:
        stop = start + shape(x, out_type=d.int64)[axis]
        positions = execute(DYNAMIC_RANGE, (start, stop, one), {"dtype": "int64"})
        out.append(gather(g, positions, axis=axis))
        start = stop
    return tuple(out)


def _concat_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 3)), v((1, 3))), {"axis": 0}), ((v((2, 3)), v((2, 1)), v((2, 2))),
                                                    {"axis": -1}),
            ((v((2,)),), {"axis": 0}), ((v((0, 2)), v((3, 2))), {"axis": 0}),
            ((v((2, 0)), v((2, 0))), {"axis": 1})]


CONCAT = registry.primitive(
    "ConcatV2", _concat_kernel, dtypes=ALL, family="array", variadic=True,
    shape_fn=_concat_shape, vjp=_concat_vjp, saves=("all",),
    reference=lambda *xs, axis: np.concatenate(xs, axis=axis), samples=_concat_samples,
    sweep_dtypes=_SWEEP,
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32), np.zeros((2, 2), np.float32)), {"axis": 0},
         errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32), np.zeros((3,), np.float32)), {"axis": 0},
         errors.InvalidArgumentError),
        ((np.zeros((), np.float32), np.zeros((), np.float32)), {"axis": 0},
         errors.InvalidArgumentError),
        ((np.zeros((2,), np.float32),), {"axis": 1}, errors.InvalidArgumentError)])


def _resolve_splits(size_splits, dim):
    """Replaces one -1 in ``size_splits`` by what is left of ``dim``; validates the sum."""
    unknown = [i for i, s in enumerate(size_splits) if s == -1]
    if len(unknown) > 1:
        raise _err("size_splits %s may contain at most one -1." % list(size_splits))
    if any(s < -1 for s in size_splits):
        raise _err("size_splits %s has a negative size." % list(size_splits))
    known = sum(s for s in size_splits if s != -1)
    if dim is None:
        return size_splits
    if unknown:
        if known > dim:
            raise _err("size_splits %s add up to %d, more than the split dimension's size %d."
                       % (list(size_splits), known, dim))
        k = unknown[0]
        return size_splits[:k] + (dim - known,) + size_splits[k + 1:]
    if known != dim:
        raise _err("size_splits %s add up to %d, but the split dimension has size %d; the "
                   "sizes must add up to it (use -1 for one size to infer it)."
                   % (list(size_splits), known, dim))
    return size_splits


def _splitv_kernel(xp):
    def kernel(x, *, size_splits, axis):
        a = _axis(axis, x.ndim)
        sizes = _resolve_splits(size_splits, x.shape[a])
        index = [slice(None)] * x.ndim
        outs = []
        start = 0
        for s in sizes:
            index[a] = slice(start, start + s)
            outs.append(x[tuple(index)])
            start += s
        return tuple(outs)
    return kernel


def _splitv_shape(x, *, size_splits, axis):
    dims = _dims(x)
    if dims is None:
        return tuple(AbstractValue(None, x.dtype) for _ in size_splits)
    a = _axis(axis, len(dims))
    if None in size_splits:  # sizes known only when the graph runs (checked then)
        return tuple(AbstractValue(dims[:a] + (None if s is None or s == -1 else s,) +
                                   dims[a + 1:], x.dtype) for s in size_splits)
    sizes = _resolve_splits(size_splits, dims[a])
    return tuple(AbstractValue(dims[:a] + (None if s == -1 else s,) + dims[a + 1:], x.dtype)
                 for s in sizes)


def _fill_like(gs):
    """Absent cotangents of equal-shaped outputs as zeros like a present one (None if all
    are absent)."""
    present = next((g for g in gs if g is not None), None)
    if present is None:
        return None
    zero = None
    filled = []
    for g in gs:
        if g is None:
            zero = zero if zero is not None else execute(ZEROS_LIKE, (present,))
            g = zero
        filled.append(g)
    return filled


def _splitv_vjp(gs, x, out, *, size_splits, axis):
    present = next((g for g in gs if g is not None), None)
    if present is None:
        return None
    filled = []
    for k, (g, size) in enumerate(zip(gs, size_splits)):
        if g is None:
            if size == -1:
                raise errors.UnimplementedError(
                    None, "SplitV", "SplitV: cannot build a zero gradient for the output whose "
                    "size is inferred (-1) in this trace; pass static sizes.")
            dims = list(_dims(present))
            if size is None or None in dims:  # sizes known only when the graph runs
                from eagerflow.ops.array.shape_ops import shape as shape_of

                runtime = shape_of(present)
                dims = [runtime[j] if v is None else v for j, v in enumerate(dims)]
                if size is None:
                    size = size_splits.tensor[k]
            dims[axis % len(dims)] = size
            g = _zeros_shaped(present, dims)
        filled.append(g)
    return execute(CONCAT, tuple(filled), {"axis": axis})


def _split_vjp(gs, x, out, *, num_split, axis):
    filled = _fill_like(gs)
    return None if filled is None else execute(CONCAT, tuple(filled), {"axis": axis})


def _splitv_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((5, 2)),), {"size_splits": (2, 3), "axis": 0}),
            ((v((2, 6)),), {"size_splits": (1, -1, 2), "axis": -1}),
            ((v((4,)),), {"size_splits": (0, 4), "axis": 0}),
            ((v((3,)),), {"size_splits": (3,), "axis": 0})]


def _splitv_reference(x, *, size_splits, axis):
    sizes = _resolve_splits(tuple(size_splits), x.shape[axis])
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


SPLITV = registry.primitive(
    "SplitV", _splitv_kernel, dtypes=ALL, family="array",
    num_outputs=lambda attrs: len(attrs["size_splits"]), shape_fn=_splitv_shape,
    vjp=_splitv_vjp, saves=(), reference=_splitv_reference, samples=_splitv_samples,
    sweep_dtypes=_SWEEP,
    bad_samples=lambda rng: [
        ((np.zeros(5, np.float32),), {"size_splits": (2, 2), "axis": 0},
         errors.InvalidArgumentError),
        ((np.zeros(5, np.float32),), {"size_splits": (-1, -1), "axis": 0},
         errors.InvalidArgumentError),
        ((np.zeros(5, np.float32),), {"size_splits": (6, -1), "axis": 0},
         errors.InvalidArgumentError),
        ((np.zeros(5, np.float32),), {"size_splits": (5,), "axis": 1},
         errors.InvalidArgumentError)])


def _split_kernel(xp):
    def kernel(x, *, num_split, axis):
        a = _axis(axis, x.ndim)
        dim = x.shape[a]
        if num_split <= 0 or dim % num_split:
            raise _err("Number of ways to split should evenly divide the split dimension, but "
                       "got split_dim %d (size = %d) and num_split %d. Pass a list of sizes "
                       "to split unevenly." % (a, dim, num_split))
        step = dim // num_split
        index = [slice(None)] * x.ndim
        outs = []
        for i in _range(num_split):
            index[a] = slice(i * step, (i + 1) * step)
            outs.append(x[tuple(index)])
        return tuple(outs)
    return kernel


def _split_shape(x, *, num_split, axis):
    dims = _dims(x)
    if dims is None:
        return tuple(AbstractValue(None, x.dtype) for _ in _range(num_split))
    a = _axis(axis, len(dims))
    dim = dims[a]
    if dim is not None and (num_split <= 0 or dim % num_split):
        raise _err("Number of ways to split should evenly divide the split dimension, but "
                   "got split_dim %d (size = %d) and num_split %d." % (a, dim, num_split))
    part = None if dim is None else dim // num_split
    return tuple(AbstractValue(dims[:a] + (part,) + dims[a + 1:], x.dtype)
                 for _ in _range(num_split))


SPLIT = registry.primitive(
    "Split", _split_kernel, dtypes=ALL, family="array",
    num_outputs=lambda attrs: attrs["num_split"], shape_fn=_split_shape, vjp=_split_vjp,
    saves=(), reference=lambda x, *, num_split, axis: tuple(np.split(x, num_split, axis)),
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (6, 2), dtype, (-3, 3)),), {"num_split": 3, "axis": 0}),
        ((_sample_values(rng, (2, 4), dtype, (-3, 3)),), {"num_split": 2, "axis": -1}),
        ((_sample_values(rng, (0, 4), dtype, (-3, 3)),), {"num_split": 2, "axis": 0}),
        ((_sample_values(rng, (3,), dtype, (-3, 3)),), {"num_split": 1, "axis": 0})],
    sweep_dtypes=_SWEEP,
    bad_samples=lambda rng: [
        ((np.zeros(5, np.float32),), {"num_split": 2, "axis": 0}, errors.InvalidArgumentError),
        ((np.zeros(4, np.float32),), {"num_split": 2, "axis": 1}, errors.InvalidArgumentError)])


def concat(values, axis, name="concat"):
    """Concatenates tensors along one dimension.

    Args:
        values: A list of Tensors of the same dtype and rank, whose dimensions match except
            along ``axis``.
        axis: The dimension to join along (negative counts from the end).
        name: Unused (TF compatibility).

    Returns:
        A Tensor whose size along ``axis`` is the sum of the inputs' sizes.

    Raises:
        InvalidArgumentError: If the list is empty, or an input's rank, shape or dtype does
            not match input 0 (the message names the offending input's index).

    Example:
        >>> import eagerflow as ef
        >>> ef.concat([[[1, 2]], [[3, 4]]], axis=0).numpy().tolist()
        [[1, 2], [3, 4]]
    """
    if isinstance(values, (list, tuple)) and values and values[0].__class__ is not Tensor:
        ragged = composite.handler("concat", *values)
        if ragged is not None:
            return ragged(values, axis)
    if not isinstance(values, (list, tuple)):
        values = [values]
    if not values:
        raise errors.InvalidArgumentError(
            None, "ConcatV2", "concat: values is empty; pass a list of at least one tensor.")
    return execute(CONCAT, tuple(values), {"axis": _scalar_axis(axis, "concat")})


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits a tensor into sub-tensors along ``axis``.

    Args:
        value: The Tensor to split.
        num_or_size_splits: An int ``n`` (``n`` equal parts; the dimension must divide
            evenly) or a list of sizes that add up to the dimension, one of which may be -1
            to take the rest.
        axis: The dimension to split.
        num: Optional number of outputs, checked against the sizes.
        name: Unused (TF compatibility).

    Returns:
        A list of Tensors.

    Raises:
        InvalidArgumentError: If the parts do not divide or add up to the dimension.

    Example:
        >>> import eagerflow as ef
        >>> [t.numpy().tolist() for t in ef.split(ef.range(5), [2, -1])]
        [[0, 1], [2, 3, 4]]
    """
    axis = _scalar_axis(axis, "split")
    n = _count_or_none(num_or_size_splits)
    if n is not None:
        if n <= 0:
            raise errors.InvalidArgumentError(
                None, "Split", "split: num_or_size_splits must be positive, got %d." % n)
        return list(execute(SPLIT, (value,), {"num_split": n, "axis": axis}))
    sizes = int_tuple(num_or_size_splits, "split", "num_or_size_splits")
    if not sizes:
        raise errors.InvalidArgumentError(
            None, "SplitV", "split: num_or_size_splits is an empty list; give at least one "
            "size.")
    if num is not None and num != len(sizes):
        raise errors.InvalidArgumentError(
            None, "SplitV", "split: num=%d does not match the %d sizes %s."
            % (num, len(sizes), list(sizes)))
    value = _as_tensor(value)
    if -1 in sizes:
        dims = _dims(value)
        if dims is not None and -len(dims) <= axis < len(dims) and dims[axis] is not None:
            # Resolve it here, so the gradient knows every output's size.
            try:
                sizes = _resolve_splits(sizes, dims[axis])
            except errors.InvalidArgumentError:
                pass  # the kernel raises with the full context
    return list(execute(SPLITV, (value,), {"size_splits": sizes, "axis": axis}))


def _count_or_none(v):
    if v.__class__ is int:
        return v
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (Tensor, np.ndarray)) and np.ndim(v) == 0:
        return int(np.asarray(v))
    return None


# --- Pack / Unpack ----------------------------------------------------------------------------

def _pack_check(shapes, axis):
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != len(shapes[0]) or any(
                a != b and None not in (a, b) for a, b in zip(s, shapes[0])):
            raise _err("input %d has shape %s but input 0 has shape %s; stack needs inputs "
                       "of one shape." % (i, list(s), list(shapes[0])))
    return _new_axis(axis, len(shapes[0]))


def _pack_kernel(xp):
    stack_, empty = xp.stack, xp.empty

    def kernel(*xs, axis):
        a = _pack_check([x.shape for x in xs], axis)
        first = xs[0]
        if first.dtype.kind == "O":
            return stack_(xs, axis=a)
        # Each input copied into its slot of one result: numpy's stack concatenates
        # expanded inputs, which took 0.37 ms against 0.20 ms for three transposed
        # [16, 64, 4, 32] float32 views (the attention's q/k/v gradients, one thread).
        shape = first.shape
        out = empty(shape[:a] + (len(xs),) + shape[a:], first.dtype)
        lead = (slice(None),) * a
        for i, x in enumerate(xs):
            out[lead + (i,)] = x
        return out
    return kernel


def _pack_shape(*xs, axis):
    shapes = [_dims(x) for x in xs]
    known = [s for s in shapes if s is not None]
    if not known:
        return AbstractValue(None, xs[0].dtype)
    a = _pack_check(known, axis)
    merged = tuple(next((s[k] for s in known if s[k] is not None), None)
                   for k in _range(len(known[0])))
    return AbstractValue(merged[:a] + (len(xs),) + merged[a:], xs[0].dtype)


def _pack_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 3)), v((2, 3))), {"axis": 0}), ((v((2, 3)), v((2, 3)), v((2, 3))),
                                                    {"axis": -1}),
            ((v(()), v(())), {"axis": 0}), ((v((0,)),), {"axis": 1})]


PACK = registry.primitive(
    "Pack", _pack_kernel, dtypes=ALL, family="array", variadic=True, shape_fn=_pack_shape,
    vjp=lambda g, *args, axis: execute(UNPACK, (g,), {"num": len(args) - 1, "axis": axis}),
    saves=(), reference=lambda *xs, axis: np.stack(xs, axis=axis), samples=_pack_samples,
    sweep_dtypes=_SWEEP,
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32)), {"axis": 0},
         errors.InvalidArgumentError),
        ((np.zeros(2, np.float32),), {"axis": 2}, errors.InvalidArgumentError)])


def _unpack_kernel(xp):
    def kernel(x, *, num, axis):
        a = _axis(axis, x.ndim)
        if x.shape[a] != num:
            raise _err("Input shape axis %d must equal %d, got shape %s. Pass num=%d or "
                       "leave it None." % (a, num, list(x.shape), x.shape[a]))
        index = [slice(None)] * x.ndim
        outs = []
        for i in _range(num):
            index[a] = i
            outs.append(x[tuple(index)])
        return tuple(outs)
    return kernel


def _unpack_shape(x, *, num, axis):
    dims = _dims(x)
    if dims is None:
        return tuple(AbstractValue(None, x.dtype) for _ in _range(num))
    a = _axis(axis, len(dims))
    if dims[a] is not None and dims[a] != num:
        raise _err("Input shape axis %d must equal %d, got shape %s." % (a, num, list(dims)))
    return tuple(AbstractValue(dims[:a] + dims[a + 1:], x.dtype) for _ in _range(num))


def _unpack_vjp(gs, x, out, *, num, axis):
    # Every output has one shape, so an absent cotangent is zeros like a present one.
    filled = _fill_like(gs)
    return None if filled is None else execute(PACK, tuple(filled), {"axis": axis})


UNPACK = registry.primitive(
    "Unpack", _unpack_kernel, dtypes=ALL, family="array", num_outputs=lambda a: a["num"],
    shape_fn=_unpack_shape, vjp=_unpack_vjp, saves=(), sweep_dtypes=_SWEEP,
    reference=lambda x, *, num, axis: tuple(np.moveaxis(x, axis, 0)),
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (3, 2), dtype, (-3, 3)),), {"num": 3, "axis": 0}),
        ((_sample_values(rng, (3, 2), dtype, (-3, 3)),), {"num": 2, "axis": -1}),
        ((_sample_values(rng, (2,), dtype, (-3, 3)),), {"num": 2, "axis": 0}),
        ((_sample_values(rng, (2, 0), dtype, (-3, 3)),), {"num": 2, "axis": 0})],
    bad_samples=lambda rng: [
        ((np.zeros((3, 2), np.float32),), {"num": 2, "axis": 0}, errors.InvalidArgumentError),
        ((np.zeros((), np.float32),), {"num": 1, "axis": 0}, errors.InvalidArgumentError)])


def stack(values, axis=0, name="stack"):
    """Stacks tensors of one shape along a new dimension.

    Args:
        values: A non-empty list of Tensors with the same shape and dtype.
        axis: Position of the new dimension, in ``[-rank - 1, rank]``.
        name: Unused (TF compatibility).

    Returns:
        A Tensor with one more dimension, of size ``len(values)``.

    Raises:
        InvalidArgumentError: If the list is empty or shapes/dtypes differ (naming the
            offending input) or ``axis`` is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.stack([[1, 2], [3, 4]], axis=1).numpy().tolist()
        [[1, 3], [2, 4]]
    """
    if isinstance(values, (list, tuple)) and values and values[0].__class__ is not Tensor:
        ragged = composite.handler("stack", *values)
        if ragged is not None:
            return ragged(values, axis)
    if not isinstance(values, (list, tuple)):
        values = [values]
    if not values:
        raise errors.InvalidArgumentError(
            None, "Pack", "stack: values is empty; pass a list of at least one tensor.")
    axis = _scalar_axis(axis, "stack")
    if axis == 0 and not any(is_tensor(v) for v in values):
        # Plain Python/numpy values: one conversion gives TF's dtype for the whole list.
        return convert_to_tensor(values)
    return execute(PACK, tuple(values), {"axis": axis})


def unstack(value, num=None, axis=0, name="unstack"):
    """Unpacks a tensor along ``axis`` into a list of tensors of one less rank.

    Args:
        value: A Tensor of rank >= 1.
        num: The size of ``axis``; inferred from the static shape when None.
        axis: The dimension to unpack along.
        name: Unused (TF compatibility).

    Returns:
        A list of ``num`` Tensors.

    Raises:
        InvalidArgumentError: If ``num`` does not match the dimension, cannot be inferred, or
            ``axis`` is out of range.

    Example:
        >>> import eagerflow as ef
        >>> [t.numpy().tolist() for t in ef.unstack([[1, 2], [3, 4]], axis=1)]
        [[1, 3], [2, 4]]
    """
    value = _as_tensor(value)
    axis = _scalar_axis(axis, "unstack")
    if num is None:
        dims = _dims(value)
        if dims is None or not -len(dims) <= axis < len(dims):
            rank = "unknown" if dims is None else len(dims)
            raise errors.InvalidArgumentError(
                None, "Unpack", "unstack: axis %d is invalid for a tensor of rank %s."
                % (axis, rank))
        num = dims[axis]
        if num is None:
            raise errors.InvalidArgumentError(
                None, "Unpack", "unstack: cannot infer num from shape %s: dimension %d is "
                "unknown. Pass num." % (list(dims), axis))
    return list(execute(UNPACK, (value,), {"num": int(num), "axis": axis}))
