"""Confusion-matrix metrics: TP/FP/TN/FN counts, Precision, Recall and AUC.

At each threshold ``t`` a prediction counts as positive when ``y_pred > t``; labels are
cast to bool. Counts are weighted by ``sample_weight`` and accumulated with
``assign_add``. For evenly spaced thresholds (AUC's default) the counts are computed in
O(N + T) by bucketing predictions, exactly as Keras does (same buckets, same numbers);
otherwise every prediction is compared with every threshold.

AUC sums trapezoids (ROC, "interpolation") over the curve sampled at the thresholds;
the PR curve with "interpolation" uses Davis & Goadrich's interpolation of precision.

Example:
    >>> from eagerflow.keras import metrics
    >>> m = metrics.AUC(num_thresholds=3)
    >>> m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
    >>> float(m.result())
    0.75
"""

from __future__ import annotations

import numpy as np

import eagerflow as ef
from eagerflow.keras.losses.base import _broadcast_like, epsilon, squeeze_or_expand_to_same_rank
from eagerflow.keras.metrics.base import Metric

__all__ = ["TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives",
           "Precision", "Recall", "AUC", "update_confusion_matrix_variables"]

NEG_INF = -1e10
_KINDS = ("tp", "fp", "tn", "fn")


def _to_list(x):
    if isinstance(x, (list, tuple)):
        return list(x)
    if isinstance(x, np.ndarray):
        return x.reshape(-1).tolist()
    return [x]


def parse_init_thresholds(thresholds, default_threshold=0.5):
    """Thresholds as a list, validated to lie in [0, 1].

    Raises:
        ValueError: If a threshold is None or outside [0, 1].
    """
    if thresholds is not None:
        bad = [t for t in _to_list(thresholds) if t is None or t < 0 or t > 1]
        if bad:
            raise ValueError("Threshold values must be in [0, 1]. Received: %s" % bad)
    return _to_list(default_threshold if thresholds is None else thresholds)


def is_evenly_distributed_thresholds(thresholds):
    """Whether thresholds are ``i / (n - 1)`` for ``i = 0..n-1`` (n >= 3)."""
    n = len(thresholds)
    if n < 3:
        return False
    even = np.arange(n, dtype=np.float32) / (n - 1)
    return bool(np.allclose(thresholds, even, atol=epsilon()))


def _filter_top_k(x, k):
    """Keeps the top ``k`` values of the last axis; the rest become -1e10."""
    _, idx = ef.math.top_k(x, k)
    mask = ef.reduce_sum(ef.one_hot(idx, x.shape[-1], dtype=x.dtype), axis=-2)
    return x * mask + NEG_INF * (1.0 - mask)


def update_confusion_matrix_variables(variables_to_update, y_true, y_pred, thresholds,
                                      top_k=None, class_id=None, sample_weight=None,
                                      multi_label=False, label_weights=None,
                                      thresholds_distributed_evenly=False):
    """Adds the weighted TP/FP/TN/FN counts of a batch to the given variables.

    Args:
        variables_to_update: ``{"tp"|"fp"|"tn"|"fn": Variable}``; each variable has
            shape ``[T]`` (or ``[T, labels]`` with ``multi_label``).
        y_true: Labels (cast to bool).
        y_pred: Predictions in [0, 1].
        thresholds: A list of T thresholds.
        top_k: Only the top ``k`` predictions of the last axis may be positive.
        class_id: Restrict to this class (last axis).
        sample_weight: Optional weights broadcastable to ``y_pred``.
        multi_label: Keep the label axis separate instead of flattening.
        label_weights: Optional per-label weights (not with ``multi_label``).
        thresholds_distributed_evenly: Use the O(N + T) bucketing path.

    Raises:
        ValueError: On unknown keys, or ``label_weights`` with ``multi_label``.
    """
    if multi_label and label_weights is not None:
        raise ValueError("`label_weights` for multilabel data should be handled outside of "
                         "`update_confusion_matrix_variables` when `multi_label` is True.")
    invalid = [k for k in variables_to_update if k not in _KINDS]
    if invalid or not variables_to_update:
        raise ValueError("Invalid confusion matrix keys %s; valid keys are %s."
                         % (invalid, list(_KINDS)))
    dtype = next(iter(variables_to_update.values())).dtype
    y_true = ef.cast(ef.convert_to_tensor(y_true), dtype)
    y_pred = ef.cast(ef.convert_to_tensor(y_pred), dtype)
    thresholds = [float(t) for t in thresholds]
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    if sample_weight is not None:
        sample_weight = ef.expand_dims(ef.cast(ef.convert_to_tensor(sample_weight), dtype), -1)
        _, sample_weight = squeeze_or_expand_to_same_rank(y_true, sample_weight,
                                                          expand_rank_1=False)
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        if len(y_pred.shape) == 1:
            raise ValueError("When class_id is provided, y_pred must be a 2D array with "
                             "shape (num_samples, num_classes), found shape: %s"
                             % (y_pred.shape,))
        y_true = y_true[..., class_id:class_id + 1]
        y_pred = y_pred[..., class_id:class_id + 1]
    if label_weights is not None:
        label_weights = ef.cast(ef.convert_to_tensor(label_weights), dtype)
    if thresholds_distributed_evenly:
        counts = _counts_bucketed(y_true, y_pred, thresholds, multi_label, sample_weight,
                                  label_weights, variables_to_update)
    else:
        counts = _counts_compared(y_true, y_pred, thresholds, multi_label, sample_weight,
                                  label_weights, variables_to_update)
    for kind, variable in variables_to_update.items():
        variable.assign_add(counts[kind])


def _weights(sample_weight, label_weights, y_pred, multi_label):
    weights = None
    if sample_weight is not None:
        weights = _broadcast_like(sample_weight, y_pred)
    if label_weights is not None:
        lw = _broadcast_like(ef.expand_dims(label_weights, 0), y_pred)
        weights = lw if weights is None else weights * lw
    if weights is not None and not multi_label:
        weights = ef.reshape(weights, [-1])
    return weights


def _counts_bucketed(y_true, y_pred, thresholds, multi_label, sample_weight, label_weights,
                     wanted):
    n = len(thresholds)
    with_eps = thresholds[0] < 0.0 or thresholds[-1] > 1.0
    weights = _weights(sample_weight, label_weights, y_pred, multi_label)
    y_pred = ef.clip_by_value(y_pred, 0.0, 1.0)
    y_true = ef.cast(ef.cast(y_true, ef.bool), y_true.dtype)
    if not multi_label:
        y_true = ef.reshape(y_true, [-1])
        y_pred = ef.reshape(y_pred, [-1])
    true_labels = y_true if weights is None else y_true * weights
    false_labels = (1.0 - y_true) if weights is None else (1.0 - y_true) * weights
    # p counts for threshold i exactly when i <= ceil(p * (n - 1)) - 1: bucket it there
    # and take reverse cumulative sums. -1 (p == 0 without the epsilon threshold) is
    # dropped by the segment sum.
    bucket = ef.math.ceil(y_pred * float(n - 1)) - 1.0
    if with_eps:
        bucket = ef.nn.relu(bucket)
    bucket = ef.cast(bucket, ef.int32)
    if multi_label:
        # One segment range per label: ids label * n + bucket.
        num_labels = y_pred.shape[-1]
        offsets = ef.reshape(ef.range(num_labels, dtype=ef.int32) * n, [1, -1])
        ids = ef.where(bucket >= 0, bucket + offsets, -ef.ones_like(bucket))

        def per_threshold(values):
            sums = ef.math.unsorted_segment_sum(ef.reshape(values, [-1]),
                                                ef.reshape(ids, [-1]), n * num_labels)
            sums = ef.transpose(ef.reshape(sums, [num_labels, n]))
            return ef.cumsum(sums, axis=0, reverse=True)
    else:
        def per_threshold(values):
            sums = ef.math.unsorted_segment_sum(values, bucket, n)
            return ef.cumsum(sums, axis=0, reverse=True)
    counts = {"tp": per_threshold(true_labels), "fp": per_threshold(false_labels)}
    if "tn" in wanted or "fn" in wanted:
        axis = 0 if multi_label else None
        counts["fn"] = ef.reduce_sum(true_labels, axis=axis) - counts["tp"]
        counts["tn"] = ef.reduce_sum(false_labels, axis=axis) - counts["fp"]
    return counts


def _counts_compared(y_true, y_pred, thresholds, multi_label, sample_weight, label_weights,
                     wanted):
    dtype = y_pred.dtype
    thr = ef.constant(np.asarray(thresholds), dtype=dtype)
    weights = _weights(sample_weight, label_weights, y_pred, multi_label)
    labels = ef.cast(y_true, ef.bool)
    if multi_label:
        preds = ef.expand_dims(y_pred, 0)                    # [1, N, L]
        labels = ef.expand_dims(labels, 0)
        thr = ef.reshape(thr, [-1, 1, 1])                    # [T, 1, 1]
        if weights is not None:
            weights = ef.expand_dims(weights, 0)
    else:
        preds = ef.reshape(y_pred, [1, -1])                  # [1, M]
        labels = ef.reshape(labels, [1, -1])
        thr = ef.reshape(thr, [-1, 1])                       # [T, 1]
        if weights is not None:
            weights = ef.reshape(weights, [1, -1])
    pred_pos = ef.greater(preds, thr)
    pred_neg = ef.logical_not(pred_pos)
    label_neg = ef.logical_not(labels)

    def count(label, pred):
        hits = ef.cast(ef.logical_and(label, pred), dtype)
        if weights is not None:
            hits = hits * weights
        return ef.reduce_sum(hits, axis=1)

    pairs = {"tp": (labels, pred_pos), "fp": (label_neg, pred_pos),
             "tn": (label_neg, pred_neg), "fn": (labels, pred_neg)}
    return {k: count(*pairs[k]) for k in wanted}


class _ConfusionCount(Metric):
    _kind = None

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = parse_init_thresholds(thresholds, default_threshold=0.5)
        self._evenly = is_evenly_distributed_thresholds(self.thresholds)
        self.accumulator = self.add_variable((len(self.thresholds),), "zeros",
                                             name="accumulator")

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds this batch's weighted counts at every threshold."""
        update_confusion_matrix_variables(
            {self._kind: self.accumulator}, y_true, y_pred, self.thresholds,
            thresholds_distributed_evenly=self._evenly, sample_weight=sample_weight)

    def result(self):
        acc = self.accumulator.read_value()
        return acc[0] if len(self.thresholds) == 1 else acc

    def get_config(self):
        config = super().get_config()
        config["thresholds"] = self.init_thresholds
        return config


class TruePositives(_ConfusionCount):
    """Weighted count of true positives (``y_true`` and ``y_pred > threshold``).

    Args:
        thresholds: A float or list of floats in [0, 1] (default 0.5); one count each.
        name: Default "true_positives".
        dtype: The state dtype.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.TruePositives()([0, 1, 1, 1], [1, 0, 1, 1]))
        2.0
    """

    _kind = "tp"


class FalsePositives(_ConfusionCount):
    """Weighted count of false positives.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.FalsePositives()([0, 1, 0, 0], [0, 0, 1, 1]))
        2.0
    """

    _kind = "fp"


class TrueNegatives(_ConfusionCount):
    """Weighted count of true negatives.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.TrueNegatives()([0, 1, 0, 0], [1, 1, 0, 0]))
        2.0
    """

    _kind = "tn"


class FalseNegatives(_ConfusionCount):
    """Weighted count of false negatives.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.FalseNegatives()([0, 1, 1, 1], [0, 1, 0, 0]))
        2.0
    """

    _kind = "fn"


class _PrecisionRecall(Metric):
    _kinds = ()

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        default = 0.5 if top_k is None else NEG_INF
        self.thresholds = parse_init_thresholds(thresholds, default_threshold=default)
        self._evenly = is_evenly_distributed_thresholds(self.thresholds)
        n = len(self.thresholds)
        self.true_positives = self.add_variable((n,), "zeros", name="true_positives")
        other = "false_positives" if self._kinds[1] == "fp" else "false_negatives"
        setattr(self, other, self.add_variable((n,), "zeros", name=other))

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds this batch's weighted counts at every threshold."""
        other = self.false_positives if self._kinds[1] == "fp" else self.false_negatives
        update_confusion_matrix_variables(
            {"tp": self.true_positives, self._kinds[1]: other}, y_true, y_pred,
            self.thresholds, thresholds_distributed_evenly=self._evenly,
            top_k=self.top_k, class_id=self.class_id, sample_weight=sample_weight)

    def result(self):
        tp = self.true_positives.read_value()
        other = self.false_positives if self._kinds[1] == "fp" else self.false_negatives
        result = ef.math.divide_no_nan(tp, tp + other.read_value())
        return result[0] if len(self.thresholds) == 1 else result

    def get_config(self):
        config = super().get_config()
        config.update({"thresholds": self.init_thresholds, "top_k": self.top_k,
                       "class_id": self.class_id})
        return config


class Precision(_PrecisionRecall):
    """``TP / (TP + FP)`` over everything seen, at each threshold.

    Args:
        thresholds: A float or list in [0, 1] (default 0.5, or "the top k" with
            ``top_k``); a list gives one precision per threshold.
        top_k: Only the ``k`` highest predictions per sample may be positive.
        class_id: Compute the metric for this class only.
        name: Default "precision".
        dtype: The state dtype.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.Precision()([0, 1, 1, 1], [1, 0, 1, 1]))
        0.6666666865348816
    """

    _kinds = ("tp", "fp")


class Recall(_PrecisionRecall):
    """``TP / (TP + FN)`` over everything seen, at each threshold.

    Args:
        thresholds: A float or list in [0, 1] (default 0.5).
        top_k: Only the ``k`` highest predictions per sample may be positive.
        class_id: Compute the metric for this class only.
        name: Default "recall".
        dtype: The state dtype.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.Recall()([0, 1, 1, 1], [1, 0, 1, 1]))
        0.6666666865348816
    """

    _kinds = ("tp", "fn")


_CURVES = {"roc": "ROC", "pr": "PR"}
_SUMMATIONS = ("interpolation", "majoring", "minoring")


class AUC(Metric):
    """Area under the ROC or precision-recall curve.

    The curve is sampled at ``num_thresholds`` thresholds (``0 - eps``,
    ``1 / (n - 1)``, ..., ``1 + eps``) from accumulated TP/FP/TN/FN counts; the area is
    a Riemann sum of trapezoids ("interpolation"), lower ("minoring") or upper
    ("majoring") rectangles. For PR with "interpolation", precision is interpolated as
    in Davis & Goadrich (2006).

    Args:
        num_thresholds: Number of thresholds (default 200; > 1).
        curve: "ROC" or "PR".
        summation_method: "interpolation", "minoring" or "majoring".
        name: Default "auc".
        dtype: The state dtype.
        thresholds: Optional explicit thresholds in [0, 1] (``num_thresholds`` is then
            ``len(thresholds) + 2``).
        multi_label: Compute one AUC per label (last axis) and average them.
        num_labels: The number of labels with ``multi_label`` (else inferred).
        label_weights: Per-label weights (in the counts, or in the average with
            ``multi_label``).
        from_logits: Apply a sigmoid to ``y_pred`` first.

    Raises:
        ValueError: On a bad curve, summation method or ``num_thresholds``.

    Example:
        >>> from eagerflow.keras import metrics
        >>> m = metrics.AUC(curve="PR")
        >>> round(float(m([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3])), 4)
        1.0
    """

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        super().__init__(name=name, dtype=dtype)
        key = str(curve).lower()
        if key not in _CURVES:
            raise ValueError('Invalid AUC curve value: "%s". Expected values are '
                             '["PR", "ROC"]' % (curve,))
        if str(summation_method).lower() not in _SUMMATIONS:
            raise ValueError('Invalid AUC summation method value: "%s". Expected values '
                             'are ["interpolation", "majoring", "minoring"]'
                             % (summation_method,))
        self.curve = _CURVES[key]
        self.summation_method = str(summation_method).lower()
        self._init_from_thresholds = thresholds is not None
        eps = epsilon()
        if thresholds is not None:
            inner = sorted(parse_init_thresholds(thresholds))
            self.num_thresholds = len(inner) + 2
            self._evenly = is_evenly_distributed_thresholds(np.array([0.0] + inner + [1.0]))
        else:
            if not isinstance(num_thresholds, int) or num_thresholds <= 1:
                raise ValueError("Argument `num_thresholds` must be an integer > 1. "
                                 "Received: num_thresholds=%r" % (num_thresholds,))
            self.num_thresholds = num_thresholds
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self._evenly = True
        self._thresholds = [0.0 - eps] + inner + [1.0 + eps]
        self.multi_label = multi_label
        self.num_labels = num_labels
        self._from_logits = from_logits
        if label_weights is not None:
            label_weights = ef.cast(ef.convert_to_tensor(label_weights), self._dtype)
            if not bool(np.all(np.asarray(label_weights) >= 0)):
                raise ValueError("All values of `label_weights` must be non-negative. "
                                 "Received: label_weights=%s" % (label_weights.numpy(),))
        self.label_weights = label_weights
        self._built = False
        if not multi_label:
            self._build(None)
        elif num_labels is not None:
            self._build([None, num_labels])

    @property
    def thresholds(self):
        """The thresholds, including the two end points."""
        return list(self._thresholds)

    def _build(self, shape):
        if self.multi_label:
            if len(shape) != 2:
                raise ValueError("`y_pred` must have rank 2 when `multi_label=True`. Found "
                                 "rank %d. Full shape received for `y_pred`: %s"
                                 % (len(shape), shape))
            self.num_labels = int(shape[1])
            var_shape = (self.num_thresholds, self.num_labels)
        else:
            var_shape = (self.num_thresholds,)
        self.true_positives = self.add_variable(var_shape, "zeros", name="true_positives")
        self.false_positives = self.add_variable(var_shape, "zeros", name="false_positives")
        self.true_negatives = self.add_variable(var_shape, "zeros", name="true_negatives")
        self.false_negatives = self.add_variable(var_shape, "zeros", name="false_negatives")
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds this batch's weighted TP/FP/TN/FN at every threshold."""
        y_pred = ef.convert_to_tensor(y_pred)
        if not self._built:
            self._build(list(y_pred.shape))
        if self._from_logits:
            y_pred = ef.sigmoid(ef.cast(y_pred, self._dtype))
        update_confusion_matrix_variables(
            {"tp": self.true_positives, "fp": self.false_positives,
             "tn": self.true_negatives, "fn": self.false_negatives},
            y_true, y_pred, self._thresholds, thresholds_distributed_evenly=self._evenly,
            sample_weight=sample_weight, multi_label=self.multi_label,
            label_weights=None if self.multi_label else self.label_weights)

    def _average(self, by_label):
        if self.label_weights is None:
            return ef.reduce_mean(by_label)
        return ef.math.divide_no_nan(ef.reduce_sum(by_label * self.label_weights),
                                     ef.reduce_sum(self.label_weights))

    def _interpolate_pr_auc(self, tp, fp, fn):
        n = self.num_thresholds
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        dp = p[:n - 1] - p[1:]
        slope = ef.math.divide_no_nan(dtp, ef.maximum(dp, 0.0))
        intercept = tp[1:] - slope * p[1:]
        both = ef.logical_and(p[:n - 1] > 0.0, p[1:] > 0.0)
        ratio = ef.where(both, ef.math.divide_no_nan(p[:n - 1], ef.maximum(p[1:], 0.0)),
                         ef.ones_like(p[1:]))
        increment = ef.math.divide_no_nan(slope * (dtp + intercept * ef.math.log(ratio)),
                                          ef.maximum(tp[1:] + fn[1:], 0.0))
        if self.multi_label:
            return self._average(ef.reduce_sum(increment, axis=0))
        return ef.reduce_sum(increment)

    def result(self):
        if not self._built:
            return ef.constant(0.0, dtype=self._dtype)
        tp = self.true_positives.read_value()
        fp = self.false_positives.read_value()
        tn = self.true_negatives.read_value()
        fn = self.false_negatives.read_value()
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr_auc(tp, fp, fn)
        recall = ef.math.divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = ef.math.divide_no_nan(fp, fp + tn), recall
        else:
            x, y = recall, ef.math.divide_no_nan(tp, tp + fp)
        n = self.num_thresholds
        if self.summation_method == "interpolation":
            heights = (y[:n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = ef.minimum(y[:n - 1], y[1:])
        else:
            heights = ef.maximum(y[:n - 1], y[1:])
        terms = (x[:n - 1] - x[1:]) * heights
        if self.multi_label:
            return self._average(ef.reduce_sum(terms, axis=0))
        return ef.reduce_sum(terms)

    def reset_state(self):
        if self._built:
            super().reset_state()

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_thresholds": self.num_thresholds, "curve": self.curve,
            "summation_method": self.summation_method, "multi_label": self.multi_label,
            "num_labels": self.num_labels, "from_logits": self._from_logits,
            "label_weights": (None if self.label_weights is None
                              else self.label_weights.numpy().tolist()),
        })
        if self._init_from_thresholds:
            config["thresholds"] = self._thresholds[1:-1]
        return config
