"""Linear algebra on batches of matrices: matmul, einsum, transposes, diagonals, bands, norms.

Every primitive works on the two innermost axes of ``[..., M, N]`` inputs; leading axes are
batch axes, broadcast between operands the numpy way (as TF 2's ``BatchMatMulV2`` does).
Decompositions and solvers (inv, det, cholesky, qr, svd, eigh...) live in
:mod:`eagerflow.ops.linalg.linalg_solvers` and
:mod:`eagerflow.ops.linalg.linalg_factorizations`.

Gradients use the usual matrix calculus with TF's complex convention (``g * conj(df/dx)``).

The family is one module per concept in this package:

* :mod:`eagerflow.ops.linalg.matmul_ops`: matmul, matrix_transpose, adjoint, cross.
* :mod:`eagerflow.ops.linalg.diag_ops`: diag, diag_part, set_diag, band_part.
* :mod:`eagerflow.ops.linalg.einsum_ops`: einsum and its composites tensordot, matvec, trace,
  norm.

Example:
    >>> import eagerflow as ef
    >>> a = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> (a @ a).numpy().tolist()
    [[7.0, 10.0], [15.0, 22.0]]

Matrix decompositions and solvers: inv, det, slogdet, cholesky, solve, qr, svd, eigh.

Each primitive works on batches ``[..., M, N]`` (numpy's batched ``linalg`` on the CPU,
cupy's on the GPU). Gradients are written with the ops of :mod:`eagerflow.ops.linalg.matmul_ops`
and of these modules:

* ``inv``: ``dA = -A^-H G A^-H``; ``det``: ``dA = g conj(det) A^-H``;
  ``slogdet``: ``dA = g A^-H``.
* ``cholesky`` (``A = L L^H``): ``dA = sym(L^-H Phi(L^H G) L^-1)`` where ``Phi`` takes the
  lower triangle with a halved diagonal and ``sym(X) = (X + X^H) / 2``, as TF does.
* ``solve``/``triangular_solve`` (``X = A^-1 B``): ``dB = A^-H G``, ``dA = -dB X^H``.
* ``qr``, ``svd`` and ``eigh`` follow the standard results (TF's formulas); the vectors'
  gradients assume distinct singular values / eigenvalues and a loss that does not depend
  on each vector's sign (or complex phase), which is the only well-defined case.

The family is one module per concept in this package:

* :mod:`eagerflow.ops.linalg.linalg_solvers`: inv, det, slogdet, solve, triangular_solve.
* :mod:`eagerflow.ops.linalg.linalg_factorizations`: cholesky, cholesky_solve, logdet, lstsq, qr,
  svd, eigh, eigvalsh.
* this package's ``__init__``: the checks, helpers and samples they share.

Example:
    >>> import eagerflow as ef
    >>> ef.linalg.det([[2.0, 0.0], [0.0, 3.0]]).numpy()
    np.float32(6.0)

The helpers here are shared by the decomposition and solver modules: input checks, dtype
helpers, op shorthands for gradient rules, and the well-conditioned matrices the sweeps sample.

A singular or not positive definite input raises InvalidArgumentError with the op and the
fix; on a GPU, where cupy returns NaNs instead of failing, the result is checked for them.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.math.arithmetic import ONES_LIKE_fn
from eagerflow.ops.linalg.diag_ops import MATRIX_BAND_PART, MATRIX_DIAG, MATRIX_DIAG_PART
from eagerflow.ops.dispatch import execute
from eagerflow.ops.linalg.einsum_ops import EINSUM
from eagerflow.ops.linalg.matmul_ops import _shape_text, adjoint
from eagerflow.ops.registry import AbstractValue

__all__ = []

EXPORTS = {}


DECOMP_DTYPES = (d.float32, d.float64, d.complex64, d.complex128)
_SWEEP = (d.float32, d.float64, d.complex128)


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
    from eagerflow.ops.math.cast import cast

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
