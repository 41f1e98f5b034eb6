"""Keras writes under mpirun: the chief alone prints, logs and saves; resume after a kill.

Usage: keras_chief.py DIR writes | backup [--kill-at-epoch K]
  writes: fit with progress, ModelCheckpoint, CSVLogger and TensorBoard, then model.save;
          every rank then loads the saved file and checks it holds its weights.
  backup: fit 4 epochs with BackupAndRestore(DIR/backup); with --kill-at-epoch K rank 1
          SIGKILLs itself when epoch K begins (once: a marker file remembers).
Rank 0 writes DIR/final.json (final weights).
"""

import json
import os
import signal
import sys

import eagerflow as ef
import numpy as np

out, mode = sys.argv[1], sys.argv[2]
kill_at = int(sys.argv[sys.argv.index("--kill-at-epoch") + 1]) \
    if "--kill-at-epoch" in sys.argv else None
strategy = ef.distribute.MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id
(x, y), _ = ef.keras.datasets.digits.load_data()
x = (x.reshape(-1, 64) / 16.0).astype(np.float32)[:256]
y = y[:256]
with strategy.scope():
    ef.random.set_seed(3)
    model = ef.keras.Sequential([ef.keras.Input((64,)),
                                 ef.keras.layers.Dense(16, activation="relu"),
                                 ef.keras.layers.Dense(10)])
    model.compile(optimizer=ef.keras.optimizers.Adam(1e-2),
                  loss=ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True))


class KillAt(ef.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        marker = os.path.join(out, "killed")
        if rank == 1 and epoch == kill_at and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)


if mode == "writes":
    callbacks = [
        ef.keras.callbacks.ModelCheckpoint(os.path.join(out, "ckpt-{epoch}.weights.h5"),
                                           save_weights_only=True),
        ef.keras.callbacks.CSVLogger(os.path.join(out, "log.csv")),
        ef.keras.callbacks.TensorBoard(os.path.join(out, "tb")),
    ]
    model.fit(x, y, batch_size=64, epochs=3, shuffle=False, verbose=2, callbacks=callbacks)
    path = os.path.join(out, "model.keras")
    model.save(path)
    loaded = ef.keras.models.load_model(path)  # every rank: the barrier made it complete
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        assert np.array_equal(a, b)
else:
    callbacks = [ef.keras.callbacks.BackupAndRestore(os.path.join(out, "backup")), KillAt()]
    model.fit(x, y, batch_size=64, epochs=4, shuffle=False, verbose=2, callbacks=callbacks)
if rank == 0:
    with open(os.path.join(out, "final.json"), "w") as f:
        json.dump([w.ravel().tolist() for w in model.get_weights()], f)
print("rank %d OK" % rank, flush=True)
