"""The parts every Keras loss shares: backend defaults, rank matching, the reductions
and the ``Loss`` and ``LossFunctionWrapper`` base classes."""

from __future__ import annotations

import re

import eagerflow as ef


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
        >>> from eagerflow.keras.losses.base import squeeze_or_expand_to_same_rank
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
            from eagerflow.keras.losses import get  # the lookup table names every loss

            config["fn"] = get(config["fn"])
        return cls(**config)

    def __repr__(self):
        return "<LossFunctionWrapper(%s, kwargs=%s)>" % (
            getattr(self.fn, "__name__", self.fn), self._fn_kwargs)
