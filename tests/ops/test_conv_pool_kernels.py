"""The convolution and pooling kernels' paths, each against the loop references.

Convolution: the accumulating-GEMM input gradient (unit strides, one group) and its
fallbacks (strides, groups, depthwise), the filter gradient whole and in row blocks.
Pooling: the disjoint-window assignment and the overlapping scatter, with finite and
non-finite gradients, ties, odd shapes and the half types.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes
from eagerflow.backend import cpu_blas, cpu_jit
from eagerflow.ops.nn import conv_kernels as K
from eagerflow.ops.nn import pool_kernels as PK
from eagerflow.ops.nn import pool_ops as P
from eagerflow.ops.dispatch import execute
from eagerflow.ops.nn.window_geometry import conv_geometry

RNG = np.random.default_rng(31)
DTYPES = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
TOL = {"float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-5),
       "float64": (1e-10, 1e-12)}


def uniform(shape, dtype):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype.np_dtype)


def close(got, expected, dtype):
    got = np.asarray(got.numpy())
    assert got.shape == np.shape(expected) and got.dtype == np.asarray(expected).dtype
    rtol, atol = TOL[dtype.name]
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(expected).astype(np.float64),
                               rtol=rtol, atol=atol)


def attrs(nd, strides=1, dilations=1, padding="SAME", fmt=None):
    return K._attrs(nd, strides, dilations, padding, fmt)


# (input shape, filter shape, attrs): unit strides take the accumulating-GEMM input
# gradient; the rest are its fallbacks.
CONV_CASES = [
    ((2, 6, 5, 8), (3, 3, 8, 4), attrs(2)),                                  # SAME
    ((1, 7, 6, 8), (3, 2, 8, 3), attrs(2, padding="VALID")),                 # batch 1
    ((2, 9, 9, 8), (3, 3, 8, 5), attrs(2, dilations=2, padding="VALID")),    # dilation
    ((1, 5, 4, 9), (2, 3, 9, 2), attrs(2, padding=((2, 1), (0, 2)))),        # explicit
    ((1, 8, 6, 5), (3, 3, 8, 2), attrs(2, fmt="NCHW")),                      # channels first
    ((2, 11, 8), (4, 8, 2), attrs(1, dilations=3)),                          # 1-D
    ((1, 4, 5, 3, 8), (2, 3, 2, 8, 3), attrs(3, padding="VALID")),           # 3-D
    ((1, 5, 5, 8), (1, 1, 8, 3), attrs(2)),                                  # 1x1: no shift
    ((0, 5, 5, 8), (3, 3, 8, 2), attrs(2)),                                  # empty batch
    ((2, 6, 5, 3), (3, 3, 3, 4), attrs(2)),                                  # fallback: C < 8
    ((2, 7, 7, 8), (3, 3, 8, 4), attrs(2, strides=2)),                       # fallback: stride
    ((1, 5, 5, 16), (3, 3, 8, 6), attrs(2)),                                 # fallback: groups
    ((1, 28, 28, 1), (3, 3, 1, 32), attrs(2, padding="VALID")),              # O > K*C
    ((2, 9, 8, 1), (3, 2, 1, 4), attrs(2, strides=2, dilations=1)),          # C = 1, stride
    ((2, 9, 9, 1), (2, 3, 1, 3), attrs(2, dilations=2, padding="VALID")),    # C = 1, dilation
    ((2, 1, 7, 6), (3, 3, 1, 2), attrs(2, fmt="NCHW")),                      # C = 1, NCHW
    ((2, 12, 1), (5, 1, 3), attrs(1)),                                       # C = 1, 1-D
    ((1, 4, 5, 3, 1), (2, 3, 2, 1, 2), attrs(3)),                            # C = 1, 3-D
]


@pytest.mark.parametrize("shape,k,strides,dilations", [
    ((3, 10, 9, 1), (3, 3), (1, 1), (1, 1)), ((2, 11, 9, 1), (2, 3), (2, 1), (1, 2)),
    ((2, 13, 1), (4,), (3,), (2,)), ((1, 5, 6, 4, 1), (2, 2, 3), (1, 2, 1), (1, 1, 1)),
    ((3, 8, 8, 3), (3, 3), (1, 1), (1, 1))])
def test_im2col_columns_equal_the_window_view(shape, k, strides, dilations):
    from eagerflow.ops.nn.window_geometry import windows

    x = RNG.standard_normal(shape).astype(np.float32)
    out_sp = tuple((n - (kk - 1) * d - 1) // s + 1
                   for n, kk, s, d in zip(shape[1:-1], k, strides, dilations))
    win = windows(np, x, out_sp, k, strides, dilations)
    np.testing.assert_array_equal(K._columns(np, win, np.float32), np.ascontiguousarray(win))


def _dy_shape(xs, ws, a):
    return conv_geometry(xs, ws, depthwise=False, **a).out_shape(a["data_format"])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("xs,ws,a", CONV_CASES)
def test_conv_kernels_match_references(xs, ws, a, dtype):
    x, w = uniform(xs, dtype), uniform(ws, dtype)
    dy = uniform(_dy_shape(xs, ws, a), dtype)
    cases = [(K.CONV, (x, w), a),
             (K.CONV_BACKPROP_INPUT, (dy, w), dict(a, input_shape=xs)),
             (K.CONV_BACKPROP_FILTER, (x, dy), dict(a, filter_shape=ws))]
    for prim, args, at in cases:
        got = execute(prim, tuple(ef.constant(v) for v in args), at)
        close(got, prim.reference(*args, **at), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("xs,ws,a", [
    ((7, 28, 28, 1), (3, 3, 1, 8), attrs(2, padding="VALID")),          # one channel
    ((10, 20, 21, 3), (3, 3, 3, 4), attrs(2, padding="SAME")),          # 3 channels
    ((40, 13, 13, 8), (3, 3, 8, 6), attrs(2, padding="VALID")),         # per-tap GEMMs
    ((20, 3, 30, 30), (3, 3, 3, 2), attrs(2, strides=2, fmt="NCHW")),   # strided, first
    ((8, 600, 2), (5, 2, 3), attrs(1, dilations=2)),                    # 1-D, dilation
    ((1, 70, 70, 1), (3, 3, 1, 2), attrs(2)),                           # one example
])
def test_convolutions_in_row_blocks(xs, ws, a, dtype):
    # Inputs of several row blocks (the filter gradient of narrow column matrices runs
    # over fixed blocks of examples): equal to the references, and the same bits on one
    # CPU thread and on several, run to run.
    from eagerflow.backend import cpu_threads

    g = conv_geometry(xs, ws, depthwise=False, **a)
    assert g.n * int(np.prod(g.out_sp)) >= 2 * K.ROW_BLOCK
    x, w = uniform(xs, dtype), uniform(ws, dtype)
    dy = uniform(_dy_shape(xs, ws, a), dtype)
    # Sums of a few thousand products: the float32 tolerance scaled to their length.
    rtol, atol = {"float32": (1e-4, 1e-4)}.get(dtype.name, TOL[dtype.name])
    for prim, args, at in [(K.CONV, (x, w), a),
                           (K.CONV_BACKPROP_INPUT, (dy, w), dict(a, input_shape=xs)),
                           (K.CONV_BACKPROP_FILTER, (x, dy), dict(a, filter_shape=ws))]:
        outs = []
        try:
            for n in (1, 2, 2, 1):
                cpu_threads.set_threads(n)
                outs.append(execute(prim, tuple(ef.constant(v) for v in args), at).numpy())
        finally:
            cpu_threads.set_threads(0)
        np.testing.assert_allclose(outs[0].astype(np.float64), prim.reference(
            *args, **at).astype(np.float64), rtol=rtol, atol=atol * 10)
        for out in outs[1:]:
            np.testing.assert_array_equal(out.view(np.uint8), outs[0].view(np.uint8))


@pytest.mark.parametrize("xs,ws,a", [c for c in CONV_CASES[:8] if c[0][0]])
def test_unit_stride_input_gradient_is_the_scatter_form(xs, ws, a):
    # The accumulating-GEMM path against the column-and-scatter path it replaces, on one
    # geometry: the strided fallback code run with the same (unit) strides.
    x = uniform(xs, dtypes.float64)
    w = uniform(ws, dtypes.float64)
    g = conv_geometry(xs, ws, depthwise=False, **a)
    dy = uniform(g.out_shape(a["data_format"]), dtypes.float64)
    if a["data_format"] == "NCHW":
        dy = np.moveaxis(dy, 1, -1)
    fast = K._conv_backprop_input(np, dy, w, g, a["strides"], a["dilations"])
    # groups=1 read as one group of a grouped filter takes the scatter branch.
    cols = (dy.reshape(-1, g.o) @ w.reshape(-1, g.o).T).reshape(
        (g.n,) + g.out_sp + g.k + (g.c,))
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(g.in_sp, g.pads))
    dxp = np.zeros((g.n,) + padded + (g.c,))
    lead = (slice(None),) * (1 + len(g.k))
    for tap, index in K.tap_slices(g.k, g.out_sp, a["strides"], a["dilations"]):
        dxp[index] += cols[lead + tap]
    expected = K.crop_spatial(np, dxp, g.pads, g.in_sp)
    np.testing.assert_allclose(fast, expected, rtol=1e-12, atol=1e-12)
    assert x.shape == xs


@pytest.mark.parametrize("xs,ws,a,gemms", [
    ((2, 6, 5, 8), (3, 3, 8, 4), attrs(2), 8),                      # unit strides, 8 channels
    ((1, 4, 5, 3, 8), (2, 3, 2, 8, 3), attrs(3, padding="VALID"), 11),
    ((2, 6, 5, 3), (3, 3, 3, 4), attrs(2), 0),                      # 3 channels: scatter
    ((2, 7, 7, 8), (3, 3, 8, 4), attrs(2, strides=2), 0),           # strided: scatter
])
def test_input_gradient_path_through_dispatch(monkeypatch, xs, ws, a, gemms):
    # The kernels run through the registry (with eagerflow's numpy backend as xp): the
    # accumulating GEMM must be the path taken there, not only when called with numpy
    # (one per kernel tap after the first, whose product is written straight into dx).
    calls = []
    real = cpu_blas.gemm_accumulate

    def counted(c, x, y):
        calls.append(c.shape)
        real(c, x, y)

    monkeypatch.setattr(cpu_blas, "gemm_accumulate", counted)
    dy = uniform(_dy_shape(xs, ws, a), dtypes.float32)
    w = uniform(ws, dtypes.float32)
    at = dict(a, input_shape=xs)
    got = execute(K.CONV_BACKPROP_INPUT, (ef.constant(dy), ef.constant(w)), at)
    assert len(calls) == gemms
    close(got, K.CONV_BACKPROP_INPUT.reference(dy, w, **at), dtypes.float32)


def test_conv_gradients_through_the_tape_in_function_equal_eager():
    x = ef.constant(uniform((2, 8, 8, 3), dtypes.float32))
    w = ef.Variable(uniform((3, 3, 3, 4), dtypes.float32))

    def loss():
        with ef.GradientTape() as tape:
            y = ef.nn.conv2d(x, w, 1, "SAME")
            out = ef.reduce_sum(y * y)
        return tape.gradient(out, w)

    np.testing.assert_allclose(ef.function(loss)().numpy(), loss().numpy(), rtol=1e-5,
                               atol=1e-5)


# Pooling -------------------------------------------------------------------------------------

def pattrs(nd, ksize, strides=None, padding="VALID", fmt=None, dilations=1):
    return P._attrs(nd, ksize, strides, padding, fmt, dilations)


POOL_CASES = [
    ((2, 6, 6, 3), pattrs(2, 2)),                           # disjoint, exact cover
    ((2, 7, 5, 3), pattrs(2, 2)),                           # disjoint, VALID drops the edge
    ((1, 5, 5, 2), pattrs(2, 2, 2, "SAME")),                # disjoint with padding
    ((1, 7, 7, 2), pattrs(2, 2, 3)),                        # stride > window: gaps
    ((1, 2, 6, 6), pattrs(2, 3, 3, "SAME", "NCHW")),        # channels first
    ((1, 7, 7, 2), pattrs(2, 3, 2, "SAME")),                # overlapping
    ((1, 7, 7, 2), pattrs(2, 2, 1, "SAME", dilations=2)),   # dilation (overlapping)
    ((2, 9, 3), pattrs(1, 3)),                              # 1-D disjoint
    ((1, 4, 4, 4, 2), pattrs(3, 2, 1)),                     # 3-D overlapping
    ((1, 3, 3, 1), pattrs(2, 3)),                           # one window
    ((2, 3, 6, 7), pattrs(2, 2, fmt="NCHW")),               # tiles, channels first, edge
    ((1, 4, 5, 4, 2), pattrs(3, 2)),                        # 3-D tiles, one edge dropped
    ((0, 4, 4, 2), pattrs(2, 2)),                           # empty batch
]


@pytest.fixture
def numpy_kernels(monkeypatch):
    """The numpy pooling kernels at every size (the tests of their forms)."""
    monkeypatch.setattr(cpu_jit, "_setting", [False])


def _pool_out(shape, a):
    return PK.geometry(shape, a).out_shape


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,a", POOL_CASES)
def test_pool_kernels_match_references(shape, a, dtype):
    x = P._values(RNG, shape, dtype)
    x = np.maximum(x, 0).astype(x.dtype)        # zeros after a relu: ties in many windows
    g = uniform(_pool_out(shape, a), dtype)
    h = uniform(shape, dtype)
    for prim, args, at in [(P.MAX_POOL, (x,), a), (P.AVG_POOL, (x,), a),
                           (P.MAX_POOL_GRAD, (x, g), a), (P.MAX_POOL_GRAD_GRAD, (x, h), a),
                           (P.AVG_POOL_GRAD, (g,), dict(a, input_shape=shape))]:
        got = execute(prim, tuple(ef.constant(v) for v in args), at)
        close(got, prim.reference(*args, **at), dtype)


@pytest.mark.parametrize("shape,a", [POOL_CASES[0], POOL_CASES[5]])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_max_pool_grad_keeps_non_finite_gradients_in_their_window(shape, a, bad):
    x = P._values(RNG, shape, dtypes.float64)
    g = uniform(_pool_out(shape, a), dtypes.float64)
    g.reshape(-1)[1] = bad
    got = execute(P.MAX_POOL_GRAD, (ef.constant(x), ef.constant(g)), a).numpy()
    expected = P.MAX_POOL_GRAD.reference(x, g, **a)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    h = uniform(shape, dtypes.float64)
    h.reshape(-1)[:3] = bad
    got = execute(P.MAX_POOL_GRAD_GRAD, (ef.constant(x), ef.constant(h)), a).numpy()
    np.testing.assert_array_equal(got, P.MAX_POOL_GRAD_GRAD.reference(x, h, **a))


def test_max_pool_grad_nan_input_routes_to_the_first_nan():
    x = np.array([[1.0, 2.0], [np.nan, np.nan]]).reshape(1, 2, 2, 1)
    a = pattrs(2, 2)
    got = execute(P.MAX_POOL_GRAD, (ef.constant(x), ef.constant(np.ones((1, 1, 1, 1)))), a)
    np.testing.assert_array_equal(got.numpy().ravel(), [0.0, 0.0, 1.0, 0.0])


@pytest.mark.parametrize("shape,a", [c for c in POOL_CASES if PK._tiles(
    PK.geometry(c[0], c[1]), c[1])] + [((64, 26, 26, 32), pattrs(2, 2)),
                                       ((64, 11, 11, 64), pattrs(2, 2))])
@pytest.mark.parametrize("bad", [None, np.nan, np.inf])
@pytest.mark.parametrize("ties", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.usefixtures("numpy_kernels")
def test_tiled_max_pool_grad_equals_the_per_tap_form(monkeypatch, shape, a, bad, ties, dtype):
    # Windows that tile the input take the one-mask form; the per-tap form (which handles
    # every geometry) must give the same bits, on one thread and on several, in blocks of
    # one example and of many, with ties (the tie rule runs) and with distinct values (it
    # is skipped), in every float dtype.
    from eagerflow.backend import cpu_threads

    if dtype is not dtypes.float32 and np.prod(shape) > 1 << 16:
        pytest.skip("the large shapes run in float32")
    x = P._values(RNG, shape, dtype)
    if ties:
        x = np.maximum(x, 0).astype(x.dtype)    # zeros after a relu: ties in many windows
    g = uniform(_pool_out(shape, a), dtype)
    if bad is not None and g.size:
        g.reshape(-1)[-1] = bad
        x.reshape(-1)[-1] = np.nan
    args = (ef.constant(x), ef.constant(g))
    outs = []
    monkeypatch.setattr(PK, "TILED_CHANNELS_FIRST", True)
    monkeypatch.setattr(PK, "POOL_MIN_ELEMENTS", 1)     # several threads split any size
    tiled_calls = []
    real = PK._tiled_max_pool_grad
    monkeypatch.setattr(PK, "_tiled_max_pool_grad",
                        lambda *args: (tiled_calls.append(1), real(*args))[1])
    try:
        for n in (1, 2):
            cpu_threads.set_threads(n)
            outs.append(execute(P.MAX_POOL_GRAD, args, a).numpy())
        monkeypatch.setattr(PK, "TILED_BLOCK_ELEMENTS", 1)
        outs.append(execute(P.MAX_POOL_GRAD, args, a).numpy())
        assert tiled_calls or not x.size
        monkeypatch.setattr(PK, "_tiles", lambda g, attrs: False)
        per_tap = execute(P.MAX_POOL_GRAD, args, a).numpy()
    finally:
        cpu_threads.set_threads(0)
    for out in outs:
        np.testing.assert_array_equal(out.view(np.uint8), per_tap.view(np.uint8))


@pytest.mark.parametrize("shape,a", POOL_CASES + [((64, 26, 26, 32), pattrs(2, 2)),
                                                  ((3, 7, 9, 5), pattrs(2, 2))])
@pytest.mark.parametrize("bad", [None, np.nan, np.inf])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.usefixtures("numpy_kernels")
def test_max_pool_grad_with_output_is_max_pool_grad(monkeypatch, shape, a, bad, dtype):
    # MaxPoolGradWithOutput(x, MaxPool(x), g) (the remapping pass's node, whose tiled form
    # reads the maxima) gives MaxPoolGrad's bits, with ties, NaN inputs and non-finite
    # gradients, on one thread and on several.
    from eagerflow.backend import cpu_threads
    from eagerflow.ops.nn.pool_ops import MAX_POOL_GRAD_WITH_OUTPUT

    if dtype is not dtypes.float32 and np.prod(shape) > 1 << 16:
        pytest.skip("the large shapes run in float32")
    x = P._values(RNG, shape, dtype)
    x = np.where(x < -0.25, x, np.maximum(x, 0)).astype(x.dtype)   # ties and negatives
    g = uniform(_pool_out(shape, a), dtype)
    if bad is not None and g.size:
        g.reshape(-1)[::7] = bad
        x.reshape(-1)[::11] = np.nan
    xt, gt = ef.constant(x), ef.constant(g)
    pooled = execute(P.MAX_POOL, (xt,), a)
    expected = execute(P.MAX_POOL_GRAD, (xt, gt), a).numpy()
    monkeypatch.setattr(PK, "POOL_MIN_ELEMENTS", 1)
    try:
        for n in (1, 2):
            cpu_threads.set_threads(n)
            got = execute(MAX_POOL_GRAD_WITH_OUTPUT, (xt, pooled, gt), a).numpy()
            np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    finally:
        cpu_threads.set_threads(0)


def test_pool_gradients_in_function_equal_eager():
    x0 = ef.constant(P._values(RNG, (2, 8, 8, 3), dtypes.float32))

    def grads(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.nn.max_pool2d(x, 2, 2, "VALID") + ef.nn.avg_pool2d(x, 3, 2, "SAME")[:, :4]
            out = ef.reduce_sum(y * y)
        return tape.gradient(out, x)

    np.testing.assert_array_equal(ef.function(grads)(x0).numpy(), grads(x0).numpy())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,a", POOL_CASES + [((64, 26, 26, 32), pattrs(2, 2)),
                                                  ((3, 12, 13, 8), pattrs(2, 2))])
@pytest.mark.parametrize("bad", [None, np.nan, np.inf])
@pytest.mark.usefixtures("numpy_kernels")
def test_max_pool_grad_with_relu_is_the_pair_bit_for_bit(monkeypatch, shape, a, dtype, bad):
    # MaxPoolGrad(x, g, relu=True) (the remapping pass's node) gives the bits of
    # ReluGrad(MaxPoolGrad(x, g), x), on the tiled and per-tap paths, with ties (zeros of a
    # relu), non-finite gradients and NaN inputs, on one thread and on several.
    from eagerflow.backend import cpu_threads
    from eagerflow.ops.nn.activation_ops import RELU_GRAD

    x = P._values(RNG, shape, dtype)
    x = np.where(x < -0.25, x, np.maximum(x, 0)).astype(x.dtype)   # ties and negatives
    g = uniform(_pool_out(shape, a), dtype)
    if bad is not None and g.size:
        g.reshape(-1)[::7] = bad
        x.reshape(-1)[::11] = np.nan
    args = (ef.constant(x), ef.constant(g))
    pair = execute(RELU_GRAD, (execute(P.MAX_POOL_GRAD, args, a), args[0])).numpy()
    expected = P.MAX_POOL_GRAD.reference(x, g, relu=True, **a)
    if bad is None:
        close(ef.constant(pair), expected, dtype)
    monkeypatch.setattr(PK, "TILED_CHANNELS_FIRST", True)
    monkeypatch.setattr(PK, "POOL_MIN_ELEMENTS", 1)     # several threads split any size
    tiles = PK._tiles
    for tiled in (True, False):
        monkeypatch.setattr(PK, "_tiles", tiles if tiled else lambda g, attrs: False)
        try:
            for n in (1, 2):
                cpu_threads.set_threads(n)
                got = execute(P.MAX_POOL_GRAD, args, dict(a, relu=True)).numpy()
                np.testing.assert_array_equal(got.view(np.uint8), pair.view(np.uint8))
        finally:
            cpu_threads.set_threads(0)


def test_relu_max_pool_gradient_is_remapped_and_equals_eager():
    # relu -> max_pool differentiates into ReluGrad(MaxPoolGrad(x, g), x); the optimized
    # graph computes it as one MaxPoolGrad node, with eager's bits, and its second-order
    # gradient (through the relu attr's rule) matches the pair's.
    from eagerflow.function import passes

    x0 = ef.constant(uniform((4, 12, 12, 3), dtypes.float32))
    w = ef.constant(uniform((3, 3, 3, 4), dtypes.float32))

    def grads(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            h = ef.nn.relu(ef.nn.conv2d(x, w, 1, "SAME"))
            y = ef.nn.max_pool2d(h, 2, 2, "VALID")
            out = ef.reduce_sum(y * y)
        # h read by another output: the pass that pools before the relu does not apply.
        return tape.gradient(out, x), h[:, :1]

    traced = ef.function(grads)
    graph = passes.optimize(traced.get_concrete_function(ef.TensorSpec([4, 12, 12, 3])).graph)
    ops = [n.op for n in graph.nodes]
    assert "ReluGrad" not in ops
    assert any(n.op == "MaxPoolGrad" and n.attrs.get("relu") for n in graph.nodes)
    np.testing.assert_array_equal(traced(x0)[0].numpy(), grads(x0)[0].numpy())

    # The rule of MaxPoolGrad with relu: the pair's gradient in both inputs.
    x = ef.constant(np.maximum(P._values(RNG, (2, 6, 6, 2), dtypes.float64), -0.1))
    g = ef.constant(uniform((2, 3, 3, 2), dtypes.float64))
    h = ef.constant(uniform((2, 6, 6, 2), dtypes.float64))
    a = pattrs(2, 2)
    from eagerflow.ops.nn.activation_ops import RELU_GRAD

    with ef.GradientTape() as tape:
        tape.watch(g)
        fused = ef.reduce_sum(execute(P.MAX_POOL_GRAD, (x, g), dict(a, relu=True)) * h)
    with ef.GradientTape() as tape2:
        tape2.watch(g)
        pair = ef.reduce_sum(execute(RELU_GRAD, (execute(P.MAX_POOL_GRAD, (x, g), a), x)) * h)
    np.testing.assert_array_equal(fused.numpy(), pair.numpy())
    np.testing.assert_allclose(tape.gradient(fused, g).numpy(), tape2.gradient(pair, g).numpy(),
                               rtol=1e-12, atol=1e-12)


# MaxPool(Relu(c + b)) -> Relu(MaxPool(c) + b) --------------------------------------------

def _bias_relu_pool_loss(fmt, nd, ksize, stride, padding):
    """loss(x, w, b) of conv -> bias -> relu -> max pool, weighted by a fixed h."""
    conv = {1: ef.nn.conv1d, 2: ef.nn.conv2d}[nd]

    def loss(x, w, b, h):
        c = conv(x, w, 1, "SAME", data_format=fmt)
        y = ef.nn.relu(ef.nn.bias_add(c, b, data_format=fmt))
        p = ef.nn.max_pool(y, ksize, stride, padding, data_format=fmt)
        return ef.reduce_sum(p * h), p
    return loss


# (x shape, channels-last filter shape, data format, ksize, stride, padding)
BIAS_POOL_CASES = [
    ((3, 8, 8, 2), (3, 3, 2, 4), "NHWC", 2, 2, "VALID"),      # tiles
    ((2, 7, 9, 2), (3, 3, 2, 3), "NHWC", 2, 2, "VALID"),      # VALID drops an edge
    ((2, 7, 7, 2), (3, 3, 2, 3), "NHWC", 3, 2, "SAME"),       # overlapping, padded
    ((2, 9, 9, 2), (3, 3, 2, 3), "NHWC", 2, 3, "VALID"),      # stride larger than window
    ((1, 2, 6, 6), (3, 3, 2, 3), "NCHW", 2, 2, "SAME"),       # channels first, batch 1
    ((2, 10, 3), (3, 3, 4), "NWC", 3, 2, "VALID"),            # 1-D
    ((0, 6, 6, 2), (3, 3, 2, 3), "NHWC", 2, 2, "VALID"),      # empty batch
]


def _bias_pool_args(xs, ws, fmt, ksize, stride, padding, dtype, seed=0):
    rng = np.random.default_rng(seed)
    nd = len(xs) - 2
    loss = _bias_relu_pool_loss(fmt, nd, ksize, stride, padding)
    x = rng.uniform(-1, 1, xs).astype(dtype.np_dtype)
    w = rng.uniform(-1, 1, ws).astype(dtype.np_dtype)
    b = rng.uniform(-0.5, 0.5, ws[-1]).astype(dtype.np_dtype)
    p_shape = loss(ef.constant(x), ef.constant(w), ef.constant(b), 1.0)[1].shape
    h = rng.uniform(-1, 1, tuple(p_shape)).astype(dtype.np_dtype)
    return loss, [ef.constant(v) for v in (x, w, b, h)]


def _grads_of(loss):
    def grads(x, w, b, h):
        with ef.GradientTape() as tape:
            tape.watch([x, w, b])
            out, p = loss(x, w, b, h)
        return (out, p) + tuple(tape.gradient(out, [x, w, b]))
    return grads


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("xs,ws,fmt,ksize,stride,padding", BIAS_POOL_CASES)
def test_pool_before_bias_relu_rewrite_equals_eager(xs, ws, fmt, ksize, stride, padding,
                                                    dtype):
    # The optimized graph pools the convolution before the bias and the relu; the pooled
    # values keep eager's bits, the gradients agree within the dtype's tolerance.
    from eagerflow.function import passes

    loss, args = _bias_pool_args(xs, ws, fmt, ksize, stride, padding, dtype)
    grads = _grads_of(loss)
    traced = ef.function(grads)
    graph = passes.optimize(traced.get_concrete_function(*args).graph)
    pools = [n for n in graph.nodes
             if n.op in ("MaxPool", "MaxPoolGrad", "MaxPoolGradWithOutput")]
    assert [n.inputs[0][0].op for n in pools] == ["Conv", "Conv"]
    # Windows that tile a channels-last input: the gradient reads the forward's maxima.
    tiles = fmt[-1] == "C" and ksize == stride and padding == "VALID"
    grad_op = "MaxPoolGradWithOutput" if tiles else "MaxPoolGrad"
    assert pools[1].op == grad_op
    if tiles:
        assert pools[1].inputs[1][0] is pools[0]
    # Only the convolution and the pooling gradient are left at the convolution's size.
    full = pools[1].avals[0].shape
    assert {n.op for n in graph.nodes if n.avals and n.avals[0].shape == full} == \
        {"Conv", grad_op}
    forward = ef.function(lambda *a: loss(*a)[1])
    graph = passes.optimize(forward.get_concrete_function(*args).graph)
    assert next(n for n in graph.nodes if n.op == "MaxPool").inputs[0][0].op == "Conv"
    np.testing.assert_array_equal(forward(*args).numpy(), loss(*args)[1].numpy())
    got, expected = traced(*args), grads(*args)
    np.testing.assert_array_equal(got[1].numpy().view(np.uint8),
                                  expected[1].numpy().view(np.uint8))
    for a, e in zip(got[2:], expected[2:]):
        close(a, e.numpy(), dtype)


def test_pool_before_bias_relu_gradient_is_the_finite_difference():
    # float64 gradient of the rewritten graph against central differences along a random
    # direction of (x, w, b).
    loss, (x, w, b, h) = _bias_pool_args((2, 7, 7, 2), (3, 3, 2, 3), "NHWC", 3, 2, "SAME",
                                         dtypes.float64, seed=3)
    traced = ef.function(_grads_of(loss))
    f = ef.function(lambda x, w, b: loss(x, w, b, h)[0])
    _, _, dx, dw, db = traced(x, w, b, h)
    rng = np.random.default_rng(4)
    vs = [rng.standard_normal(t.shape) for t in (x, w, b)]
    eps = 1e-6
    plus = f(*[ef.constant(t.numpy() + eps * v) for t, v in zip((x, w, b), vs)]).numpy()
    minus = f(*[ef.constant(t.numpy() - eps * v) for t, v in zip((x, w, b), vs)]).numpy()
    directional = sum(float(np.sum(g.numpy() * v)) for g, v in zip((dx, dw, db), vs))
    np.testing.assert_allclose((plus - minus) / (2 * eps), directional, rtol=1e-6)


def test_pool_before_bias_relu_with_an_unknown_batch_size():
    # Traced for any batch size (a None dimension): still rewritten, same results.
    from eagerflow.function import passes

    loss, (x, w, b, h) = _bias_pool_args((4, 8, 8, 2), (3, 3, 2, 4), "NHWC", 2, 2, "VALID",
                                         dtypes.float32, seed=6)
    grads = _grads_of(loss)
    spec = [ef.TensorSpec([None, 8, 8, 2]), ef.TensorSpec([3, 3, 2, 4]), ef.TensorSpec([4]),
            ef.TensorSpec([None, 4, 4, 4])]
    traced = ef.function(grads, input_signature=spec)
    graph = passes.optimize(traced.get_concrete_function().graph)
    assert next(n for n in graph.nodes if n.op == "MaxPool").inputs[0][0].op == "Conv"
    for a, e in zip(traced(x, w, b, h), grads(x, w, b, h)):
        close(a, e.numpy(), dtypes.float32)


@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.float32], ids=lambda d: d.name)
def test_pool_before_relu_without_bias_keeps_the_bits(dtype):
    # max_pool(relu(c)) -> relu(max_pool(c)): the window maxima sit at the same elements
    # (ties included), so values and gradients are eager's bits.
    from eagerflow.function import passes

    rng = np.random.default_rng(5)
    x = ef.constant(rng.uniform(-1, 1, (3, 9, 9, 2)).astype(dtype.np_dtype))
    w = ef.constant(rng.uniform(-1, 1, (3, 3, 2, 4)).astype(dtype.np_dtype))

    def grads(x, w):
        with ef.GradientTape() as tape:
            tape.watch([x, w])
            p = ef.nn.max_pool2d(ef.nn.relu(ef.nn.conv2d(x, w, 1, "SAME")), 3, 2, "VALID")
            out = ef.reduce_sum(p * p)
        return [p] + tape.gradient(out, [x, w])

    traced = ef.function(grads)
    graph = passes.optimize(traced.get_concrete_function(x, w).graph)
    assert next(n for n in graph.nodes if n.op == "MaxPool").inputs[0][0].op == "Conv"
    for a, e in zip(traced(x, w), grads(x, w)):
        np.testing.assert_array_equal(a.numpy().view(np.uint8), e.numpy().view(np.uint8))


def test_pool_before_bias_relu_rewrite_needs_its_conditions():
    # Not rewritten: a bias that varies over the window, a relu output read elsewhere.
    from eagerflow.function import passes

    x = ef.constant(uniform((2, 6, 6, 3), dtypes.float32))
    w = ef.constant(uniform((3, 3, 3, 4), dtypes.float32))
    per_column = ef.constant(uniform((6, 4), dtypes.float32))

    def spatial_bias(x):
        c = ef.nn.conv2d(x, w, 1, "SAME")
        return ef.nn.max_pool2d(ef.nn.relu(c + per_column), 2, 2, "VALID")

    def relu_read_twice(x):
        y = ef.nn.relu(ef.nn.conv2d(x, w, 1, "SAME") + per_column[0])
        return ef.nn.max_pool2d(y, 2, 2, "VALID"), ef.reduce_sum(y)

    for fn in (spatial_bias, relu_read_twice):
        traced = ef.function(fn)
        graph = passes.optimize(traced.get_concrete_function(x).graph)
        pool = next(n for n in graph.nodes if n.op == "MaxPool")
        assert pool.inputs[0][0].op != "Conv"
        for a, e in zip(ef.nest.flatten(traced(x)), ef.nest.flatten(fn(x))):
            np.testing.assert_array_equal(a.numpy(), e.numpy())
