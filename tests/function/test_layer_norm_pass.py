"""The layer_norm pass: a layer norm's input gradient becomes one LayerNormGrad node.

Covers the benchmark's pre-LN form and Keras' LayerNormalization-like forms with a
residual term in the same sum, where the rewrite applies or must not (a zero epsilon,
another axis, a term used elsewhere), and the optimized graphs against the unoptimized
ones and eager gradients in float32 and float64.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.function import passes
from eagerflow.function.executor import Executor

RNG = np.random.default_rng(29)


def _ln(h, gamma, beta, eps=1e-5, axes=(-1,)):
    mean, var = ef.nn.moments(h, list(axes), keepdims=True)
    return (h - mean) * ef.math.rsqrt(var + eps) * gamma + beta


def _graph_and_fn(body, shape, dtype):
    gamma = ef.constant((RNG.standard_normal(shape[-1]) + 1).astype(dtype))
    beta = ef.constant(RNG.standard_normal(shape[-1]).astype(dtype))
    target = ef.constant(RNG.standard_normal(shape).astype(dtype))

    def f(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            loss = ef.reduce_mean(ef.square(body(x, gamma, beta) - target))
        return tape.gradient(loss, x)

    spec = ef.TensorSpec(shape, ef.as_dtype(dtype))
    return f, ef.function(f).get_concrete_function(spec).graph


def _ops(graph):
    return [n.op for n in passes.optimize(graph).nodes]


def _check(f, graph, shape, dtype):
    x = (RNG.standard_normal(shape) * 3 + 1).astype(dtype)
    captures = [c._value for _, c in graph.captures]
    got = Executor(passes.optimize(graph)).run([x], captures)[0]
    raw = Executor(passes.optimize(graph, {"remapping": False})).run([x], captures)[0]
    eager = f(ef.constant(x)).numpy()
    tol = 2e-5 if dtype == np.float32 else 1e-11
    scale = np.abs(raw).max()
    np.testing.assert_allclose(got, raw, rtol=tol, atol=tol * scale)
    np.testing.assert_allclose(got, eager, rtol=tol, atol=tol * scale)


BODIES = {
    "plain": lambda x, g, b: _ln(x, g, b),
    "residual": lambda x, g, b: x + ef.tanh(_ln(x, g, b)),
    "no affine": lambda x, g, b: ef.exp(_ln(x, 1.0, 0.0) * 0.5),
}


@pytest.mark.parametrize("body", list(BODIES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 8), (16, 64, 128), (3, 1, 5)])
def test_layer_norm_input_gradient_is_one_node(body, dtype, shape):
    f, graph = _graph_and_fn(BODIES[body], shape, dtype)
    nodes = passes.optimize(graph).nodes
    ops = [n.op for n in nodes]
    assert ops.count("LayerNormGrad") == 1
    assert not [n for n in nodes if n.op == "BroadcastReduced" and n.attrs["axis"]]
    assert "SelectV2" not in ops and "Neg" not in ops
    _check(f, graph, shape, dtype)


@pytest.mark.parametrize("body", [
    lambda x, g, b: _ln(x, g, b, eps=0.0),                 # no positive epsilon
    lambda x, g, b: _ln(x, g, b, axes=(0,)),               # not the last axis
    lambda x, g, b: _ln(x, g, b, axes=(0, 1)),
])
def test_other_normalizations_are_left_alone(body):
    f, graph = _graph_and_fn(body, (6, 8), np.float64)
    assert "LayerNormGrad" not in _ops(graph)
    _check(f, graph, (6, 8), np.float64)


def test_a_term_used_elsewhere_is_left_alone():
    def body(x, g, b):
        mean, var = ef.nn.moments(x, [-1], keepdims=True)
        r = ef.math.rsqrt(var + 1e-5)
        return (x - mean) * r * g + b + ef.reduce_sum(r)

    f, graph = _graph_and_fn(body, (6, 8), np.float64)
    _check(f, graph, (6, 8), np.float64)


def test_transformer_step_has_one_layer_norm_gradient():
    # The block's second layer norm (the first one's input is data: no input gradient).
    from eagerflow import keras
    from eagerflow.benchmarks import training_workloads as tw

    arrays, xa, ta = tw._block_arrays()
    params = [ef.Variable(a) for a in arrays]
    opt = keras.optimizers.Adam()
    ops = tw._Ops(moments=lambda h, axes: ef.nn.moments(h, axes, keepdims=True),
                  rsqrt=ef.math.rsqrt, matmul=ef.matmul, reshape=ef.reshape,
                  transpose=ef.transpose, softmax=ef.nn.softmax,
                  gelu=lambda h: ef.nn.gelu(h, approximate=True), reduce_mean=ef.reduce_mean,
                  square=ef.square)

    def step(x, target):
        with ef.GradientTape() as tape:
            loss = tw._block_loss(ops, params, x, target)
        grads = tape.gradient(loss, params)
        opt.apply_gradients(zip(grads, params))
        return [loss] + grads

    x, target = ef.constant(xa), ef.constant(ta)
    traced = ef.function(step)
    graph = traced.get_concrete_function(x, target).graph
    names = [n.op for n in passes.optimize(graph).nodes]
    assert names.count("LayerNormGrad") == 1 and names.count("Gelu") == 1
    assert names.count("GeluGrad") == 1 and "StridedSliceGrad" not in names
