"""The fused_matmul pass: a MatMul with its bias add (and relu) as one FusedMatMul node.

Covers where the rewrite applies (either operand order, transposed operands, with and
without the relu) and where it must not (other uses of the product or of the sum, a
bias that is not a vector along the last axis, batched or integer products, half types,
graph outputs), and the optimized graphs against the unoptimized ones and numpy.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.function import passes
from eagerflow.function.executor import Executor
from eagerflow.ops.linalg import fused_matmul_ops

RNG = np.random.default_rng(3)
spec = ef.TensorSpec


def _graph(fn, *specs):
    return ef.function(fn).get_concrete_function(*specs).graph


def _ops(graph):
    return [n.op for n in passes.optimize(graph).nodes if n.op not in ("Placeholder", "Const")]


def _run(graph, args, options=None):
    return Executor(passes.optimize(graph, options)).run([np.asarray(a) for a in args], [])


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.fixture(params=["in place", "gemm"])
def form(request, monkeypatch):
    """Both kernel forms: the bias added in place, or accumulated into by the GEMM."""
    if request.param == "gemm":
        monkeypatch.setattr(fused_matmul_ops, "GEMM_BIAS_MIN_ELEMENTS", 0)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(3, 4, 5), (64, 1000, 33), (1, 1, 1), (7, 0, 3),
                                   (520, 70, 512)])
@pytest.mark.parametrize("relu", [False, True])
def test_dense_layers_fuse_and_match(dtype, m, k, n, relu, form):
    act = ef.nn.relu if relu else (lambda h: h)
    ef_dtype = ef.as_dtype(dtype)
    graph = _graph(lambda x, w, b: act(ef.matmul(x, w) + b), spec([m, k], ef_dtype),
                   spec([k, n], ef_dtype), spec([n], ef_dtype))
    assert _ops(graph) == ["FusedMatMul"]
    fused = [n_ for n_ in passes.optimize(graph).nodes if n_.op == "FusedMatMul"][0]
    assert fused.attrs["activation"] == ("Relu" if relu else "")
    x, w, b = _rand(m, k, dtype=dtype), _rand(k, n, dtype=dtype), _rand(n, dtype=dtype)
    got = _run(graph, (x, w, b))[0]
    want = _run(graph, (x, w, b), {"remapping": False})[0]
    assert got.dtype == dtype and got.shape == (m, n)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(k, 1))
    ref = x.astype(np.float64) @ w.astype(np.float64) + b
    np.testing.assert_allclose(got, np.maximum(ref, 0) if relu else ref, rtol=tol,
                               atol=tol * max(k, 1))


def test_bias_first_and_transposed_operands(form):
    graph = _graph(lambda x, w, b: b + ef.matmul(x, w, transpose_a=True, transpose_b=True),
                   spec([6, 3]), spec([4, 6]), spec([4]))
    assert _ops(graph) == ["FusedMatMul"]
    x, w, b = _rand(6, 3), _rand(4, 6), _rand(4)
    np.testing.assert_allclose(_run(graph, (x, w, b))[0], x.T @ w.T + b, rtol=1e-5,
                               atol=1e-5)


def test_a_sum_with_other_uses_keeps_its_relu_apart():
    graph = _graph(lambda x, w, b: (lambda s: ef.nn.relu(s) * s)(ef.matmul(x, w) + b),
                   spec([3, 4]), spec([4, 5]), spec([5]))
    ops = _ops(graph)
    assert ops[0] == "FusedMatMul" and "MatMul" not in ops and "AddV2" not in ops
    fused = [n for n in passes.optimize(graph).nodes if n.op == "FusedMatMul"][0]
    assert fused.attrs["activation"] == ""
    x, w, b = _rand(3, 4), _rand(4, 5), _rand(5)
    s = x @ w + b
    np.testing.assert_allclose(_run(graph, (x, w, b))[0], np.maximum(s, 0) * s, rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("fn,specs", [
    # The product has a second use.
    (lambda x, w, b: (ef.matmul(x, w) + b, ef.matmul(x, w) * 2.0),
     (spec([3, 4]), spec([4, 5]), spec([5]))),
    # The bias is not a vector along the last axis.
    (lambda x, w, b: ef.matmul(x, w) + b, (spec([3, 4]), spec([4, 5]), spec([3, 5]))),
    (lambda x, w, b: ef.matmul(x, w) + b, (spec([3, 4]), spec([4, 5]), spec([1, 5]))),
    (lambda x, w, b: ef.matmul(x, w) + b, (spec([3, 4]), spec([4, 1]), spec([5]))),
    # Batched, integer and half-precision products; unknown dimensions.
    (lambda x, w, b: ef.matmul(x, w) + b, (spec([2, 3, 4]), spec([4, 5]), spec([5]))),
    (lambda x, w, b: ef.matmul(x, w) + b,
     (spec([3, 4], ef.int32), spec([4, 5], ef.int32), spec([5], ef.int32))),
    (lambda x, w, b: ef.matmul(x, w) + b,
     (spec([3, 4], ef.float16), spec([4, 5], ef.float16), spec([5], ef.float16))),
    (lambda x, w, b: ef.matmul(x, w) + b, (spec([None, 4]), spec([4, 5]), spec([5]))),
])
def test_no_rewrite(fn, specs):
    graph = _graph(fn, *specs)
    assert "FusedMatMul" not in _ops(graph)


def test_a_product_returned_by_the_function_is_kept():
    graph = _graph(lambda x, w, b: (lambda p: (p, p + b))(ef.matmul(x, w)),
                   spec([3, 4]), spec([4, 5]), spec([5]))
    assert "FusedMatMul" not in _ops(graph)


def test_training_step_with_fused_layers_matches_eager(form):
    w1 = ef.Variable(_rand(20, 16))
    b1 = ef.Variable(_rand(16))
    w2 = ef.Variable(_rand(16, 3))
    b2 = ef.Variable(_rand(3))
    params = [w1, b1, w2, b2]
    x, y = ef.constant(_rand(8, 20)), ef.constant(_rand(8, 3))

    def grads(x, y):
        with ef.GradientTape() as tape:
            h = ef.nn.relu(ef.matmul(x, w1) + b1)
            loss = ef.reduce_mean(ef.square(ef.matmul(h, w2) + b2 - y))
        return [loss] + tape.gradient(loss, params)

    traced = ef.function(grads)
    graph = traced.get_concrete_function(x, y).graph
    assert _ops(graph).count("FusedMatMul") == 2
    for got, want in zip(traced(x, y), grads(x, y)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
