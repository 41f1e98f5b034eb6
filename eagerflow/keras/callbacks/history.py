"""``History``: records every epoch's logs; ``fit`` returns it.

Example:
    >>> from eagerflow.keras.callbacks import History
    >>> h = History(); h.on_train_begin()
    >>> h.on_epoch_end(0, {"loss": 0.5}); h.on_epoch_end(1, {"loss": 0.25})
    >>> h.epoch, h.history
    ([0, 1], {'loss': [0.5, 0.25]})
"""

from __future__ import annotations

from eagerflow.keras.callbacks.callback import Callback

__all__ = ["History"]


class History(Callback):
    """Records the logs of every epoch: ``history[name]`` is the list of values per epoch.

    Attributes:
        epoch: The epoch indices seen.
        history: ``{metric name: [value per epoch]}``.

    Example:
        >>> import numpy as np
        >>> from eagerflow import keras
        >>> m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> m.compile("sgd", "mse")
        >>> h = m.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=3, verbose=0)
        >>> sorted(h.history), len(h.history["loss"]), h.epoch
        (['loss'], 3, [0, 1, 2])
    """

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self
