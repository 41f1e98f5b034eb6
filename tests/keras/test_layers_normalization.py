"""BatchNormalization, LayerNormalization and GroupNormalization against closed forms."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import layers
from tests.keras.layer_checks import check_layer_gradients, roundtrip

RNG = np.random.default_rng(21)


def randn(*shape):
    return RNG.standard_normal(shape)


def test_batchnorm_training_output_and_moving_statistics():
    bn = layers.BatchNormalization(momentum=0.9, epsilon=1e-3, dtype="float64")
    x1, x2 = randn(8, 3) * 2 + 1, randn(8, 3) - 2
    bn.build(x1.shape)
    gamma, beta = randn(3), randn(3)
    bn.set_weights([gamma, beta, np.zeros(3), np.ones(3)])
    y = bn(x1, training=True).numpy()
    mean, var = x1.mean(0), x1.var(0)
    np.testing.assert_allclose(y, (x1 - mean) / np.sqrt(var + 1e-3) * gamma + beta, rtol=1e-10)
    mm, mv = 0.9 * 0 + 0.1 * mean, 0.9 * 1 + 0.1 * var
    np.testing.assert_allclose(bn.moving_mean.numpy(), mm, rtol=1e-12)
    np.testing.assert_allclose(bn.moving_variance.numpy(), mv, rtol=1e-12)
    bn(x2, training=True)
    mm, mv = 0.9 * mm + 0.1 * x2.mean(0), 0.9 * mv + 0.1 * x2.var(0)
    np.testing.assert_allclose(bn.moving_mean.numpy(), mm, rtol=1e-12)
    np.testing.assert_allclose(bn.moving_variance.numpy(), mv, rtol=1e-12)
    # inference: moving statistics, no update
    y = bn(x1).numpy()
    np.testing.assert_allclose(y, (x1 - mm) / np.sqrt(mv + 1e-3) * gamma + beta, rtol=1e-10)
    np.testing.assert_allclose(bn.moving_mean.numpy(), mm, rtol=1e-12)
    bn(x1, training=False)
    np.testing.assert_allclose(bn.moving_variance.numpy(), mv, rtol=1e-12)


def test_batchnorm_axis1_on_images():
    bn = layers.BatchNormalization(axis=1, center=False, dtype="float64")
    x = randn(4, 3, 5, 2)
    y = bn(x, training=True).numpy()
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * mean.ravel(), rtol=1e-10)
    assert [w.name.split("/")[-1] for w in bn.weights] == [
        "gamma:0", "moving_mean:0", "moving_variance:0"]
    assert len(bn.trainable_weights) == 1


def test_batchnorm_frozen_runs_in_inference_mode():
    bn = layers.BatchNormalization(dtype="float64")
    x = randn(6, 2)
    bn(x, training=True)
    before = bn.moving_mean.numpy()
    bn.trainable = False
    y = bn(x, training=True).numpy()
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)
    mv = bn.moving_variance.numpy()
    np.testing.assert_allclose(y, (x - before) / np.sqrt(mv + 1e-3), rtol=1e-10)


def test_batchnorm_tensor_training_flag_and_mask():
    bn = layers.BatchNormalization(dtype="float64")
    x = randn(5, 2)
    y_false = bn(x, training=ef.constant(False)).numpy()
    np.testing.assert_allclose(y_false, x / np.sqrt(1 + 1e-3), rtol=1e-10)
    assert not bn.moving_mean.numpy().any()
    bn(x, training=ef.constant(True))
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * x.mean(0), rtol=1e-10)
    masked = layers.BatchNormalization(dtype="float64")
    seq = randn(2, 4, 3)
    mask = np.array([[True, True, False, False], [True, False, True, True]])
    y = masked(seq, training=True, mask=mask).numpy()
    sel = seq[mask]
    np.testing.assert_allclose(y[mask], (sel - sel.mean(0)) / np.sqrt(sel.var(0) + 1e-3),
                               rtol=1e-10)


def test_batchnorm_gradients_and_errors():
    check_layer_gradients(layers.BatchNormalization(dtype="float64"), randn(6, 3),
                          training=True)
    bn = layers.BatchNormalization(dtype="float64")
    bn(randn(6, 3), training=True)
    check_layer_gradients(bn, randn(6, 3), training=False)
    with pytest.raises(TypeError, match="axis"):
        layers.BatchNormalization(axis="x")
    with pytest.raises(ValueError, match="invalid axis"):
        layers.BatchNormalization(axis=3)(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="renorm"):
        layers.BatchNormalization(renorm=True)
    roundtrip(layers.BatchNormalization(axis=[1, 2], momentum=0.5, gamma_regularizer="l2",
                                        moving_variance_initializer="zeros"))


def test_layer_normalization():
    ln = layers.LayerNormalization(epsilon=1e-5, dtype="float64")
    x = randn(3, 4, 5)
    ln.build(x.shape)
    gamma, beta = randn(5), randn(5)
    ln.set_weights([gamma, beta])
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(ln(x).numpy(), (x - mean) / np.sqrt(var + 1e-5) * gamma + beta,
                               rtol=1e-10)
    multi = layers.LayerNormalization(axis=[1, 2], scale=False, dtype="float64")
    mean, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(multi(x).numpy(), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    assert multi.beta.shape.as_list() == [4, 5]
    check_layer_gradients(layers.LayerNormalization(dtype="float64"), randn(3, 4))
    half = layers.LayerNormalization(dtype="float16")
    assert half(ef.ones([2, 3], dtype=ef.float16)).dtype == ef.float16
    roundtrip(layers.LayerNormalization(axis=[-2, -1], epsilon=1e-6))


def test_group_normalization():
    gn = layers.GroupNormalization(groups=2, epsilon=1e-4, dtype="float64")
    x = randn(2, 3, 4)
    gn.build(x.shape)
    gamma, beta = randn(4), randn(4)
    gn.set_weights([gamma, beta])
    g = x.reshape(2, 3, 2, 2)
    mean, var = g.mean((1, 3), keepdims=True), g.var((1, 3), keepdims=True)
    ref = ((g - mean) / np.sqrt(var + 1e-4)).reshape(2, 3, 4) * gamma + beta
    np.testing.assert_allclose(gn(x).numpy(), ref, rtol=1e-10)
    check_layer_gradients(layers.GroupNormalization(groups=3, dtype="float64"), randn(2, 2, 6))
    with pytest.raises(ValueError, match="divide"):
        layers.GroupNormalization(groups=4)(np.ones((1, 6), np.float32))
    roundtrip(layers.GroupNormalization(groups=4, axis=1))
