"""The pooling kernels, written once against ``xp`` (numpy or cupy): ``MaxPool``,
``AvgPool`` and their gradients (declared in :mod:`eagerflow.ops.nn.pool_ops`).

For a window of ``k`` taps (stride ``s``, dilation ``d``) at output position ``p``::

    max_pool(x)[p] = max_t  pad(x, -inf)[p * s + t * d]
    avg_pool(x)[p] = sum_t  pad(x, 0)[p * s + t * d] / (number of taps inside x)

Kernels loop over the window's taps (a handful) with whole-array operations on strided
slices, in the input's own layout (channels last or first, no transposes).

* ``MaxPoolGrad(x, g)`` routes each output gradient to the first maximum of its window (TF's
  tie rule: the first in row-major window order), found by comparing each tap with the
  recomputed maximum (no argmax indices). When the windows tile a channels-last input
  (stride equal to the window, no padding) each spatial axis is split into (window, tap)
  axes of a view, so one comparison marks every maximum and one broadcast multiply writes
  the gradient; only the tie rule goes tap by tap, on the boolean mask.
* ``MaxPoolGradGrad(x, h)`` gathers ``h`` at the same argmax positions.
* ``AvgPoolGrad(g)`` spreads each ``g / count`` over its window.

Attributes: ksize, strides, dilations (tuples of nd ints), padding ("SAME", "VALID" or nd
(before, after) pairs), data_format.

Channels-last 2D and 1D float32/float64 inputs from ``cpu_jit.MIN_ELEMENTS`` elements run
compiled loops instead (``backend.cpu_jit``, when numba is usable) with the same bits; see
"Compiled forms" below.
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import numpy as np

from eagerflow import errors
from eagerflow.backend import cpu_jit, cpu_threads
from eagerflow.ops.nn.window_geometry import (
    CHANNELS_FIRST, check_window_attrs, crop_spatial, from_channels_last, pad_spatial,
    spatial_geometry, tap_slices, to_channels_last,
)

__all__ = []

EXPORTS = {}


def _err(message):
    return errors.InvalidArgumentError(None, None, message)


class PoolGeometry(NamedTuple):
    in_shape: tuple      # the input's shape, in its data format
    in_sp: tuple
    k: tuple
    out_sp: tuple
    pads: tuple
    lead: int            # axes before the spatial ones: 1 channels last, 2 channels first

    @property
    def out_shape(self):
        lead, nd = self.lead, len(self.k)
        return self.in_shape[:lead] + self.out_sp + self.in_shape[lead + nd:]

    @property
    def padded_shape(self):
        lead, nd = self.lead, len(self.k)
        return (self.in_shape[:lead]
                + tuple(n + lo + hi for n, (lo, hi) in zip(self.in_sp, self.pads))
                + self.in_shape[lead + nd:])

    @property
    def empty(self):
        return any(o == 0 for o in self.out_sp)


@functools.lru_cache(maxsize=1024)
def pool_geometry(x_shape, ksize, strides, dilations, padding, data_format):
    """Validates a pooling op's attributes against the input shape (None dims allowed)."""
    nd = len(ksize)
    check_window_attrs(nd, strides, dilations, padding, data_format)
    if any(int(k) < 1 for k in ksize):
        raise _err("ksize must be %d positive ints (one per spatial dimension), got %s."
                   % (nd, list(ksize)))
    if len(x_shape) != nd + 2:
        raise _err("input must be a rank-%d tensor (%s) for %d spatial dimension(s), got "
                   "shape %s." % (nd + 2, data_format, nd, list(x_shape)))
    if not isinstance(padding, str):
        for i, ((lo, hi), k, d) in enumerate(zip(padding, ksize, dilations)):
            eff = (k - 1) * d + 1
            if lo >= eff or hi >= eff:
                raise _err("explicit padding %s in spatial dimension %d must be smaller than "
                           "the window (size %d), or some windows would hold only padding."
                           % ([lo, hi], i, eff))
    lead = 2 if data_format in CHANNELS_FIRST else 1
    in_sp = tuple(x_shape[lead:lead + nd])
    out_sp, pads = spatial_geometry(in_sp, ksize, strides, dilations, padding)
    return PoolGeometry(tuple(x_shape), in_sp, tuple(ksize), out_sp, pads, lead)


def geometry(shape, attrs):
    """The PoolGeometry of an input shape under a pooling op's attributes."""
    return pool_geometry(tuple(shape), attrs["ksize"], attrs["strides"], attrs["dilations"],
                         attrs["padding"], attrs["data_format"])


def _lowest(xp, dtype):
    """The padding value that never wins a max: -inf, or the integer minimum."""
    # Dtype introspection is host-side numpy: cupy arrays carry numpy dtypes.
    if dtype.kind in "iu":
        return int(np.iinfo(dtype).min)
    return -float("inf")


def _compute_dtype(xp, a):
    return xp.float32 if a.dtype.itemsize == 2 else a.dtype


def _taps(g, attrs):
    return tap_slices(g.k, g.out_sp, attrs["strides"], attrs["dilations"], g.lead)


def _disjoint(g, attrs):
    """True when no two windows share an input element (stride >= window, no dilation).

    Then each tap's slice of the padded input is written once by a gradient, so a plain
    assignment replaces the read-add-write of a scatter (pooling with stride equal to the
    window, the common case, touches every element exactly once).
    """
    return all(d == 1 and s >= k for k, s, d in zip(g.k, attrs["strides"], attrs["dilations"]))


def _pool_max(xp, xpad, g, attrs, out=None):
    """The max over each window: one maximum per tap on strided slices (no copy first)."""
    taps = [index for _, index in _taps(g, attrs)]
    if len(taps) == 1:
        if out is None:
            return xp.array(xpad[taps[0]])
        out[...] = xpad[taps[0]]
        return out
    out = xp.maximum(xpad[taps[0]], xpad[taps[1]], out=out)
    for index in taps[2:]:
        xp.maximum(out, xpad[index], out=out)
    return out


# The pooling kernels split over the cores from this many input elements. Their blocks
# are a dozen or more numpy calls each, and two threads of such calls hand the GIL back
# and forth: on an idle 2-core machine (wall time, 31 interleaved rounds, cache flushed)
# two threads took 1.5-1.9x one thread's time for [64, 11, 11, 64] and [16, 26, 26, 32],
# about 1.0x for [64, 26, 26, 32] (1.4M elements), 0.60x (max pool) and 0.77x (its
# gradient) for [64, 52, 52, 32] (5.5M).
POOL_MIN_ELEMENTS = 1 << 21


def _by_batch(xp, n, elements, block):
    """Runs ``block(lo, hi)`` over the batch: on numpy, blocks of it on every core from
    POOL_MIN_ELEMENTS elements."""
    cpu_threads.run_blocks(block, n, elements, min_elements=POOL_MIN_ELEMENTS, xp=xp)


def _first_max_masks(xp, xpad, g, attrs):
    """Yields ``(index, hit)`` per tap: ``hit`` marks the outputs whose first maximum (in
    row-major window order, TF's tie rule) is that tap's element.

    Each window's maximum is recomputed, then every tap compares its slice with it and drops
    the outputs an earlier tap already took: a few elementwise passes per tap, no argmax
    indices and no scatter by index. A NaN counts as the maximum, as in the forward pass.
    Each mask is valid until the next one is drawn (the taken set is updated in place).
    A padded tap is never a window's first maximum.
    """
    best = _pool_max(xp, xpad, g, attrs)
    has_nan = xpad.dtype.kind not in "iub" and bool(xp.isnan(best).any())
    # A padded tap holds the lowest value, so it equals the maximum only of a window whose
    # elements are all that value (-inf): those take their first element inside the input
    # (TF's choice), not the padding, where the gradient would be cropped away.
    inside = None
    if any(p != (0, 0) for p in g.pads) and bool((best == _lowest(xp, xpad.dtype)).any()):
        inside = xp.zeros(xpad.shape, dtype=bool)
        inside[(slice(None),) * g.lead + tuple(
            slice(lo, lo + n) for (lo, _), n in zip(g.pads, g.in_sp))] = True
    taken = None
    for _, index in _taps(g, attrs):
        s = xpad[index]
        hit = xp.equal(s, best)
        if has_nan:
            hit |= xp.isnan(s)
        if inside is not None:
            hit &= inside[index]
        if taken is None:
            taken = hit
        else:
            xp.greater(hit, taken, out=hit)        # hit and not taken
            xp.logical_or(taken, hit, out=taken)
        yield index, hit


# The one-mask max-pool gradient runs for channels-last inputs of any size. Measured on
# one thread (CPU time, 41 interleaved rounds, median ratio to the per-tap form, 2x2/2):
# 0.66x for [64, 26, 26, 32], 0.70x for [64, 26, 26, 64], 0.93x for [64, 11, 11, 64],
# 0.86x for [64, 26, 26, 8], 0.63x for [2, 8, 8, 4]. Channels first keep the per-tap
# form: 1.04x for [64, 32, 26, 26], 1.19x for [16, 32, 26, 26], 1.10x for [8, 3, 32, 32]
# (the window's last tap axis is the innermost one there).
TILED_CHANNELS_FIRST = False
TILED_BLOCK_ELEMENTS = 1 << 18


def _tiles(g, attrs):
    """True when the windows tile the input: stride equal to the window, no dilation, no
    padding (the usual 2x2/2 pool). Rows and columns past the last window are not read."""
    return (tuple(attrs["strides"]) == tuple(g.k) and all(d == 1 for d in attrs["dilations"])
            and all(p == (0, 0) for p in g.pads))


def _split_windows(a, g):
    """The view of ``a`` with each spatial axis split into (window, tap): no copy.

    Axis ``lead + 2 * i`` indexes the windows of spatial dimension ``i`` and axis
    ``lead + 2 * i + 1`` the taps within them; elements past the last window are cut off.
    """
    lead, nd = g.lead, len(g.k)
    cut = (slice(None),) * lead + tuple(slice(0, o * k) for o, k in zip(g.out_sp, g.k))
    shape = a.shape[:lead]
    for o, k in zip(g.out_sp, g.k):
        shape += (o, k)
    return a[cut].reshape(shape + a.shape[lead + nd:])


def _tiled_max(xp, xr, g):
    """The max of each window of the split view ``xr`` (see ``_split_windows``), reduced
    one tap axis at a time from the outermost.

    Each stage is a maximum of whole slices, and the inner loop of the outer stages runs
    over every axis inside them. A fresh array unless every window has one tap. (As the
    forward pass it was no faster than the per-tap maximum of strided views: 1.03-1.18x.)
    """
    best = xr
    for i, k in enumerate(g.k):
        axis = (slice(None),) * (g.lead + i + 1)
        if k == 1:
            best = best[axis + (0,)]
            continue
        out = xp.maximum(best[axis + (0,)], best[axis + (1,)])
        for t in range(2, k):
            xp.maximum(out, best[axis + (t,)], out=out)
        best = out
    return best


def _tiled_max_pool_grad(xp, x, grad, g, finite, out, relu=False, best=None):
    """MaxPoolGrad for windows that tile the input (see ``_tiles``), into ``out``.

    With the taps on axes of their own, the window maxima spread over the innermost tap
    axis (one copy into ``half``, 1/k of the input for k outer taps) mark every maximum
    in one comparison with the input, and the gradient spread the same way is multiplied
    by the marks into ``out``. The outer tap axes broadcast in the outer loops, so the
    inner loops run over whole rows (numpy runs an operand broadcast over the innermost
    tap axis several times slower: an inner loop per run of channels). The tie rule (the
    first maximum in row-major window order wins) goes tap by tap on the marks, and only
    when some window holds more than one maximum: as many marks as windows (a count, one
    pass) means one each. Measured on one thread, CPU time, [64, 26, 26, 32] 2x2/2: 5.07
    ms with one broadcast comparison, a tap-by-tap tie rule and a broadcast multiply;
    2.5 ms with the spreads over the whole input; 2.0-2.4 ms this way.
    """
    lead, nd = g.lead, len(g.k)
    xr = _split_windows(x, g)
    if best is None:
        best = _tiled_max(xp, xr, g)
    spread = (slice(None),) * lead + (slice(None), None) * nd
    # [..., o_0, 1, ..., o_last, k_last, ...]: spread over the innermost tap axis only.
    shape = list(xr.shape)
    for i in range(nd - 1):
        shape[lead + 2 * i + 1] = 1
    half = xp.empty(tuple(shape), dtype=xr.dtype)
    half[...] = best[spread]
    hit = xp.equal(xr, half)
    if xr.dtype.kind not in "iub" and bool(xp.isnan(best).any()):
        hit |= xp.isnan(xr)
    # Every window has at least one mark; as many marks as windows means one each.
    if int(xp.count_nonzero(hit)) != best.size:
        taps = [(slice(None),) * lead + sum(((slice(None), t) for t in tap), ())
                for tap in itertools.product(*[range(k) for k in g.k])]
        taken = hit[taps[0]].copy()
        for index in taps[1:]:
            h = hit[index]
            xp.greater(h, taken, out=h)               # a maximum no earlier tap took
            xp.logical_or(taken, h, out=taken)
    dr = _split_windows(out, g)
    half = half.astype(grad.dtype, copy=False)
    if finite and relu:
        # A marked element equals its window's maximum, so ReluGrad's factor x > 0 is
        # best > 0 there: it multiplies the pooled gradient (a quarter of the input for
        # 2x2 windows) instead of the marks. Unmarked elements are a zero of the
        # gradient's sign either way, so the bits are the full-size factor's.
        grad = xp.multiply(grad, xp.greater(best, 0))
    half[...] = grad[spread]
    if finite:
        xp.multiply(half, hit, out=dr)
    else:
        # A NaN or infinity times a zero mark would leak into its window.
        dr[...] = half
        xp.copyto(dr, 0, where=~hit)
        if relu:
            # ReluGrad's product, NaN times zero included, as the two ops compute it.
            xp.multiply(dr, xp.greater(xr, 0), out=dr)


def _route(xp, dst, src, hit, assign, finite, tmp=None):
    """``dst (+)= src`` where ``hit``, zero elsewhere (``assign``: dst is written once).

    With finite values a multiply by the mask is the fast form (a masked copy branches on
    every element: 5x slower on a random mask). A NaN or infinity would turn into NaN where
    the mask is off, so those go through the masked forms, which never read src there.
    """
    if finite:
        if assign:
            xp.multiply(src, hit, out=dst)
        else:
            xp.multiply(src, hit, out=tmp)
            dst += tmp
    elif assign:
        xp.copyto(dst, src, where=hit)
    elif cpu_threads.is_numpy(xp):
        np.add(dst, src, out=dst, where=hit)
    else:
        dst += xp.where(hit, src, 0)


def _all_finite(xp, a):
    return a.dtype.kind in "iub" or bool(xp.isfinite(a).all())


# --------------------------------------------------------------------------------------------
# Kernel factories. Attributes: ksize, strides, dilations (tuples of nd ints), padding
# ("SAME", "VALID" or nd (before, after) pairs), data_format.
# --------------------------------------------------------------------------------------------

def max_pool_kernel(xp):
    def kernel(x, **attrs):
        g = geometry(x.shape, attrs)
        if g.empty or x.size == 0:
            return xp.zeros(g.out_shape, dtype=x.dtype)
        plan = _jit_plan(xp, _JIT_MAX_POOL, g, attrs, x)
        if plan is not None:
            return _jit_max_pool(plan, x, g)
        xpad = pad_spatial(xp, x, g.pads, _lowest(xp, x.dtype), g.lead)
        out = xp.empty(g.out_shape, dtype=x.dtype)

        def block(lo, hi):
            _pool_max(xp, xpad[lo:hi], g, attrs, out=out[lo:hi])

        _by_batch(xp, x.shape[0], x.size, block)
        return out
    return kernel


def max_pool_grad_kernel(xp):
    def kernel(x, grad, relu=False, **attrs):
        # ``relu``: times (x > 0), ReluGrad's factor (set by the remapping pass when the
        # pooled input is a relu's output).
        return _max_pool_grad(xp, x, grad, None, relu, attrs)
    return kernel


def max_pool_grad_with_output_kernel(xp):
    def kernel(x, pooled, grad, **attrs):
        # ``pooled``: MaxPool(x), the forward pass's output (the window maxima).
        g = geometry(x.shape, attrs)
        if tuple(pooled.shape) != tuple(g.out_shape):
            raise _err("the pooled input has shape %s but max pooling of the input gives "
                       "%s." % (list(pooled.shape), list(g.out_shape)))
        return _max_pool_grad(xp, x, grad, pooled, False, attrs)
    return kernel


def _max_pool_grad(xp, x, grad, pooled, relu, attrs):
    """MaxPoolGrad; ``pooled`` (MaxPool(x), or None) spares the tiled form its maxima."""
    g = geometry(x.shape, attrs)
    _check_grad(grad.shape, g)
    if g.empty or x.size == 0:
        return xp.zeros(x.shape, dtype=grad.dtype)
    plan = _jit_plan(xp, _JIT_MAX_POOL_GRAD, g, attrs, x, grad)
    if plan is not None:
        return _jit_max_pool_grad(plan, x, grad, g, attrs, relu)
    finite = _all_finite(xp, grad)
    # numpy only: the form relies on reshapes of cropped views being views.
    if (g.lead == 1 or TILED_CHANNELS_FIRST) and cpu_threads.is_numpy(xp) and \
            _tiles(g, attrs):
        covered = all(o * k == n for o, k, n in zip(g.out_sp, g.k, g.in_sp))
        dx = (xp.empty if covered else xp.zeros)(x.shape, dtype=grad.dtype)

        # A few examples at a time, so the passes over the spread copies and the
        # marks read the cache (cold cache, one thread: 0.91x of whole blocks).
        step = max(1, TILED_BLOCK_ELEMENTS * x.shape[0] // x.size)

        def tiled(lo, hi):
            for k in range(lo, hi, step):
                e = min(k + step, hi)
                _tiled_max_pool_grad(xp, x[k:e], grad[k:e], g, finite, dx[k:e], relu,
                                     None if pooled is None else pooled[k:e])

        _by_batch(xp, x.shape[0], x.size, tiled)
        return dx
    xpad = pad_spatial(xp, x, g.pads, _lowest(xp, x.dtype), g.lead)
    disjoint = _disjoint(g, attrs)
    # Overlapping windows add up in float32 for the half types.
    dt = grad.dtype if disjoint else _compute_dtype(xp, grad)
    src = grad.astype(dt, copy=False)
    dxp = xp.zeros(g.padded_shape, dtype=dt)

    def block(lo, hi):
        gb, db = src[lo:hi], dxp[lo:hi]
        tmp = None if disjoint or not finite else xp.empty(gb.shape, dtype=dt)
        for index, hit in _first_max_masks(xp, xpad[lo:hi], g, attrs):
            _route(xp, db[index], gb, hit, disjoint, finite, tmp)

    _by_batch(xp, x.shape[0], x.size, block)
    dxp = crop_spatial(xp, dxp, g.pads, g.in_sp, g.lead)
    dx = dxp.astype(grad.dtype, copy=False)
    return xp.multiply(dx, xp.greater(x, 0)) if relu else dx


def max_pool_grad_grad_kernel(xp):
    def kernel(x, h, **attrs):
        g = geometry(x.shape, attrs)
        if tuple(h.shape) != tuple(x.shape):
            raise _err("the gradient to gather has shape %s but the pooled input has shape "
                       "%s; they must be equal." % (list(h.shape), list(x.shape)))
        if g.empty or x.size == 0:
            return xp.zeros(g.out_shape, dtype=h.dtype)
        xpad = pad_spatial(xp, x, g.pads, _lowest(xp, x.dtype), g.lead)
        hpad = pad_spatial(xp, h, g.pads, 0, g.lead)
        finite = _all_finite(xp, h)
        out = xp.zeros(g.out_shape, dtype=h.dtype)

        def block(lo, hi):
            ob, hb = out[lo:hi], hpad[lo:hi]
            tmp = xp.empty(ob.shape, dtype=h.dtype) if finite else None
            # Exactly one tap hits each output, so the sum over taps is a gather of h at
            # the first maximum.
            for index, hit in _first_max_masks(xp, xpad[lo:hi], g, attrs):
                _route(xp, ob, hb[index], hit, False, finite, tmp)

        _by_batch(xp, x.shape[0], x.size, block)
        return out
    return kernel


@functools.lru_cache(maxsize=256)
def _window_counts(g, strides, dilations):
    """numpy array (broadcastable to the output) of the valid taps of every window."""
    counts = np.ones((1,) * g.lead + g.out_sp + (1,) * (len(g.in_shape) - g.lead - len(g.k)))
    for i, (n, o, k, s, d, (lo, _)) in enumerate(zip(g.in_sp, g.out_sp, g.k, strides,
                                                     dilations, g.pads)):
        pos = np.arange(o)[:, None] * s - lo + np.arange(k)[None, :] * d
        per_dim = ((pos >= 0) & (pos < n)).sum(axis=1)
        shape = [1] * counts.ndim
        shape[g.lead + i] = o
        counts = counts * per_dim.reshape(shape)
    # A window of only padding (possible with large dilations) averages to 0, not NaN.
    return np.maximum(counts, 1)


def _counts(xp, g, attrs, dtype):
    if attrs["padding"] == "VALID":
        return float(np.prod(g.k))
    return xp.asarray(_window_counts(g, attrs["strides"], attrs["dilations"]).astype(dtype))


def avg_pool_kernel(xp):
    def kernel(x, **attrs):
        g = geometry(x.shape, attrs)
        if g.empty or x.size == 0:
            return xp.zeros(g.out_shape, dtype=x.dtype)
        plan = _jit_plan(xp, _JIT_AVG_POOL, g, attrs, x)
        if plan is not None:
            return _jit_avg_pool(plan, x, g, attrs)
        ct = _compute_dtype(xp, x)
        xpad = pad_spatial(xp, x.astype(ct, copy=False), g.pads, 0, g.lead)
        taps = [index for _, index in _taps(g, attrs)]
        counts = _counts(xp, g, attrs, ct)
        acc = xp.empty(g.out_shape, dtype=ct)

        def block(lo, hi):
            xb, ab = xpad[lo:hi], acc[lo:hi]
            if len(taps) == 1:
                ab[...] = xb[taps[0]]
            else:
                xp.add(xb[taps[0]], xb[taps[1]], out=ab)
            for index in taps[2:]:
                xp.add(ab, xb[index], out=ab)
            xp.divide(ab, counts, out=ab)

        _by_batch(xp, x.shape[0], x.size, block)
        return acc.astype(x.dtype, copy=False)
    return kernel


def avg_pool_grad_kernel(xp):
    def kernel(grad, *, input_shape, **attrs):
        input_shape = _resolve_input_shape(input_shape, grad.shape, attrs)
        g = geometry(input_shape, attrs)
        _check_grad(grad.shape, g)
        plan = None if g.empty or grad.size == 0 else _jit_plan(
            xp, _JIT_AVG_POOL_GRAD, g, attrs, grad)
        if plan is not None:
            return _jit_avg_pool_grad(plan, grad, g, attrs)
        ct = _compute_dtype(xp, grad)
        dxp = xp.zeros(g.padded_shape, dtype=ct)
        if not (g.empty or grad.size == 0):
            counts = _counts(xp, g, attrs, ct)
            disjoint = _disjoint(g, attrs)

            def block(lo, hi):
                scaled = grad[lo:hi].astype(ct, copy=False) / counts
                db = dxp[lo:hi]
                for _, index in _taps(g, attrs):
                    if disjoint:
                        db[index] = scaled
                    else:
                        db[index] += scaled

            _by_batch(xp, grad.shape[0], int(np.prod(g.padded_shape)), block)
        return crop_spatial(xp, dxp, g.pads, g.in_sp, g.lead).astype(grad.dtype, copy=False)
    return kernel


def _resolve_input_shape(input_shape, grad_shape, attrs):
    """Fills unknown batch/channel dims of a static input shape from the gradient."""
    if None not in input_shape:
        return tuple(input_shape)
    fmt = attrs["data_format"]
    shape = list(to_channels_last(input_shape, fmt))
    last = to_channels_last(grad_shape, fmt)
    shape[0] = last[0] if shape[0] is None else shape[0]
    shape[-1] = last[-1] if shape[-1] is None else shape[-1]
    if None in shape:
        raise _err("input_shape %s has unknown spatial dimensions; the pooling gradient "
                   "needs them to be static." % (list(input_shape),))
    return from_channels_last(tuple(shape), fmt)


def _check_grad(grad_shape, g):
    if tuple(grad_shape) != g.out_shape:
        raise _err("the output gradient has shape %s but pooling an input of shape %s gives "
                   "%s. Check ksize, strides and padding." % (
                       list(grad_shape), list(g.in_shape), list(g.out_shape)))


# --------------------------------------------------------------------------------------------
# Compiled forms (backend.cpu_jit): the same kernels as loops, one pass over the input.
#
# Each loop runs a (lo, hi) range of the batch of a channels-last 2D input, C-contiguous,
# float32 or float64 (a 1D input is a 2D one with a unit axis; 3D, channels first, the
# half types and integers keep the numpy kernels). The loops walk the output windows and
# their taps with the channels innermost (contiguous, so the compare-and-select of every
# channel vectorizes) and skip the taps in the padding, and each reproduces its numpy
# kernel's bits element for element:
#
# * the maximum is numpy's ``maximum(acc, tap)`` in tap order: ``acc`` when it is larger
#   or NaN, else the tap (so the tap on ties, the later of -0.0 and 0.0); a padded tap
#   (-inf) never changes ``acc`` and ``maximum(-inf, t)`` is ``t``, so skipping it is
#   exact;
# * the gradient's mark is the numpy kernels' first maximum: the first tap equal to the
#   window's maximum, or the first NaN of a NaN window, never a padded tap;
# * disjoint windows assign (a marked element takes its gradient, an unmarked one the
#   zero ``g * 0`` of the gradient's sign when the whole gradient is finite, else +0, as
#   numpy's multiply by the mask and its masked copy give); overlapping windows add into
#   zeros in tap order, which is the reverse order of the windows an element lies in, so
#   the windows are walked from the last;
# * the average adds the taps in order, padded ones as +0.0 (which turns a -0.0 sum into
#   0.0 as numpy's sum over the padded input does), and divides by the window counts of
#   ``_window_counts`` in the input's dtype.
# --------------------------------------------------------------------------------------------

def _max_pool_loop(x, out, kh, kw, sh, sw, dh, dw, ph, pw, lo, hi):
    h_in, w_in, ch = x.shape[1], x.shape[2], x.shape[3]
    oh_n, ow_n = out.shape[1], out.shape[2]
    for n in range(lo, hi):
        for oh in range(oh_n):
            h0 = oh * sh - ph
            for ow in range(ow_n):
                w0 = ow * sw - pw
                first = True
                for i in range(kh):
                    ih = h0 + i * dh
                    if ih < 0 or ih >= h_in:
                        continue
                    for j in range(kw):
                        iw = w0 + j * dw
                        if iw < 0 or iw >= w_in:
                            continue
                        if first:
                            # maximum(-inf, t) is t: the first tap inside is copied.
                            for c in range(ch):
                                out[n, oh, ow, c] = x[n, ih, iw, c]
                            first = False
                        else:
                            for c in range(ch):
                                a = out[n, oh, ow, c]
                                v = x[n, ih, iw, c]
                                out[n, oh, ow, c] = a if (a > v) | (a != a) else v
                if first:
                    # A window of padding only (large dilations).
                    for c in range(ch):
                        out[n, oh, ow, c] = -np.inf


def _max_pool_grad_loop(x, grad, dx, kh, kw, sh, sw, dh, dw, ph, pw, assign, finite, relu,
                        fill, lo, hi):
    h_in, w_in, ch = x.shape[1], x.shape[2], x.shape[3]
    oh_n, ow_n = grad.shape[1], grad.shape[2]
    best = np.empty(ch, x.dtype)
    arg = np.empty(ch, np.int32)    # the tap of each channel's first maximum
    zero = np.zeros(1, dx.dtype)[0]
    one = np.ones(1, dx.dtype)[0]
    for n in range(lo, hi):
        if fill:
            # The windows miss some elements, or add up: the example is zeroed just
            # before they write it (in cache), not the whole array in a pass of its own.
            for ih in range(h_in):
                for iw in range(w_in):
                    for c in range(ch):
                        dx[n, ih, iw, c] = zero
        for p in range(oh_n):
            # Overlapping windows add up: the last window first puts each element's terms
            # in tap order (see above). Disjoint ones are written once, in any order.
            oh = p if assign else oh_n - 1 - p
            h0 = oh * sh - ph
            for q in range(ow_n):
                ow = q if assign else ow_n - 1 - q
                w0 = ow * sw - pw
                # The first maximum: a later tap takes over only when it is larger, or
                # when it is the first NaN.
                tap = -1
                first = True
                for i in range(kh):
                    ih = h0 + i * dh
                    for j in range(kw):
                        iw = w0 + j * dw
                        tap += 1
                        if ih < 0 or ih >= h_in or iw < 0 or iw >= w_in:
                            continue
                        if first:
                            for c in range(ch):
                                best[c] = x[n, ih, iw, c]
                                arg[c] = tap
                            first = False
                        else:
                            for c in range(ch):
                                a = best[c]
                                v = x[n, ih, iw, c]
                                up = (v > a) | ((v != v) & (a == a))
                                best[c] = v if up else a
                                arg[c] = tap if up else arg[c]
                if first:
                    continue
                tap = -1
                for i in range(kh):
                    ih = h0 + i * dh
                    for j in range(kw):
                        iw = w0 + j * dw
                        tap += 1
                        if ih < 0 or ih >= h_in or iw < 0 or iw >= w_in:
                            continue
                        # Disjoint windows: the unmarked zero is g * 0 (numpy's multiply
                        # by the mask) for a finite gradient, +0 (its masked copy)
                        # otherwise; relu multiplies by x > 0 as ReluGrad does. One loop
                        # per case: a select on a flag inside the loop costs 25%.
                        if assign and relu:
                            for c in range(ch):
                                g = grad[n, oh, ow, c]
                                z = g * zero if finite else zero
                                r = g if arg[c] == tap else z
                                f = one if x[n, ih, iw, c] > zero else zero
                                dx[n, ih, iw, c] = r * f
                        elif assign and finite:
                            for c in range(ch):
                                g = grad[n, oh, ow, c]
                                dx[n, ih, iw, c] = g if arg[c] == tap else g * zero
                        elif assign:
                            for c in range(ch):
                                g = grad[n, oh, ow, c]
                                dx[n, ih, iw, c] = g if arg[c] == tap else zero
                        else:
                            for c in range(ch):
                                g = grad[n, oh, ow, c]
                                dx[n, ih, iw, c] = dx[n, ih, iw, c] + (
                                    g if arg[c] == tap else zero)
        if relu and not assign:
            for ih in range(h_in):
                for iw in range(w_in):
                    for c in range(ch):
                        f = one if x[n, ih, iw, c] > zero else zero
                        dx[n, ih, iw, c] = dx[n, ih, iw, c] * f


def _avg_pool_loop(x, counts, out, kh, kw, sh, sw, dh, dw, ph, pw, lo, hi):
    h_in, w_in, ch = x.shape[1], x.shape[2], x.shape[3]
    oh_n, ow_n = out.shape[1], out.shape[2]
    zero = np.zeros(1, out.dtype)[0]
    for n in range(lo, hi):
        for oh in range(oh_n):
            h0 = oh * sh - ph
            for ow in range(ow_n):
                w0 = ow * sw - pw
                first = True
                for i in range(kh):
                    ih = h0 + i * dh
                    for j in range(kw):
                        iw = w0 + j * dw
                        if ih >= 0 and ih < h_in and iw >= 0 and iw < w_in:
                            if first:
                                for c in range(ch):
                                    out[n, oh, ow, c] = x[n, ih, iw, c]
                            else:
                                for c in range(ch):
                                    out[n, oh, ow, c] = out[n, oh, ow, c] + x[n, ih, iw, c]
                        elif first:
                            for c in range(ch):
                                out[n, oh, ow, c] = zero
                        else:
                            # A padded tap adds +0 (a -0.0 sum becomes 0.0, as in numpy).
                            for c in range(ch):
                                out[n, oh, ow, c] = out[n, oh, ow, c] + zero
                        first = False
                count = counts[oh, ow]
                for c in range(ch):
                    out[n, oh, ow, c] = out[n, oh, ow, c] / count


def _avg_pool_grad_loop(grad, counts, dx, kh, kw, sh, sw, dh, dw, ph, pw, assign, fill,
                        lo, hi):
    h_in, w_in, ch = dx.shape[1], dx.shape[2], dx.shape[3]
    oh_n, ow_n = grad.shape[1], grad.shape[2]
    scaled = np.empty(ch, dx.dtype)
    zero = np.zeros(1, dx.dtype)[0]
    for n in range(lo, hi):
        if fill:
            for ih in range(h_in):
                for iw in range(w_in):
                    for c in range(ch):
                        dx[n, ih, iw, c] = zero
        for p in range(oh_n):
            oh = p if assign else oh_n - 1 - p
            h0 = oh * sh - ph
            for q in range(ow_n):
                ow = q if assign else ow_n - 1 - q
                w0 = ow * sw - pw
                count = counts[oh, ow]
                for c in range(ch):
                    scaled[c] = grad[n, oh, ow, c] / count
                for i in range(kh):
                    ih = h0 + i * dh
                    if ih < 0 or ih >= h_in:
                        continue
                    for j in range(kw):
                        iw = w0 + j * dw
                        if iw < 0 or iw >= w_in:
                            continue
                        if assign:
                            for c in range(ch):
                                dx[n, ih, iw, c] = scaled[c]
                        else:
                            for c in range(ch):
                                dx[n, ih, iw, c] = dx[n, ih, iw, c] + scaled[c]


def _signatures(arrays, ints, flags=0):
    """numba signatures of a loop over float32 and float64 arrays: ``arrays`` is a string
    of 'r' (a 4D C-contiguous input, read-only allowed: constants' arrays are), 'c' (a 2D
    one) and 'a' (a 4D C-contiguous output), then ``ints`` int64 geometry arguments,
    ``flags`` booleans and the (lo, hi) range."""
    out = []
    for t in ("float32", "float64"):
        kinds = {"r": "Array(%s, 4, 'C', readonly=True)" % t,
                 "c": "Array(%s, 2, 'C', readonly=True)" % t, "a": "%s[:, :, :, ::1]" % t}
        args = [kinds[k] for k in arrays] + ["int64"] * ints + ["boolean"] * flags
        out.append("void(%s)" % ", ".join(args + ["int64", "int64"]))
    return out


_JIT_MAX_POOL = cpu_jit.kernel(_max_pool_loop, signatures=_signatures("ra", 8))
_JIT_MAX_POOL_GRAD = cpu_jit.kernel(_max_pool_grad_loop, signatures=_signatures("rra", 8, 4))
_JIT_AVG_POOL = cpu_jit.kernel(_avg_pool_loop, signatures=_signatures("rca", 8))
_JIT_AVG_POOL_GRAD = cpu_jit.kernel(_avg_pool_grad_loop, signatures=_signatures("rca", 8, 2))

# The compiled loops split over the cores from this many input elements. They release
# the GIL for a whole block, but they run at the speed of memory, and a second core
# reading what the first one's cache holds lost below about 10M elements: two threads
# against one, wall time, 2x2/2 (see docs/design.md): 1.26x (max pool) and 1.27x (its
# gradient) for [64, 26, 26, 32], 1.1-1.25x for [64, 52, 52, 32]; 0.58x and 1.02x for
# [64, 74, 74, 32] (11M), 0.52x and 0.60x for [64, 104, 104, 32] (22M).
JIT_MIN_ELEMENTS = 1 << 23


class _JitPlan(NamedTuple):
    """A pooling op as its compiled loop runs it: the loop and 2D channels-last geometry."""

    fn: object           # the compiled loop
    ints: tuple          # kh, kw, sh, sw, dh, dw, ph, pw
    out_hw: tuple        # the output's (height, width)
    unit: bool           # a 1D op run as 2D (a unit height axis)


def _jit_plan(xp, kern, g, attrs, *arrays):
    """The compiled form of a pooling op on ``arrays``, or None where numpy runs.

    numpy runs on other array modules, without numba (or with it turned off), under
    ``cpu_jit.MIN_ELEMENTS`` elements, for 3D pooling, channels first, dtypes other than
    float32 and float64 (the half types, which numpy computes in float32, and integers),
    and for inputs of different dtypes or misaligned ones (a view into a byte buffer).
    """
    if not cpu_threads.is_numpy(xp) or g.lead != 1 or len(g.k) > 2:
        return None
    dtype = arrays[0].dtype
    if dtype not in (np.float32, np.float64) or any(
            a.dtype != dtype or not a.flags.aligned for a in arrays):
        return None
    if not cpu_jit.wanted(int(np.prod(g.in_shape))):
        return None
    fn = kern.compiled()
    if fn is None:
        return None
    k, s, d = tuple(g.k), tuple(attrs["strides"]), tuple(attrs["dilations"])
    pads, out_sp = tuple(g.pads), tuple(g.out_sp)
    unit = len(k) == 1
    if unit:
        k, s, d, pads, out_sp = (1,) + k, (1,) + s, (1,) + d, ((0, 0),) + pads, (1,) + out_sp
    ints = (k[0], k[1], s[0], s[1], d[0], d[1], pads[0][0], pads[1][0])
    return _JitPlan(fn, tuple(int(v) for v in ints), out_sp, unit)


def _as4d(a, plan):
    """``a`` as a C-contiguous [N, H, W, C] array (a view when it is contiguous)."""
    a = np.ascontiguousarray(a)
    return a.reshape(a.shape[0], 1, a.shape[1], a.shape[2]) if plan.unit else a


def _jit_counts(g, attrs, plan, dtype):
    """The valid taps of every window as an [out_h, out_w] array of ``dtype``."""
    counts = _window_counts(g, attrs["strides"], attrs["dilations"])
    return np.ascontiguousarray(counts.reshape(plan.out_hw).astype(dtype))


def _covers(g, attrs):
    """Whether the windows tile the whole input, so that a gradient loop that assigns
    writes every element; elsewhere the loops zero each example first (overlapping
    windows add into zeros)."""
    return _tiles(g, attrs) and all(o * k == n for o, k, n in zip(g.out_sp, g.k, g.in_sp))


def _jit_run(block, n, elements):
    cpu_threads.run_blocks(block, n, elements, min_elements=JIT_MIN_ELEMENTS)


def _jit_max_pool(plan, x, g):
    out = np.empty(g.out_shape, dtype=x.dtype)
    x4, o4 = _as4d(x, plan), _as4d(out, plan)
    fn, ints = plan.fn, plan.ints
    _jit_run(lambda lo, hi: fn(x4, o4, *ints, lo, hi), x.shape[0], x.size)
    return out


def _jit_max_pool_grad(plan, x, grad, g, attrs, relu):
    # MaxPoolGradWithOutput runs this too: the loop recomputes the maxima from the taps
    # it reads anyway (see docs/design.md).
    assign, fill = _disjoint(g, attrs), not _covers(g, attrs)
    dx = np.empty(x.shape, dtype=grad.dtype)
    finite = assign and _all_finite(np, grad)
    x4, g4, d4 = _as4d(x, plan), _as4d(grad, plan), _as4d(dx, plan)
    fn, ints = plan.fn, plan.ints
    _jit_run(lambda lo, hi: fn(x4, g4, d4, *ints, assign, finite, bool(relu), fill, lo, hi),
             x.shape[0], x.size)
    return dx


def _jit_avg_pool(plan, x, g, attrs):
    out = np.empty(g.out_shape, dtype=x.dtype)
    counts = _jit_counts(g, attrs, plan, x.dtype)
    x4, o4 = _as4d(x, plan), _as4d(out, plan)
    fn, ints = plan.fn, plan.ints
    _jit_run(lambda lo, hi: fn(x4, counts, o4, *ints, lo, hi), x.shape[0], x.size)
    return out


def _jit_avg_pool_grad(plan, grad, g, attrs):
    assign, fill = _disjoint(g, attrs), not _covers(g, attrs)
    dx = np.empty(g.in_shape, dtype=grad.dtype)
    counts = _jit_counts(g, attrs, plan, grad.dtype)
    g4, d4 = _as4d(grad, plan), _as4d(dx, plan)
    fn, ints = plan.fn, plan.ints
    _jit_run(lambda lo, hi: fn(g4, counts, d4, *ints, assign, fill, lo, hi),
             grad.shape[0], dx.size)
    return dx
