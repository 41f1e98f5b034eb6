"""Ops that rearrange axes: reshape, transpose, expand_dims and squeeze.

Each gradient is the adjoint movement: reshape back to the input's shape (``reshape_like``,
used by the other array gradients too), the inverse permutation, squeeze for expand_dims.
Kernels that only re-view their input (reshape, transpose, squeeze) return views that share
memory with it, as TF's do: tensors never change, so sharing is safe.
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import CONJ
from eagerflow.ops.array import (
    _SWEEP, _axis, _dims, _err, _fully_known, _new_axis, _prod, _range, _scalar_axis, int_tuple,
    static_int_tuple,
)
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, _sample_values
from eagerflow.ops.registry import AbstractValue

__all__ = ["reshape", "transpose", "expand_dims", "squeeze"]

EXPORTS = {
    "": ["reshape", "transpose", "expand_dims", "squeeze"],
}


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
    if None in shape:
        # Entries known only at run time (a DynamicShape). As TF's shape inference: one
        # dimension left unknown (None or -1) follows from a known element count.
        if any(s is not None and s < -1 for s in shape):
            raise _err("new shape %s has a negative dimension; use -1 for (one) inferred "
                       "dimension." % list(shape))
        out = [None if s is None or s == -1 else s for s in shape]
        known = _prod(s for s in out if s is not None)
        if _fully_known(dims) and out.count(None) == 1 and known and _prod(dims) % known == 0:
            out[out.index(None)] = _prod(dims) // known
        return AbstractValue(tuple(out), x.dtype)
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
        perm = static_int_tuple(perm, "transpose", "perm")
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
    axis = () if axis is None else static_int_tuple(axis, "squeeze", "axis")
    return execute(SQUEEZE, (input,), {"axis": axis})
