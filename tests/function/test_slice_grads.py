"""The slice_grads pass: the summed gradients of a tensor's pieces become one Pack, and a
transpose after a Pack moves into it.

Covers the attention's q/k/v split (a reshape, a transpose, three slices), pieces taken in
any order, partial covers and other slices (left alone), and the optimized graphs equal
to the unoptimized ones and to eager gradients.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.function import passes
from eagerflow.function.executor import Executor

RNG = np.random.default_rng(8)


def _grad_graph(loss, shape):
    def f(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = loss(x)
        return tape.gradient(y, x)

    return f, ef.function(f).get_concrete_function(ef.TensorSpec(shape)).graph


def _ops(graph, options=None):
    return [n.op for n in passes.optimize(graph, options).nodes]


def _check(f, graph, shape, dtype=np.float32):
    x = (RNG.standard_normal(shape)).astype(dtype)
    got = Executor(passes.optimize(graph)).run([x], [])[0]
    raw = Executor(passes.optimize(graph, {"remapping": False})).run([x], [])[0]
    np.testing.assert_array_equal(got, raw)
    np.testing.assert_allclose(got, f(ef.constant(x)).numpy(), rtol=1e-6, atol=1e-6)


def _attention_split(x):
    qkv = ef.transpose(ef.reshape(x, [2, 5, 3, 2, 4]), [2, 0, 3, 1, 4])
    q, k, v = qkv[0], qkv[1], qkv[2]
    att = ef.nn.softmax(ef.matmul(q, k, transpose_b=True))
    return ef.reduce_sum(ef.square(ef.matmul(att, v)))


def test_attention_split_gradient_is_one_pack_in_the_transposed_layout():
    f, graph = _grad_graph(_attention_split, [10, 24])
    ops = _ops(graph)
    assert "StridedSliceGrad" not in ops
    assert ops.count("Pack") == 1
    pack = [n for n in passes.optimize(graph).nodes if n.op == "Pack"][0]
    assert pack.attrs["axis"] == 2       # straight into the [B, S, 3, H, D] layout
    _check(f, graph, [10, 24])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pieces_in_any_order(dtype):
    f, graph = _grad_graph(lambda x: ef.reduce_sum(x[2] * x[0] + ef.exp(x[1]) - ef.square(x[3])),
                           [4, 3, 2])
    assert "StridedSliceGrad" not in _ops(graph)
    _check(f, graph, [4, 3, 2], dtype)


@pytest.mark.parametrize("loss", [
    lambda x: ef.reduce_sum(x[0] * x[1]),                              # index 2 unused
    lambda x: ef.reduce_sum(ef.exp(x[0] + x[1] + x[1:2] + x[2])),      # a range slice
    lambda x: ef.reduce_sum(ef.exp(x[:, 0]) + ef.exp(x[:, 1]) * x[:, 2]),  # another axis
])
def test_other_slices_are_left_alone(loss):
    f, graph = _grad_graph(loss, [3, 3])
    assert "StridedSliceGrad" in _ops(graph)
    _check(f, graph, [3, 3])


def test_transpose_of_a_pack_moves_into_the_pack():
    def f(a, b):
        return ef.transpose(ef.stack([a, b], axis=1), [2, 1, 0])

    graph = ef.function(f).get_concrete_function(ef.TensorSpec([2, 3]),
                                                 ef.TensorSpec([2, 3])).graph
    out = passes.optimize(graph)
    ops = [n.op for n in out.nodes]
    assert ops.count("Pack") == 1 and ops.index("Transpose") < ops.index("Pack")
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    got = Executor(out).run([a, b], [])[0]
    np.testing.assert_array_equal(got, np.transpose(np.stack([a, b], 1), [2, 1, 0]))
