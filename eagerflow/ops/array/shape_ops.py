"""Shape queries and pass-through ops: shape, shape_n, size, rank, ensure_shape, the broadcast
shape functions, identity, identity_n, stop_gradient, and where_indices.

Shape, Size and Rank return a tensor's dimensions, element count and rank (int32 or
int64); EnsureShape passes its input through after checking it against a (partial) shape,
Identity passes it through unchanged and StopGradient does the same with no gradient.
``where_indices`` (the one-argument ``where``) returns the coordinates of the true
elements, a shape that depends on the values.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.array import _SWEEP, _dims, _err
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, _sample_values
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape
from eagerflow.ops.family import HOST_VALUE_SHAPE

__all__ = [
    "identity", "identity_n", "stop_gradient", "shape", "shape_n", "size", "rank", "ensure_shape",
    "broadcast_static_shape", "broadcast_dynamic_shape", "where_indices",
]

EXPORTS = {
    "": ["identity", "identity_n", "stop_gradient", "shape", "shape_n", "size", "rank",
         "ensure_shape", "broadcast_static_shape", "broadcast_dynamic_shape"],
}


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
    dtypes=ALL, family="array", sweep_dtypes=_SWEEP, samples=_shape_samples, shape_only=(0,),
    shape_fn=lambda x, *, out_type: AbstractValue(
        (None if _dims(x) is None else len(_dims(x)),), out_type),
    reference=lambda x, *, out_type: np.asarray(x.shape, dtype=out_type))

SIZE = registry.primitive(
    "Size", lambda xp: (lambda asarray: lambda x, *, out_type: asarray(
        x.size, dtype=out_type))(xp.asarray),
    dtypes=ALL, family="array", sweep_dtypes=_SWEEP, samples=_shape_samples, shape_only=(0,),
    shape_fn=lambda x, *, out_type: AbstractValue((), out_type),
    reference=lambda x, *, out_type: np.asarray(x.size, dtype=out_type))

RANK = registry.primitive(
    "Rank", lambda xp: (lambda asarray: lambda x: asarray(x.ndim, dtype=np.int32))(xp.asarray),
    dtypes=ALL, family="array", sweep_dtypes=_SWEEP, samples=_identity_samples,
    shape_only=(0,), shape_fn=lambda x: AbstractValue((), d.int32),
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


# --- Where (coordinates of true elements) -----------------------------------------------------

WHERE = registry.primitive(
    "Where", lambda xp: (lambda c: xp.argwhere(c).astype(np.int64)), dtypes=ALL,
    host_sync=HOST_VALUE_SHAPE,
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
