"""fit / evaluate / predict end to end, checked against numpy computed by hand.

Losses with a zero learning rate are closed-form (the model never moves); one full-batch SGD
step is compared with the gradient written out in numpy; the bundled digits must be learned;
progress output is checked for each verbosity on terminal-like and plain streams.
"""

import io
import re
import sys

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


def linear_model(units=1, inputs=3, seed=0, run_eagerly=False, lr=0.1, loss="mse",
                 metrics=None, optimizer=None):
    rng = np.random.default_rng(seed)
    model = keras.Sequential([keras.Input((inputs,)), keras.layers.Dense(units)])
    w = rng.standard_normal((inputs, units)).astype(np.float32)
    b = rng.standard_normal(units).astype(np.float32)
    model.set_weights([w, b])
    model.compile(optimizer=optimizer or keras.optimizers.SGD(lr), loss=loss, metrics=metrics,
                  run_eagerly=run_eagerly)
    return model, w, b


def data(n=40, inputs=3, units=1, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, inputs)).astype(np.float32)
    y = rng.standard_normal((n, units)).astype(np.float32)
    return x, y


# -- closed-form losses ------------------------------------------------------------------------
@pytest.mark.parametrize("run_eagerly", [False, True])
def test_zero_learning_rate_loss_is_the_numpy_mse(run_eagerly):
    x, y = data()
    model, w, b = linear_model(lr=0.0, run_eagerly=run_eagerly, metrics=["mae"])
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    pred = x @ w + b
    mse = float(np.mean((pred - y) ** 2))
    mae = float(np.mean(np.abs(pred - y)))
    # 16 + 16 + 8 samples: the epoch loss is the sample-weighted mean, i.e. the full mean.
    np.testing.assert_allclose(history.history["loss"], [mse, mse], rtol=1e-5)
    np.testing.assert_allclose(history.history["mae"], [mae, mae], rtol=1e-5)
    assert history.epoch == [0, 1]
    loss, mae_eval = model.evaluate(x, y, batch_size=7, verbose=0)
    np.testing.assert_allclose([loss, mae_eval], [mse, mae], rtol=1e-5)
    np.testing.assert_allclose(model.predict(x, batch_size=7, verbose=0), pred, rtol=1e-5,
                               atol=1e-6)


def test_one_full_batch_sgd_step_matches_the_numpy_gradient():
    x, y = data(n=12)
    model, w, b = linear_model(lr=0.05)
    model.fit(x, y, batch_size=12, epochs=1, verbose=0, shuffle=False)
    residual = x @ w + b - y  # d mean((xw+b-y)^2) / dw = 2/n x^T r
    grad_w = 2.0 * x.T @ residual / 12
    grad_b = 2.0 * residual.sum(axis=0) / 12
    new_w, new_b = model.get_weights()
    np.testing.assert_allclose(new_w, w - 0.05 * grad_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_b, b - 0.05 * grad_b, rtol=1e-5, atol=1e-6)
    assert int(model.optimizer.iterations) == 1


def test_loss_decreases_and_training_converges_on_a_linear_target():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((200, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25
    model, _, _ = linear_model(optimizer=keras.optimizers.Adam(0.05))
    history = model.fit(x, y, batch_size=20, epochs=30, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 1e-3 < losses[0]
    w, b = model.get_weights()
    np.testing.assert_allclose(w[:, 0], [1.0, -2.0, 0.5], atol=0.02)


def test_sample_weight_and_class_weight_weight_the_loss():
    x, y = data(n=8)
    model, w, b = linear_model(lr=0.0)
    sw = np.array([1, 2, 0, 1, 3, 1, 0, 2], np.float32)
    history = model.fit(x, y, sample_weight=sw, batch_size=8, epochs=1, verbose=0)
    per_sample = ((x @ w + b - y) ** 2)[:, 0]
    # "sum_over_batch_size": sum(w * l) / batch size.
    np.testing.assert_allclose(history.history["loss"][0], np.sum(sw * per_sample) / 8,
                               rtol=1e-5)

    labels = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    model2 = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model2.compile(keras.optimizers.SGD(0.0), keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    logits = x @ model2.get_weights()[0] + model2.get_weights()[1]
    shifted = logits - logits.max(axis=1, keepdims=True)
    ce = np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(8), labels]
    weights = np.where(labels == 1, 3.0, 0.5)
    history = model2.fit(x, labels, class_weight={0: 0.5, 1: 3.0}, batch_size=8, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], np.sum(weights * ce) / 8, rtol=1e-5)


def test_validation_split_takes_the_last_samples_before_shuffling():
    x, y = data(n=50)
    model, w, b = linear_model(lr=0.0)
    history = model.fit(x, y, validation_split=0.2, batch_size=8, epochs=1, verbose=0)
    pred = x @ w + b
    np.testing.assert_allclose(history.history["val_loss"][0],
                               np.mean((pred[40:] - y[40:]) ** 2), rtol=1e-5)
    np.testing.assert_allclose(history.history["loss"][0],
                               np.mean((pred[:40] - y[:40]) ** 2), rtol=1e-5)
    assert sorted(history.history) == ["loss", "val_loss"]


def test_validation_data_tuple_dataset_and_freq():
    x, y = data(n=30)
    vx, vy = data(n=10, seed=5)
    model, w, b = linear_model(lr=0.0, metrics=["mae"])
    history = model.fit(x, y, validation_data=(vx, vy), epochs=4, validation_freq=2,
                        verbose=0)
    expected = np.mean((vx @ w + b - vy) ** 2)
    assert len(history.history["loss"]) == 4
    assert len(history.history["val_loss"]) == 2  # epochs 2 and 4 only
    np.testing.assert_allclose(history.history["val_loss"], [expected] * 2, rtol=1e-5)
    assert "val_mae" in history.history

    ds = ef.data.Dataset.from_tensor_slices((vx, vy)).batch(4)
    history = model.fit(x, y, validation_data=ds, epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["val_loss"][0], expected, rtol=1e-5)


def test_fit_on_datasets_generators_and_steps():
    x, y = data(n=24)
    model, w, b = linear_model(lr=0.0)
    expected = np.mean((x @ w + b - y) ** 2)
    ds = ef.data.Dataset.from_tensor_slices((x, y)).batch(5)
    history = model.fit(ds, epochs=2, verbose=0)
    np.testing.assert_allclose(history.history["loss"], [expected] * 2, rtol=1e-5)
    np.testing.assert_allclose(model.evaluate(ds, verbose=0), expected, rtol=1e-5)
    assert model.predict(ds, verbose=0).shape == (24, 1)
    # Infinite dataset: steps_per_epoch is required, then honoured.
    with pytest.raises(ValueError, match="steps_per_epoch"):
        model.fit(ds.repeat(), epochs=1, verbose=0)
    seen = []
    cb = keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b))
    model.fit(ds.repeat(), epochs=2, steps_per_epoch=3, verbose=0, callbacks=[cb])
    assert seen == [0, 1, 2, 0, 1, 2]

    def batches():
        for i in range(0, 24, 8):
            yield x[i:i + 8], y[i:i + 8]

    history = model.fit(batches(), epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-5)
    with pytest.raises(ValueError, match="`y` argument is not supported"):
        model.fit(ds, y, verbose=0)


def test_dataset_with_sample_weights():
    x, y = data(n=6)
    sw = np.array([0, 1, 1, 0, 2, 2], np.float32)
    model, w, b = linear_model(lr=0.0)
    ds = ef.data.Dataset.from_tensor_slices((x, y, sw)).batch(6)
    history = model.fit(ds, verbose=0)
    per = ((x @ w + b - y) ** 2)[:, 0]
    np.testing.assert_allclose(history.history["loss"][0], np.sum(sw * per) / 6, rtol=1e-5)


def test_cardinality_mismatch_and_uncompiled_errors():
    x, y = data(n=10)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(x, y, verbose=0)
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="cardinality"):
        model.fit(x, y[:9], verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(x[:1], y[:1], validation_split=0.5, verbose=0)
    with pytest.raises(ValueError, match="No loss"):
        bare = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        bare.compile("sgd")
        bare.fit(x, y, verbose=0)


def test_one_trace_serves_every_batch_size():
    x, y = data(n=45)
    model, _, _ = linear_model()
    model.fit(x, y, batch_size=16, epochs=3, verbose=0)  # 16, 16, 13
    model.evaluate(x, y, batch_size=20, verbose=0)  # 20, 20, 5
    model.predict(x, batch_size=7, verbose=0)
    assert model.train_function.experimental_get_tracing_count() == 1
    assert model.test_function.experimental_get_tracing_count() == 1
    assert model.predict_function.experimental_get_tracing_count() == 1


def test_regularization_losses_join_the_loss():
    x, y = data(n=10)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(
        1, kernel_regularizer=keras.regularizers.L2(0.5))])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    w, b = model.get_weights()
    history = model.fit(x, y, batch_size=10, verbose=0)
    expected = np.mean((x @ w + b - y) ** 2) + 0.5 * np.sum(w ** 2)
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-5)


def test_binary_and_categorical_accuracy_are_resolved_from_the_loss():
    x = np.array([[1.0], [-1.0], [2.0], [-3.0]], np.float32)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(
        1, activation="sigmoid", kernel_initializer="ones")])
    model.compile("sgd", "binary_crossentropy", metrics=["accuracy"])
    loss, acc = model.evaluate(x, np.array([1, 0, 0, 0]), verbose=0)
    assert acc == pytest.approx(0.75)  # predictions 1, 0, 1, 0 against 1, 0, 0, 0
    onehot = keras.utils.to_categorical([0, 1, 1])
    cat = keras.Sequential([keras.Input((2,)),
                            keras.layers.Dense(2, kernel_initializer="identity")])
    cat.compile("sgd", keras.losses.CategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
    _, acc = cat.evaluate(np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0]], np.float32), onehot,
                          verbose=0)
    assert acc == pytest.approx(2 / 3)


def test_digits_reach_high_accuracy():
    keras.utils.set_random_seed(0)
    (x_train, y_train), (x_test, y_test) = keras.datasets.digits.load_data()
    model = keras.Sequential([keras.Input((8, 8)), keras.layers.Flatten(),
                              keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile(keras.optimizers.Adam(3e-3),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x_train / 16.0, y_train, batch_size=64, epochs=15, verbose=0,
                        validation_split=0.1)
    assert history.history["loss"][-1] < history.history["loss"][0] / 5
    assert history.history["val_accuracy"][-1] > 0.9
    _, accuracy = model.evaluate(x_test / 16.0, y_test, verbose=0)
    assert accuracy > 0.93


def test_train_test_predict_on_batch():
    x, y = data(n=6)
    model, w, b = linear_model(lr=0.0, metrics=["mae"])
    loss, mae = model.train_on_batch(x, y)
    np.testing.assert_allclose(loss, np.mean((x @ w + b - y) ** 2), rtol=1e-5)
    logs = model.test_on_batch(x, y, return_dict=True)
    assert sorted(logs) == ["loss", "mae"]
    np.testing.assert_allclose(model.predict_on_batch(x), x @ w + b, rtol=1e-5, atol=1e-6)


def test_initial_epoch_and_epoch_count():
    x, y = data(n=8)
    model, _, _ = linear_model()
    history = model.fit(x, y, epochs=5, initial_epoch=3, verbose=0)
    assert history.epoch == [3, 4]


# -- progress output ----------------------------------------------------------------------------
class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty


def _fit_output(monkeypatch, verbose, tty, epochs=2):
    x, y = data(n=20)
    model, _, _ = linear_model(metrics=["mae"])
    stream = _Stream(tty)
    monkeypatch.setattr(sys, "stdout", stream)
    model.fit(x, y, batch_size=5, epochs=epochs, verbose=verbose)
    return stream.getvalue()


LINE = re.compile(r"^4/4 - \d+s - \d+(us|ms|s)/step - loss: \d+\.\d{4} - mae: \d+\.\d{4}$")


def test_verbose_0_prints_nothing(monkeypatch):
    assert _fit_output(monkeypatch, 0, tty=True) == ""


@pytest.mark.parametrize("verbose", [2, 1, "auto"])
def test_one_line_per_epoch_when_not_a_terminal(monkeypatch, verbose):
    out = _fit_output(monkeypatch, verbose, tty=False)
    lines = out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    assert LINE.match(lines[1]) and LINE.match(lines[3]), out
    assert "\r" not in out and len(lines) == 4


@pytest.mark.parametrize("verbose", [1, "auto"])
def test_live_bar_on_a_terminal(monkeypatch, verbose):
    out = _fit_output(monkeypatch, verbose, tty=True, epochs=1)
    assert "\r" in out and out.endswith("\n")
    final = out.rsplit("\r", 1)[1]
    assert final.startswith("4/4 ") and "\u2501" in final
    assert re.search(r" \d+s \d+(us|ms|s)/step - loss: \d+\.\d{4} - mae: \d+\.\d{4}", final)
    assert "Epoch" not in out  # a single epoch gets no "Epoch 1/1" header, as in Keras


def test_verbose_2_on_a_terminal_and_capsys(capsys):
    x, y = data(n=20)
    model, _, _ = linear_model()
    model.fit(x, y, batch_size=5, epochs=1, verbose=2)
    model.evaluate(x, y, batch_size=5, verbose=2)
    model.predict(x, batch_size=5, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert re.match(r"^4/4 - \d+s - \d+(us|ms|s)/step - loss: \d+\.\d{4}$", lines[0])
    assert re.match(r"^4/4 - \d+s - \d+(us|ms|s)/step - loss: \d+\.\d{4}$", lines[1])
    assert re.match(r"^4/4 - \d+s - \d+(us|ms|s)/step$", lines[2])
    assert len(lines) == 3


def test_bad_verbose_value():
    x, y = data(n=4)
    model, _, _ = linear_model()
    with pytest.raises(ValueError, match="verbose"):
        model.fit(x, y, verbose=3)


def test_mixed_float16_wraps_the_optimizer_and_trains():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(1, dtype="float32")])
    finally:
        keras.mixed_precision.set_global_policy("float32")
    model.compile(keras.optimizers.Adam(0.01), "mse")
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert model.layers[0].kernel.dtype == ef.float32  # float32 master weights
    x, y = data(n=64)
    history = model.fit(x, y, epochs=5, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
