"""Convolution layers against direct numpy convolutions (channels-last references)."""

import itertools
import math

import numpy as np
import pytest

from eagerflow.keras import layers
from tests.keras.layer_checks import check_layer_gradients, roundtrip

RNG = np.random.default_rng(99)


def randn(*shape):
    return RNG.standard_normal(shape)


def conv_ref(x, w, strides, padding, dilation, groups=1):
    """y[p, f] = sum_{t, c} xpad[s p + d t, c] w[t, c, f], channel groups kept apart."""
    nd = x.ndim - 2
    k = w.shape[:nd]
    eff = [(k[i] - 1) * dilation[i] + 1 for i in range(nd)]
    spatial = x.shape[1:-1]
    if padding == "valid":
        pads = [(0, 0)] * nd
        out = [(n - e) // s + 1 for n, e, s in zip(spatial, eff, strides)]
    elif padding == "same":
        out = [math.ceil(n / s) for n, s in zip(spatial, strides)]
        totals = [max((o - 1) * s + e - n, 0) for o, s, e, n in zip(out, strides, eff, spatial)]
        pads = [(t // 2, t - t // 2) for t in totals]
    else:  # causal
        pads = [(eff[0] - 1, 0)]
        out = [(spatial[0] - 1) // strides[0] + 1]
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    cin_g, filters = w.shape[nd], w.shape[-1]
    fg = filters // groups
    y = np.zeros((x.shape[0],) + tuple(out) + (filters,))
    for tap in itertools.product(*[range(n) for n in k]):
        index = tuple(slice(tap[i] * dilation[i], tap[i] * dilation[i] + (out[i] - 1)
                            * strides[i] + 1, strides[i]) for i in range(nd))
        patch = xp[(slice(None),) + index + (slice(None),)]
        for g in range(groups):
            y[..., g * fg:(g + 1) * fg] += (patch[..., g * cin_g:(g + 1) * cin_g]
                                            @ w[tap][:, g * fg:(g + 1) * fg])
    return y


def conv_transpose_ref(x, w, strides, padding, dilation, out_len):
    """Scatter x[p] w[t]^T to s p + d t, then crop the padding TF's rule removes."""
    nd = x.ndim - 2
    k = w.shape[:nd]
    eff = [(k[i] - 1) * dilation[i] + 1 for i in range(nd)]
    spatial = x.shape[1:-1]
    full = [(n - 1) * s + e for n, s, e in zip(spatial, strides, eff)]
    size = [max(f, b) for f, b in zip(full, out_len)]
    y = np.zeros((x.shape[0],) + tuple(s + e for s, e in zip(size, eff)) + (w.shape[nd],))
    for tap in itertools.product(*[range(n) for n in k]):
        index = tuple(slice(tap[i] * dilation[i], tap[i] * dilation[i] + (spatial[i] - 1)
                            * strides[i] + 1, strides[i]) for i in range(nd))
        y[(slice(None),) + index + (slice(None),)] += x @ w[tap].T
    if padding == "same":
        before = [max((n - 1) * s + e - o, 0) // 2
                  for n, s, e, o in zip(spatial, strides, eff, out_len)]
    else:
        before = [0] * nd
    crop = tuple(slice(b, b + o) for b, o in zip(before, out_len))
    return y[(slice(None),) + crop + (slice(None),)]


def _set(layer, x_shape, *weights):
    layer.build(x_shape)
    layer.set_weights(list(weights))


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3, strides=1, padding="valid"),
    dict(kernel_size=3, strides=2, padding="same"),
    dict(kernel_size=2, dilation_rate=2, padding="causal"),
    dict(kernel_size=3, padding="same", groups=2),
])
def test_conv1d(kwargs):
    layer = layers.Conv1D(4, dtype="float64", **kwargs)
    groups = kwargs.get("groups", 1)
    x = randn(2, 9, 4)
    k = kwargs["kernel_size"]
    w, b = randn(k, 4 // groups, 4), randn(4)
    _set(layer, x.shape, w, b)
    ref = conv_ref(x, w, (kwargs.get("strides", 1),), kwargs["padding"],
                   (kwargs.get("dilation_rate", 1),), groups) + b
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-10, atol=1e-12)
    assert layer.compute_output_shape(x.shape).as_list() == list(ref.shape)


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=(3, 2), strides=(2, 1), padding="valid"),
    dict(kernel_size=3, strides=2, padding="same"),
    dict(kernel_size=2, dilation_rate=(2, 1), padding="same"),
    dict(kernel_size=1, groups=3, padding="valid"),
])
def test_conv2d(kwargs):
    groups = kwargs.get("groups", 1)
    layer = layers.Conv2D(6, activation="relu", dtype="float64", **kwargs)
    x = randn(2, 7, 6, 3)
    ks = layer.kernel_size
    w, b = randn(*ks, 3 // groups, 6), randn(6)
    _set(layer, x.shape, w, b)
    ref = np.maximum(conv_ref(x, w, layer.strides, layer.padding, layer.dilation_rate,
                              groups) + b, 0)
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-10, atol=1e-12)
    assert layer.compute_output_shape((None, 7, 6, 3)).as_list() == [None] + list(
        ref.shape[1:])


def test_conv2d_channels_first_matches_channels_last():
    x = randn(2, 5, 5, 3)
    last = layers.Conv2D(4, 3, strides=2, padding="same", dtype="float64")
    first = layers.Conv2D(4, 3, strides=2, padding="same", data_format="channels_first",
                          dtype="float64")
    w, b = randn(3, 3, 3, 4), randn(4)
    _set(last, x.shape, w, b)
    _set(first, (2, 3, 5, 5), w, b)
    y_first = first(x.transpose(0, 3, 1, 2)).numpy()
    np.testing.assert_allclose(y_first.transpose(0, 2, 3, 1), last(x).numpy(), rtol=1e-10)
    assert first.compute_output_shape((None, 3, 5, 5)).as_list() == [None, 4, 3, 3]


def test_conv3d():
    layer = layers.Conv3D(2, 2, strides=(1, 2, 1), dtype="float64")
    x = randn(1, 3, 4, 3, 2)
    w, b = randn(2, 2, 2, 2, 2), randn(2)
    _set(layer, x.shape, w, b)
    ref = conv_ref(x, w, (1, 2, 1), "valid", (1, 1, 1)) + b
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-10)


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3, strides=2, padding="valid"),
    dict(kernel_size=3, strides=2, padding="same"),
    dict(kernel_size=(3, 2), strides=(2, 3), padding="same", output_padding=(1, 2)),
    dict(kernel_size=2, strides=1, padding="valid", dilation_rate=2),
    dict(kernel_size=4, strides=3, padding="valid", output_padding=1),
])
def test_conv2d_transpose(kwargs):
    layer = layers.Conv2DTranspose(3, dtype="float64", **kwargs)
    x = randn(2, 4, 5, 2)
    ks = layer.kernel_size
    w, b = randn(*ks, 3, 2), randn(3)
    _set(layer, x.shape, w, b)
    out_shape = layer.compute_output_shape(x.shape).as_list()
    ref = conv_transpose_ref(x, w, layer.strides, layer.padding, layer.dilation_rate,
                             out_shape[1:3]) + b
    y = layer(x).numpy()
    assert list(y.shape) == out_shape
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-12)


def test_conv1d_transpose_output_length():
    layer = layers.Conv1DTranspose(2, 3, strides=2, dtype="float64")
    x = randn(1, 4, 3)
    w, b = randn(3, 2, 3), randn(2)
    _set(layer, x.shape, w, b)
    y = layer(x).numpy()
    assert y.shape == (1, 9, 2)  # 4 * 2 + max(3 - 2, 0)
    np.testing.assert_allclose(y, conv_transpose_ref(x, w, (2,), "valid", (1,), [9]) + b,
                               rtol=1e-10)


def test_conv3d_transpose():
    layer = layers.Conv3DTranspose(2, 2, strides=(2, 1, 2), padding="same", dtype="float64")
    x = randn(1, 2, 3, 2, 3)
    w, b = randn(2, 2, 2, 2, 3), randn(2)
    _set(layer, x.shape, w, b)
    out = layer.compute_output_shape(x.shape).as_list()
    assert out == [1, 4, 3, 4, 2]
    ref = conv_transpose_ref(x, w, (2, 1, 2), "same", (1, 1, 1), out[1:4]) + b
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3, depth_multiplier=2, padding="valid"),
    dict(kernel_size=3, strides=2, padding="same"),
    dict(kernel_size=2, dilation_rate=2, padding="same", depth_multiplier=3),
])
def test_depthwise_conv2d(kwargs):
    layer = layers.DepthwiseConv2D(dtype="float64", **kwargs)
    x = randn(2, 6, 6, 3)
    m = layer.depth_multiplier
    ks = layer.kernel_size
    w, b = randn(*ks, 3, m), randn(3 * m)
    _set(layer, x.shape, w, b)
    grouped = w.reshape(ks + (1, 3 * m))
    ref = conv_ref(x, grouped, layer.strides, layer.padding, layer.dilation_rate, 3) + b
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-10, atol=1e-12)
    assert layer.compute_output_shape(x.shape).as_list() == list(ref.shape)


def test_separable_conv2d():
    layer = layers.SeparableConv2D(5, 3, padding="same", depth_multiplier=2, dtype="float64")
    x = randn(2, 5, 4, 3)
    dw, pw, b = randn(3, 3, 3, 2), randn(1, 1, 6, 5), randn(5)
    _set(layer, x.shape, dw, pw, b)
    depth = conv_ref(x, dw.reshape(3, 3, 1, 6), (1, 1), "same", (1, 1), 3)
    ref = depth @ pw[0, 0] + b
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-10, atol=1e-12)
    assert [w.name.split("/")[-1] for w in layer.weights] == [
        "depthwise_kernel:0", "pointwise_kernel:0", "bias:0"]


@pytest.mark.parametrize("make,shape", [
    (lambda: layers.Conv1D(3, 2, dilation_rate=2, padding="causal", dtype="float64"),
     (2, 6, 2)),
    (lambda: layers.Conv2D(4, 2, strides=2, padding="same", groups=2, dtype="float64"),
     (2, 5, 5, 4)),
    (lambda: layers.Conv2DTranspose(2, 3, strides=2, padding="same", dtype="float64"),
     (1, 3, 3, 2)),
    (lambda: layers.Conv1DTranspose(2, 3, strides=2, output_padding=1, dtype="float64"),
     (2, 3, 2)),
    (lambda: layers.DepthwiseConv2D(2, depth_multiplier=2, dtype="float64"), (1, 4, 4, 2)),
    (lambda: layers.SeparableConv2D(3, 2, activation="tanh", dtype="float64"), (1, 4, 4, 2)),
    (lambda: layers.Conv3D(2, 2, dtype="float64"), (1, 3, 3, 3, 1)),
])
def test_conv_gradients(make, shape):
    check_layer_gradients(make(), randn(*shape))


def test_conv_argument_errors():
    with pytest.raises(ValueError, match="filters"):
        layers.Conv2D(0, 3)
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="padding"):
        layers.Conv2D(2, 3, padding="causal")
    with pytest.raises(ValueError, match="data_format"):
        layers.Conv2D(2, 3, data_format="NHWC")
    with pytest.raises(ValueError, match="dilation_rate > 1"):
        layers.Conv2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="divisible by the number of groups"):
        layers.Conv2D(3, 3, groups=2)
    with pytest.raises(ValueError, match="input channels"):
        layers.Conv2D(4, 1, groups=2)(np.ones((1, 3, 3, 3), np.float32))
    with pytest.raises(ValueError, match="output padding"):
        layers.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="ndim=4"):
        conv = layers.Conv2D(2, 1)
        conv(np.ones((1, 3, 3, 2), np.float32))
        conv(np.ones((3, 3, 2), np.float32))


def test_conv_configs():
    for layer in (layers.Conv1D(3, 2, padding="causal", dilation_rate=2),
                  layers.Conv2D(4, (3, 1), strides=2, groups=2, activation="relu",
                                kernel_regularizer="l2"),
                  layers.Conv2DTranspose(2, 3, output_padding=1, strides=2),
                  layers.DepthwiseConv2D(3, depth_multiplier=2),
                  layers.SeparableConv2D(4, 3, pointwise_initializer="he_normal"),
                  layers.Conv3D(1, 2, data_format="channels_first")):
        roundtrip(layer)
