"""Structural array ops: reshape, transpose, concat, stack, split, pad, tile, reverse, roll...

These ops move or copy elements without arithmetic, so every dtype is accepted and each
gradient is the adjoint movement (reshape back, inverse permutation, split for concat, fold
the padding back...). Shapes, axes and sizes are static attrs; a value computed inside a
traced function is rejected with a message that says to pass a static one.

The family is one module per concept in this package:

* :mod:`eagerflow.ops.array.reshape_ops`: reshape, transpose, expand_dims, squeeze.
* :mod:`eagerflow.ops.array.join_ops`: concat, split, stack, unstack.
* :mod:`eagerflow.ops.array.pad_ops`: pad (constant, reflect and symmetric).
* :mod:`eagerflow.ops.array.tile_repeat_ops`: tile, repeat, reverse, roll.
* :mod:`eagerflow.ops.array.shape_ops`: shape, shape_n, size, rank, ensure_shape, the broadcast
  shape functions, identity, identity_n, stop_gradient and where_indices.
* this package's ``__init__``: the checks and helpers they share.

Example:
    >>> import eagerflow as ef
    >>> x = ef.reshape(ef.range(6), [2, -1])
    >>> ef.concat([x, x], axis=1).shape
    TensorShape([2, 6])

The helpers here are shared by the array family's modules: errors, axis and dimension
checks, shapes.

Axes, shapes and sizes are static attrs of the array primitives; these helpers validate
them once for every op (an out-of-range axis names the op, the axis and the valid range)
and read a tensor's static dimensions (None where unknown while tracing).
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.static_value import constant_value, dynamic_int_tuple, dynamic_scalar
from eagerflow.tensor import Tensor, convert_to_tensor, is_tensor

__all__ = ["int_tuple", "scalar_int", "static_int_tuple"]

EXPORTS = {}


_SWEEP = (d.float32, d.float64, d.int32, d.bool, d.complex64)
_range = builtins.range  # ``range`` here is the op, re-exported from creation_ops


# --- helpers ----------------------------------------------------------------------------------

def int_tuple(value, op, what="shape", pairs=False):
    """Tuple of ints from an int, list/tuple (of ints or int scalars), TensorShape, numpy
    array or integer tensor.

    Inside a trace, a value computed from tensors is folded to its ints when they are known
    now (``constant_value``); when they are not, the result is a
    :class:`~eagerflow.ops.static_value.DynamicShape`: the tuple of what is known (None
    elsewhere) carrying the packed integer tensor, which the op's node takes as an input.
    With ``pairs``, the value is a ``[n, 2]`` list or tensor (paddings) and the result a
    tuple of pairs.

    Raises:
        InvalidArgumentError: Naming ``op`` and the bad value when it holds a non-integer
            or an unknown dimension, or is not a 1-D integer tensor.
    """
    if pairs:
        return _int_pairs(value, op, what)
    cls = value.__class__
    if cls is tuple or cls is list:
        out = tuple(value)
        for v in out:
            if v.__class__ is not int:
                break
        else:
            return out
        try:
            return tuple([v if v.__class__ is int else operator.index(v) for v in out])
        except TypeError:
            pass
        dynamic = dynamic_int_tuple(out)  # scalar tensors among them: folded or packed
        if dynamic is not None:
            return dynamic
    elif cls is int:
        return (value,)
    elif hasattr(value, "as_list"):  # TensorShape
        dims = value.dims
        if dims is not None and None not in dims:
            return tuple(dims)
    elif isinstance(value, (Tensor, np.ndarray, np.generic)):
        array = constant_value(value) if isinstance(value, Tensor) else np.asarray(value)
        if array is not None and array.dtype.kind in "iu" and array.ndim <= 1:
            return tuple(int(v) for v in array.reshape(-1))
        if array is None:
            dynamic = dynamic_int_tuple(value)
            if dynamic is not None:
                return dynamic
    elif isinstance(value, np.integer):
        return (int(value),)
    detail = ""
    if isinstance(value, Tensor):
        dims = value.shape.dims
        detail = " (a %s tensor of shape %s%s)" % (
            value.dtype.name, value.shape, "; cast it to int32" if
            value.dtype.np_dtype.kind not in "iu" else
            "; its length, the result's rank, must be known when tracing: give the input a "
            "known rank or set the shape with ensure_shape" if dims is not None and
            len(dims) == 1 and dims[0] is None else "")
    raise errors.InvalidArgumentError(
        None, op, "%s: %s must be a list of ints or a 1-D integer tensor, got %s%s."
        % (op, what, _short(value), detail))


def scalar_int(value, op, what):
    """An int from an integer scalar, or a ``DynamicScalar`` for one known only when the
    graph runs (the node then takes it as an input)."""
    try:
        return operator.index(value)
    except TypeError:
        array = constant_value(value) if isinstance(value, Tensor) else (
            np.asarray(value) if isinstance(value, np.ndarray) else None)
        if array is not None and array.size == 1 and array.dtype.kind in "iu":
            return int(array.reshape(()))
        if array is None:
            dynamic = dynamic_scalar(value)
            if dynamic is not None:
                return dynamic
    raise errors.InvalidArgumentError(
        None, op, "%s: %s must be an integer scalar, got %s." % (op, what, _short(value)))


def _int_pairs(value, op, what):
    array = None
    if isinstance(value, Tensor):
        array = constant_value(value)
    elif not isinstance(value, (list, tuple)):
        array = np.asarray(value)
    if array is not None:
        if array.dtype.kind in "iu" and array.ndim == 2 and array.shape[1] == 2:
            return tuple((int(a), int(b)) for a, b in array)
    else:
        dynamic = dynamic_int_tuple(value, pairs=True)
        if dynamic is not None:
            return dynamic
        if isinstance(value, (list, tuple)):
            try:
                array = np.asarray(value)
            except (TypeError, ValueError, errors.OpError):
                array = None
            if array is not None and array.dtype.kind in "iu" and array.ndim == 2 and \
                    array.shape[1] == 2:
                return tuple((int(a), int(b)) for a, b in array)
    raise errors.InvalidArgumentError(
        None, op, "%s: %s must be an integer [rank, 2] list or tensor of [before, after] "
        "pairs, got %s." % (op, what, _short(value)))


def _short(value):
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."



def _err(message):
    """An error raised in a kernel or shape rule; dispatch prefixes op, inputs and device."""
    return errors.InvalidArgumentError(None, None, message)


def _axis(axis, rank, what="axis"):
    """Validates ``axis`` against ``rank`` and returns it non-negative."""
    if not -rank <= axis < rank:
        if rank == 0:
            raise _err("%s %d is invalid: a 0-d tensor has no axes." % (what, axis))
        raise _err("%s %d is out of range for a tensor of rank %d (valid range [%d, %d])."
                   % (what, axis, rank, -rank, rank - 1))
    return axis % rank


def _new_axis(axis, rank):
    """Validates the position of a new dimension (expand_dims, stack): [-rank-1, rank]."""
    if not -rank - 1 <= axis <= rank:
        raise _err("axis %d is out of range for inserting a dimension into a tensor of rank "
                   "%d (valid range [%d, %d])." % (axis, rank, -rank - 1, rank))
    return axis % (rank + 1)


def _dims(x):
    """Static dims of a tensor or aval: a tuple (None for unknown dims), or None (unknown rank)."""
    if x.__class__ is Tensor:
        return x._value.shape
    shape = x.shape
    if shape is None or isinstance(shape, tuple):
        return shape
    dims = shape.dims
    return None if dims is None else tuple(dims)


def _prod(dims):
    n = 1
    for s in dims:
        n *= s
    return n


def static_int_tuple(value, op, what):
    """``int_tuple`` for values the op needs when tracing (axes, permutations): a value
    known only when the graph runs is refused, saying so."""
    out = int_tuple(value, op, what)
    if None in out:
        raise errors.InvalidArgumentError(
            None, op, "%s: %s must be known when tracing (ints, or computed from static "
            "shapes), got %s, known only when the graph runs." % (op, what, _short(value)))
    return out


def _scalar_axis(axis, op):
    """An int axis from an int, a 0-d/1-element integer tensor or a length-1 list."""
    if axis.__class__ is int:
        return axis
    try:
        values = int_tuple(axis, op, "axis")
    except errors.InvalidArgumentError:
        values = ()
    if None in values:
        values = static_int_tuple(axis, op, "axis")
    if len(values) != 1:
        raise errors.InvalidArgumentError(
            None, op, "%s: axis must be an int (or a 1-element list), got %s."
            % (op, errors.short_repr(axis)))
    return values[0]


def _as_tensor(x):
    return x if is_tensor(x) else convert_to_tensor(x)


def _fully_known(dims):
    return dims is not None and None not in dims

