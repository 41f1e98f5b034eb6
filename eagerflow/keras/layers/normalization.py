"""Normalization layers: BatchNormalization, LayerNormalization, GroupNormalization.

All three compute ``y = gamma * (x - mean) / sqrt(var + epsilon) + beta`` (variance biased,
i.e. divided by the count); they differ in which axes the statistics span. float16/bfloat16
inputs are normalized in float32 and cast back, so the statistics do not overflow.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> y = layers.LayerNormalization()(ef.constant([[1.0, 2.0, 3.0]]))
    >>> round(float(ef.reduce_mean(y)), 6)
    0.0
"""

from __future__ import annotations

import numbers

import eagerflow as ef
from eagerflow import dtypes as dtypes_lib
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import InputSpec, Layer
from eagerflow.keras.layers.core import weight_config, weight_options
from eagerflow.tensor_shape import TensorShape
from eagerflow.variables import VariableAggregation, VariableSynchronization

__all__ = ["BatchNormalization", "LayerNormalization", "GroupNormalization"]


def _normalize_axes(axis, rank, layer):
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError("%s: invalid axis %r for input of rank %d." % (layer, a, rank))
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise ValueError("%s: duplicate axis in %r." % (layer, axis))
    return sorted(out)


def _check_axis_arg(axis, layer):
    if isinstance(axis, bool) or not (isinstance(axis, numbers.Integral) or (
            isinstance(axis, (list, tuple)) and all(isinstance(a, numbers.Integral)
                                                    for a in axis))):
        raise TypeError("%s: expected an int or a list/tuple of ints for the argument 'axis', "
                        "but received: %r" % (layer, axis))
    return list(axis) if isinstance(axis, (list, tuple)) else int(axis)


def _upcast(x):
    """float16/bfloat16 -> float32 for the statistics."""
    if x.dtype in (ef.float16, ef.bfloat16):
        return ef.cast(x, ef.float32)
    return x


class BatchNormalization(Layer):
    """Normalizes each feature over the batch (and any other non-feature axes).

    Training (``training=True``): the statistics are the batch's ``mean`` and biased
    ``var`` over every axis except ``axis``, and the moving statistics are updated as
    ``moving = moving * momentum + batch_stat * (1 - momentum)``. Inference (``training``
    falsy, or the layer frozen with ``trainable = False``): the moving statistics are used
    and nothing is updated. Then ``y = gamma * (x - mean) / sqrt(var + epsilon) + beta``.

    The moving variance is updated with the biased batch variance (as Keras 3; tf.keras 2's
    fused kernel used the unbiased one for 4-D inputs).

    Args:
        axis: Feature axis (or list of axes), default -1.
        momentum: Moving-average momentum (0.99).
        epsilon: Added to the variance (1e-3).
        center: Learn an offset ``beta``.
        scale: Learn a scale ``gamma``.
        beta_initializer, gamma_initializer: Initializers (zeros, ones).
        moving_mean_initializer, moving_variance_initializer: Initializers (zeros, ones).
        beta_regularizer, gamma_regularizer: Optional regularizers.
        beta_constraint, gamma_constraint: Optional constraints.
        synchronized: Accepted; statistics are per replica.
        **kwargs: Base Layer arguments (``fused`` is accepted and ignored).

    Raises:
        TypeError: If ``axis`` is not an int or list of ints.
        ValueError: For an axis outside the input's rank or of unknown size.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> bn = layers.BatchNormalization()
        >>> y = bn(ef.constant([[1.0], [3.0]]), training=True)
        >>> round(float(bn.moving_mean[0]), 4)
        0.02
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, synchronized=False, **kwargs):
        kwargs.pop("fused", None)
        for name, neutral in (("renorm", False), ("virtual_batch_size", None),
                              ("adjustment", None)):
            if kwargs.pop(name, neutral) != neutral:
                raise ValueError("BatchNormalization: %s is not supported." % name)
        kwargs.pop("renorm_clipping", None)
        kwargs.pop("renorm_momentum", None)
        super().__init__(**kwargs)
        self.axis = _check_axis_arg(axis, "BatchNormalization")
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.synchronized = bool(synchronized)
        weight_options(self, "beta", beta_initializer, beta_regularizer, beta_constraint)
        weight_options(self, "gamma", gamma_initializer, gamma_regularizer, gamma_constraint)
        weight_options(self, "moving_mean", moving_mean_initializer, None, None)
        weight_options(self, "moving_variance", moving_variance_initializer, None, None)
        self.supports_masking = True

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        self._axes = _normalize_axes(self.axis, len(dims), "BatchNormalization")
        for a in self._axes:
            if dims[a] is None:
                raise ValueError("BatchNormalization %s: axis %d of input shape %s is not "
                                 "defined." % (self.name, a, dims))
        self._rank = len(dims)
        param_shape = [dims[a] for a in self._axes]
        self.input_spec = InputSpec(ndim=len(dims), axes={a: dims[a] for a in self._axes})
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight("gamma", param_shape,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint,
                                         experimental_autocast=False)
        if self.center:
            self.beta = self.add_weight("beta", param_shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint,
                                        experimental_autocast=False)
        stat = dict(trainable=False, synchronization=VariableSynchronization.ON_READ,
                    aggregation=VariableAggregation.MEAN, experimental_autocast=False)
        self.moving_mean = self.add_weight("moving_mean", param_shape,
                                           initializer=self.moving_mean_initializer, **stat)
        self.moving_variance = self.add_weight("moving_variance", param_shape,
                                               initializer=self.moving_variance_initializer,
                                               **stat)
        self._broadcast = [dims[i] if i in self._axes else 1 for i in range(len(dims))]
        self._reduction = [i for i in range(len(dims)) if i not in self._axes]
        self.built = True

    def _param(self, v, dtype):
        return ef.reshape(ef.cast(v, dtype), self._broadcast)

    def _normalize(self, x, mean, var):
        inv = ef.math.rsqrt(var + self.epsilon)
        if self.gamma is not None:
            inv = inv * self._param(self.gamma, x.dtype)
        out = (x - mean) * inv
        if self.beta is not None:
            out = out + self._param(self.beta, x.dtype)
        return out

    def _batch_moments(self, x, mask):
        if mask is None:
            return ef.nn.moments(x, self._reduction, keepdims=True)
        # A mask (batch, steps) weighs each position; statistics over the unmasked ones.
        m = ef.cast(mask, x.dtype)
        while m.shape.rank < x.shape.rank:
            m = ef.expand_dims(m, -1)
        count = ef.reduce_sum(m * ef.ones_like(x), axis=self._reduction, keepdims=True)
        mean = ef.reduce_sum(x * m, axis=self._reduction, keepdims=True) / count
        var = ef.reduce_sum(ef.square(x - mean) * m, axis=self._reduction,
                            keepdims=True) / count
        return mean, var

    def call(self, inputs, training=None, mask=None):
        out_dtype = inputs.dtype
        x = _upcast(inputs)
        flag = layer_utils.training_flag(training) if self.trainable else False
        moving_mean = self._param(self.moving_mean, x.dtype)
        moving_var = self._param(self.moving_variance, x.dtype)
        if flag is False:
            return ef.cast(self._normalize(x, moving_mean, moving_var), out_dtype)
        mean, var = self._batch_moments(x, mask)
        out = self._normalize(x, mean, var)
        if flag is None:
            out = ef.where(ef.cast(training, ef.bool), out,
                           self._normalize(x, moving_mean, moving_var))
        self._update(self.moving_mean, mean, training if flag is None else None)
        self._update(self.moving_variance, var, training if flag is None else None)
        return ef.cast(out, out_dtype)

    def _update(self, variable, value, training_tensor):
        vdtype = dtypes_lib.as_dtype(variable.dtype)
        value = ef.cast(ef.reshape(value, variable.shape.as_list()), vdtype)
        new = variable * self.momentum + value * (1.0 - self.momentum)
        if training_tensor is not None:
            new = ef.where(ef.cast(training_tensor, ef.bool), new, variable.read_value())
        variable.assign(new)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"axis": self.axis, "momentum": self.momentum, "epsilon": self.epsilon,
                       "center": self.center, "scale": self.scale,
                       "synchronized": self.synchronized})
        config.update(weight_config(self, "beta", "gamma"))
        config["moving_mean_initializer"] = weight_config(
            self, "moving_mean")["moving_mean_initializer"]
        config["moving_variance_initializer"] = weight_config(
            self, "moving_variance")["moving_variance_initializer"]
        return config


class LayerNormalization(Layer):
    """Normalizes each example over ``axis`` (default the last):
    ``y = gamma * (x - mean) / sqrt(var + epsilon) + beta`` with mean and biased variance
    over ``axis``; ``gamma``/``beta`` have the shape of those axes.

    Args:
        axis: Int or list of ints (default -1).
        epsilon: Added to the variance (1e-3).
        center: Learn ``beta``.
        scale: Learn ``gamma``.
        beta_initializer, gamma_initializer: Initializers (zeros, ones).
        beta_regularizer, gamma_regularizer: Optional regularizers.
        beta_constraint, gamma_constraint: Optional constraints.
        **kwargs: Base Layer arguments.

    Raises:
        TypeError: If ``axis`` is not an int or list of ints.
        ValueError: For an axis outside the input's rank.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.LayerNormalization(axis=[1, 2])(ef.ones([2, 3, 4])).shape
        TensorShape([2, 3, 4])
    """

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        if kwargs.pop("rms_scaling", False):
            raise ValueError("LayerNormalization: rms_scaling is not supported.")
        super().__init__(**kwargs)
        self.axis = _check_axis_arg(axis, "LayerNormalization")
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        weight_options(self, "beta", beta_initializer, beta_regularizer, beta_constraint)
        weight_options(self, "gamma", gamma_initializer, gamma_regularizer, gamma_constraint)
        self.supports_masking = True

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        self._axes = _normalize_axes(self.axis, len(dims), "LayerNormalization")
        param_shape = [dims[a] for a in self._axes]
        if any(d is None for d in param_shape):
            raise ValueError("LayerNormalization %s: the normalized axes %s of input shape %s "
                             "must be defined." % (self.name, self._axes, dims))
        self._broadcast = [dims[i] if i in self._axes else 1 for i in range(len(dims))]
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight("gamma", param_shape,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint,
                                         experimental_autocast=False)
        if self.center:
            self.beta = self.add_weight("beta", param_shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint,
                                        experimental_autocast=False)
        self.built = True

    def call(self, inputs):
        out_dtype = inputs.dtype
        x = _upcast(inputs)
        mean, var = ef.nn.moments(x, self._axes, keepdims=True)
        inv = ef.math.rsqrt(var + self.epsilon)
        if self.gamma is not None:
            inv = inv * ef.reshape(ef.cast(self.gamma, x.dtype), self._broadcast)
        out = (x - mean) * inv
        if self.beta is not None:
            out = out + ef.reshape(ef.cast(self.beta, x.dtype), self._broadcast)
        return ef.cast(out, out_dtype)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"axis": self.axis, "epsilon": self.epsilon, "center": self.center,
                       "scale": self.scale})
        config.update(weight_config(self, "beta", "gamma"))
        return config


class GroupNormalization(Layer):
    """Splits the channels (``axis``) into ``groups`` and normalizes each example over each
    group's channels and all other non-batch axes; then applies per-channel ``gamma``/``beta``.

    Args:
        groups: Number of groups; must divide the channel count (default 32).
        axis: Channel axis (default -1).
        epsilon: Added to the variance (1e-3).
        center: Learn ``beta``.
        scale: Learn ``gamma``.
        beta_initializer, gamma_initializer: Initializers (zeros, ones).
        beta_regularizer, gamma_regularizer: Optional regularizers.
        beta_constraint, gamma_constraint: Optional constraints.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: If ``groups`` does not divide the channels or exceeds them.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GroupNormalization(groups=2)(ef.ones([2, 5, 4])).shape
        TensorShape([2, 5, 4])
    """

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.groups = layer_utils.check_positive_int(groups, "groups", "GroupNormalization")
        if not isinstance(axis, numbers.Integral):
            raise TypeError("GroupNormalization: axis must be an int, got %r." % (axis,))
        self.axis = int(axis)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        weight_options(self, "beta", beta_initializer, beta_regularizer, beta_constraint)
        weight_options(self, "gamma", gamma_initializer, gamma_regularizer, gamma_constraint)
        self.supports_masking = True

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        self._axis = _normalize_axes(self.axis, len(dims), "GroupNormalization")[0]
        channels = dims[self._axis]
        if channels is None:
            raise ValueError("GroupNormalization %s: axis %d of input shape %s has no defined "
                             "size." % (self.name, self.axis, dims))
        if self.groups > channels or channels % self.groups:
            raise ValueError("GroupNormalization %s: number of groups (%d) must divide the "
                             "number of channels (%d) and cannot exceed it."
                             % (self.name, self.groups, channels))
        self.input_spec = InputSpec(ndim=len(dims), axes={self._axis: channels})
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight("gamma", (channels,), initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", (channels,), initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.built = True

    def call(self, inputs):
        out_dtype = inputs.dtype
        x = _upcast(inputs)
        shape = layer_utils.static_or_dynamic_shape(x)
        rank = len(shape)
        a = self._axis
        channels = shape[a]
        grouped = shape[:a] + [self.groups, channels // self.groups] + shape[a + 1:]
        xg = ef.reshape(x, grouped)
        axes = [i for i in range(1, rank + 1) if i != a]
        mean, var = ef.nn.moments(xg, axes, keepdims=True)
        xg = (xg - mean) * ef.math.rsqrt(var + self.epsilon)
        out = ef.reshape(xg, shape)
        bshape = [1] * rank
        bshape[a] = channels
        if self.gamma is not None:
            out = out * ef.reshape(ef.cast(self.gamma, x.dtype), bshape)
        if self.beta is not None:
            out = out + ef.reshape(ef.cast(self.beta, x.dtype), bshape)
        return ef.cast(out, out_dtype)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"groups": self.groups, "axis": self.axis, "epsilon": self.epsilon,
                       "center": self.center, "scale": self.scale})
        config.update(weight_config(self, "beta", "gamma"))
        return config
