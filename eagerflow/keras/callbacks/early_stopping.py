"""``EarlyStopping``: stops training when a monitored metric stops improving.

Example:
    >>> import numpy as np
    >>> from eagerflow import keras
    >>> m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> m.compile(keras.optimizers.SGD(0.0), "mse")  # a zero learning rate never improves
    >>> h = m.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=10, verbose=0,
    ...           callbacks=[keras.callbacks.EarlyStopping(monitor="loss", patience=2)])
    >>> len(h.history["loss"])
    3
"""

from __future__ import annotations

import sys
import warnings

from eagerflow.keras.callbacks.callback import Callback
from eagerflow.keras.callbacks.monitor import Monitor

__all__ = ["EarlyStopping"]


class EarlyStopping(Callback):
    """Stops training when ``monitor`` has not improved for ``patience`` epochs.

    An epoch improves when its value beats the best so far by more than ``min_delta`` (lower
    in "min" mode, higher in "max" mode). ``patience`` counts the epochs since the last
    improvement; training stops when it is reached.

    Args:
        monitor: The quantity watched (default ``"val_loss"``).
        min_delta: Minimum change that counts as an improvement.
        patience: Epochs without improvement before stopping.
        verbose: 1 prints a message when stopping and restoring.
        mode: ``"auto"`` (from the metric), ``"min"`` or ``"max"``.
        baseline: Training stops if the monitored value does not beat this within
            ``patience`` epochs.
        restore_best_weights: At the end of training, restore the weights of the best epoch
            (seen after ``start_from_epoch``), whether training stopped early or not.
        start_from_epoch: Epochs of warm-up during which nothing is monitored.

    Example:
        >>> from eagerflow.keras.callbacks import EarlyStopping
        >>> EarlyStopping(monitor="val_accuracy", patience=3).patience
        3
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor = monitor
        self.patience = int(patience)
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.restore_best_weights = bool(restore_best_weights)
        self.start_from_epoch = int(start_from_epoch)
        self._monitor = Monitor(monitor, mode, min_delta, "EarlyStopping")
        self.mode = self._monitor.mode
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best_weights = None
        self.best_epoch = 0
        self._monitor.direction = None
        self.best = None

    def on_epoch_end(self, epoch, logs=None):
        self._monitor.resolve(self.model)
        if self.best is None:
            self.best = self._monitor.initial_best()
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._monitor.is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._monitor.is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            sys.stdout.write("Epoch %d: early stopping\n" % (self.stopped_epoch + 1))
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                sys.stdout.write("Restoring model weights from the end of the best epoch: "
                                 "%d.\n" % (self.best_epoch + 1))
            self.model.set_weights(self.best_weights)

    def get_monitor_value(self, logs):
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn("Early stopping conditioned on metric `%s` which is not available. "
                          "Available metrics are: %s" % (self.monitor, ",".join(logs)),
                          stacklevel=2)
        return value
