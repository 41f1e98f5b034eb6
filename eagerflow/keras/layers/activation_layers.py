"""Activation functions as layers: ReLU, LeakyReLU, ELU, Softmax, PReLU.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layers.ReLU(max_value=1.0)(ef.constant([-1.0, 0.5, 2.0])).numpy().tolist()
    [0.0, 0.5, 1.0]
"""

from __future__ import annotations

import numbers

import eagerflow as ef
from eagerflow.keras import activations
from eagerflow.keras.layers.base import Layer
from eagerflow.keras.layers.core import weight_config, weight_options
from eagerflow.tensor_shape import TensorShape

__all__ = ["ReLU", "LeakyReLU", "ELU", "Softmax", "PReLU"]


def _non_negative(value, name, layer):
    if value is not None and (not isinstance(value, numbers.Real) or value < 0):
        raise ValueError("%s: %s cannot be a negative value (or a non-number). Received: %s=%r"
                         % (layer, name, name, value))
    return value


class _Elementwise(Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)


class ReLU(_Elementwise):
    """``max_value`` above it, ``x`` between ``threshold`` and ``max_value``, and
    ``negative_slope * (x - threshold)`` below ``threshold``.

    Args:
        max_value: Optional non-negative ceiling.
        negative_slope: Non-negative slope below the threshold (default 0).
        threshold: Non-negative threshold (default 0).
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For negative arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.ReLU(negative_slope=0.5)(ef.constant([-2.0])).numpy().tolist()
        [-1.0]
    """

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value = _non_negative(max_value, "max_value", "ReLU")
        self.negative_slope = _non_negative(negative_slope, "negative_slope", "ReLU")
        self.threshold = _non_negative(threshold, "threshold", "ReLU")

    def call(self, inputs):
        return activations.relu(inputs, self.negative_slope, self.max_value, self.threshold)

    def get_config(self):
        config = super().get_config()
        config.update({"max_value": self.max_value, "negative_slope": self.negative_slope,
                       "threshold": self.threshold})
        return config


class LeakyReLU(_Elementwise):
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise.

    Args:
        negative_slope: Non-negative slope (default 0.3; ``alpha`` is the tf.keras 2 name).
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For a negative or missing slope.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> round(float(layers.LeakyReLU(0.1)(ef.constant([-1.0]))[0]), 4)
        -0.1
    """

    def __init__(self, negative_slope=0.3, **kwargs):
        negative_slope = kwargs.pop("alpha", negative_slope)
        super().__init__(**kwargs)
        if negative_slope is None:
            raise ValueError("LeakyReLU: negative_slope must be a number, got None.")
        self.negative_slope = _non_negative(negative_slope, "negative_slope", "LeakyReLU")

    def call(self, inputs):
        return ef.nn.leaky_relu(inputs, alpha=self.negative_slope)

    def get_config(self):
        config = super().get_config()
        config["negative_slope"] = self.negative_slope
        return config


class ELU(_Elementwise):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Args:
        alpha: Scale of the negative part (default 1).
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.ELU()(ef.constant([1.0])).numpy().tolist()
        [1.0]
    """

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return activations.elu(inputs, self.alpha)

    def get_config(self):
        config = super().get_config()
        config["alpha"] = self.alpha
        return config


class Softmax(_Elementwise):
    """``exp(x) / sum(exp(x))`` over ``axis``; masked positions (mask False) get (almost)
    zero probability: ``-1e9`` (``-3e4`` in float16) is added to them first.

    Args:
        axis: Int or tuple of ints (default -1).
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Softmax()(ef.constant([[0.0, 0.0]]), mask=ef.constant([[True, False]])).numpy()
        array([[1., 0.]], dtype=float32)
    """

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs, mask=None):
        if mask is not None:
            big = -3e4 if inputs.dtype == ef.float16 else -1e9
            inputs = inputs + (1.0 - ef.cast(mask, inputs.dtype)) * big
        if isinstance(self.axis, (list, tuple)):
            if len(self.axis) == 1:
                return ef.nn.softmax(inputs, axis=self.axis[0])
            return ef.exp(inputs - ef.reduce_logsumexp(inputs, axis=list(self.axis),
                                                       keepdims=True))
        return ef.nn.softmax(inputs, axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


class PReLU(Layer):
    """Leaky ReLU with a learned slope: ``x`` for ``x >= 0``, ``alpha * x`` otherwise.

    ``alpha`` has the input's shape without the batch axis, with size 1 on ``shared_axes``
    (e.g. ``shared_axes=[1, 2]`` learns one slope per channel of an image).

    Args:
        alpha_initializer: Initializer (default zeros).
        alpha_regularizer: Optional regularizer.
        alpha_constraint: Optional constraint.
        shared_axes: Axes (1-based, batch excluded) sharing one slope.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.PReLU(alpha_initializer="ones")(ef.constant([[-2.0]])).numpy().tolist()
        [[-2.0]]
    """

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None,
                 alpha_constraint=None, shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        weight_options(self, "alpha", alpha_initializer, alpha_regularizer, alpha_constraint)
        if shared_axes is not None and not isinstance(shared_axes, (list, tuple)):
            shared_axes = [shared_axes]
        self.shared_axes = list(shared_axes) if shared_axes is not None else None
        self.supports_masking = True

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()[1:]
        for axis in self.shared_axes or []:
            if not 1 <= axis <= len(dims):
                raise ValueError("PReLU %s: shared axis %d is out of range for input shape %s."
                                 % (self.name, axis, TensorShape(input_shape)))
            dims[axis - 1] = 1
        if any(d is None for d in dims):
            raise ValueError("PReLU %s: every non-batch axis must be defined or shared, got "
                             "input shape %s." % (self.name, TensorShape(input_shape)))
        self.alpha = self.add_weight("alpha", dims, initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        self.built = True

    def call(self, inputs):
        alpha = self._cast_compute(self.alpha)
        return ef.nn.relu(inputs) - alpha * ef.nn.relu(-inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(weight_config(self, "alpha"))
        config["shared_axes"] = self.shared_axes
        return config
