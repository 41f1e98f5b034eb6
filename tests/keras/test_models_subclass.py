"""Subclassed models: call, build, custom train/test/predict steps (Keras 3 and tf.keras 2
styles), tracked metrics, and the traced step against eager execution."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


class MLP(keras.Model):
    def __init__(self, hidden=6, **kwargs):
        super().__init__(**kwargs)
        self.hidden = keras.layers.Dense(hidden, activation="tanh")
        self.norm = keras.layers.BatchNormalization()
        self.out = keras.layers.Dense(2)

    def call(self, x, training=False):
        return self.out(self.norm(self.hidden(x), training=training))


def data(n=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = np.stack([x[:, 0] - x[:, 1], x[:, 2] * 0.5], axis=1).astype(np.float32)
    return x, y


def test_build_creates_the_weights_and_counts_them():
    model = MLP(hidden=4)
    assert model.weights == []
    model.build((None, 3))
    # hidden 3*4+4; batch norm 4 gamma + 4 beta trainable, 4 mean + 4 variance not; out 4*2+2
    assert model.count_params() == 16 + 16 + 10
    assert len(model.trainable_weights) == 6 and len(model.non_trainable_weights) == 2
    with pytest.raises(ValueError, match="input_shape"):
        MLP().build()


def test_traced_and_eager_steps_give_the_same_weights():
    """The default traced train step and run_eagerly=True from the same initial weights and
    batches must end in the same place (Adam, batch norm statistics, 3 epochs x 4 steps)."""
    x, y = data()
    reference = MLP()
    reference.build((None, 3))
    start = reference.get_weights()
    results = []
    for run_eagerly in (False, True):
        model = MLP()
        model.build((None, 3))
        model.set_weights(start)
        model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"],
                      run_eagerly=run_eagerly)
        history = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
        results.append((model.get_weights(), history.history,
                        [v.numpy() for v in model.optimizer.variables]))
    (w_traced, h_traced, opt_traced), (w_eager, h_eager, opt_eager) = results
    assert len(w_traced) == 8
    for a, b in zip(w_traced, w_eager):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
    for a, b in zip(opt_traced, opt_eager):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
    for key in ("loss", "mae"):
        np.testing.assert_allclose(h_traced[key], h_eager[key], rtol=1e-5)
    assert not np.allclose(w_traced[0], start[0])  # it did train
    # batch norm statistics moved too
    assert not np.allclose(w_traced[-1], start[-1])


class CustomStep(keras.Model):
    """A Keras 3 style custom step: compute_loss, own loss tracker and metric."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(2)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")
        self.steps_seen = ef.Variable(0, dtype=ef.int64, trainable=False)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with ef.GradientTape() as tape:
            pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.steps_seen.assign_add(1)
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(y, pred)
        return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

    def test_step(self, data):
        x, y = data
        pred = self(x, training=False)
        self.mae_metric.update_state(y, pred * 0.0)  # a recognisable evaluation
        return {"mae": self.mae_metric.result()}

    def predict_step(self, data):
        return {"doubled": 2.0 * self(data, training=False)}

    @property
    def metrics(self):
        return [self.loss_tracker, self.mae_metric]


def test_custom_train_test_and_predict_steps_are_used():
    x, y = data(n=16)
    model = CustomStep()
    model.compile(keras.optimizers.SGD(0.1), "mse")
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert int(model.steps_seen) == 8 and int(model.optimizer.iterations) == 8
    assert sorted(history.history) == ["loss", "mae"]
    assert history.history["loss"][1] < history.history["loss"][0]
    # evaluate uses test_step: the mae of a zero prediction, with metrics reset first
    assert model.evaluate(x, y, verbose=0) == pytest.approx(float(np.mean(np.abs(y))),
                                                            rel=1e-5)
    out = model.predict(x, batch_size=5, verbose=0)
    np.testing.assert_allclose(out["doubled"], 2.0 * model(x).numpy(), rtol=1e-5)
    assert model.metrics_names == ["loss", "mae"]


class Keras2Style(keras.Model):
    """The tf.keras 2 custom step: compiled_loss / compiled_metrics / self.metrics."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1, kernel_regularizer=keras.regularizers.L2(0.1))

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with ef.GradientTape() as tape:
            pred = self(x, training=True)
            loss = self.compiled_loss(y, pred, regularization_losses=self.losses)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.compiled_metrics.update_state(y, pred)
        return {m.name: m.result() for m in self.metrics}


def test_tf_keras_2_style_custom_step():
    x = np.linspace(-1, 1, 8, dtype=np.float32)[:, None]
    y = 3.0 * x
    model = Keras2Style()
    model.build((None, 1))
    model.compile(keras.optimizers.SGD(0.0), "mse", metrics=["mae"])
    w, b = model.get_weights()
    history = model.fit(x, y, batch_size=8, verbose=0)
    pred = x @ w + b
    expected = np.mean((pred - y) ** 2) + 0.1 * np.sum(w ** 2)
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-5)
    np.testing.assert_allclose(history.history["mae"][0], np.mean(np.abs(pred - y)), rtol=1e-5)


def test_metrics_are_reset_each_epoch_and_on_reset_metrics():
    x, y = data(n=8)
    model = MLP()
    model.compile(keras.optimizers.SGD(0.0), "mse")
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)
    # a frozen model gives the same loss each epoch only if metrics restart at each epoch
    np.testing.assert_allclose(history.history["loss"], [history.history["loss"][0]] * 3,
                               rtol=1e-6)
    model.train_on_batch(x, y)
    model.reset_metrics()
    assert float(model.metrics[0].result()) == 0.0


def test_subclassed_model_without_call_raises():
    with pytest.raises(NotImplementedError, match="call"):
        keras.Model()(np.ones((1, 2)))


def test_add_loss_in_call_is_minimized():
    class Penalized(keras.Model):
        def __init__(self):
            super().__init__()
            self.w = ef.Variable([3.0])

        def call(self, x):
            self.add_loss(ef.reduce_sum(self.w * self.w))
            return x * self.w

    model = Penalized()
    model.compile(keras.optimizers.SGD(0.25))  # no compiled loss: only add_loss
    model.fit(np.ones((4, 1), np.float32), epochs=1, batch_size=4, verbose=0)
    # d(w^2)/dw = 2w: one step gives 3 - 0.25 * 6
    np.testing.assert_allclose(model.w.numpy(), [1.5])


def test_user_build_calling_super_build():
    class Scaled(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def build(self, input_shape):
            self.scale = self.add_weight("scale", (), initializer="ones")
            super().build(input_shape)

        def call(self, x):
            return self.dense(x) * self.scale

    eager = Scaled()
    assert eager(np.ones((1, 3), np.float32)).shape == (1, 2) and len(eager.weights) == 3
    built = Scaled()
    built.build((None, 3))
    assert built.count_params() == 1 + 3 * 2 + 2
    assert built.get_build_config() == {"input_shape": [None, 3]}
