"""Broadcasting primitives: ``broadcast_to`` and its adjoint, sum-to-shape.

``SumToShape`` is the one place where a gradient of a broadcast input is reduced back to
the input's shape; the tape calls it for every gradient whose shape differs from its
source's. The two are each other's gradients.

Example:
    >>> import eagerflow as ef
    >>> ef.broadcast_to(ef.constant([1, 2]), [2, 2]).numpy().tolist()
    [[1, 2], [1, 2]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.backend import cpu_blas, cpu_threads
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.array import int_tuple
from eagerflow.ops.family import ALL
from eagerflow.ops.registry import AbstractValue


def _broadcast_kernel(xp):
    def kernel(x, *, shape):
        try:
            # A new array rather than numpy's read-only view; filling it is also faster than
            # broadcast_to + copy.
            out = xp.empty(shape, dtype=x.dtype)
            out[...] = x
            if x.ndim > len(shape):
                raise ValueError("rank")
            return out
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, "cannot broadcast shape %s to %s. Each dimension must be equal "
                "or 1 in the input." % (list(x.shape), list(shape))) from None
    return kernel


def sum_to_shape_array(xp, g, shape):
    """Sums ``g`` over the axes along which an array of ``shape`` was broadcast."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    if lead < 0:
        raise errors.InvalidArgumentError(
            None, "SumToShape", "cannot reduce shape %s to the larger shape %s"
            % (list(g.shape), list(shape)))
    if None in shape:
        # Traced with an unknown dimension (a None batch size): it was not broadcast, so it
        # keeps the gradient's size at run time.
        shape = tuple(g.shape[lead + i] if dim is None else dim for i, dim in enumerate(shape))
        if g.shape == shape:
            return g
    axes = tuple(range(lead)) + tuple(
        lead + i for i, dim in enumerate(shape) if dim == 1 and g.shape[lead + i] != 1)
    out = None
    if axes and cpu_threads.is_numpy(xp):
        out = cpu_blas.sum_axes(g, axes)   # the bias-gradient form: one GEMV
    if out is None:
        out = g.sum(axis=axes, keepdims=True) if axes else g
    out = out.reshape(shape)
    return out.astype(g.dtype, copy=False)


def _sum_to_shape_kernel(xp):
    return lambda g, *, shape: sum_to_shape_array(xp, g, shape)


def _sum_to_shape_static(xp, avals, attrs):
    """SumToShape with both shapes known: the reduced axes are computed once."""
    g_shape = tuple(avals[0].shape)
    shape = tuple(attrs["shape"])
    if None in shape or None in g_shape or len(g_shape) < len(shape):
        return None
    if g_shape == shape:
        return lambda g: g
    lead = len(g_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, dim in enumerate(shape) if dim == 1 and g_shape[lead + i] != 1)
    if any(dim not in (1, g_shape[lead + i]) for i, dim in enumerate(shape)):
        return None  # not a broadcast: the general kernel raises the error
    if not axes:
        return lambda g: g.reshape(shape)
    dtype = avals[0].dtype
    if xp.module is np and dtype is not None and dtype.np_dtype.kind in "fc" and \
            dtype.np_dtype.itemsize > 2:
        # The usual bias gradient: one ufunc reduce, with no keepdims reshape when the
        # reduced shape already is the target (reducing the leading axes only).
        add_reduce = np.add.reduce
        dropped = tuple(d for i, d in enumerate(g_shape) if i not in axes)
        sum_axes = cpu_blas.sum_axes
        if int(np.prod(g_shape)) >= cpu_blas.SUM_MIN_ELEMENTS and (
                axes == tuple(range(len(axes))) or
                axes == tuple(range(len(g_shape) - len(axes), len(g_shape)))):
            # Leading (or trailing) axes only: one GEMV when the gradient is contiguous.
            def blas_kernel(g):
                out = sum_axes(g, axes)
                if out is None:
                    out = add_reduce(g, axes)
                return out.reshape(shape)
            return blas_kernel
        if dropped == shape:
            return lambda g: add_reduce(g, axes)
        return lambda g: add_reduce(g, axes, None, None, True).reshape(shape)

    def kernel(g):
        return g.sum(axis=axes, keepdims=True).reshape(shape).astype(g.dtype, copy=False)
    return kernel


def _samples(rng, dtype):
    out = []
    for src, dst in (((3,), (2, 3)), ((1, 3), (4, 3)), ((), (2, 2)), ((2, 1), (2, 5))):
        out.append(((rng.uniform(-2, 2, size=src).astype(dtype.np_dtype),), {"shape": dst}))
    return out


def _sum_samples(rng, dtype):
    out = []
    for src, dst in (((2, 3), (3,)), ((4, 3), (1, 3)), ((2, 2), ()), ((2, 5), (2, 1))):
        out.append(((rng.uniform(-2, 2, size=src).astype(dtype.np_dtype),), {"shape": dst}))
    return out


BROADCAST_TO = registry.primitive(
    "BroadcastTo", _broadcast_kernel, dtypes=ALL, family="array",
    shape_fn=lambda x, *, shape: AbstractValue(shape, x.dtype),
    vjp=lambda g, x, out, *, shape: execute(SUM_TO_SHAPE, (g,), {"shape": tuple(x.shape)}),
    saves=(0,), reference=lambda x, *, shape: np.broadcast_to(x, shape), samples=_samples)

SUM_TO_SHAPE = registry.primitive(
    "SumToShape", _sum_to_shape_kernel, dtypes=ALL, family="array",
    shape_fn=lambda g, *, shape: AbstractValue(shape, g.dtype),
    vjp=lambda g, x, out, *, shape: execute(BROADCAST_TO, (g,), {"shape": tuple(x.shape)}),
    saves=(0,), reference=lambda g, *, shape: sum_to_shape_array(np, g, shape),
    samples=_sum_samples, static_kernel=_sum_to_shape_static)


def broadcast_to(input, shape, name=None):  # noqa: A002 - TF's argument name
    """Broadcasts a tensor to a compatible shape (numpy rules).

    Args:
        input: A Tensor.
        shape: The target shape (list, tuple, TensorShape or 1-D int tensor).
        name: Unused.

    Returns:
        A Tensor of ``shape``.

    Raises:
        InvalidArgumentError: If ``input`` cannot broadcast to ``shape``.

    Example:
        >>> import eagerflow as ef
        >>> ef.broadcast_to(1.0, [2]).numpy().tolist()
        [1.0, 1.0]
    """
    return execute(BROADCAST_TO, (input,), {"shape": int_tuple(shape, "broadcast_to")})


def sum_to_shape(g, shape):
    """Sums ``g`` down to ``shape`` (the adjoint of broadcasting); no-op if equal."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    return execute(SUM_TO_SHAPE, (g,), {"shape": shape})



__all__ = ["broadcast_to"]
EXPORTS = {"": ["broadcast_to"]}
