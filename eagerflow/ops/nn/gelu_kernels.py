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

On float32 and float64 inputs from ``cpu_jit.MIN_ELEMENTS`` elements, when numba is
usable (``backend.cpu_jit``), the arithmetic between the transcendental passes runs as
compiled loops: the tanh form becomes three passes each way (the tanh argument, numpy's
``tanh`` in place, then the rest of the formula in one loop), with the same operations in
the same order and precision, so the same bits as the numpy passes. ``tanh``, ``exp`` and
``erf`` stay numpy's (and scipy's): numpy's are vectorized, where a compiled loop calls the
C library's once per element (for ``tanh`` 38x slower; see docs/design.md).

Example:
    >>> import numpy as np
    >>> from eagerflow.ops.nn import gelu_kernels
    >>> gelu_kernels.forward(np, np.array([0.0, 1.0]), True).round(4).tolist()
    [0.0, 0.8412]
"""

from __future__ import annotations

import math

import numpy as np

from eagerflow.backend import cpu_jit, cpu_threads

__all__ = ["forward", "backward", "BLOCK_BYTES"]

C = math.sqrt(2.0 / math.pi)
A = 0.044715
SQRT_HALF = math.sqrt(0.5)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

# A block's input, result and two scratch buffers stay within one core's L2 cache.
BLOCK_BYTES = 1 << 18
FORWARD_PASSES = 8
BACKWARD_PASSES = 14


# Compiled loops (backend.cpu_jit) over one block: each statement is one of the numpy
# passes, in their order, so every rounding step is theirs (fastmath off: no reordering, no
# fused multiply-adds). The constants come in ``k`` in the block's dtype, as the in-place
# passes cast their Python-float operands; a float literal would promote float32 to float64.
_K = (A * C, C, 1.5 * A * C, 0.5 * C, SQRT_HALF, INV_SQRT_2PI, 1.0, 0.5, -0.5)
_CONSTANTS = {np.dtype(t): np.array(_K, t) for t in (np.float32, np.float64)}


def _tanh_argument_loop(x, out, k):
    for i in range(x.shape[0]):
        v = x[i]
        t = v * v
        t = t * k[0]
        t = t + k[1]
        out[i] = t * v


def _forward_rest_loop(x, out, k):
    # out holds tanh(...) or erf(...): 0.5 x (1 + out).
    for i in range(x.shape[0]):
        t = out[i] + k[6]
        t = t * x[i]
        out[i] = t * k[7]


def _tanh_grad_rest_loop(g, x, out, k):
    # out holds T: g (1 + T) (0.5 + q (1 - T)), q recomputed from x.
    for i in range(x.shape[0]):
        v = x[i]
        t = out[i]
        q = v * v
        q = q * k[2]
        q = q + k[3]
        q = q * v
        o = k[6] - t
        t = t + k[6]
        o = o * q
        o = o + k[7]
        o = o * t
        out[i] = o * g[i]


def _exp_argument_loop(x, out, k):
    for i in range(x.shape[0]):
        v = x[i]
        t = v * v
        out[i] = t * k[8]


def _erf_grad_rest_loop(g, x, h, out, k):
    # h holds exp(-x**2 / 2), out erf(x / sqrt(2)).
    for i in range(x.shape[0]):
        e = h[i] * x[i]
        e = e * k[5]
        o = out[i] + k[6]
        o = o * k[7]
        o = o + e
        out[i] = o * g[i]


def _signatures(n_in, n_out):
    out = []
    for t in ("float32", "float64"):
        ro = "Array(%s, 1, 'C', readonly=True)" % t
        out.append("void(%s)" % ", ".join([ro] * n_in + ["%s[::1]" % t] * n_out + [ro]))
    return out


def _jit(fn, n_in, n_out):
    return cpu_jit.kernel(fn, signatures=_signatures(n_in, n_out), error_model="numpy")


_JIT_TANH_ARGUMENT = _jit(_tanh_argument_loop, 1, 1)
_JIT_FORWARD_REST = _jit(_forward_rest_loop, 1, 1)
_JIT_TANH_GRAD_REST = _jit(_tanh_grad_rest_loop, 2, 1)
_JIT_EXP_ARGUMENT = _jit(_exp_argument_loop, 1, 1)
_JIT_ERF_GRAD_REST = _jit(_erf_grad_rest_loop, 2, 2)


def _compiled(*kernels):
    """The compiled forms of ``kernels``, or None when any is not usable."""
    fns = [kern.compiled() for kern in kernels]
    return None if any(fn is None for fn in fns) else fns


def _forward_block(xp, x, out, approximate, scratch, k=None):
    del scratch
    if k is not None:
        fns = _compiled(_JIT_TANH_ARGUMENT, _JIT_FORWARD_REST)
        if fns is not None:
            if approximate:
                fns[0](x, out, k)
                xp.tanh(out, out=out)
            else:
                xp.multiply(x, SQRT_HALF, out=out)
                xp.special.erf(out, out=out)
            fns[1](x, out, k)
            return
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


def _backward_block(xp, g, x, out, approximate, scratch, k=None):
    h, q = scratch
    if k is not None:
        fns = _compiled(_JIT_TANH_ARGUMENT, _JIT_TANH_GRAD_REST, _JIT_EXP_ARGUMENT,
                        _JIT_ERF_GRAD_REST)
        if fns is not None:
            if approximate:
                fns[0](x, out, k)
                xp.tanh(out, out=out)
                fns[1](g, x, out, k)
            else:
                fns[2](x, h, k)
                xp.exp(h, out=h)
                xp.multiply(x, SQRT_HALF, out=out)
                xp.special.erf(out, out=out)
                fns[3](g, x, h, out, k)
            return
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
    k = _jit_constants(flat)
    extra = {} if k is None else {"k": k}

    def blocks(lo, hi):
        n = min(step, size)
        scratch = [xp.empty(n, work) for _ in range(n_scratch)]
        tmp = None if dtype == work else xp.empty(n, work)
        for k in range(lo, hi):
            cut = slice(k * step, min(size, (k + 1) * step))
            m = cut.stop - cut.start
            ins = [a[cut] if a.dtype == work else a[cut].astype(work) for a in flat]
            target = flat_out[cut] if tmp is None else tmp[:m]
            block(xp, *ins, target, approximate, [s[:m] for s in scratch], **extra)
            if tmp is not None:
                flat_out[cut] = target

    cpu_threads.run_blocks(blocks, count, size,
                           min_elements=cpu_threads.fused_min_elements(passes))
    return out


def _jit_constants(flat):
    """The compiled loops' constants for these flattened numpy inputs, or None where the
    numpy passes run: numba absent or turned off, under ``cpu_jit.MIN_ELEMENTS`` elements,
    dtypes other than float32 and float64 (the half types are computed in float32 in a
    scratch buffer), mixed dtypes and misaligned arrays."""
    dtype = flat[0].dtype
    if dtype not in _CONSTANTS or any(a.dtype != dtype or not a.flags.aligned for a in flat):
        return None
    return _CONSTANTS[dtype] if cpu_jit.wanted(flat[0].size) else None


def forward(xp, x, approximate):
    """GELU of ``x`` (a floating array): the tanh form when ``approximate``, else erf's."""
    return _run(xp, _forward_block, (x,), approximate, FORWARD_PASSES, 0)


def backward(xp, g, x, approximate):
    """``g * gelu'(x)`` for ``g`` and ``x`` of one shape and dtype."""
    return _run(xp, _backward_block, (g, x), approximate, BACKWARD_PASSES, 2)
