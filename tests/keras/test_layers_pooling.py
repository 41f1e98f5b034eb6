"""Pooling, padding, cropping and upsampling layers against numpy."""

import itertools
import math

import numpy as np
import pytest

from eagerflow.keras import layers
from tests.keras.layer_checks import check_layer_gradients, roundtrip

RNG = np.random.default_rng(5)


def randn(*shape):
    return RNG.standard_normal(shape)


def pool_ref(x, size, strides, padding, mode):
    """Windows over the spatial axes of channels-last x; 'same' windows count real cells."""
    nd = x.ndim - 2
    spatial = x.shape[1:-1]
    if padding == "valid":
        out = [(n - k) // s + 1 for n, k, s in zip(spatial, size, strides)]
        before = [0] * nd
    else:
        out = [math.ceil(n / s) for n, s in zip(spatial, strides)]
        before = [max((o - 1) * s + k - n, 0) // 2
                  for o, s, k, n in zip(out, strides, size, spatial)]
    y = np.zeros((x.shape[0],) + tuple(out) + (x.shape[-1],))
    for pos in itertools.product(*[range(o) for o in out]):
        index = []
        for i, p in enumerate(pos):
            start = p * strides[i] - before[i]
            index.append(slice(max(start, 0), min(start + size[i], spatial[i])))
        window = x[(slice(None),) + tuple(index) + (slice(None),)]
        axes = tuple(range(1, nd + 1))
        y[(slice(None),) + pos + (slice(None),)] = (window.max(axis=axes) if mode == "max"
                                                    else window.mean(axis=axes))
    return y


@pytest.mark.parametrize("cls,mode", [(layers.MaxPooling2D, "max"),
                                      (layers.AveragePooling2D, "avg")])
@pytest.mark.parametrize("kwargs", [dict(), dict(pool_size=3, strides=2, padding="same"),
                                    dict(pool_size=(2, 3), strides=1)])
def test_pooling2d(cls, mode, kwargs):
    layer = cls(dtype="float64", **kwargs)
    x = randn(2, 7, 6, 3)
    ref = pool_ref(x, layer.pool_size, layer.strides, layer.padding, mode)
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-12)
    assert layer.compute_output_shape(x.shape).as_list() == list(ref.shape)


@pytest.mark.parametrize("cls,mode", [(layers.MaxPooling1D, "max"),
                                      (layers.AveragePooling1D, "avg")])
def test_pooling1d_and_channels_first(cls, mode):
    x = randn(2, 9, 3)
    layer = cls(3, strides=2, padding="same", dtype="float64")
    ref = pool_ref(x, (3,), (2,), "same", mode)
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-12)
    first = cls(3, strides=2, padding="same", data_format="channels_first", dtype="float64")
    np.testing.assert_allclose(first(x.transpose(0, 2, 1)).numpy().transpose(0, 2, 1), ref,
                               rtol=1e-12)


def test_global_pooling():
    x = randn(2, 4, 5, 3)
    np.testing.assert_allclose(layers.GlobalAveragePooling2D(dtype="float64")(x).numpy(),
                               x.mean(axis=(1, 2)))
    np.testing.assert_allclose(
        layers.GlobalMaxPooling2D(keepdims=True, dtype="float64")(x).numpy(),
        x.max(axis=(1, 2), keepdims=True))
    np.testing.assert_allclose(
        layers.GlobalAveragePooling2D(data_format="channels_first", dtype="float64")(
            x).numpy(), x.mean(axis=(2, 3)))
    s = randn(2, 6, 3)
    np.testing.assert_allclose(layers.GlobalMaxPooling1D(dtype="float64")(s).numpy(),
                               s.max(axis=1))
    mask = np.array([[True, True, False, True, False, False], [True] * 6])
    got = layers.GlobalAveragePooling1D(dtype="float64")(s, mask=mask).numpy()
    expected = (s * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    np.testing.assert_allclose(got, expected)
    assert layers.GlobalAveragePooling2D().compute_output_shape((None, 4, 5, 3)).as_list() == [
        None, 3]


def test_pooling_gradients_and_errors():
    check_layer_gradients(layers.AveragePooling2D(2, padding="same", dtype="float64"),
                          randn(1, 5, 5, 2))
    check_layer_gradients(layers.GlobalAveragePooling1D(dtype="float64"), randn(2, 4, 3))
    with pytest.raises(ValueError, match="pool_size"):
        layers.MaxPooling2D(pool_size=0)
    with pytest.raises(ValueError, match="padding"):
        layers.MaxPooling2D(padding="full")
    with pytest.raises(ValueError, match="ndim=4"):
        layers.MaxPooling2D()(np.ones((2, 4, 4), np.float32))
    for layer in (layers.MaxPooling2D(3, 2, "same"), layers.AveragePooling1D(4),
                  layers.GlobalMaxPooling2D(keepdims=True), layers.MaxPooling3D()):
        roundtrip(layer)


def test_zero_padding_and_cropping():
    x = randn(2, 3, 4, 2).astype(np.float32)
    y = layers.ZeroPadding2D(((1, 0), (2, 3)))(x).numpy()
    np.testing.assert_array_equal(y, np.pad(x, [(0, 0), (1, 0), (2, 3), (0, 0)]))
    y = layers.ZeroPadding2D(1, data_format="channels_first")(x).numpy()
    np.testing.assert_array_equal(y, np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)]))
    s = randn(2, 5, 3).astype(np.float32)
    np.testing.assert_array_equal(layers.ZeroPadding1D((2, 1))(s).numpy(),
                                  np.pad(s, [(0, 0), (2, 1), (0, 0)]))
    np.testing.assert_array_equal(layers.Cropping1D((1, 2))(s).numpy(), s[:, 1:3])
    np.testing.assert_array_equal(layers.Cropping2D(((1, 0), (1, 2)))(x).numpy(),
                                  x[:, 1:, 1:2])
    assert layers.ZeroPadding2D(2).compute_output_shape((None, 3, 4, 2)).as_list() == [
        None, 7, 8, 2]
    with pytest.raises(ValueError, match="padding"):
        layers.ZeroPadding2D(((1, 2, 3), (1, 1)))
    with pytest.raises(ValueError, match="too large"):
        layers.Cropping2D(((2, 2), (0, 0)))(x)
    for layer in (layers.ZeroPadding2D(((1, 2), (3, 4))), layers.ZeroPadding1D(3),
                  layers.Cropping2D(1), layers.Cropping1D((0, 2))):
        roundtrip(layer)


def bilinear_ref(x, fh, fw):
    """tf.image.resize(bilinear, half-pixel centres) for channels-last x."""
    n, h, w, c = x.shape
    out = np.zeros((n, h * fh, w * fw, c))

    def taps(i, size, factor):
        src = (i + 0.5) / factor - 0.5
        lo = math.floor(src)
        return max(lo, 0), min(math.ceil(src), size - 1), src - lo

    for i in range(h * fh):
        t, b, dy = taps(i, h, fh)
        for j in range(w * fw):
            le, r, dx = taps(j, w, fw)
            top = x[:, t, le] + (x[:, t, r] - x[:, t, le]) * dx
            bottom = x[:, b, le] + (x[:, b, r] - x[:, b, le]) * dx
            out[:, i, j] = top + (bottom - top) * dy
    return out


def test_upsampling():
    x = randn(2, 3, 4, 2)
    y = layers.UpSampling2D((2, 3), dtype="float64")(x).numpy()
    np.testing.assert_array_equal(y, x.repeat(2, axis=1).repeat(3, axis=2))
    y = layers.UpSampling2D((2, 3), interpolation="bilinear", dtype="float64")(x).numpy()
    np.testing.assert_allclose(y, bilinear_ref(x, 2, 3), rtol=1e-12, atol=1e-12)
    cf = layers.UpSampling2D(2, data_format="channels_first", interpolation="bilinear",
                             dtype="float64")(x.transpose(0, 3, 1, 2)).numpy()
    np.testing.assert_allclose(cf.transpose(0, 2, 3, 1), bilinear_ref(x, 2, 2), rtol=1e-12)
    s = randn(2, 3, 2).astype(np.float32)
    np.testing.assert_array_equal(layers.UpSampling1D(3)(s).numpy(), s.repeat(3, axis=1))
    check_layer_gradients(layers.UpSampling2D(2, interpolation="bilinear", dtype="float64"),
                          randn(1, 3, 3, 1))
    with pytest.raises(ValueError, match="interpolation"):
        layers.UpSampling2D(interpolation="bicubic")
    assert layers.UpSampling2D((2, 3)).compute_output_shape((None, 3, 4, 2)).as_list() == [
        None, 6, 12, 2]
    roundtrip(layers.UpSampling2D(2, interpolation="bilinear"))
