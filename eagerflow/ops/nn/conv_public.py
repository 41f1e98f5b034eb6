"""The ``tf.nn`` convolution functions: conv1d, conv2d, conv3d, convolution, atrous_conv2d,
the transposed convolutions, depthwise_conv2d (and its backprops) and separable_conv2d.

Each turns TF's arguments (strides, dilations, padding, data_format, output_shape) into the
static attrs of one primitive of :mod:`eagerflow.ops.nn.conv_kernels`.

Example:
    >>> import eagerflow as ef
    >>> x = ef.ones([1, 4, 4, 1])
    >>> w = ef.ones([3, 3, 1, 1])
    >>> ef.nn.conv2d(x, w, strides=1, padding="SAME")[0, :, :, 0].numpy().tolist()[0]
    [4.0, 6.0, 6.0, 4.0]
"""

from __future__ import annotations

import numpy as np

from eagerflow.ops.nn.conv_kernels import (
    CONV, CONV_BACKPROP_INPUT, DEPTHWISE_BACKPROP_FILTER, DEPTHWISE_BACKPROP_INPUT, DEPTHWISE_CONV,
)
from eagerflow.ops.dispatch import execute
from eagerflow.ops.nn.window_geometry import (
    _bad, from_channels_last, normalize_format, normalize_ints, normalize_padding, spatial_rank,
)

__all__ = [
    "conv1d", "conv2d", "conv3d", "convolution", "conv1d_transpose", "conv2d_transpose",
    "conv3d_transpose", "conv_transpose", "depthwise_conv2d", "separable_conv2d", "atrous_conv2d",
    "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter",
]

EXPORTS = {
    "nn": ["conv1d", "conv2d", "conv3d", "convolution", "conv1d_transpose", "conv2d_transpose",
           "conv3d_transpose", "conv_transpose", "depthwise_conv2d", "separable_conv2d",
           "atrous_conv2d", "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter"],
}


# --------------------------------------------------------------------------------------------
# Attrs from the public functions' arguments.
# --------------------------------------------------------------------------------------------

def _window_attrs(nd, strides, padding, data_format, dilations, op, generic=False):
    data_format = normalize_format(data_format, nd, op, generic)
    return {"strides": normalize_ints(strides, nd, "strides", data_format, op),
            "dilations": normalize_ints(dilations, nd, "dilations", data_format, op),
            "padding": normalize_padding(padding, nd, data_format, op),
            "data_format": data_format}


def _shape_of(value):
    """The (static) shape of a tensor, array or nested list, as a tuple."""
    shape = getattr(value, "shape", None)
    if shape is None:
        return np.shape(value)
    return tuple(shape.as_list()) if hasattr(shape, "as_list") else tuple(shape)


def _output_shape(output_shape, input, filters, nd, data_format, op, depthwise=False):
    """A transposed convolution's static output shape (nd or nd + 2 entries) -> full shape."""
    if hasattr(output_shape, "numpy") or isinstance(output_shape, np.ndarray):
        output_shape = np.asarray(output_shape).reshape(-1).tolist()
    elif hasattr(output_shape, "as_list"):
        output_shape = output_shape.as_list()
    try:
        shape = tuple(None if s is None else int(s) for s in output_shape)
    except (TypeError, ValueError):
        raise _bad(op, "output_shape must be a list of ints or a 1-D int tensor, got %r."
                   % (output_shape,)) from None
    if len(shape) == nd:
        in_shape, f_shape = _shape_of(input), _shape_of(filters)
        if len(in_shape) != nd + 2 or len(f_shape) != nd + 2:
            raise _bad(op, "input and filters must have rank %d, got shapes %s and %s."
                       % (nd + 2, list(in_shape), list(f_shape)))
        batch = in_shape[0]
        channels = f_shape[nd]
        shape = from_channels_last((batch,) + shape + (channels,), data_format)
    elif len(shape) != nd + 2:
        raise _bad(op, "output_shape must have %d entries (or %d spatial sizes), got %s."
                   % (nd + 2, nd, list(shape)))
    in_shape = _shape_of(input)
    if len(in_shape) and shape[0] is not None and in_shape[0] is not None \
            and shape[0] != in_shape[0]:
        raise _bad(op, "output_shape %s has batch %d but the input (shape %s) has batch %d."
                   % (list(shape), shape[0], list(in_shape), in_shape[0]))
    return shape


# --------------------------------------------------------------------------------------------
# Public functions.
# --------------------------------------------------------------------------------------------

def convolution(input, filters, strides=None, padding="VALID", data_format=None,  # noqa: A002
                dilations=None, name=None):
    """Computes an N-D convolution (N = 1, 2 or 3), inferred from the input's rank.

    Args:
        input: A float Tensor of rank N + 2 (``[batch, *spatial, channels]``, or channels
            first when ``data_format`` starts with "NC").
        filters: A Tensor of shape ``[*kernel, in_channels, out_channels]``. When the
            input has a multiple of ``in_channels`` channels, a grouped convolution is
            computed (``groups = input channels / in_channels``).
        strides: An int or list of N ints (default 1).
        padding: "VALID", "SAME" or a list of [before, after] pairs.
        data_format: None (channels last) or a string such as "NCHW"/"NHWC".
        dilations: An int or list of N ints (default 1).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the input's dtype.

    Raises:
        InvalidArgumentError: For mismatched channels, bad ranks, paddings or strides.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.convolution(ef.ones([1, 5, 1]), ef.ones([3, 1, 1])).shape
        TensorShape([1, 3, 1])
    """
    nd = spatial_rank(input, "convolution")
    attrs = _window_attrs(nd, strides, padding, data_format, dilations, "convolution",
                          generic=True)
    return execute(CONV, (input, filters), attrs)


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None,  # noqa: A002
           name=None):
    """Computes a 1-D convolution of a 3-D input with a 3-D filter.

    Args:
        input: A float Tensor ``[batch, width, channels]`` ("NWC") or ``[batch, channels,
            width]`` ("NCW").
        filters: A Tensor ``[filter_width, in_channels, out_channels]``.
        stride: An int or list of 1 or 3 ints.
        padding: "SAME", "VALID" or explicit [before, after] pairs.
        data_format: "NWC" (default) or "NCW".
        dilations: An int or list of 1 or 3 ints (default 1).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the input's dtype.

    Raises:
        InvalidArgumentError: For mismatched channels, bad ranks, paddings or strides.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.conv1d(ef.ones([1, 4, 1]), ef.ones([2, 1, 1]), 1, "VALID").numpy().ravel()
        array([2., 2., 2.], dtype=float32)
    """
    return execute(CONV, (input, filters),
                   _window_attrs(1, stride, padding, data_format, dilations, "conv1d"))


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,  # noqa: A002
           name=None):
    """Computes a 2-D convolution of a 4-D input with a 4-D filter.

    Args:
        input: A float Tensor ``[batch, height, width, channels]`` ("NHWC") or
            ``[batch, channels, height, width]`` ("NCHW").
        filters: A Tensor ``[filter_height, filter_width, in_channels, out_channels]``.
        strides: An int or list of 1, 2 or 4 ints.
        padding: "SAME", "VALID", or explicit pairs ``[[0, 0], [top, bottom], [left,
            right], [0, 0]]`` (in data_format order; the 2 spatial pairs alone also work).
        data_format: "NHWC" (default) or "NCHW".
        dilations: An int or list of 1, 2 or 4 ints (default 1). Unlike TF's CPU kernel,
            dilations and strides above 1 may be combined.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the input's dtype.

    Raises:
        InvalidArgumentError: For mismatched channels, bad ranks, paddings or strides.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.conv2d(ef.ones([1, 3, 3, 1]), ef.ones([2, 2, 1, 2]), 1, "VALID").shape
        TensorShape([1, 2, 2, 2])
    """
    return execute(CONV, (input, filters),
                   _window_attrs(2, strides, padding, data_format, dilations, "conv2d"))


def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None,  # noqa: A002
           name=None):
    """Computes a 3-D convolution of a 5-D input with a 5-D filter.

    Args:
        input: A float Tensor ``[batch, depth, height, width, channels]`` ("NDHWC") or
            channels first ("NCDHW").
        filters: A Tensor ``[d, h, w, in_channels, out_channels]``.
        strides: An int or list of 1, 3 or 5 ints.
        padding: "SAME", "VALID" or explicit [before, after] pairs.
        data_format: "NDHWC" (default) or "NCDHW".
        dilations: An int or list of 1, 3 or 5 ints (default 1).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the input's dtype.

    Raises:
        InvalidArgumentError: For mismatched channels, bad ranks, paddings or strides.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.conv3d(ef.ones([1, 2, 2, 2, 1]), ef.ones([2, 2, 2, 1, 1]),
        ...              [1, 1, 1, 1, 1], "VALID").numpy().item()
        8.0
    """
    return execute(CONV, (input, filters),
                   _window_attrs(3, strides, padding, data_format, dilations, "conv3d"))


def atrous_conv2d(value, filters, rate, padding, name=None):
    """A 2-D dilated (atrous) convolution: ``conv2d`` with ``dilations=rate``, stride 1.

    Args:
        value: A float Tensor ``[batch, height, width, channels]``.
        filters: A Tensor ``[filter_height, filter_width, in_channels, out_channels]``.
        rate: A positive int, the dilation rate of both spatial dimensions.
        padding: "SAME" or "VALID".
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the input's dtype.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.atrous_conv2d(ef.ones([1, 5, 5, 1]), ef.ones([2, 2, 1, 1]), 2, "VALID").shape
        TensorShape([1, 3, 3, 1])
    """
    return execute(CONV, (value, filters),
                   _window_attrs(2, 1, padding, "NHWC", rate, "atrous_conv2d"))


def conv_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                   data_format=None, dilations=None, name=None):
    """The transpose (gradient) of ``convolution``, N-D from the input's rank.

    ``conv_transpose(y, w, shape(x), ...)`` is the adjoint of ``convolution(x, w, ...)``:
    ``<convolution(x, w), y> == <x, conv_transpose(y, w, shape(x))>``.

    Args:
        input: A float Tensor ``[batch, *spatial, in_channels]`` (or channels first).
        filters: A Tensor ``[*kernel, output_channels, in_channels]``.
        output_shape: The result's shape: N + 2 ints (or the N spatial sizes), a list or
            1-D tensor.
        strides: An int or list of 1, N or N + 2 ints.
        padding: "SAME" (default), "VALID" or explicit [before, after] pairs.
        data_format: None (channels last) or a string such as "NCHW".
        dilations: An int or list of ints (default 1).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``output_shape``.

    Raises:
        InvalidArgumentError: When ``output_shape`` does not convolve back to the input's
            shape with these strides and padding, or channels mismatch.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.conv_transpose(ef.ones([1, 2, 1]), ef.ones([2, 1, 1]), [1, 4, 1], 2).shape
        TensorShape([1, 4, 1])
    """
    nd = spatial_rank(input, "conv_transpose")
    return _transpose(input, filters, output_shape, strides, padding, data_format, dilations,
                      nd, "conv_transpose", generic=True)


def _transpose(input, filters, output_shape, strides, padding, data_format, dilations,  # noqa: A002
               nd, op, generic=False):
    attrs = _window_attrs(nd, strides, padding, data_format, dilations, op, generic)
    attrs["input_shape"] = _output_shape(output_shape, input, filters, nd,
                                         attrs["data_format"], op)
    return execute(CONV_BACKPROP_INPUT, (input, filters), attrs)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NWC", dilations=None, name=None):
    """The transpose (gradient) of ``conv1d``.

    Args:
        input: A float Tensor ``[batch, width, in_channels]`` (or "NCW").
        filters: A Tensor ``[filter_width, output_channels, in_channels]``.
        output_shape: The result's shape (3 ints, or the width alone).
        strides: An int or list of 1 or 3 ints.
        padding: "SAME" (default), "VALID" or explicit pairs.
        data_format: "NWC" (default) or "NCW".
        dilations: An int or list of 1 or 3 ints.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``output_shape``.

    Example:
        >>> import eagerflow as ef
        >>> y = ef.nn.conv1d_transpose(ef.ones([1, 2, 1]), ef.ones([3, 1, 1]), [1, 4, 1], 2)
        >>> y.numpy().ravel().tolist()
        [1.0, 1.0, 2.0, 1.0]
    """
    return _transpose(input, filters, output_shape, strides, padding, data_format, dilations,
                      1, "conv1d_transpose")


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NHWC", dilations=None, name=None):
    """The transpose (gradient) of ``conv2d``, sometimes called deconvolution.

    Args:
        input: A float Tensor ``[batch, height, width, in_channels]`` (or "NCHW").
        filters: A Tensor ``[height, width, output_channels, in_channels]``.
        output_shape: The result's shape (4 ints, or the 2 spatial sizes), a list or a
            1-D tensor.
        strides: An int or list of 1, 2 or 4 ints.
        padding: "SAME" (default), "VALID" or explicit pairs.
        data_format: "NHWC" (default) or "NCHW".
        dilations: An int or list of 1, 2 or 4 ints.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``output_shape``.

    Raises:
        InvalidArgumentError: When ``output_shape`` does not convolve back to the input's
            shape, or channels mismatch.

    Example:
        >>> import eagerflow as ef
        >>> y = ef.nn.conv2d_transpose(ef.ones([1, 2, 2, 3]), ef.ones([3, 3, 5, 3]),
        ...                            [1, 4, 4, 5], strides=2)
        >>> y.shape
        TensorShape([1, 4, 4, 5])
    """
    return _transpose(input, filters, output_shape, strides, padding, data_format, dilations,
                      2, "conv2d_transpose")


def conv3d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NDHWC", dilations=None, name=None):
    """The transpose (gradient) of ``conv3d``.

    Args:
        input: A float Tensor ``[batch, d, h, w, in_channels]`` (or "NCDHW").
        filters: A Tensor ``[d, h, w, output_channels, in_channels]``.
        output_shape: The result's shape (5 ints, or the 3 spatial sizes).
        strides: An int or list of 1, 3 or 5 ints.
        padding: "SAME" (default), "VALID" or explicit pairs.
        data_format: "NDHWC" (default) or "NCDHW".
        dilations: An int or list of 1, 3 or 5 ints.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``output_shape``.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.conv3d_transpose(ef.ones([1, 1, 1, 1, 2]), ef.ones([2, 2, 2, 1, 2]),
        ...                        [1, 2, 2, 2, 1], 2).shape
        TensorShape([1, 2, 2, 2, 1])
    """
    return _transpose(input, filters, output_shape, strides, padding, data_format, dilations,
                      3, "conv3d_transpose")


def _depthwise_attrs(strides, padding, data_format, dilations, op):
    return _window_attrs(2, strides, padding, data_format or "NHWC", dilations, op)


def depthwise_conv2d(input, filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None, name=None):
    """Depthwise 2-D convolution: each input channel is convolved with its own filters.

    ``out[b, i, j, c * M + m] = sum_{di, dj} x[b, i*s + di*d, j*s + dj*d, c] *
    filter[di, dj, c, m]`` for a filter ``[fh, fw, C, M]`` (M = channel multiplier).

    Args:
        input: A float Tensor ``[batch, height, width, C]`` (or "NCHW").
        filter: A Tensor ``[filter_height, filter_width, C, channel_multiplier]``.
        strides: An int or list of 1, 2 or 4 ints. Unlike TF, the two spatial strides
            may differ.
        padding: "SAME", "VALID" or explicit pairs.
        data_format: None or "NHWC" (default), or "NCHW".
        dilations: An int or list of 1 or 2 ints: the rate of atrous convolution.
        name: Unused (TF compatibility).

    Returns:
        A Tensor ``[batch, out_height, out_width, C * channel_multiplier]``.

    Raises:
        InvalidArgumentError: When the filter's channels differ from the input's.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.depthwise_conv2d(ef.ones([1, 3, 3, 2]), ef.ones([3, 3, 2, 4]),
        ...                        [1, 1, 1, 1], "SAME").shape
        TensorShape([1, 3, 3, 8])
    """
    return execute(DEPTHWISE_CONV, (input, filter),
                   _depthwise_attrs(strides, padding, data_format, dilations,
                                    "depthwise_conv2d"))


def depthwise_conv2d_backprop_input(input_sizes, filter, out_backprop, strides,  # noqa: A002
                                    padding, data_format="NHWC", dilations=None, name=None):
    """The gradient of ``depthwise_conv2d`` with respect to its input.

    Args:
        input_sizes: The input's shape (4 ints, a list or 1-D tensor).
        filter: A Tensor ``[fh, fw, C, channel_multiplier]``.
        out_backprop: The output gradient ``[batch, out_h, out_w, C * multiplier]``.
        strides: An int or list of 1, 2 or 4 ints.
        padding: "SAME", "VALID" or explicit pairs.
        data_format: "NHWC" (default) or "NCHW".
        dilations: An int or list of 1, 2 or 4 ints.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``input_sizes``.

    Example:
        >>> import eagerflow as ef
        >>> dx = ef.nn.depthwise_conv2d_backprop_input([1, 3, 3, 1], ef.ones([2, 2, 1, 1]),
        ...                                            ef.ones([1, 2, 2, 1]), 1, "VALID")
        >>> dx.numpy()[0, :, :, 0].tolist()
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    attrs = _depthwise_attrs(strides, padding, data_format, dilations,
                             "depthwise_conv2d_backprop_input")
    attrs["input_shape"] = _output_shape(input_sizes, out_backprop, filter, 2,
                                         attrs["data_format"],
                                         "depthwise_conv2d_backprop_input")
    return execute(DEPTHWISE_BACKPROP_INPUT, (out_backprop, filter), attrs)


def depthwise_conv2d_backprop_filter(input, filter_sizes, out_backprop, strides,  # noqa: A002
                                     padding, data_format="NHWC", dilations=None, name=None):
    """The gradient of ``depthwise_conv2d`` with respect to its filter.

    Args:
        input: The convolution's input ``[batch, height, width, C]``.
        filter_sizes: The filter's shape ``[fh, fw, C, multiplier]`` (list or 1-D tensor).
        out_backprop: The output gradient ``[batch, out_h, out_w, C * multiplier]``.
        strides: An int or list of 1, 2 or 4 ints.
        padding: "SAME", "VALID" or explicit pairs.
        data_format: "NHWC" (default) or "NCHW".
        dilations: An int or list of 1, 2 or 4 ints.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``filter_sizes``.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.depthwise_conv2d_backprop_filter(ef.ones([1, 3, 3, 1]), [2, 2, 1, 1],
        ...                                        ef.ones([1, 2, 2, 1]), 1, "VALID").shape
        TensorShape([2, 2, 1, 1])
    """
    op = "depthwise_conv2d_backprop_filter"
    attrs = _depthwise_attrs(strides, padding, data_format, dilations, op)
    if hasattr(filter_sizes, "numpy") or isinstance(filter_sizes, np.ndarray):
        filter_sizes = np.asarray(filter_sizes).reshape(-1).tolist()
    try:
        attrs["filter_shape"] = tuple(int(s) for s in filter_sizes)
    except (TypeError, ValueError):
        raise _bad(op, "filter_sizes must be 4 ints, got %r." % (filter_sizes,)) from None
    return execute(DEPTHWISE_BACKPROP_FILTER, (input, out_backprop), attrs)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     data_format=None, dilations=None, name=None):
    """A depthwise convolution followed by a 1x1 (pointwise) convolution.

    Args:
        input: A float Tensor ``[batch, height, width, C]`` (or "NCHW").
        depthwise_filter: A Tensor ``[fh, fw, C, channel_multiplier]``.
        pointwise_filter: A Tensor ``[1, 1, C * channel_multiplier, out_channels]``.
        strides: The depthwise convolution's strides (int or list of 1, 2 or 4 ints).
        padding: "SAME", "VALID" or explicit pairs (of the depthwise convolution).
        data_format: None or "NHWC" (default), or "NCHW".
        dilations: The depthwise convolution's dilations (int or list of 1 or 2 ints).
        name: Unused (TF compatibility).

    Returns:
        A Tensor ``[batch, out_height, out_width, out_channels]``.

    Raises:
        InvalidArgumentError: When the pointwise filter is not ``[1, 1, C * M, out]``.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.separable_conv2d(ef.ones([1, 4, 4, 2]), ef.ones([3, 3, 2, 2]),
        ...                        ef.ones([1, 1, 4, 6]), [1, 1, 1, 1], "VALID").shape
        TensorShape([1, 2, 2, 6])
    """
    op = "separable_conv2d"
    attrs = _depthwise_attrs(strides, padding, data_format, dilations, op)
    pshape = tuple(_shape_of(pointwise_filter))
    if len(pshape) != 4 or tuple(pshape[:2]) != (1, 1):
        raise _bad(op, "pointwise_filter must have shape [1, 1, in_channels * "
                   "channel_multiplier, out_channels], got %s." % (list(pshape),))
    depthwise = execute(DEPTHWISE_CONV, (input, depthwise_filter), attrs)
    pointwise = {"strides": (1, 1), "dilations": (1, 1), "padding": "VALID",
                 "data_format": attrs["data_format"]}
    return execute(CONV, (depthwise, pointwise_filter), pointwise)
