"""Convolutions: ``tf.nn.conv1d/conv2d/conv3d``, ``convolution``, transposed and depthwise.

One N-D primitive (1 to 3 spatial dimensions) computes every convolution::

    out[n, p, o] = sum_{k, c} pad(x)[n, p * stride + k * dilation, g(o) * Cg + c] * w[k, c, o]

where ``p`` runs over output positions, ``k`` over kernel taps, ``g(o) = o // (O / groups)``
is the group of output channel ``o`` and ``Cg = C / groups`` (``groups = 1`` for a plain
convolution, ``groups = C`` for a depthwise one). The kernel builds a strided *window view*
``[N, *out, *k, C]`` of the padded input (no copy), lays it out as one matrix (im2col) and
multiplies it by the filter in a single BLAS call, so the same code runs on numpy and cupy.

The input gradient is the transposed convolution ``ConvBackpropInput`` (one GEMM, then a
scatter-add of the columns per kernel tap) and the filter gradient is ``ConvBackpropFilter``
(one GEMM over the same window view). Each of the three is linear in each input, so each
one's gradient is expressed with the other two and higher-order gradients work::

    d Conv(x, w)           = BackpropInput(g, w),  BackpropFilter(x, g)
    d BackpropInput(dy, w) = Conv(g, w),            BackpropFilter(g, dy)
    d BackpropFilter(x, dy) = BackpropInput(dy, g), Conv(x, g)

Padding follows TF: ``"VALID"`` uses none; ``"SAME"`` gives ``ceil(in / stride)`` outputs and
pads ``max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0)`` elements, the odd one at
the end; an explicit list gives ``[before, after]`` per dimension.

Example:
    >>> import eagerflow as ef
    >>> x = ef.ones([1, 4, 4, 1])
    >>> w = ef.ones([3, 3, 1, 1])
    >>> ef.nn.conv2d(x, w, strides=1, padding="SAME")[0, :, :, 0].numpy().tolist()[0]
    [4.0, 6.0, 6.0, 4.0]
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import numpy as np

from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT
from eagerflow.ops.registry import AbstractValue

__all__ = [
    "conv1d", "conv2d", "conv3d", "convolution", "conv1d_transpose", "conv2d_transpose",
    "conv3d_transpose", "conv_transpose", "depthwise_conv2d", "separable_conv2d",
    "atrous_conv2d", "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter",
]

EXPORTS = {"nn": list(__all__)}

# Data formats by number of spatial dimensions: (channels last, channels first).
FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}
CHANNELS_FIRST = frozenset(f for pair in FORMATS.values() for f in pair[1:])
_FILTER_LAYOUT = {1: "[width, in_channels, out_channels]",
                  2: "[height, width, in_channels, out_channels]",
                  3: "[depth, height, width, in_channels, out_channels]"}


def _err(message):
    # Raised inside kernels: dispatch prefixes the op, the inputs and the device.
    return errors.InvalidArgumentError(None, None, message)


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


# --------------------------------------------------------------------------------------------
# Geometry shared with pooling: attribute checks, output sizes and SAME padding.
# --------------------------------------------------------------------------------------------

def check_window_attrs(nd, strides, dilations, padding, data_format):
    """Validates the static attributes of a windowed op with ``nd`` spatial dimensions."""
    if nd not in FORMATS:
        raise _err("only 1 to 3 spatial dimensions are supported, got %d (strides %s)."
                   % (nd, list(strides)))
    if data_format not in FORMATS[nd]:
        raise _err("data_format %r is not valid for %d spatial dimension(s); use %r "
                   "(channels last) or %r (channels first)."
                   % (data_format, nd, FORMATS[nd][0], FORMATS[nd][1]))
    for what, values in (("strides", strides), ("dilations", dilations)):
        if len(values) != nd or any(int(v) < 1 for v in values):
            raise _err("%s must be %d positive ints (one per spatial dimension), got %s."
                       % (what, nd, list(values)))
    if isinstance(padding, str):
        if padding not in ("SAME", "VALID"):
            raise _err("padding must be 'SAME', 'VALID' or explicit [before, after] pairs, "
                       "got %r." % (padding,))
    elif len(padding) != nd or any(len(p) != 2 or p[0] < 0 or p[1] < 0 for p in padding):
        raise _err("explicit padding must be %d non-negative [before, after] pairs (one per "
                   "spatial dimension), got %s." % (nd, [list(p) for p in padding]))


def spatial_geometry(in_sp, ksize, strides, dilations, padding):
    """Output sizes and (before, after) paddings; None input dims give None outputs.

    Raises:
        InvalidArgumentError: When a window does not fit the (padded) input.
    """
    out_sp, pads = [], []
    for i, (n, k, s, d) in enumerate(zip(in_sp, ksize, strides, dilations)):
        eff = (k - 1) * d + 1 if k is not None else None
        if padding == "SAME":
            if n is None or eff is None:
                out_sp.append(None if n is None else -(-n // s))
                pads.append(None)
                continue
            o = -(-n // s)
            total = max((o - 1) * s + eff - n, 0)
            out_sp.append(o)
            pads.append((total // 2, total - total // 2))
            continue
        lo, hi = (0, 0) if padding == "VALID" else padding[i]
        pads.append((lo, hi))
        if n is None or eff is None:
            out_sp.append(None)
            continue
        span = n + lo + hi
        if span < eff:
            raise _err(
                "the window (size %d%s) in spatial dimension %d is bigger than the input (%d%s) "
                "with padding %s. Use padding='SAME', a smaller window or a larger input."
                % (eff, " = (%d - 1) * dilation %d + 1" % (k, d) if d > 1 else "", i, n,
                   " + padding %d + %d" % (lo, hi) if lo or hi else "",
                   padding if isinstance(padding, str) else "explicit"))
        out_sp.append((span - eff) // s + 1)
    return tuple(out_sp), tuple(pads)


def to_channels_last(shape, data_format):
    """A shape (tuple) in ``data_format`` reordered to channels last."""
    if data_format in CHANNELS_FIRST:
        return (shape[0],) + tuple(shape[2:]) + (shape[1],)
    return tuple(shape)


def from_channels_last(shape, data_format):
    if data_format in CHANNELS_FIRST:
        return (shape[0], shape[-1]) + tuple(shape[1:-1])
    return tuple(shape)


class ConvGeometry(NamedTuple):
    """Everything a convolution kernel needs to know, in channels-last terms."""

    n: object            # batch
    in_sp: tuple         # input spatial sizes
    c: object            # input channels
    k: tuple             # kernel spatial sizes
    out_sp: tuple        # output spatial sizes
    pads: tuple          # (before, after) per spatial dim
    groups: object
    cg: object           # input channels per group
    o: object            # output channels

    def out_shape(self, data_format):
        return from_channels_last((self.n,) + self.out_sp + (self.o,), data_format)


@functools.lru_cache(maxsize=1024)
def conv_geometry(x_shape, w_shape, strides, dilations, padding, data_format, depthwise):
    """Validates a convolution's shapes and attributes and returns its ConvGeometry.

    ``w_shape`` is ``[*k, in_channels / groups, out_channels]``, or ``[*k, in_channels,
    multiplier]`` when ``depthwise``. Shapes may hold None (tracing).
    """
    nd = len(strides)
    check_window_attrs(nd, strides, dilations, padding, data_format)
    layout = ("[%s, in_channels, channel_multiplier]" % _FILTER_LAYOUT[nd][1:].rsplit(
        ", in_channels", 1)[0]) if depthwise else _FILTER_LAYOUT[nd]
    if len(x_shape) != nd + 2:
        raise _err("input must be a rank-%d tensor (%s) for %d spatial dimension(s), got "
                   "shape %s." % (nd + 2, data_format, nd, list(x_shape)))
    if len(w_shape) != nd + 2:
        raise _err("filters must be a rank-%d tensor %s, got shape %s."
                   % (nd + 2, layout, list(w_shape)))
    xl = to_channels_last(x_shape, data_format)
    n, in_sp, c = xl[0], xl[1:-1], xl[-1]
    k = tuple(w_shape[:nd])
    if any(kk is not None and kk < 1 for kk in k):
        raise _err("filter spatial sizes must be positive, got filter shape %s %s."
                   % (list(w_shape), layout))
    wc, wo = w_shape[nd], w_shape[nd + 1]
    if depthwise:
        if c is not None and wc is not None and c != wc:
            raise _err("input has %d channels (shape %s, %s) but the depthwise filter expects "
                       "%d (filter shape %s %s). Make filter.shape[%d] equal the input's "
                       "channels." % (c, list(x_shape), data_format, wc, list(w_shape),
                                      layout, nd))
        groups = c if c is not None else wc
        cg = 1
        o = groups * wo if groups is not None and wo is not None else None
    else:
        cg, o, groups = wc, wo, None
        if c is not None and cg is not None:
            if cg < 1 or c % cg:
                raise _err(
                    "input depth must be evenly divisible by filter depth: the input has %d "
                    "channels (shape %s, %s) but the filter has %d input channels (filter "
                    "shape %s %s). Make filter.shape[%d] equal the input's channels."
                    % (c, list(x_shape), data_format, cg, list(w_shape), layout, nd))
            groups = c // cg
            if o is not None and o % groups:
                raise _err(
                    "grouped convolution: the input's %d channels make %d groups of the "
                    "filter's %d input channels, but the filter's %d output channels (filter "
                    "shape %s) are not divisible by %d." % (c, groups, cg, o, list(w_shape),
                                                            groups))
    out_sp, pads = spatial_geometry(in_sp, k, strides, dilations, padding)
    return ConvGeometry(n, tuple(in_sp), c, k, out_sp, pads, groups, cg, o)


# --------------------------------------------------------------------------------------------
# Array helpers written against xp (numpy or cupy).
# --------------------------------------------------------------------------------------------

def pad_spatial(xp, a, pads, value=0, lead=1):
    """Pads the spatial axes (``lead`` onwards) of an array; no copy without padding."""
    if all(p == (0, 0) for p in pads):
        return a
    # A filled buffer and one slice assignment: much cheaper per call than xp.pad.
    shape = list(a.shape)
    for i, (lo, hi) in enumerate(pads):
        shape[lead + i] += lo + hi
    out = xp.zeros(shape, dtype=a.dtype) if value == 0 else xp.full(shape, value, a.dtype)
    out[(slice(None),) * lead + tuple(
        slice(lo, lo + n) for (lo, _), n in zip(pads, a.shape[lead:]))] = a
    return out


def crop_spatial(xp, a, pads, in_sp, lead=1):
    """Removes padding added by ``pad_spatial`` (returns a contiguous array)."""
    if all(p == (0, 0) for p in pads) and a.shape[lead:lead + len(pads)] == tuple(in_sp):
        return a
    index = (slice(None),) * lead + tuple(
        slice(lo, lo + n) for (lo, _), n in zip(pads, in_sp))
    return xp.ascontiguousarray(a[index])


def windows(xp, a, out_sp, ksize, strides, dilations):
    """The strided view ``[N, *out, *k, C]`` of a padded channels-last array: no copy."""
    st = a.strides
    nd = len(ksize)
    shape = (a.shape[0],) + tuple(out_sp) + tuple(ksize) + (a.shape[-1],)
    step = ((st[0],) + tuple(st[1 + i] * strides[i] for i in range(nd))
            + tuple(st[1 + i] * dilations[i] for i in range(nd)) + (st[-1],))
    return xp.lib.stride_tricks.as_strided(a, shape=shape, strides=step)


def tap_slices(ksize, out_sp, strides, dilations, lead=1):
    """Yields ``(tap, index)``: the padded-input positions read by each kernel tap.

    ``lead`` is the number of axes before the spatial ones (1 channels last, 2 channels
    first). Callers must handle an empty output (some ``out_sp`` dim 0) before calling.
    """
    for tap in itertools.product(*[range(k) for k in ksize]):
        index = (slice(None),) * lead + tuple(
            slice(t * d, t * d + s * (o - 1) + 1, s)
            for t, o, s, d in zip(tap, out_sp, strides, dilations))
        yield tap, index


def _compute_dtype(xp, a):
    # Half types accumulate in float32: numpy has no BLAS for them and TF accumulates wider.
    return xp.float32 if a.dtype.itemsize == 2 else a.dtype


def _conv_forward(xp, x, w, g, strides, dilations, channels_first=False):
    """Channels-last forward convolution; ``w`` in grouped layout [*k, Cg, O].

    With ``channels_first`` the result comes back as [N, O, *out] straight from the GEMM.
    """
    nd = len(g.k)
    ct = _compute_dtype(xp, x)
    xpad = pad_spatial(xp, x, g.pads)
    win = windows(xp, xpad, g.out_sp, g.k, strides, dilations)
    n = x.shape[0]
    m = n * _prod(g.out_sp)
    kp = _prod(g.k)
    groups, cg, o = g.groups, g.cg, g.o
    if groups == 1:
        cols = win.reshape(m, kp * cg).astype(ct, copy=False)
        wm = w.reshape(kp * cg, o).astype(ct, copy=False)
        if channels_first:
            # [O, K*C] @ [N, K*C, P] -> [N, O, P]: no transpose of the result needed.
            out = xp.matmul(wm.T, cols.reshape(n, _prod(g.out_sp), kp * cg).transpose(0, 2, 1))
            return out.astype(x.dtype, copy=False).reshape((n, o) + g.out_sp)
        out = xp.matmul(cols, wm)
    elif cg == 1 and groups == o:
        # Depthwise with multiplier 1: a multiply-add per kernel tap beats tiny GEMMs.
        out = xp.zeros((n,) + g.out_sp + (o,), dtype=ct)
        wk = w.reshape(kp, o).astype(ct, copy=False)
        if m:
            for i, (_, index) in enumerate(tap_slices(g.k, g.out_sp, strides, dilations)):
                out += xpad[index] * wk[i]
        out = out.reshape(m, o)
    else:
        og = o // groups
        # [N, *out, *k, G, Cg] -> [G, N, *out, *k, Cg] -> [G, M, K*Cg]: one copy.
        win = win.reshape(win.shape[:-1] + (groups, cg))
        axes = (2 * nd + 1,) + tuple(range(2 * nd + 1)) + (2 * nd + 2,)
        cols = win.transpose(axes).reshape(groups, m, kp * cg).astype(ct, copy=False)
        wg = w.reshape(kp, cg, groups, og).transpose(2, 0, 1, 3).reshape(groups, kp * cg, og)
        out = xp.matmul(cols, wg.astype(ct, copy=False)).transpose(1, 0, 2).reshape(m, o)
    out = out.astype(x.dtype, copy=False).reshape((n,) + g.out_sp + (o,))
    return xp.ascontiguousarray(xp.moveaxis(out, -1, 1)) if channels_first else out


def _conv_backprop_input(xp, dy, w, g, strides, dilations):
    """Channels-last transposed convolution: the gradient of ``_conv_forward`` wrt x."""
    nd = len(g.k)
    ct = _compute_dtype(xp, dy)
    groups, cg, o = g.groups, g.cg, g.o
    c = groups * cg
    n = dy.shape[0]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(g.in_sp, g.pads))
    dxp = xp.zeros((n,) + padded + (groups, cg), dtype=ct)
    m = n * _prod(g.out_sp)
    kp = _prod(g.k)
    if m and kp * c and o and cg == 1 and groups == o:
        # Depthwise with multiplier 1: a multiply-add per kernel tap.
        dyc = dy.astype(ct, copy=False)[..., None]
        wk = w.reshape(kp, groups, 1).astype(ct, copy=False)
        for i, (_, index) in enumerate(tap_slices(g.k, g.out_sp, strides, dilations)):
            dxp[index] += dyc * wk[i]
    elif m and kp * c and o:
        og = o // groups
        dyg = dy.reshape(m, groups, og).transpose(1, 0, 2).astype(ct, copy=False)
        wg = w.reshape(kp, cg, groups, og).transpose(2, 3, 0, 1).reshape(groups, og, kp * cg)
        cols = xp.matmul(dyg, wg.astype(ct, copy=False))      # [G, M, K*Cg]
        cols = cols.reshape((groups, n) + g.out_sp + g.k + (cg,))
        cols = xp.moveaxis(cols, 0, -2)                       # [N, *out, *k, G, Cg] (view)
        lead = (slice(None),) * (1 + nd)
        for tap, index in tap_slices(g.k, g.out_sp, strides, dilations):
            dxp[index] += cols[lead + tap]
    dxp = dxp.reshape((n,) + padded + (c,))
    return crop_spatial(xp, dxp, g.pads, g.in_sp).astype(dy.dtype, copy=False)


def _conv_backprop_filter(xp, x, dy, g, strides, dilations):
    """Filter gradient of ``_conv_forward`` in grouped layout [*k, Cg, O]."""
    nd = len(g.k)
    ct = _compute_dtype(xp, x)
    groups, cg, o = g.groups, g.cg, g.o
    xpad = pad_spatial(xp, x, g.pads)
    win = windows(xp, xpad, g.out_sp, g.k, strides, dilations)
    m = x.shape[0] * _prod(g.out_sp)
    kp = _prod(g.k)
    if groups == 1:
        cols = win.reshape(m, kp * cg).astype(ct, copy=False)
        dw = xp.matmul(cols.T, dy.reshape(m, o).astype(ct, copy=False))
    elif cg == 1 and groups == o:
        # Depthwise with multiplier 1: one weighted sum per kernel tap.
        dw = xp.zeros((kp, o), dtype=ct)
        if m:
            dyc = dy.astype(ct, copy=False)
            for i, (_, index) in enumerate(tap_slices(g.k, g.out_sp, strides, dilations)):
                dw[i] = (xpad[index] * dyc).reshape(m, o).sum(axis=0)
    else:
        og = o // groups
        win = win.reshape(win.shape[:-1] + (groups, cg))
        axes = (2 * nd + 1,) + tuple(range(2 * nd + 1)) + (2 * nd + 2,)
        cols = win.transpose(axes).reshape(groups, m, kp * cg).astype(ct, copy=False)
        dyg = dy.reshape(m, groups, og).transpose(1, 0, 2).astype(ct, copy=False)
        dw = xp.matmul(cols.transpose(0, 2, 1), dyg)          # [G, K*Cg, Og]
        dw = dw.reshape(groups, kp, cg, og).transpose(1, 2, 0, 3).reshape(kp * cg, o)
    return dw.astype(x.dtype, copy=False)


# --------------------------------------------------------------------------------------------
# Kernel factories. Attributes: strides, dilations (tuples of nd ints), padding ("SAME",
# "VALID" or nd (before, after) pairs), data_format; plus input_shape / filter_shape.
# --------------------------------------------------------------------------------------------

def _to_last(xp, a, data_format):
    return xp.moveaxis(a, 1, -1) if data_format in CHANNELS_FIRST else a


def _from_last(xp, a, data_format):
    if data_format in CHANNELS_FIRST:
        return xp.ascontiguousarray(xp.moveaxis(a, -1, 1))
    return a


def _grouped_filter(w, g, depthwise):
    # A depthwise filter [*k, C, M] is a grouped filter [*k, 1, C * M] with C groups.
    return w.reshape(g.k + (1, g.o)) if depthwise else w


def _resolve_input_shape(input_shape, dy_shape, w_shape, data_format, depthwise):
    """Fills unknown batch/channel dims of a static input shape from dy and the filter."""
    if None not in input_shape:
        return tuple(input_shape)
    shape = list(to_channels_last(input_shape, data_format))
    if shape[0] is None:
        shape[0] = dy_shape[0]
    if shape[-1] is None:
        shape[-1] = w_shape[-2]
    if None in shape:
        raise _err("input_shape %s has unknown spatial dimensions; the transposed "
                   "convolution needs them to be static." % (list(input_shape),))
    return from_channels_last(tuple(shape), data_format)


def _conv_kernel(depthwise):
    def factory(xp):
        def kernel(x, w, *, strides, dilations, padding, data_format):
            g = conv_geometry(x.shape, w.shape, strides, dilations, padding, data_format,
                              depthwise)
            return _conv_forward(xp, _to_last(xp, x, data_format),
                                 _grouped_filter(w, g, depthwise), g, strides, dilations,
                                 data_format in CHANNELS_FIRST)
        return kernel
    return factory


def _backprop_input_kernel(depthwise):
    def factory(xp):
        def kernel(dy, w, *, input_shape, strides, dilations, padding, data_format):
            input_shape = _resolve_input_shape(input_shape, dy.shape, w.shape, data_format,
                                               depthwise)
            g = conv_geometry(input_shape, w.shape, strides, dilations, padding, data_format,
                              depthwise)
            _check_dy(dy.shape, g, data_format, "input_shape %s" % (list(input_shape),))
            dx = _conv_backprop_input(xp, _to_last(xp, dy, data_format),
                                      _grouped_filter(w, g, depthwise), g, strides, dilations)
            return _from_last(xp, dx, data_format)
        return kernel
    return factory


def _backprop_filter_kernel(depthwise):
    def factory(xp):
        def kernel(x, dy, *, filter_shape, strides, dilations, padding, data_format):
            g = conv_geometry(x.shape, tuple(filter_shape), strides, dilations, padding,
                              data_format, depthwise)
            _check_dy(dy.shape, g, data_format, "the input")
            dw = _conv_backprop_filter(xp, _to_last(xp, x, data_format),
                                       _to_last(xp, dy, data_format), g, strides, dilations)
            return dw.reshape(tuple(filter_shape))
        return kernel
    return factory


def _check_dy(dy_shape, g, data_format, what):
    expected = g.out_shape(data_format)
    if tuple(dy_shape) != tuple(expected):
        raise _err("the output gradient has shape %s but the convolution of %s computes an "
                   "output of shape %s (%s). Check output_shape/input_shape, strides and "
                   "padding." % (list(dy_shape), what, list(expected), data_format))


# --------------------------------------------------------------------------------------------
# Shape rules (tracing).
# --------------------------------------------------------------------------------------------

def _traced(prim_name, fn):
    """Runs a geometry check in a shape rule, naming the op in any error."""
    try:
        return fn()
    except errors.OpError as exc:
        if exc.op is None:
            exc.op = prim_name
            exc.message = "%s: %s" % (prim_name, exc.message)
            exc.args = (exc.message,)
        raise


def _known(aval, prim_name):
    if aval.shape is None:
        raise errors.InvalidArgumentError(
            None, prim_name, "%s needs inputs of known rank to trace." % prim_name)
    return aval.shape


def _conv_shape_fn(name, depthwise):
    def shape_fn(x, w, *, strides, dilations, padding, data_format):
        g = _traced(name, lambda: conv_geometry(_known(x, name), _known(w, name), strides,
                                                dilations, padding, data_format, depthwise))
        return AbstractValue(g.out_shape(data_format), x.dtype)
    return shape_fn


def _backprop_input_shape_fn(name, depthwise):
    def shape_fn(dy, w, *, input_shape, strides, dilations, padding, data_format):
        _traced(name, lambda: conv_geometry(tuple(input_shape), _known(w, name), strides,
                                            dilations, padding, data_format, depthwise))
        return AbstractValue(input_shape, dy.dtype)
    return shape_fn


def _backprop_filter_shape_fn(name, depthwise):
    def shape_fn(x, dy, *, filter_shape, strides, dilations, padding, data_format):
        _traced(name, lambda: conv_geometry(_known(x, name), tuple(filter_shape), strides,
                                            dilations, padding, data_format, depthwise))
        return AbstractValue(filter_shape, x.dtype)
    return shape_fn


# --------------------------------------------------------------------------------------------
# Gradient rules: each primitive of a family is differentiated with the other two.
# --------------------------------------------------------------------------------------------

def _static_shape(t):
    return tuple(t.shape.as_list()) if hasattr(t.shape, "as_list") else tuple(t.shape)


def _conv_vjp(fam):
    def vjp(g, x, w, out, **attrs):
        dx = execute(fam["input"], (g, w), dict(attrs, input_shape=_static_shape(x)))
        dw = execute(fam["filter"], (x, g), dict(attrs, filter_shape=_static_shape(w)))
        return dx, dw
    return vjp


def _backprop_input_vjp(fam):
    def vjp(g, dy, w, out, *, input_shape, **attrs):
        d_dy = execute(fam["conv"], (g, w), attrs)
        d_w = execute(fam["filter"], (g, dy), dict(attrs, filter_shape=_static_shape(w)))
        return d_dy, d_w
    return vjp


def _backprop_filter_vjp(fam):
    def vjp(g, x, dy, out, *, filter_shape, **attrs):
        d_x = execute(fam["input"], (dy, g), dict(attrs, input_shape=_static_shape(x)))
        d_dy = execute(fam["conv"], (x, g), attrs)
        return d_x, d_dy
    return vjp


# --------------------------------------------------------------------------------------------
# numpy references: a loop over output positions on a dense (block-diagonal) filter, an
# algorithm independent of the kernels' im2col.
# --------------------------------------------------------------------------------------------

def _dense_filter(w, g, depthwise):
    """The [*k, C, O] filter equivalent to a grouped or depthwise one (zeros off-group)."""
    wg = np.asarray(w).reshape(g.k + (1, g.o)) if depthwise else np.asarray(w)
    og = g.o // g.groups
    dense = np.zeros(g.k + (g.groups * g.cg, g.o), wg.dtype)
    for grp in range(g.groups):
        dense[..., grp * g.cg:(grp + 1) * g.cg, grp * og:(grp + 1) * og] = \
            wg[..., grp * og:(grp + 1) * og]
    return dense


def _positions(g, strides, dilations):
    """Yields (output index, np.ix_-style index of the padded input window)."""
    for pos in itertools.product(*[range(o) for o in g.out_sp]):
        index = np.ix_(*[np.arange(p * s, p * s + (k - 1) * d + 1, d)
                         for p, s, k, d in zip(pos, strides, g.k, dilations)])
        yield pos, index


def _ref_last(a, data_format):
    return np.moveaxis(np.asarray(a), 1, -1) if data_format in CHANNELS_FIRST else np.asarray(a)


def _ref_first(a, data_format):
    return np.moveaxis(a, -1, 1) if data_format in CHANNELS_FIRST else a


def _ref_conv(depthwise):
    def ref(x, w, *, strides, dilations, padding, data_format):
        g = conv_geometry(np.shape(x), np.shape(w), strides, dilations, padding, data_format,
                          depthwise)
        xl = np.pad(_ref_last(x, data_format).astype(np.float64),
                    ((0, 0),) + g.pads + ((0, 0),))
        dense = _dense_filter(w, g, depthwise).astype(np.float64)
        out = np.zeros((g.n,) + g.out_sp + (g.o,))
        for pos, index in _positions(g, strides, dilations):
            # [N, *k, C] x [*k, C, O] -> [N, O]
            out[(slice(None),) + pos] = np.tensordot(xl[(slice(None),) + index], dense,
                                                     axes=len(g.k) + 1)
        return _ref_first(out, data_format).astype(np.asarray(x).dtype)
    return ref


def _ref_backprop_input(depthwise):
    def ref(dy, w, *, input_shape, strides, dilations, padding, data_format):
        g = conv_geometry(tuple(input_shape), np.shape(w), strides, dilations, padding,
                          data_format, depthwise)
        dense = _dense_filter(w, g, depthwise).astype(np.float64)
        dyl = _ref_last(dy, data_format).astype(np.float64)
        padded = tuple(s + lo + hi for s, (lo, hi) in zip(g.in_sp, g.pads))
        dxp = np.zeros((g.n,) + padded + (g.c,))
        nd = len(g.k)
        for pos, index in _positions(g, strides, dilations):
            # [N, O] x [*k, C, O] -> [N, *k, C]
            dxp[(slice(None),) + index] += np.tensordot(
                dyl[(slice(None),) + pos], dense, axes=([1], [nd + 1]))
        crop = (slice(None),) + tuple(slice(lo, lo + s) for (lo, _), s in zip(g.pads, g.in_sp))
        return _ref_first(dxp[crop], data_format).astype(np.asarray(dy).dtype)
    return ref


def _ref_backprop_filter(depthwise):
    def ref(x, dy, *, filter_shape, strides, dilations, padding, data_format):
        g = conv_geometry(np.shape(x), tuple(filter_shape), strides, dilations, padding,
                          data_format, depthwise)
        xl = np.pad(_ref_last(x, data_format).astype(np.float64),
                    ((0, 0),) + g.pads + ((0, 0),))
        dyl = _ref_last(dy, data_format).astype(np.float64)
        dense = np.zeros(g.k + (g.c, g.o))
        for pos, index in _positions(g, strides, dilations):
            dense += np.tensordot(xl[(slice(None),) + index], dyl[(slice(None),) + pos],
                                  axes=([0], [0]))
        # Keep only the in-group entries, in the filter's own layout.
        og = g.o // g.groups
        grouped = np.concatenate(
            [dense[..., grp * g.cg:(grp + 1) * g.cg, grp * og:(grp + 1) * og]
             for grp in range(g.groups)], axis=-1) if g.groups else dense
        return grouped.reshape(tuple(filter_shape)).astype(np.asarray(x).dtype)
    return ref


# --------------------------------------------------------------------------------------------
# Samples for the registry sweeps.
# --------------------------------------------------------------------------------------------

def _attrs(nd, strides=1, dilations=1, padding="SAME", data_format=None):
    as_tuple = (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd)
    return {"strides": as_tuple(strides), "dilations": as_tuple(dilations),
            "padding": padding, "data_format": data_format or FORMATS[nd][0]}


# (input shape, filter shape, attrs) for plain and grouped convolutions.
_CONV_CASES = [
    ((2, 5, 5, 3), (3, 3, 3, 4), _attrs(2)),
    ((1, 7, 6, 2), (3, 2, 2, 3), _attrs(2, strides=2, padding="VALID")),
    ((2, 6, 5, 2), (3, 3, 2, 2), _attrs(2, strides=(2, 3))),
    ((1, 7, 7, 2), (3, 3, 2, 2), _attrs(2, dilations=2)),
    ((1, 2, 5, 4), (2, 3, 2, 3), _attrs(2, padding=((1, 0), (2, 1)), data_format="NCHW")),
    ((2, 9, 3), (3, 3, 2), _attrs(1, strides=2)),
    ((1, 2, 9), (2, 2, 3), _attrs(1, dilations=2, padding="VALID", data_format="NCW")),
    ((1, 4, 4, 3, 2), (2, 2, 2, 2, 3), _attrs(3, strides=(1, 2, 1))),
    ((1, 5, 5, 4), (3, 3, 2, 6), _attrs(2)),
    ((1, 3, 5, 4), (2, 2, 1, 3), _attrs(2, strides=(1, 2), data_format="NCHW")),
    ((0, 5, 5, 3), (3, 3, 3, 2), _attrs(2)),
]
_DEPTHWISE_CASES = [
    ((2, 5, 5, 3), (3, 3, 3, 2), _attrs(2)),
    ((1, 7, 6, 2), (3, 2, 2, 1), _attrs(2, strides=2, padding="VALID")),
    ((1, 3, 6, 5), (3, 3, 3, 2), _attrs(2, dilations=(1, 2), data_format="NCHW")),
    ((0, 4, 4, 2), (2, 2, 2, 2), _attrs(2)),
]


def _uniform(rng, shape, dtype):
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype.np_dtype)


def _out_shape(x_shape, w_shape, attrs, depthwise):
    return conv_geometry(x_shape, w_shape, depthwise=depthwise, **attrs).out_shape(
        attrs["data_format"])


def _samples(cases, kind, depthwise):
    def samples(rng, dtype):
        out = []
        for xs, ws, attrs in cases:
            ys = _out_shape(xs, ws, attrs, depthwise)
            if kind == "conv":
                out.append(((_uniform(rng, xs, dtype), _uniform(rng, ws, dtype)), attrs))
            elif kind == "input":
                out.append(((_uniform(rng, ys, dtype), _uniform(rng, ws, dtype)),
                            dict(attrs, input_shape=xs)))
            else:
                out.append(((_uniform(rng, xs, dtype), _uniform(rng, ys, dtype)),
                            dict(attrs, filter_shape=ws)))
        return out
    return samples


def _bad_samples(kind, depthwise):
    def bad(rng):
        f = np.float64
        err = errors.InvalidArgumentError
        a2 = _attrs(2)
        cases = [
            ((1, 5, 5, 3), (3, 3, 2 if not depthwise else 4, 4), a2),    # channel mismatch
            ((5, 5, 3), (3, 3, 3, 4), a2),                                 # input rank
            ((1, 5, 5, 3), (3, 3, 3), a2),                                 # filter rank
            ((1, 5, 5, 3), (3, 3, 3, 3), dict(a2, padding="FULL")),        # padding string
            ((1, 5, 5, 3), (3, 3, 3, 3), dict(a2, strides=(0, 1))),        # stride
            ((1, 5, 5, 3), (3, 3, 3, 3), dict(a2, dilations=(1, -1))),     # dilation
            ((1, 2, 2, 3), (3, 3, 3, 3), dict(a2, padding="VALID")),       # window > input
            ((1, 5, 5, 3), (3, 3, 3, 3), dict(a2, data_format="NHCW")),    # data format
            ((1, 5, 5, 3), (3, 3, 3, 3), dict(a2, padding=((1, 1),))),     # explicit pairs
        ]
        if not depthwise:
            cases.append(((1, 5, 5, 4), (3, 3, 2, 3), a2))                 # groups vs out
        out = []
        for xs, ws, attrs in cases:
            if kind == "conv":
                out.append(((np.zeros(xs, f), np.zeros(ws, f)), attrs, err))
            elif kind == "input":
                out.append(((np.zeros((1, 5, 5, 4), f), np.zeros(ws, f)),
                            dict(attrs, input_shape=xs), err))
            else:
                out.append(((np.zeros(xs, f), np.zeros((1, 5, 5, 4), f)),
                            dict(attrs, filter_shape=ws), err))
        if kind != "conv":
            # An output gradient whose shape the convolution cannot produce.
            xs, ws = (1, 6, 6, 2), (3, 3, 2, 2)
            a = dict(a2, strides=(2, 2))
            if kind == "input":
                out.append(((np.zeros((1, 4, 4, 2 * (1 if not depthwise else 2)), f),
                             np.zeros(ws, f)), dict(a, input_shape=xs), err))
            else:
                out.append(((np.zeros(xs, f), np.zeros((1, 4, 4, 2), f)),
                            dict(a, filter_shape=ws), err))
        return out
    return bad


# --------------------------------------------------------------------------------------------
# The two families of primitives.
# --------------------------------------------------------------------------------------------

def _declare(names, depthwise, cases):
    fam = {}
    conv_name, input_name, filter_name = names
    fam["conv"] = registry.primitive(
        conv_name, _conv_kernel(depthwise), dtypes=FLOAT, family="nn",
        shape_fn=_conv_shape_fn(conv_name, depthwise), vjp=_conv_vjp(fam), saves=(0, 1),
        reference=_ref_conv(depthwise), samples=_samples(cases, "conv", depthwise),
        bad_samples=_bad_samples("conv", depthwise),
        tolerance={"float32": (1e-4, 1e-5)},
        hint="Filters are laid out as %s." % (
            "[*kernel, in_channels, channel_multiplier]" if depthwise
            else "[*kernel, in_channels, out_channels]"))
    fam["input"] = registry.primitive(
        input_name, _backprop_input_kernel(depthwise), dtypes=FLOAT, family="nn",
        shape_fn=_backprop_input_shape_fn(input_name, depthwise),
        vjp=_backprop_input_vjp(fam), saves=(0, 1),
        reference=_ref_backprop_input(depthwise),
        samples=_samples(cases, "input", depthwise),
        bad_samples=_bad_samples("input", depthwise), tolerance={"float32": (1e-4, 1e-5)})
    fam["filter"] = registry.primitive(
        filter_name, _backprop_filter_kernel(depthwise), dtypes=FLOAT, family="nn",
        shape_fn=_backprop_filter_shape_fn(filter_name, depthwise),
        vjp=_backprop_filter_vjp(fam), saves=(0, 1),
        reference=_ref_backprop_filter(depthwise),
        samples=_samples(cases, "filter", depthwise),
        bad_samples=_bad_samples("filter", depthwise), tolerance={"float32": (1e-4, 1e-5)})
    return fam["conv"], fam["input"], fam["filter"]


CONV, CONV_BACKPROP_INPUT, CONV_BACKPROP_FILTER = _declare(
    ("Conv", "ConvBackpropInput", "ConvBackpropFilter"), False, _CONV_CASES)
DEPTHWISE_CONV, DEPTHWISE_BACKPROP_INPUT, DEPTHWISE_BACKPROP_FILTER = _declare(
    ("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
     "DepthwiseConv2dNativeBackpropFilter"), True, _DEPTHWISE_CASES)


# --------------------------------------------------------------------------------------------
# Argument normalization for the public functions.
# --------------------------------------------------------------------------------------------

def _bad(op, message):
    return errors.InvalidArgumentError(None, op, "%s: %s" % (op, message))


def normalize_ints(value, nd, what, data_format, op, default=1):
    """An int or list of 1, nd or nd + 2 ints -> a tuple of nd ints (TF's conventions).

    With nd + 2 values the batch and channel entries must be 1.
    """
    if value is None:
        return (default,) * nd
    if isinstance(value, (int, np.integer)):
        return (int(value),) * nd
    if hasattr(value, "numpy") or isinstance(value, np.ndarray):
        value = np.asarray(value).reshape(-1).tolist()
    try:
        values = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise _bad(op, "%s must be an int or a list of ints, got %r." % (what, value)) from None
    if len(values) == 1:
        return values * nd
    if len(values) == nd:
        return values
    if len(values) == nd + 2:
        first = data_format in CHANNELS_FIRST
        outer = (values[0], values[1]) if first else (values[0], values[-1])
        if outer != (1, 1):
            raise _bad(op, "%s in the batch and channel dimensions must be 1, got %s (%s)."
                       % (what, list(values), data_format))
        return values[2:] if first else values[1:-1]
    raise _bad(op, "%s must be an int or a list of 1, %d or %d ints, got %s."
               % (what, nd, nd + 2, list(values)))


def normalize_padding(padding, nd, data_format, op):
    """'SAME'/'VALID' (any case) or explicit pairs (nd or nd + 2 of them) -> an attr."""
    if isinstance(padding, str):
        upper = padding.upper()
        if upper in ("SAME", "VALID"):
            return upper
        raise _bad(op, "padding must be 'SAME', 'VALID' or a list of [before, after] pairs, "
                   "got %r." % (padding,))
    if hasattr(padding, "numpy") or isinstance(padding, np.ndarray):
        padding = np.asarray(padding).tolist()
    try:
        pairs = tuple(tuple(int(v) for v in pair) for pair in padding)
    except (TypeError, ValueError):
        raise _bad(op, "padding must be 'SAME', 'VALID' or a list of [before, after] pairs, "
                   "got %r." % (padding,)) from None
    if len(pairs) == nd + 2:
        first = data_format in CHANNELS_FIRST
        outer = (pairs[0], pairs[1]) if first else (pairs[0], pairs[-1])
        if any(p != (0, 0) for p in outer):
            raise _bad(op, "explicit padding of the batch and channel dimensions must be "
                       "[0, 0], got %s (%s)." % ([list(p) for p in pairs], data_format))
        pairs = pairs[2:] if first else pairs[1:-1]
    if len(pairs) != nd or any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise _bad(op, "explicit padding must be %d (or %d) non-negative [before, after] "
                   "pairs, got %s." % (nd, nd + 2, [list(p) for p in pairs]))
    return pairs


def normalize_format(data_format, nd, op, generic=False):
    """Checks a data format for nd spatial dims; generic ops accept any 'N...C'/'NC...'."""
    if nd not in FORMATS:
        raise _bad(op, "the input must have 1 to 3 spatial dimensions (rank 3 to 5), got "
                   "%d spatial dimension(s)." % nd)
    if data_format is None:
        return FORMATS[nd][0]
    if data_format in FORMATS[nd]:
        return data_format
    if generic and isinstance(data_format, str) and data_format.startswith("N"):
        return FORMATS[nd][1 if data_format.startswith("NC") else 0]
    raise _bad(op, "data_format must be %r or %r, got %r."
               % (FORMATS[nd][0], FORMATS[nd][1], data_format))


def spatial_rank(x, op):
    """Number of spatial dims of ``x``: its rank minus the batch and channel dims."""
    shape = getattr(x, "shape", None)
    if shape is None:
        return np.ndim(x) - 2
    rank = shape.rank if hasattr(shape, "rank") else len(shape)
    if rank is None:
        raise _bad(op, "the input's rank must be known to infer the number of spatial "
                   "dimensions; use the 1d/2d/3d form of the op instead.")
    return rank - 2


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
        batch = _shape_of(input)[0]
        channels = _shape_of(filters)[nd]
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
