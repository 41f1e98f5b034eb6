"""Accuracy metrics: exact, binary, categorical, sparse categorical and top-k.

Each function returns one 0/1 value per sample (float32); each class is the weighted
mean of its function over all samples seen.

Example:
    >>> from eagerflow.keras import metrics
    >>> m = metrics.SparseCategoricalAccuracy()
    >>> m.update_state([1, 0], [[0.1, 0.9], [0.2, 0.8]])
    >>> m.update_state([[0]], [[0.7, 0.3]])
    >>> round(float(m.result()), 4)
    0.6667
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.losses.base import (_reshape_target, _tensor, floatx,
                                         squeeze_or_expand_to_same_rank)
from eagerflow.keras.metrics.base import MeanMetricWrapper

__all__ = ["accuracy", "binary_accuracy", "categorical_accuracy",
           "sparse_categorical_accuracy", "top_k_categorical_accuracy",
           "sparse_top_k_categorical_accuracy", "Accuracy", "BinaryAccuracy",
           "CategoricalAccuracy", "SparseCategoricalAccuracy", "TopKCategoricalAccuracy",
           "SparseTopKCategoricalAccuracy"]


def _matches(a, b):
    return ef.cast(ef.equal(a, b), floatx())


def accuracy(y_true, y_pred):
    """1 where ``y_true == y_pred`` exactly, else 0.

    Example:
        >>> from eagerflow.keras import metrics
        >>> metrics.accuracy([1, 2, 3], [1, 2, 4]).numpy().tolist()
        [1.0, 1.0, 0.0]
    """
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return _matches(y_true, y_pred)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1 where ``(y_pred > threshold) == y_true``, elementwise.

    Example:
        >>> from eagerflow.keras import metrics
        >>> metrics.binary_accuracy([[1], [0]], [[0.7], [0.6]]).numpy().tolist()
        [[1.0], [0.0]]
    """
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    predicted = ef.cast(ef.greater(y_pred, ef.constant(threshold, dtype=y_pred.dtype)),
                        y_true.dtype)
    return _matches(y_true, predicted)


def categorical_accuracy(y_true, y_pred):
    """1 where ``argmax(y_true) == argmax(y_pred)`` (one-hot targets).

    Example:
        >>> from eagerflow.keras import metrics
        >>> metrics.categorical_accuracy([[0, 0, 1], [0, 1, 0]],
        ...                              [[0.1, 0.9, 0.8], [0.05, 0.95, 0]]).numpy().tolist()
        [0.0, 1.0]
    """
    y_true = ef.argmax(_tensor(y_true), axis=-1)
    y_pred = _tensor(y_pred)
    original_shape = _reshape_target(y_true)
    reshape = False
    if len(y_true.shape) == len(y_pred.shape):
        y_true = ef.squeeze(y_true, axis=-1)
        reshape = True
    y_pred = ef.cast(ef.argmax(y_pred, axis=-1), y_true.dtype)
    matches = _matches(y_true, y_pred)
    return ef.reshape(matches, original_shape) if reshape else matches


def sparse_categorical_accuracy(y_true, y_pred):
    """1 where ``y_true == argmax(y_pred)`` (integer targets, ``[batch]`` or ``[batch, 1]``).

    Example:
        >>> from eagerflow.keras import metrics
        >>> metrics.sparse_categorical_accuracy([[2], [1]],
        ...                                     [[0.1, 0.6, 0.3], [0.05, 0.95, 0]]).numpy().tolist()
        [0.0, 1.0]
    """
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    original_shape = _reshape_target(y_true)
    reshape = False
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = ef.squeeze(y_true, axis=-1)
        reshape = True
    y_pred = ef.cast(ef.argmax(y_pred, axis=-1), y_true.dtype)
    matches = _matches(y_true, y_pred)
    if reshape:
        matches = ef.reshape(matches, original_shape)
    if len(matches.shape) > 1 and matches.shape[-1] == 1:
        matches = ef.squeeze(matches, axis=-1)
    return matches


def _flatten_for_top_k(y_true, y_pred):
    original_shape = _reshape_target(y_true)
    reshape = False
    if len(y_pred.shape) > 2:
        y_pred = ef.reshape(y_pred, [-1, y_pred.shape[-1]])
    if len(y_true.shape) > 1:
        reshape = True
        y_true = ef.reshape(y_true, [-1])
    return y_true, y_pred, original_shape, reshape


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1 where the true class (argmax of one-hot ``y_true``) is among the top ``k``.

    Ties at the k-th value count as in the top k (TF's ``in_top_k``).

    Example:
        >>> from eagerflow.keras import metrics
        >>> metrics.top_k_categorical_accuracy([[0, 0, 1], [0, 1, 0]],
        ...     [[0.1, 0.9, 0.8], [0.05, 0.95, 0]], k=1).numpy().tolist()
        [0.0, 1.0]
    """
    y_pred = _tensor(y_pred)
    y_true = ef.argmax(_tensor(y_true), axis=-1)
    y_true, y_pred, shape, reshape = _flatten_for_top_k(y_true, y_pred)
    matches = ef.cast(ef.math.in_top_k(ef.cast(y_true, ef.int32), y_pred, k), floatx())
    return ef.reshape(matches, shape) if reshape else matches


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False):
    """1 where the integer ``y_true`` is among the top ``k`` classes of ``y_pred``.

    With ``from_sorted_ids=True``, ``y_pred`` holds class ids sorted by score and the
    first ``k`` columns are compared.

    Example:
        >>> from eagerflow.keras import metrics
        >>> metrics.sparse_top_k_categorical_accuracy([2, 1],
        ...     [[0.1, 0.9, 0.8], [0.05, 0.95, 0]], k=2).numpy().tolist()
        [1.0, 1.0]
    """
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype if from_sorted_ids else ef.int32)
    y_true, y_pred, shape, reshape = _flatten_for_top_k(y_true, y_pred)
    if from_sorted_ids:
        matches = ef.reduce_any(ef.equal(ef.expand_dims(y_true, 1), y_pred[:, :k]), axis=1)
    else:
        matches = ef.math.in_top_k(y_true, y_pred, k)
    matches = ef.cast(matches, floatx())
    return ef.reshape(matches, shape) if reshape else matches


class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels exactly.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.Accuracy()([[1], [2], [3], [4]], [[0], [2], [3], [4]]))
        0.75
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches binary labels.

    Args:
        name: Default "binary_accuracy".
        dtype: The state dtype.
        threshold: The decision threshold (default 0.5; use 0.0 for logits).

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.BinaryAccuracy()([[1], [1], [0], [0]],
        ...                                [[0.98], [1], [0], [0.6]]))
        0.75
    """

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred)`` matches one-hot labels.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.CategoricalAccuracy()([[0, 0, 1], [0, 1, 0]],
        ...                                     [[0.1, 0.9, 0.8], [0.05, 0.95, 0]]))
        0.5
    """

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred)`` matches integer labels.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.SparseCategoricalAccuracy()([[2], [1]],
        ...                                           [[0.1, 0.6, 0.3], [0.05, 0.95, 0]]))
        0.5
    """

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot target is in the top ``k`` predictions.

    Args:
        k: How many top classes count (default 5).
        name: Default "top_k_categorical_accuracy".
        dtype: The state dtype.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.TopKCategoricalAccuracy(k=1)([[0, 0, 1], [0, 1, 0]],
        ...     [[0.1, 0.9, 0.8], [0.05, 0.95, 0]]))
        0.5
    """

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer target is in the top ``k`` predictions.

    Args:
        k: How many top classes count (default 5).
        name: Default "sparse_top_k_categorical_accuracy".
        dtype: The state dtype.
        from_sorted_ids: Whether ``y_pred`` holds class ids sorted by score.

    Example:
        >>> from eagerflow.keras import metrics
        >>> float(metrics.SparseTopKCategoricalAccuracy(k=1)([2, 1],
        ...     [[0.1, 0.9, 0.8], [0.05, 0.95, 0]]))
        0.5
    """

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None,
                 from_sorted_ids=False):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k,
                         from_sorted_ids=from_sorted_ids)
        self.k = k
        self.from_sorted_ids = from_sorted_ids
