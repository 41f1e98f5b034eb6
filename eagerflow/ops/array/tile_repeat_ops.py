"""Ops that repeat or reorder elements along axes: tile, repeat, reverse and roll.

The gradient of tile sums the copies (a reshape that interleaves them, then a sum); repeat's
gradient is ``RepeatGrad``, which sums each element's repeats; reverse and roll are their own
adjoints with the inverse flip or shift.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.array import (
    _SWEEP, _axis, _dims, _err, _prod, _range, _scalar_axis, int_tuple, static_int_tuple,
)
from eagerflow.ops.math.broadcast import SUM_TO_SHAPE
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, NUMERIC, _sample_values
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.static_value import DynamicShape
from eagerflow.tensor import convert_to_tensor, is_tensor
from eagerflow.ops.array.reshape_ops import RESHAPE, reshape_like

__all__ = ["tile", "reverse", "roll", "repeat"]

EXPORTS = {
    "": ["tile", "reverse", "roll", "repeat"],
}


# --- Tile -------------------------------------------------------------------------------------

def _tile_kernel(xp):
    tile_ = xp.tile

    def kernel(x, *, multiples):
        if len(multiples) != x.ndim:
            raise _err("Expected multiples argument to be a vector of length %d (the input's "
                       "rank) but got length %d: %s." % (x.ndim, len(multiples),
                                                        list(multiples)))
        if any(m < 0 for m in multiples):
            raise _err("multiples %s must be non-negative." % list(multiples))
        if not multiples:
            return x
        return tile_(x, multiples)
    return kernel


def _tile_shape(x, *, multiples):
    dims = _dims(x)
    if dims is None:
        return AbstractValue((None,) * len(multiples), x.dtype)
    if len(multiples) != len(dims):
        raise _err("Expected multiples argument to be a vector of length %d but got length %d."
                   % (len(dims), len(multiples)))
    return AbstractValue(tuple(None if s is None or m is None else s * m
                               for s, m in zip(dims, multiples)), x.dtype)


def _interleaved(dims, counts, op):
    """Shape [c0, d0, c1, d1, ...] (at most one unknown d becomes -1)."""
    if dims.count(None) > 1:
        raise errors.UnimplementedError(
            None, op, "%s: the gradient needs the input's shape, which has %d unknown "
            "dimensions in this trace; give it a static shape." % (op, dims.count(None)))
    out = []
    for c, s in zip(counts, dims):
        out += [c, -1 if s is None else s]
    return tuple(out)


def _tile_vjp(g, x, out, *, multiples):
    if not multiples:
        return g
    dims = _dims(x)
    if multiples.__class__ is DynamicShape or dims.count(None) > 1:
        # Blocks [m0, s0, m1, s1, ...] from the run-time multiples and shape, summed over
        # the m axes.
        from eagerflow.ops.array.join_ops import stack
        from eagerflow.ops.array.shape_ops import shape as shape_of
        from eagerflow.ops.reduce import reductions

        m = multiples.tensor if multiples.__class__ is DynamicShape else multiples
        m = convert_to_tensor(m, d.int32) if not is_tensor(m) else m
        pairs = stack([m, shape_of(x, out_type=m.dtype)], axis=1)
        blocks = execute(RESHAPE, (g,), {"shape": int_tuple(
            execute(RESHAPE, (pairs,), {"shape": (-1,)}), "Tile")})
        summed = reductions.reduce_sum(blocks, axis=list(_range(0, 2 * len(dims), 2)))
        return reshape_like(summed, x)
    blocks = execute(RESHAPE, (g,), {"shape": _interleaved(dims, multiples, "Tile")})
    kept = tuple(v for s in dims for v in (1, s))
    if None in kept:
        from eagerflow.ops.reduce import reductions

        summed = reductions.reduce_sum(blocks, axis=list(_range(0, 2 * len(dims), 2)))
        return reshape_like(summed, x)
    return reshape_like(execute(SUM_TO_SHAPE, (blocks,), {"shape": kept}), x)


TILE = registry.primitive(
    "Tile", _tile_kernel, dtypes=ALL, family="array", shape_fn=_tile_shape, vjp=_tile_vjp,
    saves=(0,), reference=lambda x, *, multiples: np.tile(x, multiples), sweep_dtypes=_SWEEP,
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (2, 3), dtype, (-3, 3)),), {"multiples": (2, 3)}),
        ((_sample_values(rng, (2, 1), dtype, (-3, 3)),), {"multiples": (1, 4)}),
        ((_sample_values(rng, (), dtype, (-3, 3)),), {"multiples": ()}),
        ((_sample_values(rng, (2,), dtype, (-3, 3)),), {"multiples": (0,)})],
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"multiples": (2,)}, errors.InvalidArgumentError),
        ((np.zeros((2,), np.float32),), {"multiples": (-1,)}, errors.InvalidArgumentError)])


def tile(input, multiples, name=None):  # noqa: A002 - TF's argument name
    """Repeats the whole tensor ``multiples[i]`` times along each dimension ``i``.

    Args:
        input: A Tensor.
        multiples: Non-negative ints, one per dimension of ``input``.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``input.shape * multiples``.

    Raises:
        InvalidArgumentError: If ``len(multiples)`` differs from the rank, or a multiple is
            negative.

    Example:
        >>> import eagerflow as ef
        >>> ef.tile([[1, 2]], [2, 2]).numpy().tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    return execute(TILE, (input,), {"multiples": int_tuple(multiples, "tile", "multiples")})


# --- ReverseV2 / Roll -------------------------------------------------------------------------

def _unique_axes(axes, rank, op_word):
    out = []
    for a in axes:
        a = _axis(a, rank)
        if a in out:
            raise _err("axis %d is given more than once to %s." % (a, op_word))
        out.append(a)
    return tuple(out)


REVERSE = registry.primitive(
    "ReverseV2",
    lambda xp: (lambda flip: lambda x, *, axis: flip(
        x, axis=_unique_axes(axis, x.ndim, "reverse")) if axis else x)(xp.flip),
    dtypes=ALL, family="array", saves=(), sweep_dtypes=_SWEEP,
    shape_fn=lambda x, *, axis: AbstractValue(_dims(x), x.dtype),
    vjp=lambda g, x, out, *, axis: execute(REVERSE, (g,), {"axis": axis}),
    reference=lambda x, *, axis: np.flip(x, axis=tuple(axis)) if axis else x,
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (2, 3), dtype, (-3, 3)),), {"axis": (0,)}),
        ((_sample_values(rng, (2, 3, 2), dtype, (-3, 3)),), {"axis": (-1, 0)}),
        ((_sample_values(rng, (), dtype, (-3, 3)),), {"axis": ()}),
        ((_sample_values(rng, (0, 2), dtype, (-3, 3)),), {"axis": (1,)})],
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"axis": (2,)}, errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"axis": (0, -2)}, errors.InvalidArgumentError)])


def _roll_kernel(xp):
    roll_ = xp.roll

    def kernel(x, *, shift, axis):
        if len(shift) != len(axis):
            raise _err("shift and axis must have the same length, got shift %s and axis %s."
                       % (list(shift), list(axis)))
        if not axis:
            return x
        return roll_(x, shift, tuple(_axis(a, x.ndim) for a in axis))
    return kernel


ROLL = registry.primitive(
    "Roll", _roll_kernel, dtypes=ALL, family="array", saves=(), sweep_dtypes=_SWEEP,
    shape_fn=lambda x, *, shift, axis: AbstractValue(_dims(x), x.dtype),
    vjp=lambda g, x, out, *, shift, axis: execute(
        ROLL, (g,), {"shift": tuple(-s for s in shift), "axis": axis}),
    reference=lambda x, *, shift, axis: np.roll(x, shift, axis) if axis else x,
    samples=lambda rng, dtype: [
        ((_sample_values(rng, (5,), dtype, (-3, 3)),), {"shift": (2,), "axis": (0,)}),
        ((_sample_values(rng, (3, 4), dtype, (-3, 3)),), {"shift": (-1, 5), "axis": (0, 1)}),
        ((_sample_values(rng, (3, 4), dtype, (-3, 3)),), {"shift": (1, 2), "axis": (1, 1)}),
        ((_sample_values(rng, (), dtype, (-3, 3)),), {"shift": (), "axis": ()}),
        ((_sample_values(rng, (0, 3), dtype, (-3, 3)),), {"shift": (1,), "axis": (0,)})],
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"shift": (1,), "axis": (2,)},
         errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"shift": (1, 2), "axis": (0,)},
         errors.InvalidArgumentError)])


def reverse(tensor, axis, name=None):
    """Reverses the order of elements along the given dimensions.

    Args:
        tensor: A Tensor.
        axis: A list of distinct dimensions to reverse (negative counts from the end).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated.

    Example:
        >>> import eagerflow as ef
        >>> ef.reverse([[1, 2], [3, 4]], [1]).numpy().tolist()
        [[2, 1], [4, 3]]
    """
    return execute(REVERSE, (tensor,), {"axis": static_int_tuple(axis, "reverse", "axis")})


def roll(input, shift, axis, name=None):  # noqa: A002 - TF's argument name
    """Rolls elements along dimensions: element ``i`` moves to ``(i + shift) % size``.

    Args:
        input: A Tensor.
        shift: An int or list of ints (negative rolls backward).
        axis: An int or list of ints, the same length as ``shift``; an axis given twice
            rolls by the sum of its shifts.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape.

    Raises:
        InvalidArgumentError: If the lengths differ or an axis is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.roll([0, 1, 2, 3, 4], shift=2, axis=0).numpy().tolist()
        [3, 4, 0, 1, 2]
    """
    return execute(ROLL, (input,), {"shift": int_tuple(shift, "roll", "shift"),
                                    "axis": static_int_tuple(axis, "roll", "axis")})


# --- Repeat -----------------------------------------------------------------------------------

def _repeat_check(dim, repeats):
    if any(r < 0 for r in repeats):
        raise _err("repeats %s must be non-negative." % list(repeats))
    if len(repeats) != 1 and dim is not None and len(repeats) != dim:
        raise _err("repeats has %d entries but the repeated dimension has size %d; give one "
                   "count per element or a single count." % (len(repeats), dim))


def _repeat_kernel(xp):
    repeat_ = xp.repeat

    def kernel(x, *, repeats, axis):
        if axis is None:
            x = x.reshape(-1)
            a = 0
        else:
            a = _axis(axis, x.ndim)
        _repeat_check(x.shape[a], repeats)
        count = repeats[0] if len(repeats) == 1 else list(repeats)
        return repeat_(x, count, axis=a)
    return kernel


def _repeat_shape(x, *, repeats, axis):
    dims = _dims(x)
    if dims is None:
        return AbstractValue(None if axis is not None else (None,), x.dtype)
    if axis is None:
        n = None if None in dims else _prod(dims)
        dims, a = (n,), 0
    else:
        a = _axis(axis, len(dims))
    if None in repeats:  # counts known only when the graph runs (checked then)
        if len(repeats) != 1 and dims[a] is not None and len(repeats) != dims[a]:
            _repeat_check(dims[a], tuple(0 if r is None else r for r in repeats))
        return AbstractValue(dims[:a] + (None,) + dims[a + 1:], x.dtype)
    _repeat_check(dims[a], repeats)
    if len(repeats) == 1:
        new = None if dims[a] is None else dims[a] * repeats[0]
    else:
        new = sum(repeats)
    return AbstractValue(dims[:a] + (new,) + dims[a + 1:], x.dtype)


def _repeat_vjp(g, x, out, *, repeats, axis):
    if axis is None:
        flat = execute(REPEAT_GRAD, (g,), {"repeats": repeats, "axis": 0})
        return reshape_like(flat, x)
    return execute(REPEAT_GRAD, (g,), {"repeats": repeats, "axis": axis})


def _repeat_grad_kernel(xp):
    def kernel(g, *, repeats, axis):
        a = _axis(axis, g.ndim)
        if len(repeats) == 1:
            # Uniform counts: element j's copies are contiguous, so fold them into a new axis.
            r = repeats[0]
            n = g.shape[a] // r if r else 0
            if not r:
                shape = g.shape[:a] + (n,) + g.shape[a + 1:]
                return xp.zeros(shape, dtype=g.dtype)
            return g.reshape(g.shape[:a] + (n, r) + g.shape[a + 1:]).sum(axis=a + 1,
                                                                         dtype=g.dtype)
        # Per-element counts: differences of a running sum, accumulated in double precision.
        acc = np.complex128 if g.dtype.kind == "c" else (
            np.float64 if g.dtype.kind == "f" else g.dtype)
        c = xp.cumsum(g, axis=a, dtype=acc)
        zero = xp.zeros(g.shape[:a] + (1,) + g.shape[a + 1:], dtype=acc)
        c = xp.concatenate([zero, c], axis=a)
        ends = np.cumsum(repeats)
        starts = ends - np.asarray(repeats)
        out = xp.take(c, xp.asarray(ends), axis=a) - xp.take(c, xp.asarray(starts), axis=a)
        return out.astype(g.dtype)
    return kernel


def _repeat_grad_shape(g, *, repeats, axis):
    dims = _dims(g)
    if dims is None:
        return AbstractValue(None, g.dtype)
    a = _axis(axis, len(dims))
    if len(repeats) == 1:
        n = None if dims[a] is None or repeats[0] is None else (
            dims[a] // repeats[0] if repeats[0] else 0)
    else:
        n = len(repeats)
    return AbstractValue(dims[:a] + (n,) + dims[a + 1:], g.dtype)


def _repeat_grad_reference(g, *, repeats, axis):
    g = np.moveaxis(g, axis, 0)
    if len(repeats) == 1:
        n = g.shape[0] // repeats[0] if repeats[0] else 0
        repeats = (repeats[0],) * n
    ids = np.repeat(np.arange(len(repeats)), repeats)
    out = np.zeros((len(repeats),) + g.shape[1:], g.dtype)
    np.add.at(out, ids, g)
    return np.moveaxis(out, 0, axis)


def _repeat_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 3)),), {"repeats": (2,), "axis": 1}),
            ((v((3, 2)),), {"repeats": (1, 0, 2), "axis": 0}),
            ((v((2, 2)),), {"repeats": (3,), "axis": None}),
            ((v((2, 2)),), {"repeats": (1, 2, 0, 1), "axis": None}),
            ((v(()),), {"repeats": (2,), "axis": None}),
            ((v((0, 2)),), {"repeats": (2,), "axis": 0})]


def _repeat_grad_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v((2, 6)),), {"repeats": (2,), "axis": 1}),
            ((v((3, 2)),), {"repeats": (1, 0, 2), "axis": 0}),
            ((v((0, 2)),), {"repeats": (0, 0), "axis": 0}),
            ((v((0,)),), {"repeats": (0,), "axis": 0})]


REPEAT = registry.primitive(
    "Repeat", _repeat_kernel, dtypes=ALL, family="array", shape_fn=_repeat_shape,
    vjp=_repeat_vjp, saves=(0,), sweep_dtypes=_SWEEP, samples=_repeat_samples,
    reference=lambda x, *, repeats, axis: np.repeat(
        x, repeats[0] if len(repeats) == 1 else list(repeats), axis=axis),
    bad_samples=lambda rng: [
        ((np.zeros((2, 3), np.float32),), {"repeats": (1, 2), "axis": 1},
         errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"repeats": (-1,), "axis": 1},
         errors.InvalidArgumentError),
        ((np.zeros((2, 3), np.float32),), {"repeats": (1,), "axis": 2},
         errors.InvalidArgumentError)])

REPEAT_GRAD = registry.primitive(
    "RepeatGrad", _repeat_grad_kernel, dtypes=NUMERIC, family="array",
    shape_fn=_repeat_grad_shape, saves=(), sweep_dtypes=(d.float32, d.float64, d.int32),
    vjp=lambda g, x, out, *, repeats, axis: execute(
        REPEAT, (g,), {"repeats": repeats, "axis": axis}),
    reference=_repeat_grad_reference, samples=_repeat_grad_samples,
    tolerance={"float32": (1e-5, 1e-5)})


def repeat(input, repeats, axis=None, name=None):  # noqa: A002 - TF's argument name
    """Repeats each element of a tensor ``repeats`` times along ``axis``.

    Args:
        input: A Tensor.
        repeats: A non-negative int (every element) or a list with one count per element
            along ``axis``.
        axis: The dimension to repeat along; None repeats the flattened tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor; 1-D when ``axis`` is None.

    Raises:
        InvalidArgumentError: For negative counts, a count list whose length does not match
            the dimension, or an out-of-range axis.

    Example:
        >>> import eagerflow as ef
        >>> ef.repeat([1, 2, 3], [2, 0, 1], axis=0).numpy().tolist()
        [1, 1, 3]
    """
    counts = int_tuple(repeats, "repeat", "repeats")
    if axis is not None:
        axis = _scalar_axis(axis, "repeat")
    return execute(REPEAT, (input,), {"repeats": counts, "axis": axis})
