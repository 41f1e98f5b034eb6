"""The GELU primitives (``Gelu``, ``GeluGrad``) and their blocked kernels.

Covers both forms against float64 numpy references on inputs of one block and of many
(odd sizes, a last block cut short, non-contiguous inputs), half precision computed in
float32, finite-difference gradients in float64 (first and second order), traced equal to
eager with one GeluGrad node in the backward graph, and several threads giving the
one-thread bits, run to run.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes
from eagerflow.backend import cpu_threads, numpy_backend as XP
from eagerflow.ops.dispatch import execute
from eagerflow.ops.nn import activation_ops as A
from eagerflow.ops.nn import gelu_kernels as K
from eagerflow.testing import check_vjp

RNG = np.random.default_rng(17)

# One block, several blocks with a short last one (float32 blocks hold 65536 elements).
SHAPES = [(3, 5), (7, 28091), (1024, 512)]


@pytest.fixture
def threads():
    yield cpu_threads.set_threads
    cpu_threads.set_threads(0)


def _ref(x, approximate):
    w = x.astype(np.float64)
    if approximate:
        return 0.5 * w * (1 + np.tanh(np.sqrt(2 / np.pi) * (w + 0.044715 * w ** 3)))
    from scipy import special

    return 0.5 * w * (1 + special.erf(w / np.sqrt(2)))


def _ref_derivative(x, approximate, h=1e-6):
    w = x.astype(np.float64)
    return (_ref(w + h, approximate) - _ref(w - h, approximate)) / (2 * h)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_forward_and_gradient_match_numpy(shape, approximate):
    # float32 loses digits in 1 + T (T near -1) where x is well below 0, as TF's form does.
    for dtype, rtol, atol, grad_atol in ((np.float64, 1e-12, 1e-13, 1e-8),
                                         (np.float32, 2e-6, 2e-6, 1e-5)):
        x = (RNG.standard_normal(shape) * 3).astype(dtype)
        g = RNG.standard_normal(shape).astype(dtype)
        xt = ef.constant(x)
        with ef.GradientTape() as tape:
            tape.watch(xt)
            y = ef.nn.gelu(xt, approximate=approximate)
        np.testing.assert_allclose(y.numpy(), _ref(x, approximate), rtol=rtol, atol=atol)
        dx = tape.gradient(y, xt, output_gradients=ef.constant(g)).numpy()
        assert dx.dtype == dtype
        np.testing.assert_allclose(dx, g * _ref_derivative(x.astype(np.float64), approximate),
                                   rtol=max(rtol, 1e-8), atol=grad_atol)


@pytest.mark.parametrize("approximate", [False, True])
def test_blocks_equal_one_pass_over_the_whole_array(approximate, monkeypatch):
    x = (RNG.standard_normal((7, 28091)) * 3).astype(np.float32)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    blocked = K.forward(XP, x, approximate), K.backward(XP, g, x, approximate)
    monkeypatch.setattr(K, "BLOCK_BYTES", 1 << 30)
    whole = K.forward(XP, x, approximate), K.backward(XP, g, x, approximate)
    for b, w in zip(blocked, whole):
        np.testing.assert_array_equal(b, w)


@pytest.mark.parametrize("approximate", [False, True])
def test_non_contiguous_inputs(approximate):
    x = (RNG.standard_normal((300, 700)) * 3).astype(np.float32)
    g = RNG.standard_normal((700, 300)).astype(np.float32)
    y = K.forward(XP, x.T, approximate)
    assert y.shape == (700, 300)
    np.testing.assert_array_equal(y, K.forward(XP, np.ascontiguousarray(x.T), approximate))
    d = K.backward(XP, g, x.T, approximate)
    np.testing.assert_array_equal(d, K.backward(XP, g, np.ascontiguousarray(x.T), approximate))


@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.bfloat16])
@pytest.mark.parametrize("shape", [(3, 5), (7, 28091)])
@pytest.mark.parametrize("approximate", [False, True])
def test_half_precision_is_computed_in_float32(dtype, shape, approximate):
    x32 = (RNG.standard_normal(shape) * 3).astype(np.float32)
    g32 = RNG.standard_normal(shape).astype(np.float32)
    x, g = x32.astype(dtype.np_dtype), g32.astype(dtype.np_dtype)
    y = execute(A.GELU, (ef.constant(x),), {"approximate": approximate}).numpy()
    assert y.dtype == dtype.np_dtype
    # One rounding of the float32 result.
    expect = K.forward(XP, x.astype(np.float32), approximate).astype(dtype.np_dtype)
    np.testing.assert_array_equal(y, expect)
    d = execute(A.GELU_GRAD, (ef.constant(g), ef.constant(x)),
                {"approximate": approximate}).numpy()
    expect = K.backward(XP, g.astype(np.float32), x.astype(np.float32),
                        approximate).astype(dtype.np_dtype)
    np.testing.assert_array_equal(d, expect)
    tol = 1e-2 if dtype is dtypes.float16 else 6e-2
    np.testing.assert_allclose(y.astype(np.float64), _ref(x, approximate), rtol=tol, atol=tol)


@pytest.mark.parametrize("approximate", [False, True])
def test_finite_difference_gradients_float64(approximate):
    x = RNG.standard_normal((4, 70)) * 3
    g = RNG.standard_normal((4, 70))
    check_vjp(A.GELU, (x,), {"approximate": approximate})
    check_vjp(A.GELU_GRAD, (g, x), {"approximate": approximate})      # second order


def test_gelu_grad_broadcasts_and_empty_inputs():
    x = RNG.standard_normal((2, 3))
    g = RNG.standard_normal((3,))
    d = execute(A.GELU_GRAD, (ef.constant(g), ef.constant(x)), {"approximate": True}).numpy()
    np.testing.assert_allclose(d, g * _ref_derivative(x, True), rtol=1e-8, atol=1e-9)
    empty = ef.nn.gelu(ef.zeros([0, 3]), approximate=True)
    assert empty.shape == (0, 3)


def test_special_values():
    x = np.array([0.0, -0.0, 30.0, -30.0, np.inf, np.nan], np.float32)
    for approximate in (False, True):
        with np.errstate(invalid="ignore"):
            y = K.forward(XP, x, approximate)
        np.testing.assert_array_equal(y[:4], np.array([0.0, 0.0, 30.0, 0.0], np.float32))
        assert y[4] == np.inf and np.isnan(y[5])


@pytest.mark.parametrize("approximate", [False, True])
def test_traced_equals_eager_with_one_gradient_node(approximate):
    x = ef.constant((RNG.standard_normal((1024, 512)) * 3).astype(np.float32))

    def step(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(ef.nn.gelu(x, approximate=approximate) * x)
        return y, tape.gradient(y, x)

    traced = ef.function(step)
    got, want = traced(x), step(x)
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-6)
    ops = [n.op for n in traced.get_concrete_function(x).graph.nodes]
    assert ops.count("Gelu") == 1 and ops.count("GeluGrad") == 1


@pytest.mark.parametrize("approximate", [False, True])
def test_threads_equal_one_thread_run_to_run(threads, approximate):
    x = (RNG.standard_normal((1024, 512)) * 3).astype(np.float32)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    outs = []
    for n in (1, 2, 3, 1):
        threads(n)
        outs.append((K.forward(XP, x, approximate), K.backward(XP, g, x, approximate)))
    for y, d in outs[1:]:
        np.testing.assert_array_equal(y, outs[0][0])
        np.testing.assert_array_equal(d, outs[0][1])
