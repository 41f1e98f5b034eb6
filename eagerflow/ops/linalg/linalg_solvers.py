"""Inverses, determinants and linear solves: inv, det, slogdet, solve and triangular_solve.

Gradients: ``inv``: ``dA = -A^-H G A^-H``; ``det``: ``dA = g conj(det) A^-H``; ``slogdet``:
``dA = g A^-H``; ``solve``/``triangular_solve`` (``X = A^-1 B``): ``dB = A^-H G``,
``dA = -dB X^H`` (restricted to the triangle for triangular_solve). A singular matrix raises
InvalidArgumentError rather than returning inf or NaN.
"""

from __future__ import annotations

import collections

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import conj
from eagerflow.ops.linalg import (
    DECOMP_DTYPES, _SWEEP, _bad_square, _band, _batch_broadcast_to, _check_aval, _check_finite_gpu,
    _check_matrix, _einsum, _is_linalg_error, _not_invertible, _random, _same_shape,
    _square_samples, _well_conditioned,
)
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import broadcast_shapes
from eagerflow.ops.linalg.matmul_ops import _flip, _shape_text, matmul
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import cubic_cost
from eagerflow.ops.family import HOST_SOLVER, HOST_VALUE_CHECK

__all__ = ["inv", "det", "slogdet", "solve", "triangular_solve"]

EXPORTS = {
    "linalg": ["inv", "det", "slogdet", "solve", "triangular_solve"],
}


SlogdetResult = collections.namedtuple("LogMatrixDeterminant", ["sign", "log_abs_determinant"])


# ----------------------------------------------------------------------------------------
# MatrixInverse
# ----------------------------------------------------------------------------------------

def _inv_kernel(xp):
    def kernel(x, adjoint=False):
        _check_matrix(x, "matrix_inverse")
        if adjoint:
            x = _flip(x, True)
        try:
            out = xp.linalg.inv(x)
        except Exception as exc:  # noqa: BLE001 - numpy/cupy LinAlgError
            if _is_linalg_error(exc):
                raise _not_invertible("matrix_inverse", x.shape) from None
            raise
        _check_finite_gpu(xp, out, _not_invertible, "matrix_inverse", x.shape)
        return out
    return kernel


def _inv_vjp(g, x, out, adjoint=False):
    # out = op(A)^-1: d op(A) = -out^H g out^H; for adjoint=True take the adjoint of that.
    if adjoint:
        return -matmul(matmul(out, g, adjoint_b=True), out)
    return -matmul(matmul(out, g, adjoint_a=True), out, adjoint_b=True)


INV = registry.primitive(
    "MatrixInverse", _inv_kernel, dtypes=DECOMP_DTYPES,
    host_sync=HOST_SOLVER,
    shape_fn=lambda x, adjoint=False: _same_shape(x, _op="MatrixInverse"),
    vjp=_inv_vjp, saves=("out",),
    reference=lambda x, adjoint=False: np.linalg.inv(np.conj(np.swapaxes(x, -1, -2))
                                                     if adjoint else x),
    samples=lambda rng, dtype: _square_samples(rng, dtype) + [
        ((_well_conditioned(rng, (2, 3, 3), dtype),), {"adjoint": True})],
    sweep_dtypes=_SWEEP, family="linalg",
    bad_samples=lambda rng: _bad_square(rng) + [
        ((np.ones((3, 3)),), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}, cost=cubic_cost)


def inv(input, adjoint=False, name=None):  # noqa: A002
    """Computes the inverse of one or more square matrices.

    Args:
        input: A Tensor ``[..., M, M]`` of float32, float64, complex64 or complex128.
        adjoint: If True, inverts the adjoint (conjugate transpose) of each matrix.
        name: Unused.

    Returns:
        A Tensor ``[..., M, M]``.

    Raises:
        InvalidArgumentError: If a matrix is not square or is singular ("Input is not
            invertible.").

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.inv([[2.0, 0.0], [0.0, 4.0]]).numpy().tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    return execute(INV, (input,), {"adjoint": True} if adjoint else {})


# ----------------------------------------------------------------------------------------
# MatrixDeterminant, LogMatrixDeterminant
# ----------------------------------------------------------------------------------------

def _det_kernel(xp):
    def kernel(x):
        _check_matrix(x, "matrix_determinant")
        return xp.linalg.det(x).astype(x.dtype, copy=False)
    return kernel


def _batch_shape(x, op):
    if _check_aval(x, op):
        return AbstractValue(x.shape[:-2], x.dtype)
    return AbstractValue(None, x.dtype)


def _det_vjp(g, x, out):
    inv_h = execute(INV, (x,), {"adjoint": True})
    return _einsum("...,...ij->...ij", g * conj(out), inv_h)


DET = registry.primitive(
    "MatrixDeterminant", _det_kernel, dtypes=DECOMP_DTYPES,
    host_sync=HOST_SOLVER,
    shape_fn=lambda x: _batch_shape(x, "MatrixDeterminant"), vjp=_det_vjp, saves=(0, "out"),
    reference=np.linalg.det, samples=_square_samples, sweep_dtypes=_SWEEP, family="linalg",
    bad_samples=_bad_square, tolerance={"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4)},
    cost=cubic_cost)


def _slogdet_kernel(xp):
    def kernel(x):
        _check_matrix(x, "log_matrix_determinant")
        sign, logdet = xp.linalg.slogdet(x)
        return sign.astype(x.dtype, copy=False), logdet.astype(x.dtype, copy=False)
    return kernel


def _slogdet_vjp(g, x, out):
    g_log = g[1]
    if g_log.dtype.is_complex:
        g_log = (g_log + conj(g_log)) * 0.5  # log|det| is real: only the real part counts
    return _einsum("...,...ij->...ij", g_log, execute(INV, (x,), {"adjoint": True}))


def _slogdet_shape(x):
    aval = _batch_shape(x, "LogMatrixDeterminant")
    return aval, aval


def _np_slogdet(x):
    sign, logdet = np.linalg.slogdet(x)
    return sign.astype(x.dtype), logdet.astype(x.dtype)


SLOGDET = registry.primitive(
    "LogMatrixDeterminant", _slogdet_kernel, dtypes=DECOMP_DTYPES, num_outputs=2,
    host_sync=HOST_SOLVER,
    shape_fn=_slogdet_shape, vjp=_slogdet_vjp, saves=(0,), reference=_np_slogdet,
    samples=_square_samples, sweep_dtypes=_SWEEP, family="linalg", bad_samples=_bad_square,
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}, cost=cubic_cost)


def det(input, name=None):  # noqa: A002
    """Computes the determinant of one or more square matrices.

    Args:
        input: A Tensor ``[..., M, M]``.
        name: Unused.

    Returns:
        A Tensor ``[...]`` of the input's dtype.

    Raises:
        InvalidArgumentError: If a matrix is not square.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.det([[1.0, 2.0], [3.0, 4.0]]).numpy().round(5)
        np.float32(-2.0)
    """
    return execute(DET, (input,))


def slogdet(input, name=None):  # noqa: A002
    """Computes the sign and the log of the absolute value of determinants.

    More robust than ``log(det(x))`` for large matrices, whose determinant overflows. For a
    singular matrix the sign is 0 and the log is -inf. As in TF, only ``log_abs_determinant``
    has a gradient.

    Args:
        input: A Tensor ``[..., M, M]``.
        name: Unused.

    Returns:
        A namedtuple ``(sign, log_abs_determinant)`` of Tensors ``[...]`` of the input's dtype.

    Raises:
        InvalidArgumentError: If a matrix is not square.

    Example:
        >>> import eagerflow as ef
        >>> sign, logdet = ef.linalg.slogdet([[-2.0, 0.0], [0.0, 1.0]])
        >>> float(sign), round(float(logdet), 5)
        (-1.0, 0.69315)
    """
    sign, log_abs = execute(SLOGDET, (input,))
    return SlogdetResult(sign, log_abs)


# ----------------------------------------------------------------------------------------
# MatrixSolve, MatrixTriangularSolve
# ----------------------------------------------------------------------------------------

def _check_system(a, b, op):
    _check_matrix(a, op)
    if b.ndim < 2:
        raise errors.InvalidArgumentError(
            None, None, "%s: rhs must have rank >= 2 ([..., M, K]), got shape %s. For a "
            "vector right-hand side use rhs[..., None] (shape [..., M, 1])."
            % (op, _shape_text(b.shape)))
    if a.shape[-1] != b.shape[-2]:
        raise errors.InvalidArgumentError(
            None, None, "%s: matrix %s and rhs %s disagree: rhs must have %d rows."
            % (op, _shape_text(a.shape), _shape_text(b.shape), a.shape[-1]))


def _solve_kernel(xp):
    def kernel(a, b, adjoint=False):
        _check_system(a, b, "matrix_solve")
        a, b = _batch_broadcast_to(xp, a, b, "matrix_solve")
        if adjoint:
            a = _flip(a, True)
        if b.size == 0 or a.size == 0:
            return xp.zeros(b.shape, dtype=b.dtype)
        try:
            out = xp.linalg.solve(a, b)
        except Exception as exc:  # noqa: BLE001 - numpy/cupy LinAlgError
            if _is_linalg_error(exc):
                raise _not_invertible("matrix_solve", a.shape, "Input matrix") from None
            raise
        _check_finite_gpu(xp, out, _not_invertible, "matrix_solve", a.shape, "Input matrix")
        return out
    return kernel


def _system_shape(a, b, op):
    if a.shape is None or b.shape is None:
        return AbstractValue(None, a.dtype)
    _check_aval(a, op)
    if len(b.shape) < 2:
        raise errors.InvalidArgumentError(
            None, op, "%s: rhs must have rank >= 2, got shape %s." % (op, _shape_text(b.shape)))
    try:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise errors.InvalidArgumentError(
            None, op, "%s: batch dimensions of %s and %s do not broadcast." % (
                op, _shape_text(a.shape), _shape_text(b.shape))) from None
    return AbstractValue(batch + tuple(b.shape[-2:]), a.dtype)


def _solve_vjp(g, a, b, out, adjoint=False):
    gb = execute(SOLVE, (a, g), {} if adjoint else {"adjoint": True})
    if adjoint:
        ga = -matmul(out, gb, adjoint_b=True)
    else:
        ga = -matmul(gb, out, adjoint_b=True)
    return ga, gb


def _np_solve(a, b, adjoint=False):
    if adjoint:
        a = np.conj(np.swapaxes(a, -1, -2))
    return np.linalg.solve(a, b)


def _solve_samples(rng, dtype):
    np_dt = d.as_dtype(dtype).np_dtype
    out = []
    for sa, sb in (((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1)), ((2, 3, 3), (3, 4)),
                   ((0, 2, 2), (0, 2, 1)), ((2, 2), (2, 0))):
        a = _well_conditioned(rng, sa, dtype)
        b = np.asarray(_random(rng, sb, dtype)).astype(np_dt)
        out.append(((a, b), {}))
        out.append(((a, b), {"adjoint": True}))
    return out


def _bad_system(rng):
    E = errors.InvalidArgumentError
    x = rng.standard_normal
    return [((x((3, 3)), x((3,))), {}, E), ((x((3, 3)), x((2, 1))), {}, E),
            ((x((2, 3)), x((2, 1))), {}, E)]


SOLVE = registry.primitive(
    "MatrixSolve", _solve_kernel, dtypes=DECOMP_DTYPES,
    host_sync=HOST_SOLVER,
    shape_fn=lambda a, b, adjoint=False: _system_shape(a, b, "MatrixSolve"),
    vjp=_solve_vjp, saves=(0, "out"), reference=_np_solve, samples=_solve_samples,
    sweep_dtypes=_SWEEP, family="linalg",
    bad_samples=lambda rng: _bad_system(rng) + [
        ((np.ones((2, 2)), np.ones((2, 1))), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}, cost=cubic_cost)


def solve(matrix, rhs, adjoint=False, name=None):
    """Solves systems of linear equations ``matrix @ X = rhs``.

    Batch dimensions of ``matrix`` and ``rhs`` broadcast.

    Args:
        matrix: A Tensor ``[..., M, M]``.
        rhs: A Tensor ``[..., M, K]``.
        adjoint: If True, solves ``adjoint(matrix) @ X = rhs``.
        name: Unused.

    Returns:
        A Tensor ``[..., M, K]``.

    Raises:
        InvalidArgumentError: If a matrix is singular ("Input matrix is not invertible.") or
            the shapes disagree.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.solve([[2.0, 0.0], [0.0, 4.0]], [[2.0], [2.0]]).numpy().tolist()
        [[1.0], [0.5]]
    """
    return execute(SOLVE, (matrix, rhs), {"adjoint": True} if adjoint else {})


# From this size on, solve_triangular's O(n^2) beats an O(n^3) LU solve of the triangle.
_TRIANGULAR_MIN_N = 32


def _trisolve_kernel(xp):
    def kernel(a, b, lower=True, adjoint=False):
        _check_system(a, b, "matrix_triangular_solve")
        a, b = _batch_broadcast_to(xp, a, b, "matrix_triangular_solve")
        if b.size == 0 or a.size == 0:
            return xp.zeros(b.shape, dtype=b.dtype)
        if bool((xp.diagonal(a, axis1=-2, axis2=-1) == 0).any()):
            raise _not_invertible("matrix_triangular_solve", a.shape, "Input matrix")
        tri = xp.tril(a) if lower else xp.triu(a)
        n = a.shape[-1]
        batch = a.shape[:-2]
        if n >= _TRIANGULAR_MIN_N:
            # LAPACK's triangular solve, one matrix at a time: O(n^2 k) each.
            count = int(np.prod(batch, dtype=np.int64))
            solve_tri = xp.scipy_linalg.solve_triangular
            trans = "C" if adjoint else "N"
            if not batch:
                return solve_tri(tri, b, lower=lower, trans=trans, check_finite=False)
            flat_a = tri.reshape((count, n, n))
            flat_b = b.reshape((count,) + b.shape[-2:])
            out = xp.stack([solve_tri(flat_a[i], flat_b[i], lower=lower, trans=trans,
                                      check_finite=False) for i in range(count)])
            return out.reshape(b.shape)
        # Small systems: one batched LU solve of the triangle costs less than the per-call
        # overhead of solve_triangular (and needs no Python loop over the batch).
        if adjoint:
            tri = _flip(tri, True)
        return xp.linalg.solve(tri, b)
    return kernel


def _trisolve_vjp(g, a, b, out, lower=True, adjoint=False):
    gb = execute(TRIANGULAR_SOLVE, (a, g), {"lower": lower, "adjoint": not adjoint})
    if adjoint:
        ga = -matmul(out, gb, adjoint_b=True)
    else:
        ga = -matmul(gb, out, adjoint_b=True)
    return (_band(ga, -1, 0) if lower else _band(ga, 0, -1)), gb


def _np_trisolve(a, b, lower=True, adjoint=False):
    tri = np.tril(a) if lower else np.triu(a)
    if adjoint:
        tri = np.conj(np.swapaxes(tri, -1, -2))
    return np.linalg.solve(tri, b)


def _trisolve_samples(rng, dtype):
    out = []
    np_dt = d.as_dtype(dtype).np_dtype
    for sa, sb in (((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1)), ((6, 3, 3), (3, 2)),
                   ((0, 2, 2), (0, 2, 1)), ((2, 2), (2, 0))):
        a = _well_conditioned(rng, sa, dtype)
        b = np.asarray(_random(rng, sb, dtype)).astype(np_dt)
        for lower in (True, False):
            for adj in (False, True):
                out.append(((a, b), {"lower": lower, "adjoint": adj}))
    return out


TRIANGULAR_SOLVE = registry.primitive(
    "MatrixTriangularSolve", _trisolve_kernel, dtypes=DECOMP_DTYPES,
    host_sync=HOST_VALUE_CHECK,
    shape_fn=lambda a, b, lower=True, adjoint=False: _system_shape(
        a, b, "MatrixTriangularSolve"),
    vjp=_trisolve_vjp, saves=(0, "out"), reference=_np_trisolve, samples=_trisolve_samples,
    sweep_dtypes=_SWEEP, family="linalg",
    bad_samples=lambda rng: _bad_system(rng) + [
        ((np.zeros((2, 2)), np.ones((2, 1))), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}, cost=cubic_cost)


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """Solves ``matrix @ X = rhs`` for triangular ``matrix``.

    Only the lower (``lower=True``) or upper triangle of ``matrix`` is read. Batch
    dimensions broadcast. A zero on the diagonal raises (TF returns inf/nan there).

    Args:
        matrix: A Tensor ``[..., M, M]``.
        rhs: A Tensor ``[..., M, K]``.
        lower: Whether ``matrix`` is lower (True) or upper (False) triangular.
        adjoint: If True, solves ``adjoint(matrix) @ X = rhs``.
        name: Unused.

    Returns:
        A Tensor ``[..., M, K]``.

    Raises:
        InvalidArgumentError: If the shapes disagree or a diagonal entry is zero.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.triangular_solve([[2.0, 0.0], [1.0, 1.0]], [[2.0], [3.0]]).numpy().tolist()
        [[1.0], [2.0]]
    """
    return execute(TRIANGULAR_SOLVE, (matrix, rhs), {"lower": bool(lower),
                                                     "adjoint": bool(adjoint)})
