"""Window geometry shared by convolution and pooling: data formats, attribute checks and
normalization, output sizes, SAME padding and strided window views.

Padding follows TF: ``"VALID"`` uses none; ``"SAME"`` gives ``ceil(in / stride)`` outputs and
pads ``max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0)`` elements, the odd one at
the end; an explicit list gives ``[before, after]`` per dimension. The array helpers
(``pad_spatial``, ``crop_spatial``, ``windows``, ``tap_slices``) are written against ``xp``
so they run on numpy and cupy.
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import numpy as np

from eagerflow import errors
from eagerflow.errors import short_repr

__all__ = []

EXPORTS = {}


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
        raise _err("data_format %s is not valid for %d spatial dimension(s); use %r "
                   "(channels last) or %r (channels first)."
                   % (short_repr(data_format), nd, FORMATS[nd][0], FORMATS[nd][1]))
    for what, values in (("strides", strides), ("dilations", dilations)):
        if len(values) != nd or any(int(v) < 1 for v in values):
            raise _err("%s must be %d positive ints (one per spatial dimension), got %s."
                       % (what, nd, list(values)))
    if isinstance(padding, str):
        if padding not in ("SAME", "VALID"):
            raise _err("padding must be 'SAME', 'VALID' or explicit [before, after] pairs, "
                       "got %s." % (short_repr(padding),))
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
        raise _bad(op, "%s must be an int or a list of ints, got %s."
                   % (what, short_repr(value))) from None
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
                   "got %s." % (short_repr(padding),))
    if hasattr(padding, "numpy") or isinstance(padding, np.ndarray):
        padding = np.asarray(padding).tolist()
    try:
        pairs = tuple(tuple(int(v) for v in pair) for pair in padding)
    except (TypeError, ValueError):
        raise _bad(op, "padding must be 'SAME', 'VALID' or a list of [before, after] pairs, "
                   "got %s." % (short_repr(padding),)) from None
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
    raise _bad(op, "data_format must be %r or %r, got %s."
               % (FORMATS[nd][0], FORMATS[nd][1], short_repr(data_format)))


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
