"""Convolution layers: Conv1D/2D/3D, Conv1D/2D/3DTranspose, DepthwiseConv2D, SeparableConv2D.

For channels-last input ``x`` of shape ``(batch, *spatial, C)`` and kernel ``w`` of shape
``(*k, C / groups, F)``, a convolution computes

    y[b, p, f] = sum_{t, c} x[b, s * p + d * t - pad, g(f) * C/groups + c] * w[t, c, f] + bias[f]

with strides ``s``, dilation ``d`` and ``g(f) = f // (F / groups)``. ``"valid"`` uses no
padding; ``"same"`` pads so that the output has ``ceil(n / s)`` positions (extra padding at
the end, as TensorFlow); ``"causal"`` (Conv1D) pads ``d (k - 1)`` steps at the start only.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layers.Conv2D(8, 3, padding="same")(ef.ones([1, 5, 5, 3])).shape
    TensorShape([1, 5, 5, 8])
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras import activations
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import InputSpec, Layer
from eagerflow.keras.layers.core import weight_config, weight_options
from eagerflow.tensor_shape import TensorShape

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "DepthwiseConv2D", "SeparableConv2D"]

_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


class _ConvBase(Layer):
    """Shared arguments, spatial bookkeeping, bias and activation of all convolutions."""

    _rank = 2
    _paddings = ("valid", "same")

    def __init__(self, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, bias_initializer="zeros",
                 bias_regularizer=None, bias_constraint=None, activity_regularizer=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        n = self._rank
        self.kernel_size = layer_utils.normalize_tuple(kernel_size, n, "kernel_size")
        self.strides = layer_utils.normalize_tuple(strides, n, "strides")
        self.dilation_rate = layer_utils.normalize_tuple(dilation_rate, n, "dilation_rate")
        self.padding = layer_utils.normalize_padding(padding, self._paddings)
        self.data_format = layer_utils.normalize_data_format(data_format)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError("%s: `strides > 1` not supported in conjunction with "
                             "`dilation_rate > 1`. Received: strides=%s and dilation_rate=%s"
                             % (type(self).__name__, self.strides, self.dilation_rate))
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.input_spec = InputSpec(min_ndim=n + 2)

    @property
    def _channel_axis(self):
        return 1 if self.data_format == "channels_first" else -1

    @property
    def _format(self):
        return _FORMATS[self._rank][self.data_format == "channels_first"]

    def _input_channels(self, input_shape):
        input_shape = TensorShape(input_shape)
        if input_shape.rank != self._rank + 2:
            raise ValueError("%s %s expects inputs of rank %d, got shape %s."
                             % (type(self).__name__, self.name, self._rank + 2, input_shape))
        channels = input_shape[self._channel_axis]
        if channels is None:
            raise ValueError("%s %s: the channel dimension of the inputs should be defined. "
                             "Found None in input shape %s."
                             % (type(self).__name__, self.name, input_shape))
        self.input_spec = InputSpec(ndim=self._rank + 2, axes={self._channel_axis: channels})
        return channels

    def _spatial(self, dims):
        if self.data_format == "channels_first":
            return dims[2:]
        return dims[1:-1]

    def _with_spatial(self, dims, spatial, channels):
        if self.data_format == "channels_first":
            return TensorShape([dims[0], channels] + list(spatial))
        return TensorShape([dims[0]] + list(spatial) + [channels])

    def _add_bias(self, outputs, units):
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", (units,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)

    def _finish(self, outputs):
        if self.bias is not None:
            bias = self._cast_compute(self.bias)
            if self.data_format == "channels_first":
                bias = ef.reshape(bias, [-1] + [1] * self._rank)
            outputs = outputs + bias
        return self.activation(outputs)

    def get_config(self):
        config = super().get_config()
        config.update({"kernel_size": self.kernel_size, "strides": self.strides,
                       "padding": self.padding, "data_format": self.data_format,
                       "dilation_rate": self.dilation_rate,
                       "activation": activations.serialize(self.activation),
                       "use_bias": self.use_bias})
        config.update(weight_config(self, "bias"))
        return config


class _Conv(_ConvBase):
    """N-D convolution with optional groups."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, bias_constraint,
                         activity_regularizer, **kwargs)
        name = type(self).__name__
        self.filters = layer_utils.check_positive_int(filters, "filters", name)
        self.groups = layer_utils.check_positive_int(groups, "groups", name)
        if self.filters % self.groups:
            raise ValueError("%s: the number of filters must be evenly divisible by the number "
                             "of groups. Received: groups=%d, filters=%d"
                             % (name, self.groups, self.filters))
        if self.padding == "causal" and self.data_format == "channels_first":
            raise ValueError("%s: causal padding is only supported with "
                             "data_format='channels_last'." % name)
        weight_options(self, "kernel", kernel_initializer, kernel_regularizer,
                       kernel_constraint)

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        if channels % self.groups:
            raise ValueError("%s %s: the number of input channels must be evenly divisible by "
                             "the number of groups. Received groups=%d, but the input has %d "
                             "channels (full input shape is %s)."
                             % (type(self).__name__, self.name, self.groups, channels,
                                TensorShape(input_shape)))
        shape = self.kernel_size + (channels // self.groups, self.filters)
        self.kernel = self.add_weight("kernel", shape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self._add_bias(None, self.filters)
        self.built = True

    def call(self, inputs):
        padding = self.padding
        if padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            inputs = ef.pad(inputs, [[0, 0], [left, 0], [0, 0]])
            padding = "valid"
        outputs = ef.nn.convolution(inputs, self._cast_compute(self.kernel),
                                    strides=self.strides, padding=padding.upper(),
                                    data_format=self._format, dilations=self.dilation_rate)
        return self._finish(outputs)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        spatial = [layer_utils.conv_output_length(n, k, self.padding, s, d) for n, k, s, d in
                   zip(self._spatial(dims), self.kernel_size, self.strides, self.dilation_rate)]
        return self._with_spatial(dims, spatial, self.filters)

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters, "groups": self.groups})
        config.update(weight_config(self, "kernel"))
        return config


_CONV_ARGS = """
    Args:
        filters: Number of output channels.
        kernel_size: Int or tuple: the window size.
        strides: Int or tuple (default 1).
        padding: ``"valid"`` or ``"same"``{causal}.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        dilation_rate: Int or tuple (default 1); cannot exceed 1 together with strides.
        groups: Splits input and output channels into this many independent groups.
        activation: Activation name or function.
        use_bias: Whether to add a bias.
        kernel_initializer, bias_initializer: Initializers.
        kernel_regularizer, bias_regularizer: Optional regularizers.
        activity_regularizer: Optional output regularizer.
        kernel_constraint, bias_constraint: Optional constraints.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For bad sizes, paddings, formats, groups that do not divide the
            channels, or strides combined with dilation.
"""


class Conv1D(_Conv):
    __doc__ = """1-D convolution over ``(batch, steps, channels)`` (see the module docstring).
    """ + _CONV_ARGS.format(causal=' or ``"causal"`` (output t sees inputs <= t only)') + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Conv1D(4, 3, padding="causal")(ef.ones([2, 10, 3])).shape
        TensorShape([2, 10, 4])
    """
    _rank = 1
    _paddings = ("valid", "same", "causal")


class Conv2D(_Conv):
    __doc__ = """2-D convolution over images (see the module docstring).
    """ + _CONV_ARGS.format(causal="") + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Conv2D(4, 3, strides=2)(ef.ones([2, 9, 9, 3])).shape
        TensorShape([2, 4, 4, 4])
    """
    _rank = 2


class Conv3D(_Conv):
    __doc__ = """3-D convolution over volumes (see the module docstring).
    """ + _CONV_ARGS.format(causal="") + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Conv3D(2, 2)(ef.ones([1, 3, 3, 3, 1])).shape
        TensorShape([1, 2, 2, 2, 2])
    """
    _rank = 3


class _ConvTranspose(_ConvBase):
    """Transposed convolution: the gradient of a convolution with respect to its input.

    Each input position scatters ``x[p] * w[t]`` to output position ``s * p + d * t`` and the
    result is cropped to the output length ``deconv_output_length`` gives.
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, bias_constraint,
                         activity_regularizer, **kwargs)
        name = type(self).__name__
        self.filters = layer_utils.check_positive_int(filters, "filters", name)
        self.output_padding = None
        if output_padding is not None:
            self.output_padding = layer_utils.normalize_tuple(
                output_padding, self._rank, "output_padding", allow_zero=True)
            for op, s in zip(self.output_padding, self.strides):
                if op >= s:
                    raise ValueError("%s: strides %s must be greater than output padding %s."
                                     % (name, self.strides, self.output_padding))
        weight_options(self, "kernel", kernel_initializer, kernel_regularizer,
                       kernel_constraint)

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        shape = self.kernel_size + (self.filters, channels)
        self.kernel = self.add_weight("kernel", shape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self._add_bias(None, self.filters)
        self.built = True

    def _output_spatial(self, spatial):
        pads = self.output_padding or (None,) * self._rank
        return [layer_utils.deconv_output_length(n, k, self.padding, op, s, d) for
                n, k, op, s, d in zip(spatial, self.kernel_size, pads, self.strides,
                                      self.dilation_rate)]

    def call(self, inputs):
        spatial = self._spatial(TensorShape(inputs.shape).as_list())
        if any(n is None for n in spatial):
            raise ValueError("%s %s needs known spatial input sizes, got input shape %s."
                             % (type(self).__name__, self.name, inputs.shape))
        outputs = ef.nn.conv_transpose(inputs, self._cast_compute(self.kernel),
                                       self._output_spatial(spatial), strides=self.strides,
                                       padding=self.padding.upper(), data_format=self._format,
                                       dilations=self.dilation_rate)
        return self._finish(outputs)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        return self._with_spatial(dims, self._output_spatial(self._spatial(dims)), self.filters)

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters, "output_padding": self.output_padding})
        config.update(weight_config(self, "kernel"))
        return config


_TRANSPOSE_ARGS = """
    Output length per axis (kernel ``k`` dilated to ``k' = k + (k - 1)(d - 1)``): without
    ``output_padding``, ``n s + max(k' - s, 0)`` for ``"valid"`` and ``n s`` for ``"same"``;
    with it, ``(n - 1) s + k' - 2 pad + output_padding`` where pad is ``k' // 2`` for
    ``"same"`` and 0 for ``"valid"``. The kernel has shape ``(*kernel_size, filters,
    in_channels)``.

    Args:
        filters: Number of output channels.
        kernel_size: Int or tuple.
        strides: Int or tuple (default 1).
        padding: ``"valid"`` or ``"same"``.
        output_padding: Optional int or tuple, each smaller than the stride.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        dilation_rate: Int or tuple (default 1).
        activation: Activation name or function.
        use_bias: Whether to add a bias.
        kernel_initializer, bias_initializer: Initializers.
        kernel_regularizer, bias_regularizer: Optional regularizers.
        activity_regularizer: Optional output regularizer.
        kernel_constraint, bias_constraint: Optional constraints.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For bad sizes, paddings, or output_padding >= strides.
"""


class Conv1DTranspose(_ConvTranspose):
    __doc__ = "1-D transposed convolution.\n" + _TRANSPOSE_ARGS + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Conv1DTranspose(2, 3, strides=2)(ef.ones([1, 4, 3])).shape
        TensorShape([1, 9, 2])
    """
    _rank = 1


class Conv2DTranspose(_ConvTranspose):
    __doc__ = "2-D transposed convolution.\n" + _TRANSPOSE_ARGS + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Conv2DTranspose(2, 3, strides=2, padding="same")(ef.ones([1, 4, 4, 3])).shape
        TensorShape([1, 8, 8, 2])
    """
    _rank = 2


class Conv3DTranspose(_ConvTranspose):
    __doc__ = "3-D transposed convolution.\n" + _TRANSPOSE_ARGS + """
    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Conv3DTranspose(2, 2, strides=2)(ef.ones([1, 2, 2, 2, 1])).shape
        TensorShape([1, 4, 4, 4, 2])
    """
    _rank = 3


class DepthwiseConv2D(_ConvBase):
    """Depthwise 2-D convolution: each input channel ``c`` is convolved with its own
    ``depth_multiplier`` filters, giving output channel ``c * depth_multiplier + m``.

    The kernel has shape ``(kh, kw, in_channels, depth_multiplier)``.

    Args:
        kernel_size: Int or tuple.
        strides: Int or tuple (default 1).
        padding: ``"valid"`` or ``"same"``.
        depth_multiplier: Filters per input channel.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        dilation_rate: Int or tuple (default 1).
        activation: Activation name or function.
        use_bias: Whether to add a bias.
        depthwise_initializer, bias_initializer: Initializers.
        depthwise_regularizer, bias_regularizer: Optional regularizers.
        activity_regularizer: Optional output regularizer.
        depthwise_constraint, bias_constraint: Optional constraints.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For bad sizes, paddings or formats.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.DepthwiseConv2D(3, depth_multiplier=2)(ef.ones([1, 5, 5, 3])).shape
        TensorShape([1, 3, 3, 6])
    """

    _rank = 2

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, bias_constraint,
                         activity_regularizer, **kwargs)
        self.depth_multiplier = layer_utils.check_positive_int(
            depth_multiplier, "depth_multiplier", type(self).__name__)
        weight_options(self, "depthwise", depthwise_initializer, depthwise_regularizer,
                       depthwise_constraint)

    def _depthwise_kernel(self, channels):
        return self.add_weight("depthwise_kernel",
                               self.kernel_size + (channels, self.depth_multiplier),
                               initializer=self.depthwise_initializer,
                               regularizer=self.depthwise_regularizer,
                               constraint=self.depthwise_constraint)

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        self.depthwise_kernel = self._depthwise_kernel(channels)
        self._add_bias(None, channels * self.depth_multiplier)
        self.built = True

    def _strides4(self):
        if self.data_format == "channels_first":
            return [1, 1] + list(self.strides)
        return [1] + list(self.strides) + [1]

    def call(self, inputs):
        outputs = ef.nn.depthwise_conv2d(inputs, self._cast_compute(self.depthwise_kernel),
                                         strides=self._strides4(),
                                         padding=self.padding.upper(),
                                         data_format=self._format,
                                         dilations=self.dilation_rate)
        return self._finish(outputs)

    def _out_channels(self, dims):
        channels = dims[self._channel_axis]
        return None if channels is None else channels * self.depth_multiplier

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        spatial = [layer_utils.conv_output_length(n, k, self.padding, s, d) for n, k, s, d in
                   zip(self._spatial(dims), self.kernel_size, self.strides, self.dilation_rate)]
        return self._with_spatial(dims, spatial, self._out_channels(dims))

    def get_config(self):
        config = super().get_config()
        config["depth_multiplier"] = self.depth_multiplier
        config.update(weight_config(self, "depthwise"))
        return config


class SeparableConv2D(DepthwiseConv2D):
    """Depthwise convolution followed by a 1x1 (pointwise) convolution mixing channels.

    Kernels: ``depthwise_kernel`` ``(kh, kw, in_channels, depth_multiplier)`` and
    ``pointwise_kernel`` ``(1, 1, in_channels * depth_multiplier, filters)``.

    Args:
        filters: Number of output channels.
        kernel_size: Int or tuple.
        strides: Int or tuple (default 1).
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        dilation_rate: Int or tuple (default 1).
        depth_multiplier: Depthwise filters per input channel.
        activation: Activation name or function.
        use_bias: Whether to add a bias.
        depthwise_initializer, pointwise_initializer, bias_initializer: Initializers.
        depthwise_regularizer, pointwise_regularizer, bias_regularizer: Regularizers.
        activity_regularizer: Optional output regularizer.
        depthwise_constraint, pointwise_constraint, bias_constraint: Constraints.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For bad sizes, paddings or formats.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.SeparableConv2D(4, 3, padding="same")(ef.ones([1, 5, 5, 3])).shape
        TensorShape([1, 5, 5, 4])
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint, **kwargs)
        self.filters = layer_utils.check_positive_int(filters, "filters", "SeparableConv2D")
        weight_options(self, "pointwise", pointwise_initializer, pointwise_regularizer,
                       pointwise_constraint)

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        self.depthwise_kernel = self._depthwise_kernel(channels)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1, 1, channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self._add_bias(None, self.filters)
        self.built = True

    def call(self, inputs):
        outputs = ef.nn.separable_conv2d(inputs, self._cast_compute(self.depthwise_kernel),
                                         self._cast_compute(self.pointwise_kernel),
                                         strides=self._strides4(),
                                         padding=self.padding.upper(),
                                         data_format=self._format,
                                         dilations=self.dilation_rate)
        return self._finish(outputs)

    def _out_channels(self, dims):
        return self.filters

    def get_config(self):
        config = super().get_config()
        config["filters"] = self.filters
        config.update(weight_config(self, "pointwise"))
        return config
