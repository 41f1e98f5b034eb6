"""Activation layers (ReLU, LeakyReLU, ELU, Softmax, PReLU) against numpy."""

import numpy as np
import pytest

from eagerflow.keras import layers
from tests.keras.layer_checks import check_layer_gradients, roundtrip

RNG = np.random.default_rng(4)


def randn(*shape):
    return RNG.standard_normal(shape)


def test_relu_family():
    x = randn(3, 4) * 3
    np.testing.assert_allclose(layers.ReLU(dtype="float64")(x).numpy(), np.maximum(x, 0))
    got = layers.ReLU(max_value=2.0, negative_slope=0.1, threshold=0.5, dtype="float64")(x)
    expected = np.where(x >= 2.0, 2.0, np.where(x > 0.5, x, 0.1 * (x - 0.5)))
    np.testing.assert_allclose(got.numpy(), expected)
    np.testing.assert_allclose(layers.LeakyReLU(dtype="float64")(x).numpy(),
                               np.where(x >= 0, x, 0.3 * x))
    np.testing.assert_allclose(layers.LeakyReLU(alpha=0.1, dtype="float64")(x).numpy(),
                               np.where(x >= 0, x, 0.1 * x))
    np.testing.assert_allclose(layers.ELU(0.5, dtype="float64")(x).numpy(),
                               np.where(x > 0, x, 0.5 * (np.exp(x) - 1)))
    with pytest.raises(ValueError, match="max_value"):
        layers.ReLU(max_value=-1.0)
    with pytest.raises(ValueError, match="negative_slope"):
        layers.LeakyReLU(-0.2)
    for layer in (layers.ReLU(6.0), layers.LeakyReLU(0.2), layers.ELU(0.7),
                  layers.Softmax(axis=1)):
        roundtrip(layer)


def test_softmax_layer_with_mask_and_axes():
    x = randn(2, 3, 4)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(layers.Softmax(dtype="float64")(x).numpy(),
                               e / e.sum(-1, keepdims=True))
    mask = RNG.random((2, 3, 4)) > 0.4
    mask[..., 0] = True
    got = layers.Softmax(dtype="float64")(x, mask=mask).numpy()
    em = np.where(mask, np.exp(x), 0.0)
    np.testing.assert_allclose(got, em / em.sum(-1, keepdims=True), atol=1e-12)
    both = layers.Softmax(axis=(1, 2), dtype="float64")(x).numpy()
    np.testing.assert_allclose(both, np.exp(x) / np.exp(x).sum((1, 2), keepdims=True))


def test_prelu():
    layer = layers.PReLU(shared_axes=[1, 2], dtype="float64")
    x = randn(2, 3, 4, 5)
    layer.build(x.shape)
    alpha = randn(1, 1, 5)
    layer.set_weights([alpha])
    np.testing.assert_allclose(layer(x).numpy(), np.where(x >= 0, x, alpha * x))
    check_layer_gradients(layers.PReLU(alpha_initializer="random_normal", dtype="float64"),
                          randn(3, 4))
    with pytest.raises(ValueError, match="shared axis"):
        layers.PReLU(shared_axes=[3])(np.ones((2, 3), np.float32))
    roundtrip(layers.PReLU(shared_axes=[1]))
