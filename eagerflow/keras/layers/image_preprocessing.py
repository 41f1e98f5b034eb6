"""Keras image preprocessing and augmentation layers.

``Rescaling``, ``Resizing`` and ``CenterCrop`` always apply. The ``Random*`` layers change
their input only in training (``training=True``, as ``fit`` passes); at inference they
return it unchanged (``RandomCrop`` centre-crops). They are built from eagerflow ops, so
they run inside models, in ``Dataset.map`` and in traced functions.

Geometric layers sample the input at transformed coordinates (bilinear or nearest) and
fill outside points as Keras does (``reflect`` by default, or ``wrap``, ``nearest``,
``constant``).

Example:
    >>> import numpy as np
    >>> from eagerflow.keras import layers
    >>> x = np.ones((1, 4, 4, 3), np.float32) * 255
    >>> float(layers.Rescaling(1 / 255)(x).numpy().max())
    1.0
"""

from __future__ import annotations

import math
import reprlib

import numpy as np

import eagerflow as ef
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import Layer

_show = reprlib.repr  # bounded: a hostile argument cannot make the message loop

__all__ = ["Rescaling", "Resizing", "CenterCrop", "RandomFlip", "RandomRotation",
           "RandomZoom", "RandomTranslation", "RandomCrop", "RandomContrast",
           "RandomBrightness"]


def _batched(inputs):
    x = ef.convert_to_tensor(inputs)
    if x.ndim == 3:
        return ef.expand_dims(x, 0), True
    if x.ndim != 4:
        raise ValueError("image layers need [height, width, channels] or [batch, height, "
                         "width, channels] inputs, got shape %s." % x.shape.as_list())
    return x, False


def _unbatch(x, single):
    return x[0] if single else x


def _is_training(training):
    flag = layer_utils.training_flag(training)
    return bool(flag)  # a tensor flag (None) is treated as inference


class Rescaling(Layer):
    """``x * scale + offset`` (e.g. ``scale=1/255`` maps pixels to [0, 1])."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.offset = offset

    def call(self, inputs):
        x = ef.convert_to_tensor(inputs)
        dtype = self.compute_dtype if hasattr(self, "compute_dtype") else "float32"
        x = ef.cast(x, dtype)
        return x * ef.cast(self.scale, dtype) + ef.cast(self.offset, dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"scale": self.scale, "offset": self.offset})
        return config


class Resizing(Layer):
    """Resizes images to ``(height, width)`` with ``image.resize``.

    ``crop_to_aspect_ratio=True`` first centre-crops to the target aspect ratio.
    """

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0,
                 antialias=False, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = int(height), int(width)
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.antialias = bool(antialias)

    def call(self, inputs):
        x, single = _batched(inputs)
        if self.crop_to_aspect_ratio:
            h, w = x.shape[1], x.shape[2]
            target = self.width / self.height
            ch, cw = (h, int(round(h * target))) if w / h > target else \
                (int(round(w / target)), w)
            ch, cw = min(ch, h), min(cw, w)
            x = ef.image.crop_to_bounding_box(x, (h - ch) // 2, (w - cw) // 2, ch, cw)
        out = ef.image.resize(x, [self.height, self.width], method=self.interpolation,
                              antialias=self.antialias)
        return _unbatch(out, single)

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width,
                       "interpolation": self.interpolation,
                       "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                       "antialias": self.antialias})
        return config


class CenterCrop(Layer):
    """Crops the centre ``(height, width)``; smaller inputs are resized up first (Keras)."""

    def __init__(self, height, width, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = int(height), int(width)

    def call(self, inputs):
        x, single = _batched(inputs)
        h, w = x.shape[1], x.shape[2]
        if h < self.height or w < self.width:
            x = ef.image.resize(x, [max(h, self.height), max(w, self.width)])
            h, w = x.shape[1], x.shape[2]
        out = ef.image.crop_to_bounding_box(x, (h - self.height) // 2, (w - self.width) // 2,
                                            self.height, self.width)
        return _unbatch(out, single)

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width})
        return config


class _RandomLayer(Layer):
    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self._generator = ef.random.Generator.from_seed(seed) if seed is not None else \
            ef.random.Generator.from_non_deterministic_state()

    def _uniform(self, shape, low, high):
        return self._generator.uniform(shape, low, high)

    def get_config(self):
        config = super().get_config()
        config["seed"] = self.seed
        return config


def _range(factor, name, symmetric=True):
    if isinstance(factor, (tuple, list)):
        low, high = float(factor[0]), float(factor[1])
    else:
        low, high = (-float(factor), float(factor)) if symmetric else (0.0, float(factor))
    if low > high:
        raise ValueError("%s: the factor's lower bound %r exceeds its upper bound %r."
                         % (name, low, high))
    return low, high


class RandomFlip(_RandomLayer):
    """Flips images at random in training: ``"horizontal"``, ``"vertical"`` or both."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError("RandomFlip: unknown mode %s." % _show(mode))
        self.mode = mode

    def call(self, inputs, training=True):
        x, single = _batched(inputs)
        if not _is_training(training):
            return _unbatch(x, single)
        n = x.shape[0]
        if "horizontal" in self.mode:
            flip = ef.reshape(self._uniform([n], 0.0, 1.0) < 0.5, [n, 1, 1, 1])
            x = ef.where(flip, ef.reverse(x, [2]), x)
        if "vertical" in self.mode:
            flip = ef.reshape(self._uniform([n], 0.0, 1.0) < 0.5, [n, 1, 1, 1])
            x = ef.where(flip, ef.reverse(x, [1]), x)
        return _unbatch(x, single)

    def get_config(self):
        config = super().get_config()
        config["mode"] = self.mode
        return config


def _fill_index(idx, size, mode):
    """Maps integer source indices into [0, size) by the fill mode; also a validity mask."""
    size_f = float(size)
    if mode == "reflect":
        period = 2.0 * size_f
        m = idx - period * ef.floor(idx / period)
        idx = ef.where(m >= size_f, period - 1.0 - m, m)
        return idx, None
    if mode == "wrap":
        return idx - size_f * ef.floor(idx / size_f), None
    if mode == "nearest":
        return ef.clip_by_value(idx, 0.0, size_f - 1.0), None
    valid = ef.logical_and(idx >= 0.0, idx <= size_f - 1.0)
    return ef.clip_by_value(idx, 0.0, size_f - 1.0), valid


def _sample(images, sy, sx, fill_mode, fill_value, interpolation):
    """images [n, h, w, c] sampled at source coordinates sy, sx of shape [n, h', w']."""
    n, h, w, c = images.shape.as_list()
    flat = ef.reshape(images, [n * h * w, c])
    base = ef.reshape(ef.cast(ef.range(n), ef.float32) * float(h * w), [n, 1, 1])

    def gather(yi, xi):
        yi, vy = _fill_index(yi, h, fill_mode)
        xi, vx = _fill_index(xi, w, fill_mode)
        index = ef.cast(base + yi * float(w) + xi, ef.int64)
        vals = ef.gather(flat, index)
        if vy is not None:
            ok = ef.expand_dims(ef.logical_and(vy, vx), -1)
            vals = ef.where(ok, vals, ef.fill(ef.shape(vals), ef.cast(fill_value, vals.dtype)))
        return vals

    if interpolation == "nearest":
        return gather(ef.round(sy), ef.round(sx))
    y0, x0 = ef.floor(sy), ef.floor(sx)
    wy, wx = ef.expand_dims(sy - y0, -1), ef.expand_dims(sx - x0, -1)
    top = gather(y0, x0) * (1 - wx) + gather(y0, x0 + 1) * wx
    bottom = gather(y0 + 1, x0) * (1 - wx) + gather(y0 + 1, x0 + 1) * wx
    return top * (1 - wy) + bottom * wy


def _grid(h, w):
    ys, xs = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32),
                         indexing="ij")
    return ef.constant(ys[None]), ef.constant(xs[None])


class _GeometricLayer(_RandomLayer):
    def __init__(self, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, **kwargs):
        super().__init__(seed, **kwargs)
        if fill_mode not in ("reflect", "wrap", "nearest", "constant"):
            raise ValueError("%s: unknown fill_mode %s." % (type(self).__name__,
                                                             _show(fill_mode)))
        if interpolation not in ("bilinear", "nearest"):
            raise ValueError("%s: interpolation must be 'bilinear' or 'nearest', got %s."
                             % (type(self).__name__, _show(interpolation)))
        self.fill_mode, self.interpolation, self.fill_value = fill_mode, interpolation, \
            fill_value

    def call(self, inputs, training=True):
        x, single = _batched(inputs)
        if not _is_training(training):
            return _unbatch(x, single)
        dtype = x.dtype
        xf = ef.cast(x, ef.float32)
        n, h, w, _ = xf.shape.as_list()
        gy, gx = _grid(h, w)
        sy, sx = self._source(n, h, w, gy, gx)
        out = _sample(xf, sy, sx, self.fill_mode, self.fill_value, self.interpolation)
        return _unbatch(ef.cast(out, dtype) if dtype.is_floating else
                        ef.saturate_cast(ef.round(out), dtype), single)

    def get_config(self):
        config = super().get_config()
        config.update({"fill_mode": self.fill_mode, "interpolation": self.interpolation,
                       "fill_value": self.fill_value})
        return config


class RandomRotation(_GeometricLayer):
    """Rotates images by a random angle in ``factor * 2 pi`` (a fraction of a full turn)."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.factor = factor
        self._low, self._high = _range(factor, "RandomRotation")

    def _source(self, n, h, w, gy, gx):
        angle = self._uniform([n], self._low * 2 * math.pi, self._high * 2 * math.pi)
        cos, sin = [ef.reshape(f(angle), [n, 1, 1]) for f in (ef.cos, ef.sin)]
        cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
        dy, dx = gy - cy, gx - cx
        return cos * dy - sin * dx + cy, sin * dy + cos * dx + cx

    def get_config(self):
        config = super().get_config()
        config["factor"] = self.factor
        return config


class RandomZoom(_GeometricLayer):
    """Zooms by ``1 + factor`` per axis (positive factors zoom out, negative in)."""

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._h = _range(height_factor, "RandomZoom")
        self._w = _range(width_factor, "RandomZoom") if width_factor is not None else None

    def _source(self, n, h, w, gy, gx):
        zy = 1.0 + self._uniform([n], *self._h)
        zx = zy if self._w is None else 1.0 + self._uniform([n], *self._w)
        zy, zx = ef.reshape(zy, [n, 1, 1]), ef.reshape(zx, [n, 1, 1])
        cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
        return (gy - cy) * zy + cy, (gx - cx) * zx + cx

    def get_config(self):
        config = super().get_config()
        config.update({"height_factor": self.height_factor,
                       "width_factor": self.width_factor})
        return config


class RandomTranslation(_GeometricLayer):
    """Shifts images by random fractions of their height and width."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._h = _range(height_factor, "RandomTranslation")
        self._w = _range(width_factor, "RandomTranslation")

    def _source(self, n, h, w, gy, gx):
        ty = ef.reshape(self._uniform([n], *self._h) * float(h), [n, 1, 1])
        tx = ef.reshape(self._uniform([n], *self._w) * float(w), [n, 1, 1])
        return gy - ty, gx - tx

    def get_config(self):
        config = super().get_config()
        config.update({"height_factor": self.height_factor,
                       "width_factor": self.width_factor})
        return config


class RandomCrop(_RandomLayer):
    """A random ``(height, width)`` crop in training, the centre crop at inference."""

    def __init__(self, height, width, seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        self.height, self.width = int(height), int(width)

    def call(self, inputs, training=True):
        x, single = _batched(inputs)
        h, w = x.shape[1], x.shape[2]
        if h < self.height or w < self.width:
            raise ValueError("RandomCrop: inputs of %dx%d are smaller than the crop %dx%d."
                             % (h, w, self.height, self.width))
        if _is_training(training):
            u = self._uniform([2], 0.0, 1.0).numpy()
            top = int(min(u[0] * (h - self.height + 1), h - self.height))
            left = int(min(u[1] * (w - self.width + 1), w - self.width))
        else:
            top, left = (h - self.height) // 2, (w - self.width) // 2
        out = ef.image.crop_to_bounding_box(x, top, left, self.height, self.width)
        return _unbatch(out, single)

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width})
        return config


class RandomContrast(_RandomLayer):
    """Scales each image's contrast by a random factor in ``[1 - lower, 1 + upper]``,
    clipped to ``value_range``."""

    def __init__(self, factor, seed=None, value_range=(0, 255), **kwargs):
        super().__init__(seed, **kwargs)
        self.factor = factor
        low, high = _range(factor, "RandomContrast")
        self._low, self._high = 1.0 + low, 1.0 + high
        if self._low < 0:
            raise ValueError("RandomContrast: factor must keep 1 - factor >= 0, got %s."
                             % _show(factor))
        self.value_range = tuple(value_range)

    def call(self, inputs, training=True):
        x, single = _batched(inputs)
        if not _is_training(training):
            return _unbatch(x, single)
        n = x.shape[0]
        f = ef.reshape(self._uniform([n], self._low, self._high), [n, 1, 1, 1])
        xf = ef.cast(x, ef.float32)
        mean = ef.reduce_mean(xf, axis=[1, 2], keepdims=True)
        out = ef.clip_by_value((xf - mean) * f + mean, float(self.value_range[0]),
                               float(self.value_range[1]))
        return _unbatch(ef.cast(out, x.dtype) if x.dtype.is_floating else
                        ef.saturate_cast(out, x.dtype), single)

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": list(self.value_range)})
        return config


class RandomBrightness(_RandomLayer):
    """Adds a random delta of ``factor * (value range)`` to each image, clipped."""

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed, **kwargs)
        self.factor = factor
        self._low, self._high = _range(factor, "RandomBrightness")
        self.value_range = tuple(value_range)

    def call(self, inputs, training=True):
        x, single = _batched(inputs)
        if not _is_training(training):
            return _unbatch(x, single)
        n = x.shape[0]
        span = float(self.value_range[1] - self.value_range[0])
        delta = ef.reshape(self._uniform([n], self._low, self._high) * span, [n, 1, 1, 1])
        out = ef.clip_by_value(ef.cast(x, ef.float32) + delta, float(self.value_range[0]),
                               float(self.value_range[1]))
        return _unbatch(ef.cast(out, x.dtype) if x.dtype.is_floating else
                        ef.saturate_cast(out, x.dtype), single)

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": list(self.value_range)})
        return config
