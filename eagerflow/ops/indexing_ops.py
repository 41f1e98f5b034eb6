"""Indexing primitives: gather, scatter, segment reductions, masks, one_hot, unique, search.

Index inputs (``indices``, ``segment_ids``, masks) are outside each primitive's dtype group:
they are int32/int64 (bool for masks) whatever the data's dtype.

Indices are validated on every device. An index out of range raises InvalidArgumentError
naming its position and value (``indices[3] = 7 is not in [0, 5)``); numpy would wrap a
negative index silently, and TF on a GPU writes zeros instead of failing.

Gradients are dense tensors: where TF returns ``tf.IndexedSlices`` for a gather's params,
eagerflow returns the same values scattered into zeros of params' shape.

Example:
    >>> import eagerflow as ef
    >>> ef.gather(ef.constant([10, 20, 30]), [2, 0]).numpy().tolist()
    [30, 10]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.arithmetic import (
    SELECT, equal, greater, less, truediv, zeros_like_t, ONES_LIKE_fn,
)
from eagerflow.ops.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, NUMERIC, REAL
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = [
    "gather", "gather_nd", "scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
    "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min",
    "unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
    "unsorted_segment_mean", "segment_sum", "boolean_mask", "one_hot", "where_indices",
    "unique", "unique_with_counts", "searchsorted",
]

EXPORTS = {
    "": ["gather", "gather_nd", "scatter_nd", "tensor_scatter_nd_update",
         "tensor_scatter_nd_add", "tensor_scatter_nd_sub", "tensor_scatter_nd_max",
         "tensor_scatter_nd_min", "boolean_mask", "one_hot", "unique", "unique_with_counts",
         "searchsorted"],
    "math": ["unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
             "unsorted_segment_mean", "segment_sum"],
}

_INDEX_DTYPES = (d.int32, d.int64)


# --------------------------------------------------------------------------- helpers

def _fail(message):
    # Dispatch prefixes the op name, input shapes/dtypes and device.
    return errors.InvalidArgumentError(None, None, message)


def _shape_str(shape):
    return "[%s]" % ", ".join("?" if s is None else str(s) for s in shape)


def _prod(dims):
    out = 1
    for dim in dims:
        out *= int(dim)
    return out


def _check_index_dtype(array, what):
    if array.dtype.kind not in "iu":
        raise _fail("%s must be an integer tensor (int32 or int64), got %s. Cast it first, "
                    "e.g. eagerflow.cast(%s, eagerflow.int32)." % (what, array.dtype.name, what))


def _position(pos):
    return "[%s]" % ",".join(str(int(p)) for p in pos) if len(pos) else ""


def _check_range(xp, idx, limit, what):
    """Raises for the first entry of ``idx`` outside [0, limit), naming position and value."""
    if idx.size == 0:
        return
    if int(idx.min()) >= 0 and int(idx.max()) < limit:
        return
    host = np.asarray(xp.to_numpy(idx))
    pos = tuple(np.argwhere((host < 0) | (host >= limit))[0])
    raise _fail("%s%s = %d is not in [0, %d)" % (what, _position(pos), int(host[pos]), limit))


_AT_FALLBACK = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}


def _scatter_rows(xp, op, flat, rows, values, width):
    """Combines rows of ``values`` into ``flat`` viewed as ``[R, width]``, in place.

    ``flat`` is a contiguous 1-D array, ``rows`` the target row of each row of ``values``
    (flattened). ``op`` is "update" (assignment) or a ufunc name ("add", "maximum",
    "minimum") whose ``.at`` combines repeated rows. Everything is flattened to 1-D first:
    numpy's ``ufunc.at`` is several times faster on a 1-D index.
    """
    rows = rows.reshape(-1).astype(np.int64, copy=False)
    if width != 1:
        rows = (rows[:, None] * width + xp.arange(width)).reshape(-1)
    values = values.reshape(-1)
    if op == "update":
        flat[rows] = values
        return
    at = getattr(getattr(xp, op), "at", None)
    if at is not None:
        try:
            at(flat, rows, values)
            return
        except NotImplementedError:
            pass
    import cupyx  # only reached on the GPU backend, by cupy versions without ufunc.at

    getattr(cupyx, _AT_FALLBACK[op])(flat, rows, values)


def _static_int(value, what, op):
    """A Python int from an int, numpy integer or eager scalar int tensor (attrs are static)."""
    if value.__class__ is int:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    array = value._value if isinstance(value, Tensor) else value
    if isinstance(value, (Tensor, np.ndarray)) and array.dtype.kind in "iu" and array.ndim == 0:
        return int(value)
    raise errors.InvalidArgumentError(
        None, op, "%s: %s must be a static integer, got %r." % (op, what, value))


def _as_tensor(value, dtype_hint=None):
    if value.__class__ is Tensor:
        return value
    return convert_to_tensor(value, dtype_hint=dtype_hint)


def _rank(t):
    return len(t.shape)


def _add_trailing_axes(t, count):
    """``t[..., None, None, ...]`` with ``count`` new axes (a StridedSlice, so traceable)."""
    if count == 0:
        return t
    from eagerflow.ops import slicing

    return slicing.getitem(t, (Ellipsis,) + (None,) * count)


def _ints(rng, high, shape, dtype=np.int32):
    return rng.integers(0, max(high, 1), size=shape).astype(dtype)


def _values(rng, shape, dtype):
    np_dt = dtype.np_dtype
    if dtype.is_bool:
        return rng.random(shape) > 0.5
    if dtype.is_integer:
        return rng.integers(0, 9, size=shape).astype(np_dt)
    out = rng.uniform(-3, 3, size=shape)
    if dtype.is_complex:
        out = out + 1j * rng.uniform(-3, 3, size=shape)
    return np.asarray(out).astype(np_dt)


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
    return execute(GATHER_GRAD, (g, indices),
                   {"axis": a, "batch_dims": b, "dim_size": params.shape[a]}), None


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
    shape_fn=_gather_grad_shape, saves=(1,),
    vjp=lambda g, grad, indices, out, *, axis, batch_dims, dim_size: (
        execute(GATHER, (g, indices), {"axis": axis, "batch_dims": batch_dims}), None),
    reference=_gather_grad_reference, samples=_gather_grad_samples_fn, family="array")


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
    if axis is None:
        axis = batch_dims
    if axis.__class__ is not int or batch_dims.__class__ is not int:
        axis = _static_int(axis, "axis", "GatherV2")
        batch_dims = _static_int(batch_dims, "batch_dims", "GatherV2")
    return execute(GATHER, (params, indices), {"axis": axis, "batch_dims": batch_dims})


# --------------------------------------------------------------------------- *_nd ops

def _nd_rows(xp, shape, indices, b, what):
    """Checks nd ``indices`` against ``shape``; returns (rows, (R, width)).

    The target is viewed as ``[R, width]`` with R the product of ``shape[:b + K]`` and width
    that of ``shape[b + K:]``; ``rows`` holds, in indices' order, the row each coordinate
    vector (with its batch position) addresses.
    """
    _check_index_dtype(indices, "indices")
    if indices.ndim < 1:
        raise _fail("indices must be at least 1-D (its last dimension holds coordinates), "
                    "got a scalar.")
    if not 0 <= b < indices.ndim:
        raise _fail("batch_dims = %d must be in [0, %d) for indices of rank %d."
                    % (b, indices.ndim, indices.ndim))
    k = indices.shape[-1]
    if b + k > len(shape):
        raise _fail("indices.shape[-1] = %d must be <= rank(%s) - batch_dims = %d (%s shape "
                    "%s)." % (k, what, len(shape) - b, what, _shape_str(shape)))
    _check_batch(shape, indices.shape, b, what)
    dims = tuple(shape[b:b + k])
    if k and indices.size:
        limits = xp.asarray(dims, dtype=np.int64)
        if bool(((indices < 0) | (indices >= limits)).any()):
            host = np.asarray(xp.to_numpy(indices))
            rows = ((host < 0) | (host >= np.asarray(dims))).any(-1)
            pos = tuple(np.argwhere(rows)[0])
            raise _fail("indices%s = [%s] does not index into %s shape %s." % (
                _position(pos), ", ".join(str(int(v)) for v in host[pos]), what,
                _shape_str(shape)))
    bp, ip, span = _prod(shape[:b]), _prod(indices.shape[b:-1]), _prod(dims)
    coords = indices.reshape(bp * ip, k).astype(np.int64)
    rows = xp.repeat(xp.arange(bp, dtype=np.int64) * span, ip)
    stride = span
    for j, dim in enumerate(dims):
        stride //= dim
        rows = rows + coords[:, j] * stride
    return rows, (_prod(shape[:b + k]), _prod(shape[b + k:]))


def _gather_nd_kernel(xp):
    def kernel(params, indices, *, batch_dims):
        rows, view = _nd_rows(xp, params.shape, indices, batch_dims, "params")
        out = params.reshape(view)[rows]
        return out.reshape(indices.shape[:-1] + params.shape[batch_dims + indices.shape[-1]:])
    return kernel


def _gather_nd_shape(params, indices, *, batch_dims):
    k = indices.shape[-1]
    if k is None:
        return AbstractValue(None, params.dtype)
    return AbstractValue(indices.shape[:-1] + params.shape[batch_dims + k:], params.dtype)


def _gather_nd_reference(params, indices, *, batch_dims):
    params, indices = np.asarray(params), np.asarray(indices)
    b, k = batch_dims, indices.shape[-1]
    out = np.empty(indices.shape[:-1] + params.shape[b + k:], params.dtype)
    for pos in np.ndindex(*indices.shape[:-1]):
        out[pos] = params[pos[:b] + tuple(int(v) for v in indices[pos])]
    return out


def _gather_nd_samples(rng, dtype):
    v = lambda *s: _values(rng, s, dtype)  # noqa: E731

    def coords(shape, dims):
        return np.stack([_ints(rng, n, shape) for n in dims], axis=-1).astype(np.int32)

    return [
        ((v(4, 3), coords((2,), (4, 3))), {"batch_dims": 0}),
        ((v(4, 3), coords((2,), (4,))), {"batch_dims": 0}),
        ((v(4, 3, 2), coords((2, 2), (4, 3))), {"batch_dims": 0}),
        ((v(2, 3, 4), coords((2,), (3,))), {"batch_dims": 1}),
        ((v(2, 3, 4), coords((2, 5), (3, 4))), {"batch_dims": 1}),
        ((v(3, 4), np.zeros((0, 2), np.int64)), {"batch_dims": 0}),
        ((v(3, 4), np.zeros((2, 0), np.int32)), {"batch_dims": 0}),
        ((v(5), coords((), (5,))), {"batch_dims": 0}),
        ((v(3, 0), coords((2,), (3,))), {"batch_dims": 0}),
    ]


def _gather_nd_bad(rng):
    p = rng.standard_normal((3, 4)).astype(np.float32)
    bad = errors.InvalidArgumentError
    return [
        ((p, np.array([[1, 5]], np.int32)), {"batch_dims": 0}, bad),
        ((p, np.array([[-1, 0]], np.int32)), {"batch_dims": 0}, bad),
        ((p, np.zeros((2, 3), np.int32)), {"batch_dims": 0}, bad),
        ((p, np.int32(0)), {"batch_dims": 0}, bad),
        ((p, np.zeros((2, 1), np.int32)), {"batch_dims": 1}, bad),
        ((p, np.zeros((2, 1), np.float32)), {"batch_dims": 0}, bad),
    ]


def _gather_nd_vjp(g, params, indices, out, *, batch_dims):
    return execute(SCATTER_ND, (indices, g),
                   {"shape": tuple(params.shape), "batch_dims": batch_dims}), None


GATHER_ND = registry.primitive(
    "GatherNd", _gather_nd_kernel, dtypes=ALL, dtype_group=(0,), shape_fn=_gather_nd_shape,
    vjp=_gather_nd_vjp, saves=(0, 1), reference=_gather_nd_reference,
    samples=_gather_nd_samples, bad_samples=_gather_nd_bad, family="array")


def _scatter_nd_kernel(xp):
    def kernel(indices, updates, *, shape, batch_dims=0):
        shape = tuple(shape)
        if any(s < 0 for s in shape):
            raise _fail("shape %s must not have negative dimensions." % _shape_str(shape))
        rows, (_, width) = _nd_rows(xp, shape, indices, batch_dims, "output")
        _check_updates(updates.shape, indices.shape[:-1] + shape[batch_dims + indices.shape[-1]:])
        out = xp.zeros(shape, updates.dtype)
        _scatter_rows(xp, "add", out.reshape(-1), rows, updates, width)
        return out
    return kernel


def _check_updates(got, want):
    if tuple(got) != tuple(want):
        raise _fail("updates must have shape indices.shape[:-1] + shape[indices.shape[-1]:] "
                    "= %s, got %s." % (_shape_str(want), _shape_str(got)))


def _scatter_nd_reference(indices, updates, *, shape, batch_dims=0):
    indices, updates = np.asarray(indices), np.asarray(updates)
    out = np.zeros(shape, updates.dtype)
    for pos in np.ndindex(*indices.shape[:-1]):
        out[pos[:batch_dims] + tuple(int(v) for v in indices[pos])] += updates[pos]
    return out


def _scatter_nd_samples(rng, dtype):
    v = lambda *s: _values(rng, s, dtype)  # noqa: E731
    return [
        ((np.array([[1], [3], [1]], np.int32), v(3)), {"shape": (5,), "batch_dims": 0}),
        ((np.array([[0, 1], [2, 0]], np.int64), v(2)), {"shape": (3, 2), "batch_dims": 0}),
        ((np.array([[2], [0], [2]], np.int32), v(3, 4)), {"shape": (3, 4), "batch_dims": 0}),
        ((np.array([[[1], [1]], [[0], [2]]], np.int32), v(2, 2, 4)),
         {"shape": (2, 3, 4), "batch_dims": 1}),
        ((np.zeros((0, 1), np.int32), v(0, 2)), {"shape": (3, 2), "batch_dims": 0}),
        ((np.zeros((2, 0), np.int32), v(2, 3)), {"shape": (3,), "batch_dims": 0}),
        ((np.array([[2], [0]], np.int32), v(2, 0)), {"shape": (3, 0), "batch_dims": 0}),
    ]


def _scatter_nd_bad(rng):
    bad = errors.InvalidArgumentError
    u = np.ones((2,), np.float32)
    return [
        ((np.array([[1], [5]], np.int32), u), {"shape": (4,), "batch_dims": 0}, bad),
        ((np.array([[1], [-1]], np.int32), u), {"shape": (4,), "batch_dims": 0}, bad),
        ((np.array([[1], [2]], np.int32), np.ones((3,), np.float32)),
         {"shape": (4,), "batch_dims": 0}, bad),
        ((np.array([[1, 1]], np.int32), np.ones((1,), np.float32)),
         {"shape": (4,), "batch_dims": 0}, bad),
        ((np.array([[1], [2]], np.int32), u), {"shape": (-4,), "batch_dims": 0}, bad),
    ]


SCATTER_ND = registry.primitive(
    "ScatterNd", _scatter_nd_kernel, dtypes=ALL, dtype_group=(1,),
    shape_fn=lambda indices, updates, *, shape, batch_dims=0: AbstractValue(
        shape, updates.dtype),
    vjp=lambda g, indices, updates, out, *, shape, batch_dims=0: (
        None, execute(GATHER_ND, (g, indices), {"batch_dims": batch_dims})),
    saves=(0,), reference=_scatter_nd_reference, samples=_scatter_nd_samples,
    bad_samples=_scatter_nd_bad, family="array")


def _tensor_scatter_kernel(op):
    def factory(xp):
        def kernel(tensor, indices, updates):
            rows, (_, width) = _nd_rows(xp, tensor.shape, indices, 0, "tensor")
            _check_updates(updates.shape,
                           indices.shape[:-1] + tuple(tensor.shape[indices.shape[-1]:]))
            out = xp.array(tensor, copy=True)  # a fresh contiguous copy: reshape is a view
            if op == "sub":
                _scatter_rows(xp, "add", out.reshape(-1), rows, -updates, width)
            else:
                _scatter_rows(xp, op, out.reshape(-1), rows, updates, width)
            return out
        return kernel
    return factory


def _tensor_scatter_reference(op):
    combine = {"update": lambda a, b: b, "add": np.add, "sub": np.subtract,
               "maximum": np.maximum, "minimum": np.minimum}[op]

    def reference(tensor, indices, updates):
        out = np.array(tensor, copy=True)
        indices, updates = np.asarray(indices), np.asarray(updates)
        for pos in np.ndindex(*indices.shape[:-1]):
            at = tuple(int(v) for v in indices[pos])
            out[at] = combine(out[at], updates[pos])
        return out
    return reference


def _tensor_scatter_samples(unique):
    def samples(rng, dtype):
        v = lambda *s: _values(rng, s, dtype)  # noqa: E731
        rows = np.array([[2], [0]] if unique else [[2], [0], [2]], np.int32)
        return [
            ((v(4), rows, v(len(rows))), {}),
            ((v(4, 3), rows, v(len(rows), 3)), {}),
            ((v(3, 2), np.array([[0, 1], [2, 0]], np.int64), v(2)), {}),
            ((v(3, 2), np.zeros((0, 2), np.int32), v(0)), {}),
            ((v(2), np.zeros((1, 0), np.int32), v(1, 2)), {}),
        ]
    return samples


def _tensor_scatter_bad(rng):
    t = np.zeros((4, 2), np.float32)
    bad = errors.InvalidArgumentError
    return [
        ((t, np.array([[4]], np.int32), np.ones((1, 2), np.float32)), {}, bad),
        ((t, np.array([[1]], np.int32), np.ones((1, 3), np.float32)), {}, bad),
        ((t, np.array([[1, 1, 1]], np.int32), np.ones((1,), np.float32)), {}, bad),
        ((t, np.array([[1.0]], np.float32), np.ones((1, 2), np.float32)), {}, bad),
    ]


def _scatter_update_vjp(g, tensor, indices, updates, out):
    g_updates = execute(GATHER_ND, (g, indices), {"batch_dims": 0})
    g_tensor = execute(TENSOR_SCATTER_UPDATE, (g, indices, zeros_like_t(g_updates)))
    return g_tensor, None, g_updates


def _scatter_minmax_vjp(g, tensor, indices, updates, out):
    # Ties share the gradient equally between the tensor entry and the updates, as in TF.
    dt = g.dtype.name
    x_hits = cast(equal(tensor, out), dt)
    y_out = execute(GATHER_ND, (out, indices), {"batch_dims": 0})
    y_hits = cast(equal(updates, y_out), dt)
    hits = x_hits + execute(SCATTER_ND, (indices, y_hits),
                            {"shape": tuple(tensor.shape), "batch_dims": 0})
    g_tensor = g * x_hits / hits
    g_updates = execute(GATHER_ND, (g / hits, indices), {"batch_dims": 0}) * y_hits
    return g_tensor, None, g_updates


def _declare_tensor_scatter(name, op, dtypes, vjp, saves):
    return registry.primitive(
        name, _tensor_scatter_kernel(op), dtypes=dtypes, dtype_group=(0, 2),
        shape_fn=lambda tensor, indices, updates: AbstractValue(tensor.shape, tensor.dtype),
        vjp=vjp, saves=saves, reference=_tensor_scatter_reference(op),
        samples=_tensor_scatter_samples(unique=op in ("update", "maximum", "minimum")),
        bad_samples=_tensor_scatter_bad, family="array")


TENSOR_SCATTER_UPDATE = _declare_tensor_scatter(
    "TensorScatterUpdate", "update", ALL, _scatter_update_vjp, (1,))
TENSOR_SCATTER_ADD = _declare_tensor_scatter(
    "TensorScatterAdd", "add", NUMERIC,
    lambda g, tensor, indices, updates, out: (
        g, None, execute(GATHER_ND, (g, indices), {"batch_dims": 0})), (1,))
TENSOR_SCATTER_SUB = _declare_tensor_scatter(
    "TensorScatterSub", "sub", NUMERIC,
    lambda g, tensor, indices, updates, out: (
        g, None, -execute(GATHER_ND, (g, indices), {"batch_dims": 0})), (1,))
TENSOR_SCATTER_MAX = _declare_tensor_scatter(
    "TensorScatterMax", "maximum", REAL, _scatter_minmax_vjp, (0, 1, 2, "out"))
TENSOR_SCATTER_MIN = _declare_tensor_scatter(
    "TensorScatterMin", "minimum", REAL, _scatter_minmax_vjp, (0, 1, 2, "out"))


def gather_nd(params, indices, batch_dims=0, name=None):
    """Gathers slices of ``params`` addressed by coordinate vectors in ``indices``.

    The last dimension of ``indices`` holds K coordinates into params (after the
    ``batch_dims`` leading batch dims); the result has shape
    ``indices.shape[:-1] + params.shape[batch_dims + K:]``.

    Args:
        params: The Tensor to gather from.
        indices: An int32/int64 Tensor of rank >= 1, last dimension K <= rank(params) -
            batch_dims.
        batch_dims: Number of leading batch dims shared by params and indices.
        name: Unused.

    Returns:
        A Tensor of params' dtype.

    Raises:
        InvalidArgumentError: For coordinates out of range, K too large or mismatched
            batch dims.

    Example:
        >>> import eagerflow as ef
        >>> ef.gather_nd(ef.constant([[1, 2], [3, 4]]), [[1, 0], [0, 1]]).numpy().tolist()
        [3, 2]
    """
    if batch_dims.__class__ is not int:
        batch_dims = _static_int(batch_dims, "batch_dims", "GatherNd")
    return execute(GATHER_ND, (params, indices), {"batch_dims": batch_dims})


def scatter_nd(indices, updates, shape, name=None):
    """Scatters ``updates`` into zeros of ``shape`` at ``indices``; duplicates are summed.

    Args:
        indices: An int32/int64 Tensor whose last dimension K holds coordinates.
        updates: Values of shape ``indices.shape[:-1] + shape[K:]``.
        shape: The output shape (list, tuple or 1-D int tensor).
        name: Unused.

    Returns:
        A Tensor of ``shape`` and updates' dtype.

    Raises:
        InvalidArgumentError: For coordinates out of range or updates of the wrong shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.scatter_nd([[1], [3], [1]], [1.0, 2.0, 3.0], [4]).numpy().tolist()
        [0.0, 4.0, 0.0, 2.0]
    """
    from eagerflow.ops.broadcast import static_shape

    return execute(SCATTER_ND, (indices, updates),
                   {"shape": static_shape(shape, "ScatterNd"), "batch_dims": 0})


def _tensor_scatter_public(prim, pyname, summary, example):
    def op(tensor, indices, updates, name=None):
        return execute(prim, (tensor, indices, updates))

    op.__name__ = op.__qualname__ = pyname
    op.__doc__ = """%s

    Args:
        tensor: The Tensor to copy and update.
        indices: An int32/int64 Tensor whose last dimension K holds coordinates into
            ``tensor``.
        updates: Values of shape ``indices.shape[:-1] + tensor.shape[K:]``, of tensor's
            dtype.
        name: Unused.

    Returns:
        A new Tensor of tensor's shape and dtype.

    Raises:
        InvalidArgumentError: For coordinates out of range or updates of the wrong shape.

    Example:
        >>> import eagerflow as ef
        >>> %s
    """ % (summary, example)
    return op


tensor_scatter_nd_update = _tensor_scatter_public(
    TENSOR_SCATTER_UPDATE, "tensor_scatter_nd_update",
    "Returns a copy of ``tensor`` with ``updates`` written at ``indices``.\n\n"
    "    With repeated indices one of the updates wins (the last on the CPU); as in TF, the\n"
    "    gradient still gives every update ``gather_nd(grad, indices)``.",
    "ef.tensor_scatter_nd_update([1, 2, 3], [[0]], [9]).numpy().tolist()\n        [9, 2, 3]")
tensor_scatter_nd_add = _tensor_scatter_public(
    TENSOR_SCATTER_ADD, "tensor_scatter_nd_add",
    "Returns a copy of ``tensor`` with ``updates`` added at ``indices`` (repeats sum).",
    "ef.tensor_scatter_nd_add([1, 2, 3], [[0], [0]], [5, 5]).numpy().tolist()\n"
    "        [11, 2, 3]")
tensor_scatter_nd_sub = _tensor_scatter_public(
    TENSOR_SCATTER_SUB, "tensor_scatter_nd_sub",
    "Returns a copy of ``tensor`` with ``updates`` subtracted at ``indices``.",
    "ef.tensor_scatter_nd_sub([1, 2, 3], [[2]], [1]).numpy().tolist()\n        [1, 2, 2]")
tensor_scatter_nd_max = _tensor_scatter_public(
    TENSOR_SCATTER_MAX, "tensor_scatter_nd_max",
    "Returns a copy of ``tensor`` with entries at ``indices`` raised to ``updates``.\n\n"
    "    Where values tie, the gradient is shared equally among them, as in TF.",
    "ef.tensor_scatter_nd_max([1, 5], [[0], [1]], [3, 3]).numpy().tolist()\n        [3, 5]")
tensor_scatter_nd_min = _tensor_scatter_public(
    TENSOR_SCATTER_MIN, "tensor_scatter_nd_min",
    "Returns a copy of ``tensor`` with entries at ``indices`` lowered to ``updates``.\n\n"
    "    Where values tie, the gradient is shared equally among them, as in TF.",
    "ef.tensor_scatter_nd_min([1, 5], [[0], [1]], [3, 3]).numpy().tolist()\n        [1, 3]")


# --------------------------------------------------------------------------- segments

def _segment_prepare(xp, data, segment_ids, num_segments):
    """Validates an unsorted segment op; returns (flat ids, flat data, row shape)."""
    _check_index_dtype(segment_ids, "segment_ids")
    if num_segments < 0:
        raise _fail("num_segments = %d must be >= 0." % num_segments)
    if tuple(data.shape[:segment_ids.ndim]) != tuple(segment_ids.shape):
        raise _fail("data.shape = %s must start with segment_ids.shape = %s."
                    % (_shape_str(data.shape), _shape_str(segment_ids.shape)))
    rest = tuple(data.shape[segment_ids.ndim:])
    n = segment_ids.size
    if n and int(segment_ids.max()) >= num_segments:
        host = np.asarray(xp.to_numpy(segment_ids))
        pos = tuple(np.argwhere(host >= num_segments)[0])
        raise _fail("segment_ids%s = %d is out of range [0, %d)."
                    % (_position(pos), int(host[pos]), num_segments))
    ids = segment_ids.reshape(n)
    rows = data.reshape((n,) + rest)
    if n and int(ids.min()) < 0:
        keep = ids >= 0  # TF drops entries with a negative segment id
        ids, rows = ids[keep], rows[keep]
    return ids, rows, rest


def _unsorted_segment_kernel(op):
    def factory(xp):
        def kernel(data, segment_ids, *, num_segments):
            ids, rows, rest = _segment_prepare(xp, data, segment_ids, num_segments)
            shape = (num_segments,) + rest
            if op == "add":
                out = xp.zeros(shape, data.dtype)
            else:  # empty segments hold the dtype's lowest/highest finite value, as in TF
                limit = d.from_numpy(data.dtype)
                out = xp.full(shape, limit.min if op == "maximum" else limit.max, data.dtype)
            _scatter_rows(xp, op, out.reshape(-1), ids, rows, _prod(rest))
            return out
        return kernel
    return factory


def _unsorted_segment_reference(op):
    def reference(data, segment_ids, *, num_segments):
        data, ids = np.asarray(data), np.asarray(segment_ids)
        rest = data.shape[ids.ndim:]
        limit = d.from_numpy(data.dtype)
        init = {"add": 0, "maximum": limit.min, "minimum": limit.max}[op]
        out = np.full((num_segments,) + rest, init, data.dtype)
        for pos in np.ndindex(*ids.shape):
            s = int(ids[pos])
            if s >= 0:
                out[s] = getattr(np, op)(out[s], data[pos])
        return out
    return reference


def _segment_samples(rng, dtype):
    v = lambda *s: _values(rng, s, dtype)  # noqa: E731
    return [
        ((v(6), np.array([0, 2, 0, 3, 2, 0], np.int32)), {"num_segments": 5}),
        ((v(4, 3), np.array([1, 1, 0, -1], np.int64)), {"num_segments": 3}),
        ((v(2, 3, 2), _ints(rng, 4, (2, 3))), {"num_segments": 4}),
        ((v(3), np.int32(1)), {"num_segments": 2}),
        ((v(0, 2), np.zeros((0,), np.int32)), {"num_segments": 2}),
        ((v(3), np.array([0, 1, 0], np.int32)), {"num_segments": 2}),
    ]


def _segment_grad_samples(rng):
    # Distinct values (no ties: max/min are differentiable) and no empty segment (an empty
    # max segment holds -1.8e308, which drowns a finite difference).
    cases = [((6,), np.array([0, 2, 0, 3, 2, 1], np.int32), 4),
             ((4, 3), np.array([1, 1, 0, -1], np.int64), 2),
             ((2, 3, 2), np.array([[0, 1, 2], [2, 1, 0]], np.int32), 3),
             ((3,), np.int32(0), 1)]
    out = []
    for shape, ids, num in cases:
        size = int(np.prod(shape))
        data = rng.permutation(size).reshape(shape) + rng.uniform(0, 0.5, size=shape)
        out.append(((data.astype(np.float64), ids), {"num_segments": num}))
    return out


def _segment_bad(rng):
    bad = errors.InvalidArgumentError
    x = np.ones((4,), np.float32)
    return [
        ((x, np.array([0, 1, 5, 0], np.int32)), {"num_segments": 3}, bad),
        ((x, np.array([0, 1], np.int32)), {"num_segments": 3}, bad),
        ((x, np.array([0, 1, 2, 0], np.float32)), {"num_segments": 3}, bad),
        ((x, np.array([0, 1, 2, 0], np.int32)), {"num_segments": -1}, bad),
    ]


def _gather_drop_negatives(params, ids):
    """``gather(params, ids)`` with rows for negative ids zeroed (segment-op gradients)."""
    negative = less(ids, 0)
    safe = execute(SELECT, (negative, zeros_like_t(ids), ids))
    gathered = execute(GATHER, (params, safe), {"axis": 0, "batch_dims": 0})
    mask = _add_trailing_axes(negative, _rank(gathered) - _rank(ids))
    return execute(SELECT, (mask, zeros_like_t(gathered), gathered)), mask


def _segment_sum_vjp(g, data, segment_ids, out, *, num_segments):
    return _gather_drop_negatives(g, segment_ids)[0], None


def _segment_minmax_vjp(g, data, segment_ids, out, *, num_segments):
    gathered_out, dropped = _gather_drop_negatives(out, segment_ids)
    selected = equal(data, gathered_out)
    selected = execute(SELECT, (dropped, zeros_like_t(selected), selected))
    count = execute(UNSORTED_SEGMENT_SUM, (cast(selected, g.dtype), segment_ids),
                    {"num_segments": num_segments})
    # Empty segments count 1, not 0: no inf that a higher-order gradient could turn to NaN.
    count = execute(SELECT, (greater(count, 0), count, ONES_LIKE_fn(count)))
    shared = _gather_drop_negatives(g / count, segment_ids)[0]
    return execute(SELECT, (selected, shared, zeros_like_t(shared))), None


def _segment_shape(data, segment_ids, *, num_segments):
    return AbstractValue((num_segments,) + data.shape[segment_ids.ndim:], data.dtype)


def _declare_segment(name, op, dtypes, vjp, saves):
    return registry.primitive(
        name, _unsorted_segment_kernel(op), dtypes=dtypes, dtype_group=(0,),
        shape_fn=_segment_shape, vjp=vjp, saves=saves,
        reference=_unsorted_segment_reference(op), samples=_segment_samples,
        grad_samples=_segment_grad_samples, bad_samples=_segment_bad, family="math")


UNSORTED_SEGMENT_SUM = _declare_segment(
    "UnsortedSegmentSum", "add", NUMERIC, _segment_sum_vjp, (1,))
UNSORTED_SEGMENT_MAX = _declare_segment(
    "UnsortedSegmentMax", "maximum", REAL, _segment_minmax_vjp, (0, 1, "out"))
UNSORTED_SEGMENT_MIN = _declare_segment(
    "UnsortedSegmentMin", "minimum", REAL, _segment_minmax_vjp, (0, 1, "out"))


def _segment_sum_kernel(xp):
    def kernel(data, segment_ids):
        _check_index_dtype(segment_ids, "segment_ids")
        if segment_ids.ndim != 1:
            raise _fail("segment_ids must be 1-D, got shape %s." % _shape_str(segment_ids.shape))
        if data.ndim < 1 or data.shape[0] != segment_ids.shape[0]:
            raise _fail("segment_ids (%d entries) must have the size of data's first dimension "
                        "(data shape %s)." % (segment_ids.shape[0], _shape_str(data.shape)))
        n = segment_ids.shape[0]
        count = 0
        if n:
            if int(segment_ids[0]) < 0:
                raise _fail("segment_ids[0] = %d must be >= 0." % int(segment_ids[0]))
            if n > 1 and bool((segment_ids[1:] < segment_ids[:-1]).any()):
                host = np.asarray(xp.to_numpy(segment_ids))
                i = int(np.argwhere(host[1:] < host[:-1])[0][0]) + 1
                raise _fail("segment ids are not increasing: segment_ids[%d] = %d < "
                            "segment_ids[%d] = %d. Sort them, or use unsorted_segment_sum."
                            % (i, host[i], i - 1, host[i - 1]))
            count = int(segment_ids[-1]) + 1
        out = xp.zeros((count,) + data.shape[1:], data.dtype)
        _scatter_rows(xp, "add", out.reshape(-1), segment_ids, data, _prod(data.shape[1:]))
        return out
    return kernel


def _segment_sum_reference(data, segment_ids):
    data, ids = np.asarray(data), np.asarray(segment_ids)
    count = int(ids[-1]) + 1 if ids.size else 0
    return np.stack([data[ids == s].sum(axis=0) for s in range(count)]).astype(data.dtype) \
        if count else np.zeros((0,) + data.shape[1:], data.dtype)


SEGMENT_SUM = registry.primitive(
    "SegmentSum", _segment_sum_kernel, dtypes=NUMERIC, dtype_group=(0,),
    shape_fn=lambda data, ids: AbstractValue((None,) + data.shape[1:], data.dtype),
    vjp=lambda g, data, ids, out: (
        execute(GATHER, (g, ids), {"axis": 0, "batch_dims": 0}), None),
    saves=(1,), reference=_segment_sum_reference, family="math",
    samples=lambda rng, dtype: [
        ((_values(rng, (5,), dtype), np.array([0, 0, 1, 3, 3], np.int32)), {}),
        ((_values(rng, (4, 2), dtype), np.array([1, 1, 2, 2], np.int64)), {}),
        ((_values(rng, (0, 2), dtype), np.zeros((0,), np.int32)), {}),
    ],
    bad_samples=lambda rng: [
        ((np.ones(3, np.float32), np.array([0, 2, 1], np.int32)), {},
         errors.InvalidArgumentError),
        ((np.ones(3, np.float32), np.array([-1, 0, 1], np.int32)), {},
         errors.InvalidArgumentError),
        ((np.ones(3, np.float32), np.array([0, 1], np.int32)), {},
         errors.InvalidArgumentError),
        ((np.ones((3, 2), np.float32), np.zeros((3, 2), np.int32)), {},
         errors.InvalidArgumentError),
    ])


def _segment_public(prim, pyname, summary, example):
    def op(data, segment_ids, num_segments, name=None):
        if num_segments.__class__ is not int:
            num_segments = _static_int(num_segments, "num_segments", prim.name)
        return execute(prim, (data, segment_ids), {"num_segments": num_segments})

    op.__name__ = op.__qualname__ = pyname
    op.__doc__ = """%s

    ``output[i]`` combines every ``data[j...]`` whose ``segment_ids[j...] == i``;
    segment_ids must be a prefix of data's shape, entries with a negative id are dropped
    and ids must be < num_segments.

    Args:
        data: A Tensor.
        segment_ids: An int32/int64 Tensor whose shape is a prefix of data's shape.
        num_segments: The number of output segments (a static int).
        name: Unused.

    Returns:
        A Tensor of shape ``[num_segments] + data.shape[rank(segment_ids):]``.

    Raises:
        InvalidArgumentError: For ids >= num_segments or mismatched shapes.

    Example:
        >>> import eagerflow as ef
        >>> %s
    """ % (summary, example)
    return op


unsorted_segment_sum = _segment_public(
    UNSORTED_SEGMENT_SUM, "unsorted_segment_sum", "Sums the segments of ``data``.",
    "ef.math.unsorted_segment_sum([1, 2, 3], [1, 0, 1], 2).numpy().tolist()\n"
    "        [2, 4]")
unsorted_segment_max = _segment_public(
    UNSORTED_SEGMENT_MAX, "unsorted_segment_max",
    "Maximum over each segment; an empty segment holds the dtype's lowest value.",
    "ef.math.unsorted_segment_max([1, 2, 3], [1, 0, 1], 2).numpy().tolist()\n"
    "        [2, 3]")
unsorted_segment_min = _segment_public(
    UNSORTED_SEGMENT_MIN, "unsorted_segment_min",
    "Minimum over each segment; an empty segment holds the dtype's highest value.",
    "ef.math.unsorted_segment_min([1, 2, 3], [1, 0, 1], 2).numpy().tolist()\n"
    "        [2, 1]")


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """Mean over each segment of ``data``; an empty segment gives 0.

    Args:
        data: A floating or complex Tensor (integers are divided as by ``truediv``).
        segment_ids: An int32/int64 Tensor whose shape is a prefix of data's shape;
            negative ids are dropped.
        num_segments: The number of output segments (a static int).
        name: Unused.

    Returns:
        A Tensor of shape ``[num_segments] + data.shape[rank(segment_ids):]``.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.unsorted_segment_mean([1.0, 2.0, 4.0], [1, 0, 1], 3).numpy().tolist()
        [2.0, 2.5, 0.0]
    """
    if num_segments.__class__ is not int:
        num_segments = _static_int(num_segments, "num_segments", "UnsortedSegmentSum")
    attrs = {"num_segments": num_segments}
    data = _as_tensor(data)
    total = execute(UNSORTED_SEGMENT_SUM, (data, segment_ids), attrs)
    count = execute(UNSORTED_SEGMENT_SUM, (ONES_LIKE_fn(data), segment_ids), attrs)
    count = execute(SELECT, (greater(count, 0), count, ONES_LIKE_fn(count)))
    return truediv(total, count)


def segment_sum(data, segment_ids, name=None):
    """Sums segments of ``data`` given sorted, non-negative 1-D ``segment_ids``.

    Args:
        data: A Tensor whose first dimension matches ``segment_ids``.
        segment_ids: A sorted (non-decreasing) 1-D int32/int64 Tensor of ids >= 0.
        name: Unused.

    Returns:
        A Tensor of shape ``[segment_ids[-1] + 1] + data.shape[1:]`` (ids that do not occur
        give zeros).

    Raises:
        InvalidArgumentError: If the ids are not sorted, are negative or do not match data.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.segment_sum([1, 2, 3, 4], [0, 0, 2, 2]).numpy().tolist()
        [3, 0, 7]
    """
    return execute(SEGMENT_SUM, (data, segment_ids))


# --------------------------------------------------------------------------- boolean_mask

def _mask_axis(t_ndim, m_ndim, axis):
    if m_ndim == 0:
        raise _fail("mask cannot be a scalar; give it the shape of the tensor's masked dims.")
    a = axis + t_ndim if axis < 0 else axis
    if a < 0 or a + m_ndim > t_ndim:
        raise _fail("axis = %d with a mask of rank %d does not fit a tensor of rank %d: need "
                    "axis + rank(mask) <= rank(tensor)." % (axis, m_ndim, t_ndim))
    return a


def _mask_check(tshape, mask, axis):
    if mask.dtype != np.bool_:
        raise _fail("mask must be a bool tensor, got %s. Compare first, e.g. x > 0."
                    % mask.dtype.name)
    a = _mask_axis(len(tshape), mask.ndim, axis)
    if tuple(tshape[a:a + mask.ndim]) != tuple(mask.shape):
        raise _fail("mask shape %s must equal tensor.shape[%d:%d] = %s (tensor shape %s)."
                    % (_shape_str(mask.shape), a, a + mask.ndim,
                       _shape_str(tshape[a:a + mask.ndim]), _shape_str(tshape)))
    return (slice(None),) * a + (mask,)


def _boolean_mask_kernel(xp):
    def kernel(tensor, mask, *, axis):
        return tensor[_mask_check(tensor.shape, mask, axis)]
    return kernel


def _boolean_mask_grad_kernel(xp):
    def kernel(g, mask, *, axis, shape):
        index = _mask_check(shape, mask, axis)
        out = xp.zeros(shape, g.dtype)
        out[index] = g
        return out
    return kernel


def _boolean_mask_shape(tensor, mask, *, axis):
    a = _mask_axis(tensor.ndim, mask.ndim, axis)
    return AbstractValue(tensor.shape[:a] + (None,) + tensor.shape[a + mask.ndim:],
                         tensor.dtype)


def _boolean_mask_reference(tensor, mask, *, axis):
    tensor, mask = np.asarray(tensor), np.asarray(mask)
    a = _mask_axis(tensor.ndim, mask.ndim, axis)
    moved = np.moveaxis(tensor.reshape(tensor.shape[:a] + (-1,) + tensor.shape[a + mask.ndim:])
                        if mask.size else tensor.reshape(
                            tensor.shape[:a] + (0,) + tensor.shape[a + mask.ndim:]), a, 0)
    kept = [moved[i] for i in np.flatnonzero(mask.reshape(-1))]
    rows = np.stack(kept) if kept else np.zeros((0,) + moved.shape[1:], tensor.dtype)
    return np.moveaxis(rows, 0, a)


def _boolean_mask_samples(rng, dtype):
    v = lambda *s: _values(rng, s, dtype)  # noqa: E731
    m = lambda *s: rng.random(s) > 0.4  # noqa: E731
    return [
        ((v(5), m(5)), {"axis": 0}),
        ((v(4, 3), m(4)), {"axis": 0}),
        ((v(4, 3), m(4, 3)), {"axis": 0}),
        ((v(2, 4, 3), m(4)), {"axis": 1}),
        ((v(2, 4, 3), m(4, 3)), {"axis": -2}),
        ((v(3), np.zeros(3, bool)), {"axis": 0}),
        ((v(0, 2), np.zeros(0, bool)), {"axis": 0}),
    ]


def _boolean_mask_bad(rng):
    bad = errors.InvalidArgumentError
    t = np.ones((3, 4), np.float32)
    return [
        ((t, np.ones(4, bool)), {"axis": 0}, bad),
        ((t, np.bool_(True)), {"axis": 0}, bad),
        ((t, np.ones(3, np.int32)), {"axis": 0}, bad),
        ((t, np.ones((4, 1), bool)), {"axis": 1}, bad),
    ]


BOOLEAN_MASK = registry.primitive(
    "BooleanMask", _boolean_mask_kernel, dtypes=ALL, dtype_group=(0,),
    shape_fn=_boolean_mask_shape, saves=(0, 1),
    vjp=lambda g, tensor, mask, out, *, axis: (execute(
        BOOLEAN_MASK_GRAD, (g, mask), {"axis": axis, "shape": tuple(tensor.shape)}), None),
    reference=_boolean_mask_reference, samples=_boolean_mask_samples,
    bad_samples=_boolean_mask_bad, family="array")


def _boolean_mask_grad_reference(g, mask, *, axis, shape):
    g, mask = np.asarray(g), np.asarray(mask)
    out = np.zeros(shape, g.dtype)
    out[(slice(None),) * (axis % len(shape)) + (mask,)] = g
    return out


def _boolean_mask_grad_samples(rng, dtype):
    out = []
    for (t, m), attrs in _boolean_mask_samples(rng, dtype):
        g = _boolean_mask_reference(t, m, **attrs)
        out.append(((g, m), dict(attrs, shape=np.shape(t))))
    return out


BOOLEAN_MASK_GRAD = registry.primitive(
    "BooleanMaskGrad", _boolean_mask_grad_kernel, dtypes=ALL, dtype_group=(0,),
    shape_fn=lambda g, mask, *, axis, shape: AbstractValue(shape, g.dtype), saves=(1,),
    vjp=lambda g, grad, mask, out, *, axis, shape: (
        execute(BOOLEAN_MASK, (g, mask), {"axis": axis}), None),
    reference=_boolean_mask_grad_reference, samples=_boolean_mask_grad_samples,
    family="array")


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """Keeps the entries of ``tensor`` where ``mask`` is True (numpy's ``tensor[mask]``).

    ``mask`` covers dims ``axis .. axis + rank(mask) - 1`` of tensor; these are flattened
    into one dimension holding the selected entries in row-major order. A negative
    ``axis`` counts from the end (TF mis-handles negative axes).

    Args:
        tensor: An N-D Tensor.
        mask: A K-D bool Tensor, K >= 1, with ``mask.shape == tensor.shape[axis:axis+K]``.
        axis: The first masked dimension (default 0).
        name: Unused.

    Returns:
        A Tensor of rank N - K + 1.

    Raises:
        InvalidArgumentError: If mask is scalar, not bool, or does not match the shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.boolean_mask([1, 2, 3, 4], [True, False, True, False]).numpy().tolist()
        [1, 3]
    """
    axis = 0 if axis is None else _static_int(axis, "axis", "BooleanMask")
    return execute(BOOLEAN_MASK, (tensor, mask), {"axis": axis})


# --------------------------------------------------------------------------- one_hot

def _one_hot_axis(ndim, axis, depth):
    if depth < 0:
        raise _fail("depth must be non-negative, got %d." % depth)
    if not -1 <= axis <= ndim:
        raise _fail("axis = %d must be -1 or in [0, %d] for indices of rank %d."
                    % (axis, ndim, ndim))
    return ndim if axis == -1 else axis


def _one_hot_kernel(xp):
    def kernel(indices, *, depth, on_value, off_value, axis, dtype):
        a = _one_hot_axis(indices.ndim, axis, depth)
        target = d.as_dtype(dtype).np_dtype
        hot = indices[..., None] == xp.arange(depth)  # out-of-range indices match nothing
        out = xp.where(hot, xp.asarray(on_value, dtype=target),
                       xp.asarray(off_value, dtype=target))
        if a != indices.ndim:
            out = xp.ascontiguousarray(xp.moveaxis(out, -1, a))
        return out
    return kernel


def _one_hot_shape(indices, *, depth, on_value, off_value, axis, dtype):
    a = _one_hot_axis(indices.ndim, axis, depth)
    return AbstractValue(indices.shape[:a] + (depth,) + indices.shape[a:], dtype)


def _one_hot_reference(indices, *, depth, on_value, off_value, axis, dtype):
    indices = np.asarray(indices)
    a = indices.ndim if axis == -1 else axis
    target = d.as_dtype(dtype).np_dtype
    out = np.full(indices.shape[:a] + (depth,) + indices.shape[a:], off_value, target)
    for pos in np.ndindex(*indices.shape):
        k = int(indices[pos])
        if 0 <= k < depth:
            out[pos[:a] + (k,) + pos[a:]] = on_value
    return out


def _one_hot_samples(rng, dtype):
    def attrs(depth, axis=-1, on=1.0, off=0.0, dt="float32"):
        return {"depth": depth, "on_value": on, "off_value": off, "axis": axis, "dtype": dt}

    idx = rng.integers(-1, 5, size=(3, 2)).astype(dtype.np_dtype) if not dtype.is_unsigned \
        else rng.integers(0, 5, size=(3, 2)).astype(dtype.np_dtype)
    return [
        ((idx,), attrs(4)),
        ((idx,), attrs(4, axis=0, on=5, off=-1, dt="int32")),
        ((idx,), attrs(3, axis=1, on=2.5, off=0.5, dt="float64")),
        ((idx[0, 0],), attrs(4)),
        ((idx[:0],), attrs(4)),
        ((idx,), attrs(0)),
        ((idx,), attrs(4, on=True, off=False, dt="bool")),
    ]


ONE_HOT = registry.primitive(
    "OneHot", _one_hot_kernel, dtypes=(d.uint8, d.int8, d.int32, d.int64),
    shape_fn=_one_hot_shape, vjp=None, reference=_one_hot_reference,
    samples=_one_hot_samples, sweep_dtypes=(d.int32, d.int64, d.uint8), family="array",
    bad_samples=lambda rng: [
        ((np.array([1], np.int32),), {"depth": -1, "on_value": 1.0, "off_value": 0.0,
                                      "axis": -1, "dtype": "float32"},
         errors.InvalidArgumentError),
        ((np.array([1], np.int32),), {"depth": 3, "on_value": 1.0, "off_value": 0.0,
                                      "axis": 3, "dtype": "float32"},
         errors.InvalidArgumentError),
    ])


def _scalar_value(value, dtype, what):
    t = convert_to_tensor(value, dtype_hint=dtype)
    if t.shape.rank != 0:
        raise errors.InvalidArgumentError(
            None, "OneHot", "OneHot: %s must be a scalar, got shape %s."
            % (what, _shape_str(t.shape)))
    return t


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot encodes ``indices``: ``on_value`` at each index, ``off_value`` elsewhere.

    An index that is negative or >= depth gives a row of ``off_value``.

    Args:
        indices: A uint8/int8/int32/int64 Tensor.
        depth: The size of the one-hot dimension (a static int >= 0).
        on_value: Value for the hot entries (default 1).
        off_value: Value for the other entries (default 0).
        axis: Where the new dimension goes (default -1, last).
        dtype: Output dtype; by default on_value's or off_value's dtype, else float32.
        name: Unused.

    Returns:
        A Tensor with ``depth`` inserted into indices' shape at ``axis``.

    Raises:
        TypeError: If on_value, off_value and dtype disagree (as TF).
        InvalidArgumentError: For a negative depth or an axis out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.one_hot([0, 2, 5], 3).numpy().tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    target = None if dtype is None else d.as_dtype(dtype)
    on = None if on_value is None else _scalar_value(on_value, target, "on_value")
    off = None if off_value is None else _scalar_value(off_value, target, "off_value")
    if on is not None and off is not None and on.dtype is not off.dtype:
        raise TypeError("dtype %s of on_value does not match dtype %s of off_value"
                        % (on.dtype.name, off.dtype.name))
    given = on if on is not None else off
    if given is not None:
        if target is not None and given.dtype is not target:
            raise TypeError("dtype %s of %s does not match dtype parameter %s" % (
                given.dtype.name, "on_value" if on is not None else "off_value", target.name))
        target = given.dtype
    elif target is None:
        target = d.float32
    attrs = {
        "depth": _static_int(depth, "depth", "OneHot"),
        "on_value": on.numpy().item() if on is not None else target.np_dtype.type(1).item(),
        "off_value": off.numpy().item() if off is not None else target.np_dtype.type(0).item(),
        "axis": -1 if axis is None else _static_int(axis, "axis", "OneHot"),
        "dtype": target.name,
    }
    return execute(ONE_HOT, (indices,), attrs)


# --------------------------------------------------------------------------- where

def where_indices(condition, name=None):
    """Coordinates of the True (non-zero) entries of ``condition``, in row-major order.

    This is the one-argument form of ``eagerflow.where``.

    Args:
        condition: A bool (or numeric: non-zero counts as True) Tensor.
        name: Unused.

    Returns:
        An int64 Tensor of shape ``[num_true, rank(condition)]``.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.ops.indexing_ops import where_indices
        >>> where_indices([[True, False], [False, True]]).numpy().tolist()
        [[0, 0], [1, 1]]
    """
    # The primitive ("Where") is declared with the array family.
    from eagerflow.ops import array_ops

    return array_ops.where_indices(condition)


# --------------------------------------------------------------------------- unique

def _unique_parts(xp, x, out_idx):
    """(values in first-occurrence order, index of each x into them, counts)."""
    if x.ndim != 1:
        raise _fail("unique expects a 1-D vector, got shape %s. Flatten it first, e.g. "
                    "eagerflow.reshape(x, [-1])." % _shape_str(x.shape))
    if out_idx not in ("int32", "int64"):
        raise _fail("out_idx must be int32 or int64, got %s." % out_idx)
    idx_dtype = np.dtype(out_idx)
    if x.shape[0] == 0:
        empty = xp.zeros((0,), idx_dtype)
        return x[:0].copy(), empty, empty
    try:  # NaN != NaN: each NaN is its own value, as in TF
        _, first, inverse, counts = xp.unique(
            x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    except TypeError:  # backends without equal_nan
        _, first, inverse, counts = xp.unique(
            x, return_index=True, return_inverse=True, return_counts=True)
    order = xp.argsort(first)  # sorted-unique position -> first-occurrence rank
    rank = xp.empty_like(order)
    rank[order] = xp.arange(order.shape[0])
    return (x[first[order]], rank[inverse.reshape(-1)].astype(idx_dtype),
            counts[order].astype(idx_dtype))


def _unique_reference(x, *, out_idx, counts=False):
    x = np.asarray(x)
    values, idx, seen = [], [], {}
    for v in x.tolist():
        key = ("nan", len(values)) if v != v else v
        if key not in seen:
            seen[key] = len(values)
            values.append(v)
        idx.append(seen[key])
    y = np.array(values, x.dtype).reshape(-1)
    i = np.array(idx, out_idx).reshape(-1)
    if not counts:
        return y, i
    return y, i, np.bincount(i, minlength=len(values)).astype(out_idx)


def _unique_samples(rng, dtype):
    return [((np.asarray(_values(rng, (7,), dtype)[[0, 1, 0, 2, 1, 3, 0]]),),
             {"out_idx": "int32"}),
            ((_values(rng, (5,), dtype),), {"out_idx": "int64"}),
            ((_values(rng, (0,), dtype),), {"out_idx": "int32"}),
            ((_values(rng, (1,), dtype),), {"out_idx": "int32"})]


def _unique_bad(rng):
    return [((np.ones((2, 2), np.float32),), {"out_idx": "int32"}, errors.InvalidArgumentError),
            ((np.ones((2,), np.float32),), {"out_idx": "float32"},
             errors.InvalidArgumentError)]


UNIQUE = registry.primitive(
    "Unique", lambda xp: (lambda x, *, out_idx: _unique_parts(xp, x, out_idx)[:2]),
    dtypes=ALL, num_outputs=2, vjp=None, family="array",
    shape_fn=lambda x, *, out_idx: (AbstractValue((None,), x.dtype),
                                    AbstractValue(x.shape, out_idx)),
    reference=_unique_reference, samples=_unique_samples, bad_samples=_unique_bad,
    sweep_dtypes=(d.float32, d.int32, d.int64, d.bool))
UNIQUE_WITH_COUNTS = registry.primitive(
    "UniqueWithCounts", lambda xp: (lambda x, *, out_idx: _unique_parts(xp, x, out_idx)),
    dtypes=ALL, num_outputs=3, vjp=None, family="array",
    shape_fn=lambda x, *, out_idx: (AbstractValue((None,), x.dtype),
                                    AbstractValue(x.shape, out_idx),
                                    AbstractValue((None,), out_idx)),
    reference=lambda x, *, out_idx: _unique_reference(x, out_idx=out_idx, counts=True),
    samples=_unique_samples, bad_samples=_unique_bad,
    sweep_dtypes=(d.float32, d.int32, d.int64, d.bool))


def unique(x, out_idx=d.int32, name=None):
    """Unique values of a 1-D tensor, in order of first occurrence (not sorted).

    Args:
        x: A 1-D Tensor.
        out_idx: int32 (default) or int64, the dtype of ``idx``.
        name: Unused.

    Returns:
        A pair ``(y, idx)``: the unique values, and for each entry of x its position in y
        (``x == gather(y, idx)``). Each NaN counts as a distinct value, as in TF.

    Raises:
        InvalidArgumentError: If x is not 1-D.

    Example:
        >>> import eagerflow as ef
        >>> y, idx = ef.unique([4, 1, 4, 2])
        >>> y.numpy().tolist(), idx.numpy().tolist()
        ([4, 1, 2], [0, 1, 0, 2])
    """
    return execute(UNIQUE, (x,), {"out_idx": d.as_dtype(out_idx).name})


def unique_with_counts(x, out_idx=d.int32, name=None):
    """Like :func:`unique`, also returning how often each unique value occurs.

    Args:
        x: A 1-D Tensor.
        out_idx: int32 (default) or int64, the dtype of ``idx`` and ``count``.
        name: Unused.

    Returns:
        A triple ``(y, idx, count)``.

    Example:
        >>> import eagerflow as ef
        >>> y, idx, count = ef.unique_with_counts([4, 1, 4])
        >>> count.numpy().tolist()
        [2, 1]
    """
    return execute(UNIQUE_WITH_COUNTS, (x,), {"out_idx": d.as_dtype(out_idx).name})


# --------------------------------------------------------------------------- searchsorted

_SEARCH_BLOCK = 1 << 22  # elements of the comparison block searched at once


def _bound_kernel(side):
    def factory(xp):
        def kernel(sorted_sequence, values, *, out_type):
            s, v = sorted_sequence, values
            if s.ndim == 0 or v.ndim == 0:
                raise _fail("sorted_sequence and values must be at least 1-D, got shapes %s "
                            "and %s." % (_shape_str(s.shape), _shape_str(v.shape)))
            if s.shape[:-1] != v.shape[:-1]:
                raise _fail("sorted_sequence and values must have the same leading dims (all "
                            "but the last), got shapes %s and %s."
                            % (_shape_str(s.shape), _shape_str(v.shape)))
            n, m = s.shape[-1], v.shape[-1]
            rows = _prod(s.shape[:-1])
            s2, v2 = s.reshape(rows, n), v.reshape(rows, m)
            out = xp.empty((rows, m), np.dtype(out_type))
            if n * m <= _SEARCH_BLOCK:
                # Counting comparisons is std::lower_bound/upper_bound on sorted rows,
                # NaN included (a NaN value is placed first by 'left', last by 'right').
                step = max(1, _SEARCH_BLOCK // max(n * m, 1))
                for r in range(0, rows, step):
                    seq, val = s2[r:r + step, None, :], v2[r:r + step, :, None]
                    hits = (seq < val) if side == "left" else ~(val < seq)
                    out[r:r + step] = hits.sum(axis=-1)
            else:
                for r in range(rows):
                    out[r] = xp.searchsorted(s2[r], v2[r], side=side)
            return out.reshape(v.shape)
        return kernel
    return factory


def _bound_reference(side):
    def reference(sorted_sequence, values, *, out_type):
        s, v = np.asarray(sorted_sequence), np.asarray(values)
        out = np.empty(v.shape, out_type)
        for pos in np.ndindex(*v.shape[:-1]):
            out[pos] = np.searchsorted(s[pos], v[pos], side=side)
        return out
    return reference


def _bound_samples(rng, dtype):
    def seq(*shape):
        return np.sort(_values(rng, shape, dtype), axis=-1)

    return [
        ((seq(6), _values(rng, (4,), dtype)), {"out_type": "int32"}),
        ((seq(2, 5), _values(rng, (2, 3), dtype)), {"out_type": "int64"}),
        ((seq(2, 3, 4), _values(rng, (2, 3, 2), dtype)), {"out_type": "int32"}),
        ((seq(0), _values(rng, (3,), dtype)), {"out_type": "int32"}),
        ((seq(4), _values(rng, (0,), dtype)), {"out_type": "int32"}),
    ]


def _bound_bad(rng):
    bad = errors.InvalidArgumentError
    return [((np.arange(3.0), np.float64(1.0)), {"out_type": "int32"}, bad),
            ((np.ones((2, 3)), np.ones((3, 3))), {"out_type": "int32"}, bad)]


LOWER_BOUND, UPPER_BOUND = (registry.primitive(
    name, _bound_kernel(side), dtypes=REAL, vjp=None, family="array",
    shape_fn=lambda s, v, *, out_type: AbstractValue(v.shape, out_type),
    reference=_bound_reference(side), samples=_bound_samples, bad_samples=_bound_bad,
    sweep_dtypes=(d.float32, d.float64, d.int32))
    for name, side in (("LowerBound", "left"), ("UpperBound", "right")))


def searchsorted(sorted_sequence, values, side="left", out_type=d.int32, name=None):
    """Finds where ``values`` would be inserted into sorted rows to keep them sorted.

    Searches along the innermost dimension; leading dims are batch dims and must match.

    Args:
        sorted_sequence: An N-D Tensor sorted along its last dimension.
        values: An N-D Tensor of the same dtype and leading dims.
        side: ``'left'`` (first suitable position) or ``'right'`` (last).
        out_type: int32 (default) or int64.
        name: Unused.

    Returns:
        A Tensor of values' shape and ``out_type``.

    Raises:
        InvalidArgumentError: For a bad side or mismatched leading dims.

    Example:
        >>> import eagerflow as ef
        >>> ef.searchsorted([1.0, 2.0, 3.0], [2.0, 0.5], side="right").numpy().tolist()
        [2, 0]
    """
    if side not in ("left", "right"):
        raise errors.InvalidArgumentError(
            None, "searchsorted", "searchsorted: side must be 'left' or 'right', got %r."
            % (side,))
    out_type = d.as_dtype(out_type)
    if out_type not in _INDEX_DTYPES:
        raise errors.InvalidArgumentError(
            None, "searchsorted", "searchsorted: out_type must be int32 or int64, got %s."
            % out_type.name)
    prim = LOWER_BOUND if side == "left" else UPPER_BOUND
    return execute(prim, (sorted_sequence, values), {"out_type": out_type.name})
