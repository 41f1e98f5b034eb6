"""Sampling weights for ``image.resize``: one ``[out, in]`` matrix per spatial axis.

Every method is a separable linear resampling, so resizing is two matrix products (which
trace, run on any device and differentiate). The weights follow TF's kernels exactly:

* ``bilinear`` and ``bicubic`` without antialias: TF's half-pixel sampling, source
  coordinate ``(i + 0.5) * in / out - 0.5``; bilinear clamps its two taps to the edge;
  bicubic is Keys' cubic (a = -0.5) whose out-of-range taps get weight 0, the rest
  renormalized, evaluated at the fraction rounded to 1/1024 as TF's kernel table does.
* ``area``: each output pixel averages the input interval ``[i * s, (i + 1) * s)`` it
  covers, with fractional coverage at the ends.
* the scale-and-translate family (any method with ``antialias=True``, and ``lanczos3``,
  ``lanczos5``, ``gaussian``, ``mitchellcubic``): the kernel centred at
  ``(i + 0.5) * in / out``, widened by the downscale factor when antialiasing, taps inside
  the image only, normalized to sum 1.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["linear_weights", "nearest_indices"]


def _keys(x, a=-0.5):
    x = np.abs(x)
    return np.where(x <= 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))


def _triangle(x):
    return np.maximum(0.0, 1.0 - np.abs(x))


def _lanczos(radius):
    def kernel(x):
        x = np.asarray(x, np.float64)
        out = np.where(np.abs(x) < radius, np.sinc(x) * np.sinc(x / radius), 0.0)
        return out
    return kernel


def _gaussian(x):
    sigma = 1.5 / 3.0
    return np.where(np.abs(x) < 1.5, np.exp(-x * x / (2 * sigma * sigma)), 0.0)


def _mitchell(x):
    b = c = 1.0 / 3.0
    x = np.abs(x)
    near = ((12 - 9 * b - 6 * c) * x ** 3 + (-18 + 12 * b + 6 * c) * x ** 2 + (6 - 2 * b)) / 6
    far = ((-b - 6 * c) * x ** 3 + (6 * b + 30 * c) * x ** 2 + (-12 * b - 48 * c) * x
           + (8 * b + 24 * c)) / 6
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


# method -> (kernel, radius) for the scale-and-translate family.
_KERNELS = {"bilinear": (_triangle, 1.0), "bicubic": (_keys, 2.0),
            "lanczos3": (_lanczos(3), 3.0), "lanczos5": (_lanczos(5), 5.0),
            "gaussian": (_gaussian, 1.5), "mitchellcubic": (_mitchell, 2.0)}


def _half_pixel_bilinear(n_in, n_out):
    scale = n_in / n_out
    w = np.zeros((n_out, n_in), np.float64)
    for i in range(n_out):
        src = (i + 0.5) * scale - 0.5
        lo = math.floor(src)
        lerp = src - lo
        a, b = max(lo, 0), min(math.ceil(src), n_in - 1)
        w[i, a] += 1 - lerp
        w[i, b] += lerp
    return w


def _half_pixel_bicubic(n_in, n_out):
    scale = n_in / n_out
    w = np.zeros((n_out, n_in), np.float64)
    for i in range(n_out):
        src = (i + 0.5) * scale - 0.5
        base = math.floor(src)
        # TF reads the kernel from a 1024-entry table: the fraction is rounded to 1/1024.
        t = round((src - base) * 1024) / 1024
        taps = [base - 1, base, base + 1, base + 2]
        weights = _keys(np.array([t + 1, t, 1 - t, 2 - t]))
        inside = [0 <= k < n_in for k in taps]
        total = sum(wt for wt, ok in zip(weights, inside) if ok)
        for k, wt, ok in zip(taps, weights, inside):
            if ok:
                w[i, k] += wt / total if abs(total) >= 1000 * np.finfo(np.float32).eps else wt
    return w


def _area(n_in, n_out):
    scale = n_in / n_out
    w = np.zeros((n_out, n_in), np.float64)
    for i in range(n_out):
        start, end = i * scale, (i + 1) * scale
        for j in range(int(math.floor(start)), min(int(math.ceil(end)), n_in)):
            overlap = min(end, j + 1) - max(start, j)
            if overlap > 0:
                w[i, j] = overlap / scale
    return w


def _scale_and_translate(n_in, n_out, method, antialias):
    # The span and tap positions are computed in float32, as TF's kernel does: which taps
    # fall inside a kernel's support (gaussian's is cut at exactly 1.5) depends on float32
    # rounding, and one tap more or less moves a pixel by up to 0.6 of 255.
    f32 = np.float32
    kernel, radius = _KERNELS[method]
    inv_scale = f32(1.0) / (f32(n_out) / f32(n_in))
    kernel_scale = max(inv_scale, f32(1.0)) if antialias else f32(1.0)
    one_over_kernel_scale = f32(1.0) / kernel_scale
    support = f32(radius) * kernel_scale
    w = np.zeros((n_out, n_in), np.float64)
    for i in range(n_out):
        centre = (f32(i) + f32(0.5)) * inv_scale
        start = min(max(int(math.ceil(centre - support - f32(0.5))), 0), n_in - 1)
        stop = min(max(int(math.floor(centre + support - f32(0.5))), 0), n_in - 1) + 1
        js = np.arange(start, stop).astype(f32)
        positions = np.abs((js + f32(0.5) - centre) * one_over_kernel_scale)
        vals = kernel(positions.astype(np.float64))
        total = vals.sum()
        if abs(total) >= 1000 * np.finfo(np.float32).eps:
            vals = vals / total
        w[i, start:stop] = vals
    return w


def linear_weights(n_in, n_out, method, antialias):
    """The ``[n_out, n_in]`` float64 weights of ``method`` along one axis."""
    if method == "area":
        return _area(n_in, n_out)
    if antialias or method not in ("bilinear", "bicubic"):
        return _scale_and_translate(n_in, n_out, method, antialias)
    if method == "bilinear":
        return _half_pixel_bilinear(n_in, n_out)
    return _half_pixel_bicubic(n_in, n_out)


def nearest_indices(n_in, n_out):
    """TF's half-pixel nearest-neighbour source index of each output position."""
    scale = n_in / n_out
    return np.minimum(np.floor((np.arange(n_out) + 0.5) * scale).astype(np.int64), n_in - 1)
