"""``eagerflow.keras.metrics``: stateful Keras 3 metrics and metric functions.

``get("accuracy")`` gives an exact-match ``Accuracy``; what ``model.compile(metrics=
["accuracy"])`` means depends on the loss and shapes, and ``get_accuracy_for`` (or
``get_for_compile``) makes that choice.

Example:
    >>> from eagerflow.keras import metrics
    >>> m = metrics.get_accuracy_for(loss="sparse_categorical_crossentropy")
    >>> type(m).__name__, m.name
    ('SparseCategoricalAccuracy', 'accuracy')
"""

from __future__ import annotations

import inspect

from eagerflow.errors import short_repr
from eagerflow.keras import losses as _losses
from eagerflow.keras.metrics.accuracy import (
    Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy, TopKCategoricalAccuracy, accuracy, binary_accuracy,
    categorical_accuracy, sparse_categorical_accuracy, sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy)
from eagerflow.keras.metrics.base import (
    Mean, MeanMetricWrapper, Metric, Sum, reduce_to_samplewise_values, to_snake_case)
from eagerflow.keras.metrics.confusion import (
    AUC, FalseNegatives, FalsePositives, Precision, Recall, TrueNegatives, TruePositives)
from eagerflow.keras.metrics.regression import (
    BinaryCrossentropy, CategoricalCrossentropy, CategoricalHinge, CosineSimilarity, Hinge,
    KLDivergence, LogCoshError, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredError, MeanSquaredLogarithmicError, Poisson, RootMeanSquaredError,
    SparseCategoricalCrossentropy, SquaredHinge, cosine_similarity)

binary_crossentropy = _losses.binary_crossentropy
categorical_crossentropy = _losses.categorical_crossentropy
sparse_categorical_crossentropy = _losses.sparse_categorical_crossentropy
mean_squared_error = mse = MSE = _losses.mean_squared_error
mean_absolute_error = mae = MAE = _losses.mean_absolute_error
mean_absolute_percentage_error = mape = MAPE = _losses.mean_absolute_percentage_error
mean_squared_logarithmic_error = msle = MSLE = _losses.mean_squared_logarithmic_error
kl_divergence = kld = KLD = _losses.kl_divergence
poisson = _losses.poisson
hinge = _losses.hinge
squared_hinge = _losses.squared_hinge
categorical_hinge = _losses.categorical_hinge
log_cosh = logcosh = _losses.log_cosh

__all__ = [
    "Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
    "CategoricalAccuracy", "SparseCategoricalAccuracy", "TopKCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy", "Precision", "Recall", "AUC", "TruePositives",
    "FalsePositives", "TrueNegatives", "FalseNegatives", "MeanSquaredError",
    "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
    "RootMeanSquaredError", "CosineSimilarity", "LogCoshError", "BinaryCrossentropy",
    "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "KLDivergence", "Poisson",
    "Hinge", "SquaredHinge", "CategoricalHinge", "accuracy", "binary_accuracy",
    "categorical_accuracy", "sparse_categorical_accuracy", "top_k_categorical_accuracy",
    "sparse_top_k_categorical_accuracy", "cosine_similarity", "binary_crossentropy",
    "categorical_crossentropy", "sparse_categorical_crossentropy", "mean_squared_error",
    "mean_absolute_error", "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error", "kl_divergence", "poisson", "hinge", "squared_hinge",
    "categorical_hinge", "log_cosh", "mse", "mae", "mape", "msle", "kld", "logcosh",
    "get", "get_function", "serialize", "deserialize", "get_accuracy_for",
    "get_for_compile", "reduce_to_samplewise_values",
]

_CLASSES = (Metric, Mean, Sum, MeanMetricWrapper, Accuracy, BinaryAccuracy,
            CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy,
            SparseTopKCategoricalAccuracy, Precision, Recall, AUC, TruePositives,
            FalsePositives, TrueNegatives, FalseNegatives, MeanSquaredError,
            MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
            RootMeanSquaredError, CosineSimilarity, LogCoshError, BinaryCrossentropy,
            CategoricalCrossentropy, SparseCategoricalCrossentropy, KLDivergence, Poisson,
            Hinge, SquaredHinge, CategoricalHinge)
_FUNCTIONS = (accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
              top_k_categorical_accuracy, sparse_top_k_categorical_accuracy,
              cosine_similarity, binary_crossentropy, categorical_crossentropy,
              sparse_categorical_crossentropy, mean_squared_error, mean_absolute_error,
              mean_absolute_percentage_error, mean_squared_logarithmic_error, kl_divergence,
              poisson, hinge, squared_hinge, categorical_hinge, log_cosh)

ALL_OBJECTS_DICT = {cls.__name__: cls for cls in _CLASSES}
ALL_OBJECTS_DICT.update({to_snake_case(cls.__name__): cls for cls in _CLASSES})
ALL_OBJECTS_DICT.update({
    "acc": Accuracy, "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy,
    "mse": MeanSquaredError, "MSE": MeanSquaredError, "mae": MeanAbsoluteError,
    "MAE": MeanAbsoluteError, "mape": MeanAbsolutePercentageError,
    "MAPE": MeanAbsolutePercentageError, "msle": MeanSquaredLogarithmicError,
    "MSLE": MeanSquaredLogarithmicError, "logcosh": LogCoshError, "kld": KLDivergence,
    "KLD": KLDivergence, "rmse": RootMeanSquaredError,
})
_FUNCTIONS_DICT = {fn.__name__: fn for fn in _FUNCTIONS}
_FUNCTIONS_DICT.update({"mse": mean_squared_error, "mae": mean_absolute_error,
                        "mape": mean_absolute_percentage_error,
                        "msle": mean_squared_logarithmic_error, "kld": kl_divergence,
                        "logcosh": log_cosh, "acc": accuracy})


def get_function(name):
    """The per-sample metric function called ``name`` ("binary_accuracy", "mse", ...).

    Raises:
        ValueError: If no such function exists.

    Example:
        >>> from eagerflow.keras import metrics
        >>> metrics.get_function("mse") is metrics.mean_squared_error
        True
    """
    if name not in _FUNCTIONS_DICT:
        raise ValueError("Unknown metric function: %r. Known: %s"
                         % (name, sorted(_FUNCTIONS_DICT)))
    return _FUNCTIONS_DICT[name]


def serialize(metric):
    """A metric as a JSON-compatible dict (Keras 3's format).

    Raises:
        TypeError: If ``metric`` is not a ``Metric``.

    Example:
        >>> from eagerflow.keras import metrics
        >>> metrics.serialize(metrics.AUC(num_thresholds=10))["config"]["num_thresholds"]
        10
    """
    if not isinstance(metric, Metric):
        raise TypeError("serialize expects a Metric, got %r" % (metric,))
    cls = type(metric)
    builtin = ALL_OBJECTS_DICT.get(cls.__name__) is cls
    return {"module": "keras.metrics" if builtin else cls.__module__,
            "class_name": cls.__name__, "config": metric.get_config(),
            "registered_name": None if builtin else cls.__name__}


def deserialize(config, custom_objects=None):
    """Rebuilds a metric from ``serialize``'s output.

    Raises:
        ValueError: If the class is unknown.

    Example:
        >>> from eagerflow.keras import metrics
        >>> m = metrics.deserialize(metrics.serialize(metrics.BinaryAccuracy(threshold=0.3)))
        >>> m.threshold
        0.3
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("Could not deserialize metric from %r." % (config,))
    table = dict(ALL_OBJECTS_DICT)
    table.update(custom_objects or {})
    cls = table.get(config["class_name"])
    if cls is None:
        raise ValueError("Unknown metric: %r. Pass custom metrics with "
                         "custom_objects={%r: cls}." % (config["class_name"],
                                                       config["class_name"]))
    return cls.from_config(dict(config.get("config", {})))


def get(identifier):
    """Resolves a metric from a name, a config dict, a ``Metric`` or a function.

    Names are class names, their snake_case ("binary_accuracy", "auc") or aliases
    ("acc", "mse", "mae", "bce", ...); each gives a new ``Metric`` instance (as Keras 3).
    A callable is returned as is.

    Raises:
        ValueError: If the identifier cannot be interpreted.

    Example:
        >>> from eagerflow.keras import metrics
        >>> type(metrics.get("mse")).__name__
        'MeanSquaredError'
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        obj = deserialize(identifier)
    elif isinstance(identifier, str):
        obj = ALL_OBJECTS_DICT.get(identifier)
    else:
        obj = identifier
    if callable(obj):
        return obj() if inspect.isclass(obj) else obj
    raise ValueError("Could not interpret metric identifier: %s. Known names: %s"
                     % (short_repr(identifier), sorted(ALL_OBJECTS_DICT)))


def _loss_kind(loss):
    """("binary" | "categorical" | "sparse" | None, from_logits) for a loss identifier."""
    if loss is None:
        return None, False
    if isinstance(loss, str):
        loss = _losses.get(loss) if loss in _losses.ALL_OBJECTS_DICT else loss
    if isinstance(loss, _losses.BinaryCrossentropy):
        return "binary", bool(loss.from_logits)
    if isinstance(loss, _losses.SparseCategoricalCrossentropy):
        return "sparse", bool(loss.from_logits)
    if isinstance(loss, _losses.CategoricalCrossentropy):
        return "categorical", bool(loss.from_logits)
    fn = getattr(loss, "fn", loss)
    kwargs = getattr(loss, "_fn_kwargs", {})
    kinds = {_losses.binary_crossentropy: "binary",
             _losses.sparse_categorical_crossentropy: "sparse",
             _losses.categorical_crossentropy: "categorical"}
    for f, kind in kinds.items():
        if fn is f:
            return kind, bool(kwargs.get("from_logits", False))
    return None, False


def _shape(x):
    if x is None:
        return None
    shape = getattr(x, "shape", x)
    return [None if d is None else int(d) for d in shape]


def get_accuracy_for(loss=None, y_true=None, y_pred=None, name="accuracy"):
    """Picks the accuracy that ``metrics=["accuracy"]`` means for this loss and data.

    The loss decides first (as tf.keras 2 did): binary cross-entropy gives
    ``BinaryAccuracy``, sparse categorical cross-entropy ``SparseCategoricalAccuracy``,
    categorical cross-entropy ``CategoricalAccuracy``. Otherwise the shapes decide (as
    Keras 3 does): one output unit is binary; labels of lower rank than the predictions
    (or a last dimension of 1 against several classes) are sparse; else categorical.

    Unlike Keras, a binary cross-entropy ``from_logits=True`` gets threshold 0.0 (the
    logit of 0.5), so the reported accuracy is that of the model's actual decisions
    instead of comparing logits with 0.5.

    Args:
        loss: The compiled loss (name, ``Loss`` or function), or None.
        y_true: Labels, or their shape.
        y_pred: Predictions, or their shape.
        name: The metric's name (default "accuracy").

    Returns:
        A new accuracy ``Metric`` named ``name``.

    Raises:
        ValueError: If neither the loss nor the shapes decide.

    Example:
        >>> from eagerflow.keras import metrics, losses
        >>> m = metrics.get_accuracy_for(losses.BinaryCrossentropy(from_logits=True))
        >>> type(m).__name__, m.threshold
        ('BinaryAccuracy', 0.0)
        >>> type(metrics.get_accuracy_for(y_true=[8], y_pred=[8, 10])).__name__
        'SparseCategoricalAccuracy'
    """
    kind, from_logits = _loss_kind(loss)
    if kind is None:
        t, p = _shape(y_true), _shape(y_pred)
        if t is None or p is None:
            raise ValueError("get_accuracy_for: cannot tell which accuracy to use without a "
                             "cross-entropy loss or the shapes of y_true and y_pred. Got "
                             "loss=%r, y_true=%r, y_pred=%r." % (loss, y_true, y_pred))
        if p and p[-1] == 1:
            kind = "binary"
        elif len(t) < len(p) or (t and t[-1] == 1 and p and (p[-1] or 2) > 1):
            kind = "sparse"
        else:
            kind = "categorical"
    if kind == "binary":
        return BinaryAccuracy(name=name, threshold=0.0 if from_logits else 0.5)
    if kind == "sparse":
        return SparseCategoricalAccuracy(name=name)
    return CategoricalAccuracy(name=name)


def get_for_compile(identifier, y_true=None, y_pred=None, loss=None):
    """Resolves one entry of ``compile(metrics=[...])`` into a ``Metric``.

    "accuracy"/"acc" go through ``get_accuracy_for``; "crossentropy"/"ce" pick the
    matching cross-entropy metric the same way; other names go through ``get``; a plain
    function is wrapped in ``MeanMetricWrapper``. A string identifier becomes the
    metric's name, as in Keras.

    Args:
        identifier: A name, function or ``Metric``.
        y_true: Labels or their shape (for "accuracy"/"crossentropy").
        y_pred: Predictions or their shape.
        loss: The compiled loss.

    Returns:
        A ``Metric``, or None for a None identifier.

    Example:
        >>> from eagerflow.keras import metrics
        >>> m = metrics.get_for_compile("acc", loss="binary_crossentropy")
        >>> type(m).__name__, m.name
        ('BinaryAccuracy', 'acc')
    """
    if identifier is None:
        return None
    key = str(identifier).lower() if isinstance(identifier, str) else None
    if key in ("accuracy", "acc"):
        return get_accuracy_for(loss=loss, y_true=y_true, y_pred=y_pred, name=identifier)
    if key in ("crossentropy", "ce"):
        acc = get_accuracy_for(loss=loss, y_true=y_true, y_pred=y_pred)
        kind, from_logits = _loss_kind(loss)
        cls = {BinaryAccuracy: BinaryCrossentropy,
               SparseCategoricalAccuracy: SparseCategoricalCrossentropy,
               CategoricalAccuracy: CategoricalCrossentropy}[type(acc)]
        return cls(name=identifier, from_logits=from_logits)
    metric = get(identifier)
    if not isinstance(metric, Metric):
        metric = MeanMetricWrapper(metric, name=getattr(metric, "__name__", None))
    if isinstance(identifier, str):
        metric.name = identifier
    return metric
