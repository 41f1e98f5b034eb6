"""Noise layers active only in training: Dropout, SpatialDropout1D/2D/3D, GaussianNoise,
GaussianDropout. With ``training`` falsy each returns its input unchanged.

``training`` may be a Python bool or a boolean scalar tensor (then both branches are
computed and ``eagerflow.where`` picks one, which traces without Python control flow).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> x = ef.ones([2, 4])
    >>> bool((layers.Dropout(0.5)(x, training=False).numpy() == 1.0).all())
    True
"""

from __future__ import annotations

import math

import eagerflow as ef
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import InputSpec, Layer
from eagerflow.errors import short_repr
from eagerflow.tensor_shape import TensorShape

__all__ = ["Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
           "GaussianNoise", "GaussianDropout"]


def _in_training(training, noisy, inputs):
    """Returns noisy() when training is true, inputs when false, a select for a tensor."""
    flag = layer_utils.training_flag(training)
    if flag is False:
        return inputs
    out = noisy()
    if flag is None:
        return ef.where(ef.cast(training, ef.bool), out, inputs)
    return out


def _check_seed(seed, layer):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError("%s: seed must be an int or None, got %s." % (layer, short_repr(seed)))
    return seed


class Dropout(Layer):
    """Randomly zeroes inputs with probability ``rate`` in training and scales the kept ones
    by ``1 / (1 - rate)``, so the expected value is unchanged.

    Args:
        rate: Drop probability in [0, 1).
        noise_shape: Optional shape of the keep/drop mask, broadcast over the inputs (None
            entries take the input's size), e.g. ``(batch, 1, features)`` to drop the same
            features at every timestep.
        seed: Optional int seed.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For a rate outside [0, 1).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> y = layers.Dropout(0.5, seed=1)(ef.ones([1000]), training=True).numpy()
        >>> sorted(set(y.tolist()))
        [0.0, 2.0]
    """

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = layer_utils.check_rate(rate, "rate", type(self).__name__)
        self.noise_shape = tuple(noise_shape) if noise_shape is not None else None
        self.seed = _check_seed(seed, type(self).__name__)
        self.supports_masking = True

    def _get_noise_shape(self, inputs):
        return self.noise_shape

    def call(self, inputs, training=None):
        if self.rate == 0:
            return inputs
        return _in_training(training, lambda: ef.nn.dropout(
            inputs, self.rate, noise_shape=self._get_noise_shape(inputs), seed=self.seed),
            inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed})
        return config


class _SpatialDropout(Dropout):
    """Drops whole feature maps: the mask has size 1 on every spatial axis."""

    _rank = 1

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        kwargs.pop("noise_shape", None)
        super().__init__(rate, seed=seed, **kwargs)
        self.data_format = layer_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def _get_noise_shape(self, inputs):
        shape = layer_utils.static_or_dynamic_shape(inputs)
        ones = [1] * self._rank
        if self.data_format == "channels_first":
            return [shape[0], shape[1]] + ones
        return [shape[0]] + ones + [shape[-1]]

    def get_config(self):
        config = super().get_config()
        config.pop("noise_shape", None)
        config["data_format"] = self.data_format
        return config


class SpatialDropout1D(_SpatialDropout):
    """Dropout of whole channels of ``(batch, steps, channels)`` inputs.

    Args:
        rate: Drop probability in [0, 1).
        seed: Optional int seed.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.SpatialDropout1D(0.5)(ef.ones([2, 3, 4]), training=True).shape
        TensorShape([2, 3, 4])
    """

    _rank = 1

    def __init__(self, rate, seed=None, **kwargs):
        kwargs.pop("data_format", None)
        super().__init__(rate, data_format="channels_last", seed=seed, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("data_format", None)
        return config


class SpatialDropout2D(_SpatialDropout):
    """Dropout of whole feature maps of 4-D inputs.

    Args:
        rate: Drop probability in [0, 1).
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        seed: Optional int seed.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.SpatialDropout2D(0.5)(ef.ones([2, 3, 3, 4]), training=True).shape
        TensorShape([2, 3, 3, 4])
    """

    _rank = 2


class SpatialDropout3D(_SpatialDropout):
    """Dropout of whole feature volumes of 5-D inputs.

    Args:
        rate: Drop probability in [0, 1).
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        seed: Optional int seed.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.SpatialDropout3D(0.5)(ef.ones([1, 2, 2, 2, 3]), training=True).shape
        TensorShape([1, 2, 2, 2, 3])
    """

    _rank = 3


class GaussianNoise(Layer):
    """Adds ``N(0, stddev^2)`` noise in training: ``y = x + n``.

    Args:
        stddev: Noise standard deviation (>= 0).
        seed: Optional int seed.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For a negative stddev.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GaussianNoise(0.1)(ef.ones([2]), training=False).numpy().tolist()
        [1.0, 1.0]
    """

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not stddev >= 0:
            raise ValueError("GaussianNoise: invalid value for argument `stddev`. Expected a "
                             "float >= 0. Received: stddev=%s" % (short_repr(stddev),))
        self.stddev = float(stddev)
        self.seed = _check_seed(seed, "GaussianNoise")
        self.supports_masking = True

    def call(self, inputs, training=None):
        if self.stddev == 0:
            return inputs
        return _in_training(training, lambda: inputs + ef.random.normal(
            layer_utils.static_or_dynamic_shape(inputs), 0.0, self.stddev, dtype=inputs.dtype,
            seed=self.seed), inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"stddev": self.stddev, "seed": self.seed})
        return config


class GaussianDropout(Layer):
    """Multiplies by ``N(1, rate / (1 - rate))`` noise in training.

    Args:
        rate: Drop probability in [0, 1) (as for Dropout, it sets the noise variance).
        seed: Optional int seed.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For a rate outside [0, 1).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GaussianDropout(0.2)(ef.ones([3]), training=True).shape
        TensorShape([3])
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = layer_utils.check_rate(rate, "rate", "GaussianDropout")
        self.seed = _check_seed(seed, "GaussianDropout")
        self.supports_masking = True

    def call(self, inputs, training=None):
        if self.rate == 0:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        return _in_training(training, lambda: inputs * ef.random.normal(
            layer_utils.static_or_dynamic_shape(inputs), 1.0, stddev, dtype=inputs.dtype,
            seed=self.seed), inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "seed": self.seed})
        return config
