"""``ModelCheckpoint``: saves the model (or its weights) during training.

Example:
    >>> from eagerflow.keras.callbacks import ModelCheckpoint
    >>> cb = ModelCheckpoint("ckpt-{epoch:02d}-{val_loss:.2f}.weights.h5",
    ...                      save_weights_only=True)
    >>> cb._file_path(4, None, {"val_loss": 0.123})
    'ckpt-05-0.12.weights.h5'
"""

from __future__ import annotations

import os
import sys
import warnings

from eagerflow.keras.callbacks.callback import Callback
from eagerflow.keras.callbacks.monitor import Monitor

__all__ = ["ModelCheckpoint"]


class ModelCheckpoint(Callback):
    """Saves the model or its weights at the end of epochs (or every ``save_freq`` batches).

    ``filepath`` may contain ``str.format`` fields: ``{epoch}`` (1-based) and any log key,
    e.g. ``"model-{epoch:02d}-{val_loss:.2f}.keras"``. Every file is written atomically
    (temporary file, fsync, rename), so an interrupted save keeps the previous checkpoint.

    Args:
        filepath: Where to save; must end in ``.keras`` unless ``save_weights_only``.
        monitor: The quantity compared when ``save_best_only`` (default ``"val_loss"``).
        verbose: 1 prints a line per save (or skipped save).
        save_best_only: Save only when ``monitor`` improves on the best value so far.
        save_weights_only: Save with ``save_weights`` instead of ``save``.
        mode: ``"auto"``, ``"min"`` or ``"max"`` for ``monitor``.
        save_freq: ``"epoch"`` or a number of batches between saves.
        initial_value_threshold: A starting "best" value to beat.

    Raises:
        ValueError: For a bad ``save_freq`` or a full-model path not ending in ``.keras``.

    Example:
        >>> from eagerflow.keras.callbacks import ModelCheckpoint
        >>> ModelCheckpoint("best.keras", save_best_only=True).monitor
        'val_loss'
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None, **kwargs):
        super().__init__()
        kwargs.pop("options", None)
        if kwargs.pop("period", None) is not None:
            warnings.warn("`period` argument is deprecated; use `save_freq`.", stacklevel=2)
        if kwargs:
            raise TypeError("ModelCheckpoint: unrecognized arguments %s." % sorted(kwargs))
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = bool(save_best_only)
        self.save_weights_only = bool(save_weights_only)
        self.save_freq = save_freq
        self._monitor = Monitor(monitor, mode, 0.0, "ModelCheckpoint")
        self.mode = self._monitor.mode
        self.best = initial_value_threshold
        self._batches_seen_since_last_saving = 0
        self._current_epoch = 0
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError("Unrecognized save_freq: %r. Expected 'epoch' or a positive "
                             "integer number of batches." % (save_freq,))
        if not self.save_weights_only and not self.filepath.endswith(".keras"):
            raise ValueError("The filepath provided must end in `.keras` (Keras model format). "
                             "Received: filepath=%s. To save only the weights, pass "
                             "save_weights_only=True." % self.filepath)

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def _needs_batch_hooks(self):
        return self.save_freq != "epoch"

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        self._batches_seen_since_last_saving += 1
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            self._save(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _save(self, epoch, batch, logs):
        logs = logs or {}
        self._monitor.resolve(self.model)
        path = self._file_path(epoch, batch, logs)
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn("Can save best model only with %s available, skipping. "
                              "Available: %s" % (self.monitor, sorted(logs)), stacklevel=2)
                return
            if not self._monitor.is_improvement(current, self.best):
                if self.verbose > 0:
                    sys.stdout.write("\nEpoch %d: %s did not improve from %.5f\n"
                                     % (epoch + 1, self.monitor, self.best))
                return
            if self.verbose > 0:
                previous = self.best if self.best is not None else self._monitor.initial_best()
                sys.stdout.write("\nEpoch %d: %s improved from %.5f to %.5f, saving model to "
                                 "%s\n" % (epoch + 1, self.monitor, previous, current, path))
            self.best = current
        elif self.verbose > 0:
            sys.stdout.write("\nEpoch %d: saving model to %s\n" % (epoch + 1, path))
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)

    def _file_path(self, epoch, batch, logs):
        fields = dict(logs or {})
        fields["epoch"] = epoch + 1
        if batch is not None:
            fields["batch"] = batch + 1
        try:
            return self.filepath.format(**fields)
        except KeyError as exc:
            raise KeyError("Failed to format this callback filepath: %r. Reason: the key %s is "
                           "not among the logs %s." % (self.filepath, exc, sorted(fields))
                           ) from None
