"""Core layers against hand-written numpy forward passes, gradients and configs."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import layers
from tests.keras.layer_checks import check_layer_gradients, roundtrip

RNG = np.random.default_rng(1234)


def randn(*shape):
    return RNG.standard_normal(shape)


# -- Dense ---------------------------------------------------------------------------------------

def test_dense_matches_numpy_rank2_and_rank3():
    d = layers.Dense(3, activation="tanh", dtype="float64")
    x = randn(4, 5)
    d.build((None, 5))
    w, b = randn(5, 3), randn(3)
    d.set_weights([w, b])
    np.testing.assert_allclose(d(x).numpy(), np.tanh(x @ w + b), rtol=1e-12)
    x3 = randn(2, 4, 5)
    np.testing.assert_allclose(d(x3).numpy(), np.tanh(x3 @ w + b), rtol=1e-12)
    assert d.compute_output_shape((None, 4, 5)).as_list() == [None, 4, 3]


def test_dense_without_bias_and_weight_names():
    d = layers.Dense(2, use_bias=False, name="proj")
    y = d(np.ones((1, 3), np.float32))
    assert y.dtype == ef.float32
    assert [w.name for w in d.weights] == ["proj/kernel:0"]
    np.testing.assert_allclose(y.numpy(), np.ones((1, 3)) @ d.kernel.numpy(), rtol=1e-6)


def test_dense_gradients():
    d = layers.Dense(3, activation="sigmoid", dtype="float64")
    check_layer_gradients(d, randn(4, 5))
    check_layer_gradients(layers.Dense(2, dtype="float64"), randn(2, 3, 5))


def test_dense_errors():
    with pytest.raises(ValueError, match="units"):
        layers.Dense(0)
    with pytest.raises(ValueError, match="last dimension"):
        layers.Dense(2).build(ef.TensorShape([None, None]))
    d = layers.Dense(2)
    d(np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match='layer "dense.*axis -1.*value 3'):
        d(np.ones((1, 4), np.float32))
    with pytest.raises(ValueError, match="min_ndim=2"):
        layers.Dense(2)(ef.ones([3]))
    with pytest.raises(ValueError, match="activation"):
        layers.Dense(2, activation="nope")


def test_dense_regularizers_recomputed_from_current_weights():
    from eagerflow.keras import regularizers

    d = layers.Dense(2, kernel_regularizer=regularizers.L2(0.5),
                     bias_regularizer=regularizers.L1(0.1), dtype="float64")
    d.build((None, 3))
    w, b = randn(3, 2), randn(2)
    d.set_weights([w, b])
    losses = [float(x) for x in d.losses]
    np.testing.assert_allclose(losses, [0.5 * np.sum(w ** 2), 0.1 * np.sum(np.abs(b))])
    d.kernel.assign(np.zeros((3, 2)))
    assert float(d.losses[0]) == 0.0


def test_dense_config_roundtrip():
    d = layers.Dense(4, activation="relu", use_bias=False, kernel_initializer="he_normal",
                     kernel_regularizer="l2", kernel_constraint="max_norm", name="d1")
    clone = roundtrip(d)
    assert clone.units == 4 and clone.use_bias is False
    assert type(clone.kernel_initializer).__name__ == "HeNormal"


# -- Activation, Identity, Lambda ---------------------------------------------------------------

@pytest.mark.parametrize("name,fn", [
    ("relu", lambda x: np.maximum(x, 0)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("softmax", lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    ("softplus", lambda x: np.log1p(np.exp(x))),
])
def test_activation_layer(name, fn):
    x = randn(3, 4)
    layer = layers.Activation(name, dtype="float64")
    np.testing.assert_allclose(layer(x).numpy(), fn(x), rtol=1e-12)
    assert roundtrip(layer).activation is layer.activation


def test_identity_layer():
    x = ef.constant(randn(2, 3))
    np.testing.assert_array_equal(layers.Identity(dtype="float64")(x).numpy(), x.numpy())


def square_plus(x, offset=0.0):
    return x * x + offset


def test_lambda_layer_and_config():
    layer = layers.Lambda(square_plus, arguments={"offset": 1.0}, dtype="float64")
    x = randn(2, 3)
    np.testing.assert_allclose(layer(x).numpy(), x * x + 1.0)
    # A module-level function is found through custom_objects: with safe_mode=True (the
    # default) no module named by the config is imported.
    with pytest.raises(ValueError, match="safe_mode"):
        layers.Lambda.from_config(layer.get_config())
    clone = layers.Lambda.from_config(layer.get_config(),
                                      custom_objects={"square_plus": square_plus})
    assert clone.function is square_plus
    assert layers.Lambda.from_config(layer.get_config(), safe_mode=False).function \
        is square_plus
    lam = layers.Lambda(lambda t: t * 3.0, output_shape=(3,))
    config = lam.get_config()
    with pytest.raises(ValueError, match="safe_mode"):
        layers.Lambda.from_config(config)
    clone = layers.Lambda.from_config(config, safe_mode=False)
    np.testing.assert_allclose(clone(np.ones((1, 3), np.float32)).numpy(), 3.0)
    assert lam.compute_output_shape((None, 3)).as_list() == [None, 3]
    with pytest.raises(ValueError, match="callable"):
        layers.Lambda(3)


def test_lambda_passes_training_and_mask():
    seen = {}

    def fn(x, training=None, mask=None):
        seen["training"], seen["mask"] = training, mask
        return x

    layers.Lambda(fn)(ef.ones([1, 2]), training=True)
    assert seen == {"training": True, "mask": None}


# -- Dropout family ------------------------------------------------------------------------------

def test_dropout_identity_unless_training():
    x = ef.constant(randn(50, 40).astype(np.float32))
    drop = layers.Dropout(0.3, seed=1)
    for training in (None, False, 0):
        np.testing.assert_array_equal(drop(x, training=training).numpy(), x.numpy())
    y = drop(x, training=True).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], x.numpy()[kept] / 0.7, rtol=1e-6)
    assert 0.6 < kept.mean() < 0.8


def test_dropout_noise_shape_and_tensor_training():
    x = ef.ones([20, 6, 5])
    y = layers.Dropout(0.5, noise_shape=(None, 1, 5), seed=3)(x, training=True).numpy()
    assert (y == y[:, :1, :]).all()  # same mask at every step
    drop = layers.Dropout(0.5)
    np.testing.assert_array_equal(drop(x, training=ef.constant(False)).numpy(), x.numpy())
    assert (drop(x, training=ef.constant(True)).numpy() == 0).any()


def test_dropout_errors_and_config():
    for rate in (-0.1, 1.0, 1.5, "x"):
        with pytest.raises(ValueError, match="rate"):
            layers.Dropout(rate)
    clone = roundtrip(layers.Dropout(0.25, noise_shape=(None, 1), seed=7))
    assert clone.rate == 0.25 and clone.noise_shape == (None, 1) and clone.seed == 7


def test_spatial_dropout_and_noise_layers():
    x = ef.ones([8, 4, 4, 6])
    y = layers.SpatialDropout2D(0.5, seed=2)(x, training=True).numpy()
    assert (y == y[:, :1, :1, :]).all()
    y1 = layers.SpatialDropout1D(0.5, seed=2)(ef.ones([8, 5, 6]), training=True).numpy()
    assert (y1 == y1[:, :1, :]).all()
    noise = layers.GaussianNoise(0.5, seed=1)
    np.testing.assert_array_equal(noise(x, training=False).numpy(), x.numpy())
    assert not np.allclose(noise(x, training=True).numpy(), 1.0)
    gd = layers.GaussianDropout(0.2, seed=1)
    np.testing.assert_array_equal(gd(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="stddev"):
        layers.GaussianNoise(-1.0)
    roundtrip(layers.GaussianNoise(0.1, seed=3))
    roundtrip(layers.SpatialDropout2D(0.1, data_format="channels_first"))


# -- reshaping -----------------------------------------------------------------------------------

def test_flatten_reshape_permute_repeat():
    x = randn(2, 3, 4).astype(np.float32)
    np.testing.assert_array_equal(layers.Flatten()(x).numpy(), x.reshape(2, 12))
    cf = layers.Flatten(data_format="channels_first")(x).numpy()
    np.testing.assert_array_equal(cf, x.transpose(0, 2, 1).reshape(2, 12))
    np.testing.assert_array_equal(layers.Reshape((4, -1))(x).numpy(), x.reshape(2, 4, 3))
    assert layers.Reshape((4, -1)).compute_output_shape((None, 3, 4)).as_list() == [None, 4, 3]
    np.testing.assert_array_equal(layers.Permute((2, 1))(x).numpy(), x.transpose(0, 2, 1))
    v = randn(2, 5).astype(np.float32)
    np.testing.assert_array_equal(layers.RepeatVector(3)(v).numpy(),
                                  np.repeat(v[:, None, :], 3, axis=1))
    assert layers.Flatten().compute_output_shape((None, 3, 4)).as_list() == [None, 12]


def test_reshaping_errors():
    with pytest.raises(ValueError, match="total size"):
        layers.Reshape((5,))(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="one -1"):
        layers.Reshape((-1, -1))
    with pytest.raises(ValueError, match="consecutive"):
        layers.Permute((1, 3))
    with pytest.raises(ValueError, match="ndim=2"):
        layers.RepeatVector(2)(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="n"):
        layers.RepeatVector(0)


def test_reshaping_configs():
    for layer in (layers.Flatten(), layers.Reshape((2, 3)), layers.Permute((3, 1, 2)),
                  layers.RepeatVector(4)):
        roundtrip(layer)


# -- Embedding, Masking, InputLayer --------------------------------------------------------------

def test_embedding_matches_numpy_and_masks():
    emb = layers.Embedding(6, 3, mask_zero=True, dtype="float64")
    ids = np.array([[1, 0, 5], [2, 2, 0]])
    emb.build(None)
    table = randn(6, 3)
    emb.set_weights([table])
    y = emb(ids)
    np.testing.assert_allclose(y.numpy(), table[ids])
    np.testing.assert_array_equal(layers.get_keras_mask(y).numpy(), ids != 0)
    np.testing.assert_allclose(emb(ids.astype(np.float32)).numpy(), table[ids])
    assert emb.compute_output_shape((None, 3)).as_list() == [None, 3, 3]


def test_embedding_gradient_and_errors():
    emb = layers.Embedding(5, 2, dtype="float64")
    check_layer_gradients(emb, np.array([[1, 3, 3], [0, 4, 1]]))
    with pytest.raises(ValueError, match="input_dim"):
        layers.Embedding(0, 3)
    clone = roundtrip(layers.Embedding(7, 2, mask_zero=True, embeddings_regularizer="l2"))
    assert clone.mask_zero


def test_masking_layer():
    x = randn(2, 4, 3)
    x[0, 1] = 0.0
    x[1, 3] = 0.0
    masking = layers.Masking(0.0, dtype="float64")
    y = masking(x)
    expected_mask = np.any(x != 0.0, axis=-1)
    np.testing.assert_array_equal(layers.get_keras_mask(y).numpy(), expected_mask)
    np.testing.assert_allclose(y.numpy(), x * expected_mask[..., None])
    roundtrip(layers.Masking(-1.0))


def test_input_layer():
    layer = layers.InputLayer(input_shape=(3,), batch_size=2, dtype="int32", name="inp")
    assert layer.batch_shape == (2, 3) and layer.dtype == "int32"
    x = ef.constant([[1, 2, 3]])
    assert layer(x) is x
    clone = layers.InputLayer.from_config(layer.get_config())
    assert clone.batch_shape == (2, 3)
    with pytest.raises(ValueError, match="not both"):
        layers.InputLayer(input_shape=(3,), batch_shape=(None, 3))


# -- EinsumDense ---------------------------------------------------------------------------------

def test_einsum_dense_matches_numpy():
    layer = layers.EinsumDense("abc,cde->abde", output_shape=(None, 2, 4), bias_axes="de",
                               activation="relu", dtype="float64")
    x = randn(3, 5, 6)
    layer.build(x.shape)
    k, b = randn(6, 2, 4), randn(2, 4)
    layer.set_weights([k, b])
    expected = np.maximum(np.einsum("abc,cde->abde", x, k) + b, 0)
    np.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-12)
    assert layer.compute_output_shape((None, 5, 6)).as_list() == [None, 5, 2, 4]
    ell = layers.EinsumDense("...b,bc->...c", output_shape=3, bias_axes="c", dtype="float64")
    check_layer_gradients(ell, randn(2, 4, 5))
    roundtrip(layer)


def test_einsum_dense_errors():
    with pytest.raises(ValueError, match="invalid equation"):
        layers.EinsumDense("ab->b", output_shape=2)
    with pytest.raises(ValueError, match="bias axis"):
        layers.EinsumDense("ab,bc->ac", output_shape=2, bias_axes="x")
    with pytest.raises(ValueError, match="no known size"):
        layers.EinsumDense("ab,bcd->ac", output_shape=2)(np.ones((1, 3), np.float32))
