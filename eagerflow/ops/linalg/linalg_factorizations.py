"""Factorizations and what is built on them: cholesky, cholesky_solve, logdet, lstsq, qr, svd,
pinv, eigh and eigvalsh.

* ``cholesky`` (``A = L L^H``): ``dA = sym(L^-H Phi(L^H G) L^-1)`` where ``Phi`` takes the
  lower triangle with a halved diagonal and ``sym(X) = (X + X^H) / 2``, as TF does.
* ``qr``, ``svd`` and ``eigh`` follow the standard results (TF's formulas); the vectors'
  gradients assume distinct singular values / eigenvalues and a loss that does not depend
  on each vector's sign (or complex phase), which is the only well-defined case.
* ``cholesky_solve``, ``logdet``, ``lstsq`` and ``pinv`` are composites of these and of the
  solvers.
"""

from __future__ import annotations

import collections

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import ONES_LIKE_fn, conj
from eagerflow.ops.linalg import (
    DECOMP_DTYPES, _SWEEP, _as_dtype_of, _bad_square, _band, _check_aval, _check_finite_gpu,
    _check_matrix, _diag, _diag_part, _einsum, _hermitian, _is_linalg_error, _offdiag_reciprocal,
    _random, _real_dtype, _real_np, _same_shape, _spd,
)
from eagerflow.ops.linalg.diag_ops import MATRIX_SET_DIAG
from eagerflow.ops.dispatch import execute
from eagerflow.ops.linalg.linalg_solvers import triangular_solve
from eagerflow.ops.linalg.matmul_ops import _flip, _shape_text, adjoint, matmul
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import cubic_cost
from eagerflow.ops.family import HOST_SOLVER

__all__ = ["logdet", "cholesky", "cholesky_solve", "lstsq", "qr", "svd", "pinv", "eigh",
           "eigvalsh"]

EXPORTS = {
    "linalg": ["logdet", "cholesky", "cholesky_solve", "lstsq", "qr", "svd", "pinv", "eigh",
               "eigvalsh"],
}


QrResult = collections.namedtuple("Qr", ["q", "r"])


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
    from eagerflow.ops.math import unary_math
    from eagerflow.ops.math.cast import cast

    diagonal = _diag_part(cholesky(matrix))
    if diagonal.dtype.is_complex:
        diagonal = cast(diagonal, _real_dtype(diagonal.dtype))
    return 2.0 * _einsum("...i->...", unary_math.log(diagonal))


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
    host_sync=HOST_SOLVER,
    shape_fn=lambda x: _same_shape(x, _op="Cholesky"), vjp=_cholesky_vjp, saves=("out",),
    reference=_np_cholesky, samples=_cholesky_samples, sweep_dtypes=_SWEEP, family="linalg",
    grad_samples=_cholesky_grad_samples,
    bad_samples=lambda rng: _bad_square(rng) + [
        ((-np.eye(3),), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}, cost=cubic_cost)


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
    from eagerflow.ops.array import join_ops
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
    from eagerflow.ops.array import slicing

    r_y = slicing.getitem(r, (Ellipsis, slice(None), slice(m, None)))
    y_part = matmul(q, r_y)
    r_x = slicing.getitem(r, (Ellipsis, slice(None), slice(None, m)))
    gr_x = slicing.getitem(gr, (Ellipsis, slice(None), slice(None, m)))
    gr_y = slicing.getitem(gr, (Ellipsis, slice(None), slice(m, None)))
    g_y = matmul(q, gr_y)
    g_x = _qr_grad_tall(q, r_x, gq + matmul(y_part, gr_y, adjoint_b=True), gr_x)
    return join_ops.concat([g_x, g_y], axis=-1)


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
    host_sync=HOST_SOLVER,
    vjp=_qr_vjp, saves=("out",), reference=_np_qr, samples=_qr_samples,
    sweep_dtypes=_SWEEP, family="linalg",
    grad_samples=lambda rng: [((rng.uniform(-1, 1, (4, 3)),), {}),
                              ((rng.uniform(-1, 1, (2, 3, 3)),), {})],
    bad_samples=lambda rng: [((rng.standard_normal((3,)),), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}, cost=cubic_cost)


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
    host_sync=HOST_SOLVER,
    num_outputs=lambda attrs: 3 if attrs.get("compute_uv", True) else 1,
    shape_fn=_svd_shape, vjp=_svd_vjp, saves=(0, "out"), reference=_np_svd,
    samples=_svd_samples, sweep_dtypes=_SWEEP, family="linalg",
    grad_samples=lambda rng: [((rng.uniform(-1, 1, (4, 3)),), {}),
                              ((rng.uniform(-1, 1, (3, 4)),), {}),
                              ((rng.uniform(-1, 1, (2, 3, 3)),), {"compute_uv": False})],
    bad_samples=lambda rng: [((rng.standard_normal((3,)),), {}, errors.InvalidArgumentError)],
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}, cost=cubic_cost)


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


def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose pseudo-inverse of matrices, from their SVD.

    Singular values at most ``rcond * max(s)`` are treated as zero (their reciprocal is 0),
    as in TF and numpy.

    Args:
        a: A float or complex Tensor ``[..., M, N]``.
        rcond: Relative cutoff; default ``10 * max(M, N) * eps`` of the dtype.
        validate_args: Unused.
        name: Unused.

    Returns:
        A Tensor ``[..., N, M]`` of ``a``'s dtype.

    Raises:
        InvalidArgumentError: If ``a`` has rank < 2 or unknown matrix dimensions.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.pinv([[2.0, 0.0], [0.0, 0.0]]).numpy().tolist()
        [[0.5, 0.0], [0.0, 0.0]]
    """
    from eagerflow.ops.math import arithmetic
    from eagerflow.ops.math.cast import cast
    from eagerflow.ops.reduce.reductions import reduce_max
    from eagerflow.ops.array.reshape_ops import expand_dims
    from eagerflow.tensor import convert_to_tensor

    a = convert_to_tensor(a)
    shape = tuple(a.shape)
    if len(shape) < 2 or shape[-1] is None or shape[-2] is None:
        raise errors.InvalidArgumentError(
            None, "pinv", "pinv: a must have rank >= 2 with known matrix dimensions, got "
            "shape %s." % _shape_text(shape))
    s, u, v = svd(a)
    real = s.dtype
    if rcond is None:
        rcond = 10.0 * max(shape[-2:]) * np.finfo(real.np_dtype).eps
    cutoff = expand_dims(convert_to_tensor(rcond, dtype=real) * reduce_max(s, axis=-1), -1)
    keep = arithmetic.greater(s, cutoff)
    # 1/s where kept, 0 elsewhere, without dividing by the zeros that are dropped.
    safe = arithmetic.where(keep, s, ONES_LIKE_fn(s))
    s_inv = arithmetic.where(keep, 1.0 / safe, arithmetic.zeros_like_t(s))
    if s_inv.dtype is not a.dtype:
        s_inv = cast(s_inv, a.dtype)
    return matmul(v * expand_dims(s_inv, -2), u, adjoint_b=True)


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
    host_sync=HOST_SOLVER,
    num_outputs=lambda attrs: 2 if attrs.get("compute_v", True) else 1,
    shape_fn=_eigh_shape, vjp=_eigh_vjp, saves=(0, "out"), reference=_np_eigh,
    samples=_eigh_samples, sweep_dtypes=_SWEEP, family="linalg",
    grad_samples=lambda rng: [((rng.uniform(-1, 1, (3, 3)) + 3 * np.diag([0.0, 1.0, 2.0]),),
                               {}),
                              ((rng.uniform(-1, 1, (2, 3, 3)),), {"compute_v": False})],
    bad_samples=_bad_square,
    tolerance={"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}, cost=cubic_cost)


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
