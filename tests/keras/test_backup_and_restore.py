"""BackupAndRestore in one process: resume equals an uninterrupted fit; bad state refused."""

import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.framework import worker_context


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((96, 5)).astype(np.float32), rng.integers(0, 3, 96)


def _model():
    ef.random.set_seed(11)
    m = ef.keras.Sequential([ef.keras.Input((5,)), ef.keras.layers.Dense(8, activation="relu"),
                             ef.keras.layers.Dense(3)])
    m.compile(optimizer=ef.keras.optimizers.Adam(1e-2),
              loss=ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


class _Interrupt(ef.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 2:
            raise KeyboardInterrupt


def test_resumed_fit_ends_with_the_weights_and_step_count_of_an_uninterrupted_one(tmp_path):
    x, y = _data()
    whole = _model()
    whole.fit(x, y, batch_size=32, epochs=4, shuffle=False, verbose=0)
    backup = ef.keras.callbacks.BackupAndRestore(str(tmp_path))
    stopped = _model()
    with pytest.raises(KeyboardInterrupt):
        stopped.fit(x, y, batch_size=32, epochs=4, shuffle=False, verbose=0,
                    callbacks=[backup, _Interrupt()])
    assert sorted(os.listdir(tmp_path)) == ["epoch-1.efckpt", "training_state.json"]
    resumed = _model()
    history = resumed.fit(x, y, batch_size=32, epochs=4, shuffle=False, verbose=0,
                          callbacks=[ef.keras.callbacks.BackupAndRestore(str(tmp_path))])
    assert len(history.history["loss"]) == 2  # epochs 3 and 4 only
    assert int(resumed.optimizer.iterations) == int(whole.optimizer.iterations) == 12
    for a, b in zip(whole.get_weights(), resumed.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert os.listdir(tmp_path) == []  # removed after the completed fit


@pytest.mark.parametrize("state", [
    '{"epoch": -1, "weights": "epoch--1"}', '{"epoch": 1, "weights": "../../etc/passwd"}',
    '{"epoch": 1, "weights": "epoch-2"}', "not json", '{"epoch": true, "weights": "epoch-1"}',
    "x" * 5000,
])
def test_a_damaged_state_file_is_refused_with_the_fix(tmp_path, state):
    (tmp_path / "training_state.json").write_text(state)
    x, y = _data()
    with pytest.raises(ValueError, match="not a valid training state.*delete the backup"):
        _model().fit(x, y, epochs=1, verbose=0,
                     callbacks=[ef.keras.callbacks.BackupAndRestore(str(tmp_path))])


def test_bad_arguments():
    with pytest.raises(ValueError, match="backup_dir"):
        ef.keras.callbacks.BackupAndRestore("")
    with pytest.raises(ValueError, match="save_freq"):
        ef.keras.callbacks.BackupAndRestore("d", save_freq=10)


def test_worker_context_without_workers_writes_everywhere(tmp_path):
    assert worker_context.is_chief(None) and not worker_context.multi_worker(None)
    with worker_context.write_path(None, str(tmp_path / "f")) as path:
        assert path == str(tmp_path / "f")
    strategy = ef.distribute.MirroredStrategy(["/cpu:0"])
    assert worker_context.is_chief(strategy) and not worker_context.multi_worker(strategy)
