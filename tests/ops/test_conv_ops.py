"""Convolutions against a loop-per-output-position numpy reference written here.

The reference computes TF's padding from the documented formula and reads the input with
explicit bounds checks (no padded arrays, no window views), so it shares no code with the
kernels. Transposed convolutions are checked as adjoints, gradients by finite differences
in float64 (including the gradients of the gradient primitives, i.e. second order).
"""

import itertools

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.testing import check_vjp
from eagerflow.ops import nn as nn_family
from eagerflow.ops.nn import conv_kernels
from eagerflow.ops.nn import conv_public
from eagerflow.ops.nn import window_geometry
from tests.ops.family_view import family_view

# The nn family as one namespace: its modules' names, __all__ and EXPORTS.
C = family_view(nn_family, (conv_public, window_geometry, conv_kernels,))

RNG = np.random.default_rng(20240611)
TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12),
       np.float16: dict(rtol=1e-2, atol=1e-2)}
FIRST = {"NCW", "NCHW", "NCDHW"}


def rand(*shape, dtype=np.float64):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype)


def check(got, expected, dtype=np.float64):
    got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    assert got.shape == expected.shape
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), expected, **TOL[dtype])


# References ---------------------------------------------------------------------------------

def geometry(size, k, stride, dilation, padding, axis):
    """(out size, pad before) from TF's rules."""
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        out = -(-size // stride)
        return out, max((out - 1) * stride + eff - size, 0) // 2
    lo, hi = (0, 0) if padding == "VALID" else padding[axis]
    return (size + lo + hi - eff) // stride + 1, lo


def ref_conv(x, w, strides, padding, dilations, data_format=None):
    """Grouped N-D convolution; x channels last unless data_format is channels first."""
    if data_format in FIRST:
        x = np.moveaxis(x, 1, -1)
    nd = x.ndim - 2
    n, sizes, c = x.shape[0], x.shape[1:-1], x.shape[-1]
    ks, cg, o = w.shape[:nd], w.shape[nd], w.shape[-1]
    groups = c // cg
    og = o // groups
    geo = [geometry(sizes[i], ks[i], strides[i], dilations[i], padding, i) for i in range(nd)]
    y = np.zeros((n,) + tuple(g[0] for g in geo) + (o,))
    for pos in itertools.product(*[range(g[0]) for g in geo]):
        for tap in itertools.product(*[range(k) for k in ks]):
            coords = [pos[i] * strides[i] - geo[i][1] + tap[i] * dilations[i] for i in range(nd)]
            if any(not 0 <= cc < sizes[i] for i, cc in enumerate(coords)):
                continue
            xv = x[(slice(None),) + tuple(coords)]
            for grp in range(groups):
                y[(slice(None),) + pos + (slice(grp * og, (grp + 1) * og),)] += (
                    xv[:, grp * cg:(grp + 1) * cg] @ w[tap][:, grp * og:(grp + 1) * og])
    return np.moveaxis(y, -1, 1) if data_format in FIRST else y


def ref_conv_transpose(dy, w, in_shape, strides, padding, dilations):
    """Scatter form of the transposed convolution (channels last, one group)."""
    nd = dy.ndim - 2
    ks = w.shape[:nd]
    sizes = in_shape[1:-1]
    geo = [geometry(sizes[i], ks[i], strides[i], dilations[i], padding, i) for i in range(nd)]
    dx = np.zeros(in_shape)
    for pos in itertools.product(*[range(g[0]) for g in geo]):
        for tap in itertools.product(*[range(k) for k in ks]):
            coords = [pos[i] * strides[i] - geo[i][1] + tap[i] * dilations[i] for i in range(nd)]
            if all(0 <= cc < sizes[i] for i, cc in enumerate(coords)):
                dx[(slice(None),) + tuple(coords)] += dy[(slice(None),) + pos] @ w[tap].T
    return dx


def ref_depthwise(x, w, strides, padding, dilations):
    """out[..., c * M + m] = sum over taps of x[..., c] * w[tap][c, m] (NHWC)."""
    n, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    (oh, lo_h), (ow, lo_w) = (geometry(h, kh, strides[0], dilations[0], padding, 0),
                              geometry(wd, kw, strides[1], dilations[1], padding, 1))
    y = np.zeros((n, oh, ow, c * m))
    for i, j, a, b in itertools.product(range(oh), range(ow), range(kh), range(kw)):
        r, s = i * strides[0] - lo_h + a * dilations[0], j * strides[1] - lo_w + b * dilations[1]
        if 0 <= r < h and 0 <= s < wd:
            for ch in range(c):
                y[:, i, j, ch * m:(ch + 1) * m] += x[:, r, s, ch:ch + 1] * w[a, b, ch]
    return y


# Forward ------------------------------------------------------------------------------------

CONV2D_CASES = [
    # (input shape NHWC, filter shape, strides, padding, dilations)
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), "VALID", (1, 1)),
    ((1, 7, 6, 2), (3, 2, 2, 3), (2, 2), "SAME", (1, 1)),
    ((1, 8, 8, 2), (2, 2, 2, 3), (2, 2), "SAME", (1, 1)),    # even: no padding
    ((1, 6, 6, 1), (4, 4, 1, 1), (1, 1), "SAME", (1, 1)),    # odd pad total: extra at end
    ((1, 7, 9, 2), (3, 3, 2, 2), (2, 3), "VALID", (1, 1)),
    ((1, 9, 9, 2), (3, 3, 2, 2), (1, 1), "SAME", (2, 3)),
    ((1, 9, 8, 2), (3, 2, 2, 2), (2, 2), "SAME", (2, 2)),    # dilation and stride
    ((1, 5, 6, 2), (3, 3, 2, 2), (1, 2), ((1, 2), (0, 3)), (1, 1)),
    ((1, 4, 4, 4), (3, 3, 2, 6), (1, 1), "SAME", (1, 1)),    # grouped (2 groups)
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,strides,padding,dil", CONV2D_CASES)
def test_conv2d_matches_reference(xs, ws, strides, padding, dil, dtype):
    x, w = rand(*xs, dtype=dtype), rand(*ws, dtype=dtype)
    got = C.conv2d(ef.constant(x), ef.constant(w), list(strides), padding, dilations=list(dil))
    check(got, ref_conv(x.astype(np.float64), w.astype(np.float64), strides, padding, dil),
          dtype)


@pytest.mark.parametrize("xs,ws,strides,padding,dil", CONV2D_CASES[:6])
def test_conv2d_nchw_matches_nhwc(xs, ws, strides, padding, dil):
    x, w = rand(*xs), rand(*ws)
    xt = np.ascontiguousarray(np.moveaxis(x, -1, 1))
    got = C.conv2d(xt, w, [1, 1] + list(strides), padding, data_format="NCHW",
                   dilations=[1, 1] + list(dil))
    check(got, ref_conv(xt, w, strides, padding, dil, "NCHW"))


def test_conv2d_explicit_padding_in_data_format_order():
    x, w = rand(1, 5, 6, 2), rand(3, 3, 2, 2)
    pads = ((1, 2), (0, 3))
    got = C.conv2d(x, w, 1, [[0, 0], [1, 2], [0, 3], [0, 0]])
    check(got, ref_conv(x, w, (1, 1), pads, (1, 1)))
    xt = np.moveaxis(x, -1, 1)
    got = C.conv2d(xt, w, 1, [[0, 0], [0, 0], [1, 2], [0, 3]], data_format="NCHW")
    check(got, ref_conv(xt, w, (1, 1), pads, (1, 1), "NCHW"))


@pytest.mark.parametrize("xs,ws,stride,padding,dil,fmt", [
    ((2, 9, 3), (3, 3, 2), 2, "SAME", 1, "NWC"),
    ((2, 9, 3), (2, 3, 2), 1, "VALID", 3, "NWC"),
    ((1, 3, 8), (4, 3, 2), 3, "SAME", 1, "NCW"),
])
def test_conv1d(xs, ws, stride, padding, dil, fmt):
    x, w = rand(*xs), rand(*ws)
    got = C.conv1d(x, w, stride, padding, data_format=fmt, dilations=dil)
    check(got, ref_conv(x, w, (stride,), padding, (dil,), fmt))


@pytest.mark.parametrize("xs,ws,strides,padding,dil,fmt", [
    ((1, 4, 5, 3, 2), (2, 3, 2, 2, 3), (1, 2, 1), "SAME", (1, 1, 1), "NDHWC"),
    ((1, 5, 4, 4, 2), (2, 2, 2, 2, 2), (2, 1, 2), "VALID", (1, 2, 1), "NDHWC"),
    ((1, 2, 4, 3, 5), (3, 2, 2, 2, 2), (1, 1, 2), "SAME", (1, 1, 1), "NCDHW"),
])
def test_conv3d(xs, ws, strides, padding, dil, fmt):
    x, w = rand(*xs), rand(*ws)
    full = [1, 1] + list(strides) if fmt in FIRST else [1] + list(strides) + [1]
    got = C.conv3d(x, w, full, padding, data_format=fmt, dilations=list(dil))
    check(got, ref_conv(x, w, strides, padding, dil, fmt))


def test_convolution_infers_rank_and_format():
    x1, w1 = rand(2, 7, 3), rand(3, 3, 4)
    check(C.convolution(x1, w1, padding="SAME"), ref_conv(x1, w1, (1,), "SAME", (1,)))
    x2, w2 = rand(1, 3, 6, 5), rand(2, 2, 3, 2)
    check(C.convolution(x2, w2, strides=2, padding="VALID", data_format="NCHW"),
          ref_conv(x2, w2, (2, 2), "VALID", (1, 1), "NCHW"))
    x3, w3 = rand(1, 3, 3, 3, 1), rand(2, 2, 2, 1, 2)
    check(C.convolution(x3, w3, dilations=[1, 2, 1], padding="SAME"),
          ref_conv(x3, w3, (1, 1, 1), "SAME", (1, 2, 1)))


def test_atrous_conv2d_is_dilated_conv():
    x, w = rand(1, 7, 7, 2), rand(3, 3, 2, 3)
    check(C.atrous_conv2d(x, w, 2, "SAME"), ref_conv(x, w, (1, 1), "SAME", (2, 2)))


def test_float16_keeps_dtype_and_is_close():
    x, w = rand(1, 6, 6, 3, dtype=np.float16), rand(3, 3, 3, 4, dtype=np.float16)
    got = C.conv2d(x, w, 1, "SAME")
    check(got, ref_conv(x.astype(np.float64), w.astype(np.float64), (1, 1), "SAME", (1, 1)),
          np.float16)


def test_empty_batch_and_python_inputs():
    out = C.conv2d(np.zeros((0, 5, 5, 3), np.float32), np.ones((3, 3, 3, 2), np.float32), 2,
                   "SAME")
    assert out.shape.as_list() == [0, 3, 3, 2] and out.dtype == ef.float32
    got = C.conv1d([[[1.0], [2.0], [3.0]]], [[[1.0]], [[1.0]]], 1, "VALID")
    np.testing.assert_array_equal(got.numpy().ravel(), [3.0, 5.0])


# Transposed and depthwise ---------------------------------------------------------------------

TRANSPOSE_CASES = [
    # (x shape NHWC, filter [kh, kw, C, O], strides, padding, dilations)
    ((2, 6, 5, 3), (3, 3, 3, 4), (2, 2), "SAME", (1, 1)),
    ((1, 7, 7, 2), (3, 3, 2, 3), (2, 2), "VALID", (1, 1)),   # last row/col never read
    ((1, 6, 6, 2), (3, 2, 2, 2), (1, 2), "SAME", (2, 1)),
    ((1, 5, 6, 2), (2, 3, 2, 2), (2, 1), ((1, 0), (2, 1)), (1, 1)),
    ((1, 4, 4, 4), (3, 3, 2, 6), (1, 1), "SAME", (1, 1)),    # grouped
]


@pytest.mark.parametrize("xs,ws,strides,padding,dil", TRANSPOSE_CASES)
def test_conv2d_transpose_is_adjoint_of_conv2d(xs, ws, strides, padding, dil):
    x, w = rand(*xs), rand(*ws)
    y = C.conv2d(x, w, list(strides), padding, dilations=list(dil))
    v = rand(*y.shape.as_list())
    xt = C.conv2d_transpose(v, w, list(xs), list(strides), padding, dilations=list(dil))
    assert xt.shape.as_list() == list(xs)
    lhs = float(np.sum(y.numpy() * v))
    rhs = float(np.sum(x * xt.numpy()))
    assert abs(lhs - rhs) <= 1e-10 * max(1.0, abs(lhs))
    if ws[2] == xs[3]:
        check(xt, ref_conv_transpose(v, w, xs, strides, padding, dil))


def test_conv_transpose_1d_3d_nchw_and_spatial_output_shape():
    x, w = rand(2, 7, 3), rand(3, 3, 2)
    y = C.conv1d(x, w, 2, "SAME")
    v = rand(*y.shape.as_list())
    got = C.conv1d_transpose(v, w, [7], 2)             # spatial sizes only
    check(got, ref_conv_transpose(v, w, x.shape, (2,), "SAME", (1,)))
    x3, w3 = rand(1, 4, 3, 5, 2), rand(2, 2, 3, 2, 3)
    y3 = C.conv3d(x3, w3, 2, "SAME")
    v3 = rand(*y3.shape.as_list())
    got3 = C.conv3d_transpose(v3, w3, x3.shape, [1, 2, 2, 2, 1])
    check(got3, ref_conv_transpose(v3, w3, x3.shape, (2, 2, 2), "SAME", (1, 1, 1)))
    xc = np.moveaxis(x3, -1, 1)
    vc = np.moveaxis(v3, -1, 1)
    gotc = C.conv_transpose(vc, w3, xc.shape, 2, data_format="NCDHW")
    check(gotc, np.moveaxis(got3.numpy(), -1, 1))
    gen = C.conv_transpose(ef.constant(v), w, ef.constant([2, 7, 3]), 2, "SAME")
    check(gen, got.numpy())


@pytest.mark.parametrize("xs,ws,strides,padding,dil", [
    ((2, 5, 5, 3), (3, 3, 3, 2), (1, 1), "SAME", (1, 1)),
    ((1, 7, 6, 2), (3, 2, 2, 1), (2, 2), "VALID", (1, 1)),
    ((1, 6, 7, 3), (3, 3, 3, 1), (1, 2), "SAME", (2, 1)),
    ((1, 5, 5, 2), (2, 2, 2, 3), (2, 1), ((1, 1), (0, 1)), (1, 1)),
])
def test_depthwise_conv2d(xs, ws, strides, padding, dil):
    x, w = rand(*xs), rand(*ws)
    full_pad = padding if isinstance(padding, str) else [[0, 0], *padding, [0, 0]]
    got = C.depthwise_conv2d(x, w, [1, *strides, 1], full_pad, dilations=list(dil))
    expected = ref_depthwise(x, w, strides, padding, dil)
    check(got, expected)
    nchw = C.depthwise_conv2d(np.moveaxis(x, -1, 1), w, strides, padding, data_format="NCHW",
                              dilations=dil)
    check(nchw, np.moveaxis(expected, -1, 1))
    # The backprop functions are the adjoints of the forward one.
    v = rand(*expected.shape)
    dx = C.depthwise_conv2d_backprop_input(list(xs), w, v, strides, padding, dilations=dil)
    assert abs(np.sum(expected * v) - np.sum(x * dx.numpy())) < 1e-10
    dw = C.depthwise_conv2d_backprop_filter(x, list(ws), v, strides, padding, dilations=dil)
    assert abs(np.sum(expected * v) - np.sum(w * dw.numpy())) < 1e-10


def test_separable_conv2d_is_depthwise_then_pointwise():
    x, dw, pw = rand(2, 6, 6, 3), rand(3, 3, 3, 2), rand(1, 1, 6, 4)
    got = C.separable_conv2d(x, dw, pw, [1, 2, 2, 1], "SAME")
    mid = ref_depthwise(x, dw, (2, 2), "SAME", (1, 1))
    check(got, ref_conv(mid, pw, (1, 1), "VALID", (1, 1)))
    with pytest.raises(errors.InvalidArgumentError, match="pointwise_filter"):
        C.separable_conv2d(x, dw, rand(3, 3, 6, 4), 1, "SAME")


# Gradients -----------------------------------------------------------------------------------

GRAD_CASES = [
    ((1, 5, 4, 2), (3, 3, 2, 2), C._attrs(2, strides=(2, 1))),
    ((1, 6, 6, 2), (2, 3, 2, 3), C._attrs(2, padding="VALID", dilations=(2, 1))),
    ((1, 2, 5, 4), (3, 2, 2, 2), C._attrs(2, padding=((1, 1), (0, 2)), data_format="NCHW")),
    ((2, 7, 2), (3, 2, 2), C._attrs(1, strides=2)),
    ((1, 3, 3, 3, 1), (2, 2, 2, 1, 2), C._attrs(3)),
    ((1, 4, 4, 4), (3, 3, 2, 2), C._attrs(2)),              # grouped
]


@pytest.mark.parametrize("xs,ws,attrs", GRAD_CASES)
def test_gradients_first_and_second_order(xs, ws, attrs):
    x, w = rand(*xs), rand(*ws)
    ys = C.conv_geometry(xs, ws, depthwise=False, **attrs).out_shape(attrs["data_format"])
    dy = rand(*ys)
    check_vjp(C.CONV, (x, w), attrs)
    # The gradient primitives' own gradients (second order of the convolution).
    check_vjp(C.CONV_BACKPROP_INPUT, (dy, w), dict(attrs, input_shape=xs))
    check_vjp(C.CONV_BACKPROP_FILTER, (x, dy), dict(attrs, filter_shape=ws))


@pytest.mark.parametrize("xs,ws,attrs", [
    ((1, 5, 5, 3), (3, 3, 3, 2), C._attrs(2, strides=2)),
    ((1, 2, 5, 4), (2, 3, 2, 1), C._attrs(2, dilations=(1, 2), data_format="NCHW")),
])
def test_depthwise_gradients(xs, ws, attrs):
    x, w = rand(*xs), rand(*ws)
    ys = C.conv_geometry(xs, ws, depthwise=True, **attrs).out_shape(attrs["data_format"])
    dy = rand(*ys)
    check_vjp(C.DEPTHWISE_CONV, (x, w), attrs)
    check_vjp(C.DEPTHWISE_BACKPROP_INPUT, (dy, w), dict(attrs, input_shape=xs))
    check_vjp(C.DEPTHWISE_BACKPROP_FILTER, (x, dy), dict(attrs, filter_shape=ws))


def test_tape_gradient_and_second_order():
    from eagerflow.ops.reduce import reductions

    x, w = ef.constant(rand(1, 5, 5, 2)), ef.constant(rand(3, 3, 2, 2))
    with ef.GradientTape() as outer:
        outer.watch(w)
        with ef.GradientTape() as inner:
            inner.watch(x)
            y = C.conv2d(x, w, 2, "SAME")
            loss = reductions.reduce_sum(y * y)
        gx = inner.gradient(loss, x)
        penalty = reductions.reduce_sum(gx * gx)
    gw = outer.gradient(penalty, w)
    # d loss / dx = conv2d_transpose(2 y); checked against the public transpose.
    check(gx, C.conv2d_transpose(2.0 * y, w, x.shape, 2).numpy())
    # Second order against central differences of the penalty along a random direction.
    v = rand(3, 3, 2, 2)

    def pen(wv):
        with ef.GradientTape() as t:
            t.watch(x)
            yy = C.conv2d(x, ef.constant(wv), 2, "SAME")
            ll = reductions.reduce_sum(yy * yy)
        g = t.gradient(ll, x).numpy()
        return float(np.sum(g * g))

    eps = 1e-6
    numeric = (pen(w.numpy() + eps * v) - pen(w.numpy() - eps * v)) / (2 * eps)
    assert abs(float(np.sum(gw.numpy() * v)) - numeric) < 1e-6 * max(1.0, abs(numeric))


def test_registry_samples_match_references_and_gradients():
    prims = [C.CONV, C.CONV_BACKPROP_INPUT, C.CONV_BACKPROP_FILTER, C.DEPTHWISE_CONV,
             C.DEPTHWISE_BACKPROP_INPUT, C.DEPTHWISE_BACKPROP_FILTER]
    for prim in prims:
        for args, attrs in prim.samples(RNG, ef.float64):
            got = execute(prim, tuple(ef.constant(a) for a in args), attrs).numpy()
            np.testing.assert_allclose(got, prim.reference(*args, **attrs), rtol=1e-10,
                                       atol=1e-12)
        for args, attrs, exc in prim.bad_samples(RNG):
            with pytest.raises(exc):
                execute(prim, tuple(ef.constant(a) for a in args), attrs)


def test_shape_rules_with_unknown_dims():
    f32 = ef.float32
    attrs = C._attrs(2, strides=2)
    out = C.CONV.shape_fn(AbstractValue((None, 7, None, 3), f32), AbstractValue((3, 3, 3, 8), f32),
                          **attrs)
    assert out.shape == (None, 4, None, 8) and out.dtype is f32
    nchw = C._attrs(2, padding="VALID", data_format="NCHW")
    out = C.CONV.shape_fn(AbstractValue((2, 3, 5, 6), f32), AbstractValue((3, 3, 3, 4), f32),
                          **nchw)
    assert out.shape == (2, 4, 3, 4)
    with pytest.raises(errors.InvalidArgumentError, match="Conv"):
        C.CONV.shape_fn(AbstractValue((2, 5, 5, 3), f32), AbstractValue((3, 3, 2, 4), f32),
                        **attrs)


def test_backprop_input_resolves_unknown_batch():
    dy, w = rand(2, 3, 3, 4), rand(3, 3, 3, 4)
    attrs = dict(C._attrs(2, strides=2), input_shape=(None, 5, 5, None))
    got = execute(C.CONV_BACKPROP_INPUT, (ef.constant(dy), ef.constant(w)), attrs)
    check(got, ref_conv_transpose(dy, w, (2, 5, 5, 3), (2, 2), "SAME", (1, 1)))


# Errors --------------------------------------------------------------------------------------

def test_channel_mismatch_names_both_shapes():
    with pytest.raises(errors.InvalidArgumentError) as info:
        C.conv2d(np.zeros((1, 5, 5, 3), np.float32), np.zeros((3, 3, 2, 4), np.float32), 1,
                 "SAME")
    msg = str(info.value)
    assert "[1, 5, 5, 3]" in msg and "[3, 3, 2, 4]" in msg and "channels" in msg
    with pytest.raises(errors.InvalidArgumentError, match=r"depthwise filter expects 4"):
        C.depthwise_conv2d(np.zeros((1, 5, 5, 3)), np.zeros((3, 3, 4, 1)), 1, "SAME")


@pytest.mark.parametrize("call,pattern", [
    (lambda x, w: C.conv2d(x[0], w, 1, "SAME"), "rank-4"),
    (lambda x, w: C.conv2d(x, w[0], 1, "SAME"), "rank-4"),
    (lambda x, w: C.conv2d(x, w, 1, "FULL"), "padding must be"),
    (lambda x, w: C.conv2d(x, w, 1, "EXPLICIT"), "padding must be"),
    (lambda x, w: C.conv2d(x, w, 0, "SAME"), "strides must be"),
    (lambda x, w: C.conv2d(x, w, [1, -2], "SAME"), "strides must be"),
    (lambda x, w: C.conv2d(x, w, [2, 1, 1, 1], "SAME"), "batch and channel"),
    (lambda x, w: C.conv2d(x, w, [1, 1, 1], "SAME"), "list of 1, 2 or 4"),
    (lambda x, w: C.conv2d(x, w, 1, "SAME", dilations=0), "dilations must be"),
    (lambda x, w: C.conv2d(x[:, :2, :2], w, 1, "VALID"), "bigger than the input"),
    (lambda x, w: C.conv2d(x, w, 1, "VALID", dilations=3), r"\(3 - 1\) \* dilation 3"),
    (lambda x, w: C.conv2d(x, w, 1, "SAME", data_format="NHCW"), "data_format"),
    (lambda x, w: C.conv2d(x, w, 1, [[1, 1], [1, 1], [1, 1], [1, 1]]), r"\[0, 0\]"),
    (lambda x, w: C.conv2d(x, w, 1, [[-1, 0], [0, 0]]), "non-negative"),
    (lambda x, w: C.convolution(x[0, 0, 0], w, padding="SAME"), "spatial"),
    (lambda x, w: C.conv2d(x.astype(np.int32), w.astype(np.int32), 1, "SAME"), "dtype"),
    (lambda x, w: C.conv2d(ef.constant(x), ef.constant(w.astype(np.float64)), 1, "SAME"),
     "same dtype"),
])
def test_bad_arguments(call, pattern):
    x, w = np.zeros((1, 5, 5, 3), np.float32), np.zeros((3, 3, 3, 4), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match=pattern):
        call(x, w)


def test_transpose_output_shape_errors():
    v, w = np.zeros((1, 3, 3, 4)), np.zeros((3, 3, 2, 4))
    with pytest.raises(errors.InvalidArgumentError, match="computes an output of shape"):
        C.conv2d_transpose(v, w, [1, 9, 9, 2], 2)
    with pytest.raises(errors.InvalidArgumentError, match="batch"):
        C.conv2d_transpose(v, w, [2, 6, 6, 2], 2)
    with pytest.raises(errors.InvalidArgumentError, match="output_shape must have 4"):
        C.conv2d_transpose(v, w, [1, 6, 6], 2)
    with pytest.raises(errors.InvalidArgumentError, match="filter has 2 input channels"):
        C.conv2d_transpose(v, w, [1, 6, 6, 3], 2)
