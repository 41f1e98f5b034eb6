"""Callbacks that change the optimizer's learning rate: ``LearningRateScheduler`` (a
function of the epoch) and ``ReduceLROnPlateau`` (divide it when a metric stalls).

Both write the rate into the learning-rate variable the traced training step reads, so the
change takes effect at the next step without retracing, and add ``learning_rate`` to the
epoch logs (so ``History`` records it).

Example:
    >>> from eagerflow.keras.callbacks import LearningRateScheduler
    >>> cb = LearningRateScheduler(lambda epoch, lr: lr * 0.5)
    >>> cb.schedule(1, 0.1)
    0.05
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from eagerflow.keras.callbacks.callback import Callback
from eagerflow.keras.callbacks.monitor import Monitor

__all__ = ["LearningRateScheduler", "ReduceLROnPlateau"]


def _optimizer(model, who):
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise ValueError('%s: the optimizer must have a "learning_rate" attribute; compile '
                         "the model with an optimizer first." % who)
    return optimizer


def _current_lr(optimizer):
    return float(np.asarray(optimizer.learning_rate))


class LearningRateScheduler(Callback):
    """Sets the learning rate at the start of each epoch to ``schedule(epoch, lr)``.

    Args:
        schedule: ``f(epoch, lr) -> new lr`` (``f(epoch)`` is accepted too); ``epoch`` counts
            from 0 and ``lr`` is the current rate.
        verbose: 1 prints the new rate each epoch.

    Raises:
        ValueError: If the schedule returns something that is not a number.

    Example:
        >>> from eagerflow.keras.callbacks import LearningRateScheduler
        >>> LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1)).verbose
        0
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = _optimizer(self.model, "LearningRateScheduler")
        lr = _current_lr(optimizer)
        try:
            new_lr = self.schedule(epoch, lr)
        except TypeError:  # a schedule of the epoch only
            new_lr = self.schedule(epoch)
        try:
            new_lr = float(np.asarray(new_lr))
        except (TypeError, ValueError):
            raise ValueError('The output of the "schedule" function should be a float. Got: %r'
                             % (new_lr,)) from None
        optimizer.learning_rate = new_lr
        if self.verbose > 0:
            sys.stdout.write("\nEpoch %d: LearningRateScheduler setting learning rate to %s.\n"
                             % (epoch + 1, new_lr))

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = _current_lr(_optimizer(self.model, "LearningRateScheduler"))


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by ``factor`` when ``monitor`` stalls for ``patience``
    epochs.

    Args:
        monitor: The quantity watched (default ``"val_loss"``).
        factor: The multiplier, in (0, 1).
        patience: Epochs without improvement before reducing.
        verbose: 1 prints a message on each reduction.
        mode: ``"auto"``, ``"min"`` or ``"max"``.
        min_delta: Minimum change that counts as an improvement.
        cooldown: Epochs to wait after a reduction before counting again.
        min_lr: The rate never goes below this.

    Raises:
        ValueError: If ``factor >= 1``.

    Example:
        >>> from eagerflow.keras.callbacks import ReduceLROnPlateau
        >>> ReduceLROnPlateau(factor=0.5, patience=2).factor
        0.5
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        super().__init__()
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
            warnings.warn("`epsilon` argument is deprecated; use `min_delta`.", stacklevel=2)
        if kwargs:
            raise TypeError("ReduceLROnPlateau: unrecognized arguments %s." % sorted(kwargs))
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0. Received "
                             "factor=%r" % (factor,))
        self.monitor = monitor
        self.factor = float(factor)
        self.patience = int(patience)
        self.verbose = verbose
        self.min_delta = min_delta
        self.cooldown = int(cooldown)
        self.min_lr = float(min_lr)
        self._monitor = Monitor(monitor, mode, min_delta, "ReduceLROnPlateau")
        self.mode = self._monitor.mode
        self._reset()

    def _reset(self):
        self.best = None
        self.wait = 0
        self.cooldown_counter = 0
        self._monitor.direction = None

    def on_train_begin(self, logs=None):
        self._reset()

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        optimizer = _optimizer(self.model, "ReduceLROnPlateau")
        logs["learning_rate"] = _current_lr(optimizer)
        self._monitor.resolve(self.model)
        if self.best is None:
            self.best = self._monitor.initial_best()
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn("Learning rate reduction is conditioned on metric `%s` which is not "
                          "available. Available metrics are: %s" % (self.monitor, ",".join(logs)),
                          stacklevel=2)
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._monitor.is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = _current_lr(optimizer)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    optimizer.learning_rate = new_lr
                    if self.verbose > 0:
                        sys.stdout.write("\nEpoch %d: ReduceLROnPlateau reducing learning rate "
                                         "to %s.\n" % (epoch + 1, new_lr))
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
