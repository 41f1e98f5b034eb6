"""The SparseTensor primitives: densify, sparse-dense matmul, reshape of coordinates.

Their outputs' sizes come from a dense shape held in a tensor (``dense_shape``), which a
traced function only knows when it runs, so they take it as an input (not an attr), with
a shape rule that leaves those dimensions unknown. Each kernel checks its indices (rank,
bounds, and for ``SparseToDense`` the row-major order TF requires) on every call, eager or
in a graph. The other ``tf.sparse`` operations are composites of ordinary ops
(:mod:`eagerflow.sparse`).

Example:
    >>> import numpy as np, eagerflow as ef
    >>> from eagerflow.ops.sparse.sparse_ops import sparse_to_dense
    >>> sparse_to_dense(ef.constant(np.array([[0, 1]])), ef.constant([5.0]),
    ...                 ef.constant(np.array([2, 2]))).numpy().tolist()
    [[0.0, 5.0], [0.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, FLOAT, INT, COMPLEX, _sample_values
from eagerflow.ops.indexing import _scatter_rows
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import HOST_NUMPY

__all__ = ["sparse_to_dense", "sparse_dense_matmul_op", "sparse_reshape_op"]

EXPORTS = {}


def _fail(text):
    return errors.InvalidArgumentError(None, None, text)


def _host(xp, a):
    return np.asarray(xp.to_numpy(a)) if hasattr(xp, "to_numpy") else np.asarray(a)


def _check_coo(indices, nvalues, shape):
    """Validates ``indices`` [N, rank] against ``nvalues`` and the dense ``shape`` (host)."""
    if shape.ndim != 1:
        raise _fail("dense_shape must be a vector, got shape %s." % list(shape.shape))
    rank = shape.size
    if indices.ndim != 2 or indices.shape[1] != rank:
        raise _fail("indices must be a matrix [N, %d] (one row per value, one column per "
                    "dense dimension), got shape %s." % (rank, list(indices.shape)))
    if nvalues is not None and indices.shape[0] != nvalues:
        raise _fail("indices has %d rows but there are %d values; they must be equal."
                    % (indices.shape[0], nvalues))
    if np.any(shape < 0):
        raise _fail("dense_shape %s has a negative dimension." % shape.tolist())
    if indices.size:
        bad = np.nonzero(np.any((indices < 0) | (indices >= shape), axis=1))[0]
        if bad.size:
            i = int(bad[0])
            raise _fail("indices[%d] = %s is out of bounds: need 0 <= index < %s."
                        % (i, indices[i].tolist(), shape.tolist()))


def _check_order(indices, shape):
    """TF's rule for SparseToDense: indices strictly increasing in row-major order."""
    if len(indices) < 2:
        return
    prev, cur = indices[:-1], indices[1:]
    diff = cur != prev
    first = np.argmax(diff, axis=1)  # the first differing column of each pair
    rows = np.arange(len(cur))
    same = ~diff.any(axis=1)
    back = cur[rows, first] < prev[rows, first]
    if same.any() or back.any():
        i = int(np.nonzero(same | back)[0][0]) + 1
        if same[i - 1]:
            raise _fail("indices[%d] = %s is repeated." % (i, indices[i].tolist()))
        raise _fail("indices[%d] = %s is out of order. Many sparse ops require sorted "
                    "indices; use tf.sparse.reorder to create a correctly ordered copy."
                    % (i, indices[i].tolist()))


# -- SparseToDense -----------------------------------------------------------------------
def _to_dense_kernel(xp):
    def kernel(indices, values, dense_shape, default, *, validate_indices):
        idx, shape = _host(xp, indices).astype(np.int64), _host(xp, dense_shape)
        if idx.size == 0:
            idx = idx.reshape(0, shape.size)
        if values.ndim != 1:
            raise _fail("values must be a vector, got shape %s." % list(values.shape))
        _check_coo(idx, values.shape[0], shape)
        if validate_indices:
            _check_order(idx, shape)
        out = xp.full(tuple(int(s) for s in shape), default, dtype=values.dtype)
        if idx.size:
            out[tuple(xp.asarray(idx.T))] = values
        return out
    return kernel


def _to_dense_reference(indices, values, dense_shape, default, *, validate_indices):
    out = np.empty(tuple(dense_shape), dtype=np.asarray(values).dtype)
    out[...] = default[()]
    for i, v in zip(np.asarray(indices).reshape(len(values), len(dense_shape)), values):
        out[tuple(i)] = v
    return out


def _coo_sample(rng, dtype, shape, n):
    flat = np.sort(rng.choice(int(np.prod(shape)), size=n, replace=False))
    idx = np.stack(np.unravel_index(flat, shape), 1).astype(np.int64).reshape(n, len(shape))
    return idx, _sample_values(rng, (n,), dtype, (-3, 3)), np.asarray(shape, np.int64)


def _to_dense_samples(rng, dtype):
    zero = np.zeros((), dtype.np_dtype) if dtype is not d.string else np.array(b"", object)
    out = []
    for shape, n in (((3, 4), 5), ((6,), 2), ((2, 3, 2), 4), ((3, 3), 0), ((0, 2), 0)):
        idx, vals, dense = _coo_sample(rng, dtype, shape, n)
        out.append(((idx, vals, dense, zero), {"validate_indices": True}))
    idx, vals, dense = _coo_sample(rng, dtype, (4, 2), 3)
    out.append(((idx[::-1].copy(), vals, dense, _sample_values(rng, (), dtype, (-3, 3))),
                {"validate_indices": False}))
    return out


def _to_dense_vjp(g, indices, values, dense_shape, default, out, *, validate_indices):
    from eagerflow.ops.indexing.index_nd_ops import gather_nd
    from eagerflow.ops.reduce.reductions import reduce_sum

    grad_values = gather_nd(g, indices)
    # The default value fills every cell no index names.
    return None, grad_values, None, reduce_sum(g) - reduce_sum(grad_values)


def _to_dense_shape(indices, values, dense_shape, default, *, validate_indices):
    rank = dense_shape.shape[0] if dense_shape.shape else None
    return AbstractValue(None if rank is None else (None,) * rank, values.dtype)


def _int64(a):
    return np.asarray(a, np.int64)


SPARSE_TO_DENSE = registry.primitive(
    "SparseToDense", _to_dense_kernel, dtypes=ALL + (d.string,), dtype_group=(1, 3),
    host_sync=HOST_NUMPY,
    family="sparse", reference=_to_dense_reference, samples=_to_dense_samples,
    sweep_dtypes=(d.float32, d.float64, d.int32, d.bool, d.string),
    shape_fn=_to_dense_shape, vjp=_to_dense_vjp, saves=(0,),
    grad_samples=lambda rng: [
        ((_int64([[0, 1], [1, 0], [2, 2]]), rng.normal(size=3), _int64([3, 3]),
          np.array(0.5)), {"validate_indices": True}),
        ((_int64([[1], [4]]), rng.normal(size=2), _int64([5]), np.array(-1.0)),
         {"validate_indices": True})],
    bad_samples=lambda rng: [
        ((_int64([[3, 0]]), np.ones(1, np.float32), _int64([3, 3]), np.float32(0)),
         {"validate_indices": True}, errors.InvalidArgumentError),
        ((_int64([[1, 0], [0, 1]]), np.ones(2, np.float32), _int64([3, 3]), np.float32(0)),
         {"validate_indices": True}, errors.InvalidArgumentError),
        ((_int64([[0, 1], [0, 1]]), np.ones(2, np.float32), _int64([3, 3]), np.float32(0)),
         {"validate_indices": True}, errors.InvalidArgumentError),
        ((_int64([[0, 1]]), np.ones(2, np.float32), _int64([3, 3]), np.float32(0)),
         {"validate_indices": True}, errors.InvalidArgumentError),
        ((_int64([[0, 1]]), np.ones(1, np.float32), _int64([3, 3, 1]), np.float32(0)),
         {"validate_indices": True}, errors.InvalidArgumentError)])


def sparse_to_dense(indices, values, dense_shape, default_value=None, validate_indices=True):
    """The dense tensor of COO components: ``default_value`` where no index points.

    With ``validate_indices`` the indices must be unique and in row-major order, as TF's
    ``SparseToDense`` requires; without it a repeated index keeps its last value.
    """
    from eagerflow.tensor import convert_to_tensor

    if default_value is None:
        default_value = b"" if values.dtype is d.string else 0
    return execute(SPARSE_TO_DENSE, (indices, values, dense_shape,
                                     convert_to_tensor(default_value, dtype=values.dtype)),
                   {"validate_indices": bool(validate_indices)})


# -- SparseTensorDenseMatMul -------------------------------------------------------------
def _matmul_operands(xp, indices, values, shape, b, adjoint_a, adjoint_b):
    idx, shp = _host(xp, indices).astype(np.int64), _host(xp, shape)
    if idx.size == 0:
        idx = idx.reshape(0, shp.size)
    if shp.size != 2:
        raise _fail("the sparse operand must be a matrix, got dense_shape %s." % shp.tolist())
    if b.ndim != 2:
        raise _fail("the dense operand must be a matrix, got shape %s." % list(b.shape))
    _check_coo(idx, values.shape[0] if values.ndim == 1 else -1, shp)
    rows, cols = (idx[:, 1], idx[:, 0]) if adjoint_a else (idx[:, 0], idx[:, 1])
    m, k = (int(shp[1]), int(shp[0])) if adjoint_a else (int(shp[0]), int(shp[1]))
    if adjoint_a and values.dtype.kind == "c":
        values = xp.conj(values)
    if adjoint_b:
        b = xp.conj(b.T) if b.dtype.kind == "c" else b.T
    if b.shape[0] != k:
        raise _fail("inner dimensions differ: the sparse operand gives %d (%s), the dense "
                    "operand %d (shape %s, adjoint_b=%s)."
                    % (k, "columns" if not adjoint_a else "rows of the adjoint",
                       b.shape[0], list(b.shape), adjoint_b))
    return rows, cols, m, values, b


def _matmul_kernel(xp):
    def kernel(indices, values, shape, b, *, adjoint_a, adjoint_b):
        rows, cols, m, values, b = _matmul_operands(xp, indices, values, shape, b,
                                                    adjoint_a, adjoint_b)
        n = b.shape[1]
        out = xp.zeros((m, n), dtype=b.dtype)
        if len(rows) and n:
            contrib = b[xp.asarray(cols)] * values[:, None]
            _scatter_rows(xp, "add", out.reshape(-1), xp.asarray(rows), contrib, n)
        return out
    return kernel


def _matmul_reference(indices, values, shape, b, *, adjoint_a, adjoint_b):
    a = np.zeros(tuple(shape), dtype=np.asarray(b).dtype)
    for i, v in zip(np.asarray(indices).reshape(len(values), 2), values):
        a[tuple(i)] += v
    a = a.conj().T if adjoint_a else a
    b = np.asarray(b).conj().T if adjoint_b else np.asarray(b)
    return a @ b


def _matmul_samples(rng, dtype):
    out = []
    for (m, k, n), nnz, adj_a, adj_b in (((3, 4, 2), 5, False, False),
                                          ((4, 3, 2), 4, True, False),
                                          ((3, 4, 5), 3, False, True),
                                          ((2, 2, 3), 2, True, True),
                                          ((3, 2, 2), 0, False, False)):
        idx, vals, shape = _coo_sample(rng, dtype, (k, m) if adj_a else (m, k), nnz)
        b = _sample_values(rng, (n, k) if adj_b else (k, n), dtype, (-3, 3))
        out.append(((idx, vals, shape, b), {"adjoint_a": adj_a, "adjoint_b": adj_b}))
    return out


def _matmul_vjp(g, indices, values, shape, b, out, *, adjoint_a, adjoint_b):
    from eagerflow.ops.array.reshape_ops import transpose
    from eagerflow.ops.indexing.gather_ops import gather
    from eagerflow.ops.math.arithmetic import conj
    from eagerflow.ops.reduce.reductions import reduce_sum

    # out = A' @ B' with A' = A or A^H, B' = B or B^H: dB' = A'^H @ g.
    grad_b = sparse_dense_matmul_op(indices, values, shape, g, adjoint_a=not adjoint_a)
    if adjoint_b:
        grad_b = conj(transpose(grad_b))
    rows, cols = indices[:, 0], indices[:, 1]
    b_rows = conj(transpose(b)) if adjoint_b else b
    if not adjoint_a:  # out[r] += v * B'[c]
        grad_values = reduce_sum(gather(g, rows) * conj(gather(b_rows, cols)), axis=1)
    else:  # out[c] += conj(v) * B'[r]
        grad_values = conj(reduce_sum(gather(g, cols) * conj(gather(b_rows, rows)), axis=1))
    return None, grad_values, None, grad_b


SPARSE_DENSE_MATMUL = registry.primitive(
    "SparseTensorDenseMatMul", _matmul_kernel, dtypes=FLOAT + COMPLEX + INT,
    dtype_group=(1, 3), family="sparse", reference=_matmul_reference,
    samples=_matmul_samples, sweep_dtypes=(d.float32, d.float64, d.int32, d.complex128),
    vjp=_matmul_vjp, saves=(0, 1, 2, 3),
    shape_fn=lambda i, v, s, b, *, adjoint_a, adjoint_b: AbstractValue(
        (None, None if not b.shape else b.shape[0 if adjoint_b else 1]), b.dtype),
    grad_samples=lambda rng: [
        ((_int64([[0, 1], [1, 0], [2, 3]]), rng.normal(size=3), _int64([3, 4]),
          rng.normal(size=sh)), {"adjoint_a": a, "adjoint_b": b})
        for a, b, sh in ((False, False, (4, 2)), (True, False, (3, 2)),
                         (False, True, (2, 4)), (True, True, (2, 3)))],
    bad_samples=lambda rng: [
        ((_int64([[0, 1]]), np.ones(1, np.float32), _int64([2, 2]),
          np.ones((3, 2), np.float32)), {"adjoint_a": False, "adjoint_b": False},
         errors.InvalidArgumentError),
        ((_int64([[0, 5]]), np.ones(1, np.float32), _int64([2, 2]),
          np.ones((2, 2), np.float32)), {"adjoint_a": False, "adjoint_b": False},
         errors.InvalidArgumentError),
        ((_int64([[0, 1, 0]]), np.ones(1, np.float32), _int64([2, 2, 1]),
          np.ones((2, 2), np.float32)), {"adjoint_a": False, "adjoint_b": False},
         errors.InvalidArgumentError)])


def sparse_dense_matmul_op(indices, values, dense_shape, b, adjoint_a=False, adjoint_b=False):
    """``A @ b`` for the sparse matrix ``A`` of COO components (either side adjointed)."""
    return execute(SPARSE_DENSE_MATMUL, (indices, values, dense_shape, b),
                   {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)})


# -- SparseReshape -----------------------------------------------------------------------
def _reshape_kernel(xp):
    def kernel(indices, shape, new_shape):
        idx = _host(xp, indices).astype(np.int64)
        old = _host(xp, shape).astype(np.int64)
        new = _host(xp, new_shape).astype(np.int64).copy()
        if idx.size == 0:
            idx = idx.reshape(0, old.size)
        _check_coo(idx, None, old)
        if new.ndim != 1:
            raise _fail("the new shape must be a vector, got shape %s." % list(new.shape))
        total = int(np.prod(old))
        unknown = np.nonzero(new == -1)[0]
        if unknown.size > 1 or np.any(new < -1):
            raise _fail("the new shape %s may hold one -1 and no other negative "
                        "dimension." % new.tolist())
        if unknown.size:
            known = int(np.prod(np.delete(new, unknown)))
            if known == 0 or total % known:
                raise _fail("cannot reshape a SparseTensor of shape %s (%d elements) to %s."
                            % (old.tolist(), total, new.tolist()))
            new[unknown] = total // known
        if int(np.prod(new)) != total:
            raise _fail("cannot reshape a SparseTensor of shape %s (%d elements) to %s "
                        "(%d elements)." % (old.tolist(), total, new.tolist(),
                                            int(np.prod(new))))
        if len(idx) and total:
            linear = np.ravel_multi_index(tuple(idx.T), tuple(old))
            out = np.stack(np.unravel_index(linear, tuple(new)), 1).astype(np.int64)
        else:
            out = np.zeros((len(idx), new.size), np.int64)
        return xp.asarray(out.reshape(len(idx), new.size)), xp.asarray(new)
    return kernel


def _reshape_reference(indices, shape, new_shape):
    new = np.asarray(new_shape, np.int64).copy()
    total = int(np.prod(shape))
    if (new == -1).any():
        new[new == -1] = total // int(np.prod(new[new != -1]))
    dense = np.zeros(tuple(shape), np.int64)
    for k, i in enumerate(np.asarray(indices).reshape(-1, len(shape))):
        dense[tuple(i)] = k + 1
    flat = dense.reshape(tuple(new))
    order = flat[flat > 0] - 1
    idx = np.argwhere(flat > 0).astype(np.int64)
    out = np.zeros_like(idx)
    out[order] = idx
    return out.reshape(len(order), new.size), new


def _reshape_samples(rng, dtype):
    out = []
    for shape, nnz, new in (((3, 4), 5, (2, 6)), ((3, 4), 4, (-1,)), ((2, 3, 2), 4, (6, -1)),
                            ((4,), 2, (2, 1, 2)), ((3, 3), 0, (9, 1)), ((0, 2), 0, (0, 5))):
        idx, _, dense = _coo_sample(rng, d.float32, shape, nnz)
        out.append(((idx, dense, np.asarray(new, np.int64)), {}))
    return out


SPARSE_RESHAPE = registry.primitive(
    "SparseReshape", _reshape_kernel, dtypes=(d.int64,), dtype_group="all", num_outputs=2,
    host_sync=HOST_NUMPY,
    family="sparse", reference=_reshape_reference, samples=_reshape_samples,
    sweep_dtypes=(d.int64,),
    shape_fn=lambda i, s, new: (
        AbstractValue((None, new.shape[0] if new.shape else None), d.int64),
        AbstractValue(tuple(new.shape) if new.shape else (None,), d.int64)),
    bad_samples=lambda rng: [
        ((_int64([[0, 1]]), _int64([2, 2]), _int64([3, -1])), {}, errors.InvalidArgumentError),
        ((_int64([[0, 1]]), _int64([2, 2]), _int64([-1, -1])), {},
         errors.InvalidArgumentError),
        ((_int64([[0, 1]]), _int64([2, 2]), _int64([5])), {}, errors.InvalidArgumentError),
        ((_int64([[0, 2]]), _int64([2, 2]), _int64([4])), {}, errors.InvalidArgumentError)])


def sparse_reshape_op(indices, dense_shape, new_shape):
    """The indices and dense shape of the same values under ``new_shape`` (one -1 allowed)."""
    return execute(SPARSE_RESHAPE, (indices, dense_shape, new_shape))
