"""The Keras loss functions: ``(y_true, y_pred)`` to one value per sample (the last axis
is reduced)."""

from __future__ import annotations

import math
import warnings

import eagerflow as ef
from eagerflow.keras.losses.base import _const, _tensor, epsilon, squeeze_or_expand_to_same_rank


# -- loss functions (per sample, last axis reduced) ----------------------------------------
def _pair(y_true, y_pred):
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def mean_squared_error(y_true, y_pred):
    """``mean(square(y_true - y_pred), axis=-1)``.

    Args:
        y_true: Targets ``[batch, d0, .. dN]``.
        y_pred: Predictions of the same shape.

    Returns:
        Per-sample losses ``[batch, d0, .. dN-1]``.

    Example:
        >>> from eagerflow.keras import losses
        >>> losses.mean_squared_error([[0.0, 2.0]], [[1.0, 1.0]]).numpy().tolist()
        [1.0]
    """
    y_true, y_pred = _pair(y_true, y_pred)
    return ef.reduce_mean(ef.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(abs(y_true - y_pred), axis=-1)``.

    Example:
        >>> from eagerflow.keras import losses
        >>> losses.mean_absolute_error([[0.0, 2.0]], [[1.0, 1.0]]).numpy().tolist()
        [1.0]
    """
    y_true, y_pred = _pair(y_true, y_pred)
    return ef.reduce_mean(ef.abs(y_true - y_pred), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(abs((y_true - y_pred) / max(abs(y_true), epsilon)), axis=-1)``.

    Example:
        >>> from eagerflow.keras import losses
        >>> losses.mean_absolute_percentage_error([[2.0]], [[1.0]]).numpy().tolist()
        [50.0]
    """
    y_true, y_pred = _pair(y_true, y_pred)
    eps = _const(epsilon(), y_pred.dtype)
    diff = ef.abs((y_true - y_pred) / ef.maximum(ef.abs(y_true), eps))
    return 100.0 * ef.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean(square(log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1)), axis=-1)``.

    Example:
        >>> import math
        >>> from eagerflow.keras import losses
        >>> v = losses.mean_squared_logarithmic_error([[0.0]], [[math.e - 1]])
        >>> round(float(v[0]), 5)
        1.0
    """
    y_true, y_pred = _pair(y_true, y_pred)
    eps = _const(epsilon(), y_pred.dtype)
    first = ef.math.log(ef.maximum(y_pred, eps) + 1.0)
    second = ef.math.log(ef.maximum(y_true, eps) + 1.0)
    return ef.reduce_mean(ef.square(first - second), axis=-1)


def _l2_normalize(x, axis):
    # x / max(||x||, eps): a zero vector stays zero instead of becoming NaN.
    square_sum = ef.reduce_sum(ef.square(x), axis=axis, keepdims=True)
    eps = epsilon()
    return x * ef.math.rsqrt(ef.maximum(square_sum, _const(eps * eps, x.dtype)))


def cosine_similarity(y_true, y_pred, axis=-1):
    """Negative cosine similarity: ``-sum(l2_normalize(y_true) * l2_normalize(y_pred))``.

    Values lie in [-1, 1]; -1 means the same direction (so minimizing it aligns them). A
    zero vector gives 0.

    Args:
        y_true: Targets.
        y_pred: Predictions.
        axis: The axis along which the similarity is computed.

    Example:
        >>> from eagerflow.keras import losses
        >>> v = losses.cosine_similarity([[0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]])
        >>> [round(x, 5) for x in v.numpy().tolist()]
        [-0.0, -1.0]
    """
    y_true, y_pred = _pair(y_true, y_pred)
    y_pred = _l2_normalize(y_pred, axis)
    y_true = _l2_normalize(y_true, axis)
    return -ef.reduce_sum(y_true * y_pred, axis=axis)


def huber(y_true, y_pred, delta=1.0):
    """Huber loss: ``0.5 x**2`` for ``|x| <= delta``, else ``delta * |x| - 0.5 delta**2``.

    ``x = y_pred - y_true``; the mean is over the last axis.

    Args:
        y_true: Targets.
        y_pred: Predictions.
        delta: Where the loss turns from quadratic to linear.

    Example:
        >>> from eagerflow.keras import losses
        >>> losses.huber([[0.0, 0.0]], [[0.5, 3.0]]).numpy().tolist()
        [1.3125]
    """
    y_true, y_pred = _pair(y_true, y_pred)
    delta = _const(delta, y_pred.dtype)
    error = y_pred - y_true
    abs_error = ef.abs(error)
    half = _const(0.5, y_pred.dtype)
    return ef.reduce_mean(ef.where(abs_error <= delta, half * ef.square(error),
                                   delta * abs_error - half * ef.square(delta)), axis=-1)


def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, computed stably.

    Example:
        >>> import math
        >>> from eagerflow.keras import losses
        >>> v = losses.log_cosh([[0.0]], [[1.0]])
        >>> round(float(v[0]), 6) == round(math.log(math.cosh(1.0)), 6)
        True
    """
    y_true, y_pred = _pair(y_true, y_pred)
    x = y_pred - y_true
    log2 = _const(math.log(2.0), y_pred.dtype)
    return ef.reduce_mean(x + ef.math.softplus(x * -2.0) - log2, axis=-1)


def _to_hinge_labels(y_true):
    # Labels that are all 0/1 become -1/1; others are used as given (selected by ops).
    binary = ef.reduce_all(ef.logical_or(ef.equal(y_true, 0.0), ef.equal(y_true, 1.0)))
    return ef.where(binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred):
    """``mean(maximum(1 - y_true * y_pred, 0), axis=-1)``; 0/1 labels become -1/1.

    Example:
        >>> from eagerflow.keras import losses
        >>> losses.hinge([[1.0, 0.0]], [[0.5, 0.5]]).numpy().tolist()
        [1.0]
    """
    y_pred = _tensor(y_pred)
    y_true = _to_hinge_labels(_tensor(y_true, y_pred.dtype))
    return ef.reduce_mean(ef.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """``mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)``; 0/1 labels become -1/1.

    Example:
        >>> from eagerflow.keras import losses
        >>> losses.squared_hinge([[1.0, 0.0]], [[0.5, 0.5]]).numpy().tolist()
        [1.25]
    """
    y_pred = _tensor(y_pred)
    y_true = _to_hinge_labels(_tensor(y_true, y_pred.dtype))
    return ef.reduce_mean(ef.square(ef.maximum(1.0 - y_true * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """``maximum(neg - pos + 1, 0)`` with ``pos = sum(y_true * y_pred)`` and
    ``neg = max((1 - y_true) * y_pred)`` over the last axis.

    Example:
        >>> from eagerflow.keras import losses
        >>> [round(x, 5) for x in losses.categorical_hinge([[0.0, 1.0]],
        ...                                                [[0.3, 0.6]]).numpy().tolist()]
        [0.7]
    """
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    pos = ef.reduce_sum(y_true * y_pred, axis=-1)
    neg = ef.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return ef.maximum(neg - pos + 1.0, _const(0.0, y_pred.dtype))


def kl_divergence(y_true, y_pred):
    """``sum(y_true * log(y_true / y_pred), axis=-1)`` with both clipped to [eps, 1].

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.kl_divergence([[0.5, 0.5]], [[0.5, 0.5]])[0])
        0.0
    """
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    eps = epsilon()
    y_true = ef.clip_by_value(y_true, eps, 1.0)
    y_pred = ef.clip_by_value(y_pred, eps, 1.0)
    return ef.reduce_sum(y_true * ef.math.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    """``mean(y_pred - y_true * log(y_pred + eps), axis=-1)``.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.poisson([[1.0]], [[1.0]])[0]), 5)
        1.0
    """
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    eps = _const(epsilon(), y_pred.dtype)
    return ef.reduce_mean(y_pred - y_true * ef.math.log(y_pred + eps), axis=-1)


def _check_same_shape(target, output, fn):
    if len(target.shape) != len(output.shape) or any(
            a is not None and b is not None and a != b
            for a, b in zip(target.shape, output.shape)):
        raise ValueError("%s: arguments `target` and `output` must have the same shape. "
                         "Received: target.shape=%s, output.shape=%s"
                         % (fn, target.shape, output.shape))


def _binary_crossentropy_elementwise(target, output, from_logits):
    _check_same_shape(target, output, "binary_crossentropy")
    if from_logits:
        return ef.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = epsilon()
    output = ef.clip_by_value(output, eps, 1.0 - eps)
    bce = target * ef.math.log(output)
    bce = bce + (1.0 - target) * ef.math.log(1.0 - output)
    return -bce


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary cross-entropy, averaged over ``axis``.

    Per element: ``-(t * log(p) + (1 - t) * log(1 - p))`` with ``p`` clipped to
    ``[1e-7, 1 - 1e-7]``; with ``from_logits`` the stable
    ``sigmoid_cross_entropy_with_logits``. ``label_smoothing`` moves targets towards 0.5:
    ``t * (1 - s) + 0.5 * s``.

    Args:
        y_true: Targets (0/1 or probabilities).
        y_pred: Probabilities, or logits with ``from_logits=True``.
        from_logits: Whether ``y_pred`` are logits.
        label_smoothing: In [0, 1].
        axis: The axis to average over.

    Returns:
        Per-sample losses.

    Raises:
        ValueError: If the shapes differ.

    Example:
        >>> from eagerflow.keras import losses
        >>> v = losses.binary_crossentropy([[0.0, 1.0]], [[0.4, 0.6]])
        >>> round(float(v[0]), 4)
        0.5108
    """
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return ef.reduce_mean(_binary_crossentropy_elementwise(y_true, y_pred, from_logits),
                          axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0,
                             axis=-1):
    """Categorical cross-entropy over ``axis`` for one-hot (or soft) targets.

    Probabilities are renormalized to sum to 1 over ``axis`` and clipped to
    ``[1e-7, 1 - 1e-7]``: ``-sum(t * log(p))``. With ``from_logits`` the stable
    ``softmax_cross_entropy_with_logits``. ``label_smoothing`` s gives targets
    ``t * (1 - s) + s / num_classes``.

    Args:
        y_true: One-hot targets.
        y_pred: Probabilities, or logits with ``from_logits=True``.
        from_logits: Whether ``y_pred`` are logits.
        label_smoothing: In [0, 1].
        axis: The class axis.

    Returns:
        Per-sample losses.

    Raises:
        ValueError: If ``axis`` is a bool or the shapes differ.

    Example:
        >>> from eagerflow.keras import losses
        >>> v = losses.categorical_crossentropy([[0, 1, 0]], [[0.05, 0.95, 0.0]])
        >>> round(float(v[0]), 4)
        0.0513
    """
    if isinstance(axis, bool):
        raise ValueError("`axis` must be of type `int`. Received: axis=%r of type %s"
                         % (axis, type(axis)))
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    if y_pred.shape[-1] == 1:
        warnings.warn("In loss categorical_crossentropy, expected y_pred.shape to be "
                      "(batch_size, num_classes) with num_classes > 1. Received: "
                      "y_pred.shape=%s. Consider using 'binary_crossentropy' if you only "
                      "have 2 classes." % (y_pred.shape,), SyntaxWarning, stacklevel=2)
    if label_smoothing:
        num_classes = _const(float(y_true.shape[-1]), y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    if len(y_true.shape) < 1:
        raise ValueError("categorical_crossentropy: arguments `target` and `output` must "
                         "be at least rank 1. Received: target.shape=%s" % (y_true.shape,))
    _check_same_shape(y_true, y_pred, "categorical_crossentropy")
    if from_logits:
        return ef.nn.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred,
                                                       axis=axis)
    output = y_pred / ef.reduce_sum(y_pred, axis=axis, keepdims=True)
    eps = epsilon()
    output = ef.clip_by_value(output, eps, 1.0 - eps)
    return -ef.reduce_sum(y_true * ef.math.log(output), axis=axis)


def _sparse_crossentropy(target, output, from_logits, axis):
    if axis != -1 and axis != len(output.shape) - 1:
        raise ValueError("sparse_categorical_crossentropy: only axis=-1 is currently "
                         "supported. Received: axis=%r" % (axis,))
    target = _tensor(target)
    if len(target.shape) == len(output.shape) and target.shape[-1] == 1:
        target = ef.squeeze(target, axis=-1)
    if len(output.shape) < 1:
        raise ValueError("sparse_categorical_crossentropy: argument `output` must be at "
                         "least rank 1. Received: output.shape=%s" % (output.shape,))
    if len(target.shape) != len(output.shape) - 1:
        raise ValueError("sparse_categorical_crossentropy: argument `output` must have rank "
                         "target.ndim + 1. Received: target.shape=%s, output.shape=%s"
                         % (target.shape, output.shape))
    target = ef.cast(target, ef.int64)
    if not from_logits:
        # As Keras: renormalize, clip, and feed log-probabilities as logits.
        output = output / ef.reduce_sum(output, axis=axis, keepdims=True)
        eps = epsilon()
        output = ef.math.log(ef.clip_by_value(output, eps, 1.0 - eps))
    return ef.nn.sparse_softmax_cross_entropy_with_logits(labels=target, logits=output)


def _sparse_categorical_crossentropy_masked(y_true, y_pred, from_logits=False,
                                            ignore_class=None, axis=-1):
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true)
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = ef.squeeze(y_true, axis=-1)
    if ignore_class is None:
        return _sparse_crossentropy(y_true, y_pred, from_logits, axis), None
    valid = ef.not_equal(y_true, ef.cast(_const(ignore_class, ef.int64), y_true.dtype))
    # Ignored entries are scored as class 0 and then zeroed; leaving their predictions
    # untouched keeps both the value and the gradient of the ignored entries finite.
    safe_true = ef.where(valid, y_true, ef.zeros_like(y_true))
    res = _sparse_crossentropy(safe_true, y_pred, from_logits, axis)
    return ef.where(valid, res, ef.zeros_like(res)), valid


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    """Cross-entropy for integer class targets.

    Probabilities are renormalized, clipped to ``[1e-7, 1 - 1e-7]`` and their logarithm
    is fed to ``sparse_softmax_cross_entropy_with_logits`` (Keras' exact recipe). With
    ``ignore_class`` the entries of that class get loss 0 (a ``Loss`` object also leaves
    them out of the average).

    Args:
        y_true: Integer class ids ``[batch, ...]`` (or ``[batch, ..., 1]``).
        y_pred: Probabilities ``[batch, ..., classes]``, or logits with
            ``from_logits=True``.
        from_logits: Whether ``y_pred`` are logits.
        ignore_class: Optional class id to ignore (e.g. -1 or 255 for "void").
        axis: Must be -1 (the class axis).

    Returns:
        Per-sample losses.

    Raises:
        ValueError: On a rank mismatch or another axis.

    Example:
        >>> from eagerflow.keras import losses
        >>> v = losses.sparse_categorical_crossentropy([1, 2], [[0.05, 0.95, 0.0],
        ...                                                     [0.1, 0.8, 0.1]])
        >>> [round(x, 4) for x in v.numpy().tolist()]
        [0.0513, 2.3026]
    """
    return _sparse_categorical_crossentropy_masked(y_true, y_pred, from_logits,
                                                   ignore_class, axis)[0]


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh
