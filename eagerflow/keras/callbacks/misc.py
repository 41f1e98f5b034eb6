"""Small callbacks: ``CSVLogger``, ``TerminateOnNaN`` and ``LambdaCallback``.

Example:
    >>> from eagerflow.keras.callbacks import LambdaCallback
    >>> seen = []
    >>> cb = LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch))
    >>> cb.on_epoch_end(3, {}); seen
    [3]
"""

from __future__ import annotations

import collections
import csv
import math
import os
import sys

import numpy as np

from eagerflow.keras.callbacks.callback import Callback

__all__ = ["CSVLogger", "TerminateOnNaN", "LambdaCallback"]


class CSVLogger(Callback):
    """Writes one CSV row per epoch: ``epoch`` then every log key, sorted.

    Args:
        filename: The CSV file.
        separator: The field separator.
        append: Append to an existing file (no second header) instead of overwriting it.

    Example:
        >>> from eagerflow.keras.callbacks import CSVLogger
        >>> CSVLogger("log.csv").sep
        ','
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = bool(append)
        self.writer = None
        self.keys = None
        self.append_header = True
        self.csv_file = None

    def _writes(self):
        from eagerflow.framework import worker_context

        # Under a multi-worker strategy the chief alone writes the log.
        return worker_context.is_chief(getattr(self.model, "distribute_strategy", None))

    def on_train_begin(self, logs=None):
        if not self._writes():
            return
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename, "r") as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            mode = "w"
        self.keys = None
        self.writer = None
        self.csv_file = open(self.filename, mode, newline="")

    def on_epoch_end(self, epoch, logs=None):
        if self.csv_file is None:
            return
        logs = logs or {}

        def handle_value(k):
            is_zero_dim = isinstance(k, np.ndarray) and k.ndim == 0
            if isinstance(k, str):
                return k
            if isinstance(k, collections.abc.Iterable) and not is_zero_dim:
                return '"[%s]"' % (", ".join(map(str, k)))
            return k

        if self.keys is None:
            self.keys = sorted(logs.keys())
        if self.model is not None and getattr(self.model, "stop_training", False):
            # Training ended mid-epoch: keep the row shape.
            logs = {k: logs.get(k, "NA") for k in self.keys}
        if self.writer is None:
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         delimiter=self.sep, extrasaction="ignore")
            if self.append_header:
                self.writer.writeheader()
        row = collections.OrderedDict({"epoch": epoch})
        row.update((key, handle_value(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None:
            self.csv_file.close()
        self.csv_file = None
        self.writer = None


class TerminateOnNaN(Callback):
    """Stops training as soon as a batch's loss is NaN or infinite.

    Example:
        >>> from eagerflow.keras.callbacks import TerminateOnNaN
        >>> isinstance(TerminateOnNaN(), TerminateOnNaN)
        True
    """

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None:
            loss = float(np.asarray(loss))
            if math.isnan(loss) or math.isinf(loss):
                sys.stdout.write("Batch %d: Invalid loss, terminating training\n" % batch)
                self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback made of plain functions.

    Args:
        on_epoch_begin: ``f(epoch, logs)``.
        on_epoch_end: ``f(epoch, logs)``.
        on_train_begin: ``f(logs)``.
        on_train_end: ``f(logs)``.
        on_train_batch_begin: ``f(batch, logs)`` (``on_batch_begin`` is an alias).
        on_train_batch_end: ``f(batch, logs)`` (``on_batch_end`` is an alias).
        **kwargs: Any other hook by name (``on_test_begin=f``...).

    Raises:
        TypeError: For a keyword that is not a hook.

    Example:
        >>> from eagerflow.keras.callbacks import LambdaCallback
        >>> cb = LambdaCallback(on_train_begin=lambda logs: print("start"))
        >>> cb.on_train_begin()
        start
    """

    _HOOKS = ("on_epoch_begin", "on_epoch_end", "on_train_begin", "on_train_end",
              "on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end",
              "on_test_begin", "on_test_end", "on_test_batch_begin", "on_test_batch_end",
              "on_predict_begin", "on_predict_end", "on_predict_batch_begin",
              "on_predict_batch_end")

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None,
                 **kwargs):
        super().__init__()
        hooks = dict(kwargs)
        hooks.update({"on_epoch_begin": on_epoch_begin, "on_epoch_end": on_epoch_end,
                      "on_train_begin": on_train_begin, "on_train_end": on_train_end})
        if on_train_batch_begin is not None:
            hooks["on_train_batch_begin"] = on_train_batch_begin
        if on_train_batch_end is not None:
            hooks["on_train_batch_end"] = on_train_batch_end
        unknown = sorted(set(hooks) - set(self._HOOKS))
        if unknown:
            raise TypeError("LambdaCallback: unknown hook(s) %s; hooks are %s."
                            % (unknown, list(self._HOOKS)))
        self._fns = {k: v for k, v in hooks.items() if v is not None}
        for name, fn in self._fns.items():
            setattr(self, name, self._wrap(name, fn))

    def _wrap(self, name, fn):
        if name in ("on_train_begin", "on_train_end", "on_test_begin", "on_test_end",
                    "on_predict_begin", "on_predict_end"):
            return lambda logs=None: fn(logs)
        return lambda index, logs=None: fn(index, logs)

    def _needs_batch_hooks(self):
        return any("batch" in name for name in self._fns)
