"""``eagerflow.keras.callbacks``: hooks into ``fit``, ``evaluate`` and ``predict``.

Example:
    >>> from eagerflow.keras import callbacks
    >>> cb = callbacks.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    >>> isinstance(cb, callbacks.Callback)
    True
"""

from eagerflow.keras.callbacks.backup_and_restore import BackupAndRestore  # noqa: F401
from eagerflow.keras.callbacks.callback import Callback, CallbackList  # noqa: F401
from eagerflow.keras.callbacks.early_stopping import EarlyStopping  # noqa: F401
from eagerflow.keras.callbacks.history import History  # noqa: F401
from eagerflow.keras.callbacks.lr_callbacks import (  # noqa: F401
    LearningRateScheduler, ReduceLROnPlateau,
)
from eagerflow.keras.callbacks.misc import CSVLogger, LambdaCallback, TerminateOnNaN  # noqa: F401
from eagerflow.keras.callbacks.model_checkpoint import ModelCheckpoint  # noqa: F401
from eagerflow.keras.callbacks.progbar_logger import ProgbarLogger  # noqa: F401

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "ModelCheckpoint",
           "EarlyStopping", "ReduceLROnPlateau", "LearningRateScheduler", "CSVLogger",
           "TerminateOnNaN", "LambdaCallback", "TensorBoard", "BackupAndRestore"]


def __getattr__(name):
    # The TensorBoard callback lives with the summary writer; load it only when asked for.
    if name == "TensorBoard":
        from eagerflow.summary.keras_callback import TensorBoard

        return TensorBoard
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
