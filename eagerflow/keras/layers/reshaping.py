"""Layers that move values without arithmetic on them: Flatten, Reshape, Permute,
RepeatVector, ZeroPadding1D/2D/3D, Cropping1D/2D, UpSampling1D/2D (UpSampling2D's bilinear
mode interpolates).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layers.Flatten()(ef.ones([2, 3, 4])).shape
    TensorShape([2, 12])
"""

from __future__ import annotations

import math
import numbers

import numpy as np

import eagerflow as ef
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import InputSpec, Layer
from eagerflow.tensor_shape import TensorShape

__all__ = ["Flatten", "Reshape", "Permute", "RepeatVector", "ZeroPadding1D", "ZeroPadding2D",
           "ZeroPadding3D", "Cropping1D", "Cropping2D", "UpSampling1D", "UpSampling2D"]


def _dims(shape):
    return TensorShape(shape).as_list()


class Flatten(Layer):
    """Flattens every axis but the batch axis: ``(b, d1, ..., dn) -> (b, d1 * ... * dn)``.

    Args:
        data_format: ``"channels_first"`` inputs are moved to channels-last order first, so
            both formats flatten features in the same order.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Flatten()(ef.ones([2])).shape
        TensorShape([2, 1])
    """

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = layer_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        rank = inputs.shape.rank
        if self.data_format == "channels_first" and rank >= 3:
            inputs = ef.transpose(inputs, [0] + list(range(2, rank)) + [1])
        if rank == 1:
            return ef.expand_dims(inputs, 1)
        inner = _dims(inputs.shape)[1:]
        if all(d is not None for d in inner):
            return ef.reshape(inputs, [-1, math.prod(inner)])
        return ef.reshape(inputs, [layer_utils.static_or_dynamic_shape(inputs)[0], -1])

    def compute_output_shape(self, input_shape):
        dims = _dims(input_shape)
        if len(dims) == 1:
            return TensorShape([dims[0], 1])
        inner = dims[1:]
        flat = math.prod(inner) if all(d is not None for d in inner) else None
        return TensorShape([dims[0], flat])

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


class Reshape(Layer):
    """Reshapes the non-batch axes to ``target_shape`` (one entry may be -1: inferred).

    Args:
        target_shape: Tuple of ints, without the batch axis.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For more than one -1, non-positive sizes, or a size that cannot hold
            the input.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Reshape((3, -1))(ef.ones([2, 12])).shape
        TensorShape([2, 3, 4])
    """

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        try:
            target = tuple(int(d) for d in target_shape)
        except (TypeError, ValueError):
            raise ValueError("Reshape: target_shape must be a tuple of ints, got %r."
                             % (target_shape,)) from None
        if sum(d == -1 for d in target) > 1 or any(d == 0 or d < -1 for d in target):
            raise ValueError("Reshape: target_shape may contain one -1 (inferred) and otherwise "
                             "positive sizes, got %r." % (target_shape,))
        self.target_shape = target

    def _resolve(self, input_shape):
        inner = _dims(input_shape)[1:]
        if any(d is None for d in inner):
            return tuple(None if d == -1 else d for d in self.target_shape)
        total = math.prod(inner)
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape:
            if known == 0 or total % known:
                raise ValueError("Reshape %s: total size of the new array must be unchanged, "
                                 "input_shape = %s, output_shape = %s"
                                 % (self.name, inner, list(self.target_shape)))
            return tuple(total // known if d == -1 else d for d in self.target_shape)
        if known != total:
            raise ValueError("Reshape %s: total size of the new array must be unchanged, "
                             "input_shape = %s, output_shape = %s"
                             % (self.name, inner, list(self.target_shape)))
        return self.target_shape

    def call(self, inputs):
        inputs = ef.convert_to_tensor(inputs)
        target = self._resolve(inputs.shape)
        if all(d is not None for d in target):
            return ef.reshape(inputs, [-1] + list(target))
        return ef.reshape(inputs, [layer_utils.static_or_dynamic_shape(inputs)[0]]
                          + list(self.target_shape))

    def compute_output_shape(self, input_shape):
        return TensorShape([_dims(input_shape)[0]] + list(self._resolve(input_shape)))

    def get_config(self):
        config = super().get_config()
        config["target_shape"] = self.target_shape
        return config


class Permute(Layer):
    """Permutes the non-batch axes: ``dims`` are 1-based, e.g. ``(2, 1)`` swaps axes 1 and 2.

    Args:
        dims: A permutation of ``1..n``.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: If ``dims`` is not a permutation of ``1..n``.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Permute((2, 1))(ef.ones([4, 2, 3])).shape
        TensorShape([4, 3, 2])
    """

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        dims = tuple(dims)
        if sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set of "
                             "indices in `dims` must be consecutive and start from 1. Received "
                             "dims=%r" % (dims,))
        self.dims = dims
        self.input_spec = InputSpec(ndim=len(dims) + 1)
        self.supports_masking = True

    def call(self, inputs):
        return ef.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape):
        dims = _dims(input_shape)
        return TensorShape([dims[0]] + [dims[d] for d in self.dims])

    def get_config(self):
        config = super().get_config()
        config["dims"] = self.dims
        return config


class RepeatVector(Layer):
    """Repeats a ``(batch, features)`` input ``n`` times: ``(batch, n, features)``.

    Args:
        n: Positive number of repetitions.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: If ``n`` is not a positive int.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.RepeatVector(3)(ef.ones([2, 5])).shape
        TensorShape([2, 3, 5])
    """

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = layer_utils.check_positive_int(n, "n", "RepeatVector")
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        return ef.tile(ef.expand_dims(inputs, 1), [1, self.n, 1])

    def compute_output_shape(self, input_shape):
        dims = _dims(input_shape)
        return TensorShape([dims[0], self.n, dims[1]])

    def get_config(self):
        config = super().get_config()
        config["n"] = self.n
        return config


def _pairs(value, rank, name, allow_zero=True):
    """An int, ``rank`` ints, or ``rank`` pairs -> ``rank`` (before, after) pairs."""
    def bad():
        return ValueError("`%s` should be an int, a tuple of %d ints, or a tuple of %d tuples "
                          "of 2 non-negative ints. Received: %s=%r"
                          % (name, rank, rank, name, value))

    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if value < 0:
            raise bad()
        return ((int(value), int(value)),) * rank
    try:
        items = tuple(value)
    except TypeError:
        raise bad() from None
    if rank == 1 and len(items) == 2 and all(isinstance(v, numbers.Integral) for v in items):
        if min(items) < 0:
            raise bad()
        return ((int(items[0]), int(items[1])),)
    if len(items) != rank:
        raise bad()
    out = []
    for item in items:
        if isinstance(item, numbers.Integral) and not isinstance(item, bool):
            pair = (int(item), int(item))
        else:
            try:
                pair = layer_utils.normalize_tuple(item, 2, name, allow_zero=allow_zero)
            except ValueError:
                raise bad() from None
        if min(pair) < 0:
            raise bad()
        out.append(pair)
    return tuple(out)


def _spatial_axes(rank, data_format):
    return list(range(2, rank + 2)) if data_format == "channels_first" else list(
        range(1, rank + 1))


class _ZeroPadding(Layer):
    _rank = 2

    def __init__(self, padding, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = layer_utils.normalize_data_format(data_format)
        self.padding = _pairs(padding, self._rank, "padding")
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def call(self, inputs):
        paddings = [[0, 0] for _ in range(self._rank + 2)]
        for axis, pair in zip(_spatial_axes(self._rank, self.data_format), self.padding):
            paddings[axis] = list(pair)
        return ef.pad(inputs, paddings)

    def compute_output_shape(self, input_shape):
        dims = _dims(input_shape)
        for axis, (a, b) in zip(_spatial_axes(self._rank, self.data_format), self.padding):
            dims[axis] = None if dims[axis] is None else dims[axis] + a + b
        return TensorShape(dims)

    def get_config(self):
        config = super().get_config()
        config.update({"padding": self.padding, "data_format": self.data_format})
        return config


class ZeroPadding1D(_ZeroPadding):
    """Pads the steps axis of ``(batch, steps, features)`` with zeros.

    Args:
        padding: Int (both sides) or ``(left, right)``.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.ZeroPadding1D((1, 2))(ef.ones([1, 3, 2])).shape
        TensorShape([1, 6, 2])
    """

    _rank = 1

    def __init__(self, padding=1, **kwargs):
        kwargs.pop("data_format", None)
        super().__init__(padding, data_format="channels_last", **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("data_format")
        config["padding"] = self.padding[0]
        return config


class ZeroPadding2D(_ZeroPadding):
    """Pads rows and columns of an image with zeros.

    Args:
        padding: Int, ``(rows, cols)`` (symmetric), or ``((top, bottom), (left, right))``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For malformed or negative padding.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.ZeroPadding2D(((1, 0), (2, 2)))(ef.ones([1, 3, 3, 1])).shape
        TensorShape([1, 4, 7, 1])
    """

    _rank = 2

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding3D(_ZeroPadding):
    """Pads the three spatial axes of a volume with zeros.

    Args:
        padding: Int, 3 ints, or 3 ``(before, after)`` pairs.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.ZeroPadding3D(1)(ef.ones([1, 2, 2, 2, 1])).shape
        TensorShape([1, 4, 4, 4, 1])
    """

    _rank = 3

    def __init__(self, padding=(1, 1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class _Cropping(Layer):
    _rank = 2

    def __init__(self, cropping, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = layer_utils.normalize_data_format(data_format)
        self.cropping = _pairs(cropping, self._rank, "cropping")
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def _check(self, dims):
        for axis, (a, b) in zip(_spatial_axes(self._rank, self.data_format), self.cropping):
            if dims[axis] is not None and a + b >= dims[axis]:
                raise ValueError("%s %s: cropping %s is too large for input shape %s: nothing "
                                 "would be left." % (type(self).__name__, self.name,
                                                     self.cropping, dims))

    def call(self, inputs):
        dims = _dims(inputs.shape)
        self._check(dims)
        index = [slice(None)] * len(dims)
        for axis, (a, b) in zip(_spatial_axes(self._rank, self.data_format), self.cropping):
            index[axis] = slice(a, -b if b else None)
        return inputs[tuple(index)]

    def compute_output_shape(self, input_shape):
        dims = _dims(input_shape)
        self._check(dims)
        for axis, (a, b) in zip(_spatial_axes(self._rank, self.data_format), self.cropping):
            dims[axis] = None if dims[axis] is None else dims[axis] - a - b
        return TensorShape(dims)

    def get_config(self):
        config = super().get_config()
        config.update({"cropping": self.cropping, "data_format": self.data_format})
        return config


class Cropping1D(_Cropping):
    """Crops the steps axis of ``(batch, steps, features)``.

    Args:
        cropping: Int (both ends) or ``(start, end)``.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Cropping1D((1, 2))(ef.ones([1, 6, 2])).shape
        TensorShape([1, 3, 2])
    """

    _rank = 1

    def __init__(self, cropping=(1, 1), **kwargs):
        kwargs.pop("data_format", None)
        super().__init__(cropping, data_format="channels_last", **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("data_format")
        config["cropping"] = self.cropping[0]
        return config


class Cropping2D(_Cropping):
    """Crops rows and columns of an image.

    Args:
        cropping: Int, ``(rows, cols)`` (symmetric), or ``((top, bottom), (left, right))``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Cropping2D(((1, 0), (1, 1)))(ef.ones([1, 4, 4, 1])).shape
        TensorShape([1, 3, 2, 1])
    """

    _rank = 2

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)


class UpSampling1D(Layer):
    """Repeats each step ``size`` times along the steps axis.

    Args:
        size: Positive repetition factor.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.UpSampling1D(2)(ef.ones([1, 3, 2])).shape
        TensorShape([1, 6, 2])
    """

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = layer_utils.check_positive_int(size, "size", "UpSampling1D")
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        return ef.repeat(inputs, self.size, axis=1)

    def compute_output_shape(self, input_shape):
        dims = _dims(input_shape)
        dims[1] = None if dims[1] is None else dims[1] * self.size
        return TensorShape(dims)

    def get_config(self):
        config = super().get_config()
        config["size"] = self.size
        return config


def _bilinear_taps(in_size, factor):
    """Source indices and weights of half-pixel-centre bilinear resizing by ``factor``
    (what ``tf.image.resize(method="bilinear")`` computes)."""
    out = np.arange(in_size * factor, dtype=np.float64)
    src = (out + 0.5) / factor - 0.5
    floor = np.floor(src)
    lower = np.maximum(floor, 0).astype(np.int32)
    upper = np.minimum(np.ceil(src), in_size - 1).astype(np.int32)
    return lower, upper, src - floor


class UpSampling2D(Layer):
    """Enlarges images by integer factors.

    ``"nearest"`` repeats each row ``size[0]`` times and each column ``size[1]`` times.
    ``"bilinear"`` samples output pixel ``i`` at source coordinate ``(i + 0.5) / s - 0.5``
    (half-pixel centres, clamped at the border) and interpolates linearly between the two
    nearest source pixels along each axis, as ``tf.image.resize(method="bilinear")``.

    Args:
        size: Int or ``(rows, cols)`` factors.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        interpolation: ``"nearest"`` or ``"bilinear"``.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For other interpolations or non-positive sizes.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.UpSampling2D(2)(ef.ones([1, 2, 3, 1])).shape
        TensorShape([1, 4, 6, 1])
    """

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.size = layer_utils.normalize_tuple(size, 2, "size")
        self.data_format = layer_utils.normalize_data_format(data_format)
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError("UpSampling2D: interpolation must be 'nearest' or 'bilinear', got "
                             "%r." % (interpolation,))
        self.interpolation = interpolation
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        axes = _spatial_axes(2, self.data_format)
        out = inputs
        for axis, factor in zip(axes, self.size):
            if factor == 1:
                continue
            if self.interpolation == "nearest":
                out = ef.repeat(out, factor, axis=axis)
                continue
            n = out.shape[axis]
            if n is None:
                raise ValueError("UpSampling2D %s: bilinear interpolation needs known spatial "
                                 "sizes, got input shape %s." % (self.name, inputs.shape))
            lower, upper, frac = _bilinear_taps(n, factor)
            shape = [1] * 4
            shape[axis] = len(frac)
            w = ef.constant(frac.reshape(shape), dtype=out.dtype)
            lo = ef.gather(out, lower, axis=axis)
            hi = ef.gather(out, upper, axis=axis)
            out = lo + (hi - lo) * w
        return out

    def compute_output_shape(self, input_shape):
        dims = _dims(input_shape)
        for axis, factor in zip(_spatial_axes(2, self.data_format), self.size):
            dims[axis] = None if dims[axis] is None else dims[axis] * factor
        return TensorShape(dims)

    def get_config(self):
        config = super().get_config()
        config.update({"size": self.size, "data_format": self.data_format,
                       "interpolation": self.interpolation})
        return config
