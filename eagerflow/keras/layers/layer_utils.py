"""Argument normalization and static shape arithmetic shared by the layers.

Example:
    >>> from eagerflow.keras.layers.layer_utils import conv_output_length, normalize_tuple
    >>> normalize_tuple(3, 2, "kernel_size")
    (3, 3)
    >>> conv_output_length(10, 3, "valid", 2)
    4
"""

from __future__ import annotations

import numbers

import eagerflow as ef
from eagerflow.errors import short_repr
from eagerflow.tensor_shape import TensorShape

__all__ = ["normalize_tuple", "normalize_padding", "normalize_data_format",
           "conv_output_length", "deconv_output_length", "image_data_format",
           "set_image_data_format", "check_rate", "check_positive_int"]

_image_data_format = "channels_last"


def image_data_format():
    """The default ``data_format`` of image layers: ``"channels_last"`` unless changed."""
    return _image_data_format


def set_image_data_format(data_format):
    """Sets the default ``data_format`` (``"channels_last"`` or ``"channels_first"``).

    Raises:
        ValueError: For any other value.
    """
    global _image_data_format
    _image_data_format = normalize_data_format(data_format)


def normalize_tuple(value, n, name, allow_zero=False):
    """An int or an iterable of ``n`` ints as a tuple of ``n`` positive (or >= 0) ints.

    Raises:
        ValueError: Naming the argument and the value received.
    """
    what = "non-negative" if allow_zero else "positive"
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        values = (int(value),) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            raise ValueError("The `%s` argument must be a tuple of %d integers. Received: %s=%s"
                             % (name, n, name, short_repr(value))) from None
        if len(values) != n or not all(isinstance(v, numbers.Integral)
                                       and not isinstance(v, bool) for v in values):
            raise ValueError("The `%s` argument must be a tuple of %d integers. Received: %s=%s"
                             % (name, n, name, short_repr(value)))
        values = tuple(int(v) for v in values)
    if any(v < 0 or (v == 0 and not allow_zero) for v in values):
        raise ValueError("The `%s` argument must be a tuple of %d %s integers. Received: %s=%s"
                         % (name, n, what, name, short_repr(value)))
    return values


def normalize_padding(value, allowed=("valid", "same")):
    """Lower-cases ``padding`` and checks it is allowed.

    Raises:
        ValueError: Listing the allowed values.
    """
    padding = value.lower() if isinstance(value, str) else value
    if padding not in allowed:
        raise ValueError("The `padding` argument must be one of %s. Received: padding=%s"
                         % (", ".join('"%s"' % a for a in allowed), short_repr(value)))
    return padding


def normalize_data_format(value):
    """None -> the default format; otherwise ``"channels_last"`` or ``"channels_first"``.

    Raises:
        ValueError: For any other value.
    """
    if value is None:
        return _image_data_format
    data_format = value.lower() if isinstance(value, str) else value
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of \"channels_first\", "
                         "\"channels_last\". Received: data_format=%s" % (short_repr(value),))
    return data_format


def conv_output_length(length, filter_size, padding, stride, dilation=1):
    """Output length of a convolution or pooling along one axis (None stays None)."""
    if length is None:
        return None
    dilated = (filter_size - 1) * dilation + 1
    if padding in ("same", "causal"):
        out = length
    elif padding == "valid":
        out = length - dilated + 1
    else:  # full
        out = length + dilated - 1
    return max((out + stride - 1) // stride, 0)


def deconv_output_length(length, filter_size, padding, output_padding=None, stride=1,
                         dilation=1):
    """Output length of a transposed convolution along one axis (None stays None)."""
    if length is None:
        return None
    filter_size = filter_size + (filter_size - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return length * stride + max(filter_size - stride, 0)
        if padding == "full":
            return length * stride - (stride + filter_size - 2)
        return length * stride
    pad = {"same": filter_size // 2, "valid": 0, "full": filter_size - 1}[padding]
    return (length - 1) * stride + filter_size - 2 * pad + output_padding


def check_rate(rate, name="rate", layer="Dropout"):
    """A float in [0, 1) (a rate of 1 would drop everything and divide by zero).

    Raises:
        ValueError: For other values.
    """
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate < 1:
        raise ValueError("%s: invalid value received for argument `%s`. Expected a float value "
                         "in [0, 1). Received: %s=%s" % (layer, name, name, short_repr(rate)))
    return float(rate)


def check_positive_int(value, name, layer):
    """A strictly positive int.

    Raises:
        ValueError: For other values.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError("%s: invalid value for argument `%s`. Expected a strictly positive "
                         "integer. Received %s=%s" % (layer, name, name, short_repr(value)))
    return int(value)


def static_or_dynamic_shape(x):
    """A list with the static size of each axis where known, else a scalar tensor."""
    static = TensorShape(x.shape).as_list()
    if all(d is not None for d in static):
        return static
    dynamic = ef.shape(x)
    return [d if d is not None else dynamic[i] for i, d in enumerate(static)]


def training_flag(training):
    """True/False for Python training values; None when ``training`` is a tensor."""
    if training is None:
        return False
    if isinstance(training, (bool, int)):
        return bool(training)
    if hasattr(training, "dtype"):
        value = ef.get_static_value(training)
        return None if value is None else bool(value)
    return bool(training)
