"""The convolution primitives: ``Conv``, ``ConvBackpropInput`` and ``ConvBackpropFilter``, in
a plain and a depthwise family.

The kernel builds a strided *window view* ``[N, *out, *k, C]`` of the padded input (no
copy), lays it out as one matrix (im2col) and multiplies it by the filter in a single BLAS
call, so the same code runs on numpy and cupy.

In an optimized training step the optimizer's ``conv_columns`` pass builds that matrix once,
as an ``Im2Col`` node, for a convolution and the filter gradient of the same input (see
``function/passes/conv_columns.py``).

On the CPU, with the optional compiled kernels (``backend/cpu_jit``, numba), the im2col
copy and the input gradient's col2im scatter are compiled loops, one pass each over a
block of examples, that read and write the unpadded input: the im2col values bit for
bit, the scatter's taps added in the numpy form's order. Without numba, with
``EAGERFLOW_CPU_KERNELS=numpy``, for small inputs and on cupy the numpy forms run.

The input gradient is the transposed convolution ``ConvBackpropInput`` (one GEMM, then a
scatter-add of the columns per kernel tap) and the filter gradient is ``ConvBackpropFilter``
(one GEMM over the same window view). Each of the three is linear in each input, so each
one's gradient is expressed with the other two and higher-order gradients work::

    d Conv(x, w)           = BackpropInput(g, w),  BackpropFilter(x, g)
    d BackpropInput(dy, w) = Conv(g, w),            BackpropFilter(g, dy)
    d BackpropFilter(x, dy) = BackpropInput(dy, g), Conv(x, g)

The references for the sweeps are plain loops over output positions.
"""

from __future__ import annotations

import contextlib
import itertools

import numpy as np

from eagerflow import dtypes as _d
from eagerflow import errors
from eagerflow.backend import blas_threads, cpu_blas, cpu_jit, cpu_threads
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT, conv_cost
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.nn.window_geometry import (
    CHANNELS_FIRST, FORMATS, _err, _prod, conv_geometry, crop_spatial, from_channels_last,
    pad_spatial, tap_slices, to_channels_last, windows,
)

__all__ = []

EXPORTS = {}


# --------------------------------------------------------------------------------------------
# The three convolutions on arrays, written against xp.
# --------------------------------------------------------------------------------------------

def _compute_dtype(xp, a):
    # Half types accumulate in float32: numpy has no BLAS for them and TF accumulates wider.
    return xp.float32 if a.dtype.itemsize == 2 else a.dtype


def _columns(xp, win, ct, threads=True):
    """The window view ``[N, *out, *k, C]`` copied into a C-contiguous array of dtype
    ``ct`` (im2col): on numpy, blocks of the batch on every core (``threads``) or on the
    calling thread. The numpy form of the compiled ``_im2col_loop`` (same values).

    With one input channel the copy goes tap by tap: numpy copies the whole window view
    with an inner loop over the channel axis, one element long (one thread, CPU time,
    median of 25, a [64, 28, 28, 1] input with a 3x3 window: 0.97 ms for the view, 0.22 ms
    for the nine tap slices). With 3 or 32 channels the view's copy was the faster one
    (0.72 against 2.16 ms, 0.56 against 2.71 ms).
    """
    if not cpu_threads.is_numpy(xp):
        return xp.ascontiguousarray(win).astype(ct, copy=False)
    cols = np.empty(win.shape, dtype=ct)
    nd = (win.ndim - 2) // 2
    if win.shape[-1] == 1 and nd:
        spatial = (slice(None),) * nd
        taps = [spatial + tap for tap in itertools.product(*[range(k) for k in
                                                              win.shape[1 + nd:1 + 2 * nd]])]

        def block(lo, hi):
            dst, src = cols[lo:hi], win[lo:hi]
            for tap in taps:
                dst[(slice(None),) + tap] = src[(slice(None),) + tap]
    else:
        def block(lo, hi):
            cols[lo:hi] = win[lo:hi]

    if threads:
        cpu_threads.run_blocks(block, win.shape[0], cols.size)
    else:
        block(0, win.shape[0])
    return cols


def _column_matrix(xp, x, g, strides, dilations, ct):
    """The im2col matrix ``[N * prod(out), prod(k) * C]`` of the channels-last input ``x``
    of geometry ``g``, in dtype ``ct``: rows in output order, columns in (tap, channel)
    order. The compiled loop where it applies (``_jit_columns``), else the padded input's
    window view copied by ``_columns``; the same values either way."""
    m, kc = x.shape[0] * _prod(g.out_sp), _prod(g.k) * x.shape[-1]
    fn = _jit_columns(xp, x, ct, m * kc)
    if fn is not None:
        cols = np.empty((m, kc), dtype=ct)
        xf, flat, geo = _flat_input(x, ct), cols.reshape(-1), _jit_geometry(g, strides,
                                                                           dilations)
        cpu_threads.run_blocks(lambda lo, hi: fn(xf, flat, geo, 0, lo, hi), x.shape[0],
                               cols.size, min_elements=COLUMN_THREADS_MIN)
        return cols
    win = windows(xp, pad_spatial(xp, x, g.pads), g.out_sp, g.k, strides, dilations)
    return _columns(xp, win, ct).reshape(m, kc)


# --------------------------------------------------------------------------------------------
# Compiled column kernels (backend/cpu_jit): the im2col copy and the col2im scatter, each
# one pass over a block of examples, reading or writing the unpadded input (the padding
# is read as zeros and never copied). Every rank runs as 3-D, with unit leading spatial
# axes. ``geo`` holds per spatial axis (of three) the output size, kernel size, stride,
# dilation, padding before and input size, then the channels (see ``_jit_geometry``).
# Indices are formed as unsigned integers: numba wraps negative signed indices, and that
# check in the inner loops tripled the copies' time.
# --------------------------------------------------------------------------------------------

def _im2col_loop(x, cols, geo, base, lo, hi):
    """Columns of examples ``lo:hi`` of ``x`` (flat [N, D, H, W, C]) into ``cols`` (flat
    [N - base, P, K*C]): the numpy form's values, copied in one pass."""
    od_, oh_, ow_ = geo[0], geo[1], geo[2]
    kd_, kh_, kw_ = geo[3], geo[4], geo[5]
    sd, sh, sw = geo[6], geo[7], geo[8]
    dd, dh, dw = geo[9], geo[10], geo[11]
    pd, ph, pw = geo[12], geo[13], geo[14]
    d_, h_, w_, c_ = geo[15], geo[16], geo[17], geo[18]
    zero = cols.dtype.type(0)
    x_n = d_ * h_ * w_ * c_
    row_len = kd_ * kh_ * kw_ * c_
    for n in range(lo, hi):
        q = (n - base) * od_ * oh_ * ow_ * row_len
        for od in range(od_):
            for oh in range(oh_):
                if c_ == 1:
                    # One channel: a tap's copy along the output row (an inner loop of one
                    # element per position and tap ran at a third of the speed).
                    t = 0
                    for kd in range(kd_):
                        i_d = od * sd - pd + kd * dd
                        for kh in range(kh_):
                            i_h = oh * sh - ph + kh * dh
                            inside = 0 <= i_d < d_ and 0 <= i_h < h_
                            s = n * x_n + (i_d * h_ + i_h) * w_
                            for kw in range(kw_):
                                # Outputs w_lo:w_hi read inside the input, the rest zeros.
                                v = pw - kw * dw
                                w_lo = 0 if v <= 0 else min((v + sw - 1) // sw, ow_)
                                v = w_ - 1 + pw - kw * dw
                                w_hi = w_lo if v < 0 else max(min(ow_, v // sw + 1), w_lo)
                                if not inside:
                                    w_lo = w_hi = ow_
                                b = s + kw * dw - pw
                                for ow in range(w_lo):
                                    cols[np.uint64(q + ow * row_len + t)] = zero
                                for ow in range(w_lo, w_hi):
                                    cols[np.uint64(q + ow * row_len + t)] = \
                                        x[np.uint64(b + ow * sw)]
                                for ow in range(w_hi, ow_):
                                    cols[np.uint64(q + ow * row_len + t)] = zero
                                t += 1
                    q += ow_ * row_len
                else:
                    for ow in range(ow_):
                        for kd in range(kd_):
                            i_d = od * sd - pd + kd * dd
                            for kh in range(kh_):
                                i_h = oh * sh - ph + kh * dh
                                inside = 0 <= i_d < d_ and 0 <= i_h < h_
                                s = n * x_n + (i_d * h_ + i_h) * w_ * c_
                                for kw in range(kw_):
                                    i_w = ow * sw - pw + kw * dw
                                    if inside and 0 <= i_w < w_:
                                        b = s + i_w * c_
                                        for c in range(c_):
                                            cols[np.uint64(q + c)] = x[np.uint64(b + c)]
                                    else:
                                        for c in range(c_):
                                            cols[np.uint64(q + c)] = zero
                                    q += c_


def _col2im_loop(cols, dx, geo, lo, hi):
    """Examples ``lo:hi`` of ``dx`` (flat [N, D, H, W, C]) as the sum of their columns
    (flat [N, P, K*C]) over the taps, added tap by tap in the numpy form's order (so the
    same bits), into a zeroed example that stays in cache."""
    od_, oh_, ow_ = geo[0], geo[1], geo[2]
    kd_, kh_, kw_ = geo[3], geo[4], geo[5]
    sd, sh, sw = geo[6], geo[7], geo[8]
    dd, dh, dw = geo[9], geo[10], geo[11]
    pd, ph, pw = geo[12], geo[13], geo[14]
    d_, h_, w_, c_ = geo[15], geo[16], geo[17], geo[18]
    zero = dx.dtype.type(0)
    x_n = d_ * h_ * w_ * c_
    row_len = kd_ * kh_ * kw_ * c_
    c_n = od_ * oh_ * ow_ * row_len
    for n in range(lo, hi):
        for i in range(n * x_n, (n + 1) * x_n):
            dx[np.uint64(i)] = zero
        t = 0
        for kd in range(kd_):
            for kh in range(kh_):
                for kw in range(kw_):
                    v = pw - kw * dw
                    w_lo = 0 if v <= 0 else min((v + sw - 1) // sw, ow_)
                    v = w_ - 1 + pw - kw * dw
                    w_hi = w_lo if v < 0 else max(min(ow_, v // sw + 1), w_lo)
                    for od in range(od_):
                        i_d = od * sd - pd + kd * dd
                        if not 0 <= i_d < d_:
                            continue
                        for oh in range(oh_):
                            i_h = oh * sh - ph + kh * dh
                            if not 0 <= i_h < h_:
                                continue
                            q = n * c_n + (od * oh_ + oh) * ow_ * row_len + t
                            s = n * x_n + (i_d * h_ + i_h) * w_ * c_ + (kw * dw - pw) * c_
                            if c_ == 1:
                                for ow in range(w_lo, w_hi):
                                    dx[np.uint64(s + ow * sw)] += cols[np.uint64(q + ow * row_len)]
                            else:
                                for ow in range(w_lo, w_hi):
                                    a = q + ow * row_len
                                    b = s + ow * sw * c_
                                    for c in range(c_):
                                        dx[np.uint64(b + c)] += cols[np.uint64(a + c)]
                    t += c_


_FLOAT_TYPES = ("float32", "float64")
_IM2COL_JIT = cpu_jit.kernel(_im2col_loop, signatures=[
    "void(%s[::1], %s[::1], int64[::1], int64, int64, int64)" % (t, t) for t in _FLOAT_TYPES])
_COL2IM_JIT = cpu_jit.kernel(_col2im_loop, signatures=[
    "void(%s[::1], %s[::1], int64[::1], int64, int64)" % (t, t) for t in _FLOAT_TYPES])


def _jit_geometry(g, strides, dilations):
    """The ``geo`` vector of the compiled column kernels for a convolution geometry."""
    lead = 3 - len(g.k)
    one, zero = (1,) * lead, (0,) * lead
    pads = tuple(lo for lo, _ in g.pads)
    return np.array(one + tuple(g.out_sp) + one + tuple(g.k) + one + tuple(strides) + one
                    + tuple(dilations) + zero + pads + one + tuple(g.in_sp) + (g.c,),
                    dtype=np.int64)


def _jit_columns(xp, x, ct, elements):
    """The compiled im2col loop when it applies to this input, else None: numpy arrays,
    columns in float32 or float64 (half inputs are cast to float32 first, the numpy
    form's values), from ``cpu_jit.MIN_ELEMENTS`` column elements."""
    if not cpu_threads.is_numpy(xp) or np.dtype(ct).name not in _FLOAT_TYPES or \
            not (x.dtype == ct or (x.dtype.itemsize == 2 and ct == np.float32)) or \
            not cpu_jit.wanted(elements):
        return None
    return _IM2COL_JIT.compiled()


def _jit_col2im(xp, ct, groups, elements):
    """The compiled col2im loop for a transposed convolution of one group on numpy in
    float32 or float64 (the half types compute in float32) from ``cpu_jit.MIN_ELEMENTS``
    elements of columns and dx, else None."""
    if groups != 1 or not cpu_threads.is_numpy(xp) or np.dtype(ct).name not in _FLOAT_TYPES \
            or not cpu_jit.wanted(elements):
        return None
    return _COL2IM_JIT.compiled()


def _flat_input(x, ct):
    """``x`` as a flat C-contiguous array of dtype ``ct`` (no copy when it is one)."""
    return np.ascontiguousarray(x, dtype=ct).reshape(-1)


# The compiled im2col copy splits over threads only from this many column elements, as the
# compiled pooling loops do: the copy is bound by memory, and a second thread's start cost
# more than it saved. CNN step, two threads, quiet machine, 8 paired rounds of 30 steps:
# 9.91 ms with conv2's [7744, 288] columns split, 9.77 ms on one thread (0.99x, 0.92-1.00).
COLUMN_THREADS_MIN = 1 << 23

# The compiled input gradient runs over blocks of examples whose columns fill about this
# many elements (2 MB of float32, a core's L2 here): each block's GEMM writes them and the
# scatter reads them back from cache.
COLUMN_BLOCK = 1 << 19
# The forward pass of a narrow column matrix runs over blocks of about this many column
# elements (128 KB of float32): one thread, CPU time, [64, 28, 28, 1] 3x3 32 outputs,
# 0.64-0.75 ms against 0.89-1.01 ms in blocks of COLUMN_BLOCK (three runs of 61 rounds).
FORWARD_BLOCK = 1 << 15

# The filter gradient of a column matrix narrower than NARROW_COLUMNS (K*C of a first
# layer: 9 for one channel and a 3x3 window, 27 for three) runs over blocks of about
# ROW_BLOCK rows (whole examples), one block after the other on one BLAS thread.
NARROW_COLUMNS = 32
ROW_BLOCK = 2048


def _example_blocks(n, rows_per_example):
    """Fixed ``(lo, hi)`` ranges of examples (see ROW_BLOCK): they depend on the shape
    alone, so results never depend on the number of threads."""
    per = max(1, ROW_BLOCK // max(rows_per_example, 1))
    return [(lo, min(n, lo + per)) for lo in range(0, n, per)]


def _one_blas_thread():
    """A context in which numpy's BLAS runs on one thread (``blas_threads.share``)."""
    n = blas_threads.get_num_threads() or 1
    return blas_threads.share(n) if n > 1 else contextlib.nullcontext()


def _blocked_forward(fn, x, wm, g, strides, dilations, ct, channels_first):
    """The one-group forward GEMM over blocks of examples (``FORWARD_BLOCK``): the compiled
    im2col loop ``fn`` copies a block's columns on the calling thread, into a buffer that
    stays in cache for the block's GEMM. Returns [M, O], or [N, O, P] channels first.

    Narrow column matrices only (under ``NARROW_COLUMNS``: a first layer's): two threads,
    wall time, 31 interleaved rounds, against the threaded copy and one GEMM, 0.92x for
    [64, 28, 28, 1] 3x3 32 outputs and 0.97x for 3 channels, but 1.15x at [64, 13, 13, 32]
    and 64 outputs (288 columns), whose copy needs both cores; one thread 0.94-0.98x.
    """
    n, o = x.shape[0], wm.shape[1]
    p, kc = _prod(g.out_sp), wm.shape[0]
    per = max(1, FORWARD_BLOCK // max(p * kc, 1))
    xf, geo = _flat_input(x, ct), _jit_geometry(g, strides, dilations)
    buf = np.empty(min(per, n) * p * kc, dtype=ct)
    out = np.empty((n, o, p) if channels_first else (n * p, o), dtype=ct)
    for lo in range(0, n, per):
        hi = min(n, lo + per)
        cols = buf[:(hi - lo) * p * kc]
        fn(xf, cols, geo, lo, lo, hi)
        if channels_first:
            np.matmul(wm.T, cols.reshape(hi - lo, p, kc).transpose(0, 2, 1), out=out[lo:hi])
        else:
            np.matmul(cols.reshape((hi - lo) * p, kc), wm, out=out[lo * p:hi * p])
    return out


def _conv_forward(xp, x, w, g, strides, dilations, channels_first=False):
    """Channels-last forward convolution; ``w`` in grouped layout [*k, Cg, O].

    With ``channels_first`` the result comes back as [N, O, *out] straight from the GEMM.
    """
    nd = len(g.k)
    ct = _compute_dtype(xp, x)
    n = x.shape[0]
    m = n * _prod(g.out_sp)
    kp = _prod(g.k)
    groups, cg, o = g.groups, g.cg, g.o
    if groups == 1:
        kc, p = kp * cg, _prod(g.out_sp)
        wm = w.reshape(kc, o).astype(ct, copy=False)
        fn = _jit_columns(xp, x, ct, m * kc) if kc < NARROW_COLUMNS else None
        if fn is not None:
            out = _blocked_forward(fn, x, wm, g, strides, dilations, ct, channels_first)
        else:
            cols = _column_matrix(xp, x, g, strides, dilations, ct)
            # [O, K*C] @ [N, K*C, P] -> [N, O, P]: no transpose of the result needed.
            out = xp.matmul(wm.T, cols.reshape(n, p, kc).transpose(0, 2, 1)) \
                if channels_first else xp.matmul(cols, wm)
        if channels_first:
            return out.astype(x.dtype, copy=False).reshape((n, o) + g.out_sp)
    elif cg == 1 and groups == o:
        # Depthwise with multiplier 1: a multiply-add per kernel tap beats tiny GEMMs.
        xpad = pad_spatial(xp, x, g.pads)
        out = xp.zeros((n,) + g.out_sp + (o,), dtype=ct)
        wk = w.reshape(kp, o).astype(ct, copy=False)
        if m:
            taps = [index for _, index in tap_slices(g.k, g.out_sp, strides, dilations)]

            def block(lo, hi):
                ob, xb = out[lo:hi], xpad[lo:hi]
                for i, index in enumerate(taps):
                    ob += xb[index] * wk[i]

            cpu_threads.run_blocks(block, n, out.size, xp=xp)
        out = out.reshape(m, o)
    else:
        og = o // groups
        # [N, *out, *k, G, Cg] -> [G, N, *out, *k, Cg] -> [G, M, K*Cg]: one copy.
        win = windows(xp, pad_spatial(xp, x, g.pads), g.out_sp, g.k, strides, dilations)
        win = win.reshape(win.shape[:-1] + (groups, cg))
        axes = (2 * nd + 1,) + tuple(range(2 * nd + 1)) + (2 * nd + 2,)
        cols = win.transpose(axes).reshape(groups, m, kp * cg).astype(ct, copy=False)
        wg = w.reshape(kp, cg, groups, og).transpose(2, 0, 1, 3).reshape(groups, kp * cg, og)
        out = xp.matmul(cols, wg.astype(ct, copy=False)).transpose(1, 0, 2).reshape(m, o)
    out = out.astype(x.dtype, copy=False).reshape((n,) + g.out_sp + (o,))
    return xp.ascontiguousarray(xp.moveaxis(out, -1, 1)) if channels_first else out


def _gemm_accumulate(xp, out, a, b):
    """``out += a @ b`` in place: on numpy one BLAS call with beta = 1 (no product
    temporary, no add pass); ``out`` is a block of rows of a C-contiguous array."""
    if cpu_threads.is_numpy(xp):
        cpu_blas.gemm_accumulate(out, a, b)
    elif out.size and a.shape[1]:
        out += xp.matmul(a, b)


def _conv_backprop_input(xp, dy, w, g, strides, dilations):
    """Channels-last transposed convolution: the gradient of ``_conv_forward`` wrt x.

    With unit strides and one group, every kernel tap moves the whole output gradient by a
    fixed offset in the flattened padded input: ``dx[q + off(tap)] += dy[q] @ w[tap].T``
    over rows ``q`` of ``dy`` laid on the padded input grid (zeros past the outputs). That is
    one accumulating GEMM per tap straight into ``dx``, with no column matrix and no scatter
    (measured 3 ms against 8 ms for the columns and scatter-add on a [64, 13, 13, 32] input,
    3x3 filter, 64 outputs). Strided and grouped convolutions use one GEMM into columns and
    then a scatter-add per tap, as do inputs with under 8 channels.

    Where the compiled kernels run (one group, float32/float64 compute, see ``cpu_jit``),
    every case but a single tap's per-tap GEMM takes one GEMM into the columns of a block
    of examples and the compiled col2im scatter of them: faster than the per-tap GEMMs on
    every shape measured (one thread, CPU time: 0.65x at [64, 13, 13, 32] 3x3 64 outputs,
    0.82-0.87x for 3x3 and 5x5 SAME layers of 32-256 channels), slower for 1x1 (1.19x).
    """
    nd = len(g.k)
    ct = _compute_dtype(xp, dy)
    groups, cg, o = g.groups, g.cg, g.o
    c = groups * cg
    n = dy.shape[0]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(g.in_sp, g.pads))
    m = n * _prod(g.out_sp)
    kp = _prod(g.k)
    # The per-tap GEMMs below need unit strides, one group and 8 channels or more; with
    # a single tap they are one GEMM straight into dx, which the columns cannot beat.
    per_tap = groups == 1 and c >= 8 and all(s == 1 for s in strides)
    fn = None if per_tap and kp == 1 else \
        _jit_col2im(xp, ct, groups, m * kp * c + n * _prod(g.in_sp) * c)
    if fn is not None and m and kp * c and o:
        # Blocks of examples: one GEMM into the block's columns, then the compiled
        # scatter of them (still in cache) into the unpadded dx, on the calling thread.
        p, kc, x_n = _prod(g.out_sp), kp * c, _prod(g.in_sp) * c
        per = max(1, COLUMN_BLOCK // (p * kc))
        dym = dy.reshape(m, o).astype(ct, copy=False)
        wt = w.reshape(kc, o).astype(ct, copy=False).T
        buf = np.empty(min(per, n) * p * kc, dtype=ct)
        dx = np.empty((n,) + tuple(g.in_sp) + (c,), dtype=ct)
        flat, geo = dx.reshape(-1), _jit_geometry(g, strides, dilations)
        for lo in range(0, n, per):
            hi = min(n, lo + per)
            cols = buf[:(hi - lo) * p * kc]
            np.matmul(dym[lo * p:hi * p], wt, out=cols.reshape((hi - lo) * p, kc))
            fn(cols, flat[lo * x_n:hi * x_n], geo, 0, hi - lo)
        return dx.astype(dy.dtype, copy=False)
    # Few input channels make each tap's GEMM a skinny [rows, O] x [O, C] product that
    # runs slower than the scatter (3.4 ms against 1.2 ms for one channel): those scatter.
    if m and kp * c and o and per_tap:
        rows = n * _prod(padded)
        if tuple(g.out_sp) == padded:
            dyg = dy.astype(ct, copy=False)
        else:
            # Zeros past the outputs only (one slab per spatial axis), not a fill of the
            # whole grid that the copy then overwrites.
            dyg = xp.empty((n,) + padded + (o,), dtype=ct)
            inner = tuple(slice(0, s) for s in g.out_sp)
            dyg[(slice(None),) + inner] = dy
            for i in range(nd):
                dyg[(slice(None),) + inner[:i] + (slice(g.out_sp[i], None),)] = 0
        dyg = dyg.reshape(rows, o)
        wk = w.reshape(g.k + (c, o)).astype(ct, copy=False)
        dx = xp.empty((rows, c), dtype=ct)
        row_steps = [_prod(padded[i + 1:]) for i in range(nd)]
        # The first tap has offset 0 and covers every row: its product is written, the
        # others accumulate (no zero fill of dx).
        taps = list(itertools.product(*[range(k) for k in g.k]))
        xp.matmul(dyg, wk[taps[0]].T, out=dx)
        for tap in taps[1:]:
            off = sum(t * d * step for t, d, step in zip(tap, dilations, row_steps))
            _gemm_accumulate(xp, dx[off:], dyg[:rows - off], wk[tap].T)
        dxp = dx.reshape((n,) + padded + (c,))
        return crop_spatial(xp, dxp, g.pads, g.in_sp).astype(dy.dtype, copy=False)
    dxp = xp.zeros((n,) + padded + (groups, cg), dtype=ct)
    if m and kp * c and o and cg == 1 and groups == o:
        # Depthwise with multiplier 1: a multiply-add per kernel tap.
        dyc = dy.astype(ct, copy=False)[..., None]
        wk = w.reshape(kp, groups, 1).astype(ct, copy=False)
        taps = [index for _, index in tap_slices(g.k, g.out_sp, strides, dilations)]

        def block(lo, hi):
            db, gb = dxp[lo:hi], dyc[lo:hi]
            for i, index in enumerate(taps):
                db[index] += gb * wk[i]

        cpu_threads.run_blocks(block, n, dxp.size, xp=xp)
    elif m and kp * c and o:
        og = o // groups
        dyg = dy.reshape(m, groups, og).transpose(1, 0, 2).astype(ct, copy=False)
        wg = w.reshape(kp, cg, groups, og).transpose(2, 3, 0, 1).reshape(groups, og, kp * cg)
        cols = xp.matmul(dyg, wg.astype(ct, copy=False))      # [G, M, K*Cg]
        cols = cols.reshape((groups, n) + g.out_sp + g.k + (cg,))
        cols = xp.moveaxis(cols, 0, -2)                       # [N, *out, *k, G, Cg] (view)
        lead = (slice(None),) * (1 + nd)
        taps = list(tap_slices(g.k, g.out_sp, strides, dilations))

        def block(lo, hi):
            # Each block of the batch scatters into its own rows of dxp.
            db, cb = dxp[lo:hi], cols[lo:hi]
            for tap, index in taps:
                db[index] += cb[lead + tap]

        cpu_threads.run_blocks(block, n, dxp.size, xp=xp)
    dxp = dxp.reshape((n,) + padded + (c,))
    return crop_spatial(xp, dxp, g.pads, g.in_sp).astype(dy.dtype, copy=False)


def _conv_backprop_filter(xp, x, dy, g, strides, dilations):
    """Filter gradient of ``_conv_forward`` in grouped layout [*k, Cg, O].

    ``cols.T @ dy`` of the column matrix [M, K*Cg] and the output gradient [M, O] over
    the long M axis (narrow column matrices in blocks of examples whose products are
    summed in order). That
    orientation was the faster one on every shape measured (one thread, CPU time, median
    of 15): 0.70 against 0.86 ms for ``dy.T @ cols`` at [43264, 9] and 32 outputs, 2.50
    against 2.59 ms at [7744, 288] and 64; and OpenBLAS runs the one-channel first
    layer's [9, M] x [M, 32] at 35 GFLOP/s whole, at 60 in blocks of 1024-2048 rows.
    """
    nd = len(g.k)
    ct = _compute_dtype(xp, x)
    groups, cg, o = g.groups, g.cg, g.o
    m = x.shape[0] * _prod(g.out_sp)
    kp = _prod(g.k)
    if groups == 1:
        kc, p, n = kp * cg, _prod(g.out_sp), x.shape[0]
        dym = dy.reshape(m, o).astype(ct, copy=False)
        if not cpu_threads.is_numpy(xp) or kc >= NARROW_COLUMNS or m < 2 * ROW_BLOCK:
            dw = xp.matmul(_column_matrix(xp, x, g, strides, dilations, ct).T, dym)
        else:
            # Blocks of examples: each copies its columns and multiplies them while they
            # are in cache; the blocks' products are summed in order. One BLAS thread:
            # the small products gain nothing from two, and a BLAS split waits for a busy
            # core once per block.
            ranges = _example_blocks(n, p)
            part = np.empty((len(ranges), kc, o), dtype=ct)
            fn = _jit_columns(xp, x, ct, m * kc)
            if fn is not None:
                xf, geo = _flat_input(x, ct), _jit_geometry(g, strides, dilations)
                buf = np.empty((ranges[0][1] - ranges[0][0]) * p * kc, dtype=ct)
            else:
                win = windows(xp, pad_spatial(xp, x, g.pads), g.out_sp, g.k, strides,
                              dilations)
            with _one_blas_thread():
                for i, (lo, hi) in enumerate(ranges):
                    if fn is not None:
                        cols = buf[:(hi - lo) * p * kc]
                        fn(xf, cols, geo, lo, lo, hi)
                    else:
                        cols = _columns(xp, win[lo:hi], ct, threads=False)
                    np.matmul(cols.reshape((hi - lo) * p, kc).T, dym[lo * p:hi * p],
                              out=part[i])
            dw = part.sum(axis=0)
    elif cg == 1 and groups == o:
        # Depthwise with multiplier 1: one weighted sum per kernel tap.
        xpad = pad_spatial(xp, x, g.pads)
        dw = xp.zeros((kp, o), dtype=ct)
        if m:
            dyc = dy.astype(ct, copy=False)
            for i, (_, index) in enumerate(tap_slices(g.k, g.out_sp, strides, dilations)):
                dw[i] = (xpad[index] * dyc).reshape(m, o).sum(axis=0)
    else:
        og = o // groups
        win = windows(xp, pad_spatial(xp, x, g.pads), g.out_sp, g.k, strides, dilations)
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

# The half types compute in float32 on their own paths; the sweeps cover them too.
_SWEEP = (_d.float16, _d.bfloat16, _d.float32, _d.float64)


def _declare(names, depthwise, cases):
    fam = {}
    conv_name, input_name, filter_name = names
    fam["conv"] = registry.primitive(
        conv_name, _conv_kernel(depthwise), dtypes=FLOAT, family="nn",
        shape_fn=_conv_shape_fn(conv_name, depthwise), vjp=_conv_vjp(fam), saves=(0, 1),
        reference=_ref_conv(depthwise), samples=_samples(cases, "conv", depthwise),
        bad_samples=_bad_samples("conv", depthwise),
        sweep_dtypes=_SWEEP, tolerance={"float32": (1e-4, 1e-5)}, cost=conv_cost,
        hint="Filters are laid out as %s." % (
            "[*kernel, in_channels, channel_multiplier]" if depthwise
            else "[*kernel, in_channels, out_channels]"))
    fam["input"] = registry.primitive(
        input_name, _backprop_input_kernel(depthwise), dtypes=FLOAT, family="nn",
        shape_fn=_backprop_input_shape_fn(input_name, depthwise),
        vjp=_backprop_input_vjp(fam), saves=(0, 1),
        reference=_ref_backprop_input(depthwise),
        samples=_samples(cases, "input", depthwise),
        bad_samples=_bad_samples("input", depthwise), sweep_dtypes=_SWEEP,
        tolerance={"float32": (1e-4, 1e-5)}, cost=conv_cost)
    fam["filter"] = registry.primitive(
        filter_name, _backprop_filter_kernel(depthwise), dtypes=FLOAT, family="nn",
        shape_fn=_backprop_filter_shape_fn(filter_name, depthwise),
        vjp=_backprop_filter_vjp(fam), saves=(0, 1),
        reference=_ref_backprop_filter(depthwise),
        samples=_samples(cases, "filter", depthwise),
        bad_samples=_bad_samples("filter", depthwise), sweep_dtypes=_SWEEP,
        tolerance={"float32": (1e-4, 1e-5)}, cost=conv_cost)
    return fam["conv"], fam["input"], fam["filter"]


CONV, CONV_BACKPROP_INPUT, CONV_BACKPROP_FILTER = _declare(
    ("Conv", "ConvBackpropInput", "ConvBackpropFilter"), False, _CONV_CASES)
DEPTHWISE_CONV, DEPTHWISE_BACKPROP_INPUT, DEPTHWISE_BACKPROP_FILTER = _declare(
    ("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
     "DepthwiseConv2dNativeBackpropFilter"), True, _DEPTHWISE_CASES)


# --------------------------------------------------------------------------------------------
# Im2Col: the column matrix as a graph value. The optimizer's ``conv_columns`` pass writes
# it where a convolution and its filter gradient read the same input, so that both
# multiply one column matrix (see ``function/passes/conv_columns.py``).
# --------------------------------------------------------------------------------------------

def _im2col_geometry(x_shape, ksize, strides, dilations, padding, data_format):
    if data_format in CHANNELS_FIRST:
        raise _err("Im2Col takes channels-last inputs, got data_format %s." % data_format)
    if len(x_shape) != len(strides) + 2:
        raise _err("Im2Col: the input must be of rank %d, got shape %s."
                   % (len(strides) + 2, list(x_shape)))
    return conv_geometry(x_shape, tuple(ksize) + (x_shape[-1], 1), strides, dilations,
                         padding, data_format, False)


def _im2col_kernel(xp):
    def kernel(x, *, ksize, strides, dilations, padding, data_format):
        g = _im2col_geometry(x.shape, ksize, strides, dilations, padding, data_format)
        return _column_matrix(xp, x, g, strides, dilations, x.dtype)
    return kernel


def _im2col_shape(x, *, ksize, strides, dilations, padding, data_format):
    name = IM2COL_NAME
    g = _traced(name, lambda: _im2col_geometry(_known(x, name), ksize, strides, dilations,
                                               padding, data_format))
    sp = (g.n,) + tuple(g.out_sp)
    m = None if None in sp else _prod(sp)
    kc = None if g.c is None else _prod(g.k) * g.c
    return AbstractValue((m, kc), x.dtype)


def _im2col_vjp(g, x, out, *, ksize, strides, dilations, padding, data_format):
    # Im2Col(x) is the convolution of x with the identity filter [*k, C, K*C] (each output
    # channel picks one (tap, channel) of the window), so its gradient is that filter's
    # transposed convolution.
    from eagerflow.ops.array.reshape_ops import RESHAPE

    xs = _static_shape(x)
    geo = _im2col_geometry(xs, ksize, strides, dilations, padding, data_format)
    kc = _prod(geo.k) * xs[-1]
    eye = np.eye(kc, dtype=x.dtype.np_dtype).reshape(tuple(geo.k) + (xs[-1], kc))
    dy = execute(RESHAPE, (g,), {"shape": (-1,) + tuple(geo.out_sp) + (kc,)})
    return execute(CONV_BACKPROP_INPUT, (dy, eye), {
        "strides": strides, "dilations": dilations, "padding": padding,
        "data_format": data_format, "input_shape": xs})


def _ref_im2col(x, *, ksize, strides, dilations, padding, data_format):
    x = np.asarray(x)
    g = _im2col_geometry(x.shape, ksize, strides, dilations, padding, data_format)
    xl = np.pad(x, ((0, 0),) + g.pads + ((0, 0),))
    out = np.zeros((g.n,) + g.out_sp + g.k + (g.c,), x.dtype)
    for pos, index in _positions(g, strides, dilations):
        out[(slice(None),) + pos] = xl[(slice(None),) + index]
    return out.reshape(g.n * _prod(g.out_sp), _prod(g.k) * g.c)


_IM2COL_CASES = [
    ((2, 5, 5, 3), (3, 3), _attrs(2)),
    ((1, 7, 6, 2), (3, 2), _attrs(2, strides=2, padding="VALID")),
    ((1, 7, 7, 1), (3, 3), _attrs(2, dilations=2, padding=((1, 0), (2, 1)))),
    ((2, 9, 3), (3,), _attrs(1, strides=2)),
    ((1, 4, 4, 3, 2), (2, 2, 2), _attrs(3, strides=(1, 2, 1))),
    ((0, 5, 5, 3), (3, 3), _attrs(2)),
]


def _im2col_samples(rng, dtype):
    return [((_uniform(rng, xs, dtype),), dict(a, ksize=k)) for xs, k, a in _IM2COL_CASES]


def _im2col_bad(rng):
    f = np.float64
    err = errors.InvalidArgumentError
    a = dict(_attrs(2), ksize=(3, 3))
    return [((np.zeros((1, 3, 5, 5), f),), dict(a, data_format="NCHW"), err),
            ((np.zeros((5, 5, 3), f),), a, err),
            ((np.zeros((1, 2, 2, 3), f),), dict(a, padding="VALID"), err)]


IM2COL_NAME = "Im2Col"
IM2COL = registry.primitive(
    IM2COL_NAME, _im2col_kernel, dtypes=FLOAT, family="nn", shape_fn=_im2col_shape,
    vjp=_im2col_vjp, saves=(0,), reference=_ref_im2col, samples=_im2col_samples,
    bad_samples=_im2col_bad, sweep_dtypes=_SWEEP,
    doc="The im2col matrix [N * prod(out), prod(ksize) * C] of a channels-last input "
        "(rows in output order, columns in (tap, channel) order); written by the "
        "optimizer, no public function makes it.")
