"""The conv_columns pass: a convolution and its filter gradient on one Im2Col matrix.

Covers where the rewrite applies (a training step's forward convolution and filter
gradient; two convolutions of one input with one window; 1-D, 2-D and 3-D windows with
strides, dilations and padding) and where it must not (narrow column matrices, grouped
and channels-first convolutions, different windows, a lone convolution), and the
optimized graphs' values against the unoptimized graphs' bits, eager and numpy.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.function import passes
from eagerflow.function.executor import Executor
from eagerflow.ops.nn import conv_kernels

RNG = np.random.default_rng(7)
spec = ef.TensorSpec


def _ops(graph, options=None):
    return [n.op for n in passes.optimize(graph, options).nodes]


def _run(graph, args, options=None):
    return Executor(passes.optimize(graph, options)).run([np.asarray(a) for a in args], [])


def _rand(shape, dtype):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def _step(conv, b_shape):
    """f(x, w, b) -> (loss, dx, dw) of a convolution, bias and relu."""
    def f(x, w, b):
        with ef.GradientTape() as tape:
            tape.watch([x, w])
            y = ef.nn.relu(conv(x, w) + b)
            loss = ef.reduce_sum(y * y)
        dx, dw = tape.gradient(loss, [x, w])
        return loss, dx, dw
    return f


CASES = [
    ((4, 9, 9, 8), (3, 3, 8, 16), dict(strides=1, padding="VALID")),
    ((3, 10, 11, 5), (3, 3, 5, 7), dict(strides=2, padding="SAME")),
    ((2, 12, 12, 4), (3, 3, 4, 6), dict(strides=1, padding="SAME", dilations=2)),
    ((3, 20, 8), (5, 8, 4), dict(strides=1, padding="SAME")),
    ((2, 5, 6, 5, 3), (2, 3, 2, 3, 4), dict(strides=(1, 2, 1), padding="VALID")),
    ((1, 7, 7, 64), (1, 1, 64, 8), dict(strides=1, padding="VALID")),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,kw", CASES)
def test_a_training_step_shares_one_column_matrix(xs, ws, kw, dtype):
    def conv(x, w):
        return ef.nn.convolution(x, w, **kw)

    f = _step(conv, ws[-1:])
    ef_dtype = ef.as_dtype(dtype)
    graph = ef.function(f).get_concrete_function(
        spec(xs, ef_dtype), spec(ws, ef_dtype), spec(ws[-1:], ef_dtype)).graph
    ops = _ops(graph)
    assert ops.count("Im2Col") == 1
    assert "Conv" not in ops and "ConvBackpropFilter" not in ops
    assert "ConvBackpropInput" in ops
    args = (_rand(xs, dtype), _rand(ws, dtype), _rand(ws[-1:], dtype))
    got = _run(graph, args)
    unrewritten = _run(graph, args, {"remapping": False})
    eager = [t.numpy() for t in f(*(ef.constant(a) for a in args))]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b, c in zip(got, unrewritten, eager):
        assert a.dtype == dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol)
    # The forward convolution against the registry's reference loops.
    y = _run(ef.function(conv).get_concrete_function(spec(xs, ef_dtype),
                                                     spec(ws, ef_dtype)).graph, args[:2])[0]
    nd = len(xs) - 2
    as_tuple = (lambda v: tuple(v) if isinstance(v, tuple) else (v,) * nd)
    ref = conv_kernels.CONV.reference(
        args[0], args[1], strides=as_tuple(kw["strides"]),
        dilations=as_tuple(kw.get("dilations", 1)), padding=kw["padding"],
        data_format={1: "NWC", 2: "NHWC", 3: "NDHWC"}[nd])
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol * 10)


def test_the_products_are_the_kernels_bits():
    # The rewritten graph runs the kernels' own GEMMs on the same column matrix.
    xs, ws = (8, 13, 13, 32), (3, 3, 32, 64)
    f = _step(lambda x, w: ef.nn.conv2d(x, w, 1, "VALID"), ws[-1:])
    graph = ef.function(f).get_concrete_function(spec(xs), spec(ws), spec(ws[-1:])).graph
    args = (_rand(xs, np.float32), _rand(ws, np.float32), _rand(ws[-1:], np.float32))
    for a, b in zip(_run(graph, args), _run(graph, args, {"remapping": False})):
        np.testing.assert_array_equal(a, b)


def test_two_convolutions_of_one_input_share_it():
    graph = ef.function(lambda x, w, v: ef.nn.conv2d(x, w, 1, "SAME") +
                        ef.nn.conv2d(x, v, 1, "SAME")).get_concrete_function(
        spec([2, 6, 6, 4]), spec([3, 3, 4, 5]), spec([3, 3, 4, 5])).graph
    ops = _ops(graph)
    assert ops.count("Im2Col") == 1 and ops.count("MatMul") == 2 and "Conv" not in ops
    args = (_rand((2, 6, 6, 4), np.float32), _rand((3, 3, 4, 5), np.float32),
            _rand((3, 3, 4, 5), np.float32))
    np.testing.assert_allclose(_run(graph, args)[0],
                               _run(graph, args, {"remapping": False})[0], rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("xs,ws,kw,why", [
    ((4, 9, 9, 1), (3, 3, 1, 16), dict(), "narrow: blocks of examples"),
    ((4, 9, 9, 3), (3, 3, 3, 16), dict(), "27 columns: narrow"),
    ((2, 8, 8, 8), (3, 3, 4, 6), dict(), "two groups"),
    ((2, 8, 9, 9), (3, 3, 8, 6), dict(data_format="NCHW"), "channels first"),
])
def test_where_it_does_not_apply(xs, ws, kw, why):
    f = _step(lambda x, w: ef.nn.convolution(x, w, padding="SAME", **kw),
              ws[-1:] if kw.get("data_format") != "NCHW" else (ws[-1], 1, 1))
    b_shape = [ws[-1]] if kw.get("data_format") != "NCHW" else [ws[-1], 1, 1]
    graph = ef.function(f).get_concrete_function(spec(xs), spec(ws), spec(b_shape)).graph
    ops = _ops(graph)
    assert "Im2Col" not in ops, why
    assert "Conv" in ops and "ConvBackpropFilter" in ops, why


def test_a_lone_convolution_or_different_windows_keep_their_kernels():
    lone = ef.function(lambda x, w: ef.nn.conv2d(x, w, 1, "SAME")).get_concrete_function(
        spec([2, 6, 6, 4]), spec([3, 3, 4, 5])).graph
    assert "Im2Col" not in _ops(lone) and "Conv" in _ops(lone)
    other = ef.function(lambda x, w: ef.nn.conv2d(x, w, 1, "SAME") +
                        ef.nn.conv2d(x, w, 1, "SAME", dilations=2)).get_concrete_function(
        spec([2, 6, 6, 4]), spec([3, 3, 4, 5])).graph
    assert "Im2Col" not in _ops(other)


def test_unknown_batch_keeps_the_kernels():
    f = _step(lambda x, w: ef.nn.conv2d(x, w, 1, "SAME"), (5,))
    graph = ef.function(f).get_concrete_function(spec([None, 6, 6, 4]), spec([3, 3, 4, 5]),
                                                 spec([5])).graph
    ops = _ops(graph)
    assert "Im2Col" not in ops and "ConvBackpropFilter" in ops
