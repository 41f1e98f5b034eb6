"""``eagerflow.keras.losses``: Keras 3 loss classes, loss functions and reductions.

A loss function (``mean_squared_error``, ``binary_crossentropy``...) maps
``(y_true, y_pred)`` to one value per sample (the last axis is reduced). A ``Loss``
object wraps one, converts both inputs to its dtype (Keras' floatx, float32), weights
the per-sample values by ``sample_weight`` and reduces them:

* ``"sum_over_batch_size"`` (default) and ``"mean"``: ``sum(w * loss) / n_elements``
* ``"sum"``: ``sum(w * loss)``
* ``"mean_with_sample_weight"``: ``sum(w * loss) / sum(w)``
* ``"none"`` / ``None``: the weighted per-sample values.

Probabilities are clipped to ``[epsilon, 1 - epsilon]`` with ``epsilon = 1e-7`` before
logarithms, exactly as Keras does, so the numbers match Keras'.

Example:
    >>> from eagerflow.keras import losses
    >>> mse = losses.MeanSquaredError()
    >>> float(mse([[0.0, 1.0]], [[1.0, 1.0]]))
    0.5
    >>> float(mse([[0.0], [1.0]], [[1.0], [1.0]], sample_weight=[2.0, 1.0]))
    1.0
"""

from __future__ import annotations

from eagerflow.errors import short_repr
from eagerflow.keras.lookup import ObjectTable
from eagerflow.keras.losses.base import (  # noqa: F401 - the public namespace
    Loss, LossFunctionWrapper, Reduction,
)
from eagerflow.keras.losses.functions import (  # noqa: F401 - the public namespace
    binary_crossentropy, categorical_crossentropy, categorical_hinge, cosine_similarity, hinge,
    huber, kl_divergence, kld, log_cosh, logcosh, mae, mape, mean_absolute_error,
    mean_absolute_percentage_error, mean_squared_error, mean_squared_logarithmic_error, mse, msle,
    poisson, sparse_categorical_crossentropy, squared_hinge,
)
from eagerflow.keras.losses.classes import (  # noqa: F401 - the public namespace
    BinaryCrossentropy, CategoricalCrossentropy, CategoricalHinge, CosineSimilarity, Hinge, Huber,
    KLDivergence, LogCosh, MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredError,
    MeanSquaredLogarithmicError, Poisson, SparseCategoricalCrossentropy, SquaredHinge,
)

__all__ = [
    "Loss", "LossFunctionWrapper", "Reduction", "MeanSquaredError", "MeanAbsoluteError",
    "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "CosineSimilarity",
    "Huber", "LogCosh", "Hinge", "SquaredHinge", "CategoricalHinge", "KLDivergence",
    "Poisson", "BinaryCrossentropy", "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy", "mean_squared_error", "mean_absolute_error",
    "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "cosine_similarity",
    "huber", "log_cosh", "hinge", "squared_hinge", "categorical_hinge", "kl_divergence",
    "poisson", "binary_crossentropy", "categorical_crossentropy",
    "sparse_categorical_crossentropy", "mse", "mae", "mape", "msle", "kld", "logcosh",
    "get", "serialize", "deserialize",
]


# -- lookup and serialization --------------------------------------------------------------
_CLASSES = (Loss, LossFunctionWrapper, MeanSquaredError, MeanAbsoluteError,
            MeanAbsolutePercentageError, MeanSquaredLogarithmicError, CosineSimilarity,
            Huber, LogCosh, Hinge, SquaredHinge, CategoricalHinge, KLDivergence, Poisson,
            BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy)
_FUNCTIONS = (mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
              mean_squared_logarithmic_error, cosine_similarity, huber, log_cosh, hinge,
              squared_hinge, categorical_hinge, kl_divergence, poisson, binary_crossentropy,
              categorical_crossentropy, sparse_categorical_crossentropy)
ALL_OBJECTS_DICT = {obj.__name__: obj for obj in _CLASSES + _FUNCTIONS}
ALL_OBJECTS_DICT.update({
    "bce": binary_crossentropy, "BCE": binary_crossentropy,
    "kld": kl_divergence, "KLD": kl_divergence,
    "kullback_leibler_divergence": kl_divergence, "logcosh": log_cosh,
    "huber_loss": huber, "mae": mean_absolute_error, "MAE": mean_absolute_error,
    "mse": mean_squared_error, "MSE": mean_squared_error,
    "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
    "msle": mean_squared_logarithmic_error, "MSLE": mean_squared_logarithmic_error,
})
_TABLE = ObjectTable("loss", ALL_OBJECTS_DICT)


def serialize(loss):
    """A loss (object or built-in function) as a JSON-compatible dict or name.

    Args:
        loss: A ``Loss`` or a loss function.

    Returns:
        ``{"module", "class_name", "config", "registered_name"}`` for a ``Loss``; the
        function's name for a built-in function.

    Raises:
        TypeError: For anything else.

    Example:
        >>> from eagerflow.keras import losses
        >>> losses.serialize(losses.Huber(delta=2.0))["config"]["delta"]
        2.0
    """
    if isinstance(loss, Loss):
        cls = type(loss)
        builtin = ALL_OBJECTS_DICT.get(cls.__name__) is cls
        return {"module": "keras.losses" if builtin else cls.__module__,
                "class_name": cls.__name__, "config": loss.get_config(),
                "registered_name": None if builtin else cls.__name__}
    if callable(loss) and getattr(loss, "__name__", None) in ALL_OBJECTS_DICT:
        return loss.__name__
    raise TypeError("Cannot serialize loss %r: pass a Loss instance or a built-in loss "
                    "function." % (loss,))


def deserialize(config, custom_objects=None):
    """Rebuilds a loss from ``serialize``'s output.

    Args:
        config: A dict with ``class_name``/``config``, or a function name.
        custom_objects: Optional ``{name: class or function}``.

    Returns:
        A ``Loss`` or a loss function.

    Raises:
        ValueError: If the name is unknown.

    Example:
        >>> from eagerflow.keras import losses
        >>> type(losses.deserialize(losses.serialize(losses.Poisson()))).__name__
        'Poisson'
    """
    if isinstance(config, str):  # a name gives the function (or class) itself
        obj = _TABLE.lookup(config, custom_objects)
        if obj is None:
            raise ValueError("Unknown loss function: %s. Known: %s"
                             % (short_repr(config), _TABLE.known()))
        return obj
    return _TABLE.deserialize(config, custom_objects)


def get(identifier):
    """Resolves a loss from a name, a config dict, a ``Loss`` or a function.

    A class name ("MeanSquaredError") gives a new instance; a function name or alias
    ("mse", "binary_crossentropy") gives the function, as in Keras 3.

    Args:
        identifier: A string, dict, ``Loss``, callable, or None.

    Returns:
        A ``Loss`` instance, a loss function, or None.

    Raises:
        ValueError: If the identifier cannot be interpreted.

    Example:
        >>> from eagerflow.keras import losses
        >>> losses.get("mse") is losses.mean_squared_error
        True
        >>> type(losses.get("BinaryCrossentropy")).__name__
        'BinaryCrossentropy'
    """
    return _TABLE.get(identifier)
