"""``ProgbarLogger``: prints progress for ``fit``, ``evaluate`` and ``predict``.

``verbose=1`` on a terminal draws a live bar; ``verbose=2``, or ``verbose=1`` when stdout is a
file or a pipe, prints one line per epoch (see ``keras.utils.Progbar``). ``fit`` prints
``Epoch i/n`` before each epoch when it runs more than one.

Example:
    >>> import io, contextlib
    >>> from eagerflow.keras.callbacks import ProgbarLogger
    >>> cb = ProgbarLogger(); cb.set_params({"verbose": 2, "epochs": 1, "steps": 2})
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     cb.on_train_begin(); cb.on_epoch_begin(0)
    ...     cb.on_train_batch_end(0, {"loss": 1.0}); cb.on_epoch_end(0, {"loss": 0.5})
    >>> out.getvalue().startswith("2/2 - ") and out.getvalue().endswith("loss: 0.5000\\n")
    True
"""

from __future__ import annotations

import sys

from eagerflow.keras.callbacks.callback import Callback
from eagerflow.keras.utils.progbar import Progbar

__all__ = ["ProgbarLogger", "resolve_verbose"]


def resolve_verbose(verbose):
    """``"auto"`` -> 1 when stdout is a terminal, else 2; other values as ints.

    Raises:
        ValueError: For anything but "auto", 0, 1 or 2.
    """
    if verbose == "auto":
        isatty = getattr(sys.stdout, "isatty", None)
        try:
            return 1 if isatty is not None and isatty() else 2
        except ValueError:
            return 2
    if verbose in (0, 1, 2) or verbose is True or verbose is False:
        return int(verbose)
    raise ValueError("`verbose` must be 'auto', 0, 1 or 2. Received: verbose=%r" % (verbose,))


class ProgbarLogger(Callback):
    """Prints metrics to stdout as training, evaluation or prediction advances.

    ``fit``/``evaluate``/``predict`` add one automatically unless ``verbose=0``.

    Example:
        >>> from eagerflow.keras.callbacks import ProgbarLogger
        >>> ProgbarLogger().verbose
        1
    """

    def __init__(self, count_mode=None, stateful_metrics=None):
        super().__init__()
        self.seen = 0
        self.progbar = None
        self.target = None
        self.verbose = 1
        self.epochs = 1
        self._called_in_fit = False

    def set_params(self, params):
        super().set_params(params)
        self.verbose = resolve_verbose(params.get("verbose", 1))
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")

    def _needs_batch_hooks(self):
        if not self.verbose:
            return False
        if self.target is None:
            return True
        isatty = getattr(sys.stdout, "isatty", None)
        try:
            return self.verbose == 1 and bool(isatty and isatty())
        except ValueError:
            return False

    def _reset(self):
        self.seen = 0
        self.progbar = None

    def _maybe_init(self):
        if self.progbar is None:
            self.progbar = Progbar(target=self.target, verbose=self.verbose, unit_name="step",
                                   stateful_metrics=_AllNames())

    def on_train_begin(self, logs=None):
        self._called_in_fit = True

    def on_train_end(self, logs=None):
        self._called_in_fit = False

    def on_test_begin(self, logs=None):
        if not self._called_in_fit:
            self._reset()
            self._maybe_init()

    def on_predict_begin(self, logs=None):
        self._reset()
        self._maybe_init()

    def on_epoch_begin(self, epoch, logs=None):
        self._reset()
        self._maybe_init()
        if self.verbose and self.epochs > 1:
            sys.stdout.write("Epoch %d/%d\n" % (epoch + 1, self.epochs))
            sys.stdout.flush()

    def on_train_batch_end(self, batch, logs=None):
        self._update(batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        if not self._called_in_fit:
            self._update(batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._update(batch, None)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize(logs)

    def on_test_end(self, logs=None):
        if not self._called_in_fit:
            self._finalize(logs)

    def on_predict_end(self, logs=None):
        self._finalize(logs)

    def _update(self, batch, logs):
        self._maybe_init()
        self.seen = batch + 1
        if self.verbose == 1:
            self.progbar.update(self.seen, list((logs or {}).items()), finalize=False)

    def _finalize(self, logs):
        if not self.verbose:
            return
        self._maybe_init()
        if self.target is None:
            self.target = self.seen
            self.progbar.target = self.seen
        self.progbar.update(self.target, list((logs or {}).items()), finalize=True)


class _AllNames:
    """A stateful-metrics set containing every name: logs already hold running means."""

    def __contains__(self, name):
        return True

    def __iter__(self):
        return iter(())
