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
