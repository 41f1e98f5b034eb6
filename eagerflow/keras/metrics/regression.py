"""Regression, probabilistic and hinge metrics: weighted means of the loss functions.

``RootMeanSquaredError`` is the square root of the running mean of squared errors (not a
mean of per-batch roots). ``CosineSimilarity`` reports the similarity itself (+1 =
aligned), unlike the loss of the same name.

Example:
    >>> from eagerflow.keras import metrics
    >>> m = metrics.RootMeanSquaredError()
    >>> m.update_state([[0.0, 1.0]], [[1.0, 1.0]])
    >>> m.update_state([[0.0, 0.0]], [[1.0, 1.0]])
    >>> round(float(m.result()), 4)  # sqrt((1 + 0 + 1 + 1) / 4)
    0.866
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.losses import functions as losses
from eagerflow.keras.losses.base import _tensor, squeeze_or_expand_to_same_rank
from eagerflow.keras.losses.functions import _pair
from eagerflow.keras.metrics.base import Mean, MeanMetricWrapper

__all__ = ["MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError",
           "MeanSquaredLogarithmicError", "RootMeanSquaredError", "CosineSimilarity",
           "LogCoshError", "BinaryCrossentropy", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "KLDivergence", "Poisson", "Hinge",
           "SquaredHinge", "CategoricalHinge", "cosine_similarity"]


def cosine_similarity(y_true, y_pred, axis=-1):
    """``sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)`` (+1 = same direction).

    Example:
        >>> from eagerflow.keras import metrics
        >>> [round(x, 4) for x in metrics.cosine_similarity(
        ...     [[0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]]).numpy().tolist()]
        [0.0, 1.0]
    """
    y_true, y_pred = _pair(y_true, y_pred)
    y_pred = losses._l2_normalize(y_pred, axis)
    y_true = losses._l2_normalize(y_true, axis)
    return ef.reduce_sum(y_true * y_pred, axis=axis)


class MeanSquaredError(MeanMetricWrapper):
    """Running mean of ``mean(square(y_true - y_pred), axis=-1)``.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.MeanSquaredError()([[0, 1], [0, 0]], [[1, 1], [0, 0]]))
        0.25
    """

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(losses.mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """Running mean of ``mean(abs(y_true - y_pred), axis=-1)``.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.MeanAbsoluteError()([[0, 1], [0, 0]], [[1, 1], [0, 0]]))
        0.25
    """

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(losses.mean_absolute_error, name=name, dtype=dtype)


class MeanAbsolutePercentageError(MeanMetricWrapper):
    """Running mean of the absolute percentage error.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.MeanAbsolutePercentageError()([[2.0]], [[1.0]]))
        50.0
    """

    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(losses.mean_absolute_percentage_error, name=name, dtype=dtype)


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    """Running mean of the squared logarithmic error.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.MeanSquaredLogarithmicError()([[1.0]], [[1.0]]))
        0.0
    """

    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(losses.mean_squared_logarithmic_error, name=name, dtype=dtype)


class RootMeanSquaredError(Mean):
    """``sqrt`` of the weighted mean of squared errors over all elements seen.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.RootMeanSquaredError()([[0, 1], [0, 0]], [[1, 1], [0, 0]]))
        0.5
    """

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds the squared errors of this batch (weighted by ``sample_weight``)."""
        y_true = _tensor(y_true, self._dtype)
        y_pred = _tensor(y_pred, self._dtype)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        super().update_state(ef.square(y_pred - y_true), sample_weight=sample_weight)

    def result(self):
        return ef.sqrt(super().result())


class CosineSimilarity(MeanMetricWrapper):
    """Running mean of the cosine similarity along ``axis``.

    Args:
        name: Default "cosine_similarity".
        dtype: The state dtype.
        axis: The vector axis (default -1).

    Example:
        >>> from eagerflow.keras import metrics
        >>> round(float(metrics.CosineSimilarity()([[0., 1.], [1., 1.]],
        ...                                        [[1., 0.], [1., 1.]])), 4)
        0.5
    """

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(cosine_similarity, name=name, dtype=dtype, axis=axis)


class LogCoshError(MeanMetricWrapper):
    """Running mean of ``log(cosh(y_pred - y_true))``.

    Example:
        >>> from eagerflow.keras import metrics
        >>> round(float(metrics.LogCoshError()([[0., 1.], [0., 0.]],
        ...                                    [[1., 1.], [0., 0.]])), 3)
        0.108
    """

    def __init__(self, name="logcosh", dtype=None):
        super().__init__(losses.log_cosh, name=name, dtype=dtype)


class BinaryCrossentropy(MeanMetricWrapper):
    """Running mean of the binary cross-entropy.

    Args:
        name: Default "binary_crossentropy".
        dtype: The state dtype.
        from_logits: Whether ``y_pred`` are logits.
        label_smoothing: In [0, 1].

    Example:
        >>> from eagerflow.keras import metrics
        >>> round(float(metrics.BinaryCrossentropy()([[0, 1], [0, 0]],
        ...                                          [[0.6, 0.4], [0.4, 0.6]])), 3)
        0.815
    """

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0):
        super().__init__(losses.binary_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing)


class CategoricalCrossentropy(MeanMetricWrapper):
    """Running mean of the categorical cross-entropy.

    Args:
        name: Default "categorical_crossentropy".
        dtype: The state dtype.
        from_logits: Whether ``y_pred`` are logits.
        label_smoothing: In [0, 1].
        axis: The class axis.

    Example:
        >>> from eagerflow.keras import metrics
        >>> round(float(metrics.CategoricalCrossentropy()([[0, 1, 0], [0, 0, 1]],
        ...     [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])), 3)
        1.177
    """

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0, axis=-1):
        super().__init__(losses.categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing,
                         axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """Running mean of the sparse categorical cross-entropy.

    Args:
        name: Default "sparse_categorical_crossentropy".
        dtype: The state dtype.
        from_logits: Whether ``y_pred`` are logits.
        axis: The class axis (-1).

    Example:
        >>> from eagerflow.keras import metrics
        >>> round(float(metrics.SparseCategoricalCrossentropy()([1, 2],
        ...     [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])), 3)
        1.177
    """

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 axis=-1):
        super().__init__(losses.sparse_categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, axis=axis)


class KLDivergence(MeanMetricWrapper):
    """Running mean of the Kullback-Leibler divergence.

    Example:
        >>> from eagerflow.keras import metrics
        >>> round(float(metrics.KLDivergence()([[1.0, 0.0]], [[0.5, 0.5]])), 4)
        0.6931
    """

    def __init__(self, name="kl_divergence", dtype=None):
        super().__init__(losses.kl_divergence, name=name, dtype=dtype)


class Poisson(MeanMetricWrapper):
    """Running mean of the Poisson loss.

    Example:
        >>> from eagerflow.keras import metrics
        >>> round(float(metrics.Poisson()([[0.0]], [[2.0]])), 5)
        2.0
    """

    def __init__(self, name="poisson", dtype=None):
        super().__init__(losses.poisson, name=name, dtype=dtype)


class Hinge(MeanMetricWrapper):
    """Running mean of the hinge loss.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.Hinge()([[1.0, -1.0]], [[0.5, -2.0]]))
        0.25
    """

    def __init__(self, name="hinge", dtype=None):
        super().__init__(losses.hinge, name=name, dtype=dtype)


class SquaredHinge(MeanMetricWrapper):
    """Running mean of the squared hinge loss.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.SquaredHinge()([[1.0]], [[0.5]]))
        0.25
    """

    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(losses.squared_hinge, name=name, dtype=dtype)


class CategoricalHinge(MeanMetricWrapper):
    """Running mean of the categorical hinge loss.

    Example:
        >>> from eagerflow.keras import metrics
        >>> round(float(metrics.CategoricalHinge()([[0.0, 1.0]], [[0.3, 0.6]])), 5)
        0.7
    """

    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(losses.categorical_hinge, name=name, dtype=dtype)
