"""Tests of the linear algebra family, eagerflow.ops.linalg.

Values are compared with numpy; gradients with finite differences in float64. Complex
gradients follow TF's convention (for a real loss L, grad = dL/dRe + i dL/dIm), checked as
``Re<grad, v> == dL(x + t v)/dt``. Eigen- and singular vectors are defined only up to sign
(or phase), so their gradients are checked through losses that do not depend on that choice.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops.linalg import diag_ops, einsum_ops, matmul_ops
from eagerflow.ops.linalg import linalg_factorizations, linalg_solvers
from eagerflow.ops.dispatch import execute
from eagerflow.ops.vjp import apply_vjp, saved_inputs
from eagerflow.testing import check_vjp
from eagerflow.ops import linalg as linalg_family
from tests.ops.family_view import family_view

# The linalg family as one namespace: its modules' names, __all__ and EXPORTS.
D = family_view(linalg_family, (linalg_solvers, linalg_factorizations,))
# The linalg family as one namespace: its modules' names, __all__ and EXPORTS.
L = family_view(linalg_family, (matmul_ops, diag_ops, einsum_ops,))

RNG = np.random.default_rng(1234)


def rand(*shape, dtype=np.float64, rng=RNG):
    x = rng.uniform(-1, 1, size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(-1, 1, size=shape)
    return np.asarray(x).astype(dtype)


def well_conditioned(*shape, dtype=np.float64):
    n = shape[-1]
    return (rand(*shape, dtype=dtype) + (n + 1) * np.eye(n)).astype(dtype)


def spd(*shape, dtype=np.float64):
    x = rand(*shape, dtype=dtype)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def hermitian(*shape, dtype=np.float64):
    x = rand(*shape, dtype=dtype)
    return (x + np.conj(np.swapaxes(x, -1, -2))).astype(dtype)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _outputs(prim, args, attrs):
    out = execute(prim, tuple(ef.constant(a) for a in args), attrs)
    return out if isinstance(out, tuple) else (out,)


def check_loss_grad(prim, args, attrs, loss, cot, *, directions=None, eps=1e-6, rtol=1e-5,
                    wrt=None):
    """Checks ``prim``'s VJP through a real loss of its outputs, for real or complex inputs.

    Args:
        loss: numpy function of the outputs (a list of arrays) returning a float.
        cot: numpy function of the outputs returning the output cotangents
            (dL/dRe + i dL/dIm for each output).
        directions: Optional list of input directions (default random, same dtype as input).
        wrt: Input indices to perturb (default all floating/complex inputs).
    """
    args = [np.asarray(a) for a in args]
    wrt = [i for i, a in enumerate(args) if a.dtype.kind in "fc"] if wrt is None else wrt
    rng = np.random.default_rng(7)
    if directions is None:
        directions = [rand(*a.shape, dtype=a.dtype, rng=rng) if i in wrt else None
                      for i, a in enumerate(args)]
    inputs = tuple(ef.constant(a) for a in args)
    outs = execute(prim, inputs, attrs)
    outs_t = outs if isinstance(outs, tuple) else (outs,)
    cts = [ef.constant(c) for c in cot([np.asarray(o.numpy()) for o in outs_t])]
    grads = apply_vjp(prim, tuple(cts) if not prim.single else cts[0],
                      saved_inputs(prim, inputs), outs if prim.saves_out else None, attrs,
                      [a.shape for a in args])
    analytic = sum(float(np.real(np.sum(np.conj(np.asarray(g.numpy())) * v)))
                   for g, v in zip(grads, directions) if v is not None and g is not None)

    def at(sign):
        shifted = [a + sign * eps * v if v is not None else a for a, v in zip(args, directions)]
        return loss([np.asarray(o.numpy()) for o in _outputs(prim, shifted, attrs)])

    numeric = (at(1.0) - at(-1.0)) / (2 * eps)
    assert abs(analytic - numeric) <= 1e-7 + rtol * 10 * max(1.0, abs(numeric)), (
        "%s %r: VJP %.10g vs finite differences %.10g" % (prim.name, attrs, analytic, numeric))


def linear_loss(shapes_dtypes, seed=0):
    """``L = sum_k Re(sum(conj(C_k) * out_k))`` with random C_k; returns (loss, cot)."""
    rng = np.random.default_rng(seed)
    cs = [rand(*s, dtype=dt, rng=rng) for s, dt in shapes_dtypes]

    def loss(outs):
        return sum(float(np.real(np.sum(np.conj(c) * o))) for c, o in zip(cs, outs))

    return loss, lambda outs: cs


def check_linear(prim, args, attrs, seed=0):
    outs = _outputs(prim, args, attrs)
    loss, cot = linear_loss([(tuple(o.shape), o.dtype.np_dtype) for o in outs], seed)
    check_loss_grad(prim, args, attrs, loss, cot)


def raises(exc, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    return str(info.value)


# ------------------------------------------------------------------------------------------
# matmul
# ------------------------------------------------------------------------------------------

FLAGS = [dict(transpose_a=ta, transpose_b=tb, adjoint_a=ha, adjoint_b=hb)
         for ta, ha in ((False, False), (True, False), (False, True))
         for tb, hb in ((False, False), (True, False), (False, True))]


def _operands(flags, batch_a=(2,), batch_b=(), dtype=np.float64, m=2, k=3, n=4):
    sa = (k, m) if flags["transpose_a"] or flags["adjoint_a"] else (m, k)
    sb = (n, k) if flags["transpose_b"] or flags["adjoint_b"] else (k, n)
    return rand(*(batch_a + sa), dtype=dtype), rand(*(batch_b + sb), dtype=dtype)


def _np_matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False):
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if adjoint_a:
        a = H(a)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    if adjoint_b:
        b = H(b)
    return a @ b


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.complex64,
                                   np.complex128, np.float16])
def test_matmul_values_and_dtypes(dtype):
    a = (rand(2, 3, 4) * 5).astype(dtype)
    b = (rand(4, 5) * 5).astype(dtype)
    got = L.matmul(a, b).numpy()
    assert got.dtype == dtype and got.shape == (2, 3, 5)
    tol = 1e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.complex128), (a @ b).astype(np.complex128),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("flags", FLAGS)
def test_matmul_flags_complex(flags):
    a, b = _operands(flags, batch_a=(2, 1), batch_b=(3,), dtype=np.complex128)
    got = L.matmul(a, b, **flags).numpy()
    np.testing.assert_allclose(got, _np_matmul(a, b, **flags), rtol=1e-12)
    assert got.shape == (2, 3, 2, 4)


def test_matmul_operator_and_shapes():
    a = ef.constant(rand(2, 3))
    b = ef.constant(rand(3, 4))
    np.testing.assert_allclose((a @ b).numpy(), a.numpy() @ b.numpy())
    np.testing.assert_allclose((a.numpy() @ b).numpy(), a.numpy() @ b.numpy())
    assert L.matmul(np.zeros((0, 3)), np.zeros((3, 2))).shape == (0, 2)
    np.testing.assert_array_equal(L.matmul(np.ones((2, 0)), np.ones((0, 3))).numpy(),
                                  np.zeros((2, 3)))
    assert L.matmul(np.zeros((0, 2, 3)), np.zeros((3, 2))).shape == (0, 2, 2)
    out = L.matmul(np.array([[1, 2]], np.int8), np.array([[100], [100]], np.int8),
                   output_type=ef.int32)
    assert out.dtype == ef.int32 and out.numpy().tolist() == [[300]]


def test_matmul_errors_name_shapes_and_fix():
    msg = raises(errors.InvalidArgumentError, L.matmul, rand(3), rand(3, 2))
    assert "MatMul" in msg and "[3]" in msg and "[3, 2]" in msg and "matvec" in msg
    msg = raises(errors.InvalidArgumentError, L.matmul, rand(2, 3), rand(4, 5))
    assert "[2, 3]" in msg and "[4, 5]" in msg and "3" in msg and "transpose" in msg
    msg = raises(errors.InvalidArgumentError, L.matmul, rand(2, 3), rand(3, 2),
                 transpose_b=False, transpose_a=True)
    assert "after transpose_a" in msg
    msg = raises(errors.InvalidArgumentError, L.matmul, rand(2, 2, 3), rand(3, 3, 2))
    assert "batch" in msg and "broadcast" in msg
    raises(errors.InvalidArgumentError, L.matmul, rand(2, 2), rand(2, 2), transpose_a=True,
           adjoint_a=True)
    raises(errors.InvalidArgumentError, L.matmul, rand(2, 2), rand(2, 2).astype(np.float32))
    raises(errors.InvalidArgumentError, L.matmul, np.ones((2, 2), bool), np.ones((2, 2), bool))


@pytest.mark.parametrize("flags", FLAGS)
def test_matmul_gradient_real(flags):
    a, b = _operands(flags, batch_a=(2, 1), batch_b=(3,))
    attrs = {k: v for k, v in flags.items() if v}
    check_vjp(L.MATMUL, (a, b), attrs)


@pytest.mark.parametrize("flags", FLAGS)
def test_matmul_gradient_complex(flags):
    a, b = _operands(flags, batch_a=(2,), batch_b=(), dtype=np.complex128)
    check_linear(L.MATMUL, (a, b), {k: v for k, v in flags.items() if v})


def test_matmul_gradient_through_tape_reduces_broadcast_batch():
    a = ef.constant(rand(2, 3))
    b = ef.constant(rand(4, 3, 5))
    with ef.GradientTape() as tape:
        tape.watch(a)
        tape.watch(b)
        y = a @ b
    ga, gb = tape.gradient(y, [a, b])
    ones = np.ones((4, 2, 5))
    np.testing.assert_allclose(ga.numpy(), (ones @ np.swapaxes(b.numpy(), -1, -2)).sum(0))
    np.testing.assert_allclose(gb.numpy(), np.swapaxes(a.numpy(), -1, -2) @ ones)


# ------------------------------------------------------------------------------------------
# transposes
# ------------------------------------------------------------------------------------------

def test_matrix_transpose_and_adjoint():
    x = rand(2, 3, 4, dtype=np.complex128)
    np.testing.assert_array_equal(L.matrix_transpose(x).numpy(), np.swapaxes(x, -1, -2))
    np.testing.assert_array_equal(L.matrix_transpose(x, conjugate=True).numpy(), H(x))
    np.testing.assert_array_equal(L.adjoint(x).numpy(), H(x))
    assert L.matrix_transpose(np.zeros((0, 2, 3))).shape == (0, 3, 2)
    assert "rank >= 2" in raises(errors.InvalidArgumentError, L.matrix_transpose, rand(3))
    check_linear(L.MATRIX_TRANSPOSE, (x,), {"conjugate": True})
    check_linear(L.MATRIX_TRANSPOSE, (x,), {})


# ------------------------------------------------------------------------------------------
# einsum, tensordot, matvec
# ------------------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i", [(4,), (4,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]),
    ("i...j,j->i...", [(2, 3, 4), (4,)]),
    ("ab,cd->", [(2, 3), (4, 5)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("bii,i->b", [(2, 3, 3), (3,)]),
    ("iij,j->ij", [(3, 3, 2), (2,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    (",ij->ij", [(), (2, 3)]),
    ("ij,jk->ik", [(0, 3), (3, 2)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("bA,aB", [(2, 3), (4, 5)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum_matches_numpy(eq, shapes):
    ops = [rand(*s) for s in shapes]
    got = L.einsum(eq, *ops)
    np.testing.assert_allclose(got.numpy(), np.einsum(eq, *ops), rtol=1e-12, atol=1e-12)
    assert got.dtype == ef.float64


@pytest.mark.parametrize("eq,shapes", [c for c in EINSUM_CASES if 0 not in sum(c[1], ())])
def test_einsum_gradient(eq, shapes):
    ops = [rand(*s) for s in shapes]
    canonical = L._canonical_equation(eq, tuple(len(s) for s in shapes))
    check_vjp(L.EINSUM, ops, {"equation": canonical})


def test_einsum_extras():
    a, b = rand(2, 3), rand(3, 4)
    np.testing.assert_allclose(L.einsum("ij,jk->ik", [a, b]).numpy(), a @ b)
    np.testing.assert_allclose(L.einsum(" ij , jk -> ik ", a, b).numpy(), a @ b)
    # Axes under '...' missing from the output are summed (numpy refuses this equation).
    x = rand(4, 2, 3)
    np.testing.assert_allclose(L.einsum("...ij->ij", x).numpy(), x.sum(0))
    check_vjp(L.EINSUM, (x,), {"equation": "...ij->ij"})
    ints = L.einsum("ij,jk->ik", np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2))
    assert ints.dtype == ef.int64 or ints.dtype == ef.int32
    np.testing.assert_array_equal(ints.numpy(), np.arange(6).reshape(2, 3) @
                                  np.arange(6).reshape(3, 2))
    c = rand(2, 3, dtype=np.complex128), rand(3, 3, dtype=np.complex128)
    check_linear(L.EINSUM, c, {"equation": "ij,jk->ik"})
    check_linear(L.EINSUM, (c[1],), {"equation": "ii->i"})
    # Broadcasting axes under '...' (size 1 against n) in the gradient.
    check_vjp(L.EINSUM, (rand(1, 3, 2), rand(4, 2)), {"equation": "...ij,...j->...i"})


def test_einsum_errors():
    E = errors.InvalidArgumentError
    assert "2 input subscript" in raises(E, L.einsum, "ij,jk->ik", rand(2, 3))
    assert "rank" in raises(E, L.einsum, "ijk->i", rand(2, 3))
    msg = raises(E, L.einsum, "ij,jk->ik", rand(2, 3), rand(4, 5))
    assert "'j'" in msg and "size" in msg
    raises(E, L.einsum, "ij->ii", rand(2, 2))
    raises(E, L.einsum, "ij->k", rand(2, 2))
    raises(E, L.einsum, "i.j->i", rand(2, 2))
    raises(E, L.einsum, "i1->i", rand(2, 2))
    raises(E, L.einsum, "ij->i->j", rand(2, 2))
    raises(E, L.einsum, "ij->i", rand(2, 2).astype(np.float32).astype(bool))


@pytest.mark.parametrize("axes", [0, 1, 2, [1, 0], [[1, 2], [1, 0]], [[0], [2]],
                                  [[-1], [0]]])
def test_tensordot(axes):
    a, b = rand(2, 3, 4), rand(4, 3, 2)
    if axes in (1,):
        b = rand(4, 3, 2)
    if axes == 2:
        b = rand(3, 4, 5)
    if axes == [1, 0]:
        b = rand(3, 5)
    if axes == [[0], [2]]:
        b = rand(4, 3, 2)
    got = L.tensordot(a, b, axes)
    np.testing.assert_allclose(got.numpy(), np.tensordot(a, b, axes), rtol=1e-12)


def test_tensordot_errors():
    E = errors.InvalidArgumentError
    assert "size" in raises(E, L.tensordot, rand(2, 3), rand(4, 5), 1)
    raises(E, L.tensordot, rand(2, 3), rand(3, 5), 3)
    raises(E, L.tensordot, rand(2, 3), rand(3, 5), [[0, 1], [0]])
    raises(E, L.tensordot, rand(2, 3), rand(3, 5), [[5], [0]])


def test_matvec():
    a, v = rand(2, 3, 4), rand(4)
    np.testing.assert_allclose(L.matvec(a, v).numpy(), a @ v)
    np.testing.assert_allclose(L.matvec(a, rand(2, 3), transpose_a=True).numpy().shape, (2, 4))
    ac, vc = rand(3, 3, dtype=np.complex128), rand(3, dtype=np.complex128)
    np.testing.assert_allclose(L.matvec(ac, vc, adjoint_a=True).numpy(), H(ac) @ vc)
    raises(errors.InvalidArgumentError, L.matvec, rand(3), rand(3))
    raises(errors.InvalidArgumentError, L.matvec, rand(3, 3), rand(4))


# ------------------------------------------------------------------------------------------
# diagonals, band, trace, cross
# ------------------------------------------------------------------------------------------

def test_diag_part_and_diag():
    x = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(L.diag_part(x).numpy(), np.diagonal(x, axis1=1, axis2=2))
    np.testing.assert_array_equal(L.diag_part(x, k=1).numpy(),
                                  np.diagonal(x, 1, axis1=1, axis2=2))
    # A band of diagonals: k=1 first, short diagonals padded (subdiagonals left-aligned).
    band = L.diag_part(x[0], k=(-1, 1), padding_value=-1).numpy()
    np.testing.assert_array_equal(band, [[1, 6, 11], [0, 5, 10], [4, 9, -1]])
    band = L.diag_part(x[0], k=(-1, 1), padding_value=-1, align="LEFT_RIGHT").numpy()
    np.testing.assert_array_equal(band, [[1, 6, 11], [0, 5, 10], [-1, 4, 9]])
    np.testing.assert_array_equal(L.diag([1, 2]).numpy(), np.diag([1, 2]))
    np.testing.assert_array_equal(L.diag([1, 2], k=1).numpy(), np.diag([1, 2], 1))
    np.testing.assert_array_equal(L.diag([1, 2], k=-1, padding_value=9).numpy(),
                                  np.where(np.diag([1, 2], -1) == 0, 9, np.diag([1, 2], -1)))
    np.testing.assert_array_equal(L.diag([1, 2], num_rows=3, num_cols=2).numpy(),
                                  [[1, 0], [0, 2], [0, 0]])
    np.testing.assert_array_equal(L.diag(np.ones((2, 3))).numpy(),
                                  np.broadcast_to(np.eye(3), (2, 3, 3)))
    # diag inverts diag_part for a band (here into a 3x3 matrix).
    np.testing.assert_array_equal(L.diag(band, k=(-1, 1), align="LEFT_RIGHT").numpy(),
                                  _tridiag_of(x[0]))
    assert L.diag_part(np.zeros((0, 0))).shape == (0,)
    assert L.diag(np.zeros((0,))).shape == (0, 0)


def _tridiag_of(m):
    out = np.zeros((3, 3), m.dtype)
    for i in range(3):
        for j in range(3):
            if abs(i - j) <= 1:
                out[i, j] = m[i, j]
    return out


def test_set_diag_and_trace():
    x = rand(2, 3, 4)
    out = L.set_diag(x, np.zeros((2, 3))).numpy()
    exp = x.copy()
    for i in range(3):
        exp[:, i, i] = 0
    np.testing.assert_array_equal(out, exp)
    out = L.set_diag(x, np.full((2, 2, 3), 5.0), k=(0, 1)).numpy()
    assert (out[:, 0, 1] == 5).all() and (out[:, 1, 1] == 5).all() and out[0, 1, 0] == x[0, 1, 0]
    np.testing.assert_allclose(L.trace(x).numpy(), np.trace(x, axis1=1, axis2=2))
    E = errors.InvalidArgumentError
    assert "shape" in raises(E, L.set_diag, x, np.zeros((2, 4)))
    raises(E, L.diag_part, rand(3))
    raises(E, L.diag_part, rand(3, 3), k=(1, 0))
    raises(E, L.diag_part, rand(3, 3), k=5)
    raises(E, L.diag_part, rand(3, 3), align="MIDDLE")
    raises(E, L.diag, rand(3), num_rows=2, num_cols=2)


def test_diag_gradients():
    x = rand(2, 3, 4)
    for k in ((0, 0), (1, 1), (-1, 1), (-2, 0)):
        check_vjp(L.MATRIX_DIAG_PART, (x,), {"k": k})
        check_vjp(L.MATRIX_SET_DIAG, (x, np.asarray(
            execute(L.MATRIX_DIAG_PART, (ef.constant(x),), {"k": k}).numpy())), {"k": k})
    check_vjp(L.MATRIX_DIAG, (rand(2, 3),), {"k": (1, 1)})
    check_vjp(L.MATRIX_DIAG, (rand(3, 3),), {"k": (-1, 1), "align": "LEFT_LEFT"})


def test_band_part():
    x = rand(2, 4, 5)
    np.testing.assert_array_equal(L.band_part(x, -1, 0).numpy(), np.tril(x))
    np.testing.assert_array_equal(L.band_part(x, 0, -1).numpy(), np.triu(x))
    np.testing.assert_array_equal(L.band_part(x, 1, 2).numpy(), np.triu(np.tril(x, 2), -1))
    np.testing.assert_array_equal(L.band_part(x, ef.constant(0), 0).numpy(),
                                  x * np.eye(4, 5))
    assert "num_lower" in raises(errors.InvalidArgumentError, L.band_part, x, 7, 0)
    check_vjp(L.MATRIX_BAND_PART, (x,), {"num_lower": 1, "num_upper": 0})


def test_cross():
    a, b = rand(4, 3), rand(4, 3)
    np.testing.assert_allclose(L.cross(a, b).numpy(), np.cross(a, b))
    check_vjp(L.CROSS, (a, b))
    assert "[..., 3]" in raises(errors.InvalidArgumentError, L.cross, rand(2), rand(2))


# ------------------------------------------------------------------------------------------
# norm
# ------------------------------------------------------------------------------------------

NORM_CASES = [("euclidean", None), ("euclidean", -1), (2, 0), (1, 1), (np.inf, -1),
              (3, -1), (0.5, 2), ("fro", (1, 2)), ("euclidean", [0, 2]), (1, (1, 2)),
              (np.inf, (1, 2)), (2, (1, 2)), (2, (2, 0)), (1, (-1, 0))]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("order,axis", NORM_CASES)
def test_norm_matches_numpy(order, axis, keepdims):
    x = rand(2, 3, 4)
    got = L.norm(x, ord=order, axis=axis, keepdims=keepdims).numpy()
    if axis is None:
        exp = np.linalg.norm(x.ravel())
        exp = exp.reshape((1, 1, 1)) if keepdims else exp
    else:
        np_ord = None if order in ("euclidean", "fro") else order
        exp = np.linalg.norm(x, ord=np_ord, axis=tuple(axis) if isinstance(axis, list) else axis,
                             keepdims=keepdims)
    np.testing.assert_allclose(got, exp, rtol=1e-10)


def test_norm_complex_gradient_and_errors():
    z = rand(3, dtype=np.complex128)
    out = L.norm(z)
    assert out.dtype == ef.complex128  # TF keeps the complex dtype for 'euclidean'
    np.testing.assert_allclose(out.numpy().real, np.linalg.norm(z))
    assert L.norm(z, ord=1).dtype == ef.float64
    x = ef.constant(rand(3, 4))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = L.norm(x, axis=(0, 1))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), x.numpy() / np.linalg.norm(x.numpy()))
    E = errors.InvalidArgumentError
    raises(E, L.norm, x, ord="fro")
    raises(E, L.norm, x, ord=-1)
    raises(E, L.norm, x, ord=3, axis=(0, 1))
    raises(E, L.norm, x, axis=(0, 0))
    raises(E, L.norm, x, axis=(0, 1, 2))
    raises(E, L.norm, x, axis=4)


# ------------------------------------------------------------------------------------------
# inverse, determinants
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_inv_det_slogdet_values(dtype):
    x = well_conditioned(2, 3, 3, dtype=dtype)
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    got = D.inv(x).numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(got, np.linalg.inv(x), rtol=tol, atol=tol)
    np.testing.assert_allclose(D.inv(x, adjoint=True).numpy(), np.linalg.inv(H(x)), rtol=tol,
                               atol=tol)
    det = D.det(x).numpy()
    assert det.dtype == dtype and det.shape == (2,)
    np.testing.assert_allclose(det, np.linalg.det(x), rtol=tol)
    sign, logdet = D.slogdet(x)
    ref_sign, ref_log = np.linalg.slogdet(x)
    assert sign.dtype == logdet.dtype == ef.as_dtype(dtype)
    np.testing.assert_allclose(sign.numpy(), ref_sign, rtol=tol)
    np.testing.assert_allclose(logdet.numpy().real, ref_log, rtol=tol)


def test_empty_batches_and_matrices():
    for fn in (D.inv, D.det, D.cholesky, D.eigvalsh, D.svd, D.qr, D.eigh, D.slogdet):
        out = fn(np.zeros((0, 3, 3)))
        assert all(o.shape[0] == 0 for o in (out if isinstance(out, tuple) else (out,)))
    assert D.inv(np.zeros((0, 0))).shape == (0, 0)
    assert D.det(np.zeros((2, 0, 0))).numpy().tolist() == [1.0, 1.0]
    assert D.solve(np.zeros((0, 2, 2)), np.zeros((0, 2, 1))).shape == (0, 2, 1)


def test_singular_and_bad_inputs():
    E = errors.InvalidArgumentError
    msg = raises(E, D.inv, np.ones((2, 2)))
    assert "Input is not invertible." in msg and "MatrixInverse" in msg and "[2, 2]" in msg
    msg = raises(E, D.solve, np.ones((2, 2)), np.ones((2, 1)))
    assert "not invertible" in msg and "MatrixSolve" in msg
    msg = raises(E, D.triangular_solve, np.array([[1.0, 0.0], [1.0, 0.0]]), np.ones((2, 1)))
    assert "not invertible" in msg
    msg = raises(E, D.cholesky, -np.eye(3))
    assert "Cholesky decomposition was not successful. The input might not be valid." in msg
    assert "square" in raises(E, D.inv, rand(2, 3))
    assert "square" in raises(E, D.det, rand(2, 3))
    assert "rank >= 2" in raises(E, D.inv, rand(3))
    raises(E, D.inv, np.eye(2, dtype=np.int32))  # integer input: cast first, as in TF
    raises(E, D.solve, np.eye(2), np.ones(2))
    raises(E, D.solve, np.eye(2), np.ones((3, 1)))
    raises(E, D.solve, np.eye(2)[None].repeat(2, 0), np.ones((3, 2, 1)))
    # det and slogdet of a singular matrix are 0 / (0, -inf), not errors.
    assert D.det(np.ones((2, 2))).numpy() == 0
    sign, logdet = D.slogdet(np.ones((2, 2)))
    assert sign.numpy() == 0 and logdet.numpy() == -np.inf


def test_inverse_determinant_gradients():
    x = well_conditioned(2, 3, 3)
    check_vjp(D.INV, (x,), {})
    check_vjp(D.INV, (x,), {"adjoint": True})
    check_vjp(D.DET, (x,), {})
    check_vjp(D.SLOGDET, (x,), {})
    check_vjp(D.SLOGDET, (-x,), {})  # negative determinant of odd-sized matrices
    xc = well_conditioned(2, 3, 3, dtype=np.complex128)
    check_linear(D.INV, (xc,), {})
    check_linear(D.INV, (xc,), {"adjoint": True})
    check_linear(D.DET, (xc,), {})
    # Only log|det| has a gradient (as in TF): a loss on it alone.
    check_loss_grad(D.SLOGDET, (xc,), {}, lambda outs: float(np.sum(outs[1].real * [1.0, -2.0])),
                    lambda outs: [np.zeros(2, np.complex128),
                                  np.array([1.0, -2.0], np.complex128)])


def test_logdet():
    a = spd(2, 4, 4)
    np.testing.assert_allclose(D.logdet(a).numpy(), np.linalg.slogdet(a)[1], rtol=1e-10)
    ac = spd(3, 3, dtype=np.complex128)
    out = D.logdet(ac)
    assert out.dtype == ef.float64
    np.testing.assert_allclose(out.numpy(), np.linalg.slogdet(ac)[1], rtol=1e-10)


# ------------------------------------------------------------------------------------------
# Cholesky and solvers
# ------------------------------------------------------------------------------------------

def test_cholesky_values_reads_lower_triangle():
    a = spd(2, 4, 4)
    chol = D.cholesky(a).numpy()
    np.testing.assert_allclose(chol, np.linalg.cholesky(a), rtol=1e-12)
    garbage_upper = np.tril(a) + np.triu(rand(2, 4, 4), 1) * 10
    np.testing.assert_allclose(D.cholesky(garbage_upper).numpy(), chol, rtol=1e-12)
    ac = spd(3, 3, dtype=np.complex64)
    np.testing.assert_allclose(D.cholesky(ac).numpy(), np.linalg.cholesky(ac), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cholesky_gradient_symmetric_directions(dtype):
    # TF's gradient is symmetrized: it is exact along Hermitian perturbations, the only
    # ones that keep the input a valid (Hermitian) matrix.
    a = spd(2, 4, 4, dtype=dtype)
    v = hermitian(2, 4, 4, dtype=dtype)
    outs = _outputs(D.CHOLESKY, (a,), {})
    loss, cot = linear_loss([(tuple(outs[0].shape), dtype)], seed=3)
    check_loss_grad(D.CHOLESKY, (a,), {}, loss, cot, directions=[v])
    g = apply_vjp(D.CHOLESKY, ef.constant(cot(None)[0]), (None,), outs[0], {}, [a.shape])[0]
    np.testing.assert_allclose(g.numpy(), H(g.numpy()), atol=1e-12)


def test_cholesky_solve_and_solve():
    a = spd(2, 3, 3)
    b = rand(2, 3, 2)
    chol = D.cholesky(a)
    np.testing.assert_allclose(D.cholesky_solve(chol, b).numpy(), np.linalg.solve(a, b),
                               rtol=1e-10)
    m = well_conditioned(2, 3, 3)
    np.testing.assert_allclose(D.solve(m, b).numpy(), np.linalg.solve(m, b), rtol=1e-10)
    np.testing.assert_allclose(D.solve(m, b, adjoint=True).numpy(), np.linalg.solve(H(m), b),
                               rtol=1e-10)
    # Batch dimensions broadcast.
    np.testing.assert_allclose(D.solve(m, b[0]).numpy(), np.linalg.solve(m, b[0]), rtol=1e-10)


@pytest.mark.parametrize("batch", [(), (2,), (0,)])
@pytest.mark.parametrize("n", [3, D._TRIANGULAR_MIN_N + 2])  # batched LU / solve_triangular
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_triangular_solve(batch, n, lower, adjoint):
    a = well_conditioned(*batch, n, n, dtype=np.complex128) + np.triu(rand(*batch, n, n), 1) * 5
    b = rand(*batch, n, 2, dtype=np.complex128)
    tri = np.tril(a) if lower else np.triu(a)
    ref = np.linalg.solve(H(tri) if adjoint else tri, b) if a.size else np.zeros(b.shape)
    got = D.triangular_solve(a, b, lower=lower, adjoint=adjoint).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    if a.size and n < 10:
        check_vjp(D.TRIANGULAR_SOLVE, (a.real, b.real), {"lower": lower, "adjoint": adjoint})


def test_solver_gradients():
    m, b = well_conditioned(2, 3, 3), rand(2, 3, 2)
    check_vjp(D.SOLVE, (m, b), {})
    check_vjp(D.SOLVE, (m, b), {"adjoint": True})
    check_vjp(D.SOLVE, (m, rand(3, 2)), {})  # broadcast rhs
    mc, bc = well_conditioned(3, 3, dtype=np.complex128), rand(3, 2, dtype=np.complex128)
    check_linear(D.SOLVE, (mc, bc), {"adjoint": True})
    check_linear(D.TRIANGULAR_SOLVE, (mc, bc), {"lower": False, "adjoint": True})
    check_linear(D.TRIANGULAR_SOLVE, (mc, bc), {"lower": True, "adjoint": False})


def test_lstsq():
    for shape in ((5, 3), (3, 5), (2, 6, 2)):
        a = rand(*shape)
        b = rand(*shape[:-1], 2)
        exp = np.stack([np.linalg.lstsq(ai, bi, rcond=None)[0]
                        for ai, bi in zip(a.reshape((-1,) + shape[-2:]),
                                          b.reshape((-1,) + b.shape[-2:]))]).reshape(
            shape[:-2] + (shape[-1], 2))
        np.testing.assert_allclose(D.lstsq(a, b).numpy(), exp, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(D.lstsq(a, b, fast=False).numpy(), exp, rtol=1e-8,
                                   atol=1e-10)
    a, b = rand(5, 3), rand(5, 1)
    ridge = np.linalg.solve(a.T @ a + 0.5 * np.eye(3), a.T @ b)
    np.testing.assert_allclose(D.lstsq(a, b, l2_regularizer=0.5).numpy(), ridge, rtol=1e-10)
    raises(errors.UnimplementedError, D.lstsq, a, b, l2_regularizer=0.5, fast=False)


# ------------------------------------------------------------------------------------------
# QR, SVD, eigh
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 2)])
@pytest.mark.parametrize("full", [False, True])
def test_qr_values(shape, full):
    x = rand(*shape)
    q, r = D.qr(x, full_matrices=full)
    q_ref, r_ref = np.linalg.qr(x, mode="complete" if full else "reduced")
    np.testing.assert_allclose(q.numpy(), q_ref, atol=1e-12)
    np.testing.assert_allclose(r.numpy(), r_ref, atol=1e-12)
    np.testing.assert_allclose((q @ r).numpy(), x, atol=1e-12)
    assert D.qr(x).q.shape == q_ref.shape if not full else True


def test_qr_gradients():
    for shape in ((4, 3), (3, 3), (2, 3, 5)):
        check_vjp(D.QR, (rand(*shape),), {})
    check_vjp(D.QR, (rand(3, 3),), {"full_matrices": True})
    for shape in ((4, 3), (3, 3), (3, 4)):
        check_linear(D.QR, (rand(*shape, dtype=np.complex128),), {})
    outs = _outputs(D.QR, (rand(4, 2),), {"full_matrices": True})
    with pytest.raises(errors.UnimplementedError):
        apply_vjp(D.QR, (outs[0], outs[1]), (None,), outs, {"full_matrices": True}, [(4, 2)])


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 2)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_values_tf_order_and_convention(shape, full):
    x = rand(*shape)
    s, u, v = D.svd(x, full_matrices=full)
    u_ref, s_ref, vh_ref = np.linalg.svd(x, full_matrices=full)
    np.testing.assert_allclose(s.numpy(), s_ref, rtol=1e-12)
    np.testing.assert_allclose(u.numpy(), u_ref, atol=1e-12)
    np.testing.assert_allclose(v.numpy(), H(vh_ref), atol=1e-12)  # v, not its adjoint
    k = min(shape[-2:])
    rec = u.numpy()[..., :, :k] * s.numpy()[..., None, :] @ H(v.numpy()[..., :, :k])
    np.testing.assert_allclose(rec, x, atol=1e-12)
    only_s = D.svd(x, compute_uv=False)
    np.testing.assert_allclose(only_s.numpy(), s_ref, rtol=1e-12)
    sc = D.svd(rand(3, 2, dtype=np.complex64), compute_uv=False)
    assert sc.dtype == ef.float32


def _vector_loss(seed, which, shapes):
    """A loss on |u_ij|^2 and |v_ij|^2 (phase invariant) plus a linear term on s."""
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(s) for s in shapes]

    def loss(outs):
        return float(sum(np.sum(w * np.abs(outs[i]) ** 2) if i in which
                         else np.sum(w * outs[i].real) for i, w in enumerate(ws)))

    def cot(outs):
        return [(2 * w * outs[i]) if i in which else w.astype(outs[i].dtype)
                for i, w in enumerate(ws)]

    return loss, cot


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_svd_gradient_gauge_invariant(shape, dtype):
    x = rand(*shape, dtype=dtype)
    outs = _outputs(D.SVD, (x,), {})
    loss, cot = _vector_loss(5, (1, 2), [tuple(o.shape) for o in outs])
    check_loss_grad(D.SVD, (x,), {}, loss, cot)
    # u_k v_k^H is invariant too: a linear loss on the reconstruction from the vectors.
    c = rand(*shape, dtype=dtype, rng=np.random.default_rng(9))

    def rec_loss(o):
        return float(np.real(np.sum(np.conj(c) * (o[1] @ H(o[2])))))

    def rec_cot(o):
        return [np.zeros(o[0].shape), c @ o[2], H(c) @ o[1]]

    check_loss_grad(D.SVD, (x,), {}, rec_loss, rec_cot)
    if dtype == np.float64:
        check_vjp(D.SVD, (x,), {})  # real vectors: signs are locally constant
        check_vjp(D.SVD, (x,), {"compute_uv": False})
    else:
        check_loss_grad(D.SVD, (x,), {"compute_uv": False},
                        lambda o: float(np.sum(o[0] * np.arange(1, o[0].shape[-1] + 1))),
                        lambda o: [np.broadcast_to(np.arange(1.0, o[0].shape[-1] + 1),
                                                   o[0].shape)])


def test_svd_full_matrices_gradient_rules():
    check_vjp(D.SVD, (rand(3, 3),), {"full_matrices": True})
    outs = _outputs(D.SVD, (rand(4, 2),), {"full_matrices": True})
    with pytest.raises(errors.UnimplementedError):
        apply_vjp(D.SVD, outs, (ef.constant(rand(4, 2)),), outs, {"full_matrices": True},
                  [(4, 2)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_eigh_values(dtype):
    x = hermitian(2, 4, 4, dtype=dtype)
    e, v = D.eigh(x)
    e_ref, v_ref = np.linalg.eigh(x)
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    assert e.dtype == ef.as_dtype(dtype).real_dtype and v.dtype == ef.as_dtype(dtype)
    np.testing.assert_allclose(e.numpy(), e_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(v.numpy(), v_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(D.eigvalsh(x).numpy(), e_ref, rtol=tol, atol=tol)
    # Only the lower triangle is read.
    messy = np.tril(x) + np.triu(rand(2, 4, 4, dtype=dtype), 1)
    np.testing.assert_allclose(D.eigvalsh(messy).numpy(), e_ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigh_gradient_gauge_invariant(dtype):
    x = hermitian(2, 4, 4, dtype=dtype)
    outs = _outputs(D.EIGH, (x,), {})
    loss, cot = _vector_loss(11, (1,), [tuple(o.shape) for o in outs])
    check_loss_grad(D.EIGH, (x,), {}, loss, cot)
    # Non-Hermitian directions too: the op reads the lower triangle only, and so does the
    # gradient (TF's convention).
    check_loss_grad(D.EIGH, (x,), {}, loss, cot,
                    directions=[rand(2, 4, 4, dtype=dtype, rng=np.random.default_rng(3))])
    check_loss_grad(D.EIGH, (x,), {"compute_v": False},
                    lambda o: float(np.sum(o[0] * [1.0, -1.0, 2.0, 0.5])),
                    lambda o: [np.broadcast_to([1.0, -1.0, 2.0, 0.5], o[0].shape)])
    if dtype == np.float64:
        check_vjp(D.EIGH, (x,), {})


def test_eigh_gradient_through_tape_with_eigvalsh():
    x = ef.constant(hermitian(3, 3))
    with ef.GradientTape() as tape:
        tape.watch(x)
        e = D.eigvalsh(x)
    g = tape.gradient(e, x).numpy()
    _, v = np.linalg.eigh(x.numpy())
    full = v @ v.T  # d(sum e)/dA = I on symmetric perturbations
    np.testing.assert_allclose(np.tril(g), np.tril(full + full.T) - np.diag(np.diag(full)),
                               atol=1e-10)
    assert np.allclose(np.triu(g, 1), 0)


# ------------------------------------------------------------------------------------------
# shape rules (used by tracing)
# ------------------------------------------------------------------------------------------

def test_shape_functions():
    from eagerflow.ops.registry import AbstractValue as A

    f64 = ef.float64
    assert L.MATMUL.shape_fn(A((None, 2, 3), f64), A((3, 5), f64)).shape == (None, 2, 5)
    assert L.MATMUL.shape_fn(A((3, 2), f64), A((5, 3), f64), transpose_a=True,
                             transpose_b=True).shape == (2, 5)
    with pytest.raises(errors.InvalidArgumentError):
        L.MATMUL.shape_fn(A((2, 3), f64), A((4, 5), f64))
    with pytest.raises(errors.InvalidArgumentError):
        L.MATMUL.shape_fn(A((3,), f64), A((3, 5), f64))
    assert L.EINSUM.shape_fn(A((2, None), f64), A((None, 4), f64),
                             equation="ij,jk->ik").shape == (2, 4)
    assert D.INV.shape_fn(A((None, 3, 3), f64)).shape == (None, 3, 3)
    with pytest.raises(errors.InvalidArgumentError):
        D.CHOLESKY.shape_fn(A((3, 4), f64))
    s, u, v = D.SVD.shape_fn(A((2, 5, 3), ef.complex64))
    assert (s.shape, s.dtype, u.shape, v.shape) == ((2, 3), ef.float32, (2, 5, 3), (2, 3, 3))
    e, vecs = D.EIGH.shape_fn(A((4, 4), f64))
    assert e.shape == (4,) and vecs.shape == (4, 4)
    q, r = D.QR.shape_fn(A((5, 3), f64), full_matrices=True)
    assert q.shape == (5, 5) and r.shape == (5, 3)
    assert D.SOLVE.shape_fn(A((2, 3, 3), f64), A((3, 1), f64)).shape == (2, 3, 1)
    assert L.MATRIX_DIAG.shape_fn(A((2, 3), f64), k=(1, 1)).shape == (2, 4, 4)
    assert L.MATRIX_DIAG_PART.shape_fn(A((3, 4), f64), k=(-1, 1)).shape == (3, 3)


# ------------------------------------------------------------------------------------------
# composites through the tape
# ------------------------------------------------------------------------------------------

def test_composite_gradients_through_tape_match_finite_differences():
    from eagerflow.ops.reduce import reductions

    rng = np.random.default_rng(3)
    x0, c, b = rng.standard_normal((4, 4)), rng.standard_normal((4, 4)), rng.standard_normal((4, 2))

    def f(x):
        a = L.matmul(x, x, transpose_b=True) + 4.0 * np.eye(4)  # symmetric positive definite
        chol = D.cholesky(a)
        R = reductions
        return (R.reduce_sum(chol * c) + R.reduce_sum(D.inv(a) * c) + D.logdet(a)
                + R.reduce_sum(D.eigvalsh(a) ** 2) + R.reduce_sum(D.cholesky_solve(chol, b))
                + R.reduce_sum(D.lstsq(x, b) * b[:, :1]) + L.norm(x, ord=2, axis=(0, 1))
                + L.trace(L.einsum("ij,jk->ik", x, a)))

    x = ef.constant(x0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        out = f(x)
    g = tape.gradient(out, x).numpy()
    v = rng.standard_normal((4, 4))
    eps = 1e-6
    numeric = (float(f(ef.constant(x0 + eps * v))) - float(f(ef.constant(x0 - eps * v)))) / (
        2 * eps)
    np.testing.assert_allclose(np.sum(g * v), numeric, rtol=1e-6)


def test_second_order_gradient_of_quadratic_form():
    from eagerflow.ops.reduce import reductions

    a = rand(3, 3)
    x = ef.constant(rand(3, 1))
    with ef.GradientTape() as outer:
        outer.watch(x)
        with ef.GradientTape() as inner:
            inner.watch(x)
            y = reductions.reduce_sum(L.matmul(x, L.matmul(a, x), transpose_a=True))
        g = inner.gradient(y, x)
        z = reductions.reduce_sum(g * np.arange(3.0).reshape(3, 1))
    np.testing.assert_allclose(g.numpy(), (a + a.T) @ x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(outer.gradient(z, x).numpy(),
                               (a + a.T) @ np.arange(3.0).reshape(3, 1), rtol=1e-12)


def test_docstring_examples():
    import doctest

    if not hasattr(ef, "linalg"):
        pytest.skip("the tf.linalg namespace is not generated yet")
    families = ((linalg_family, matmul_ops, diag_ops, einsum_ops),
                (linalg_solvers, linalg_factorizations))
    for modules in families:
        attempted = 0
        for module in modules:
            result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
            assert result.failed == 0, module.__name__
            attempted += result.attempted
        assert attempted > 20, modules[0].__name__
