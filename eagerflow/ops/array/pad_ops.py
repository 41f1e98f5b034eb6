"""Padding: ``pad`` in CONSTANT, REFLECT and SYMMETRIC modes (``PadV2``, ``MirrorPad``).

The gradient of either padding is ``PadGrad``, which folds the padded border back onto the
input (for mirror padding the reflected elements are added to the ones they copy), and whose
own gradient pads again.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.array import _SWEEP, _dims, _err, int_tuple
from eagerflow.ops.math.broadcast import SUM_TO_SHAPE
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, _sample_values
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor, is_tensor

__all__ = ["pad"]

EXPORTS = {
    "": ["pad"],
}


# --- Pad --------------------------------------------------------------------------------------

def _check_paddings(shape, paddings, mode):
    if len(paddings) != len(shape):
        raise _err("paddings must have one [before, after] pair per dimension of the input: "
                   "the input has rank %d, paddings has %d rows %s."
                   % (len(shape), len(paddings), [list(p) for p in paddings]))
    for i, ((a, b), n) in enumerate(zip(paddings, shape)):
        if a is None or b is None:  # known when the graph runs, and checked then
            continue
        if a < 0 or b < 0:
            raise _err("paddings must be non-negative, got %s for dimension %d."
                       % ([a, b], i))
        if n is None:
            continue
        if mode == "REFLECT" and (a > n - 1 or b > n - 1):
            raise _err("REFLECT padding %s of dimension %d (size %d) must be less than the "
                       "dimension's size; use SYMMETRIC to pad by up to %d." % ([a, b], i, n, n))
        if mode == "SYMMETRIC" and (a > n or b > n):
            raise _err("SYMMETRIC padding %s of dimension %d (size %d) must not exceed the "
                       "dimension's size." % ([a, b], i, n))


def _padded_shape(x, paddings, mode):
    dims = _dims(x)
    if dims is None:
        return AbstractValue((None,) * len(paddings), x.dtype)
    _check_paddings(dims, paddings, mode)
    return AbstractValue(tuple(None if s is None or a is None or b is None else s + a + b
                               for s, (a, b) in zip(dims, paddings)), x.dtype)


def _pad_kernel(xp):
    empty = xp.empty

    def kernel(x, c, *, paddings):
        if c.ndim:
            raise _err("constant_values must be a scalar, got shape %s." % list(c.shape))
        _check_paddings(x.shape, paddings, "CONSTANT")
        out = empty(tuple(s + a + b for s, (a, b) in zip(x.shape, paddings)), dtype=x.dtype)
        out[...] = c
        out[tuple(slice(a, a + s) for s, (a, _) in zip(x.shape, paddings))] = x
        return out
    return kernel


def _mirror_pad_kernel(xp):
    pad_ = xp.pad

    def kernel(x, *, paddings, mode):
        _check_paddings(x.shape, paddings, mode)
        if not any(a or b for a, b in paddings):
            return x
        return pad_(x, [list(p) for p in paddings], mode=mode.lower())
    return kernel


def _axis_slicer(ndim, axis):
    """``at(start, stop)``: the index selecting ``start:stop`` along ``axis``."""
    def at(start, stop):
        index = [slice(None)] * ndim
        index[axis] = slice(start, stop)
        return tuple(index)
    return at


def _pad_grad_kernel(xp):
    def kernel(g, *, paddings, mode):
        if len(paddings) != g.ndim:
            raise _err("paddings has %d rows for a gradient of rank %d."
                       % (len(paddings), g.ndim))
        crop = tuple(slice(a, s - b) for s, (a, b) in zip(g.shape, paddings))
        if mode == "CONSTANT":
            return g[crop]
        out = g
        for axis, (a, b) in enumerate(paddings):
            if not (a or b):
                continue
            n = out.shape[axis] - a - b
            at = _axis_slicer(out.ndim, axis)
            core = out[at(a, a + n)].copy()
            left = xp.flip(out[at(0, a)], axis=axis)
            right = xp.flip(out[at(a + n, a + n + b)], axis=axis)
            # The mirrored parts land back on the elements they copied.
            shift = 1 if mode == "REFLECT" else 0
            core[at(shift, shift + a)] += left
            core[at(n - shift - b, n - shift)] += right
            out = core
        return out
    return kernel


def _pad_grad_shape(g, *, paddings, mode):
    dims = _dims(g)
    if dims is None:
        return AbstractValue((None,) * len(paddings), g.dtype)
    return AbstractValue(tuple(None if s is None or a is None or b is None else s - a - b
                               for s, (a, b) in zip(dims, paddings)), g.dtype)


def _pad_grad_vjp(g, x, out, *, paddings, mode):
    if mode == "CONSTANT":
        return execute(PAD, (g, 0), {"paddings": paddings})
    return execute(MIRROR_PAD, (g,), {"paddings": paddings, "mode": mode})


def _pad_reference(x, c, *, paddings):
    if not paddings:
        return x.copy()
    return np.pad(x, [list(p) for p in paddings], mode="constant", constant_values=c)


def _mirror_reference(x, *, paddings, mode):
    if not paddings:
        return x.copy()
    return np.pad(x, [list(p) for p in paddings], mode=mode.lower())


def _pad_grad_reference(g, *, paddings, mode):
    """Adjoint of padding, by brute force: push each cotangent element to its source."""
    shape = tuple(s - a - b for s, (a, b) in zip(g.shape, paddings))
    if not paddings:
        return g.copy()
    index = np.arange(int(np.prod(shape))).reshape(shape)
    if mode == "CONSTANT":
        src = np.pad(index, [list(p) for p in paddings], constant_values=-1)
    else:
        src = np.pad(index, [list(p) for p in paddings], mode=mode.lower())
    out = np.zeros(int(np.prod(shape)), g.dtype)
    mask = src >= 0
    np.add.at(out, src[mask], g[mask])
    return out.reshape(shape)


def _pad_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 3)), v(())), {"paddings": ((1, 0), (2, 1))}),
            ((v(()), v(())), {"paddings": ()}),
            ((v((0, 2)), v(())), {"paddings": ((1, 1), (0, 0))}),
            ((v((3,)), v(())), {"paddings": ((0, 0),)})]


def _mirror_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((3, 4)),), {"paddings": ((2, 1), (1, 3)), "mode": "REFLECT"}),
            ((v((3, 4)),), {"paddings": ((3, 1), (0, 4)), "mode": "SYMMETRIC"}),
            ((v((2,)),), {"paddings": ((1, 1),), "mode": "REFLECT"}),
            ((v((2, 2)),), {"paddings": ((0, 0), (0, 0)), "mode": "SYMMETRIC"})]


def _pad_grad_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((6, 8)),), {"paddings": ((2, 1), (1, 3)), "mode": "REFLECT"}),
            ((v((8, 9)),), {"paddings": ((3, 1), (1, 4)), "mode": "SYMMETRIC"}),
            ((v((4, 5)),), {"paddings": ((1, 0), (2, 1)), "mode": "CONSTANT"}),
            ((v(()),), {"paddings": (), "mode": "CONSTANT"})]


def _pad_vjp(g, x, c, out, *, paddings):
    inner = execute(PAD_GRAD, (g,), {"paddings": paddings, "mode": "CONSTANT"})
    # Unlike TF (which gives None), constant_values gets its true gradient: the sum of the
    # cotangent over the padded border.
    total = execute(SUM_TO_SHAPE, (g,), {"shape": ()})
    return inner, total - execute(SUM_TO_SHAPE, (inner,), {"shape": ()})


PAD = registry.primitive(
    "PadV2", _pad_kernel, dtypes=ALL, family="array", saves=(), sweep_dtypes=_SWEEP,
    shape_fn=lambda x, c, *, paddings: _padded_shape(x, paddings, "CONSTANT"),
    vjp=_pad_vjp,
    reference=_pad_reference, samples=_pad_samples,
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32), np.float32(0)), {"paddings": ((1, 1),)},
         errors.InvalidArgumentError),
        ((np.zeros((2,), np.float32), np.float32(0)), {"paddings": ((-1, 1),)},
         errors.InvalidArgumentError),
        ((np.zeros((2,), np.float32), np.zeros(2, np.float32)), {"paddings": ((1, 1),)},
         errors.InvalidArgumentError)])

MIRROR_PAD = registry.primitive(
    "MirrorPad", _mirror_pad_kernel, dtypes=ALL, family="array", saves=(),
    sweep_dtypes=_SWEEP,
    shape_fn=lambda x, *, paddings, mode: _padded_shape(x, paddings, mode),
    vjp=lambda g, x, out, *, paddings, mode: execute(
        PAD_GRAD, (g,), {"paddings": paddings, "mode": mode}),
    reference=_mirror_reference, samples=_mirror_samples,
    bad_samples=lambda rng: [
        ((np.zeros((3,), np.float32),), {"paddings": ((3, 0),), "mode": "REFLECT"},
         errors.InvalidArgumentError),
        ((np.zeros((3,), np.float32),), {"paddings": ((0, 4),), "mode": "SYMMETRIC"},
         errors.InvalidArgumentError)])

PAD_GRAD = registry.primitive(
    "PadGrad", _pad_grad_kernel, dtypes=ALL, family="array", saves=(),
    sweep_dtypes=(d.float32, d.float64, d.int32, d.complex64),
    shape_fn=_pad_grad_shape, vjp=_pad_grad_vjp, reference=_pad_grad_reference,
    samples=_pad_grad_samples,
    bad_samples=lambda rng: [((np.zeros((3,), np.float32),), {
        "paddings": ((1, 1), (0, 0)), "mode": "CONSTANT"}, errors.InvalidArgumentError)])


def _paddings_attr(paddings):
    if isinstance(paddings, (list, tuple)) and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(v.__class__ is int for v in p)
            for p in paddings):
        return tuple((p[0], p[1]) for p in paddings)
    if getattr(paddings, "_node", None) is not None or isinstance(paddings, (list, tuple)) and \
            any(is_tensor(v) for p in paddings for v in (p if isinstance(p, (list, tuple))
                                                          else (p,))):
        # Computed from tensors: folded, or a DynamicShape the node takes as an input.
        return int_tuple(paddings, "pad", "paddings", pairs=True)
    try:
        array = np.asarray(paddings.numpy() if isinstance(paddings, Tensor) else paddings)
    except (TypeError, ValueError):
        array = None
    if array is None or array.dtype.kind not in "iu" or (
            array.ndim != 2 or array.shape[1] != 2) and array.size:
        raise errors.InvalidArgumentError(
            None, "Pad", "pad: paddings must be an integer [rank, 2] list or tensor of "
            "[before, after] pairs, got %r." % (paddings,))
    return tuple((int(a), int(b)) for a, b in array.reshape(-1, 2))


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pads a tensor with a constant or a mirror image of its edges.

    ``paddings[i] = [before, after]`` adds that many elements before and after dimension
    ``i``. ``REFLECT`` mirrors without repeating the edge (padding < size), ``SYMMETRIC``
    repeats it (padding <= size).

    Args:
        tensor: A Tensor.
        paddings: An int [rank, 2] list or tensor.
        mode: ``"CONSTANT"``, ``"REFLECT"`` or ``"SYMMETRIC"`` (case-insensitive).
        constant_values: The scalar used in CONSTANT mode, of ``tensor``'s dtype.
        name: Unused (TF compatibility).

    Returns:
        The padded Tensor.

    Raises:
        InvalidArgumentError: For a bad mode, negative paddings, paddings whose rank does not
            match, or mirror paddings larger than the dimension.

    Example:
        >>> import eagerflow as ef
        >>> ef.pad([1, 2, 3], [[2, 1]], mode="reflect").numpy().tolist()
        [3, 2, 1, 2, 3, 2]
    """
    pads = _paddings_attr(paddings)
    upper = mode.upper() if isinstance(mode, str) else mode
    if upper == "CONSTANT":
        if not is_tensor(tensor):
            tensor = convert_to_tensor(tensor)  # so a Python constant takes its dtype
        return execute(PAD, (tensor, constant_values), {"paddings": pads})
    if upper in ("REFLECT", "SYMMETRIC"):
        return execute(MIRROR_PAD, (tensor,), {"paddings": pads, "mode": upper})
    raise errors.InvalidArgumentError(
        None, "Pad", "pad: mode must be one of 'CONSTANT', 'REFLECT' or 'SYMMETRIC' "
        "(case-insensitive), got %r." % (mode,))
