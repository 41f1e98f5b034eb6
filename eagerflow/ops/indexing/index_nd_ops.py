"""Indexing by coordinate vectors: gather_nd, scatter_nd and tensor_scatter_nd_*.

The last axis of ``indices`` holds coordinates into the leading dims of params (or of the
output shape); each coordinate addresses an element or a slice. GatherNd and ScatterNd are
each other's gradients; the tensor_scatter_nd_* ops (update, add, sub, max, min) write
updates into a copy of a tensor.
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import equal, zeros_like_t
from eagerflow.ops.math.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, NUMERIC, REAL
from eagerflow.ops.indexing.gather_ops import _check_batch
from eagerflow.ops.indexing import (
    _check_index_dtype, _fail, _ints, _position, _prod, _scatter_rows, _shape_str, _static_int,
    _values,
)
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import HOST_INDEX_CHECK

__all__ = [
    "gather_nd", "scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
    "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min",
]

EXPORTS = {
    "": ["gather_nd", "scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
         "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min"],
}


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
    host_sync=HOST_INDEX_CHECK,
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
    host_sync=HOST_INDEX_CHECK,
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
        host_sync=HOST_INDEX_CHECK,
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
    from eagerflow.ops.array import int_tuple

    return execute(SCATTER_ND, (indices, updates),
                   {"shape": int_tuple(shape, "scatter_nd"), "batch_dims": 0})


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
