"""Shared logic of callbacks that watch one metric: which direction is better, and whether a
new value is an improvement.

Example:
    >>> from eagerflow.keras.callbacks.monitor import infer_mode
    >>> infer_mode("val_accuracy"), infer_mode("val_loss"), infer_mode("mae")
    ('max', 'min', 'min')
"""

from __future__ import annotations

import warnings

__all__ = ["infer_mode", "Monitor"]

# Metric names (without "val_") where larger is better.
_MAXIMIZED = ("acc", "accuracy", "auc", "precision", "recall", "true_positives",
              "true_negatives", "f1", "fbeta", "iou", "r2", "cosine_similarity")


def infer_mode(monitor, model=None):
    """``"max"`` or ``"min"`` for a monitored quantity, from the metric object when the model
    has one with a ``_direction``, else from its name (accuracy-like names are maximized,
    everything else, losses and errors, minimized)."""
    name = monitor[4:] if monitor.startswith("val_") else monitor
    if model is not None and name != "loss":
        try:
            metrics = model.metrics
        except Exception:  # noqa: BLE001 - a model without compiled metrics
            metrics = []
        for metric in metrics:
            if getattr(metric, "name", None) == name:
                direction = getattr(metric, "_direction", None)
                if direction == "up":
                    return "max"
                if direction == "down":
                    return "min"
    base = name.lower()
    for suffix in _MAXIMIZED:
        if base == suffix or base.endswith("_" + suffix) or base.endswith(suffix):
            return "max"
    return "min"


class Monitor:
    """Tracks the best value of a quantity in ``"min"``/``"max"``/``"auto"`` mode.

    Args:
        monitor: The log key watched (``"val_loss"``...).
        mode: ``"auto"``, ``"min"`` or ``"max"`` (unknown modes warn and become auto).
        min_delta: How much better a value must be to count as an improvement.
        owner: The callback's class name, for messages.

    Example:
        >>> from eagerflow.keras.callbacks.monitor import Monitor
        >>> m = Monitor("loss", "min", 0.1); m.resolve(None)
        >>> m.is_improvement(0.95, 1.0), m.is_improvement(0.85, 1.0)
        (False, True)
    """

    def __init__(self, monitor, mode="auto", min_delta=0.0, owner="Callback"):
        if mode not in ("auto", "min", "max"):
            warnings.warn("%s mode %s is unknown, fallback to auto mode." % (owner, mode),
                          stacklevel=3)
            mode = "auto"
        self.monitor = monitor
        self.mode = mode
        self.min_delta = abs(min_delta)
        self.direction = None

    def resolve(self, model):
        if self.direction is None:
            self.direction = self.mode if self.mode != "auto" else infer_mode(self.monitor,
                                                                              model)

    def initial_best(self):
        return float("inf") if self.direction == "min" else -float("inf")

    def is_improvement(self, value, reference):
        if reference is None:
            return True
        if self.direction == "min":
            return value + self.min_delta < reference
        return value - self.min_delta > reference
