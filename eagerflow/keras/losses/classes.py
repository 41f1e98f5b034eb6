"""The Keras loss classes: each wraps one loss function and its arguments."""

from __future__ import annotations

from eagerflow.keras.losses.base import LossFunctionWrapper, squeeze_or_expand_to_same_rank
from eagerflow.keras.losses.functions import (
    _sparse_categorical_crossentropy_masked, binary_crossentropy, categorical_crossentropy,
    categorical_hinge, cosine_similarity, hinge, huber, kl_divergence, log_cosh,
    mean_absolute_error, mean_absolute_percentage_error, mean_squared_error,
    mean_squared_logarithmic_error, poisson, sparse_categorical_crossentropy, squared_hinge,
)


class _PlainLoss(LossFunctionWrapper):
    """A loss class for a loss function that takes no options of its own.

    A subclass names its function and default name in its bases (``fn=``, ``name=``) and
    gets the ``__init__(reduction, name, dtype)`` that every such Keras loss has.
    """

    def __init_subclass__(cls, fn=None, name=None, **kwargs):
        super().__init_subclass__(**kwargs)
        if fn is None:
            return
        default_name = name

        def __init__(self, reduction="sum_over_batch_size", name=default_name, dtype=None):
            LossFunctionWrapper.__init__(self, fn, name=name, reduction=reduction, dtype=dtype)

        __init__.__qualname__ = cls.__qualname__ + ".__init__"
        cls.__init__ = __init__


# -- loss classes --------------------------------------------------------------------------
class MeanSquaredError(_PlainLoss, fn=mean_squared_error, name="mean_squared_error"):
    """``mean(square(y_true - y_pred))`` per sample, then reduced.

    Args:
        reduction: The reduction (see ``Loss``).
        name: Default "mean_squared_error".
        dtype: The computation dtype.

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.MeanSquaredError()([[0.0, 1.0], [0.0, 0.0]],
        ...                                 [[1.0, 1.0], [1.0, 0.0]]))
        0.5
    """


class MeanAbsoluteError(_PlainLoss, fn=mean_absolute_error, name="mean_absolute_error"):
    """``mean(abs(y_true - y_pred))`` per sample, then reduced.

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.MeanAbsoluteError()([[0.0, 1.0]], [[1.0, 1.0]]))
        0.5
    """


class MeanAbsolutePercentageError(_PlainLoss, fn=mean_absolute_percentage_error,
                                  name="mean_absolute_percentage_error"):
    """``100 * mean(abs((y_true - y_pred) / y_true))`` per sample, then reduced.

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.MeanAbsolutePercentageError()([[2.0, 4.0]], [[1.0, 4.0]]))
        25.0
    """


class MeanSquaredLogarithmicError(_PlainLoss, fn=mean_squared_logarithmic_error,
                                  name="mean_squared_logarithmic_error"):
    """``mean(square(log(y_true + 1) - log(y_pred + 1)))`` per sample, then reduced.

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.MeanSquaredLogarithmicError()([[1.0]], [[1.0]]))
        0.0
    """


class CosineSimilarity(LossFunctionWrapper):
    """Negative cosine similarity along ``axis`` (-1 = aligned), then reduced.

    Args:
        axis: The axis of the vectors (default -1).
        reduction: The reduction (see ``Loss``).
        name: Default "cosine_similarity".
        dtype: The computation dtype.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.CosineSimilarity()([[0.0, 1.0]], [[0.0, 2.0]])), 5)
        -1.0
    """

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity",
                 dtype=None):
        super().__init__(cosine_similarity, name=name, reduction=reduction, dtype=dtype,
                         axis=axis)


class Huber(LossFunctionWrapper):
    """Huber loss (quadratic within ``delta``, linear outside), then reduced.

    Args:
        delta: Where the loss turns linear (default 1.0).
        reduction: The reduction (see ``Loss``).
        name: Default "huber_loss".
        dtype: The computation dtype.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.Huber()([[0.0, 1.0], [0.0, 0.0]],
        ...                            [[0.6, 0.4], [0.4, 0.6]])), 3)
        0.155
    """

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss",
                 dtype=None):
        super().__init__(huber, name=name, reduction=reduction, dtype=dtype, delta=delta)


class LogCosh(_PlainLoss, fn=log_cosh, name="log_cosh"):
    """``mean(log(cosh(y_pred - y_true)))`` per sample, then reduced.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.LogCosh()([[0.0, 1.0], [0.0, 0.0]],
        ...                              [[1.0, 1.0], [0.0, 0.0]])), 3)
        0.108
    """


class Hinge(_PlainLoss, fn=hinge, name="hinge"):
    """Hinge loss ``maximum(1 - y_true * y_pred, 0)`` (0/1 labels become -1/1).

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.Hinge()([[1.0, -1.0]], [[0.5, -2.0]]))
        0.25
    """


class SquaredHinge(_PlainLoss, fn=squared_hinge, name="squared_hinge"):
    """Squared hinge loss ``square(maximum(1 - y_true * y_pred, 0))``.

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.SquaredHinge()([[1.0]], [[0.5]]))
        0.25
    """


class CategoricalHinge(_PlainLoss, fn=categorical_hinge, name="categorical_hinge"):
    """Categorical hinge loss ``maximum(neg - pos + 1, 0)``.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.CategoricalHinge()([[0.0, 1.0]], [[0.3, 0.6]])), 5)
        0.7
    """


class KLDivergence(_PlainLoss, fn=kl_divergence, name="kl_divergence"):
    """Kullback-Leibler divergence ``sum(y_true * log(y_true / y_pred))``.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.KLDivergence()([[1.0, 0.0]], [[0.5, 0.5]])), 4)
        0.6931
    """


class Poisson(_PlainLoss, fn=poisson, name="poisson"):
    """Poisson loss ``mean(y_pred - y_true * log(y_pred))``.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.Poisson()([[0.0]], [[2.0]])), 5)
        2.0
    """


class BinaryCrossentropy(LossFunctionWrapper):
    """Binary cross-entropy (see ``binary_crossentropy``), then reduced.

    Args:
        from_logits: Whether ``y_pred`` are logits.
        label_smoothing: In [0, 1]; targets move towards 0.5.
        axis: The axis averaged per sample (default -1).
        reduction: The reduction (see ``Loss``).
        name: Default "binary_crossentropy".
        dtype: The computation dtype.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.BinaryCrossentropy()([[0.0, 1.0], [0.0, 0.0]],
        ...                                         [[0.6, 0.4], [0.4, 0.6]])), 3)
        0.815
    """

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="binary_crossentropy", dtype=None):
        super().__init__(binary_crossentropy, name=name, reduction=reduction, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing,
                         axis=axis)
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


class CategoricalCrossentropy(LossFunctionWrapper):
    """Categorical cross-entropy for one-hot targets (see ``categorical_crossentropy``).

    Args:
        from_logits: Whether ``y_pred`` are logits.
        label_smoothing: In [0, 1]; targets become ``t * (1 - s) + s / classes``.
        axis: The class axis (default -1).
        reduction: The reduction (see ``Loss``).
        name: Default "categorical_crossentropy".
        dtype: The computation dtype.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.CategoricalCrossentropy()([[0, 1, 0], [0, 0, 1]],
        ...     [[0.05, 0.95, 0.0], [0.1, 0.8, 0.1]])), 3)
        1.177
    """

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy",
                 dtype=None):
        super().__init__(categorical_crossentropy, name=name, reduction=reduction,
                         dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy for integer targets (see ``sparse_categorical_crossentropy``).

    With ``ignore_class`` the entries of that class are left out of the loss and, for
    the averaging reductions, out of the count: the average runs over valid entries.

    Args:
        from_logits: Whether ``y_pred`` are logits.
        ignore_class: Optional class id to ignore.
        reduction: The reduction (see ``Loss``).
        name: Default "sparse_categorical_crossentropy".
        dtype: The computation dtype.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.SparseCategoricalCrossentropy()(
        ...     [1, 2], [[0.05, 0.95, 0.0], [0.1, 0.8, 0.1]])), 3)
        1.177
    """

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(sparse_categorical_crossentropy, name=name, reduction=reduction,
                         dtype=dtype, from_logits=from_logits, ignore_class=ignore_class)
        self.from_logits = from_logits
        self.ignore_class = ignore_class

    def _call_with_mask(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return _sparse_categorical_crossentropy_masked(
            y_true, y_pred, from_logits=self.from_logits, ignore_class=self.ignore_class)
