"""Keras behaviour ordinary TF 2 programs rely on (checked against TF 2.21 + Keras 3)."""

import warnings

import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


def _mlp():
    inputs = keras.Input(shape=(4,))
    hidden = keras.layers.Dense(3, name="hidden")(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, name="head")(hidden))


def test_layer_symbolic_input_and_output():
    model = _mlp()
    assert model.layers[1].output.shape.as_list() == [None, 3]
    assert model.layers[1].input.shape.as_list() == [None, 4]
    assert model.layers[0].output is model.input
    with pytest.raises(AttributeError, match="never been called"):
        _ = keras.layers.Dense(2).output


def test_feature_extraction_model():
    model = _mlp()
    features = keras.Model(inputs=model.input, outputs=model.layers[1].output)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    kernel, bias = model.layers[1].get_weights()
    np.testing.assert_allclose(features(x).numpy(), x @ kernel + bias, rtol=1e-5)


def test_feature_extraction_from_sequential():
    seq = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    first = keras.Model(seq.inputs, seq.layers[0].output)
    assert first(np.ones((2, 5), np.float32)).shape == (2, 3)


def test_model_subclass_made_functionally_keeps_its_train_step():
    class CustomModel(keras.Model):
        def train_step(self, data):
            x, y = data
            with ef.GradientTape() as tape:
                loss = ef.reduce_mean((self(x, training=True) - y) ** 2)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"my_loss": loss}

    inputs = keras.Input((3,))
    model = CustomModel(inputs, keras.layers.Dense(1)(inputs))
    assert isinstance(model, CustomModel) and isinstance(model, keras.Model)
    model.compile(optimizer="sgd")
    history = model.fit(np.ones((8, 3)), np.ones((8, 1)), epochs=2, verbose=0)
    assert sorted(history.history) == ["my_loss"] and len(history.history["my_loss"]) == 2


def test_fit_with_steps_per_epoch_longer_than_the_dataset():
    # Keras 3: the epoch ends early with a warning, and every epoch starts a new pass.
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    ds = ef.data.Dataset.from_tensor_slices(
        (np.ones((8, 3), np.float32), np.ones((8, 1), np.float32))).batch(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(ds, epochs=3, steps_per_epoch=5, verbose=0)
    assert len(history.history["loss"]) == 3
    assert any("ran out of data" in str(w.message) for w in caught)


def test_callbacks_receive_empty_dicts():
    seen = []

    class Record(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            seen.append(logs)

        def on_epoch_begin(self, epoch, logs=None):
            seen.append(logs)

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 3)), np.ones((4, 1)), epochs=1, verbose=0, callbacks=[Record()])
    assert seen == [{}, {}]


def test_keras_random_and_backend_random():
    a = keras.random.normal((3,), seed=5)
    assert np.array_equal(a.numpy(), keras.random.normal((3,), seed=5).numpy())
    gen = keras.random.SeedGenerator(1)
    x, y = keras.random.uniform((4,), seed=gen), keras.random.uniform((4,), seed=gen)
    assert not np.array_equal(x.numpy(), y.numpy())
    ints = keras.random.randint((100,), 0, 3, seed=2).numpy()
    assert ints.dtype == np.int32 and set(ints.tolist()) <= {0, 1, 2}
    dropped = keras.random.dropout(ef.ones([1000]), 0.5, seed=3).numpy()
    assert set(np.unique(dropped).tolist()) <= {0.0, 2.0} and 300 < (dropped == 0).sum() < 700
    shuffled = keras.random.shuffle(ef.range(10), seed=4).numpy()
    assert sorted(shuffled.tolist()) == list(range(10))
    assert keras.backend.random_normal((2, 3)).shape == (2, 3)
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD())
    assert isinstance(opt, keras.optimizers.Optimizer)


def test_linspace_with_python_ints_is_float64():
    out = ef.linspace(-2, 2, 5)
    assert out.dtype == ef.float64 and out.numpy().tolist() == [-2.0, -1.0, 0.0, 1.0, 2.0]
    assert ef.linspace(0.0, 1, 3).dtype == ef.float32
