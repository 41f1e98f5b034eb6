"""Matrix decompositions and solvers: inv, det, slogdet, cholesky, solve, qr, svd, eigh.

Each primitive works on batches ``[..., M, N]`` (numpy's batched ``linalg`` on the CPU,
cupy's on the GPU). Gradients are written with the ops of :mod:`eagerflow.ops.linalg_ops`
and this module:

* ``inv``: ``dA = -A^-H G A^-H``; ``det``: ``dA = g conj(det) A^-H``;
  ``slogdet``: ``dA = g A^-H``.
* ``cholesky`` (``A = L L^H``): ``dA = sym(L^-H Phi(L^H G) L^-1)`` where ``Phi`` takes the
  lower triangle with a halved diagonal and ``sym(X) = (X + X^H) / 2``, as TF does.
* ``solve``/``triangular_solve`` (``X = A^-1 B``): ``dB = A^-H G``, ``dA = -dB X^H``.
* ``qr``, ``svd`` and ``eigh`` follow the standard results (TF's formulas); the vectors'
  gradients assume distinct singular values / eigenvalues and a loss that does not depend
  on each vector's sign (or complex phase), which is the only well-defined case.

Example:
    >>> import eagerflow as ef
    >>> ef.linalg.det([[2.0, 0.0], [0.0, 3.0]]).numpy()
    np.float32(6.0)
"""

from __future__ import annotations

import collections

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.arithmetic import ONES_LIKE_fn, conj
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import broadcast_shapes
from eagerflow.ops.linalg_ops import (
    EINSUM, MATRIX_BAND_PART, MATRIX_DIAG, MATRIX_DIAG_PART, MATRIX_SET_DIAG, _flip,
    _shape_text, adjoint, matmul,
)
from eagerflow.ops.registry import AbstractValue

__all__ = [
    "inv", "det", "slogdet", "logdet", "cholesky", "cholesky_solve", "solve",
    "triangular_solve", "lstsq", "qr", "svd", "eigh", "eigvalsh",
]

EXPORTS = {
    "": [],
    "linalg": list(__all__),
}

DECOMP_DTYPES = (d.float32, d.float64, d.complex64, d.complex128)
_SWEEP = (d.float32, d.float64, d.complex128)

SlogdetResult = collections.namedtuple("LogMatrixDeterminant", ["sign", "log_abs_determinant"])
QrResult = collections.namedtuple("Qr", ["q", "r"])


# ----------------------------------------------------------------------------------------
# Shared checks and small helpers
# ----------------------------------------------------------------------------------------

def _check_matrix(x, op, square=True):
    if x.ndim < 2:
        raise errors.InvalidArgumentError(
            None, None, "%s: input must have rank >= 2 (a matrix or a batch of matrices), got "
            "shape %s." % (op, _shape_text(x.shape)))
    if square and x.shape[-1] != x.shape[-2]:
        raise errors.InvalidArgumentError(
            None, None, "%s: input must be a square matrix (or batch of them), got shape %s."
            % (op, _shape_text(x.shape)))


def _check_aval(x, op, square=True):
    if x.shape is None:
        return False
    if len(x.shape) < 2:
        raise errors.InvalidArgumentError(
            None, op, "%s: input must have rank >= 2, got shape %s." % (op, _shape_text(x.shape)))
    m, n = x.shape[-2:]
    if square and m is not None and n is not None and m != n:
        raise errors.InvalidArgumentError(
            None, op, "%s: input must be a square matrix, got shape %s." % (
                op, _shape_text(x.shape)))
    return True


def _is_linalg_error(exc):
    return type(exc).__name__ == "LinAlgError"


def _not_invertible(op, shape, what="Input"):
    return errors.InvalidArgumentError(
        None, None, "%s is not invertible. %s: the matrix of shape %s (or one in the batch) is "
        "singular; check the input, or use tf.linalg.lstsq / tf.linalg.pinv for singular "
        "systems." % (what, op, _shape_text(shape)))


def _check_finite_gpu(xp, out, make_error, *args):
    """cupy's solvers do not raise on singular input; check the result instead."""
    if xp.is_gpu and out.size and not bool(xp.isfinite(out).all()):
        raise make_error(*args)


def _real_dtype(dtype):
    return d.float32 if dtype in (d.complex64, d.float32) else (
        d.float64 if dtype in (d.complex128, d.float64) else dtype)


def _real_np(np_dtype):
    return np.empty(0, np_dtype).real.dtype


def _einsum(equation, *args):
    return execute(EINSUM, args, {"equation": equation})


def _diag(v):
    return execute(MATRIX_DIAG, (v,))


def _diag_part(x):
    return execute(MATRIX_DIAG_PART, (x,))


def _band(x, lower, upper):
    return execute(MATRIX_BAND_PART, (x,), {"num_lower": lower, "num_upper": upper})


def _as_dtype_of(x, like):
    """Casts a real tensor to ``like``'s (complex) dtype when they differ."""
    if x.dtype is like.dtype:
        return x
    from eagerflow.ops.cast import cast

    return cast(x, like.dtype)


def _offdiag_reciprocal(v):
    """``F[..., i, j] = 1 / (v[j] - v[i])`` off the diagonal and 0 on it."""
    ones = ONES_LIKE_fn(v)
    rows = _einsum("...j,...i->...ij", v, ones)
    eye = _diag(ones)
    return 1.0 / (rows - adjoint(rows) + eye) - eye


def _batch_broadcast_to(xp, a, b, op):
    """Broadcasts the batch axes of a [..., M, M] and b [..., M, K] against each other."""
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, "%s: the batch dimensions of matrix %s and rhs %s do not broadcast."
            % (op, _shape_text(a.shape), _shape_text(b.shape))) from None
    if a.shape[:-2] != batch:
        a = xp.broadcast_to(a, batch + a.shape[-2:])
    if b.shape[:-2] != batch:
        b = xp.broadcast_to(b, batch + b.shape[-2:])
    return a, b


def _square_samples(rng, dtype, shapes=((3, 3), (2, 4, 4), (1, 1), (0, 2, 2), (0, 0))):
    out = []
    for shape in shapes:
        out.append(((_well_conditioned(rng, shape, dtype),), {}))
    return out


def _random(rng, shape, dtype):
    x = rng.uniform(-1, 1, size=shape)
    if d.as_dtype(dtype).is_complex:
        x = x + 1j * rng.uniform(-1, 1, size=shape)
    return x


def _well_conditioned(rng, shape, dtype):
    n = shape[-1] if shape else 0
    x = _random(rng, shape, dtype) + (n + 1) * np.eye(n)
    return np.asarray(x).astype(d.as_dtype(dtype).np_dtype)


def _spd(rng, shape, dtype):
    n = shape[-1]
    x = _random(rng, shape, dtype)
    a = np.matmul(x, np.conj(np.swapaxes(x, -1, -2))) + n * np.eye(n)
    return np.asarray(a).astype(d.as_dtype(dtype).np_dtype)


def _hermitian(rng, shape, dtype):
    x = _random(rng, shape, dtype)
    a = x + np.conj(np.swapaxes(x, -1, -2))
    return np.asarray(a).astype(d.as_dtype(dtype).np_dtype)


def _bad_square(rng):
    E = errors.InvalidArgumentError
    return [((rng.standard_normal((3,)),), {}, E), ((rng.standard_normal((2, 3)),), {}, E)]


def _same_shape(x, **attrs):
    if _check_aval(x, attrs.pop("_op", "linalg")):
        return AbstractValue(x.shape, x.dtype)
    return AbstractValue(None, x.dtype)


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
    shape_fn=lambda x, adjoint=False: _same_shape(x, _op="MatrixInverse"),
    vjp=_inv_vjp, saves=("out",),
    reference=lambda x, adjoint=False: np.linalg.inv(np.conj(np.swapaxes(x, -1, -2))
                                                     if adjoint else x),
    samples=lambda rng, dtype: _square_samples(rng, dtype) + [
        ((_well_conditioned(rng, (2, 3, 3), dtype),), {"adjoint": True})],
    sweep_dtypes=_SWEEP, family="linalg",
    bad_samples=lambda rng: _bad_square(rng) + [
        ((np.ones((3, 3)),), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)})


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
    shape_fn=lambda x: _batch_shape(x, "MatrixDeterminant"), vjp=_det_vjp, saves=(0, "out"),
    reference=np.linalg.det, samples=_square_samples, sweep_dtypes=_SWEEP, family="linalg",
    bad_samples=_bad_square, tolerance={"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4)})


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
    shape_fn=_slogdet_shape, vjp=_slogdet_vjp, saves=(0,), reference=_np_slogdet,
    samples=_square_samples, sweep_dtypes=_SWEEP, family="linalg", bad_samples=_bad_square,
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)})


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


def logdet(matrix, name=None):
    """The log-determinant of Hermitian positive definite matrices, via Cholesky.

    Args:
        matrix: A Tensor ``[..., M, M]`` (Hermitian positive definite).
        name: Unused.

    Returns:
        A real Tensor ``[...]``: ``2 * sum(log(diag(cholesky(matrix))))``.

    Raises:
        InvalidArgumentError: If a matrix is not positive definite.

    Example:
        >>> import eagerflow as ef
        >>> round(float(ef.linalg.logdet([[4.0, 0.0], [0.0, 1.0]])), 5)
        1.38629
    """
    from eagerflow.ops import math_ops
    from eagerflow.ops.cast import cast

    diagonal = _diag_part(cholesky(matrix))
    if diagonal.dtype.is_complex:
        diagonal = cast(diagonal, _real_dtype(diagonal.dtype))
    return 2.0 * _einsum("...i->...", math_ops.log(diagonal))


# ----------------------------------------------------------------------------------------
# Cholesky
# ----------------------------------------------------------------------------------------

def _not_pd(shape):
    return errors.InvalidArgumentError(
        None, None, "Cholesky decomposition was not successful. The input might not be valid. "
        "The matrix of shape %s (or one in the batch) is not symmetric/Hermitian positive "
        "definite; only its lower triangle is read. Add a small multiple of the identity for "
        "near-singular matrices." % _shape_text(shape))


def _cholesky_kernel(xp):
    def kernel(x):
        _check_matrix(x, "cholesky")
        try:
            out = xp.linalg.cholesky(x)
        except Exception as exc:  # noqa: BLE001 - numpy/cupy LinAlgError
            if _is_linalg_error(exc):
                raise _not_pd(x.shape) from None
            raise
        _check_finite_gpu(xp, out, _not_pd, x.shape)
        return out
    return kernel


def _cholesky_vjp(g, x, l_out):
    # Phi(L^H G): lower triangle with the diagonal halved.
    middle = matmul(l_out, g, adjoint_a=True)
    middle = _band(middle, -1, 0) - 0.5 * _diag(_diag_part(middle))
    # L^-H middle L^-1, with two triangular solves instead of an explicit inverse.
    y = triangular_solve(l_out, middle, lower=True, adjoint=True)
    z = adjoint(triangular_solve(l_out, adjoint(y), lower=True, adjoint=True))
    return 0.5 * (z + adjoint(z))


def _np_cholesky(x):
    # The reference symmetrizes from the lower triangle, as the op reads only that.
    low = np.tril(x)
    full = low + np.conj(np.swapaxes(np.tril(x, -1), -1, -2))
    return np.linalg.cholesky(full)


def _cholesky_samples(rng, dtype):
    out = [((_spd(rng, s, dtype),), {}) for s in ((3, 3), (2, 4, 4), (1, 1))]
    out.append(((np.zeros((0, 2, 2), d.as_dtype(dtype).np_dtype),), {}))
    return out


def _cholesky_grad_samples(rng):
    # The gradient is symmetrized as in TF (it assumes symmetric perturbations) while the
    # kernel reads only the lower triangle, so a random-direction check agrees only on 1x1
    # matrices; tests/ops/test_linalg_ops.py checks larger ones along symmetric directions.
    return [((rng.uniform(1.0, 2.0, (1, 1)),), {}), ((rng.uniform(1.0, 2.0, (3, 1, 1)),), {})]


CHOLESKY = registry.primitive(
    "Cholesky", _cholesky_kernel, dtypes=DECOMP_DTYPES,
    shape_fn=lambda x: _same_shape(x, _op="Cholesky"), vjp=_cholesky_vjp, saves=("out",),
    reference=_np_cholesky, samples=_cholesky_samples, sweep_dtypes=_SWEEP, family="linalg",
    grad_samples=_cholesky_grad_samples,
    bad_samples=lambda rng: _bad_square(rng) + [
        ((-np.eye(3),), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)})


def cholesky(input, name=None):  # noqa: A002
    """Computes the Cholesky factor ``L`` (lower triangular) of ``A = L L^H``.

    Only the lower triangle of each input matrix is read.

    Args:
        input: A Tensor ``[..., M, M]`` of Hermitian positive definite matrices.
        name: Unused.

    Returns:
        A Tensor ``[..., M, M]``, lower triangular.

    Raises:
        InvalidArgumentError: If a matrix is not positive definite ("Cholesky decomposition
            was not successful. The input might not be valid.").

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.cholesky([[4.0, 2.0], [2.0, 2.0]]).numpy().tolist()
        [[2.0, 0.0], [1.0, 1.0]]
    """
    return execute(CHOLESKY, (input,))


def cholesky_solve(chol, rhs, name=None):
    """Solves ``A X = rhs`` given the Cholesky factor ``chol`` of ``A``.

    Args:
        chol: A Tensor ``[..., M, M]``, lower triangular (from :func:`cholesky`).
        rhs: A Tensor ``[..., M, K]``.
        name: Unused.

    Returns:
        A Tensor ``[..., M, K]``.

    Example:
        >>> import eagerflow as ef
        >>> chol = ef.linalg.cholesky([[4.0, 0.0], [0.0, 1.0]])
        >>> ef.linalg.cholesky_solve(chol, [[8.0], [1.0]]).numpy().tolist()
        [[2.0], [1.0]]
    """
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


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
    shape_fn=lambda a, b, adjoint=False: _system_shape(a, b, "MatrixSolve"),
    vjp=_solve_vjp, saves=(0, "out"), reference=_np_solve, samples=_solve_samples,
    sweep_dtypes=_SWEEP, family="linalg",
    bad_samples=lambda rng: _bad_system(rng) + [
        ((np.ones((2, 2)), np.ones((2, 1))), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)})


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
    shape_fn=lambda a, b, lower=True, adjoint=False: _system_shape(
        a, b, "MatrixTriangularSolve"),
    vjp=_trisolve_vjp, saves=(0, "out"), reference=_np_trisolve, samples=_trisolve_samples,
    sweep_dtypes=_SWEEP, family="linalg",
    bad_samples=lambda rng: _bad_system(rng) + [
        ((np.zeros((2, 2)), np.ones((2, 1))), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)})


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


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """Solves linear least-squares problems ``min ||matrix @ X - rhs||^2 + l2 ||X||^2``.

    With ``fast=True`` (default) it solves the regularized normal equations by Cholesky:
    ``X = (A^H A + l2 I)^-1 A^H B`` when M >= N, else ``A^H (A A^H + l2 I)^-1 B`` (the
    minimum-norm solution). ``fast=False`` uses a QR factorization, which is more accurate for
    ill-conditioned matrices but requires ``l2_regularizer == 0`` (as in TF).

    Args:
        matrix: A Tensor ``[..., M, N]`` of full rank.
        rhs: A Tensor ``[..., M, K]``.
        l2_regularizer: A non-negative float.
        fast: Normal equations (True) or QR (False).
        name: Unused.

    Returns:
        A Tensor ``[..., N, K]``.

    Raises:
        InvalidArgumentError: If the matrix is rank-deficient (for ``fast=True``) or shapes
            disagree.
        UnimplementedError: For ``fast=False`` with a non-zero regularizer.

    Example:
        >>> import eagerflow as ef
        >>> x = ef.linalg.lstsq([[1.0], [1.0]], [[1.0], [3.0]])
        >>> round(float(x[0, 0]), 5)
        2.0
    """
    from eagerflow.tensor import convert_to_tensor

    matrix = convert_to_tensor(matrix)
    rhs = convert_to_tensor(rhs, dtype=matrix.dtype)
    shape = tuple(matrix.shape)
    if len(shape) < 2 or shape[-1] is None or shape[-2] is None:
        raise errors.InvalidArgumentError(
            None, "lstsq", "lstsq: matrix must have rank >= 2 with known matrix dimensions, got "
            "shape %s." % _shape_text(shape))
    m, n = shape[-2:]
    l2 = float(l2_regularizer)
    if not fast:
        if l2 != 0.0:
            raise errors.UnimplementedError(
                None, "lstsq", "lstsq: fast=False with l2_regularizer != 0 is not supported "
                "(as in TF). Use fast=True.")
        if m >= n:
            q, r = qr(matrix)
            return triangular_solve(r, matmul(q, rhs, adjoint_a=True), lower=False)
        q, r = qr(adjoint(matrix))
        return matmul(q, triangular_solve(r, rhs, lower=False, adjoint=True))
    if m >= n:
        gram = matmul(matrix, matrix, adjoint_a=True)
    else:
        gram = matmul(matrix, matrix, adjoint_b=True)
    if l2 != 0.0:
        gram = gram + l2 * _diag(ONES_LIKE_fn(_diag_part(gram)))
    chol = cholesky(gram)
    if m >= n:
        return cholesky_solve(chol, matmul(matrix, rhs, adjoint_a=True))
    return matmul(matrix, cholesky_solve(chol, rhs), adjoint_a=True)


# ----------------------------------------------------------------------------------------
# Qr
# ----------------------------------------------------------------------------------------

def _qr_kernel(xp):
    def kernel(x, full_matrices=False):
        _check_matrix(x, "qr", square=False)
        q, r = xp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
        return q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)
    return kernel


def _qr_shape(x, full_matrices=False):
    if not _check_aval(x, "Qr", square=False):
        return AbstractValue(None, x.dtype), AbstractValue(None, x.dtype)
    m, n = x.shape[-2:]
    k = None if m is None or n is None else min(m, n)
    batch = tuple(x.shape[:-2])
    if full_matrices:
        return AbstractValue(batch + (m, m), x.dtype), AbstractValue(batch + (m, n), x.dtype)
    return AbstractValue(batch + (m, k), x.dtype), AbstractValue(batch + (k, n), x.dtype)


def _right_solve_adjoint(x, r):
    """``x @ R^-H`` for upper triangular R."""
    return adjoint(triangular_solve(r, adjoint(x), lower=False, adjoint=False))


def _qr_grad_tall(q, r, gq, gr):
    """Gradient for A = QR with Q [m, n], R [n, n] upper triangular, m >= n."""
    m_ = matmul(r, gr, adjoint_b=True) - matmul(gq, q, adjoint_a=True)
    low = _band(m_, -1, 0)
    strict = low - _diag(_diag_part(m_))
    copyltu = low + adjoint(strict)
    if m_.dtype.is_complex:
        # R's diagonal is real (LAPACK), so only the real part of M's diagonal is defined.
        diag_m = _diag_part(m_)
        copyltu = copyltu - _diag(diag_m - (diag_m + conj(diag_m)) * 0.5)
    return _right_solve_adjoint(gq + matmul(q, copyltu), r)


def _qr_vjp(g, x, out, full_matrices=False):
    q, r = out
    gq, gr = g
    m, n = tuple(q.shape)[-2], tuple(r.shape)[-1]
    if m >= n:
        if full_matrices and m > n:
            raise errors.UnimplementedError(
                None, "Qr", "The gradient of qr is not defined for full_matrices=True with more "
                "rows than columns (input shape [..., %d, %d]): the extra columns of q are not "
                "unique. Use full_matrices=False." % (m, n))
        return _qr_grad_tall(q, r, gq, gr)
    # Wide: A = [X | Y] with X [m, m]; Q R_X = X and R_Y = Q^H Y, so Y = Q R_Y.
    from eagerflow.ops import array_ops, slicing

    r_y = slicing.getitem(r, (Ellipsis, slice(None), slice(m, None)))
    y_part = matmul(q, r_y)
    r_x = slicing.getitem(r, (Ellipsis, slice(None), slice(None, m)))
    gr_x = slicing.getitem(gr, (Ellipsis, slice(None), slice(None, m)))
    gr_y = slicing.getitem(gr, (Ellipsis, slice(None), slice(m, None)))
    g_y = matmul(q, gr_y)
    g_x = _qr_grad_tall(q, r_x, gq + matmul(y_part, gr_y, adjoint_b=True), gr_x)
    return array_ops.concat([g_x, g_y], axis=-1)


def _np_qr(x, full_matrices=False):
    return np.linalg.qr(x, mode="complete" if full_matrices else "reduced")


def _qr_samples(rng, dtype):
    np_dt = d.as_dtype(dtype).np_dtype
    out = []
    for shape in ((3, 3), (4, 2), (2, 4), (2, 3, 2), (0, 3, 2)):
        x = np.asarray(_random(rng, shape, dtype)).astype(np_dt)
        out.append(((x,), {}))
        out.append(((x,), {"full_matrices": True}))
    return out


QR = registry.primitive(
    "Qr", _qr_kernel, dtypes=DECOMP_DTYPES, num_outputs=2, shape_fn=_qr_shape,
    vjp=_qr_vjp, saves=("out",), reference=_np_qr, samples=_qr_samples,
    sweep_dtypes=_SWEEP, family="linalg",
    grad_samples=lambda rng: [((rng.uniform(-1, 1, (4, 3)),), {}),
                              ((rng.uniform(-1, 1, (2, 3, 3)),), {})],
    bad_samples=lambda rng: [((rng.standard_normal((3,)),), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)})


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """Computes the QR decomposition ``input = q @ r`` of one or more matrices.

    Args:
        input: A Tensor ``[..., M, N]``.
        full_matrices: If True, ``q`` is ``[..., M, M]`` and ``r`` ``[..., M, N]``; else
            (default) ``q`` is ``[..., M, P]`` and ``r`` ``[..., P, N]`` with
            ``P = min(M, N)``.
        name: Unused.

    Returns:
        A namedtuple ``(q, r)``: ``q`` with orthonormal columns, ``r`` upper triangular.

    Raises:
        InvalidArgumentError: If ``input`` has rank < 2.

    Example:
        >>> import eagerflow as ef
        >>> q, r = ef.linalg.qr([[3.0, 1.0], [4.0, 2.0]])
        >>> (q @ r).numpy().round(5).tolist()
        [[3.0, 1.0], [4.0, 2.0]]
    """
    q, r = execute(QR, (input,), {"full_matrices": True} if full_matrices else {})
    return QrResult(q, r)


# ----------------------------------------------------------------------------------------
# Svd
# ----------------------------------------------------------------------------------------

def _only(g):
    """The cotangent of a one-output call (the tape may pass it bare or as a 1-tuple)."""
    return g[0] if isinstance(g, (tuple, list)) else g


def _svd_kernel(xp):
    def kernel(x, compute_uv=True, full_matrices=False):
        _check_matrix(x, "svd", square=False)
        real = _real_np(x.dtype)
        if not compute_uv:
            return (xp.linalg.svd(x, compute_uv=False).astype(real, copy=False),)
        u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices)
        return (s.astype(real, copy=False), u.astype(x.dtype, copy=False),
                _flip(vh, True).astype(x.dtype, copy=False))
    return kernel


def _svd_shape(x, compute_uv=True, full_matrices=False):
    real = _real_dtype(x.dtype)
    if not _check_aval(x, "Svd", square=False):
        none = AbstractValue(None, x.dtype)
        return (AbstractValue(None, real),) + ((none, none) if compute_uv else ())
    m, n = x.shape[-2:]
    k = None if m is None or n is None else min(m, n)
    batch = tuple(x.shape[:-2])
    s = AbstractValue(batch + (k,), real)
    if not compute_uv:
        return (s,)
    cu, cv = (m, n) if full_matrices else (k, k)
    return s, AbstractValue(batch + (m, cu), x.dtype), AbstractValue(batch + (n, cv), x.dtype)


def _scale_cols(x, v):
    """``x @ diag(v)``: scales column j of each matrix by v[..., j]."""
    return _einsum("...ij,...j->...ij", x, _as_dtype_of(v, x))


def _scale_rows(v, x):
    """``diag(v) @ x``."""
    return _einsum("...i,...ij->...ij", _as_dtype_of(v, x), x)


def _svd_grad(s, u, v, gs, gu, gv, tall):
    """Gradient for A = U diag(s) V^H with U [m, k], V [n, k], k = n <= m (``tall``: m > n)."""
    f = _as_dtype_of(_offdiag_reciprocal(s * s), u)
    u_gu = matmul(u, gu, adjoint_a=True)
    v_gv = matmul(v, gv, adjoint_a=True)
    j = f * u_gu
    k = f * v_gv
    inner = _diag(_as_dtype_of(gs, u)) + _scale_cols(j + adjoint(j), s) + \
        _scale_rows(s, k + adjoint(k))
    if u.dtype.is_complex:
        # The phase gauge: only Im(diag(V^H gV)) reaches A, through S^-1.
        diag_vgv = _diag_part(v_gv)
        imag_part = (diag_vgv - conj(diag_vgv)) * 0.5
        inner = inner - _diag(imag_part / _as_dtype_of(s, u))
    grad = matmul(matmul(u, inner), v, adjoint_b=True)
    if tall:
        proj = gu - matmul(u, u_gu)
        grad = grad + matmul(_scale_cols(proj, 1.0 / s), v, adjoint_b=True)
    return grad


def _svd_vjp(g, x, out, compute_uv=True, full_matrices=False):
    m, n = tuple(x.shape)[-2:]
    if not compute_uv:
        s, u, v = execute(SVD, (x,), {"compute_uv": True, "full_matrices": False})
        return matmul(_scale_cols(u, _only(g)), v, adjoint_b=True)
    if full_matrices and m != n:
        raise errors.UnimplementedError(
            None, "Svd", "The gradient of svd with full_matrices=True is only defined for "
            "square matrices (got shape %s): the extra singular vectors are not unique. Use "
            "full_matrices=False." % _shape_text(x.shape))
    s, u, v = out
    gs, gu, gv = g
    if m >= n:
        return _svd_grad(s, u, v, gs, gu, gv, m > n)
    # A^H = V diag(s) U^H: differentiate that and take the adjoint.
    return adjoint(_svd_grad(s, v, u, gs, gv, gu, True))


def _np_svd(x, compute_uv=True, full_matrices=False):
    if not compute_uv:
        return (np.linalg.svd(x, compute_uv=False),)
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return s, u, np.conj(np.swapaxes(vh, -1, -2))


def _svd_samples(rng, dtype):
    np_dt = d.as_dtype(dtype).np_dtype
    out = []
    for shape in ((3, 3), (4, 2), (2, 4), (2, 3, 2), (0, 3, 2)):
        x = np.asarray(_random(rng, shape, dtype)).astype(np_dt)
        out.append(((x,), {"compute_uv": False}))
        out.append(((x,), {}))
        out.append(((x,), {"full_matrices": True}))
    return out


SVD = registry.primitive(
    "Svd", _svd_kernel, dtypes=DECOMP_DTYPES,
    num_outputs=lambda attrs: 3 if attrs.get("compute_uv", True) else 1,
    shape_fn=_svd_shape, vjp=_svd_vjp, saves=(0, "out"), reference=_np_svd,
    samples=_svd_samples, sweep_dtypes=_SWEEP, family="linalg",
    grad_samples=lambda rng: [((rng.uniform(-1, 1, (4, 3)),), {}),
                              ((rng.uniform(-1, 1, (3, 4)),), {}),
                              ((rng.uniform(-1, 1, (2, 3, 3)),), {"compute_uv": False})],
    bad_samples=lambda rng: [((rng.standard_normal((3,)),), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)})


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """Computes the singular value decomposition ``tensor = u @ diag(s) @ adjoint(v)``.

    As in TF, ``v`` is returned untransposed (numpy returns its adjoint) and the outputs
    come in the order ``(s, u, v)``; singular values are in descending order.

    Args:
        tensor: A Tensor ``[..., M, N]``.
        full_matrices: If True, ``u`` is ``[..., M, M]`` and ``v`` ``[..., N, N]``; else
            ``[..., M, P]`` and ``[..., N, P]`` with ``P = min(M, N)``.
        compute_uv: If False, only ``s`` is computed and returned.
        name: Unused.

    Returns:
        ``s`` (real, ``[..., P]``), or ``(s, u, v)`` when ``compute_uv``.

    Raises:
        InvalidArgumentError: If ``tensor`` has rank < 2.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.svd([[3.0, 0.0], [0.0, -4.0]], compute_uv=False).numpy().tolist()
        [4.0, 3.0]
    """
    attrs = {}
    if not compute_uv:
        attrs["compute_uv"] = False
    if full_matrices:
        attrs["full_matrices"] = True
    out = execute(SVD, (tensor,), attrs)
    return out if compute_uv else out[0]


# ----------------------------------------------------------------------------------------
# SelfAdjointEigV2
# ----------------------------------------------------------------------------------------

def _eigh_kernel(xp):
    def kernel(x, compute_v=True):
        _check_matrix(x, "self_adjoint_eig")
        real = _real_np(x.dtype)
        if not compute_v:
            return (xp.linalg.eigvalsh(x).astype(real, copy=False),)
        e, v = xp.linalg.eigh(x)
        return e.astype(real, copy=False), v.astype(x.dtype, copy=False)
    return kernel


def _eigh_shape(x, compute_v=True):
    real = _real_dtype(x.dtype)
    if not _check_aval(x, "SelfAdjointEigV2"):
        e = AbstractValue(None, real)
        return (e, AbstractValue(None, x.dtype)) if compute_v else (e,)
    e = AbstractValue(tuple(x.shape[:-1]), real)
    return (e, AbstractValue(x.shape, x.dtype)) if compute_v else (e,)


def _eigh_vjp(g, x, out, compute_v=True):
    if compute_v:
        e, v = out
        ge, gv = g
        f = _as_dtype_of(_offdiag_reciprocal(e), v)
        inner = _diag(_as_dtype_of(ge, v)) + f * matmul(v, gv, adjoint_a=True)
    else:
        e, v = execute(EIGH, (x,), {"compute_v": True})
        inner = _diag(_as_dtype_of(_only(g), v))
    grad = matmul(matmul(v, inner), v, adjoint_b=True)
    # The op reads only the lower triangle (and the real part of the diagonal).
    grad = _band(grad + adjoint(grad), -1, 0)
    return execute(MATRIX_SET_DIAG, (grad, 0.5 * _diag_part(grad)))


def _np_eigh(x, compute_v=True):
    if not compute_v:
        return (np.linalg.eigvalsh(x),)
    return tuple(np.linalg.eigh(x))


def _eigh_samples(rng, dtype):
    out = []
    for shape in ((3, 3), (2, 4, 4), (1, 1), (0, 2, 2)):
        x = _hermitian(rng, shape, dtype)
        out.append(((x,), {}))
        out.append(((x,), {"compute_v": False}))
    return out


EIGH = registry.primitive(
    "SelfAdjointEigV2", _eigh_kernel, dtypes=DECOMP_DTYPES,
    num_outputs=lambda attrs: 2 if attrs.get("compute_v", True) else 1,
    shape_fn=_eigh_shape, vjp=_eigh_vjp, saves=(0, "out"), reference=_np_eigh,
    samples=_eigh_samples, sweep_dtypes=_SWEEP, family="linalg",
    grad_samples=lambda rng: [((rng.uniform(-1, 1, (3, 3)) + 3 * np.diag([0.0, 1.0, 2.0]),),
                               {}),
                              ((rng.uniform(-1, 1, (2, 3, 3)),), {"compute_v": False})],
    bad_samples=_bad_square,
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)})


def eigh(tensor, name=None):
    """Eigen-decomposition of Hermitian (self-adjoint) matrices.

    Only the lower triangle of each matrix is read. Eigenvalues come in ascending order;
    each eigenvector (a column of ``v``) is determined only up to sign (or complex phase).

    Args:
        tensor: A Tensor ``[..., N, N]``.
        name: Unused.

    Returns:
        A tuple ``(e, v)``: real eigenvalues ``[..., N]`` and eigenvectors ``[..., N, N]``.

    Raises:
        InvalidArgumentError: If a matrix is not square.

    Example:
        >>> import eagerflow as ef
        >>> e, v = ef.linalg.eigh([[2.0, 0.0], [0.0, 1.0]])
        >>> e.numpy().tolist()
        [1.0, 2.0]
    """
    return execute(EIGH, (tensor,))


def eigvalsh(tensor, name=None):
    """The eigenvalues (ascending, real) of Hermitian matrices; see :func:`eigh`.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.eigvalsh([[2.0, 1.0], [1.0, 2.0]]).numpy().round(5).tolist()
        [1.0, 3.0]
    """
    return execute(EIGH, (tensor,), {"compute_v": False})[0]
