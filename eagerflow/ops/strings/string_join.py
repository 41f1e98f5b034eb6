"""String joins: ``join`` (element-wise, across tensors) and ``reduce_join`` (along axes).
"""

from __future__ import annotations


import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import broadcast_shapes, string_values
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import convert_to_tensor
from eagerflow.ops.strings.string_ops import (
    STRING,
    _SWEEP,
    _as_bytes,
)

__all__ = ["join", "reduce_join"]


# Loaded on first use (eagerflow.strings): not by ``import eagerflow``.
LAZY = True

EXPORTS = {
    "strings": ["join", "reduce_join"],
}


# -- join ------------------------------------------------------------------------------------
def _join_kernel(xp):
    def kernel(*xs, separator):
        shapes = [np.shape(x) for x in xs]
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, "inputs must be scalars or have one broadcastable shape, got %s"
                % shapes) from None
        parts = [np.broadcast_to(x, shape).reshape(-1) for x in xs]
        out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=object)
        for i in range(out.size):
            out[i] = separator.join(p[i] for p in parts)
        return out.reshape(shape)
    return kernel


def _join_reference(*xs, separator):
    out = np.asarray(xs[0], dtype=object)
    for x in xs[1:]:
        out = out + separator + np.asarray(x, dtype=object)
    return np.asarray(out, dtype=object)


def _join_samples(rng, dtype):
    return [(([string_values(rng, (3,)), string_values(rng, (3,))],), {"separator": b""}),
            (([string_values(rng, (2, 3)), string_values(rng, ()), string_values(rng, (3,))],),
             {"separator": b", "}),
            (([string_values(rng, ())],), {"separator": b"-"})]


def _join_shape(*xs, separator):
    return AbstractValue(broadcast_shapes(*[x.shape for x in xs]), d.string)


STRING_JOIN = registry.primitive(
    "StringJoin", _join_kernel, dtypes=STRING, variadic=True, reference=_join_reference,
    samples=_join_samples, sweep_dtypes=_SWEEP, family="strings", shape_fn=_join_shape,
    bad_samples=lambda rng: [(([string_values(rng, (2,)), string_values(rng, (3,))],),
                              {"separator": b""}, errors.InvalidArgumentError)])


def join(inputs, separator="", name=None):
    """Joins the strings of a list of tensors element-wise (``tf.strings.join``).

    Args:
        inputs: A list of string tensors of one broadcastable shape (scalars broadcast).
        separator: Placed between the joined strings.
        name: Unused.

    Returns:
        A string Tensor of the broadcast shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.join([["a", "b"], "!"]).numpy().tolist()
        [b'a!', b'b!']
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise errors.InvalidArgumentError(
            None, "StringJoin", "strings.join needs a non-empty list of string tensors.")
    return execute(STRING_JOIN, tuple(convert_to_tensor(x) for x in inputs),
                   {"separator": _as_bytes(separator, "separator")})


def _reduce_join_kernel(xp):
    def kernel(x, *, axis, keepdims, separator):
        if axis is None:
            axes = tuple(range(x.ndim))
        else:
            axes = tuple(sorted(a % x.ndim for a in axis)) if x.ndim else ()
        kept = [i for i in range(x.ndim) if i not in axes]
        moved = np.transpose(x, kept + list(axes))
        out_shape = moved.shape[:len(kept)]
        flat = moved.reshape((int(np.prod(out_shape, dtype=np.int64)), -1)) if moved.size \
            else np.empty((int(np.prod(out_shape, dtype=np.int64)), 0), object)
        out = np.empty(flat.shape[0], dtype=object)
        for i in range(flat.shape[0]):
            out[i] = separator.join(flat[i])
        out = out.reshape(out_shape)
        if keepdims:
            out = out.reshape([1 if i in axes else s for i, s in enumerate(x.shape)])
        return out
    return kernel


def _reduce_join_reference(x, *, axis, keepdims, separator):
    x = np.asarray(x)
    axes = range(x.ndim) if axis is None else sorted((a % x.ndim for a in axis), reverse=True)
    out = x
    for a in sorted(axes, reverse=True):
        out = np.apply_along_axis(lambda row: np.array(separator.join(row), dtype=object), a,
                                  out) if out.shape[a] else \
            np.full(out.shape[:a] + out.shape[a + 1:], b"", dtype=object)
        if keepdims:
            out = np.expand_dims(out, a)
    return np.asarray(out, dtype=object)


def _reduce_join_shape(x, *, axis, keepdims, separator):
    if x.shape is None:
        return AbstractValue(None, d.string)
    axes = range(len(x.shape)) if axis is None else [a % len(x.shape) for a in axis]
    shape = [1 if i in axes else s for i, s in enumerate(x.shape)] if keepdims else \
        [s for i, s in enumerate(x.shape) if i not in axes]
    return AbstractValue(shape, d.string)


def _reduce_join_samples(rng, dtype):
    x = string_values(rng, (2, 3))
    return [((x,), {"axis": None, "keepdims": False, "separator": b""}),
            ((x,), {"axis": (1,), "keepdims": False, "separator": b" "}),
            ((x,), {"axis": (0,), "keepdims": True, "separator": b","}),
            ((string_values(rng, (2, 0)),), {"axis": (1,), "keepdims": False, "separator": b""})]


REDUCE_JOIN = registry.primitive(
    "ReduceJoin", _reduce_join_kernel, dtypes=STRING, reference=_reduce_join_reference,
    samples=_reduce_join_samples, sweep_dtypes=_SWEEP, family="strings",
    shape_fn=_reduce_join_shape)


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """Joins strings across dimensions (``tf.strings.reduce_join``).

    Args:
        inputs: A string tensor.
        axis: An int or list of ints, or None for all dimensions.
        keepdims: Keep reduced dimensions with size 1.
        separator: Placed between joined strings.
        name: Unused.

    Returns:
        A string Tensor.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.reduce_join([["a", "b"], ["c", "d"]], axis=1).numpy().tolist()
        [b'ab', b'cd']
    """
    x = convert_to_tensor(inputs)
    if axis is not None:
        axis = tuple(int(a) for a in np.atleast_1d(np.asarray(axis)).tolist())
        for a in axis:
            if not -max(x.ndim, 1) <= a < max(x.ndim, 1) or x.ndim == 0:
                raise errors.InvalidArgumentError(
                    None, "ReduceJoin", "reduce_join: axis %d is out of range for a tensor of "
                    "rank %d; use an axis in [-%d, %d)." % (a, x.ndim, x.ndim, x.ndim))
    return execute(REDUCE_JOIN, (x,), {"axis": axis, "keepdims": bool(keepdims),
                                       "separator": _as_bytes(separator, "separator")})
