"""``Callback``, the base of training hooks, and ``CallbackList``, which calls them in order.

``fit`` calls, in this order: ``on_train_begin``; per epoch ``on_epoch_begin``, per batch
``on_train_batch_begin``/``on_train_batch_end``, then (when validating) the ``on_test_*``
hooks of the validation pass, then ``on_epoch_end``; finally ``on_train_end``.
``evaluate`` calls ``on_test_begin``, the ``on_test_batch_*`` hooks and ``on_test_end``;
``predict`` the ``on_predict_*`` hooks. ``on_batch_begin``/``on_batch_end`` are the
tf.keras 1 names of the training batch hooks.

Logs reach callbacks as plain Python floats with keys sorted by name (``accuracy``,
``loss``, ``val_accuracy``, ``val_loss``), as in Keras 3.

Example:
    >>> from eagerflow.keras import callbacks
    >>> class Count(callbacks.Callback):
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         print("epoch", epoch, sorted(logs))
    >>> cbs = callbacks.CallbackList([Count()])
    >>> cbs.on_epoch_end(0, {"loss": 1.0})
    epoch 0 ['loss']
"""

from __future__ import annotations

__all__ = ["Callback", "CallbackList", "pythonify_logs"]


def pythonify_logs(logs):
    """Logs with nested dicts flattened, keys sorted and values converted to floats."""
    result = {}
    for key, value in sorted((logs or {}).items()):
        if isinstance(value, dict):
            result.update(pythonify_logs(value))
            continue
        try:
            value = float(value)
        except (TypeError, ValueError):
            pass
        result[key] = value
    return result


class Callback:
    """Base class of callbacks: override the hooks you need.

    Attributes:
        model: The model being trained (set by ``fit``/``evaluate``/``predict``).
        params: ``{"verbose", "epochs", "steps"}`` of the run.

    Example:
        >>> from eagerflow.keras.callbacks import Callback
        >>> class Stop(Callback):
        ...     def on_epoch_end(self, epoch, logs=None):
        ...         self.model.stop_training = logs["loss"] < 0.1
    """

    def __init__(self):
        self.validation_data = None
        self._model = None
        self.params = {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self._model = model

    @property
    def model(self):
        return self._model

    @model.setter
    def model(self, value):
        self._model = value

    def on_batch_begin(self, batch, logs=None):
        """A training batch starts (old name of ``on_train_batch_begin``)."""

    def on_batch_end(self, batch, logs=None):
        """A training batch ended (old name of ``on_train_batch_end``)."""

    def on_epoch_begin(self, epoch, logs=None):
        """An epoch starts (``epoch`` counts from 0)."""

    def on_epoch_end(self, epoch, logs=None):
        """An epoch ended; ``logs`` holds its metrics and the ``val_`` metrics."""

    def on_train_batch_begin(self, batch, logs=None):
        """A training batch starts; calls ``on_batch_begin`` by default."""
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        """A training batch ended; ``logs`` holds the running metrics of the epoch."""
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        """An evaluation batch starts."""

    def on_test_batch_end(self, batch, logs=None):
        """An evaluation batch ended."""

    def on_predict_batch_begin(self, batch, logs=None):
        """A prediction batch starts."""

    def on_predict_batch_end(self, batch, logs=None):
        """A prediction batch ended; ``logs["outputs"]`` holds its outputs."""

    def on_train_begin(self, logs=None):
        """Training starts."""

    def on_train_end(self, logs=None):
        """Training ended; ``logs`` are the last epoch's."""

    def on_test_begin(self, logs=None):
        """Evaluation (or a validation pass) starts."""

    def on_test_end(self, logs=None):
        """Evaluation ended; ``logs`` holds its metrics."""

    def on_predict_begin(self, logs=None):
        """Prediction starts."""

    def on_predict_end(self, logs=None):
        """Prediction ended."""


_BATCH_HOOKS = {
    "train": ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end"),
    "test": ("on_test_batch_begin", "on_test_batch_end"),
    "predict": ("on_predict_batch_begin", "on_predict_batch_end"),
}


def _overrides(callback, names):
    """Whether ``callback`` wants the batch hooks ``names`` (skipping them saves converting
    logs at every step)."""
    cls = type(callback)
    base = Callback
    needs = getattr(callback, "_needs_batch_hooks", None)
    if callable(needs):
        if needs():
            return True
        # A subclass may still override the hooks of the class that declared the need.
        base = next(k for k in cls.__mro__ if "_needs_batch_hooks" in vars(k))
    for name in names:
        method = getattr(cls, name, None)
        if method is not None and method is not getattr(base, name, None):
            return True
    return False


class CallbackList:
    """Calls every hook on a list of callbacks, adding ``History`` and ``ProgbarLogger``.

    Args:
        callbacks: Callbacks (None for none).
        add_history: Append a ``History`` unless one is present.
        add_progbar: Append a ``ProgbarLogger`` unless one is present.
        model: The model the callbacks observe.
        **params: ``verbose``, ``epochs`` and ``steps`` given to every callback.

    Example:
        >>> from eagerflow.keras.callbacks import CallbackList, History
        >>> cbs = CallbackList(None, add_history=True)
        >>> [type(c).__name__ for c in cbs.callbacks]
        ['History']
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None,
                 **params):
        # Subclasses of Callback: see eagerflow.keras
        from eagerflow.keras.callbacks.history import History
        from eagerflow.keras.callbacks.progbar_logger import ProgbarLogger

        if isinstance(callbacks, CallbackList):
            callbacks = callbacks.callbacks
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, Callback) and not hasattr(cb, "on_epoch_end"):
                raise TypeError("callbacks must be keras.callbacks.Callback instances, got %r."
                                % (cb,))
        self._history = next((c for c in self.callbacks if isinstance(c, History)), None)
        self._progbar = next((c for c in self.callbacks if isinstance(c, ProgbarLogger)), None)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger()
            self.callbacks.append(self._progbar)
        self.model = None
        self.params = {}
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)
        self._refresh()

    def _refresh(self):
        self._wants_batch = {kind: any(_overrides(cb, hooks) for cb in self.callbacks)
                             for kind, hooks in _BATCH_HOOKS.items()}

    def append(self, callback):
        self.callbacks.append(callback)
        self._refresh()

    def set_params(self, params):
        self.params = params
        for cb in self.callbacks:
            cb.set_params(params)
        self._refresh()

    def set_model(self, model):
        self.model = model
        if self._history is not None:
            model.history = self._history
        for cb in self.callbacks:
            cb.set_model(model)

    def _call(self, hook, *args, logs=None):
        logs = pythonify_logs(logs)
        for cb in self.callbacks:
            getattr(cb, hook)(*args, logs=logs)

    def _call_batch(self, kind, hook, batch, logs):
        if not self._wants_batch[kind]:
            return
        if kind != "predict":
            logs = pythonify_logs(logs)
        for cb in self.callbacks:
            getattr(cb, hook)(batch, logs=logs)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", logs=logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", logs=logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs=logs)

    def on_epoch_end(self, epoch, logs=None):
        # The same dict goes to every callback, so one can add entries (learning_rate) that
        # later ones (History, CSVLogger) record.
        logs = pythonify_logs(logs)
        for cb in self.callbacks:
            cb.on_epoch_end(epoch, logs=logs)

    def on_batch_begin(self, batch, logs=None):
        self.on_train_batch_begin(batch, logs)

    def on_batch_end(self, batch, logs=None):
        self.on_train_batch_end(batch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call_batch("train", "on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call_batch("train", "on_train_batch_end", batch, logs)

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", logs=logs)

    def on_test_end(self, logs=None):
        self._call("on_test_end", logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._call_batch("test", "on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._call_batch("test", "on_test_batch_end", batch, logs)

    def on_predict_begin(self, logs=None):
        self._call("on_predict_begin", logs=logs)

    def on_predict_end(self, logs=None):
        self._call("on_predict_end", logs=logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._call_batch("predict", "on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._call_batch("predict", "on_predict_batch_end", batch, logs)

    def __iter__(self):
        return iter(self.callbacks)
