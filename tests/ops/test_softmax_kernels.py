"""The fused softmax / log_softmax kernels and their gradient primitives.

Covers the values against numpy in float64 and in half precision, finite-difference
gradients of the whole op in float64 (first and second order), traced equal to eager, one
SoftmaxGrad node per softmax in a traced backward graph, and the row blocks on several
threads equal to one thread, run to run.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.backend import cpu_threads
from eagerflow.ops.dispatch import execute
from eagerflow.ops.nn import activation_ops as A
from eagerflow.ops.nn import softmax_kernels as K
from eagerflow.testing import check_vjp

RNG = np.random.default_rng(5)


def _ref_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _ref_grad(g, x, axis, log):
    """The gradient of softmax / log_softmax by its Jacobian, one slice at a time."""
    x_m = np.moveaxis(x, axis, -1)
    g_m = np.moveaxis(g, axis, -1)
    out = np.empty_like(x_m)
    for idx in np.ndindex(*x_m.shape[:-1]):
        p = _ref_softmax(x_m[idx], -1)
        if log:
            jac = np.eye(len(p)) - p[None, :]          # d log p_i / d x_j
        else:
            jac = np.diag(p) - np.outer(p, p)          # d p_i / d x_j
        out[idx] = g_m[idx] @ jac
    return np.moveaxis(out, -1, axis)


SHAPES_AXES = [((7,), -1), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((1, 4), -1),
               ((4, 1), -1), ((2, 1, 3), -3)]


@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
@pytest.mark.parametrize("log", [False, True])
def test_forward_and_gradient_match_numpy_float64(shape, axis, log):
    x = RNG.standard_normal(shape) * 3
    g = RNG.standard_normal(shape)
    fn = ef.nn.log_softmax if log else ef.nn.softmax
    xt = ef.constant(x)
    with ef.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt, axis=axis)
    ref = _ref_softmax(x, axis)
    np.testing.assert_allclose(y.numpy(), np.log(ref) if log else ref, rtol=1e-12, atol=1e-14)
    dx = tape.gradient(y, xt, output_gradients=ef.constant(g))
    np.testing.assert_allclose(dx.numpy(), _ref_grad(g, x, axis, log), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("prim", [A.SOFTMAX, A.LOG_SOFTMAX, A.SOFTMAX_GRAD,
                                  A.LOG_SOFTMAX_GRAD])
@pytest.mark.parametrize("shape,axis", SHAPES_AXES[:4])
def test_finite_difference_gradients_float64(prim, shape, axis):
    n_in = 2 if prim.name.endswith("Grad") else 1
    args = [RNG.standard_normal(shape) for _ in range(n_in)]
    for seed in range(3):
        assert check_vjp(prim, args, {"axis": axis}, seed=seed)


def test_second_order_through_the_gradient_primitive():
    x = ef.constant(RNG.standard_normal((3, 4)))
    w = ef.constant(RNG.standard_normal((3, 4)))

    def grad_norm(x_in):
        with ef.GradientTape() as inner:
            inner.watch(x_in)
            loss = ef.reduce_sum(ef.nn.softmax(x_in) * w)
        return ef.reduce_sum(ef.square(inner.gradient(loss, x_in)))

    with ef.GradientTape() as outer:
        outer.watch(x)
        value = grad_norm(x)
    analytic = outer.gradient(value, x).numpy()
    eps = 1e-6
    numeric = np.zeros(x.shape)
    base = x.numpy()
    for idx in np.ndindex(*x.shape):
        hi, lo = base.copy(), base.copy()
        hi[idx] += eps
        lo[idx] -= eps
        numeric[idx] = (grad_norm(ef.constant(hi)).numpy()
                        - grad_norm(ef.constant(lo)).numpy()) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [ef.float16, ef.bfloat16, ef.float32])
@pytest.mark.parametrize("log", [False, True])
def test_half_precision_is_computed_in_float32(dtype, log):
    x = RNG.standard_normal((4, 33)).astype(np.float32) * 4
    g = RNG.standard_normal((4, 33)).astype(np.float32)
    xt = ef.cast(ef.constant(x), dtype)
    gt = ef.cast(ef.constant(g), dtype)
    fn = ef.nn.log_softmax if log else ef.nn.softmax
    with ef.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
    dx = tape.gradient(y, xt, output_gradients=gt)
    assert y.dtype == dtype and dx.dtype == dtype
    x64 = ef.cast(xt, ef.float64).numpy()
    g64 = ef.cast(gt, ef.float64).numpy()
    ref = _ref_softmax(x64, -1)
    tol = {ef.float16: 2e-3, ef.bfloat16: 1.6e-2, ef.float32: 1e-6}[dtype]
    got = ef.cast(y, ef.float64).numpy()
    np.testing.assert_allclose(got, np.log(ref) if log else ref, rtol=tol, atol=tol)
    # The gradient from the rounded forward result, so within the rounding of y and dx.
    y64 = got
    expect = (g64 - np.exp(y64) * g64.sum(-1, keepdims=True)) if log else \
        y64 * (g64 - (g64 * y64).sum(-1, keepdims=True))
    np.testing.assert_allclose(ef.cast(dx, ef.float64).numpy(), expect, rtol=4 * tol,
                               atol=4 * tol * max(1.0, np.abs(expect).max()))


def test_empty_inputs_and_batch_one():
    for shape in [(0, 5), (2, 0), (0,), (1, 5)]:
        x = ef.zeros(shape)
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.nn.softmax(x)
        assert y.shape == shape
        assert tape.gradient(y, x).shape == shape


def test_gradient_shape_mismatch_is_a_clear_error():
    with pytest.raises(errors.InvalidArgumentError, match="differs from the softmax result"):
        execute(A.SOFTMAX_GRAD, (ef.ones([2, 3]), ef.ones([3, 2])), {"axis": -1})


@pytest.mark.parametrize("log", [False, True])
def test_traced_equals_eager_with_one_gradient_node(log):
    fn = ef.nn.log_softmax if log else ef.nn.softmax
    x = ef.constant(RNG.standard_normal((2, 3, 8)).astype(np.float32))
    w = ef.constant(RNG.standard_normal((2, 3, 8)).astype(np.float32))

    def step(x_in):
        with ef.GradientTape() as tape:
            tape.watch(x_in)
            loss = ef.reduce_sum(fn(x_in, axis=1) * w)
        return loss, tape.gradient(loss, x_in)

    eager_loss, eager_grad = step(x)
    traced = ef.function(step)
    loss, grad = traced(x)
    np.testing.assert_array_equal(loss.numpy(), eager_loss.numpy())
    np.testing.assert_array_equal(grad.numpy(), eager_grad.numpy())
    graph = traced.get_concrete_function(x).graph
    ops = [n.op for n in graph.nodes]
    name = "LogSoftmaxGrad" if log else "SoftmaxGrad"
    assert ops.count(name) == 1, ops


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("log", [False, True])
def test_threads_equal_one_thread_run_to_run(axis, log):
    shape = (64, 130, 129)  # above FUSED_MIN_ELEMENTS, so the rows are split
    assert np.prod(shape) >= cpu_threads.FUSED_MIN_ELEMENTS
    x = RNG.standard_normal(shape).astype(np.float32)
    g = RNG.standard_normal(shape).astype(np.float32)
    try:
        cpu_threads.set_threads(1)
        one_y = K.forward(np, x, axis, log)
        one_dx = K.backward(np, g, one_y, axis, log)
        cpu_threads.set_threads(2)
        for _ in range(3):
            np.testing.assert_array_equal(K.forward(np, x, axis, log), one_y)
            np.testing.assert_array_equal(K.backward(np, g, one_y, axis, log), one_dx)
    finally:
        cpu_threads.set_threads(0)
    ref = _ref_softmax(x.astype(np.float64), axis)
    np.testing.assert_allclose(one_y, np.log(ref) if log else ref, rtol=2e-5, atol=1e-6)
