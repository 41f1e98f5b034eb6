"""What ``compile(loss=..., metrics=...)`` turns into: one loss per output with its weight,
and one list of metrics per output.

Both are built from the structure of the targets and predictions (on the first batch, or
from shapes before tracing), because ``"accuracy"`` means a different metric for sparse,
one-hot and binary labels, and a list of losses maps onto the model's outputs.

Names follow Keras: with one output the metrics keep their names (``accuracy``); with several
they are prefixed by the output name (``out_a_accuracy``), and each output's loss is tracked as
``<output>_loss``.

Example:
    >>> import numpy as np
    >>> from eagerflow.keras.models.compile_utils import CompileLoss
    >>> loss = CompileLoss("mse")
    >>> float(loss(np.zeros((2, 1), np.float32), np.ones((2, 1), np.float32)))
    1.0
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow import nest
from eagerflow.keras import losses as losses_lib
from eagerflow.keras import metrics as metrics_lib

__all__ = ["CompileLoss", "CompileMetrics", "serialize_loss_or_metric"]


def _flat_outputs(y_pred, output_names):
    """``(names, flat predictions)`` for a prediction structure."""
    if isinstance(y_pred, dict):
        keys = sorted(y_pred)
        return keys, [y_pred[k] for k in keys]
    flat = nest.flatten(y_pred)
    names = list(output_names or [])
    if len(names) != len(flat):
        names = ["output_%d" % (i + 1) for i in range(len(flat))] if len(flat) > 1 \
            else ["output"]
    return names, flat


def _match_targets(y_true, names, what="y"):
    """Targets aligned with the outputs: one per output name (None where absent)."""
    n = len(names)
    if y_true is None:
        return [None] * n
    if isinstance(y_true, dict):
        unknown = sorted(set(y_true) - set(names))
        if unknown:
            raise ValueError("Unknown output name(s) %s in `%s`; the model's outputs are %s."
                             % (unknown, what, names))
        return [y_true.get(name) for name in names]
    if n == 1:
        if isinstance(y_true, (list, tuple)) and len(y_true) == 1 and _is_array_like(
                y_true[0]):
            return [y_true[0]]
        return [y_true]
    if isinstance(y_true, (list, tuple)):
        if len(y_true) != n:
            raise ValueError("The model has %d outputs (%s) but `%s` has %d entries; pass one "
                             "per output, or a dict keyed by output name."
                             % (n, names, what, len(y_true)))
        return list(y_true)
    # One target array for several outputs: used for every output (as Keras does).
    return [y_true] * n


def _is_array_like(x):
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _per_output(spec, names, what):
    """A compile argument (one value, list, or dict by output name) as one entry per output."""
    n = len(names)
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ValueError("Unknown output name(s) %s in compile(%s=...); the model's outputs "
                             "are %s." % (unknown, what, names))
        return [spec.get(name) for name in names]
    if isinstance(spec, (list, tuple)) and n > 1:
        if len(spec) != n:
            raise ValueError("compile(%s=...) got a list of %d entries for a model with %d "
                             "outputs (%s): give one per output, or a dict keyed by output name."
                             % (what, len(spec), n, names))
        return list(spec)
    if isinstance(spec, (list, tuple)) and n == 1 and len(spec) == 1 and what == "loss":
        return list(spec)
    return [spec] * n


def _loss_name(identifier, loss):
    if isinstance(identifier, str):
        return identifier
    return getattr(loss, "name", None) or getattr(loss, "__name__", "loss")


class CompileLoss:
    """The compiled loss: ``sum_i loss_weight_i * loss_i(y_true_i, y_pred_i, sample_weight_i)``.

    Args:
        loss: A loss (name, function or ``Loss``), a list (one per output) or a dict keyed by
            output name (outputs without an entry get no loss).
        loss_weights: A number, a list or a dict of per-output weights (default 1).
        output_names: The model's output names.
        reduction: The reduction used when a plain function is given.

    Example:
        >>> import numpy as np
        >>> from eagerflow.keras.models.compile_utils import CompileLoss
        >>> loss = CompileLoss(["mse", "mae"], loss_weights=[1.0, 0.5], output_names=["a", "b"])
        >>> y = [np.zeros((2, 1), np.float32)] * 2
        >>> p = [np.full((2, 1), 2.0, np.float32)] * 2
        >>> float(loss(y, p))  # 4 + 0.5 * 2
        5.0
    """

    def __init__(self, loss, loss_weights=None, output_names=None,
                 reduction="sum_over_batch_size"):
        self._user_loss = loss
        self._user_loss_weights = loss_weights
        self._output_names = list(output_names) if output_names else None
        self._reduction = reduction
        self.built = False
        self.names = None
        self._losses = None  # per output: Loss object or None
        self._weights = None
        self.metrics = []  # per-output loss trackers (several outputs only)

    def build(self, y_true, y_pred):
        """Resolves one Loss per output from the prediction structure."""
        names, flat_pred = _flat_outputs(y_pred, self._output_names)
        identifiers = _per_output(self._user_loss, names, "loss")
        weights = self._user_loss_weights
        if weights is None:
            weights = [1.0] * len(names)
        elif isinstance(weights, (int, float)):
            weights = [float(weights)] * len(names)
        else:
            weights = [1.0 if w is None else float(w)
                       for w in _per_output(weights, names, "loss_weights")]
        self.names = names
        self._losses = []
        for identifier in identifiers:
            if identifier is None:
                self._losses.append(None)
                continue
            loss = losses_lib.get(identifier)
            if not isinstance(loss, losses_lib.Loss):
                loss = losses_lib.LossFunctionWrapper(loss, reduction=self._reduction,
                                                      name=_loss_name(identifier, loss))
            self._losses.append(loss)
        if not any(loss is not None for loss in self._losses):
            raise ValueError("compile(loss=...) gives no loss for any of the outputs %s."
                             % names)
        self._weights = weights
        self.metrics = []
        if len(names) > 1:
            self.metrics = [metrics_lib.Mean(name="%s_loss" % name)
                            for name, loss in zip(names, self._losses) if loss is not None]
        self.built = True

    def __call__(self, y_true, y_pred, sample_weight=None):
        """The weighted total loss (a scalar tensor)."""
        if not self.built:
            self.build(y_true, y_pred)
        names, flat_pred = _flat_outputs(y_pred, self.names)
        targets = _match_targets(y_true, names)
        weights = _match_sample_weights(sample_weight, names)
        total = None
        trackers = iter(self.metrics)
        for i, (loss, weight, target, pred, sw) in enumerate(
                zip(self._losses, self._weights, targets, flat_pred, weights)):
            if loss is None:
                continue
            if target is None:
                raise ValueError("compile() gave output %r a loss but no target `y` was "
                                 "provided for it." % names[i])
            value = loss(target, pred, sample_weight=sw)
            if self.metrics:
                tracker = next(trackers)
                tracker.update_state(value, sample_weight=_batch_size(pred))
            value = value if weight == 1.0 else value * ef.cast(weight, value.dtype)
            total = value if total is None else total + ef.cast(value, total.dtype)
        return total

    def get_config(self):
        return {"loss": serialize_loss_or_metric(self._user_loss),
                "loss_weights": self._user_loss_weights}


def _batch_size(tensor):
    return ef.cast(ef.shape(tensor)[0], "float32")


def _match_sample_weights(sample_weight, names):
    if sample_weight is None:
        return [None] * len(names)
    if isinstance(sample_weight, dict):
        return [sample_weight.get(n) for n in names]
    if isinstance(sample_weight, (list, tuple)) and len(names) > 1:
        if len(sample_weight) != len(names):
            raise ValueError("`sample_weight` has %d entries for %d outputs (%s)."
                             % (len(sample_weight), len(names), names))
        return list(sample_weight)
    return [sample_weight] * len(names)


class CompileMetrics:
    """The compiled metrics: one list per output, updated together.

    Args:
        metrics: Metrics that ignore sample weights: a list (applied to every output), a
            list of lists (one per output) or a dict keyed by output name.
        weighted_metrics: Metrics that use the sample weights, in the same forms.
        output_names: The model's output names.
        loss: The compiled loss argument (decides what ``"accuracy"`` means).

    Example:
        >>> import numpy as np
        >>> from eagerflow.keras.models.compile_utils import CompileMetrics
        >>> m = CompileMetrics(["accuracy"], loss="sparse_categorical_crossentropy")
        >>> m.update_state(np.array([1, 0]), np.array([[0.2, 0.8], [0.3, 0.7]], np.float32))
        >>> {k: float(v) for k, v in m.result().items()}
        {'accuracy': 0.5}
    """

    def __init__(self, metrics=None, weighted_metrics=None, output_names=None, loss=None):
        self._user_metrics = metrics
        self._user_weighted = weighted_metrics
        self._output_names = list(output_names) if output_names else None
        self._loss = loss
        self.built = False
        self._per_output = []  # per output: [(metric, weighted)]
        self.names = None

    @property
    def metrics(self):
        """The Metric objects, flattened (empty until built)."""
        return [m for entries in self._per_output for m, _ in entries]

    def build(self, y_true, y_pred):
        """Resolves every metric identifier against the targets, predictions and loss."""
        names, flat_pred = _flat_outputs(y_pred, self._output_names)
        targets = _match_targets(y_true, names)
        losses = _per_output(self._loss, names, "loss") if self._loss is not None else \
            [None] * len(names)
        plain = self._per_output_lists(self._user_metrics, names, "metrics")
        weighted = self._per_output_lists(self._user_weighted, names, "weighted_metrics")
        self.names = names
        self._per_output = []
        multi = len(names) > 1
        for i, name in enumerate(names):
            entries = []
            for identifiers, is_weighted in ((plain[i], False), (weighted[i], True)):
                for identifier in identifiers:
                    metric = metrics_lib.get_for_compile(
                        identifier, y_true=_shape_of(targets[i]), y_pred=_shape_of(flat_pred[i]),
                        loss=losses[i])
                    if metric is None:
                        continue
                    if is_weighted and isinstance(identifier, str) and not multi:
                        metric.name = identifier
                    if multi:
                        metric.name = "%s_%s" % (name, metric.name)
                    entries.append((metric, is_weighted))
            self._per_output.append(entries)
        self._dedupe_names()
        self.built = True

    def _dedupe_names(self):
        seen = {}
        for entries in self._per_output:
            for metric, weighted in entries:
                base = metric.name
                if base in seen:
                    seen[base] += 1
                    if weighted:
                        metric.name = "weighted_" + base
                    else:
                        metric.name = "%s_%d" % (base, seen[base])
                else:
                    seen[base] = 0

    @staticmethod
    def _per_output_lists(spec, names, what):
        n = len(names)
        if spec is None:
            return [[] for _ in names]
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - set(names))
            if unknown:
                raise ValueError("Unknown output name(s) %s in compile(%s=...); the model's "
                                 "outputs are %s." % (unknown, what, names))
            out = []
            for name in names:
                value = spec.get(name)
                out.append([] if value is None else list(value)
                           if isinstance(value, (list, tuple)) else [value])
            return out
        if not isinstance(spec, (list, tuple)):
            raise ValueError("compile(%s=...) expects a list or a dict, got %r."
                             % (what, spec))
        if n > 1 and len(spec) == n and all(isinstance(s, (list, tuple)) or s is None
                                            for s in spec):
            return [list(s or []) for s in spec]
        return [list(spec) for _ in names]

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Updates every metric with its output's targets and predictions."""
        if not self.built:
            self.build(y_true, y_pred)
        names, flat_pred = _flat_outputs(y_pred, self.names)
        targets = _match_targets(y_true, names)
        weights = _match_sample_weights(sample_weight, names)
        for entries, target, pred, sw in zip(self._per_output, targets, flat_pred, weights):
            if target is None:
                continue
            for metric, weighted in entries:
                metric.update_state(target, pred, sample_weight=sw if weighted else None)

    def result(self):
        """``{name: value}`` of every metric."""
        return {m.name: m.result() for m in self.metrics}

    def reset_state(self):
        for m in self.metrics:
            m.reset_state()

    def get_config(self):
        return {"metrics": serialize_loss_or_metric(self._user_metrics),
                "weighted_metrics": serialize_loss_or_metric(self._user_weighted)}


def _shape_of(x):
    if x is None:
        return None
    shape = getattr(x, "shape", None)
    if shape is None:
        import numpy as np

        shape = np.shape(x)
    return [None if d is None else int(d) for d in shape]


def serialize_loss_or_metric(value):
    """A compile argument (strings, objects, functions, lists, dicts) in JSON form."""
    from eagerflow.keras import saving

    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [serialize_loss_or_metric(v) for v in value]
    if isinstance(value, dict):
        return {k: serialize_loss_or_metric(v) for k, v in value.items()}
    return saving.serialize_keras_object(value)
