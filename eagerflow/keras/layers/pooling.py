"""Pooling layers: Max/AveragePooling1D/2D/3D and Global{Average,Max}Pooling1D/2D/3D.

A window pooling layer reduces each ``pool_size`` window, moved by ``strides`` (default: the
pool size), to its maximum or mean. With ``"same"`` padding, windows that overhang the edge
only count the real inputs (the average divides by the number of real inputs). Global
pooling reduces all spatial axes.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layers.MaxPooling2D()(ef.ones([1, 4, 4, 3])).shape
    TensorShape([1, 2, 2, 3])
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import InputSpec, Layer
from eagerflow.tensor_shape import TensorShape

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalAveragePooling3D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "GlobalMaxPooling3D", "MaxPool1D", "MaxPool2D", "MaxPool3D",
           "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D",
           "GlobalMaxPool1D", "GlobalMaxPool2D"]

_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


class _Pooling(Layer):
    _rank = 2
    _mode = "max"

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = layer_utils.normalize_tuple(pool_size, self._rank, "pool_size")
        self.strides = (self.pool_size if strides is None else
                        layer_utils.normalize_tuple(strides, self._rank, "strides"))
        self.padding = layer_utils.normalize_padding(padding)
        self.data_format = layer_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def call(self, inputs):
        fmt = _FORMATS[self._rank][self.data_format == "channels_first"]
        pool = ef.nn.max_pool if self._mode == "max" else ef.nn.avg_pool
        return pool(inputs, self.pool_size, self.strides, self.padding.upper(), data_format=fmt)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        first = self.data_format == "channels_first"
        spatial = dims[2:] if first else dims[1:-1]
        out = [layer_utils.conv_output_length(n, k, self.padding, s)
               for n, k, s in zip(spatial, self.pool_size, self.strides)]
        if first:
            return TensorShape(dims[:2] + out)
        return TensorShape([dims[0]] + out + [dims[-1]])

    def get_config(self):
        config = super().get_config()
        config.update({"pool_size": self.pool_size, "strides": self.strides,
                       "padding": self.padding, "data_format": self.data_format})
        return config


_POOL_ARGS = """
    Args:
        pool_size: Int or tuple: window size (default {default}).
        strides: Int or tuple; None means ``pool_size``.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For non-positive sizes or unknown padding/data_format.
"""


class MaxPooling1D(_Pooling):
    __doc__ = "Max over windows of ``(batch, steps, features)``.\n" + _POOL_ARGS.format(
        default=2) + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.MaxPooling1D()(ef.constant([[[1.0], [3.0]]])).numpy().tolist()
        [[[3.0]]]
    """
    _rank, _mode = 1, "max"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling2D(_Pooling):
    __doc__ = "Max over windows of images.\n" + _POOL_ARGS.format(default="(2, 2)") + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.MaxPooling2D(3, strides=1)(ef.ones([1, 4, 4, 1])).shape
        TensorShape([1, 2, 2, 1])
    """
    _rank, _mode = 2, "max"

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling3D(_Pooling):
    __doc__ = "Max over windows of volumes.\n" + _POOL_ARGS.format(default="(2, 2, 2)") + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.MaxPooling3D()(ef.ones([1, 4, 4, 4, 1])).shape
        TensorShape([1, 2, 2, 2, 1])
    """
    _rank, _mode = 3, "max"

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling1D(_Pooling):
    __doc__ = "Mean over windows of ``(batch, steps, features)``.\n" + _POOL_ARGS.format(
        default=2) + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.AveragePooling1D()(ef.constant([[[1.0], [3.0]]])).numpy().tolist()
        [[[2.0]]]
    """
    _rank, _mode = 1, "avg"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling2D(_Pooling):
    __doc__ = "Mean over windows of images.\n" + _POOL_ARGS.format(default="(2, 2)") + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.AveragePooling2D(padding="same")(ef.ones([1, 3, 3, 1])).shape
        TensorShape([1, 2, 2, 1])
    """
    _rank, _mode = 2, "avg"

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling3D(_Pooling):
    __doc__ = "Mean over windows of volumes.\n" + _POOL_ARGS.format(default="(2, 2, 2)") + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.AveragePooling3D()(ef.ones([1, 2, 2, 2, 1])).shape
        TensorShape([1, 1, 1, 1, 1])
    """
    _rank, _mode = 3, "avg"

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _GlobalPooling(Layer):
    _rank = 2
    _mode = "max"

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = layer_utils.normalize_data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def _axes(self):
        if self.data_format == "channels_first":
            return list(range(2, self._rank + 2))
        return list(range(1, self._rank + 1))

    def call(self, inputs):
        reduce = ef.reduce_max if self._mode == "max" else ef.reduce_mean
        return reduce(inputs, axis=self._axes(), keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        axes = self._axes()
        if self.keepdims:
            return TensorShape([1 if i in axes else d for i, d in enumerate(dims)])
        return TensorShape([d for i, d in enumerate(dims) if i not in axes])

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "keepdims": self.keepdims})
        return config


_GLOBAL_ARGS = """
    Args:
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        keepdims: Keep the reduced axes with size 1.
        **kwargs: Base Layer arguments.
"""


class GlobalAveragePooling1D(_GlobalPooling):
    __doc__ = """Mean over the steps axis. With a mask ``(batch, steps)`` only unmasked steps
    count: ``y = sum(x * m, steps) / sum(m, steps)``.
    """ + _GLOBAL_ARGS + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GlobalAveragePooling1D()(ef.constant([[[1.0], [3.0]]])).numpy().tolist()
        [[2.0]]
    """
    _rank, _mode = 1, "avg"

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(data_format, keepdims, **kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        axis = self._axes()[0]
        m = ef.cast(mask, inputs.dtype)
        m = ef.expand_dims(m, 1 if self.data_format == "channels_first" else 2)
        total = ef.reduce_sum(inputs * m, axis=axis, keepdims=self.keepdims)
        count = ef.reduce_sum(m, axis=axis, keepdims=self.keepdims)
        return total / count

    def compute_mask(self, inputs, mask=None):
        return None


class GlobalAveragePooling2D(_GlobalPooling):
    __doc__ = "Mean over both spatial axes.\n" + _GLOBAL_ARGS + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GlobalAveragePooling2D()(ef.ones([2, 3, 3, 4])).shape
        TensorShape([2, 4])
    """
    _rank, _mode = 2, "avg"


class GlobalAveragePooling3D(_GlobalPooling):
    __doc__ = "Mean over the three spatial axes.\n" + _GLOBAL_ARGS + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GlobalAveragePooling3D()(ef.ones([2, 2, 2, 2, 4])).shape
        TensorShape([2, 4])
    """
    _rank, _mode = 3, "avg"


class GlobalMaxPooling1D(_GlobalPooling):
    __doc__ = "Max over the steps axis.\n" + _GLOBAL_ARGS + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GlobalMaxPooling1D()(ef.constant([[[1.0], [3.0]]])).numpy().tolist()
        [[3.0]]
    """
    _rank, _mode = 1, "max"


class GlobalMaxPooling2D(_GlobalPooling):
    __doc__ = "Max over both spatial axes.\n" + _GLOBAL_ARGS + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GlobalMaxPooling2D(keepdims=True)(ef.ones([2, 3, 3, 4])).shape
        TensorShape([2, 1, 1, 4])
    """
    _rank, _mode = 2, "max"


class GlobalMaxPooling3D(_GlobalPooling):
    __doc__ = "Max over the three spatial axes.\n" + _GLOBAL_ARGS + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GlobalMaxPooling3D()(ef.ones([2, 2, 2, 2, 4])).shape
        TensorShape([2, 4])
    """
    _rank, _mode = 3, "max"


# tf.keras aliases.
MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D
