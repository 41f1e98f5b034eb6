"""The softmax and log-softmax kernels and their gradients: one fused pass per block of rows.

Along the class axis, with ``m = max(x)``, ``y`` the forward result and ``g`` its cotangent::

    softmax          y = exp(x - m) / sum(exp(x - m))
    log_softmax      y = (x - m) - log(sum(exp(x - m)))
    softmax grad     dx = y * (g - sum(g * y))
    log_softmax grad dx = g - exp(y) * sum(g)

Each formula is one kernel of a few numpy passes (a max or a sum, then elementwise updates
in place into the one result buffer), where the composite gradient was four graph nodes and
as many temporaries. Large inputs are cut into blocks of rows shared among the CPU threads
(``backend/cpu_threads``); every row is reduced within its block, so the result equals the
one-call result bit for bit with any number of threads. Half-precision inputs are computed
in float32 and rounded once.

Example:
    >>> import numpy as np
    >>> from eagerflow.ops.nn import softmax_kernels
    >>> softmax_kernels.forward(np, np.zeros((2, 2), np.float32), -1, False).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
"""

from __future__ import annotations

from eagerflow.backend import cpu_threads

__all__ = ["forward", "backward"]

def _work_dtype(xp, dtype):
    return xp.dtype(xp.float32) if dtype.itemsize < 4 else dtype


def _forward_block(xp, x, out, axis, log):
    work = _work_dtype(xp, x.dtype)
    w = x if x.dtype == work else x.astype(work)
    t = out if out.dtype == work else xp.empty(w.shape, work)
    xp.subtract(w, w.max(axis=axis, keepdims=True), out=t)
    if log:
        t -= xp.log(xp.exp(t).sum(axis=axis, keepdims=True))
    else:
        xp.exp(t, out=t)
        t /= t.sum(axis=axis, keepdims=True)
    if t is not out:
        out[...] = t


def _backward_block(xp, g, y, out, axis, log):
    work = _work_dtype(xp, g.dtype)
    if g.dtype != work:
        g, y = g.astype(work), y.astype(work)
    t = out if out.dtype == work else xp.empty(g.shape, work)
    if log:
        s = g.sum(axis=axis, keepdims=True)
        xp.exp(y, out=t)
        t *= s
        xp.subtract(g, t, out=t)
    else:
        xp.multiply(g, y, out=t)
        s = t.sum(axis=axis, keepdims=True)
        xp.subtract(g, s, out=t)
        t *= y
    if t is not out:
        out[...] = t


def _rowwise(xp, block, arrays, axis):
    """Runs ``block(*slices, out_slice)`` over blocks of rows, on every core when large.

    The rows are cut on the first axis that is not the class axis; with no such axis (a
    vector) the whole array is one block. Splitting starts at the fused regions' threshold:
    below it, handing blocks to a thread cost more than it saved (measured, see
    docs/design.md).
    """
    first = arrays[0]
    out = xp.empty(first.shape, first.dtype)
    split = 0 if axis != 0 else 1
    if split >= first.ndim or first.shape[split] <= 1 or \
            first.size < cpu_threads.FUSED_MIN_ELEMENTS or not cpu_threads.is_numpy(xp):
        block(*arrays, out)
        return out
    lead = (slice(None),) * split

    def rows(lo, hi):
        cut = lead + (slice(lo, hi),)
        block(*[a[cut] for a in arrays], out[cut])

    cpu_threads.run_blocks(rows, first.shape[split], first.size,
                           min_elements=cpu_threads.FUSED_MIN_ELEMENTS)
    return out


def forward(xp, x, axis, log):
    """softmax (``log=False``) or log_softmax of ``x`` along ``axis`` (a valid axis)."""
    if x.size == 0:
        return xp.empty_like(x)
    axis = axis % x.ndim
    return _rowwise(xp, lambda a, o: _forward_block(xp, a, o, axis, log), (x,), axis)


def backward(xp, g, y, axis, log):
    """The gradient of softmax (``log=False``) or log_softmax from the result ``y``."""
    if g.size == 0:
        return xp.empty_like(g)
    axis = axis % g.ndim
    return _rowwise(xp, lambda a, b, o: _backward_block(xp, a, b, o, axis, log), (g, y), axis)
