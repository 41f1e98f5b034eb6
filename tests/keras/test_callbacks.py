"""Callbacks: hook order, early stopping, checkpoints, learning-rate changes, CSV logs, NaN."""

import csv
import math
import os

import numpy as np
import pytest

from eagerflow import keras
from eagerflow.keras import callbacks


def model_and_data(lr=0.1, n=16, seed=0, metrics=None, optimizer=None):
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2)).astype(np.float32)
    y = (x @ np.array([[1.0], [-1.0]], np.float32)).astype(np.float32)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer or keras.optimizers.SGD(lr), "mse", metrics=metrics)
    return model, x, y


class Recorder(callbacks.Callback):
    """Records every hook call as (name, index, sorted log keys)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def _rec(self, name, index=None, logs=None):
        self.calls.append((name, index, tuple(sorted(logs)) if logs is not None else None))


for _hook in ("on_train_begin", "on_train_end", "on_test_begin", "on_test_end",
              "on_predict_begin", "on_predict_end"):
    setattr(Recorder, _hook, (lambda n: lambda self, logs=None: self._rec(n, None, logs))(_hook))
for _hook in ("on_epoch_begin", "on_epoch_end", "on_train_batch_begin", "on_train_batch_end",
              "on_test_batch_begin", "on_test_batch_end", "on_predict_batch_begin",
              "on_predict_batch_end"):
    setattr(Recorder, _hook, (lambda n: lambda self, i, logs=None: self._rec(n, i, logs))(_hook))


def test_custom_callback_receives_every_hook_in_order():
    model, x, y = model_and_data(metrics=["mae"])
    rec = Recorder()
    model.fit(x, y, batch_size=8, epochs=2, validation_data=(x[:8], y[:8]), verbose=0,
              callbacks=[rec])
    names = [c[0] for c in rec.calls]
    epoch = (["on_epoch_begin"] + ["on_train_batch_begin", "on_train_batch_end"] * 2
             + ["on_test_begin", "on_test_batch_begin", "on_test_batch_end", "on_test_end",
                "on_epoch_end"])
    assert names == ["on_train_begin"] + epoch * 2 + ["on_train_end"]
    assert rec.calls[2] == ("on_train_batch_begin", 0, ())
    assert rec.calls[3] == ("on_train_batch_end", 0, ("loss", "mae"))
    epoch_end = [c for c in rec.calls if c[0] == "on_epoch_end"]
    assert epoch_end[0] == ("on_epoch_end", 0, ("loss", "mae", "val_loss", "val_mae"))
    assert rec.model is model and rec.params == {"verbose": 0, "epochs": 2, "steps": 2}

    rec.calls.clear()
    model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[rec])
    model.predict(x, batch_size=16, verbose=0, callbacks=[rec])
    assert [c[0] for c in rec.calls] == [
        "on_test_begin", "on_test_batch_begin", "on_test_batch_end", "on_test_batch_begin",
        "on_test_batch_end", "on_test_end", "on_predict_begin", "on_predict_batch_begin",
        "on_predict_batch_end", "on_predict_end"]
    assert rec.calls[-2][2] == ("outputs",)


def test_logs_are_python_floats():
    model, x, y = model_and_data()
    seen = []
    cb = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(logs),
                                  on_train_batch_end=lambda b, logs: seen.append(logs))
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])
    assert all(type(v) is float for logs in seen for v in logs.values())


def test_lambda_callback_hooks_in_order():
    model, x, y = model_and_data()
    events = []
    cb = callbacks.LambdaCallback(
        on_train_begin=lambda logs: events.append("train_begin"),
        on_epoch_begin=lambda e, logs: events.append("epoch_begin %d" % e),
        on_batch_begin=lambda b, logs: events.append("batch_begin %d" % b),
        on_batch_end=lambda b, logs: events.append("batch_end %d" % b),
        on_epoch_end=lambda e, logs: events.append("epoch_end %d" % e),
        on_train_end=lambda logs: events.append("train_end"))
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[cb])
    per_epoch = ["batch_begin 0", "batch_end 0", "batch_begin 1", "batch_end 1"]
    assert events == (["train_begin", "epoch_begin 0"] + per_epoch + ["epoch_end 0",
                      "epoch_begin 1"] + per_epoch + ["epoch_end 1", "train_end"])
    with pytest.raises(TypeError, match="unknown hook"):
        callbacks.LambdaCallback(on_epoch_finish=print)


def test_history_records_each_epoch_and_is_the_model_history():
    model, x, y = model_and_data(metrics=["mae"])
    history = model.fit(x, y, epochs=3, verbose=0)
    assert isinstance(history, callbacks.History) and model.history is history
    assert history.epoch == [0, 1, 2]
    assert sorted(history.history) == ["loss", "mae"]
    assert all(len(v) == 3 for v in history.history.values())


class LossSequence(callbacks.Callback):
    """Replaces the epoch's logged loss by a scripted sequence (to drive monitors)."""

    def __init__(self, values, key="loss"):
        super().__init__()
        self.values = values
        self.key = key

    def on_epoch_end(self, epoch, logs=None):
        logs[self.key] = self.values[epoch]


def test_early_stopping_stops_after_patience_and_restores_best_weights():
    model, x, y = model_and_data(lr=0.05)
    snapshots = []
    keep = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: snapshots.append(
        model.get_weights()))
    stopper = callbacks.EarlyStopping(monitor="loss", patience=2, restore_best_weights=True)
    history = model.fit(x, y, epochs=20, verbose=0, callbacks=[
        LossSequence([5.0, 3.0, 4.0, 3.5, 1.0, 0.5]), keep, stopper])
    # best at epoch 1 (3.0); epochs 2 and 3 do not improve -> stop after epoch 3
    assert history.epoch == [0, 1, 2, 3]
    assert stopper.stopped_epoch == 3 and stopper.best == 3.0 and stopper.best_epoch == 1
    for got, want in zip(model.get_weights(), snapshots[1]):
        np.testing.assert_array_equal(got, want)
    for got, last in zip(model.get_weights(), snapshots[3]):
        assert not np.array_equal(got, last)


def test_early_stopping_min_delta_mode_baseline_and_warmup():
    model, x, y = model_and_data()
    stopper = callbacks.EarlyStopping(monitor="acc", mode="max", min_delta=0.1, patience=1)
    history = model.fit(x, y, epochs=10, verbose=0, callbacks=[
        LossSequence([0.5, 0.55, 0.58, 0.9, 0.9], key="acc"), stopper])
    assert history.epoch == [0, 1]  # 0.55 is not 0.1 better than 0.5
    losses = [3.0, 2.0, 2.5, 2.2, 0.5, 0.4]
    baseline = callbacks.EarlyStopping(monitor="loss", baseline=1.0, patience=2)
    history = model.fit(x, y, epochs=6, verbose=0, callbacks=[LossSequence(losses), baseline])
    # Improvements that do not beat the baseline do not reset the patience count.
    assert history.epoch == [0, 1, 2]
    plain = callbacks.EarlyStopping(monitor="loss", patience=2)
    history = model.fit(x, y, epochs=6, verbose=0, callbacks=[LossSequence(losses), plain])
    assert history.epoch == [0, 1, 2, 3]
    warm = callbacks.EarlyStopping(monitor="loss", patience=0, start_from_epoch=3)
    history = model.fit(x, y, epochs=10, verbose=0, callbacks=[
        LossSequence([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), warm])
    assert history.epoch == [0, 1, 2, 3, 4]
    assert callbacks.EarlyStopping(monitor="val_accuracy")._monitor.mode == "auto"


def test_early_stopping_on_real_validation_loss(capsys):
    model, x, y = model_and_data(lr=0.0)  # nothing changes: stops after `patience` epochs
    stopper = callbacks.EarlyStopping(patience=2, verbose=1)
    history = model.fit(x, y, validation_split=0.25, epochs=10, verbose=0, callbacks=[stopper])
    assert history.epoch == [0, 1, 2]
    assert "Epoch 3: early stopping" in capsys.readouterr().out


def test_model_checkpoint_save_best_only_writes_only_on_improvement(tmp_path):
    model, x, y = model_and_data()
    path = str(tmp_path / "w-{epoch:02d}-{loss:.1f}.weights.h5")
    cb = callbacks.ModelCheckpoint(path, monitor="loss", save_best_only=True,
                                   save_weights_only=True)
    model.fit(x, y, epochs=5, verbose=0, callbacks=[LossSequence([3.0, 2.0, 2.5, 1.0, 1.5]),
                                                    cb])
    assert sorted(os.listdir(tmp_path)) == ["w-01-3.0.weights.h5", "w-02-2.0.weights.h5",
                                            "w-04-1.0.weights.h5"]
    # A fixed name: the file holds the weights of the best epoch.
    best = str(tmp_path / "best.weights.h5")
    snapshots = []
    cb = callbacks.ModelCheckpoint(best, monitor="val_loss", mode="min", save_best_only=True,
                                   save_weights_only=True)
    model.fit(x, y, epochs=4, verbose=0, validation_data=(x, y), callbacks=[
        LossSequence([1.0, 0.5, 0.7, 0.9], key="val_loss"),
        callbacks.LambdaCallback(on_epoch_end=lambda e, logs: snapshots.append(
            model.get_weights())),
        cb])
    restored = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    restored.load_weights(best)
    for got, want in zip(restored.get_weights(), snapshots[1]):
        np.testing.assert_array_equal(got, want)


def test_model_checkpoint_full_model_and_every_epoch(tmp_path, capsys):
    model, x, y = model_and_data()
    cb = callbacks.ModelCheckpoint(str(tmp_path / "m{epoch}.keras"), verbose=1)
    model.fit(x, y, epochs=2, verbose=0, callbacks=[cb])
    assert sorted(os.listdir(tmp_path)) == ["m1.keras", "m2.keras"]
    assert "Epoch 2: saving model to" in capsys.readouterr().out
    loaded = keras.models.load_model(str(tmp_path / "m2.keras"))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    with pytest.raises(ValueError, match=".keras"):
        callbacks.ModelCheckpoint(str(tmp_path / "model.h5"))
    with pytest.raises(KeyError, match="val_acc"):
        bad = callbacks.ModelCheckpoint(str(tmp_path / "{val_acc}.keras"))
        model.fit(x, y, epochs=1, verbose=0, callbacks=[bad])


def test_reduce_lr_on_plateau_changes_the_learning_rate():
    model, x, y = model_and_data(optimizer=keras.optimizers.SGD(0.1))
    cb = callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_lr=0.02)
    history = model.fit(x, y, epochs=6, verbose=0, callbacks=[
        LossSequence([1.0, 1.0, 1.0, 0.5, 0.5, 0.5]), cb])
    # epoch 1 and 2 stall -> 0.05, 0.025; epoch 3 improves; 4 stalls -> 0.02 (min_lr); 5 stays
    lrs = history.history["learning_rate"]
    np.testing.assert_allclose(lrs, [0.1, 0.1, 0.05, 0.025, 0.025, 0.02], rtol=1e-6)
    assert float(model.optimizer.learning_rate) == pytest.approx(0.02)
    with pytest.raises(ValueError, match="factor"):
        callbacks.ReduceLROnPlateau(factor=1.5)


def test_reduced_learning_rate_reaches_the_traced_step():
    model, x, y = model_and_data(lr=0.1)
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    w0 = model.get_weights()
    model.optimizer.learning_rate = 0.0  # what the LR callbacks do, between steps
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    for a, b in zip(w0, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert model.train_function.experimental_get_tracing_count() == 1


def test_learning_rate_scheduler_sets_the_rate_each_epoch(capsys):
    model, x, y = model_and_data(lr=1.0)
    cb = callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 * (epoch + 1), verbose=1)
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[cb])
    np.testing.assert_allclose(history.history["learning_rate"], [0.1, 0.2, 0.3], rtol=1e-6)
    assert "Epoch 3: LearningRateScheduler setting learning rate to 0.3" in capsys.readouterr().out
    model.fit(x, y, epochs=1, verbose=0,
              callbacks=[callbacks.LearningRateScheduler(lambda epoch: 0.01)])
    assert float(model.optimizer.learning_rate) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="float"):
        model.fit(x, y, epochs=1, verbose=0,
                  callbacks=[callbacks.LearningRateScheduler(lambda e, lr: "fast")])


def test_csv_logger_writes_a_header_and_one_row_per_epoch(tmp_path):
    model, x, y = model_and_data(metrics=["mae"])
    path = str(tmp_path / "log.csv")
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[callbacks.CSVLogger(path)])
    with open(path) as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "loss", "mae"]
    assert [int(r[0]) for r in rows[1:]] == [0, 1, 2]
    np.testing.assert_allclose([float(r[1]) for r in rows[1:]], history.history["loss"])
    model.fit(x, y, epochs=2, verbose=0,
              callbacks=[callbacks.CSVLogger(path, separator=";", append=True)])
    with open(path) as f:
        lines = f.read().splitlines()
    assert len(lines) == 6 and lines[4].startswith("0;")


def test_terminate_on_nan_stops_at_the_first_bad_batch(capsys):
    model, x, y = model_and_data(optimizer=keras.optimizers.SGD(1e30))
    y = y * 1e20
    seen = []
    cb = callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(logs["loss"]))
    history = model.fit(x, y, batch_size=2, epochs=5, verbose=0,
                        callbacks=[cb, callbacks.TerminateOnNaN()])
    assert len(history.epoch) == 1
    assert math.isnan(seen[-1]) or math.isinf(seen[-1])
    assert all(math.isfinite(v) for v in seen[:-1])
    assert "Invalid loss, terminating training" in capsys.readouterr().out


def test_callback_list_adds_history_and_progbar_once():
    history = callbacks.History()
    cbs = callbacks.CallbackList([history], add_history=True, add_progbar=True)
    assert [type(c).__name__ for c in cbs] == ["History", "ProgbarLogger"]
    with pytest.raises(TypeError, match="Callback"):
        callbacks.CallbackList([object()])


def test_batch_hooks_of_subclasses_of_builtin_callbacks_are_called(tmp_path):
    model, x, y = model_and_data()
    seen = []

    class Noisy(callbacks.ModelCheckpoint):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    model.fit(x, y, batch_size=8, epochs=1, verbose=0,
              callbacks=[Noisy(str(tmp_path / "m.keras"))])
    assert seen == [0, 1]


def test_model_checkpoint_every_n_batches(tmp_path):
    model, x, y = model_and_data(n=32)
    cb = callbacks.ModelCheckpoint(str(tmp_path / "b{epoch}-{batch}.weights.h5"),
                                   save_weights_only=True, save_freq=3)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[cb])
    assert sorted(os.listdir(tmp_path)) == ["b1-3.weights.h5", "b1-6.weights.h5"]
