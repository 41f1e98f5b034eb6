"""``tf.image``: resize, crops and pads, flips, color adjustments, dtype conversion.

Every function is a composite of eagerflow ops on ``[height, width, channels]`` or
``[batch, height, width, channels]`` images, so it runs eagerly, traces, runs inside
``Dataset.map`` and differentiates where the math does.

Example:
    >>> import numpy as np, eagerflow as ef
    >>> img = np.arange(16, dtype=np.float32).reshape(4, 4, 1)
    >>> ef.image.resize(img, [2, 2]).numpy()[:, :, 0].tolist()
    [[2.5, 4.5], [10.5, 12.5]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import _api as api
from eagerflow import bitwise, random
from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.image.resize_weights import linear_weights, nearest_indices
from eagerflow.tensor import convert_to_tensor

__all__ = [
    "resize", "ResizeMethod", "flip_left_right", "flip_up_down", "random_flip_left_right",
    "random_flip_up_down", "central_crop", "crop_to_bounding_box", "pad_to_bounding_box",
    "resize_with_crop_or_pad", "random_crop", "adjust_brightness", "adjust_contrast",
    "adjust_saturation", "random_brightness", "random_contrast", "per_image_standardization",
    "convert_image_dtype", "rgb_to_grayscale", "grayscale_to_rgb", "rgb_to_hsv",
    "hsv_to_rgb",
]


class ResizeMethod:
    """The names ``image.resize`` accepts (``tf.image.ResizeMethod``)."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


_METHODS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
            "mitchellcubic")


def _image(images, op, ranks=(3, 4)):
    x = convert_to_tensor(images)
    if x.ndim not in ranks:
        raise errors.InvalidArgumentError(
            None, op, "%s needs a [height, width, channels] or [batch, height, width, "
            "channels] image, got shape %s." % (op, x.shape.as_list()))
    return x


def _hw(x):
    shape = x.shape.as_list()
    return shape[-3], shape[-2]


def _size(size, op):
    from eagerflow.ops.array import int_tuple

    size = int_tuple(size, op, "size")
    if None in size:
        # The sampling weights are computed when tracing, from the sizes.
        raise errors.UnimplementedError(
            None, op, "%s: size must be known when tracing (ints, or computed from static "
            "shapes); got %s, known only when the graph runs." % (op, list(size)))
    if len(size) != 2 or any(int(s) <= 0 for s in size):
        raise errors.InvalidArgumentError(
            None, op, "%s: size must be [new_height, new_width] of positive ints, got %s."
            % (op, size))
    return int(size[0]), int(size[1])


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None):
    """Resizes images to ``size`` with TF's sampling (``tf.image.resize``).

    Args:
        images: ``[h, w, c]`` or ``[b, h, w, c]``.
        size: ``[new_height, new_width]``.
        method: A ResizeMethod name: bilinear, nearest, bicubic, area, lanczos3, lanczos5,
            gaussian, mitchellcubic.
        preserve_aspect_ratio: Fit inside ``size`` keeping the aspect ratio.
        antialias: Widen the kernel when downsampling (bilinear, bicubic and the
            scale-and-translate kernels), as TF does.
        name: Unused.

    Returns:
        float32 images (the input dtype for ``nearest``), same rank as ``images``.
    """
    method = getattr(method, "value", method)
    if method not in _METHODS:
        raise errors.InvalidArgumentError(
            None, "ResizeImages", "resize: method must be one of %s, got %r."
            % (", ".join(_METHODS), method))
    x = _image(images, "ResizeImages")
    h, w = _hw(x)
    oh, ow = _size(size, "ResizeImages")
    if preserve_aspect_ratio:
        scale = min(oh / h, ow / w)
        oh, ow = max(int(round(h * scale)), 1), max(int(round(w * scale)), 1)
    if method == "nearest":
        rows = api.gather(x, nearest_indices(h, oh), axis=-3)
        return api.gather(rows, nearest_indices(w, ow), axis=-2)
    if x.dtype not in (d.float32, d.float64, d.float16):
        x = api.cast(x, d.float32)
    compute = d.float64 if x.dtype is d.float64 else d.float32
    x = api.cast(x, compute)
    wy = convert_to_tensor(linear_weights(h, oh, method, antialias).astype(compute.np_dtype))
    wx = convert_to_tensor(linear_weights(w, ow, method, antialias).astype(compute.np_dtype))
    # out[..., i, j, c] = sum_y sum_x wy[i, y] wx[j, x] x[..., y, x, c]
    out = api.einsum("iy,...yxc->...ixc", wy, x)
    out = api.einsum("jx,...ixc->...ijc", wx, out)
    return api.cast(out, d.float32) if compute is not d.float32 and x.dtype is not d.float64 \
        else out


# -- flips, crops, pads ---------------------------------------------------------------------
def flip_left_right(image):
    """Mirrors images horizontally (the width axis)."""
    x = _image(image, "flip_left_right")
    return api.reverse(x, [-2])


def flip_up_down(image):
    """Mirrors images vertically (the height axis)."""
    x = _image(image, "flip_up_down")
    return api.reverse(x, [-3])


def _random_flip(image, seed, axis, op):
    x = _image(image, op)
    if x.ndim == 3:
        flip = random.uniform([], seed=seed) < 0.5
        return api.where(flip, api.reverse(x, [axis]), x)
    n = x.shape[0]
    flip = api.reshape(random.uniform([n], seed=seed) < 0.5, [n, 1, 1, 1])
    return api.where(flip, api.reverse(x, [axis]), x)


def random_flip_left_right(image, seed=None):
    """Flips each image horizontally with probability 1/2."""
    return _random_flip(image, seed, -2, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """Flips each image vertically with probability 1/2."""
    return _random_flip(image, seed, -3, "random_flip_up_down")


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The ``[target_height, target_width]`` box at the offsets (``tf.image``'s)."""
    x = _image(image, "crop_to_bounding_box")
    h, w = _hw(x)
    oh, ow, th, tw = (int(v) for v in (offset_height, offset_width, target_height,
                                       target_width))
    if oh < 0 or ow < 0 or th <= 0 or tw <= 0 or oh + th > h or ow + tw > w:
        raise errors.InvalidArgumentError(
            None, "crop_to_bounding_box", "crop_to_bounding_box: the box (offset %d,%d size "
            "%dx%d) does not fit an image of %dx%d." % (oh, ow, th, tw, h, w))
    return x[..., oh:oh + th, ow:ow + tw, :]


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """Zero-pads images to ``[target_height, target_width]`` with the image at the offsets."""
    x = _image(image, "pad_to_bounding_box")
    h, w = _hw(x)
    oh, ow, th, tw = (int(v) for v in (offset_height, offset_width, target_height,
                                       target_width))
    if oh < 0 or ow < 0 or th < oh + h or tw < ow + w:
        raise errors.InvalidArgumentError(
            None, "pad_to_bounding_box", "pad_to_bounding_box: a %dx%d image at offset %d,%d "
            "does not fit in %dx%d." % (h, w, oh, ow, th, tw))
    pads = [[oh, th - oh - h], [ow, tw - ow - w], [0, 0]]
    if x.ndim == 4:
        pads = [[0, 0]] + pads
    return api.pad(x, pads)


def resize_with_crop_or_pad(image, target_height, target_width):
    """Centre-crops or zero-pads images to the target size (``tf.image``'s)."""
    x = _image(image, "resize_with_crop_or_pad")
    h, w = _hw(x)
    th, tw = int(target_height), int(target_width)
    crop_h, crop_w = max(h - th, 0), max(w - tw, 0)
    x = crop_to_bounding_box(x, crop_h // 2, crop_w // 2, min(h, th), min(w, tw))
    h, w = _hw(x)
    pad_h, pad_w = th - h, tw - w
    return pad_to_bounding_box(x, pad_h // 2, pad_w // 2, th, tw)


def central_crop(image, central_fraction):
    """The central ``central_fraction`` of each side (``tf.image.central_crop``)."""
    x = _image(image, "central_crop")
    if not 0.0 < central_fraction <= 1.0:
        raise errors.InvalidArgumentError(
            None, "central_crop", "central_crop: central_fraction must be in (0, 1], got %r."
            % central_fraction)
    if central_fraction == 1.0:
        return x
    h, w = _hw(x)
    # TF's arithmetic: start = int((size - size * fraction) / 2).
    top = int((h - h * central_fraction) / 2)
    left = int((w - w * central_fraction) / 2)
    return x[..., top:h - top, left:w - left, :]


def random_crop(value, size, seed=None, name=None):
    """A random ``size`` slice of ``value`` (any rank; ``tf.image.random_crop``)."""
    x = convert_to_tensor(value)
    shape = x.shape.as_list()
    size = [int(s) for s in (size.numpy().tolist() if hasattr(size, "numpy") else size)]
    if len(size) != len(shape) or any(s > n or s < 0 for s, n in zip(size, shape)):
        raise errors.InvalidArgumentError(
            None, "random_crop", "random_crop: size %s must have one entry per dimension of "
            "%s, each no larger." % (size, shape))
    limits = [n - s + 1 for s, n in zip(size, shape)]
    u = random.uniform([len(shape)], seed=seed).numpy()
    offsets = [int(min(np.floor(ui * lim), lim - 1)) for ui, lim in zip(u, limits)]
    return api.slice(x, offsets, size)


# -- colour --------------------------------------------------------------------------------
def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Converts between image dtypes, rescaling values as TF does.

    Integers map to [0, max]; floats to [0, 1]: int to float divides by the integer
    maximum, float to int multiplies by ``max + 0.5`` and truncates, int to int shifts.
    """
    x = convert_to_tensor(image)
    dtype = d.as_dtype(dtype)
    src = x.dtype
    if src is dtype:
        return x
    if src.is_integer and dtype.is_integer:
        sb, db = src.size * 8 - (0 if src.is_unsigned else 1), dtype.size * 8 - (
            0 if dtype.is_unsigned else 1)
        if sb > db:
            return api.cast(bitwise.right_shift(x, api.cast(sb - db, src)), dtype)
        return api.cast(x, dtype) * api.cast(2 ** (db - sb), dtype) if db > sb else \
            api.cast(x, dtype)
    if src.is_integer:
        return api.cast(x, dtype) * (1.0 / src.max)
    if dtype.is_integer:
        scaled = x * (dtype.max + 0.5)
        return api.saturate_cast(scaled, dtype) if saturate else api.cast(scaled, dtype)
    return api.cast(x, dtype)


def adjust_brightness(image, delta):
    """Adds ``delta`` to every value (in [0, 1] float space for integer images)."""
    x = convert_to_tensor(image)
    if x.dtype.is_floating:
        return x + api.cast(delta, x.dtype)
    f = convert_image_dtype(x, d.float32)
    return convert_image_dtype(f + delta, x.dtype, saturate=True)


def adjust_contrast(images, contrast_factor):
    """``(x - mean) * factor + mean`` with each image's per-channel mean."""
    x = _image(images, "adjust_contrast")
    orig = x.dtype
    f = x if orig.is_floating else api.cast(x, d.float32)
    mean = api.reduce_mean(f, axis=[-3, -2], keepdims=True)
    out = (f - mean) * api.cast(contrast_factor, f.dtype) + mean
    return out if orig.is_floating else api.saturate_cast(out, orig)


def rgb_to_grayscale(images, name=None):
    """Luma ``0.2989 R + 0.5870 G + 0.1140 B`` as one channel."""
    x = convert_to_tensor(images)
    f = convert_image_dtype(x, d.float32)
    weights = convert_to_tensor(np.array([0.2989, 0.5870, 0.1140], np.float32))
    gray = api.reduce_sum(f * weights, axis=-1, keepdims=True)
    return convert_image_dtype(gray, x.dtype)


def grayscale_to_rgb(images, name=None):
    """Repeats the single channel three times."""
    x = convert_to_tensor(images)
    if x.shape.as_list()[-1] != 1:
        raise errors.InvalidArgumentError(
            None, "grayscale_to_rgb", "grayscale_to_rgb needs 1 channel, got shape %s."
            % x.shape.as_list())
    return api.concat([x, x, x], -1)


def rgb_to_hsv(images, name=None):
    """RGB in [0, 1] to HSV in [0, 1] (hue as a fraction of the circle)."""
    x = convert_to_tensor(images)
    r, g, b = api.unstack(x, axis=-1)
    value = api.reduce_max(x, axis=-1)
    minimum = api.reduce_min(x, axis=-1)
    rng = value - minimum
    safe_v = api.where(value > 0, value, api.ones_like(value))
    saturation = api.where(value > 0, rng / safe_v, api.zeros_like(value))
    safe = api.where(rng > 0, rng, api.ones_like(rng))
    hr = (g - b) / safe
    hg = (b - r) / safe + 2.0
    hb = (r - g) / safe + 4.0
    hue = api.where(api.equal(value, r), hr, api.where(api.equal(value, g), hg, hb))
    hue = api.where(rng > 0, hue / 6.0, api.zeros_like(hue))
    hue = api.where(hue < 0, hue + 1.0, hue)
    return api.stack([hue, saturation, value], axis=-1)


def hsv_to_rgb(images, name=None):
    """HSV in [0, 1] to RGB in [0, 1]."""
    x = convert_to_tensor(images)
    h, s, v = api.unstack(x, axis=-1)
    dh = h * 6.0
    r = api.clip_by_value(api.abs(dh - 3.0) - 1.0, 0.0, 1.0)
    g = api.clip_by_value(2.0 - api.abs(dh - 2.0), 0.0, 1.0)
    b = api.clip_by_value(2.0 - api.abs(dh - 4.0), 0.0, 1.0)
    rgb = api.stack([r, g, b], axis=-1)
    return (1.0 - api.expand_dims(s, -1) + api.expand_dims(s, -1) * rgb) * \
        api.expand_dims(v, -1)


def adjust_saturation(image, saturation_factor, name=None):
    """Scales saturation in HSV space by ``saturation_factor`` (clipped to [0, 1])."""
    x = convert_to_tensor(image)
    f = convert_image_dtype(x, d.float32)
    hsv = rgb_to_hsv(f)
    h, s, v = api.unstack(hsv, axis=-1)
    s = api.clip_by_value(s * saturation_factor, 0.0, 1.0)
    return convert_image_dtype(hsv_to_rgb(api.stack([h, s, v], axis=-1)), x.dtype)


def random_brightness(image, max_delta, seed=None):
    """``adjust_brightness`` by a delta uniform in ``[-max_delta, max_delta)``."""
    if max_delta < 0:
        raise errors.InvalidArgumentError(
            None, "random_brightness", "max_delta must be non-negative, got %r." % max_delta)
    delta = random.uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image, lower, upper, seed=None):
    """``adjust_contrast`` by a factor uniform in ``[lower, upper)``."""
    if not 0 <= lower < upper:
        raise errors.InvalidArgumentError(
            None, "random_contrast", "need 0 <= lower < upper, got %r, %r." % (lower, upper))
    factor = random.uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


def per_image_standardization(image):
    """``(x - mean) / max(stddev, 1 / sqrt(N))`` per image (``tf.image``'s)."""
    x = _image(image, "per_image_standardization")
    f = api.cast(x, d.float32) if not x.dtype.is_floating else x
    h, w = _hw(f)
    n = h * w * f.shape.as_list()[-1]
    mean = api.reduce_mean(f, axis=[-3, -2, -1], keepdims=True)
    std = api.sqrt(api.reduce_mean(api.square(f - mean), axis=[-3, -2, -1], keepdims=True))
    floor = api.cast(1.0 / np.sqrt(n), f.dtype)
    return (f - mean) / api.maximum(std, floor)
