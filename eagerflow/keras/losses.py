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

import inspect
import math
import re
import warnings

from eagerflow.errors import short_repr
import eagerflow as ef

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


# -- backend defaults ----------------------------------------------------------------------
def _backend_value(name, default):
    try:
        from eagerflow.keras import backend
    except ImportError:
        return default
    get = getattr(backend, name, None)
    return get() if get is not None else default


def floatx():
    """Keras' default float dtype name ("float32" unless the backend says otherwise)."""
    return _backend_value("floatx", "float32")


def epsilon():
    """Keras' fuzz factor for clipping (1e-7 unless the backend says otherwise)."""
    return _backend_value("epsilon", 1e-7)


def _tensor(x, dtype=None):
    """``x`` as a tensor, cast to ``dtype`` when given (Keras converts, never refuses)."""
    if getattr(x, "_is_variable", False):
        x = x.read_value()
    if not isinstance(x, ef.Tensor):
        x = ef.convert_to_tensor(x)
    if dtype is not None and x.dtype is not ef.as_dtype(dtype):
        x = ef.cast(x, dtype)
    return x


def _const(value, dtype):
    return ef.constant(value, dtype=dtype)


def get_keras_mask(t):
    """The Keras mask a layer attached to ``t`` (see ``keras.layers``), or None."""
    try:
        from eagerflow.keras.layers.base import get_keras_mask as get_mask
    except ImportError:
        return None
    return get_mask(t)


def _reshape_target(t):
    """``t``'s shape as a reshape target: static dims, -1 for one unknown dim.

    A traced function cannot feed a shape tensor to ``reshape``, so static shapes are
    used whenever they are known (always, outside ``input_signature`` with None dims).
    """
    dims = [-1 if d is None else int(d) for d in t.shape]
    if dims.count(-1) > 1:
        return ef.shape(t)
    return dims


def _broadcast_like(x, like):
    """``x`` broadcast to ``like``'s shape (with ops, so unknown dims are fine)."""
    return x + ef.zeros_like(like) if tuple(x.shape) != tuple(like.shape) else x


# -- shape helpers and reductions ----------------------------------------------------------
def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Makes two tensors' ranks equal when they differ by a trailing dimension of 1.

    The one with the extra size-1 last dimension is squeezed, except that a rank-1
    partner is expanded instead (``expand_rank_1``), as Keras does.

    Args:
        x1: A tensor.
        x2: A tensor.
        expand_rank_1: Whether to expand a rank-1 tensor rather than squeeze the other.

    Returns:
        ``(x1, x2)`` adjusted.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.losses import squeeze_or_expand_to_same_rank
        >>> a, b = squeeze_or_expand_to_same_rank(ef.ones([4]), ef.ones([4, 1]))
        >>> a.shape, b.shape
        (TensorShape([4, 1]), TensorShape([4, 1]))
    """
    r1, r2 = len(x1.shape), len(x2.shape)
    if r1 == r2:
        return x1, x2
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = ef.expand_dims(x2, -1)
        else:
            x1 = ef.squeeze(x1, axis=-1)
    if r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = ef.expand_dims(x1, -1)
        else:
            x2 = ef.squeeze(x2, axis=-1)
    return x1, x2


_REDUCTIONS = ("sum_over_batch_size", "sum", None, "none", "mean", "mean_with_sample_weight")


class Reduction:
    """tf.keras 2's reduction names, kept so TF 2 programs run unchanged.

    ``AUTO`` means ``SUM_OVER_BATCH_SIZE`` (what it meant outside a distribution
    strategy).

    Example:
        >>> from eagerflow.keras import losses
        >>> losses.MeanSquaredError(reduction=losses.Reduction.SUM).reduction
        'sum'
    """

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)


def standardize_reduction(reduction):
    """Validates a reduction name ("auto" is read as "sum_over_batch_size").

    Raises:
        ValueError: If ``reduction`` is not one of Keras' reductions.
    """
    if reduction == Reduction.AUTO:
        return "sum_over_batch_size"
    if reduction not in _REDUCTIONS:
        raise ValueError("Invalid value for argument `reduction`. Expected one of %s. "
                         "Received: reduction=%r" % (list(_REDUCTIONS), reduction))
    return reduction


def _num_elements(values):
    n = 1
    for d in values.shape:
        if d is None:
            return None
        n *= int(d)
    return n


def reduce_values(values, sample_weight=None, reduction="sum_over_batch_size"):
    """Reduces already-weighted per-sample values (see the module docstring)."""
    if reduction is None or reduction == "none" or tuple(values.shape) in ((), (0,)):
        return values
    loss = ef.reduce_sum(values)
    if reduction in ("sum_over_batch_size", "mean", "mean_with_sample_weight"):
        if reduction == "mean_with_sample_weight" and sample_weight is not None:
            loss = ef.math.divide_no_nan(loss, _tensor(ef.reduce_sum(sample_weight),
                                                       loss.dtype))
        else:
            n = _num_elements(values)
            if n is not None and n > 0:
                loss = loss / _const(float(n), loss.dtype)
            else:
                loss = ef.math.divide_no_nan(loss, ef.cast(ef.size(values), loss.dtype))
    return loss


def apply_mask(sample_weight, mask, dtype, reduction):
    """Folds a boolean mask into the sample weights.

    For the averaging reductions valid entries get weight ``total / valid``, so the
    average runs over the valid entries only.
    """
    if mask is None:
        return sample_weight
    mask = _tensor(mask, dtype)
    if reduction in ("mean", "sum_over_batch_size"):
        total = _const(float(_num_elements(mask)), dtype)
        mask = mask * ef.math.divide_no_nan(total, ef.reduce_sum(mask))
    if sample_weight is None:
        return mask
    sample_weight = _tensor(sample_weight, dtype)
    mask, sample_weight = squeeze_or_expand_to_same_rank(mask, sample_weight)
    return sample_weight * mask


def reduce_weighted_values(values, sample_weight=None, mask=None,
                           reduction="sum_over_batch_size", dtype=None):
    """Weights per-sample ``values`` by ``sample_weight`` (and ``mask``) and reduces.

    Unlike Keras 3, a sample weight of lower rank than the values (e.g. ``[batch]``
    weights for ``[batch, time]`` losses) is broadcast over the trailing axes, as
    tf.keras 2 did, instead of failing to broadcast.

    Args:
        values: Per-sample losses.
        sample_weight: Optional weights broadcastable to ``values``.
        mask: Optional boolean mask of ``values``' shape.
        reduction: One of the reductions in the module docstring.
        dtype: The computation dtype.

    Returns:
        The reduced loss.
    """
    reduction = standardize_reduction(reduction)
    values = _tensor(values, dtype)
    if sample_weight is not None:
        sample_weight = _tensor(sample_weight, values.dtype)
    sample_weight = apply_mask(sample_weight, mask, values.dtype, reduction)
    if sample_weight is not None:
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        while len(sample_weight.shape) < len(values.shape):
            sample_weight = ef.expand_dims(sample_weight, -1)
        values = values * sample_weight
    return reduce_values(values, sample_weight, reduction)


# -- the Loss classes ----------------------------------------------------------------------
class Loss:
    """Base class of losses: subclasses implement ``call(y_true, y_pred)``.

    Args:
        name: The loss's name (default: the class name in snake_case).
        reduction: "sum_over_batch_size" (default), "sum", "mean",
            "mean_with_sample_weight", "none" or None.
        dtype: The computation dtype (default: Keras' floatx, float32). Both inputs are
            cast to it.

    Raises:
        ValueError: If ``reduction`` is unknown.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.losses import Loss
        >>> class AbsoluteSum(Loss):
        ...     def call(self, y_true, y_pred):
        ...         return ef.reduce_sum(ef.abs(y_true - y_pred), axis=-1)
        >>> float(AbsoluteSum(reduction="sum")([[1.0, 2.0]], [[0.0, 0.0]]))
        3.0
    """

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        self.name = name or re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", type(self).__name__).lower()
        self.reduction = standardize_reduction(reduction)
        self._explicit_dtype = dtype
        self._dtype = ef.as_dtype(dtype or floatx())

    @property
    def dtype(self):
        return self._dtype.name

    def __call__(self, y_true, y_pred, sample_weight=None):
        """Computes the reduced, weighted loss.

        Args:
            y_true: Targets.
            y_pred: Predictions.
            sample_weight: Optional per-sample weights (a scalar, ``[batch]``, or
                broadcastable to the per-sample losses).

        Returns:
            A scalar tensor, or per-sample losses when the reduction is "none".

        A Keras mask on ``y_pred`` (set by a masking layer) removes the masked entries:
        the averaging reductions then average over the unmasked entries only.
        """
        in_mask = get_keras_mask(y_pred)
        y_pred = _tensor(y_pred, self._dtype)
        y_true = _tensor(y_true, self._dtype)
        losses, mask = self._call_with_mask(y_true, y_pred)
        if in_mask is not None:
            in_mask = _tensor(in_mask, ef.bool)
            if tuple(in_mask.shape) != tuple(losses.shape):
                in_mask, _ = squeeze_or_expand_to_same_rank(in_mask, losses)
            mask = in_mask if mask is None else ef.logical_and(in_mask, mask)
        return reduce_weighted_values(losses, sample_weight=sample_weight, mask=mask,
                                      reduction=self.reduction, dtype=self._dtype)

    def _call_with_mask(self, y_true, y_pred):
        """``(per-sample losses, mask or None)``; a mask restricts the average."""
        return self.call(y_true, y_pred), None

    def call(self, y_true, y_pred):
        raise NotImplementedError("%s must implement call(y_true, y_pred)."
                                  % type(self).__name__)

    def get_config(self):
        config = {"name": self.name, "reduction": self.reduction}
        if self._explicit_dtype is not None:
            config["dtype"] = self.dtype
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return "<%s name=%r reduction=%r>" % (type(self).__name__, self.name, self.reduction)


class LossFunctionWrapper(Loss):
    """A ``Loss`` around a loss function ``fn(y_true, y_pred, **kwargs)``.

    Args:
        fn: The per-sample loss function.
        reduction: The reduction (see ``Loss``).
        name: The loss's name.
        dtype: The computation dtype.
        **kwargs: Extra arguments passed to ``fn``.

    Example:
        >>> from eagerflow.keras import losses
        >>> loss = losses.LossFunctionWrapper(losses.huber, delta=0.5, reduction="sum")
        >>> float(loss([[0.0]], [[2.0]]))
        0.875
    """

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), reduction=reduction,
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        if type(self) is LossFunctionWrapper:
            config["fn"] = getattr(self.fn, "__name__", self.fn)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if cls is LossFunctionWrapper and isinstance(config.get("fn"), str):
            config["fn"] = get(config["fn"])
        return cls(**config)

    def __repr__(self):
        return "<LossFunctionWrapper(%s, kwargs=%s)>" % (
            getattr(self.fn, "__name__", self.fn), self._fn_kwargs)


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


# -- loss classes --------------------------------------------------------------------------
class MeanSquaredError(LossFunctionWrapper):
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

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error",
                 dtype=None):
        super().__init__(mean_squared_error, name=name, reduction=reduction, dtype=dtype)


class MeanAbsoluteError(LossFunctionWrapper):
    """``mean(abs(y_true - y_pred))`` per sample, then reduced.

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.MeanAbsoluteError()([[0.0, 1.0]], [[1.0, 1.0]]))
        0.5
    """

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error",
                 dtype=None):
        super().__init__(mean_absolute_error, name=name, reduction=reduction, dtype=dtype)


class MeanAbsolutePercentageError(LossFunctionWrapper):
    """``100 * mean(abs((y_true - y_pred) / y_true))`` per sample, then reduced.

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.MeanAbsolutePercentageError()([[2.0, 4.0]], [[1.0, 4.0]]))
        25.0
    """

    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_absolute_percentage_error", dtype=None):
        super().__init__(mean_absolute_percentage_error, name=name, reduction=reduction,
                         dtype=dtype)


class MeanSquaredLogarithmicError(LossFunctionWrapper):
    """``mean(square(log(y_true + 1) - log(y_pred + 1)))`` per sample, then reduced.

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.MeanSquaredLogarithmicError()([[1.0]], [[1.0]]))
        0.0
    """

    def __init__(self, reduction="sum_over_batch_size",
                 name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(mean_squared_logarithmic_error, name=name, reduction=reduction,
                         dtype=dtype)


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


class LogCosh(LossFunctionWrapper):
    """``mean(log(cosh(y_pred - y_true)))`` per sample, then reduced.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.LogCosh()([[0.0, 1.0], [0.0, 0.0]],
        ...                              [[1.0, 1.0], [0.0, 0.0]])), 3)
        0.108
    """

    def __init__(self, reduction="sum_over_batch_size", name="log_cosh", dtype=None):
        super().__init__(log_cosh, name=name, reduction=reduction, dtype=dtype)


class Hinge(LossFunctionWrapper):
    """Hinge loss ``maximum(1 - y_true * y_pred, 0)`` (0/1 labels become -1/1).

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.Hinge()([[1.0, -1.0]], [[0.5, -2.0]]))
        0.25
    """

    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(hinge, name=name, reduction=reduction, dtype=dtype)


class SquaredHinge(LossFunctionWrapper):
    """Squared hinge loss ``square(maximum(1 - y_true * y_pred, 0))``.

    Example:
        >>> from eagerflow.keras import losses
        >>> float(losses.SquaredHinge()([[1.0]], [[0.5]]))
        0.25
    """

    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, name=name, reduction=reduction, dtype=dtype)


class CategoricalHinge(LossFunctionWrapper):
    """Categorical hinge loss ``maximum(neg - pos + 1, 0)``.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.CategoricalHinge()([[0.0, 1.0]], [[0.3, 0.6]])), 5)
        0.7
    """

    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge",
                 dtype=None):
        super().__init__(categorical_hinge, name=name, reduction=reduction, dtype=dtype)


class KLDivergence(LossFunctionWrapper):
    """Kullback-Leibler divergence ``sum(y_true * log(y_true / y_pred))``.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.KLDivergence()([[1.0, 0.0]], [[0.5, 0.5]])), 4)
        0.6931
    """

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, name=name, reduction=reduction, dtype=dtype)


class Poisson(LossFunctionWrapper):
    """Poisson loss ``mean(y_pred - y_true * log(y_pred))``.

    Example:
        >>> from eagerflow.keras import losses
        >>> round(float(losses.Poisson()([[0.0]], [[2.0]])), 5)
        2.0
    """

    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(poisson, name=name, reduction=reduction, dtype=dtype)


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
    table = dict(ALL_OBJECTS_DICT)
    table.update(custom_objects or {})
    if isinstance(config, str):
        if config not in table:
            raise ValueError("Unknown loss function: %r. Known: %s" % (config, sorted(table)))
        return table[config]
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("Could not deserialize loss from %r." % (config,))
    cls = table.get(config["class_name"])
    if cls is None:
        raise ValueError("Unknown loss: %r. Pass custom losses with custom_objects={%r: cls}."
                         % (config["class_name"], config["class_name"]))
    if not inspect.isclass(cls):
        return cls
    return cls.from_config(dict(config.get("config", {})))


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
    raise ValueError("Could not interpret loss identifier: %s. Known names: %s"
                     % (short_repr(identifier), sorted(ALL_OBJECTS_DICT)))
