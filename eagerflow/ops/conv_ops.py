"""Convolutions: ``tf.nn.conv1d/conv2d/conv3d``, ``convolution``, transposed and depthwise.

One N-D primitive (1 to 3 spatial dimensions) computes every convolution::

    out[n, p, o] = sum_{k, c} pad(x)[n, p * stride + k * dilation, g(o) * Cg + c] * w[k, c, o]

where ``p`` runs over output positions, ``k`` over kernel taps, ``g(o) = o // (O / groups)``
is the group of output channel ``o`` and ``Cg = C / groups`` (``groups = 1`` for a plain
convolution, ``groups = C`` for a depthwise one).

The family lives in one module per concept; this module re-exports their public names and
the geometry helpers :mod:`eagerflow.ops.pool_ops` uses:

* :mod:`eagerflow.ops.window_geometry`: data formats, attribute checks, output sizes, SAME
  padding and window views, shared with pooling.
* :mod:`eagerflow.ops.conv_kernels`: the ``Conv``, ``ConvBackpropInput`` and
  ``ConvBackpropFilter`` primitives (plain and depthwise).
* :mod:`eagerflow.ops.conv_public`: the ``tf.nn`` functions.

Example:
    >>> import eagerflow as ef
    >>> x = ef.ones([1, 4, 4, 1])
    >>> w = ef.ones([3, 3, 1, 1])
    >>> ef.nn.conv2d(x, w, strides=1, padding="SAME")[0, :, :, 0].numpy().tolist()[0]
    [4.0, 6.0, 6.0, 4.0]
"""

from __future__ import annotations

from eagerflow.ops.conv_public import (  # noqa: F401
    conv1d, conv2d, conv3d, convolution, conv1d_transpose, conv2d_transpose, conv3d_transpose,
    conv_transpose, depthwise_conv2d, separable_conv2d, atrous_conv2d,
    depthwise_conv2d_backprop_input, depthwise_conv2d_backprop_filter,
)

# The family's primitives and constants, and the helpers that other modules and tests
# reach through this module.
from eagerflow.ops.window_geometry import (  # noqa: F401
    CHANNELS_FIRST, ConvGeometry, FORMATS, check_window_attrs, conv_geometry, crop_spatial,
    from_channels_last, normalize_format, normalize_ints, normalize_padding, pad_spatial,
    spatial_geometry, spatial_rank, tap_slices, to_channels_last, windows,
)
from eagerflow.ops.conv_kernels import (  # noqa: F401
    CONV, CONV_BACKPROP_FILTER, CONV_BACKPROP_INPUT, DEPTHWISE_BACKPROP_FILTER,
    DEPTHWISE_BACKPROP_INPUT, DEPTHWISE_CONV, _attrs,
)

__all__ = [
    "conv1d", "conv2d", "conv3d", "convolution", "conv1d_transpose", "conv2d_transpose",
    "conv3d_transpose", "conv_transpose", "depthwise_conv2d", "separable_conv2d", "atrous_conv2d",
    "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter",
]

# Each part lists its own names in its EXPORTS (scripts/gen_api.py takes every name from
# exactly one module).
EXPORTS = {}
