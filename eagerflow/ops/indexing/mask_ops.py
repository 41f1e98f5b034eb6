"""Masks and one-hot encodings: boolean_mask, one_hot and where_indices.

``boolean_mask`` keeps the entries where a bool mask is True (its output size depends on
the values, so its shape rule leaves it unknown); its gradient ``BooleanMaskGrad`` puts
the cotangent back at the kept positions. ``one_hot`` writes on/off values by index.
``where_indices`` returns the coordinates of true entries (the primitive is the array
family's ``Where``).
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL
from eagerflow.ops.array import scalar_int
from eagerflow.ops.indexing import _fail, _shape_str, _static_int, _values
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import convert_to_tensor
from eagerflow.ops.family import HOST_VALUE_CHECK, HOST_VALUE_SHAPE

__all__ = ["boolean_mask", "one_hot", "where_indices"]

EXPORTS = {
    "": ["boolean_mask", "one_hot"],
}


# --------------------------------------------------------------------------- boolean_mask

def _mask_axis(t_ndim, m_ndim, axis):
    if m_ndim == 0:
        raise _fail("mask cannot be a scalar; give it the shape of the tensor's masked dims.")
    a = axis + t_ndim if axis < 0 else axis
    if a < 0 or a + m_ndim > t_ndim:
        raise _fail("axis = %d with a mask of rank %d does not fit a tensor of rank %d: need "
                    "axis + rank(mask) <= rank(tensor)." % (axis, m_ndim, t_ndim))
    return a


def _mask_check(tshape, mask, axis):
    if mask.dtype != np.bool_:
        raise _fail("mask must be a bool tensor, got %s. Compare first, e.g. x > 0."
                    % mask.dtype.name)
    a = _mask_axis(len(tshape), mask.ndim, axis)
    if tuple(tshape[a:a + mask.ndim]) != tuple(mask.shape):
        raise _fail("mask shape %s must equal tensor.shape[%d:%d] = %s (tensor shape %s)."
                    % (_shape_str(mask.shape), a, a + mask.ndim,
                       _shape_str(tshape[a:a + mask.ndim]), _shape_str(tshape)))
    return (slice(None),) * a + (mask,)


def _boolean_mask_kernel(xp):
    def kernel(tensor, mask, *, axis):
        return tensor[_mask_check(tensor.shape, mask, axis)]
    return kernel


def _boolean_mask_grad_kernel(xp):
    def kernel(g, mask, *, axis, shape):
        index = _mask_check(shape, mask, axis)
        out = xp.zeros(shape, g.dtype)
        out[index] = g
        return out
    return kernel


def _boolean_mask_shape(tensor, mask, *, axis):
    a = _mask_axis(tensor.ndim, mask.ndim, axis)
    return AbstractValue(tensor.shape[:a] + (None,) + tensor.shape[a + mask.ndim:],
                         tensor.dtype)


def _boolean_mask_reference(tensor, mask, *, axis):
    tensor, mask = np.asarray(tensor), np.asarray(mask)
    a = _mask_axis(tensor.ndim, mask.ndim, axis)
    moved = np.moveaxis(tensor.reshape(tensor.shape[:a] + (-1,) + tensor.shape[a + mask.ndim:])
                        if mask.size else tensor.reshape(
                            tensor.shape[:a] + (0,) + tensor.shape[a + mask.ndim:]), a, 0)
    kept = [moved[i] for i in np.flatnonzero(mask.reshape(-1))]
    rows = np.stack(kept) if kept else np.zeros((0,) + moved.shape[1:], tensor.dtype)
    return np.moveaxis(rows, 0, a)


def _boolean_mask_samples(rng, dtype):
    v = lambda *s: _values(rng, s, dtype)  # noqa: E731
    m = lambda *s: rng.random(s) > 0.4  # noqa: E731
    return [
        ((v(5), m(5)), {"axis": 0}),
        ((v(4, 3), m(4)), {"axis": 0}),
        ((v(4, 3), m(4, 3)), {"axis": 0}),
        ((v(2, 4, 3), m(4)), {"axis": 1}),
        ((v(2, 4, 3), m(4, 3)), {"axis": -2}),
        ((v(3), np.zeros(3, bool)), {"axis": 0}),
        ((v(0, 2), np.zeros(0, bool)), {"axis": 0}),
    ]


def _boolean_mask_bad(rng):
    bad = errors.InvalidArgumentError
    t = np.ones((3, 4), np.float32)
    return [
        ((t, np.ones(4, bool)), {"axis": 0}, bad),
        ((t, np.bool_(True)), {"axis": 0}, bad),
        ((t, np.ones(3, np.int32)), {"axis": 0}, bad),
        ((t, np.ones((4, 1), bool)), {"axis": 1}, bad),
    ]


BOOLEAN_MASK = registry.primitive(
    "BooleanMask", _boolean_mask_kernel, dtypes=ALL, dtype_group=(0,),
    host_sync=HOST_VALUE_SHAPE,
    shape_fn=_boolean_mask_shape, saves=(0, 1),
    vjp=lambda g, tensor, mask, out, *, axis: (execute(
        BOOLEAN_MASK_GRAD, (g, mask), {"axis": axis, "shape": tuple(tensor.shape)}), None),
    reference=_boolean_mask_reference, samples=_boolean_mask_samples,
    bad_samples=_boolean_mask_bad, family="array")


def _boolean_mask_grad_reference(g, mask, *, axis, shape):
    g, mask = np.asarray(g), np.asarray(mask)
    out = np.zeros(shape, g.dtype)
    out[(slice(None),) * (axis % len(shape)) + (mask,)] = g
    return out


def _boolean_mask_grad_samples(rng, dtype):
    out = []
    for (t, m), attrs in _boolean_mask_samples(rng, dtype):
        g = _boolean_mask_reference(t, m, **attrs)
        out.append(((g, m), dict(attrs, shape=np.shape(t))))
    return out


BOOLEAN_MASK_GRAD = registry.primitive(
    "BooleanMaskGrad", _boolean_mask_grad_kernel, dtypes=ALL, dtype_group=(0,),
    host_sync=HOST_VALUE_CHECK,
    shape_fn=lambda g, mask, *, axis, shape: AbstractValue(shape, g.dtype), saves=(1,),
    vjp=lambda g, grad, mask, out, *, axis, shape: (
        execute(BOOLEAN_MASK, (g, mask), {"axis": axis}), None),
    reference=_boolean_mask_grad_reference, samples=_boolean_mask_grad_samples,
    family="array")


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """Keeps the entries of ``tensor`` where ``mask`` is True (numpy's ``tensor[mask]``).

    ``mask`` covers dims ``axis .. axis + rank(mask) - 1`` of tensor; these are flattened
    into one dimension holding the selected entries in row-major order. A negative
    ``axis`` counts from the end (TF mis-handles negative axes).

    Args:
        tensor: An N-D Tensor.
        mask: A K-D bool Tensor, K >= 1, with ``mask.shape == tensor.shape[axis:axis+K]``.
        axis: The first masked dimension (default 0).
        name: Unused.

    Returns:
        A Tensor of rank N - K + 1.

    Raises:
        InvalidArgumentError: If mask is scalar, not bool, or does not match the shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.boolean_mask([1, 2, 3, 4], [True, False, True, False]).numpy().tolist()
        [1, 3]
    """
    axis = 0 if axis is None else _static_int(axis, "axis", "BooleanMask")
    return execute(BOOLEAN_MASK, (tensor, mask), {"axis": axis})


# --------------------------------------------------------------------------- one_hot

def _one_hot_axis(ndim, axis, depth):
    if depth is not None and depth < 0:  # None: known when the graph runs
        raise _fail("depth must be non-negative, got %d." % depth)
    if not -1 <= axis <= ndim:
        raise _fail("axis = %d must be -1 or in [0, %d] for indices of rank %d."
                    % (axis, ndim, ndim))
    return ndim if axis == -1 else axis


def _one_hot_kernel(xp):
    def kernel(indices, *, depth, on_value, off_value, axis, dtype):
        a = _one_hot_axis(indices.ndim, axis, depth)
        target = d.as_dtype(dtype).np_dtype
        hot = indices[..., None] == xp.arange(depth)  # out-of-range indices match nothing
        out = xp.where(hot, xp.asarray(on_value, dtype=target),
                       xp.asarray(off_value, dtype=target))
        if a != indices.ndim:
            out = xp.ascontiguousarray(xp.moveaxis(out, -1, a))
        return out
    return kernel


def _one_hot_shape(indices, *, depth, on_value, off_value, axis, dtype):
    a = _one_hot_axis(indices.ndim, axis, depth)
    return AbstractValue(indices.shape[:a] + (depth,) + indices.shape[a:], dtype)


def _one_hot_reference(indices, *, depth, on_value, off_value, axis, dtype):
    indices = np.asarray(indices)
    a = indices.ndim if axis == -1 else axis
    target = d.as_dtype(dtype).np_dtype
    out = np.full(indices.shape[:a] + (depth,) + indices.shape[a:], off_value, target)
    for pos in np.ndindex(*indices.shape):
        k = int(indices[pos])
        if 0 <= k < depth:
            out[pos[:a] + (k,) + pos[a:]] = on_value
    return out


def _one_hot_samples(rng, dtype):
    def attrs(depth, axis=-1, on=1.0, off=0.0, dt="float32"):
        return {"depth": depth, "on_value": on, "off_value": off, "axis": axis, "dtype": dt}

    idx = rng.integers(-1, 5, size=(3, 2)).astype(dtype.np_dtype) if not dtype.is_unsigned \
        else rng.integers(0, 5, size=(3, 2)).astype(dtype.np_dtype)
    return [
        ((idx,), attrs(4)),
        ((idx,), attrs(4, axis=0, on=5, off=-1, dt="int32")),
        ((idx,), attrs(3, axis=1, on=2.5, off=0.5, dt="float64")),
        ((idx[0, 0],), attrs(4)),
        ((idx[:0],), attrs(4)),
        ((idx,), attrs(0)),
        ((idx,), attrs(4, on=True, off=False, dt="bool")),
    ]


ONE_HOT = registry.primitive(
    "OneHot", _one_hot_kernel, dtypes=(d.uint8, d.int8, d.int32, d.int64),
    shape_fn=_one_hot_shape, vjp=None, reference=_one_hot_reference,
    samples=_one_hot_samples, sweep_dtypes=(d.int32, d.int64, d.uint8), family="array",
    bad_samples=lambda rng: [
        ((np.array([1], np.int32),), {"depth": -1, "on_value": 1.0, "off_value": 0.0,
                                      "axis": -1, "dtype": "float32"},
         errors.InvalidArgumentError),
        ((np.array([1], np.int32),), {"depth": 3, "on_value": 1.0, "off_value": 0.0,
                                      "axis": 3, "dtype": "float32"},
         errors.InvalidArgumentError),
    ])


def _scalar_value(value, dtype, what):
    t = convert_to_tensor(value, dtype_hint=dtype)
    if t.shape.rank != 0:
        raise errors.InvalidArgumentError(
            None, "OneHot", "OneHot: %s must be a scalar, got shape %s."
            % (what, _shape_str(t.shape)))
    return t


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot encodes ``indices``: ``on_value`` at each index, ``off_value`` elsewhere.

    An index that is negative or >= depth gives a row of ``off_value``.

    Args:
        indices: A uint8/int8/int32/int64 Tensor.
        depth: The size of the one-hot dimension (a static int >= 0).
        on_value: Value for the hot entries (default 1).
        off_value: Value for the other entries (default 0).
        axis: Where the new dimension goes (default -1, last).
        dtype: Output dtype; by default on_value's or off_value's dtype, else float32.
        name: Unused.

    Returns:
        A Tensor with ``depth`` inserted into indices' shape at ``axis``.

    Raises:
        TypeError: If on_value, off_value and dtype disagree (as TF).
        InvalidArgumentError: For a negative depth or an axis out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.one_hot([0, 2, 5], 3).numpy().tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    target = None if dtype is None else d.as_dtype(dtype)
    on = None if on_value is None else _scalar_value(on_value, target, "on_value")
    off = None if off_value is None else _scalar_value(off_value, target, "off_value")
    if on is not None and off is not None and on.dtype is not off.dtype:
        raise TypeError("dtype %s of on_value does not match dtype %s of off_value"
                        % (on.dtype.name, off.dtype.name))
    given = on if on is not None else off
    if given is not None:
        if target is not None and given.dtype is not target:
            raise TypeError("dtype %s of %s does not match dtype parameter %s" % (
                given.dtype.name, "on_value" if on is not None else "off_value", target.name))
        target = given.dtype
    elif target is None:
        target = d.float32
    if target is d.string:
        raise errors.UnimplementedError(
            None, "OneHot", "one_hot: string on_value/off_value are not supported; one-hot "
            "encode to numbers and gather the strings.")
    attrs = {
        "depth": scalar_int(depth, "one_hot", "depth"),
        "on_value": on.numpy().item() if on is not None else target.np_dtype.type(1).item(),
        "off_value": off.numpy().item() if off is not None else target.np_dtype.type(0).item(),
        "axis": -1 if axis is None else _static_int(axis, "axis", "OneHot"),
        "dtype": target.name,
    }
    return execute(ONE_HOT, (indices,), attrs)


# --------------------------------------------------------------------------- where

def where_indices(condition, name=None):
    """Coordinates of the True (non-zero) entries of ``condition``, in row-major order.

    This is the one-argument form of ``eagerflow.where``.

    Args:
        condition: A bool (or numeric: non-zero counts as True) Tensor.
        name: Unused.

    Returns:
        An int64 Tensor of shape ``[num_true, rank(condition)]``.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.ops.indexing.mask_ops import where_indices
        >>> where_indices([[True, False], [False, True]]).numpy().tolist()
        [[0, 0], [1, 1]]
    """
    # The primitive ("Where") is declared with the array family.
    from eagerflow.ops.array import shape_ops

    return shape_ops.where_indices(condition)
