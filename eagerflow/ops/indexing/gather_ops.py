"""``gather``: slices of params along an axis at the given indices, with ``batch_dims``.

The gradient of ``GatherV2`` is ``GatherGrad``, which scatter-adds the cotangent rows into
zeros of params' shape (a dense tensor where TF returns ``tf.IndexedSlices``).
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.ops import composite, registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, NUMERIC
from eagerflow.ops.indexing import (
    _check_index_dtype, _check_range, _fail, _ints, _prod, _rank, _scatter_rows, _shape_str,
    _static_int, _values,
)
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor
from eagerflow.ops.family import HOST_INDEX_CHECK

__all__ = ["gather"]

EXPORTS = {
    "": ["gather"],
}


# --------------------------------------------------------------------------- gather

def _gather_axes(p_ndim, i_ndim, axis, batch_dims):
    """Validates and normalizes (axis, batch_dims) of a gather as TF's GatherV2 does."""
    b = batch_dims + i_ndim if batch_dims < 0 else batch_dims
    if not 0 <= b <= i_ndim:
        raise _fail("batch_dims = %d is out of range for indices of rank %d; it must be in "
                    "[%d, %d]." % (batch_dims, i_ndim, -i_ndim, i_ndim))
    if p_ndim == 0:
        raise _fail("params must be at least 1-D to gather along an axis, got a scalar.")
    a = axis + p_ndim if axis < 0 else axis
    if not 0 <= a < p_ndim:
        raise _fail("axis = %d is out of range for params of rank %d; it must be in [%d, %d)."
                    % (axis, p_ndim, -p_ndim, p_ndim))
    if b > a:
        raise _fail("batch_dims (%d) must be less than or equal to axis (%d)." % (b, a))
    return a, b


def _check_batch(pshape, ishape, b, what="params"):
    if tuple(pshape[:b]) != tuple(ishape[:b]):
        raise _fail("%s.shape[:batch_dims] = %s must equal indices.shape[:batch_dims] = %s "
                    "(batch_dims = %d)." % (what, _shape_str(pshape[:b]), _shape_str(ishape[:b]),
                                            b))


def _gather_rows(xp, pshape, indices, a, b):
    """Rows of params viewed as ``[B * M * N, P]`` that a gather reads, in output order.

    B: the batch dims, M: the dims between them and the axis, N: the axis, P: the rest;
    the output is ``[B, M, I, P]`` with I the non-batch dims of indices. Returns the row
    indices and the view's shape ``(B * M * N, P)``.
    """
    bp, mp, n, pp = _prod(pshape[:b]), _prod(pshape[b:a]), pshape[a], _prod(pshape[a + 1:])
    ip = _prod(indices.shape[b:])
    view = (bp * mp * n, pp)
    if bp == 1 and mp == 1:
        return indices.reshape(ip), view
    base = (xp.arange(bp).reshape(bp, 1, 1) * mp + xp.arange(mp).reshape(1, mp, 1)) * n
    return (base + indices.reshape(bp, 1, ip).astype(np.int64)).reshape(-1), view


def _gather_kernel(xp):
    def kernel(params, indices, *, axis, batch_dims):
        _check_index_dtype(indices, "indices")
        a, b = _gather_axes(params.ndim, indices.ndim, axis, batch_dims)
        _check_batch(params.shape, indices.shape, b)
        _check_range(xp, indices, params.shape[a], "indices")
        if b == 0:
            return xp.take(params, indices, axis=a)
        rows, view = _gather_rows(xp, params.shape, indices, a, b)
        out_shape = params.shape[:a] + indices.shape[b:] + params.shape[a + 1:]
        return params.reshape(view)[rows].reshape(out_shape)
    return kernel


def _gather_grad_kernel(xp):
    def kernel(g, indices, *, axis, batch_dims, dim_size):
        i_ndim = indices.ndim
        b = batch_dims + i_ndim if batch_dims < 0 else batch_dims
        a, b = _gather_axes(g.ndim - i_ndim + b + 1, i_ndim, axis, b)
        pshape = g.shape[:a] + (dim_size,) + g.shape[a + i_ndim - b:]
        _check_range(xp, indices, dim_size, "indices")
        out = xp.zeros(pshape, g.dtype)
        rows, view = _gather_rows(xp, pshape, indices, a, b)
        _scatter_rows(xp, "add", out.reshape(-1), rows, g, view[1])
        return out
    return kernel


def _gather_shape(params, indices, *, axis, batch_dims):
    a, b = _gather_axes(params.ndim, indices.ndim, axis, batch_dims)
    return AbstractValue(params.shape[:a] + indices.shape[b:] + params.shape[a + 1:],
                         params.dtype)


def _gather_grad_shape(g, indices, *, axis, batch_dims, dim_size):
    i_ndim = indices.ndim
    b = batch_dims + i_ndim if batch_dims < 0 else batch_dims
    a, b = _gather_axes(g.ndim - i_ndim + b + 1, i_ndim, axis, b)
    return AbstractValue(g.shape[:a] + (dim_size,) + g.shape[a + i_ndim - b:], g.dtype)


def _gather_vjp(g, params, indices, out, *, axis, batch_dims):
    a, b = _gather_axes(_rank(params), _rank(indices), axis, batch_dims)
    attrs = {"axis": a, "batch_dims": b}
    if params.shape[a] is None:
        # A dimension known only at run time (a traced function over a None dimension,
        # e.g. x[:, t] in a while_loop): the gradient's size along the axis is an input.
        from eagerflow.ops.array.shape_ops import shape

        return execute(GATHER_GRAD_SIZED, (g, indices, shape(params)[a]), attrs), None
    return execute(GATHER_GRAD, (g, indices), dict(attrs, dim_size=params.shape[a])), None


def _gather_reference(params, indices, *, axis, batch_dims):
    params, indices = np.asarray(params), np.asarray(indices)
    a, b = _gather_axes(params.ndim, indices.ndim, axis, batch_dims)
    batch = params.shape[:b]
    out = np.empty(params.shape[:a] + indices.shape[b:] + params.shape[a + 1:], params.dtype)
    for pos in np.ndindex(*batch):
        out[pos] = np.take(params[pos], indices[pos], axis=a - b)
    return out


def _gather_samples(rng, dtype):
    v = lambda *s: _values(rng, s, dtype)  # noqa: E731
    return [
        ((v(5), _ints(rng, 5, (3,))), {"axis": 0, "batch_dims": 0}),
        ((v(4, 3), _ints(rng, 3, (2, 2))), {"axis": 1, "batch_dims": 0}),
        ((v(4, 3), np.int64(2)), {"axis": 0, "batch_dims": 0}),
        ((v(4, 3), np.int32(1)), {"axis": -1, "batch_dims": 0}),
        ((v(2, 3, 4), _ints(rng, 4, (2, 5))), {"axis": 2, "batch_dims": 1}),
        ((v(2, 3, 4), _ints(rng, 4, (2, 3, 2))), {"axis": 2, "batch_dims": 2}),
        ((v(2, 3, 4), _ints(rng, 3, (2, 2))), {"axis": -2, "batch_dims": -1}),
        ((v(3, 0), _ints(rng, 3, (2,), np.int64)), {"axis": 0, "batch_dims": 0}),
        ((v(5), _ints(rng, 5, (0,))), {"axis": 0, "batch_dims": 0}),
        ((v(0, 2), _ints(rng, 2, (0, 3))), {"axis": 1, "batch_dims": 1}),
        ((v(2, 3, 0), _ints(rng, 3, (2, 4))), {"axis": 1, "batch_dims": 1}),
    ]


def _gather_bad(rng):
    p = rng.standard_normal((5, 3)).astype(np.float32)
    bad = errors.InvalidArgumentError
    return [
        ((p, np.array([0, 5], np.int32)), {"axis": 0, "batch_dims": 0}, bad),
        ((p, np.array([-1], np.int32)), {"axis": 0, "batch_dims": 0}, bad),
        ((p, np.array([0], np.int32)), {"axis": 2, "batch_dims": 0}, bad),
        ((p, np.zeros((5, 2), np.int32)), {"axis": 0, "batch_dims": 1}, bad),
        ((p, np.zeros((4, 2), np.int32)), {"axis": 1, "batch_dims": 1}, bad),
        ((p, np.zeros((2,), np.float32)), {"axis": 0, "batch_dims": 0}, bad),
        ((np.float32(1.0), np.int32(0)), {"axis": 0, "batch_dims": 0}, bad),
        ((p, np.zeros((5,), np.int32)), {"axis": 0, "batch_dims": 3}, bad),
    ]


GATHER = registry.primitive(
    "GatherV2", _gather_kernel, dtypes=ALL, dtype_group=(0,), shape_fn=_gather_shape,
    host_sync=HOST_INDEX_CHECK,
    vjp=_gather_vjp, saves=(0, 1), reference=_gather_reference, samples=_gather_samples,
    bad_samples=_gather_bad, family="array",
    hint="Indices must lie in [0, params.shape[axis]).")


def _gather_grad_reference(g, indices, *, axis, batch_dims, dim_size):
    g, indices = np.asarray(g), np.asarray(indices)
    i_ndim = indices.ndim
    b = batch_dims + i_ndim if batch_dims < 0 else batch_dims
    a, b = _gather_axes(g.ndim - i_ndim + b + 1, i_ndim, axis, b)
    out = np.zeros(g.shape[:a] + (dim_size,) + g.shape[a + i_ndim - b:], g.dtype)
    for pos in np.ndindex(*g.shape[:b]):
        sub_out, sub_g, sub_i = out[pos], g[pos], indices[pos]
        k = a - b  # the axis inside one batch element
        for ipos in np.ndindex(*sub_i.shape):
            src = (slice(None),) * k + ipos
            dst = (slice(None),) * k + (int(sub_i[ipos]),)
            sub_out[dst] += sub_g[src]
    return out


def _gather_grad_samples_fn(rng, dtype):
    out = []
    for (params, indices), attrs in _gather_samples(rng, dtype):
        a, b = _gather_axes(np.ndim(params), np.ndim(indices), attrs["axis"],
                            attrs["batch_dims"])
        g = np.asarray(_gather_reference(params, indices, **attrs))
        out.append(((g, indices), {"axis": a, "batch_dims": b,
                                   "dim_size": np.shape(params)[a]}))
    return out


GATHER_GRAD = registry.primitive(
    "GatherGrad", _gather_grad_kernel, dtypes=NUMERIC, dtype_group=(0,),
    host_sync=HOST_INDEX_CHECK,
    shape_fn=_gather_grad_shape, saves=(1,),
    vjp=lambda g, grad, indices, out, *, axis, batch_dims, dim_size: (
        execute(GATHER, (g, indices), {"axis": axis, "batch_dims": batch_dims}), None),
    reference=_gather_grad_reference, samples=_gather_grad_samples_fn, family="array")


def _gather_grad_sized_kernel(xp):
    scatter = _gather_grad_kernel(xp)

    def kernel(g, indices, dim_size, *, axis, batch_dims):
        return scatter(g, indices, axis=axis, batch_dims=batch_dims, dim_size=int(dim_size))
    return kernel


def _gather_grad_sized_shape(g, indices, dim_size, *, axis, batch_dims):
    return _gather_grad_shape(g, indices, axis=axis, batch_dims=batch_dims, dim_size=None)


# GatherGrad with the size of the gathered axis as a scalar input instead of an attr.
GATHER_GRAD_SIZED = registry.primitive(
    "GatherGradSized", _gather_grad_sized_kernel, dtypes=NUMERIC, dtype_group=(0,),
    host_sync=HOST_INDEX_CHECK,
    shape_fn=_gather_grad_sized_shape, saves=(1,),
    vjp=lambda g, grad, indices, dim_size, out, *, axis, batch_dims: (
        execute(GATHER, (g, indices), {"axis": axis, "batch_dims": batch_dims}), None, None),
    reference=lambda g, indices, dim_size, *, axis, batch_dims: _gather_grad_reference(
        g, indices, axis=axis, batch_dims=batch_dims, dim_size=int(dim_size)),
    samples=lambda rng, dtype: [
        ((g, i, np.int32(attrs.pop("dim_size"))), attrs)
        for (g, i), attrs in _gather_grad_samples_fn(rng, dtype)],
    family="array")


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Gathers slices of ``params`` along ``axis`` at ``indices``.

    ``output.shape = params.shape[:axis] + indices.shape[batch_dims:] +
    params.shape[axis + 1:]``; with ``batch_dims = B`` the first B dims of params and
    indices are batch dims and each batch element gathers with its own indices.

    Args:
        params: The Tensor to gather from (rank >= axis + 1).
        indices: An int32/int64 Tensor of any shape; values in ``[0, params.shape[axis])``.
        validate_indices: Deprecated and ignored; indices are always validated.
        axis: The axis of params to gather along (default: ``batch_dims``). Negative
            values count from the end.
        batch_dims: Number of leading batch dims shared by params and indices
            (negative: counts from the rank of indices).
        name: Unused.

    Returns:
        A Tensor of params' dtype.

    Raises:
        InvalidArgumentError: For an index out of range (on every device: TF writes zeros
            on a GPU), a bad axis/batch_dims or mismatched batch dims.

    Example:
        >>> import eagerflow as ef
        >>> ef.gather(ef.constant([[1, 2], [3, 4]]), [1, 0], axis=1).numpy().tolist()
        [[2, 1], [4, 3]]
    """
    if params.__class__ is not Tensor:
        ragged = composite.handler("gather", params)
        if ragged is not None:
            return ragged(params, indices, axis=axis)
    if axis is None:
        axis = batch_dims
    if axis.__class__ is not int or batch_dims.__class__ is not int:
        axis = _static_int(axis, "axis", "GatherV2")
        batch_dims = _static_int(batch_dims, "batch_dims", "GatherV2")
    return execute(GATHER, (params, indices), {"axis": axis, "batch_dims": batch_dims})
