"""The GELU kernels: the activation and its gradient as a few in-place passes per block.

With ``c = sqrt(2 / pi)``, ``a = 0.044715``, ``T = tanh(c x (1 + a x**2))`` (the tanh
form) and ``E = erf(x / sqrt(2))`` (the exact form)::

    gelu(x)        = 0.5 x (1 + T)                    0.5 x (1 + E)
    d gelu / dx    = (1 + T) (0.5 + q (1 - T))        0.5 (1 + E) + x exp(-x**2 / 2) / sqrt(2 pi)
    with q         = x (0.5 c + 1.5 a c x**2)

(the tanh form's derivative ``0.5 (1 + T) + 0.5 x (1 - T**2) c (1 + 3 a x**2)`` with
``1 - T**2`` factored as ``(1 - T)(1 + T)``). The tanh form is 8 numpy passes forward and
14 backward, the exact form 5 and 11, each pass writing into the result or one of two
scratch buffers. The composite they replace was 9 graph nodes forward and a 13-op
gradient region, and kept five full-size intermediates alive for the backward pass.

On numpy the passes run over blocks of ``BLOCK_BYTES`` of the flattened input, so that
every pass after the first reads the cache rather than memory (one thread, CPU time,
[1024, 512] float32: the gradient's passes take 1.1 ms over blocks of 64K elements, 1.9
ms over the whole array), and large inputs share the blocks among the CPU threads
(``backend/cpu_threads``). Every element is computed by the same passes wherever its
block starts, so results are the same bits on any number of threads and run to run.
float16 and bfloat16 are computed in float32 and rounded once; cupy arrays run the same
passes over the whole array.

Example:
    >>> import numpy as np
    >>> from eagerflow.ops.nn import gelu_kernels
    >>> gelu_kernels.forward(np, np.array([0.0, 1.0]), True).round(4).tolist()
    [0.0, 0.8412]
"""

from __future__ import annotations

import math

from eagerflow.backend import cpu_threads

__all__ = ["forward", "backward", "BLOCK_BYTES"]

C = math.sqrt(2.0 / math.pi)
A = 0.044715
SQRT_HALF = math.sqrt(0.5)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

# A block's input, result and two scratch buffers stay within one core's L2 cache.
BLOCK_BYTES = 1 << 18
FORWARD_PASSES = 8
BACKWARD_PASSES = 14


def _forward_block(xp, x, out, approximate, scratch):
    del scratch
    if approximate:
        xp.multiply(x, x, out=out)
        out *= A * C
        out += C
        out *= x
        xp.tanh(out, out=out)
    else:
        xp.multiply(x, SQRT_HALF, out=out)
        xp.special.erf(out, out=out)
    out += 1.0
    out *= x
    out *= 0.5


def _backward_block(xp, g, x, out, approximate, scratch):
    h, q = scratch
    if approximate:
        xp.multiply(x, x, out=h)
        xp.multiply(h, 1.5 * A * C, out=q)
        q += 0.5 * C
        q *= x
        h *= A * C
        h += C
        h *= x
        xp.tanh(h, out=h)
        xp.subtract(1.0, h, out=out)
        h += 1.0
        out *= q
        out += 0.5
        out *= h
    else:
        xp.multiply(x, x, out=h)
        h *= -0.5
        xp.exp(h, out=h)
        h *= x
        h *= INV_SQRT_2PI
        xp.multiply(x, SQRT_HALF, out=out)
        xp.special.erf(out, out=out)
        out += 1.0
        out *= 0.5
        out += h
    out *= g


def _work_dtype(xp, dtype):
    return xp.dtype(xp.float32) if dtype.itemsize < 4 else dtype


def _run(xp, block, arrays, approximate, passes, n_scratch):
    """``block(*inputs, out, approximate, scratch)`` over the flattened arrays, into a new
    array of the first one's shape and dtype."""
    first = arrays[0]
    dtype = first.dtype
    work = _work_dtype(xp, dtype)
    out = xp.empty(first.shape, dtype)
    if first.size == 0:
        return out
    size = first.size
    if not cpu_threads.is_numpy(xp):
        ins = [a if a.dtype == work else a.astype(work) for a in arrays]
        tmp = out if dtype == work else xp.empty(first.shape, work)
        block(xp, *ins, tmp, approximate, [xp.empty(first.shape, work)
                                           for _ in range(n_scratch)])
        if tmp is not out:
            out[...] = tmp
        return out
    flat = [xp.ascontiguousarray(a).reshape(-1) for a in arrays]
    flat_out = out.reshape(-1)
    step = max(1, BLOCK_BYTES // work.itemsize)
    count = -(-size // step)

    def blocks(lo, hi):
        n = min(step, size)
        scratch = [xp.empty(n, work) for _ in range(n_scratch)]
        tmp = None if dtype == work else xp.empty(n, work)
        for k in range(lo, hi):
            cut = slice(k * step, min(size, (k + 1) * step))
            m = cut.stop - cut.start
            ins = [a[cut] if a.dtype == work else a[cut].astype(work) for a in flat]
            target = flat_out[cut] if tmp is None else tmp[:m]
            block(xp, *ins, target, approximate, [s[:m] for s in scratch])
            if tmp is not None:
                flat_out[cut] = target

    cpu_threads.run_blocks(blocks, count, size,
                           min_elements=cpu_threads.fused_min_elements(passes))
    return out


def forward(xp, x, approximate):
    """GELU of ``x`` (a floating array): the tanh form when ``approximate``, else erf's."""
    return _run(xp, _forward_block, (x,), approximate, FORWARD_PASSES, 0)


def backward(xp, g, x, approximate):
    """``g * gelu'(x)`` for ``g`` and ``x`` of one shape and dtype."""
    return _run(xp, _backward_block, (g, x), approximate, BACKWARD_PASSES, 2)
