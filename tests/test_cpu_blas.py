"""The in-place accumulating GEMM on numpy's BLAS, against numpy's matmul."""

import numpy as np
import pytest

from eagerflow.backend import cpu_blas

RNG = np.random.default_rng(5)


def test_numpy_blas_is_found_on_this_build():
    # numpy's wheels bundle an ILP64 OpenBLAS; other builds take the fallback (tested below).
    if not any("openblas" in str(v).lower() for v in np.show_config(mode="dicts")
               .get("Build Dependencies", {}).get("blas", {}).values()):
        pytest.skip("numpy is not linked to OpenBLAS here")
    assert cpu_blas.available(np.float32) and cpu_blas.available(np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_order", ["C", "F"])
@pytest.mark.parametrize("b_order", ["C", "F"])
def test_accumulates_in_place_in_every_layout(dtype, a_order, b_order):
    base = RNG.standard_normal((10, 7)).astype(dtype)
    c = base.copy()
    a = np.asarray(RNG.standard_normal((6, 5)), dtype=dtype, order=a_order)
    b = np.asarray(RNG.standard_normal((5, 7)), dtype=dtype, order=b_order)
    block = c[3:9]                                  # a row block: unit-stride rows
    cpu_blas.gemm_accumulate(block, a, b)
    expected = base.copy()
    expected[3:9] += a @ b
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(c, expected, rtol=tol, atol=tol)
    assert np.shares_memory(block, c)


def test_strided_views_and_row_slices():
    big = RNG.standard_normal((8, 12)).astype(np.float32)
    a = big[1:7, 2:6]                               # leading dimension 12, not 4
    b = RNG.standard_normal((12, 9)).astype(np.float32)[2:6, ::1].T.copy().T   # F-order
    c = np.zeros((20, 9), np.float32)
    cpu_blas.gemm_accumulate(c[5:11], a, b)
    np.testing.assert_allclose(c[5:11], a @ b, rtol=1e-5, atol=1e-5)
    assert not c[:5].any() and not c[11:].any()


def test_fallbacks_other_dtypes_layouts_and_empty():
    c = np.ones((3, 2), np.float16)
    cpu_blas.gemm_accumulate(c, np.ones((3, 4), np.float16), np.ones((4, 2), np.float16))
    np.testing.assert_array_equal(c, np.full((3, 2), 5.0, np.float16))
    # Neither axis unit-stride: the product-and-add form.
    a = RNG.standard_normal((6, 8)).astype(np.float32)[::2, ::2]
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    c = np.zeros((3, 2), np.float32)
    cpu_blas.gemm_accumulate(c, a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    for m, k in ((0, 4), (3, 0)):
        c = np.ones((m, 2), np.float32)
        cpu_blas.gemm_accumulate(c, np.ones((m, k), np.float32), np.ones((k, 2), np.float32))
        np.testing.assert_array_equal(c, 1.0)


def test_same_result_run_to_run():
    a = RNG.standard_normal((300, 64)).astype(np.float32)
    b = RNG.standard_normal((64, 96)).astype(np.float32)
    outs = []
    for _ in range(3):
        c = np.ones((300, 96), np.float32)
        cpu_blas.gemm_accumulate(c, a, b)
        outs.append(c)
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


# -- sums as GEMV ------------------------------------------------------------------------------

SUM_CASES = [((64, 26, 26, 16), (0, 1, 2)), ((64, 26, 26, 32), (0,)), ((512, 64), (1,)),
             ((64, 4, 64), (1, 2)), ((4096, 16), (0,)), ((16, 256), (1,)), ((16, 64, 8), (-1,)),
             ((1024, 512), (0,))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axes", SUM_CASES)
def test_sum_axes_matches_a_float64_sum(dtype, shape, axes):
    a = RNG.standard_normal(shape).astype(dtype)
    got = cpu_blas.sum_axes(a, axes)
    assert got is not None and got.dtype == dtype
    expected = a.astype(np.float64).sum(axis=axes)
    assert got.shape == expected.shape
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * np.sqrt(a.size))


def test_sum_axes_declines_other_forms():
    a = RNG.standard_normal((64, 64, 4)).astype(np.float32)
    assert cpu_blas.sum_axes(a, (1,)) is None                   # a middle axis
    assert cpu_blas.sum_axes(a, (0, 2)) is None                 # not leading nor trailing
    assert cpu_blas.sum_axes(a, (0, 1, 2)) is None              # every axis
    assert cpu_blas.sum_axes(a[:, ::2], (0,)) is None           # not contiguous
    assert cpu_blas.sum_axes(a.astype(np.float16), (0,)) is None
    assert cpu_blas.sum_axes(a.astype(np.int32), (0,)) is None
    assert cpu_blas.sum_axes(a[:8, :8], (0,)) is None           # small: numpy's loop
    # Narrow columns and long rows: numpy's pairwise sums are the more accurate there.
    assert cpu_blas.sum_axes(np.ones((4096, 3), np.float32), (0,)) is None
    assert cpu_blas.sum_axes(np.ones((16, 512), np.float32), (1,)) is None


def test_sum_axes_propagates_nan_and_inf():
    a = np.ones((128, 64), np.float32)
    a[3, 5] = np.nan
    a[7, 6] = np.inf
    a[9, 7], a[10, 7] = np.inf, -np.inf
    a[20, 1], a[20, 2] = np.inf, -np.inf
    col = cpu_blas.sum_axes(a, (0,))
    assert np.isnan(col[5]) and col[6] == np.inf and np.isnan(col[7]) and col[8] == 128
    row = cpu_blas.sum_axes(a, (1,))
    assert np.isnan(row[3]) and row[7] == np.inf and row[9] == np.inf
    assert row[10] == -np.inf and np.isnan(row[20]) and row[0] == 64


def test_reductions_and_bias_gradients_take_the_gemv_and_match_numpy():
    import eagerflow as ef

    x = RNG.standard_normal((64, 13, 13, 16)).astype(np.float32)
    b = ef.Variable(np.zeros(16, np.float32))
    xt = ef.constant(x)

    def step(x_in):
        with ef.GradientTape() as tape:
            y = x_in * 2.0 + b
            loss = ef.reduce_sum(ef.reduce_mean(y, axis=[0, 1, 2]) * ef.reduce_sum(y, axis=-1)
                                 [0, 0, 0])
        return loss, tape.gradient(loss, b), ef.reduce_sum(x_in, axis=[1, 2, 3])

    eager = step(xt)
    traced = ef.function(step)(xt)
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-6, atol=1e-6)
    x64 = x.astype(np.float64)
    y64 = 2 * x64
    mean = y64.mean(axis=(0, 1, 2))
    row = y64.sum(axis=-1)[0, 0, 0]
    np.testing.assert_allclose(eager[0].numpy(), (mean * row).sum(), rtol=1e-5)
    # loss = row * sum_c(mean_c), and every b_k adds 1 to each of row and sum_c(mean_c).
    expected_grad = np.full(16, row + mean.sum())
    np.testing.assert_allclose(eager[1].numpy(), expected_grad, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(eager[2].numpy(), x64.sum(axis=(1, 2, 3)), rtol=1e-5,
                               atol=1e-4)
