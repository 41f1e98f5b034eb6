"""Structural array ops: reshape, transpose, concat, stack, split, pad, tile, reverse, roll...

These ops move or copy elements without arithmetic, so every dtype is accepted and each
gradient is the adjoint movement (reshape back, inverse permutation, split for concat, fold
the padding back...). Shapes, axes and sizes are static attrs; a value computed inside a
traced function is rejected with a message that says to pass a static one.

Kernels that only re-view their input (reshape, transpose, squeeze, identity, unstack,
split) return views that share memory with it, as TF's do: tensors never change, so sharing
is safe.

The creation ops (zeros, ones, fill, range, ...) live in :mod:`eagerflow.ops.creation_ops`
and are re-exported here.

Example:
    >>> import eagerflow as ef
    >>> x = ef.reshape(ef.range(6), [2, -1])
    >>> ef.concat([x, x], axis=1).shape
    TensorShape([2, 6])
"""

from __future__ import annotations

import builtins

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.arithmetic import CONJ, ZEROS_LIKE
from eagerflow.ops.broadcast import SUM_TO_SHAPE
from eagerflow.ops.creation_ops import (  # noqa: F401 - re-exported: array_ops.zeros etc.
    EYE, FILL, LINSPACE, ONES, RANGE, ZEROS, eye, fill, int_tuple, linspace, meshgrid, ones,
    ones_like, range, sequence_mask, zeros, zeros_like,
)
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, NUMERIC, _sample_values
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor, is_tensor
from eagerflow.tensor_shape import TensorShape

__all__ = [
    "reshape", "transpose", "expand_dims", "squeeze", "concat", "stack", "unstack", "split",
    "tile", "pad", "reverse", "roll", "identity", "identity_n", "stop_gradient", "shape",
    "shape_n", "size", "rank", "repeat", "ensure_shape", "broadcast_static_shape",
    "broadcast_dynamic_shape", "where_indices",
]

EXPORTS = {
    "": ["reshape", "transpose", "expand_dims", "squeeze", "concat", "stack", "unstack",
         "split", "tile", "pad", "reverse", "roll", "identity", "identity_n", "stop_gradient",
         "shape", "shape_n", "size", "rank", "repeat", "ensure_shape",
         "broadcast_static_shape", "broadcast_dynamic_shape"],
}

_SWEEP = (d.float32, d.float64, d.int32, d.bool, d.complex64)
_range = builtins.range  # ``range`` here is the op, re-exported from creation_ops


# --- helpers ----------------------------------------------------------------------------------

def _err(message):
    """An error raised in a kernel or shape rule; dispatch prefixes op, inputs and device."""
    return errors.InvalidArgumentError(None, None, message)


def _axis(axis, rank, what="axis"):
    """Validates ``axis`` against ``rank`` and returns it non-negative."""
    if not -rank <= axis < rank:
        if rank == 0:
            raise _err("%s %d is invalid: a 0-d tensor has no axes." % (what, axis))
        raise _err("%s %d is out of range for a tensor of rank %d (valid range [%d, %d])."
                   % (what, axis, rank, -rank, rank - 1))
    return axis % rank


def _new_axis(axis, rank):
    """Validates the position of a new dimension (expand_dims, stack): [-rank-1, rank]."""
    if not -rank - 1 <= axis <= rank:
        raise _err("axis %d is out of range for inserting a dimension into a tensor of rank "
                   "%d (valid range [%d, %d])." % (axis, rank, -rank - 1, rank))
    return axis % (rank + 1)


def _dims(x):
    """Static dims of a tensor or aval: a tuple (None for unknown dims), or None (unknown rank)."""
    if x.__class__ is Tensor:
        return x._value.shape
    shape = x.shape
    if shape is None or isinstance(shape, tuple):
        return shape
    dims = shape.dims
    return None if dims is None else tuple(dims)


def _prod(dims):
    n = 1
    for s in dims:
        n *= s
    return n


def _scalar_axis(axis, op):
    """An int axis from an int, a 0-d/1-element integer tensor or a length-1 list."""
    if axis.__class__ is int:
        return axis
    try:
        values = int_tuple(axis, op, "axis")
    except errors.InvalidArgumentError:
        values = ()
    if len(values) != 1:
        raise errors.InvalidArgumentError(
            None, op, "%s: axis must be an int (or a 1-element list), got %r." % (op, axis))
    return values[0]


def _as_tensor(x):
    return x if is_tensor(x) else convert_to_tensor(x)


def _fully_known(dims):
    return dims is not None and None not in dims


def _zeros_shaped(template, shape):
    """Zeros of ``shape`` with the dtype and device of ``template``."""
    zero = execute(SUM_TO_SHAPE, (execute(ZEROS_LIKE, (template,)),), {"shape": ()})
    return execute(FILL, (zero,), {"shape": tuple(shape)})


# --- Reshape ----------------------------------------------------------------------------------

def _resolve_shape(in_shape, shape):
    """The concrete target shape (one -1 inferred), or an error naming both shapes."""
    size = _prod(in_shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise _err("only one dimension of the new shape %s may be -1, got %d of them."
                   % (list(shape), len(unknown)))
    if any(s < -1 for s in shape):
        raise _err("new shape %s has a negative dimension; use -1 for (one) inferred "
                   "dimension." % list(shape))
    known = _prod(s for s in shape if s != -1)
    if unknown:
        k = unknown[0]
        if known == 0:
            if size:
                raise _err("cannot reshape a tensor of shape %s (%d elements) to shape %s: "
                           "its other dimensions hold 0 elements." % (list(in_shape), size,
                                                                       list(shape)))
            missing = 0
        elif size % known:
            raise _err("cannot reshape a tensor of shape %s (%d elements) to shape %s: %d is "
                       "not a multiple of %d, the product of the known dimensions."
                       % (list(in_shape), size, list(shape), size, known))
        else:
            missing = size // known
        return shape[:k] + (missing,) + shape[k + 1:]
    if known != size:
        raise _err("cannot reshape a tensor of shape %s (%d elements) to shape %s (%d "
                   "elements). The element counts must match; use -1 for one dimension to "
                   "infer it." % (list(in_shape), size, list(shape), known))
    return shape


def _reshape_kernel(xp):
    def kernel(x, *, shape):
        try:
            return x.reshape(shape)
        except ValueError:
            return x.reshape(_resolve_shape(x.shape, shape))
    return kernel


def _reshape_shape(x, *, shape):
    dims = _dims(x)
    if _fully_known(dims):
        return AbstractValue(_resolve_shape(dims, shape), x.dtype)
    return AbstractValue(tuple(None if s == -1 else s for s in shape), x.dtype)


def reshape_like(g, x):
    """Reshapes ``g`` to ``x``'s shape (static when known, else ``x``'s runtime shape)."""
    dims = _dims(x)
    if _fully_known(dims):
        if _dims(g) == dims:
            return g
        return execute(RESHAPE, (g,), {"shape": tuple(dims)})
    return execute(RESHAPE_LIKE, (g, x))


def _reshape_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 3)),), {"shape": (3, 2)}), ((v((2, 3)),), {"shape": (-1,)}),
            ((v(()),), {"shape": (1, 1)}), ((v((4,)),), {"shape": (2, -1)}),
            ((v((0, 3)),), {"shape": (-1, 0)}), ((v((1,)),), {"shape": ()})]


RESHAPE = registry.primitive(
    "Reshape", _reshape_kernel, dtypes=ALL, family="array", shape_fn=_reshape_shape,
    vjp=lambda g, x, out, *, shape: reshape_like(g, x), saves=(0,),
    reference=lambda x, *, shape: np.reshape(x, _resolve_shape(x.shape, shape)),
    samples=_reshape_samples, sweep_dtypes=_SWEEP,
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"shape": (4,)}, errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"shape": (-1, 4)}, errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"shape": (-1, -1)}, errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"shape": (-2, -3)}, errors.InvalidArgumentError)])

RESHAPE_LIKE = registry.primitive(
    "ReshapeLike", lambda xp: (lambda g, like: g.reshape(like.shape)), dtypes=ALL,
    dtype_group=(0,), family="array",
    shape_fn=lambda g, like: AbstractValue(like.shape, g.dtype),
    vjp=lambda g, x, like, out: (reshape_like(g, x), None), saves=(0,),
    reference=lambda g, like: np.reshape(g, like.shape),
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (2, 3), dtype, (-3, 3)), np.zeros((3, 1, 2), np.int32)), {}),
        ((_sample_values(rng, (1,), dtype, (-3, 3)), np.zeros((), np.float32)), {})],
    sweep_dtypes=_SWEEP,
    bad_samples=lambda rng: [((np.zeros(4, np.float32), np.zeros(3, np.float32)), {},
                              errors.InvalidArgumentError)])


def reshape(tensor, shape, name=None):
    """Reshapes a tensor, keeping its elements in row-major order.

    Args:
        tensor: A Tensor.
        shape: The new shape (list/tuple of ints, TensorShape or 1-D int tensor); one
            dimension may be -1 to infer it from the element count.
        name: Unused (TF compatibility).

    Returns:
        A Tensor with ``tensor``'s elements and the new shape.

    Raises:
        InvalidArgumentError: If the element counts differ (the message gives both shapes and
            counts), or more than one dimension is -1.

    Example:
        >>> import eagerflow as ef
        >>> ef.reshape([1, 2, 3, 4], [2, -1]).numpy().tolist()
        [[1, 2], [3, 4]]
    """
    if shape.__class__ is not tuple:
        shape = int_tuple(shape, "reshape")
    return execute(RESHAPE, (tensor,), {"shape": shape})


# --- Transpose --------------------------------------------------------------------------------

def _check_perm(perm, rank):
    if perm is None:
        return None
    if len(perm) != rank or sorted(p % rank if -rank <= p < rank else p for p in perm) != \
            list(_range(rank)):
        raise _err("perm %s is not a permutation of the %d axes of the input; it must "
                   "contain each of 0..%d exactly once." % (list(perm), rank, rank - 1))
    return tuple(p % rank for p in perm)


def _transpose_kernel(xp):
    transpose = xp.transpose  # resolved once per backend, not per call

    def kernel(x, *, perm):
        return transpose(x, _check_perm(perm, x.ndim))
    return kernel


def _transpose_shape(x, *, perm):
    dims = _dims(x)
    if dims is None:
        return AbstractValue(None if perm is None else (None,) * len(perm), x.dtype)
    perm = _check_perm(perm, len(dims))
    return AbstractValue(dims[::-1] if perm is None else tuple(dims[p] for p in perm), x.dtype)


def _transpose_vjp(g, x, out, *, perm):
    if perm is None:
        return execute(TRANSPOSE, (g,), {"perm": None})
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p % len(perm)] = i
    return execute(TRANSPOSE, (g,), {"perm": tuple(inverse)})


def _transpose_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 3)),), {"perm": None}), ((v((2, 3, 4)),), {"perm": (1, 2, 0)}),
            ((v((2, 3, 4)),), {"perm": (-1, 0, 1)}), ((v(()),), {"perm": ()}),
            ((v((0, 2)),), {"perm": (1, 0)})]


TRANSPOSE = registry.primitive(
    "Transpose", _transpose_kernel, dtypes=ALL, family="array", shape_fn=_transpose_shape,
    vjp=_transpose_vjp, saves=(), sweep_dtypes=_SWEEP, samples=_transpose_samples,
    reference=lambda x, *, perm: np.transpose(
        x, None if perm is None else tuple(p % x.ndim for p in perm)),
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"perm": (0,)}, errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"perm": (0, 0)}, errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"perm": (0, 2)}, errors.InvalidArgumentError)])


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """Permutes the dimensions of ``a``: output dim ``i`` is input dim ``perm[i]``.

    Args:
        a: A Tensor.
        perm: A permutation of ``range(rank)`` (negative entries count from the end);
            default reverses the dimensions.
        conjugate: If True and ``a`` is complex, also conjugates (the adjoint).
        name: Unused (TF compatibility).

    Returns:
        The transposed Tensor.

    Raises:
        InvalidArgumentError: If ``perm`` is not a permutation of the input's axes.

    Example:
        >>> import eagerflow as ef
        >>> ef.transpose([[1, 2, 3]]).numpy().tolist()
        [[1], [2], [3]]
    """
    if perm is not None:
        perm = int_tuple(perm, "transpose", "perm")
    out = execute(TRANSPOSE, (a,), {"perm": perm})
    if conjugate and out.dtype.is_complex:
        out = execute(CONJ, (out,))
    return out


# --- ExpandDims / Squeeze ---------------------------------------------------------------------

def _expand_dims_kernel(x, *, axis):
    a = _new_axis(axis, x.ndim)
    shape = x.shape
    return x.reshape(shape[:a] + (1,) + shape[a:])


def _expand_dims_shape(x, *, axis):
    dims = _dims(x)
    if dims is None:
        return AbstractValue(None, x.dtype)
    a = _new_axis(axis, len(dims))
    return AbstractValue(dims[:a] + (1,) + dims[a:], x.dtype)


def _expand_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v(()),), {"axis": 0}), ((v((2, 3)),), {"axis": 1}), ((v((2, 3)),), {"axis": -1}),
            ((v((2, 3)),), {"axis": -3}), ((v((0,)),), {"axis": 0})]


EXPAND_DIMS = registry.primitive(
    "ExpandDims",
    lambda xp: _expand_dims_kernel,
    dtypes=ALL, family="array", shape_fn=_expand_dims_shape, saves=(),
    vjp=lambda g, x, out, *, axis: execute(SQUEEZE, (g,), {"axis": (axis,)}),
    reference=lambda x, *, axis: np.expand_dims(x, axis), samples=_expand_samples,
    sweep_dtypes=_SWEEP,
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"axis": 3}, errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"axis": -4}, errors.InvalidArgumentError)])


def _squeeze_dims(shape, axis):
    """The kept dims after squeezing ``axis`` (all size-1 dims when empty)."""
    if not axis:
        return tuple(s for s in shape if s != 1)
    drop = {_axis(a, len(shape)) for a in axis}
    for a in sorted(drop):
        if shape[a] != 1 and shape[a] is not None:
            raise _err("Can not squeeze dim[%d], expected a dimension of 1, got %d (input "
                       "shape %s). Remove %d from axis or use reshape." % (a, shape[a],
                                                                           list(shape), a))
    return tuple(s for i, s in enumerate(shape) if i not in drop)


def _squeeze_shape(x, *, axis):
    dims = _dims(x)
    if dims is None or (not axis and None in dims):
        return AbstractValue(None, x.dtype)  # which dims are 1 is only known at run time
    return AbstractValue(_squeeze_dims(dims, axis), x.dtype)


def _squeeze_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((1, 3, 1)),), {"axis": ()}), ((v((1, 3, 1)),), {"axis": (0,)}),
            ((v((1, 3, 1)),), {"axis": (-1, 0)}), ((v(()),), {"axis": ()}),
            ((v((1, 0)),), {"axis": (0,)})]


SQUEEZE = registry.primitive(
    "Squeeze", lambda xp: (lambda x, *, axis: x.reshape(_squeeze_dims(x.shape, axis))),
    dtypes=ALL, family="array", shape_fn=_squeeze_shape, saves=(0,),
    vjp=lambda g, x, out, *, axis: reshape_like(g, x),
    reference=lambda x, *, axis: np.squeeze(x, axis=tuple(axis) if axis else None),
    samples=_squeeze_samples, sweep_dtypes=_SWEEP,
    bad_samples=lambda rng: [
        ((np.zeros((1, 3), np.float32),), {"axis": (1,)}, errors.InvalidArgumentError),
        ((np.zeros((1, 3), np.float32),), {"axis": (2,)}, errors.InvalidArgumentError)])


def expand_dims(input, axis, name=None):  # noqa: A002 - TF's argument name
    """Inserts a dimension of size 1 at ``axis``.

    Args:
        input: A Tensor.
        axis: Where the new dimension goes, in ``[-rank - 1, rank]``.
        name: Unused (TF compatibility).

    Returns:
        A Tensor with one more dimension.

    Raises:
        InvalidArgumentError: If ``axis`` is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.expand_dims([1, 2], -1).shape
        TensorShape([2, 1])
    """
    return execute(EXPAND_DIMS, (input,), {"axis": _scalar_axis(axis, "expand_dims")})


def squeeze(input, axis=None, name=None):  # noqa: A002 - TF's argument name
    """Removes dimensions of size 1.

    Args:
        input: A Tensor.
        axis: None to remove every size-1 dimension, or an int / list of ints naming the
            dimensions to remove (each must have size 1).
        name: Unused (TF compatibility).

    Returns:
        A Tensor with the same elements and fewer dimensions.

    Raises:
        InvalidArgumentError: If a named dimension is not of size 1 or is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.squeeze(ef.zeros([1, 2, 1])).shape
        TensorShape([2])
    """
    axis = () if axis is None else int_tuple(axis, "squeeze", "axis")
    return execute(SQUEEZE, (input,), {"axis": axis})


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
    sizes = _split_sizes_for_grad(inputs, a, "ConcatV2")
    return tuple(execute(SPLITV, (g,), {"size_splits": sizes, "axis": a}))


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
    for g, size in zip(gs, size_splits):
        if g is None:
            if size == -1:
                raise errors.UnimplementedError(
                    None, "SplitV", "SplitV: cannot build a zero gradient for the output whose "
                    "size is inferred (-1) in this trace; pass static sizes.")
            dims = list(_dims(present))
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
    stack_ = xp.stack

    def kernel(*xs, axis):
        a = _pack_check([x.shape for x in xs], axis)
        return stack_(xs, axis=a)
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


# --- Tile -------------------------------------------------------------------------------------

def _tile_kernel(xp):
    tile_ = xp.tile

    def kernel(x, *, multiples):
        if len(multiples) != x.ndim:
            raise _err("Expected multiples argument to be a vector of length %d (the input's "
                       "rank) but got length %d: %s." % (x.ndim, len(multiples),
                                                        list(multiples)))
        if any(m < 0 for m in multiples):
            raise _err("multiples %s must be non-negative." % list(multiples))
        if not multiples:
            return x
        return tile_(x, multiples)
    return kernel


def _tile_shape(x, *, multiples):
    dims = _dims(x)
    if dims is None:
        return AbstractValue((None,) * len(multiples), x.dtype)
    if len(multiples) != len(dims):
        raise _err("Expected multiples argument to be a vector of length %d but got length %d."
                   % (len(dims), len(multiples)))
    return AbstractValue(tuple(None if s is None else s * m for s, m in zip(dims, multiples)),
                         x.dtype)


def _interleaved(dims, counts, op):
    """Shape [c0, d0, c1, d1, ...] (at most one unknown d becomes -1)."""
    if dims.count(None) > 1:
        raise errors.UnimplementedError(
            None, op, "%s: the gradient needs the input's shape, which has %d unknown "
            "dimensions in this trace; give it a static shape." % (op, dims.count(None)))
    out = []
    for c, s in zip(counts, dims):
        out += [c, -1 if s is None else s]
    return tuple(out)


def _tile_vjp(g, x, out, *, multiples):
    if not multiples:
        return g
    dims = _dims(x)
    blocks = execute(RESHAPE, (g,), {"shape": _interleaved(dims, multiples, "Tile")})
    kept = tuple(v for s in dims for v in (1, s))
    if None in kept:
        from eagerflow.ops import reduction_ops

        summed = reduction_ops.reduce_sum(blocks, axis=list(_range(0, 2 * len(dims), 2)))
        return reshape_like(summed, x)
    return reshape_like(execute(SUM_TO_SHAPE, (blocks,), {"shape": kept}), x)


TILE = registry.primitive(
    "Tile", _tile_kernel, dtypes=ALL, family="array", shape_fn=_tile_shape, vjp=_tile_vjp,
    saves=(0,), reference=lambda x, *, multiples: np.tile(x, multiples), sweep_dtypes=_SWEEP,
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (2, 3), dtype, (-3, 3)),), {"multiples": (2, 3)}),
        ((_sample_values(rng, (2, 1), dtype, (-3, 3)),), {"multiples": (1, 4)}),
        ((_sample_values(rng, (), dtype, (-3, 3)),), {"multiples": ()}),
        ((_sample_values(rng, (2,), dtype, (-3, 3)),), {"multiples": (0,)})],
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"multiples": (2,)}, errors.InvalidArgumentError),
        ((np.zeros((2,), np.float32),), {"multiples": (-1,)}, errors.InvalidArgumentError)])


def tile(input, multiples, name=None):  # noqa: A002 - TF's argument name
    """Repeats the whole tensor ``multiples[i]`` times along each dimension ``i``.

    Args:
        input: A Tensor.
        multiples: Non-negative ints, one per dimension of ``input``.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``input.shape * multiples``.

    Raises:
        InvalidArgumentError: If ``len(multiples)`` differs from the rank, or a multiple is
            negative.

    Example:
        >>> import eagerflow as ef
        >>> ef.tile([[1, 2]], [2, 2]).numpy().tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    return execute(TILE, (input,), {"multiples": int_tuple(multiples, "tile", "multiples")})


# --- Pad --------------------------------------------------------------------------------------

def _check_paddings(shape, paddings, mode):
    if len(paddings) != len(shape):
        raise _err("paddings must have one [before, after] pair per dimension of the input: "
                   "the input has rank %d, paddings has %d rows %s."
                   % (len(shape), len(paddings), [list(p) for p in paddings]))
    for i, ((a, b), n) in enumerate(zip(paddings, shape)):
        if a < 0 or b < 0:
            raise _err("paddings must be non-negative, got %s for dimension %d."
                       % ([a, b], i))
        if n is None:
            continue
        if mode == "REFLECT" and (a > n - 1 or b > n - 1):
            raise _err("REFLECT padding %s of dimension %d (size %d) must be less than the "
                       "dimension's size; use SYMMETRIC to pad by up to %d." % ([a, b], i, n, n))
        if mode == "SYMMETRIC" and (a > n or b > n):
            raise _err("SYMMETRIC padding %s of dimension %d (size %d) must not exceed the "
                       "dimension's size." % ([a, b], i, n))


def _padded_shape(x, paddings, mode):
    dims = _dims(x)
    if dims is None:
        return AbstractValue((None,) * len(paddings), x.dtype)
    _check_paddings(dims, paddings, mode)
    return AbstractValue(tuple(None if s is None else s + a + b
                               for s, (a, b) in zip(dims, paddings)), x.dtype)


def _pad_kernel(xp):
    empty = xp.empty

    def kernel(x, c, *, paddings):
        if c.ndim:
            raise _err("constant_values must be a scalar, got shape %s." % list(c.shape))
        _check_paddings(x.shape, paddings, "CONSTANT")
        out = empty(tuple(s + a + b for s, (a, b) in zip(x.shape, paddings)), dtype=x.dtype)
        out[...] = c
        out[tuple(slice(a, a + s) for s, (a, _) in zip(x.shape, paddings))] = x
        return out
    return kernel


def _mirror_pad_kernel(xp):
    pad_ = xp.pad

    def kernel(x, *, paddings, mode):
        _check_paddings(x.shape, paddings, mode)
        if not any(a or b for a, b in paddings):
            return x
        return pad_(x, [list(p) for p in paddings], mode=mode.lower())
    return kernel


def _axis_slicer(ndim, axis):
    """``at(start, stop)``: the index selecting ``start:stop`` along ``axis``."""
    def at(start, stop):
        index = [slice(None)] * ndim
        index[axis] = slice(start, stop)
        return tuple(index)
    return at


def _pad_grad_kernel(xp):
    def kernel(g, *, paddings, mode):
        if len(paddings) != g.ndim:
            raise _err("paddings has %d rows for a gradient of rank %d."
                       % (len(paddings), g.ndim))
        crop = tuple(slice(a, s - b) for s, (a, b) in zip(g.shape, paddings))
        if mode == "CONSTANT":
            return g[crop]
        out = g
        for axis, (a, b) in enumerate(paddings):
            if not (a or b):
                continue
            n = out.shape[axis] - a - b
            at = _axis_slicer(out.ndim, axis)
            core = out[at(a, a + n)].copy()
            left = xp.flip(out[at(0, a)], axis=axis)
            right = xp.flip(out[at(a + n, a + n + b)], axis=axis)
            # The mirrored parts land back on the elements they copied.
            shift = 1 if mode == "REFLECT" else 0
            core[at(shift, shift + a)] += left
            core[at(n - shift - b, n - shift)] += right
            out = core
        return out
    return kernel


def _pad_grad_shape(g, *, paddings, mode):
    dims = _dims(g)
    if dims is None:
        return AbstractValue((None,) * len(paddings), g.dtype)
    return AbstractValue(tuple(None if s is None else s - a - b
                               for s, (a, b) in zip(dims, paddings)), g.dtype)


def _pad_grad_vjp(g, x, out, *, paddings, mode):
    if mode == "CONSTANT":
        return execute(PAD, (g, 0), {"paddings": paddings})
    return execute(MIRROR_PAD, (g,), {"paddings": paddings, "mode": mode})


def _pad_reference(x, c, *, paddings):
    if not paddings:
        return x.copy()
    return np.pad(x, [list(p) for p in paddings], mode="constant", constant_values=c)


def _mirror_reference(x, *, paddings, mode):
    if not paddings:
        return x.copy()
    return np.pad(x, [list(p) for p in paddings], mode=mode.lower())


def _pad_grad_reference(g, *, paddings, mode):
    """Adjoint of padding, by brute force: push each cotangent element to its source."""
    shape = tuple(s - a - b for s, (a, b) in zip(g.shape, paddings))
    if not paddings:
        return g.copy()
    index = np.arange(int(np.prod(shape))).reshape(shape)
    if mode == "CONSTANT":
        src = np.pad(index, [list(p) for p in paddings], constant_values=-1)
    else:
        src = np.pad(index, [list(p) for p in paddings], mode=mode.lower())
    out = np.zeros(int(np.prod(shape)), g.dtype)
    mask = src >= 0
    np.add.at(out, src[mask], g[mask])
    return out.reshape(shape)


def _pad_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 3)), v(())), {"paddings": ((1, 0), (2, 1))}),
            ((v(()), v(())), {"paddings": ()}),
            ((v((0, 2)), v(())), {"paddings": ((1, 1), (0, 0))}),
            ((v((3,)), v(())), {"paddings": ((0, 0),)})]


def _mirror_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((3, 4)),), {"paddings": ((2, 1), (1, 3)), "mode": "REFLECT"}),
            ((v((3, 4)),), {"paddings": ((3, 1), (0, 4)), "mode": "SYMMETRIC"}),
            ((v((2,)),), {"paddings": ((1, 1),), "mode": "REFLECT"}),
            ((v((2, 2)),), {"paddings": ((0, 0), (0, 0)), "mode": "SYMMETRIC"})]


def _pad_grad_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((6, 8)),), {"paddings": ((2, 1), (1, 3)), "mode": "REFLECT"}),
            ((v((8, 9)),), {"paddings": ((3, 1), (1, 4)), "mode": "SYMMETRIC"}),
            ((v((4, 5)),), {"paddings": ((1, 0), (2, 1)), "mode": "CONSTANT"}),
            ((v(()),), {"paddings": (), "mode": "CONSTANT"})]


def _pad_vjp(g, x, c, out, *, paddings):
    inner = execute(PAD_GRAD, (g,), {"paddings": paddings, "mode": "CONSTANT"})
    # Unlike TF (which gives None), constant_values gets its true gradient: the sum of the
    # cotangent over the padded border.
    total = execute(SUM_TO_SHAPE, (g,), {"shape": ()})
    return inner, total - execute(SUM_TO_SHAPE, (inner,), {"shape": ()})


PAD = registry.primitive(
    "PadV2", _pad_kernel, dtypes=ALL, family="array", saves=(), sweep_dtypes=_SWEEP,
    shape_fn=lambda x, c, *, paddings: _padded_shape(x, paddings, "CONSTANT"),
    vjp=_pad_vjp,
    reference=_pad_reference, samples=_pad_samples,
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32), np.float32(0)), {"paddings": ((1, 1),)},
         errors.InvalidArgumentError),
        ((np.zeros((2,), np.float32), np.float32(0)), {"paddings": ((-1, 1),)},
         errors.InvalidArgumentError),
        ((np.zeros((2,), np.float32), np.zeros(2, np.float32)), {"paddings": ((1, 1),)},
         errors.InvalidArgumentError)])

MIRROR_PAD = registry.primitive(
    "MirrorPad", _mirror_pad_kernel, dtypes=ALL, family="array", saves=(),
    sweep_dtypes=_SWEEP,
    shape_fn=lambda x, *, paddings, mode: _padded_shape(x, paddings, mode),
    vjp=lambda g, x, out, *, paddings, mode: execute(
        PAD_GRAD, (g,), {"paddings": paddings, "mode": mode}),
    reference=_mirror_reference, samples=_mirror_samples,
    bad_samples=lambda rng: [
        ((np.zeros((3,), np.float32),), {"paddings": ((3, 0),), "mode": "REFLECT"},
         errors.InvalidArgumentError),
        ((np.zeros((3,), np.float32),), {"paddings": ((0, 4),), "mode": "SYMMETRIC"},
         errors.InvalidArgumentError)])

PAD_GRAD = registry.primitive(
    "PadGrad", _pad_grad_kernel, dtypes=ALL, family="array", saves=(),
    sweep_dtypes=(d.float32, d.float64, d.int32, d.complex64),
    shape_fn=_pad_grad_shape, vjp=_pad_grad_vjp, reference=_pad_grad_reference,
    samples=_pad_grad_samples,
    bad_samples=lambda rng: [((np.zeros((3,), np.float32),), {
        "paddings": ((1, 1), (0, 0)), "mode": "CONSTANT"}, errors.InvalidArgumentError)])


def _paddings_attr(paddings):
    if isinstance(paddings, (list, tuple)) and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(v.__class__ is int for v in p)
            for p in paddings):
        return tuple((p[0], p[1]) for p in paddings)
    try:
        array = np.asarray(paddings.numpy() if isinstance(paddings, Tensor) else paddings)
    except (TypeError, ValueError):
        array = None
    if array is None or array.dtype.kind not in "iu" or (
            array.ndim != 2 or array.shape[1] != 2) and array.size:
        raise errors.InvalidArgumentError(
            None, "Pad", "pad: paddings must be an integer [rank, 2] list or tensor of "
            "[before, after] pairs, got %r." % (paddings,))
    return tuple((int(a), int(b)) for a, b in array.reshape(-1, 2))


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pads a tensor with a constant or a mirror image of its edges.

    ``paddings[i] = [before, after]`` adds that many elements before and after dimension
    ``i``. ``REFLECT`` mirrors without repeating the edge (padding < size), ``SYMMETRIC``
    repeats it (padding <= size).

    Args:
        tensor: A Tensor.
        paddings: An int [rank, 2] list or tensor.
        mode: ``"CONSTANT"``, ``"REFLECT"`` or ``"SYMMETRIC"`` (case-insensitive).
        constant_values: The scalar used in CONSTANT mode, of ``tensor``'s dtype.
        name: Unused (TF compatibility).

    Returns:
        The padded Tensor.

    Raises:
        InvalidArgumentError: For a bad mode, negative paddings, paddings whose rank does not
            match, or mirror paddings larger than the dimension.

    Example:
        >>> import eagerflow as ef
        >>> ef.pad([1, 2, 3], [[2, 1]], mode="reflect").numpy().tolist()
        [3, 2, 1, 2, 3, 2]
    """
    pads = _paddings_attr(paddings)
    upper = mode.upper() if isinstance(mode, str) else mode
    if upper == "CONSTANT":
        if not is_tensor(tensor):
            tensor = convert_to_tensor(tensor)  # so a Python constant takes its dtype
        return execute(PAD, (tensor, constant_values), {"paddings": pads})
    if upper in ("REFLECT", "SYMMETRIC"):
        return execute(MIRROR_PAD, (tensor,), {"paddings": pads, "mode": upper})
    raise errors.InvalidArgumentError(
        None, "Pad", "pad: mode must be one of 'CONSTANT', 'REFLECT' or 'SYMMETRIC' "
        "(case-insensitive), got %r." % (mode,))


# --- ReverseV2 / Roll -------------------------------------------------------------------------

def _unique_axes(axes, rank, op_word):
    out = []
    for a in axes:
        a = _axis(a, rank)
        if a in out:
            raise _err("axis %d is given more than once to %s." % (a, op_word))
        out.append(a)
    return tuple(out)


REVERSE = registry.primitive(
    "ReverseV2",
    lambda xp: (lambda flip: lambda x, *, axis: flip(
        x, axis=_unique_axes(axis, x.ndim, "reverse")) if axis else x)(xp.flip),
    dtypes=ALL, family="array", saves=(), sweep_dtypes=_SWEEP,
    shape_fn=lambda x, *, axis: AbstractValue(_dims(x), x.dtype),
    vjp=lambda g, x, out, *, axis: execute(REVERSE, (g,), {"axis": axis}),
    reference=lambda x, *, axis: np.flip(x, axis=tuple(axis)) if axis else x,
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (2, 3), dtype, (-3, 3)),), {"axis": (0,)}),
        ((_sample_values(rng, (2, 3, 2), dtype, (-3, 3)),), {"axis": (-1, 0)}),
        ((_sample_values(rng, (), dtype, (-3, 3)),), {"axis": ()}),
        ((_sample_values(rng, (0, 2), dtype, (-3, 3)),), {"axis": (1,)})],
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"axis": (2,)}, errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"axis": (0, -2)}, errors.InvalidArgumentError)])


def _roll_kernel(xp):
    roll_ = xp.roll

    def kernel(x, *, shift, axis):
        if len(shift) != len(axis):
            raise _err("shift and axis must have the same length, got shift %s and axis %s."
                       % (list(shift), list(axis)))
        if not axis:
            return x
        return roll_(x, shift, tuple(_axis(a, x.ndim) for a in axis))
    return kernel


ROLL = registry.primitive(
    "Roll", _roll_kernel, dtypes=ALL, family="array", saves=(), sweep_dtypes=_SWEEP,
    shape_fn=lambda x, *, shift, axis: AbstractValue(_dims(x), x.dtype),
    vjp=lambda g, x, out, *, shift, axis: execute(
        ROLL, (g,), {"shift": tuple(-s for s in shift), "axis": axis}),
    reference=lambda x, *, shift, axis: np.roll(x, shift, axis) if axis else x,
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (5,), dtype, (-3, 3)),), {"shift": (2,), "axis": (0,)}),
        ((_sample_values(rng, (3, 4), dtype, (-3, 3)),), {"shift": (-1, 5), "axis": (0, 1)}),
        ((_sample_values(rng, (3, 4), dtype, (-3, 3)),), {"shift": (1, 2), "axis": (1, 1)}),
        ((_sample_values(rng, (), dtype, (-3, 3)),), {"shift": (), "axis": ()}),
        ((_sample_values(rng, (0, 3), dtype, (-3, 3)),), {"shift": (1,), "axis": (0,)})],
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"shift": (1,), "axis": (2,)},
         errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"shift": (1, 2), "axis": (0,)},
         errors.InvalidArgumentError)])


def reverse(tensor, axis, name=None):
    """Reverses the order of elements along the given dimensions.

    Args:
        tensor: A Tensor.
        axis: A list of distinct dimensions to reverse (negative counts from the end).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated.

    Example:
        >>> import eagerflow as ef
        >>> ef.reverse([[1, 2], [3, 4]], [1]).numpy().tolist()
        [[2, 1], [4, 3]]
    """
    return execute(REVERSE, (tensor,), {"axis": int_tuple(axis, "reverse", "axis")})


def roll(input, shift, axis, name=None):  # noqa: A002 - TF's argument name
    """Rolls elements along dimensions: element ``i`` moves to ``(i + shift) % size``.

    Args:
        input: A Tensor.
        shift: An int or list of ints (negative rolls backward).
        axis: An int or list of ints, the same length as ``shift``; an axis given twice
            rolls by the sum of its shifts.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape.

    Raises:
        InvalidArgumentError: If the lengths differ or an axis is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.roll([0, 1, 2, 3, 4], shift=2, axis=0).numpy().tolist()
        [3, 4, 0, 1, 2]
    """
    return execute(ROLL, (input,), {"shift": int_tuple(shift, "roll", "shift"),
                                    "axis": int_tuple(axis, "roll", "axis")})


# --- Identity / StopGradient ------------------------------------------------------------------

def _same_shape(x, **attrs):
    return AbstractValue(_dims(x), x.dtype)


def _identity_samples(rng, dtype):
    return [((_sample_values(rng, s, dtype, (-3, 3)),), {}) for s in ((), (0,), (2, 3))]


IDENTITY = registry.primitive(
    "Identity", lambda xp: (lambda x: x), dtypes=ALL, family="array", shape_fn=_same_shape,
    vjp=lambda g, x, out: g, saves=(), reference=lambda x: x, samples=_identity_samples,
    sweep_dtypes=_SWEEP)

STOP_GRADIENT = registry.primitive(
    "StopGradient", lambda xp: (lambda x: x), dtypes=ALL, family="array",
    shape_fn=_same_shape, vjp=None, reference=lambda x: x, samples=_identity_samples,
    sweep_dtypes=_SWEEP)


def identity(input, name=None):  # noqa: A002 - TF's argument name
    """Returns a tensor with the same shape and contents as ``input``.

    Inside a device scope the result lives on the scope's device (a copy when ``input`` is
    elsewhere), as in TF.

    Args:
        input: A Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor equal to ``input``.

    Example:
        >>> import eagerflow as ef
        >>> ef.identity([1, 2]).numpy().tolist()
        [1, 2]
    """
    return execute(IDENTITY, (input,))


def identity_n(input, name=None):  # noqa: A002 - TF's argument name
    """Returns a list of tensors equal to those in ``input``.

    Args:
        input: A list of Tensors (of any dtypes).
        name: Unused (TF compatibility).

    Returns:
        A list of Tensors.

    Example:
        >>> import eagerflow as ef
        >>> [t.numpy() for t in ef.identity_n([1, 2.0])]
        [np.int32(1), np.float32(2.0)]
    """
    return [execute(IDENTITY, (x,)) for x in input]


def stop_gradient(input, name=None):  # noqa: A002 - TF's argument name
    """Returns ``input`` unchanged, but blocks gradients through it.

    Tapes treat the result as a constant: no gradient flows back to ``input`` through this
    op.

    Args:
        input: A Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor equal to ``input``.

    Example:
        >>> import eagerflow as ef
        >>> ef.stop_gradient([1.0]).numpy().tolist()
        [1.0]
    """
    return execute(STOP_GRADIENT, (input,))


# --- Shape / Size / Rank / EnsureShape / BroadcastArgs ----------------------------------------

_SHAPE_TYPES = ("int32", "int64")


def _shape_samples(rng, dtype):
    return [((_sample_values(rng, s, dtype, (-3, 3)),), {"out_type": t})
            for s in ((), (0,), (2, 3)) for t in _SHAPE_TYPES]


SHAPE = registry.primitive(
    "Shape", lambda xp: (lambda asarray: lambda x, *, out_type: asarray(
        x.shape, dtype=out_type))(xp.asarray),
    dtypes=ALL, family="array", sweep_dtypes=_SWEEP, samples=_shape_samples,
    shape_fn=lambda x, *, out_type: AbstractValue(
        (None if _dims(x) is None else len(_dims(x)),), out_type),
    reference=lambda x, *, out_type: np.asarray(x.shape, dtype=out_type))

SIZE = registry.primitive(
    "Size", lambda xp: (lambda asarray: lambda x, *, out_type: asarray(
        x.size, dtype=out_type))(xp.asarray),
    dtypes=ALL, family="array", sweep_dtypes=_SWEEP, samples=_shape_samples,
    shape_fn=lambda x, *, out_type: AbstractValue((), out_type),
    reference=lambda x, *, out_type: np.asarray(x.size, dtype=out_type))

RANK = registry.primitive(
    "Rank", lambda xp: (lambda asarray: lambda x: asarray(x.ndim, dtype=np.int32))(xp.asarray),
    dtypes=ALL, family="array", sweep_dtypes=_SWEEP, samples=_identity_samples,
    shape_fn=lambda x: AbstractValue((), d.int32),
    reference=lambda x: np.asarray(x.ndim, dtype=np.int32))


def _out_type(out_type, op):
    dt = d.int32 if out_type is None else d.as_dtype(out_type)
    if dt.name not in _SHAPE_TYPES:
        raise errors.InvalidArgumentError(
            None, op, "%s: out_type must be int32 or int64, got %s." % (op, dt.name))
    return dt.name


def shape(input, out_type=d.int32, name=None):  # noqa: A002 - TF's argument name
    """Returns the shape of a tensor as a 1-D integer tensor.

    Args:
        input: A Tensor.
        out_type: int32 (default) or int64.
        name: Unused (TF compatibility).

    Returns:
        A 1-D Tensor of length ``rank(input)``.

    Example:
        >>> import eagerflow as ef
        >>> ef.shape(ef.zeros([2, 3])).numpy().tolist()
        [2, 3]
    """
    return execute(SHAPE, (input,), {"out_type": _out_type(out_type, "shape")})


def shape_n(input, out_type=d.int32, name=None):  # noqa: A002 - TF's argument name
    """Returns the shapes of a list of tensors.

    Args:
        input: A list of Tensors.
        out_type: int32 (default) or int64.
        name: Unused (TF compatibility).

    Returns:
        A list of 1-D integer Tensors.

    Example:
        >>> import eagerflow as ef
        >>> [s.numpy().tolist() for s in ef.shape_n([[1, 2], 3])]
        [[2], []]
    """
    attrs = {"out_type": _out_type(out_type, "shape_n")}
    return [execute(SHAPE, (x,), attrs) for x in input]


def size(input, out_type=d.int32, name=None):  # noqa: A002 - TF's argument name
    """Returns the number of elements of a tensor as a scalar.

    Args:
        input: A Tensor.
        out_type: int32 (default) or int64.
        name: Unused (TF compatibility).

    Returns:
        A 0-D integer Tensor.

    Example:
        >>> import eagerflow as ef
        >>> ef.size(ef.zeros([2, 3])).numpy()
        np.int32(6)
    """
    return execute(SIZE, (input,), {"out_type": _out_type(out_type, "size")})


def rank(input, name=None):  # noqa: A002 - TF's argument name
    """Returns the number of dimensions of a tensor as an int32 scalar.

    Example:
        >>> import eagerflow as ef
        >>> ef.rank(ef.zeros([2, 3])).numpy()
        np.int32(2)
    """
    return execute(RANK, (input,))


def _ensure_kernel(xp):
    def kernel(x, *, shape):
        if shape is not None and (len(shape) != x.ndim or any(
                s is not None and s != n for s, n in zip(shape, x.shape))):
            raise _err("Shape of tensor %s is not compatible with expected shape %s."
                       % (list(x.shape), ["?" if s is None else s for s in shape]))
        return x
    return kernel


def _ensure_shape_fn(x, *, shape):
    merged = TensorShape(_dims(x))
    try:
        merged = merged.merge_with(TensorShape(shape))
    except ValueError:
        raise _err("Shape of tensor %s is not compatible with expected shape %s."
                   % (merged, TensorShape(shape))) from None
    return AbstractValue(merged.dims, x.dtype)


ENSURE_SHAPE = registry.primitive(
    "EnsureShape", _ensure_kernel, dtypes=ALL, family="array", shape_fn=_ensure_shape_fn,
    vjp=lambda g, x, out, *, shape: g, saves=(), sweep_dtypes=_SWEEP,
    reference=lambda x, *, shape: x,
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (2, 3), dtype, (-3, 3)),), {"shape": (None, 3)}),
        ((_sample_values(rng, (2, 3), dtype, (-3, 3)),), {"shape": None}),
        ((_sample_values(rng, (), dtype, (-3, 3)),), {"shape": ()})],
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"shape": (2, 4)}, errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"shape": (2,)}, errors.InvalidArgumentError)])


def ensure_shape(x, shape, name=None):
    """Checks that ``x`` has a shape compatible with ``shape`` and returns it.

    In a traced function the result's static shape is the merge of both, and the check runs
    when the graph runs.

    Args:
        x: A Tensor.
        shape: A TensorShape or list with None for dimensions that may be anything; None
            (unknown rank) accepts any shape.
        name: Unused (TF compatibility).

    Returns:
        ``x`` unchanged.

    Raises:
        InvalidArgumentError: If the shapes are incompatible.

    Example:
        >>> import eagerflow as ef
        >>> ef.ensure_shape(ef.zeros([2, 3]), [None, 3]).shape
        TensorShape([2, 3])
    """
    if shape is not None and not isinstance(shape, TensorShape):
        if isinstance(shape, Tensor):
            shape = np.asarray(shape).tolist()
        shape = TensorShape([None if s is None or s == -1 else s for s in shape])
    dims = None if shape is None else shape.dims
    return execute(ENSURE_SHAPE, (x,), {"shape": None if dims is None else tuple(dims)})


def _broadcast_args_kernel(xp):
    def kernel(s0, s1):
        if s0.ndim != 1 or s1.ndim != 1:
            raise _err("shapes must be 1-D integer tensors, got ranks %d and %d."
                       % (s0.ndim, s1.ndim))
        a, b = [int(v) for v in s0.tolist()], [int(v) for v in s1.tolist()]
        try:
            out = np.broadcast_shapes(tuple(a), tuple(b))
        except ValueError:
            raise _err("Incompatible shapes: %s vs. %s" % (a, b)) from None
        return xp.asarray(out, dtype=s0.dtype)
    return kernel


BROADCAST_ARGS = registry.primitive(
    "BroadcastArgs", _broadcast_args_kernel, dtypes=(d.int32, d.int64), family="array",
    sweep_dtypes=(d.int32, d.int64),
    shape_fn=lambda s0, s1: AbstractValue(
        (None if None in (s0.shape[0], s1.shape[0]) else max(s0.shape[0], s1.shape[0]),),
        s0.dtype),
    reference=lambda s0, s1: np.asarray(np.broadcast_shapes(tuple(s0), tuple(s1)), s0.dtype),
    samples=lambda rng, dtype: [
        ((np.array([2, 1, 3], dtype.np_dtype), np.array([4, 3], dtype.np_dtype)), {}),
        ((np.array([], dtype.np_dtype), np.array([5], dtype.np_dtype)), {})],
    bad_samples=lambda rng: [((np.array([2, 3], np.int32), np.array([4], np.int32)), {},
                              errors.InvalidArgumentError)])


def broadcast_static_shape(shape_x, shape_y):
    """Returns the broadcast of two static shapes (TensorShapes, None dims allowed).

    Args:
        shape_x: A TensorShape (or list).
        shape_y: A TensorShape (or list).

    Returns:
        A TensorShape; unknown rank if either is.

    Raises:
        ValueError: If the shapes are not broadcast-compatible.

    Example:
        >>> import eagerflow as ef
        >>> ef.broadcast_static_shape(ef.TensorShape([2, 1]), ef.TensorShape([3]))
        TensorShape([2, 3])
    """
    from eagerflow.ops.family import broadcast_shapes

    x, y = TensorShape(shape_x), TensorShape(shape_y)
    if x.rank is None or y.rank is None:
        return TensorShape(None)
    try:
        return TensorShape(broadcast_shapes(tuple(x.dims), tuple(y.dims)))
    except ValueError:
        raise ValueError("Incompatible shapes for broadcasting: %s and %s" % (x, y)) from None


def broadcast_dynamic_shape(shape_x, shape_y):
    """Returns the broadcast of two shapes given as 1-D integer tensors.

    Args:
        shape_x: A 1-D int32/int64 Tensor or list.
        shape_y: A 1-D Tensor or list of the same dtype.

    Returns:
        A 1-D Tensor.

    Raises:
        InvalidArgumentError: If the shapes are not broadcast-compatible.

    Example:
        >>> import eagerflow as ef
        >>> ef.broadcast_dynamic_shape([2, 1], [3]).numpy().tolist()
        [2, 3]
    """
    return execute(BROADCAST_ARGS, (shape_x, shape_y))


# --- Repeat -----------------------------------------------------------------------------------

def _repeat_check(dim, repeats):
    if any(r < 0 for r in repeats):
        raise _err("repeats %s must be non-negative." % list(repeats))
    if len(repeats) != 1 and dim is not None and len(repeats) != dim:
        raise _err("repeats has %d entries but the repeated dimension has size %d; give one "
                   "count per element or a single count." % (len(repeats), dim))


def _repeat_kernel(xp):
    repeat_ = xp.repeat

    def kernel(x, *, repeats, axis):
        if axis is None:
            x = x.reshape(-1)
            a = 0
        else:
            a = _axis(axis, x.ndim)
        _repeat_check(x.shape[a], repeats)
        count = repeats[0] if len(repeats) == 1 else list(repeats)
        return repeat_(x, count, axis=a)
    return kernel


def _repeat_shape(x, *, repeats, axis):
    dims = _dims(x)
    if dims is None:
        return AbstractValue(None if axis is not None else (None,), x.dtype)
    if axis is None:
        n = None if None in dims else _prod(dims)
        dims, a = (n,), 0
    else:
        a = _axis(axis, len(dims))
    _repeat_check(dims[a], repeats)
    if len(repeats) == 1:
        new = None if dims[a] is None else dims[a] * repeats[0]
    else:
        new = sum(repeats)
    return AbstractValue(dims[:a] + (new,) + dims[a + 1:], x.dtype)


def _repeat_vjp(g, x, out, *, repeats, axis):
    if axis is None:
        flat = execute(REPEAT_GRAD, (g,), {"repeats": repeats, "axis": 0})
        return reshape_like(flat, x)
    return execute(REPEAT_GRAD, (g,), {"repeats": repeats, "axis": axis})


def _repeat_grad_kernel(xp):
    def kernel(g, *, repeats, axis):
        a = _axis(axis, g.ndim)
        if len(repeats) == 1:
            # Uniform counts: element j's copies are contiguous, so fold them into a new axis.
            r = repeats[0]
            n = g.shape[a] // r if r else 0
            if not r:
                shape = g.shape[:a] + (n,) + g.shape[a + 1:]
                return xp.zeros(shape, dtype=g.dtype)
            return g.reshape(g.shape[:a] + (n, r) + g.shape[a + 1:]).sum(axis=a + 1,
                                                                         dtype=g.dtype)
        # Per-element counts: differences of a running sum, accumulated in double precision.
        acc = np.complex128 if g.dtype.kind == "c" else (
            np.float64 if g.dtype.kind == "f" else g.dtype)
        c = xp.cumsum(g, axis=a, dtype=acc)
        zero = xp.zeros(g.shape[:a] + (1,) + g.shape[a + 1:], dtype=acc)
        c = xp.concatenate([zero, c], axis=a)
        ends = np.cumsum(repeats)
        starts = ends - np.asarray(repeats)
        out = xp.take(c, xp.asarray(ends), axis=a) - xp.take(c, xp.asarray(starts), axis=a)
        return out.astype(g.dtype)
    return kernel


def _repeat_grad_shape(g, *, repeats, axis):
    dims = _dims(g)
    if dims is None:
        return AbstractValue(None, g.dtype)
    a = _axis(axis, len(dims))
    if len(repeats) == 1:
        n = None if dims[a] is None else (dims[a] // repeats[0] if repeats[0] else 0)
    else:
        n = len(repeats)
    return AbstractValue(dims[:a] + (n,) + dims[a + 1:], g.dtype)


def _repeat_grad_reference(g, *, repeats, axis):
    g = np.moveaxis(g, axis, 0)
    if len(repeats) == 1:
        n = g.shape[0] // repeats[0] if repeats[0] else 0
        repeats = (repeats[0],) * n
    ids = np.repeat(np.arange(len(repeats)), repeats)
    out = np.zeros((len(repeats),) + g.shape[1:], g.dtype)
    np.add.at(out, ids, g)
    return np.moveaxis(out, 0, axis)


def _repeat_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 3)),), {"repeats": (2,), "axis": 1}),
            ((v((3, 2)),), {"repeats": (1, 0, 2), "axis": 0}),
            ((v((2, 2)),), {"repeats": (3,), "axis": None}),
            ((v((2, 2)),), {"repeats": (1, 2, 0, 1), "axis": None}),
            ((v(()),), {"repeats": (2,), "axis": None}),
            ((v((0, 2)),), {"repeats": (2,), "axis": 0})]


def _repeat_grad_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 6)),), {"repeats": (2,), "axis": 1}),
            ((v((3, 2)),), {"repeats": (1, 0, 2), "axis": 0}),
            ((v((0, 2)),), {"repeats": (0, 0), "axis": 0}),
            ((v((0,)),), {"repeats": (0,), "axis": 0})]


REPEAT = registry.primitive(
    "Repeat", _repeat_kernel, dtypes=ALL, family="array", shape_fn=_repeat_shape,
    vjp=_repeat_vjp, saves=(0,), sweep_dtypes=_SWEEP, samples=_repeat_samples,
    reference=lambda x, *, repeats, axis: np.repeat(
        x, repeats[0] if len(repeats) == 1 else list(repeats), axis=axis),
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"repeats": (1, 2), "axis": 1},
         errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"repeats": (-1,), "axis": 1},
         errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"repeats": (1,), "axis": 2},
         errors.InvalidArgumentError)])

REPEAT_GRAD = registry.primitive(
    "RepeatGrad", _repeat_grad_kernel, dtypes=NUMERIC, family="array",
    shape_fn=_repeat_grad_shape, saves=(), sweep_dtypes=(d.float32, d.float64, d.int32),
    vjp=lambda g, x, out, *, repeats, axis: execute(
        REPEAT, (g,), {"repeats": repeats, "axis": axis}),
    reference=_repeat_grad_reference, samples=_repeat_grad_samples,
    tolerance={"float32": (1e-5, 1e-5)})


def repeat(input, repeats, axis=None, name=None):  # noqa: A002 - TF's argument name
    """Repeats each element of a tensor ``repeats`` times along ``axis``.

    Args:
        input: A Tensor.
        repeats: A non-negative int (every element) or a list with one count per element
            along ``axis``.
        axis: The dimension to repeat along; None repeats the flattened tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor; 1-D when ``axis`` is None.

    Raises:
        InvalidArgumentError: For negative counts, a count list whose length does not match
            the dimension, or an out-of-range axis.

    Example:
        >>> import eagerflow as ef
        >>> ef.repeat([1, 2, 3], [2, 0, 1], axis=0).numpy().tolist()
        [1, 1, 3]
    """
    counts = int_tuple(repeats, "repeat", "repeats")
    if axis is not None:
        axis = _scalar_axis(axis, "repeat")
    return execute(REPEAT, (input,), {"repeats": counts, "axis": axis})


# --- Where (coordinates of true elements) -----------------------------------------------------

WHERE = registry.primitive(
    "Where", lambda xp: (lambda c: xp.argwhere(c).astype(np.int64)), dtypes=ALL,
    family="array", sweep_dtypes=(d.bool, d.float32, d.int32),
    shape_fn=lambda c: AbstractValue((None, None if _dims(c) is None else len(_dims(c))),
                                     d.int64),
    reference=lambda c: np.argwhere(c).astype(np.int64),
    samples=lambda rng, dtype: [((_sample_values(rng, s, dtype, (-1, 1)),), {})
                                for s in ((), (0,), (5,), (2, 3))])


def where_indices(condition):
    """Coordinates of the true (non-zero) elements: an int64 [num_true, rank] Tensor.

    This is ``where(condition)`` with x and y omitted.

    Example:
        >>> import eagerflow as ef
        >>> ef.where([[True, False], [False, True]]).numpy().tolist()
        [[0, 0], [1, 1]]
    """
    return execute(WHERE, (condition,))

