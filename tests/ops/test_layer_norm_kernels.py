"""The LayerNormGrad primitive and its blocked kernel.

Covers the kernel against a float64 reference on one block and many (a last block cut
short, one-column rows, non-contiguous inputs), half precision computed in float32, the
float64 finite-difference check of the primitive's own gradient, and several threads giving
the one-thread bits, run to run.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes
from eagerflow.backend import cpu_threads, numpy_backend as XP
from eagerflow.ops.dispatch import execute
from eagerflow.ops.nn import layer_norm_kernels as K
from eagerflow.ops.nn.normalization_ops import LAYER_NORM_GRAD, _layer_norm_grad_reference
from eagerflow.testing import check_vjp

RNG = np.random.default_rng(23)


@pytest.fixture
def threads():
    yield cpu_threads.set_threads
    cpu_threads.set_threads(0)


def _inputs(shape, dtype=np.float32):
    g = RNG.standard_normal(shape).astype(dtype)
    x = RNG.standard_normal(shape) * 2 + 1
    c = x - x.mean(-1, keepdims=True)
    r = 1 / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5)
    return g, c.astype(dtype), r.astype(dtype)


@pytest.mark.parametrize("shape", [(3, 5), (1030, 128), (16, 64, 128), (7, 1), (2000, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_the_reference(shape, dtype):
    g, c, r = _inputs(shape, dtype)
    got = execute(LAYER_NORM_GRAD, (ef.constant(g), ef.constant(c), ef.constant(r))).numpy()
    assert got.dtype == dtype and got.shape == shape
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, _layer_norm_grad_reference(g, c, r), rtol=tol, atol=tol)


def test_blocks_and_non_contiguous_inputs(monkeypatch):
    g, c, r = _inputs((1030, 128))
    blocked = K.input_grad(XP, g, c, r)
    np.testing.assert_array_equal(
        K.input_grad(XP, np.asfortranarray(g), c, np.asfortranarray(r)), blocked)
    monkeypatch.setattr(K, "BLOCK_BYTES", 1 << 30)
    whole = K.input_grad(XP, g, c, r)
    np.testing.assert_allclose(blocked, whole, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.bfloat16])
def test_half_precision_is_computed_in_float32(dtype):
    g, c, r = (a.astype(dtype.np_dtype) for a in _inputs((300, 64)))
    got = execute(LAYER_NORM_GRAD, (ef.constant(g), ef.constant(c), ef.constant(r))).numpy()
    assert got.dtype == dtype.np_dtype
    expect = K.input_grad(XP, *(a.astype(np.float32) for a in (g, c, r)))
    np.testing.assert_array_equal(got, expect.astype(dtype.np_dtype))


def test_finite_difference_gradient_float64():
    g, c, r = _inputs((3, 6), np.float64)
    check_vjp(LAYER_NORM_GRAD, (g, c, r), {})


def test_empty_and_bad_shapes():
    g = np.zeros((0, 4), np.float32)
    out = execute(LAYER_NORM_GRAD, (ef.constant(g), ef.constant(g),
                                    ef.constant(np.zeros((0, 1), np.float32))))
    assert out.shape == (0, 4)
    with pytest.raises(ef.errors.InvalidArgumentError, match="LayerNormGrad"):
        execute(LAYER_NORM_GRAD, (ef.ones([2, 3]), ef.ones([2, 3]), ef.ones([3, 1])))


def test_threads_equal_one_thread_run_to_run(threads):
    g, c, r = _inputs((1030, 128))
    outs = []
    for n in (1, 2, 3, 2):
        threads(n)
        outs.append(K.input_grad(XP, g, c, r))
    # The blocks do not depend on the number of threads: the same bits.
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
