"""The input gradient of layer normalization's normalize step, as one kernel.

For rows ``c`` (the centered input ``x - mean(x)``), ``r = rsqrt(var(x) + eps)`` (one per
row), ``n = c * r`` and ``g`` the cotangent of ``n``, with ``<.>`` a row mean::

    dx = r * (g - <g> - n * <g * n>)

which is what the chain of the composite's gradient sums: ``g * r`` through the centered
input, ``-<g * r>`` through the mean and ``-r**3 c <g c>`` through the variance (ten graph
nodes, four of them full-size broadcasts or products). Here it is six in-place passes and
two row sums (GEMVs, ``backend/cpu_blas.sum_axes``) per block of rows, the blocks small
enough to stay in cache and shared among the CPU threads. The blocks are fixed by the row
size alone, so any number of threads gives the one-thread bits, run to run (a row sum
rounds by where its block starts, so another block size rounds differently). float16 and
bfloat16 are computed in float32 and rounded once.

Example:
    >>> import numpy as np
    >>> from eagerflow.ops.nn import layer_norm_kernels
    >>> c = np.array([[-1.0, 1.0]])
    >>> layer_norm_kernels.input_grad(np, np.array([[1.0, 1.0]]), c, np.ones((1, 1))).tolist()
    [[0.0, 0.0]]
"""

from __future__ import annotations

from eagerflow.backend import cpu_blas, cpu_threads

__all__ = ["input_grad", "BLOCK_BYTES"]

# A block's four row-sized buffers stay within one core's L2 cache.
BLOCK_BYTES = 1 << 18
PASSES = 8


def _row_mean(xp, a):
    if cpu_threads.is_numpy(xp):
        out = cpu_blas.sum_axes(a, (a.ndim - 1,))
        if out is not None:
            return (out / a.shape[-1]).reshape(out.shape + (1,))
    return a.mean(axis=-1, keepdims=True)


def _block(xp, g, c, r, out, n):
    xp.multiply(c, r, out=n)
    xp.multiply(g, n, out=out)
    b = _row_mean(xp, out)
    a = _row_mean(xp, g)
    xp.multiply(n, b, out=out)
    xp.subtract(g, out, out=out)
    out -= a
    out *= r


def input_grad(xp, g, c, r):
    """``r * (g - <g> - n <g n>)``, ``n = c r``: ``g``, ``c`` of one shape ``[..., N]`` and
    ``r`` of ``[..., 1]``, all of one floating dtype."""
    dtype = g.dtype
    work = xp.dtype(xp.float32) if dtype.itemsize < 4 else dtype
    out = xp.empty(g.shape, dtype)
    width = g.shape[-1]
    if g.size == 0 or width == 0:
        out[...] = 0
        return out
    rows = g.size // width
    g2, c2, r2 = (xp.ascontiguousarray(a).reshape(rows, -1) for a in (g, c, r))
    o2 = out.reshape(rows, width)
    step = max(1, BLOCK_BYTES // (work.itemsize * width))
    if not cpu_threads.is_numpy(xp):
        step = rows

    def blocks(lo, hi):
        n = min(step, rows)
        scratch = xp.empty((n, width), work)
        tmp = None if dtype == work else xp.empty((n, width), work)
        for k in range(lo, hi):
            cut = slice(k * step, min(rows, (k + 1) * step))
            m = cut.stop - cut.start
            ins = [a[cut] if a.dtype == work else a[cut].astype(work) for a in (g2, c2, r2)]
            target = o2[cut] if tmp is None else tmp[:m]
            _block(xp, *ins, target, scratch[:m])
            if tmp is not None:
                o2[cut] = target

    cpu_threads.run_blocks(blocks, -(-rows // step), g.size,
                           min_elements=cpu_threads.fused_min_elements(PASSES), xp=xp)
    return out
