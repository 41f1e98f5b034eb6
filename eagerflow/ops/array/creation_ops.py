"""Tensor creation: ``zeros``, ``ones``, ``fill``, ``zeros_like``, ``ones_like``, ``eye``,
``range``, ``linspace``, and the composites ``meshgrid`` and ``sequence_mask``.

Primitives with no tensor inputs (Zeros, Ones, Eye, Range) carry everything in static attrs,
so dispatch places them on the current device scope's device (CPU:0 outside any scope) and a
trace records them as ordinary nodes. ``fill`` and ``linspace`` take their values as tensor
inputs, as in TF, so that gradients flow to them; Python values among them are created on the
scope's device too.

Example:
    >>> import eagerflow as ef
    >>> ef.zeros([2, 3]).shape
    TensorShape([2, 3])
    >>> ef.range(1, 10, 3).numpy().tolist()
    [1, 4, 7]
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.array import _short, int_tuple, reshape_ops, scalar_int
from eagerflow.ops.math.arithmetic import ONES_LIKE, ZEROS_LIKE, less
from eagerflow.ops.math.binary_math import maximum
from eagerflow.ops.math.broadcast import SUM_TO_SHAPE, broadcast_to
from eagerflow.ops.math.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, REAL, _sample_values, broadcast_shapes
from eagerflow.ops.reduce import reductions
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.static_value import DynamicScalar, constant_value
from eagerflow.tensor import Tensor, convert_to_tensor, is_tensor

__all__ = ["zeros", "ones", "fill", "zeros_like", "ones_like", "eye", "range", "linspace",
           "meshgrid", "sequence_mask"]

EXPORTS = {
    "": ["zeros", "ones", "fill", "zeros_like", "ones_like", "eye", "range", "linspace",
         "meshgrid", "sequence_mask"],
    "linalg": ["eye"],
}

_range = builtins.range
_SWEEP = (d.float32, d.float64, d.int32, d.bool, d.complex64)
_FLOATS = (d.float16, d.bfloat16, d.float32, d.float64)


def _check_shape(shape, op):
    for dim in shape:
        if dim is not None and dim < 0:  # None: known when the graph runs (checked then)
            raise errors.InvalidArgumentError(
                None, op, "%sshape %s has a negative dimension; every dimension must be >= 0."
                % (op + ": " if op else "", list(shape)))
    return shape


def _creation_dtype(dtype, op):
    dtype = d.as_dtype(dtype)
    if dtype is d.string:
        raise errors.UnimplementedError(None, op, "%s: string tensors are not supported." % op)
    return dtype.name


# --- Zeros / Ones: no inputs, shape and dtype attrs ------------------------------------------

def _const_kernel(fn_name):
    def factory(xp):
        make = getattr(xp, fn_name)

        def kernel(*, shape, dtype):
            _check_shape(shape, None)
            return make(shape, dtype=d.as_dtype(dtype).np_dtype)
        return kernel
    return factory


def _const_shape(*, shape, dtype):
    return AbstractValue(shape, d.as_dtype(dtype))


def _const_samples(rng, dtype):
    return [((), {"shape": s, "dtype": dtype.name}) for s in ((), (0,), (3,), (2, 3))]


def _const_bad(rng):
    return [((), {"shape": (2, -1), "dtype": "float32"}, errors.InvalidArgumentError)]


ZEROS = registry.primitive(
    "Zeros", _const_kernel("zeros"), family="array", shape_fn=_const_shape,
    reference=lambda *, shape, dtype: np.zeros(shape, d.as_dtype(dtype).np_dtype),
    samples=_const_samples, sweep_dtypes=_SWEEP, bad_samples=_const_bad)
ONES = registry.primitive(
    "Ones", _const_kernel("ones"), family="array", shape_fn=_const_shape,
    reference=lambda *, shape, dtype: np.ones(shape, d.as_dtype(dtype).np_dtype),
    samples=_const_samples, sweep_dtypes=_SWEEP, bad_samples=_const_bad)


def zeros(shape, dtype=d.float32, name=None, layout=None):
    """Creates a tensor with all elements set to zero.

    Args:
        shape: A list/tuple of ints, a TensorShape, an int, or a 1-D integer tensor.
        dtype: The element type (default float32).
        name: Unused (TF compatibility).
        layout: Unsupported; must be None.

    Returns:
        A Tensor of ``shape`` on the current device scope's device.

    Raises:
        InvalidArgumentError: For a negative or non-integer dimension.

    Example:
        >>> import eagerflow as ef
        >>> ef.zeros([2], ef.int32).numpy().tolist()
        [0, 0]
    """
    shape = _check_shape(int_tuple(shape, "zeros"), "zeros")
    return execute(ZEROS, (), {"shape": shape, "dtype": _creation_dtype(dtype, "zeros")})


def ones(shape, dtype=d.float32, name=None, layout=None):
    """Creates a tensor with all elements set to one.

    Args:
        shape: A list/tuple of ints, a TensorShape, an int, or a 1-D integer tensor.
        dtype: The element type (default float32).
        name: Unused (TF compatibility).
        layout: Unsupported; must be None.

    Returns:
        A Tensor of ``shape`` on the current device scope's device.

    Raises:
        InvalidArgumentError: For a negative or non-integer dimension.

    Example:
        >>> import eagerflow as ef
        >>> ef.ones((2, 2)).numpy().tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    shape = _check_shape(int_tuple(shape, "ones"), "ones")
    return execute(ONES, (), {"shape": shape, "dtype": _creation_dtype(dtype, "ones")})


# --- Fill: a scalar value input, shape attr ---------------------------------------------------

def _fill_kernel(xp):
    def kernel(value, *, shape):
        if value.ndim:
            raise errors.InvalidArgumentError(
                None, None, "value must be a scalar (0-d), got shape %s. Use broadcast_to or "
                "tile to repeat a non-scalar tensor." % list(value.shape))
        out = xp.empty(shape, dtype=value.dtype)
        out[...] = value
        return out
    return kernel


def _fill_shape(value, *, shape):
    if value.shape is not None and len(value.shape):
        raise errors.InvalidArgumentError(
            None, "Fill", "Fill: value must be a scalar (0-d), got shape %s." % list(value.shape))
    return AbstractValue(shape, value.dtype)


def _fill_vjp(g, value, out, *, shape):
    # Every output element is the value: its gradient is the sum of the cotangent.
    return execute(SUM_TO_SHAPE, (g,), {"shape": ()})


def _fill_samples(rng, dtype):
    return [((_sample_values(rng, (), dtype, (-3, 3)),), {"shape": s})
            for s in ((), (0,), (4,), (2, 3))]


FILL = registry.primitive(
    "Fill", _fill_kernel, dtypes=ALL, family="array", shape_fn=_fill_shape, vjp=_fill_vjp,
    saves=(), reference=lambda value, *, shape: np.full(shape, value, dtype=value.dtype),
    samples=_fill_samples, sweep_dtypes=_SWEEP,
    bad_samples=lambda rng: [((np.ones(2, np.float32),), {"shape": (2,)},
                              errors.InvalidArgumentError)])


def fill(dims, value, name=None, layout=None):
    """Creates a tensor of shape ``dims`` filled with a scalar ``value``.

    The result has ``value``'s dtype (a Python float gives float32, an int int32). The
    gradient with respect to ``value`` is the sum of the output gradient.

    Args:
        dims: The shape: a list/tuple of ints, TensorShape, int or 1-D integer tensor.
        value: A scalar Tensor or Python/numpy scalar.
        name: Unused (TF compatibility).
        layout: Unsupported; must be None.

    Returns:
        A Tensor of shape ``dims``.

    Raises:
        InvalidArgumentError: If ``value`` is not a scalar or a dimension is negative.

    Example:
        >>> import eagerflow as ef
        >>> ef.fill([2, 2], 7).numpy().tolist()
        [[7, 7], [7, 7]]
    """
    shape = _check_shape(int_tuple(dims, "fill", "dims"), "fill")
    return execute(FILL, (value,), {"shape": shape})


# --- zeros_like / ones_like (the primitives live in arithmetic) --------------------------------

def zeros_like(input, dtype=None, name=None, layout=None):  # noqa: A002 - TF's argument name
    """Creates a tensor of zeros with the shape of ``input``.

    Args:
        input: A Tensor or a value convertible to one.
        dtype: The result's dtype; default ``input``'s dtype.
        name: Unused (TF compatibility).
        layout: Unsupported; must be None.

    Returns:
        A Tensor of zeros with ``input``'s shape, on ``input``'s device.

    Example:
        >>> import eagerflow as ef
        >>> ef.zeros_like(ef.constant([[1, 2]]), dtype=ef.float32).numpy().tolist()
        [[0.0, 0.0]]
    """
    out = execute(ZEROS_LIKE, (input,))
    if dtype is not None and out.dtype != dtype:
        out = cast(out, dtype)
    return out


def ones_like(input, dtype=None, name=None, layout=None):  # noqa: A002 - TF's argument name
    """Creates a tensor of ones with the shape of ``input``.

    Args:
        input: A Tensor or a value convertible to one.
        dtype: The result's dtype; default ``input``'s dtype.
        name: Unused (TF compatibility).
        layout: Unsupported; must be None.

    Returns:
        A Tensor of ones with ``input``'s shape, on ``input``'s device.

    Example:
        >>> import eagerflow as ef
        >>> ef.ones_like([True, False]).numpy().tolist()
        [True, True]
    """
    out = execute(ONES_LIKE, (input,))
    if dtype is not None and out.dtype != dtype:
        out = cast(out, dtype)
    return out


# --- Eye --------------------------------------------------------------------------------------

def _eye_kernel(xp):
    def kernel(*, num_rows, num_columns, batch_shape, dtype):
        _check_shape(tuple(batch_shape) + (num_rows, num_columns), None)
        out = xp.zeros(tuple(batch_shape) + (num_rows, num_columns),
                       dtype=d.as_dtype(dtype).np_dtype)
        idx = xp.arange(min(num_rows, num_columns))
        out[..., idx, idx] = 1
        return out
    return kernel


def _eye_reference(*, num_rows, num_columns, batch_shape, dtype):
    base = np.eye(num_rows, num_columns, dtype=d.as_dtype(dtype).np_dtype)
    return np.broadcast_to(base, tuple(batch_shape) + base.shape)


def _eye_samples(rng, dtype):
    return [((), {"num_rows": n, "num_columns": m, "batch_shape": b, "dtype": dtype.name})
            for n, m, b in ((3, 3, ()), (2, 4, ()), (4, 2, (2,)), (0, 3, ()), (2, 2, (2, 0)))]


EYE = registry.primitive(
    "Eye", _eye_kernel, family="array", reference=_eye_reference, samples=_eye_samples,
    sweep_dtypes=_SWEEP,
    shape_fn=lambda *, num_rows, num_columns, batch_shape, dtype: AbstractValue(
        tuple(batch_shape) + (num_rows, num_columns), d.as_dtype(dtype)))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=d.float32, name=None):
    """Constructs an identity matrix, or a batch of them.

    Args:
        num_rows: Number of rows (a non-negative int or int scalar tensor).
        num_columns: Number of columns; default ``num_rows``.
        batch_shape: Optional leading batch dimensions (list of ints).
        dtype: The element type (default float32).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``batch_shape + [num_rows, num_columns]``.

    Raises:
        InvalidArgumentError: For negative sizes.

    Example:
        >>> import eagerflow as ef
        >>> ef.eye(2, 3, dtype=ef.int32).numpy().tolist()
        [[1, 0, 0], [0, 1, 0]]
    """
    rows = scalar_int(num_rows, "eye", "num_rows")
    cols = rows if num_columns is None else scalar_int(num_columns, "eye", "num_columns")
    batch = () if batch_shape is None else int_tuple(batch_shape, "eye", "batch_shape")
    _check_shape(batch + tuple(n for n in (rows, cols) if n.__class__ is int), "eye")
    return execute(EYE, (), {"num_rows": rows, "num_columns": cols, "batch_shape": batch,
                             "dtype": _creation_dtype(dtype, "eye")})


# --- Range ------------------------------------------------------------------------------------

# TF infers range's dtype as the "largest" of its arguments' dtypes in this order.
_RANGE_HIERARCHY = ("int32", "int64", "float16", "bfloat16", "float32", "float64")
_RANGE_DTYPES = tuple(dt for dt in REAL if dt is not d.uint64)


def range_size(start, limit, delta, np_dtype):
    """Number of elements of range(start, limit, delta) as TF computes it."""
    if delta == 0:
        raise errors.InvalidArgumentError(None, None, "Requires delta != 0: %r" % (delta,))
    if delta > 0 and start > limit:
        raise errors.InvalidArgumentError(
            None, None, "Requires start <= limit when delta > 0: %r/%r" % (start, limit))
    if delta < 0 and start < limit:
        raise errors.InvalidArgumentError(
            None, None, "Requires start >= limit when delta < 0: %r/%r" % (start, limit))
    if np_dtype.kind in "iu":
        return (abs(limit - start) + abs(delta) - 1) // abs(delta)
    with np.errstate(all="ignore"):
        size = np.ceil(np.abs((np_dtype.type(limit) - np_dtype.type(start))
                              / np_dtype.type(delta)))
    if not np.isfinite(size):
        raise errors.InvalidArgumentError(
            None, None, "range: start, limit and delta must be finite, got %r, %r, %r"
            % (start, limit, delta))
    return int(size)


def _range_kernel(xp):
    def kernel(*, start, limit, delta, dtype):
        np_dtype = d.as_dtype(dtype).np_dtype
        n = range_size(start, limit, delta, np_dtype)
        if np_dtype.kind in "iu":
            return xp.arange(start, start + n * delta, delta, dtype=np_dtype)[:n]
        # start + i * delta in the output dtype, so the last element never overshoots.
        return xp.arange(n, dtype=np_dtype) * np_dtype.type(delta) + np_dtype.type(start)
    return kernel


def _range_shape(*, start, limit, delta, dtype):
    np_dtype = d.as_dtype(dtype).np_dtype
    return AbstractValue((range_size(start, limit, delta, np_dtype),), d.as_dtype(dtype))


def _range_reference(*, start, limit, delta, dtype):
    np_dtype = d.as_dtype(dtype).np_dtype
    return np.arange(start, limit, delta).astype(np_dtype)


def _range_samples(rng, dtype):
    out = [((), {"start": 0, "limit": 5, "delta": 1, "dtype": dtype.name}),
           ((), {"start": 3, "limit": 3, "delta": 1, "dtype": dtype.name}),
           ((), {"start": 2, "limit": 11, "delta": 3, "dtype": dtype.name})]
    if not dtype.is_unsigned:
        out.append(((), {"start": 5, "limit": -4, "delta": -2, "dtype": dtype.name}))
    if dtype.is_floating:
        out.append(((), {"start": 0.5, "limit": 2.0, "delta": 0.25, "dtype": dtype.name}))
    return out


RANGE = registry.primitive(
    "Range", _range_kernel, family="array", shape_fn=_range_shape, reference=_range_reference,
    samples=_range_samples, sweep_dtypes=(d.float32, d.float64, d.int32, d.int64),
    bad_samples=lambda rng: [
        ((), {"start": 0, "limit": 5, "delta": 0, "dtype": "int32"}, errors.InvalidArgumentError),
        ((), {"start": 5, "limit": 0, "delta": 1, "dtype": "int32"}, errors.InvalidArgumentError),
        ((), {"start": 0, "limit": 5, "delta": -1, "dtype": "float32"},
         errors.InvalidArgumentError)])


def _range_arg(value, what):
    """A Python number and its TF dtype name for one range argument."""
    if isinstance(value, builtins.bool):
        raise errors.InvalidArgumentError(
            None, "range", "range: %s must be a number, got a bool." % what)
    if isinstance(value, int):
        return value, "int32" if -2**31 <= value < 2**31 else "int64"
    if isinstance(value, float):
        return value, "float32"
    if isinstance(value, (Tensor, np.ndarray, np.generic)):
        if isinstance(value, Tensor):
            # A symbolic tensor whose value is known when traced (a static size) counts.
            known = constant_value(value)
            value = known if known is not None else value
        array = np.asarray(value)
        dt = d.from_numpy(array.dtype)
        if array.ndim == 0 and dt is not None and (dt.is_integer or dt.is_floating):
            return (int(array) if dt.is_integer else float(array)), dt.name
    raise errors.InvalidArgumentError(
        None, "range", "range: %s must be a real scalar (Python number or 0-d tensor), got %s.%s"
        % (what, _short(value), "" if isinstance(value, (Tensor, np.ndarray)) else
           " Inside a traced function pass Python numbers or static sizes (x.shape[0])."))


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """Creates a sequence of numbers from ``start`` up to (not including) ``limit``.

    Like Python's ``range``, ``range(n)`` counts from 0. Without ``dtype`` the result takes
    the widest dtype among the arguments (Python ints are int32, floats float32), as in TF.

    Args:
        start: First value (or the limit when ``limit`` is None).
        limit: Exclusive upper (lower, for negative ``delta``) bound.
        delta: Step; must be non-zero.
        dtype: Optional result dtype; the arguments are cast to it.
        name: Unused (TF compatibility).

    Returns:
        A 1-D Tensor.

    Raises:
        InvalidArgumentError: If ``delta`` is zero or points away from ``limit``.

    Example:
        >>> import eagerflow as ef
        >>> ef.range(5).numpy().tolist()
        [0, 1, 2, 3, 4]
        >>> ef.range(0.0, 1.0, 0.25).numpy().tolist()
        [0.0, 0.25, 0.5, 0.75]
    """
    if limit is None:
        start, limit = 0, start
    if any(_is_dynamic(v) for v in (start, limit, delta)):
        return _dynamic_range(start, limit, delta, dtype)
    values = [_range_arg(start, "start"), _range_arg(limit, "limit"), _range_arg(delta, "delta")]
    if dtype is None:
        name_ = builtins.max((n for _, n in values),
                             key=lambda n: _RANGE_HIERARCHY.index(n)
                             if n in _RANGE_HIERARCHY else len(_RANGE_HIERARCHY))
        out_dtype = d.as_dtype(name_)
    else:
        out_dtype = d.as_dtype(dtype)
        if out_dtype not in _RANGE_DTYPES:
            raise errors.InvalidArgumentError(
                None, "range", "range: dtype %s is not supported; use an integer or floating "
                "dtype." % out_dtype.name)
    nums = [v for v, _ in values]
    if out_dtype.is_integer:
        if any(isinstance(v, float) and v != math.floor(v) for v in nums):
            raise errors.InvalidArgumentError(
                None, "range", "range: non-integer arguments %s for integer dtype %s."
                % (nums, out_dtype.name))
        nums = [int(v) for v in nums]
    else:
        nums = [float(v) for v in nums]
    return execute(RANGE, (), {"start": nums[0], "limit": nums[1], "delta": nums[2],
                               "dtype": out_dtype.name})


def _is_dynamic(value):
    """True for a tensor whose value is known only when the graph runs."""
    return isinstance(value, Tensor) and constant_value(value) is None


def _dynamic_range(start, limit, delta, dtype):
    from eagerflow.ops.array.range_dynamic import DYNAMIC_RANGE

    if dtype is None:
        names = [v.dtype.name if isinstance(v, Tensor) else _range_arg(v, "bound")[1]
                 for v in (start, limit, delta)]
        dtype = builtins.max(names, key=lambda n: _RANGE_HIERARCHY.index(n)
                             if n in _RANGE_HIERARCHY else len(_RANGE_HIERARCHY))
    out_dtype = d.as_dtype(dtype)
    args = [cast(v, out_dtype) if isinstance(v, Tensor) else v for v in (start, limit, delta)]
    return execute(DYNAMIC_RANGE, tuple(args), {"dtype": out_dtype.name})


# --- LinSpace ---------------------------------------------------------------------------------

def _linspace_axis(axis, rank):
    if not -(rank + 1) <= axis <= rank:
        raise errors.InvalidArgumentError(
            None, None, "axis %d is out of range for a result of rank %d (valid range [%d, %d])"
            % (axis, rank + 1, -(rank + 1), rank))
    return axis % (rank + 1)


def _linspace_kernel(xp):
    def kernel(start, stop, *, num, axis):
        if num < 1:
            raise errors.InvalidArgumentError(
                None, None, "num must be >= 1, got %d" % num)
        if start.shape != stop.shape:
            try:
                start, stop = xp.broadcast_arrays(start, stop)
            except ValueError:
                raise errors.InvalidArgumentError(
                    None, None, "start (shape %s) and stop (shape %s) must have broadcast-"
                    "compatible shapes." % (list(start.shape), list(stop.shape))) from None
        a = _linspace_axis(axis, start.ndim)
        lo = xp.expand_dims(start, a)
        hi = xp.expand_dims(stop, a)
        if num == 1:
            return xp.array(lo)
        dt = start.dtype
        step = (hi - lo) / dt.type(num - 1)
        index = xp.arange(num - 1, dtype=dt).reshape((-1,) + (1,) * (start.ndim - a))
        # The last value is exactly ``stop``, as in TF and numpy.
        return xp.concatenate([lo + index * step, hi], axis=a)
    return kernel


def _linspace_shape(start, stop, *, num, axis):

    shape = broadcast_shapes(start.shape, stop.shape)
    if shape is None:
        return AbstractValue(None, start.dtype)
    a = _linspace_axis(axis, len(shape))
    return AbstractValue(shape[:a] + (num,) + shape[a:], start.dtype)


def _scalar_like(g, one):
    """A 0-d zero (or one) of g's dtype on g's device."""
    zero = execute(SUM_TO_SHAPE, (execute(ZEROS_LIKE, (g,)),), {"shape": ()})
    return execute(ONES_LIKE, (zero,)) if one else zero


def _linspace_vjp(g, start, stop, out, *, num, axis):

    rank = len(g.shape)
    a = axis % rank
    t = execute(LINSPACE, (_scalar_like(g, False), _scalar_like(g, True)),
                {"num": num, "axis": 0})
    t = reshape_ops.reshape(t, (-1,) + (1,) * (rank - 1 - a))  # -1: num may be a run-time value
    g_stop = g * t
    g_start = g - g_stop
    return (_sum_axis(g_start, a), _sum_axis(g_stop, a))


def _sum_axis(x, axis):
    """Sums over one axis, dropping it."""
    dims = tuple(x.shape)
    if None in dims:

        return reductions.reduce_sum(x, axis=axis)
    kept = dims[:axis] + (1,) + dims[axis + 1:]
    return reshape_ops.squeeze(execute(SUM_TO_SHAPE, (x,), {"shape": kept}), axis)


def _linspace_reference(start, stop, *, num, axis):
    return np.linspace(start, stop, num, axis=axis).astype(np.result_type(start, stop))


def _linspace_samples(rng, dtype):
    def v(shape):
        return _sample_values(rng, shape, dtype, (-3, 3))
    return [((v(()), v(())), {"num": 5, "axis": 0}),
            ((v(()), v(())), {"num": 1, "axis": 0}),
            ((v((2,)), v((2,))), {"num": 4, "axis": 0}),
            ((v((2,)), v((2,))), {"num": 4, "axis": -1}),
            ((v((2, 3)), v((3,))), {"num": 3, "axis": 1}),
            ((v((0,)), v((0,))), {"num": 3, "axis": 0})]


LINSPACE = registry.primitive(
    "LinSpace", _linspace_kernel, dtypes=_FLOATS, family="array", shape_fn=_linspace_shape,
    vjp=_linspace_vjp, saves=(), reference=_linspace_reference, samples=_linspace_samples,
    tolerance={"float32": (1e-5, 1e-5)},
    bad_samples=lambda rng: [
        ((np.float32(0), np.float32(1)), {"num": 0, "axis": 0}, errors.InvalidArgumentError),
        ((np.zeros(2, np.float32), np.ones(2, np.float32)), {"num": 3, "axis": 2},
         errors.InvalidArgumentError),
        ((np.zeros(2, np.float32), np.ones(3, np.float32)), {"num": 3, "axis": 0},
         errors.InvalidArgumentError)])


def linspace(start, stop, num, name=None, axis=0):
    """Generates ``num`` evenly spaced values from ``start`` to ``stop`` (inclusive).

    ``start`` and ``stop`` may be N-D (they broadcast); the values run along ``axis`` of the
    result. The last value is exactly ``stop``. Integer bounds give float64 values, as in TF.
    The result is differentiable in ``start`` and ``stop``.

    Args:
        start: Floating Tensor or value: the first value(s).
        stop: Floating Tensor or value of the same dtype: the last value(s).
        num: Number of values, >= 1.
        name: Unused (TF compatibility).
        axis: Where the new dimension of size ``num`` goes.

    Returns:
        A Tensor of ``start``'s dtype.

    Raises:
        InvalidArgumentError: If ``num < 1``, the dtype is not floating, or ``axis`` is out of
            range.

    Example:
        >>> import eagerflow as ef
        >>> ef.linspace(10.0, 12.0, 3).numpy().tolist()
        [10.0, 11.0, 12.0]
    """
    num = scalar_int(num, "linspace", "num")
    if num.__class__ is int and num < 1:  # else checked when the graph runs
        raise errors.InvalidArgumentError(
            None, "LinSpace", "linspace: num must be >= 1, got %d." % num)
    start, stop = _linspace_float_bounds(start, stop)
    return execute(LINSPACE, (start, stop), {"num": num, "axis": scalar_int(
        axis, "linspace", "axis")})


def _linspace_float_bounds(start, stop):
    """Integer bounds (``linspace(-2, 2, 201)``) compute in float64, as TF's linspace (its
    spacing is an integer tensor divided by truediv); floating bounds keep their dtype."""

    start_dtype = getattr(start, "dtype", None)
    if start_dtype is None:
        start = convert_to_tensor(start)
        start_dtype = start.dtype
    if not d.as_dtype(start_dtype).is_integer:
        return start, stop
    stop_dtype = getattr(stop, "dtype", None)
    if stop_dtype is None:
        stop = convert_to_tensor(stop, dtype=start_dtype)
    return cast(start, "float64"), cast(stop, "float64")


# --- Composites: meshgrid, sequence_mask ------------------------------------------------------

def meshgrid(*args, **kwargs):
    """Broadcasts N 1-D coordinate vectors into N N-D grids.

    With ``indexing="xy"`` (default, Cartesian) the first two output dimensions are swapped
    relative to ``"ij"`` (matrix) indexing, as in numpy. Inputs of higher rank are flattened.

    Args:
        *args: Tensors of one dtype, each treated as 1-D.
        **kwargs: ``indexing`` (``"xy"`` or ``"ij"``) and ``name`` (unused).

    Returns:
        A list of N Tensors, each of the grid's shape.

    Raises:
        TypeError: For an unknown keyword argument.
        InvalidArgumentError: For a bad ``indexing`` or inputs of different dtypes.

    Example:
        >>> import eagerflow as ef
        >>> X, Y = ef.meshgrid([1, 2, 3], [4, 5])
        >>> X.numpy().tolist(), Y.numpy().tolist()
        ([[1, 2, 3], [1, 2, 3]], [[4, 4, 4], [5, 5, 5]])
    """

    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError("meshgrid() got unexpected keyword argument(s): %s"
                        % ", ".join(sorted(kwargs)))
    if indexing not in ("xy", "ij"):
        raise errors.InvalidArgumentError(
            None, "meshgrid", "meshgrid: indexing must be 'xy' or 'ij', got %r." % (indexing,))
    if not args:
        return []
    flat = [reshape_ops.reshape(a, (-1,)) for a in args]
    dtypes_seen = {t.dtype for t in flat}
    if len(dtypes_seen) > 1:
        raise errors.InvalidArgumentError(
            None, "meshgrid", "meshgrid: all inputs must have one dtype, got %s. Cast them "
            "first." % ", ".join(t.dtype.name for t in flat))
    n = len(flat)
    sizes = [int(t.shape[0]) if t.shape[0] is not None else None for t in flat]
    order = _range(n)
    if indexing == "xy" and n > 1:
        order = [1, 0] + list(_range(2, n))  # output axis k shows input order[k]
    grid = tuple(sizes[k] for k in order)
    out = []
    for i, t in enumerate(flat):
        position = list(order).index(i)
        view = [1] * n
        view[position] = -1
        out.append(broadcast_to(reshape_ops.reshape(t, view), grid))
    return out


def sequence_mask(lengths, maxlen=None, dtype=d.bool, name=None):
    """Returns a mask whose row ``i`` has ``lengths[i]`` leading true values.

    ``mask[i..., j] = j < lengths[i...]``, of shape ``lengths.shape + [maxlen]``.

    Args:
        lengths: An integer Tensor of sequence lengths.
        maxlen: The mask's last dimension; default ``max(lengths)`` (0 when empty).
        dtype: The result dtype (default bool; others hold 0/1).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of ``dtype``.

    Raises:
        InvalidArgumentError: If ``lengths`` is not integer or ``maxlen`` is negative.

    Example:
        >>> import eagerflow as ef
        >>> ef.sequence_mask([1, 3], 4).numpy().astype(int).tolist()
        [[1, 0, 0, 0], [1, 1, 1, 0]]
    """

    lengths = lengths if is_tensor(lengths) else convert_to_tensor(lengths)
    if not lengths.dtype.is_integer:
        raise errors.InvalidArgumentError(
            None, "sequence_mask", "sequence_mask: lengths must be an integer tensor, got %s. "
            "Cast it, e.g. eagerflow.cast(lengths, eagerflow.int32)." % lengths.dtype.name)
    if maxlen is None:
        values = constant_value(lengths)
        if values is None:  # known when the graph runs: max(lengths), 0 when empty
            maxlen = DynamicScalar(maximum(reductions.reduce_max(lengths),
                                           convert_to_tensor(0, lengths.dtype)))
        else:
            maxlen = int(values.max()) if values.size else 0
    else:
        maxlen = scalar_int(maxlen, "sequence_mask", "maxlen")
    if maxlen.__class__ is DynamicScalar:
        # TF's SequenceMask takes maxlen as a tensor: a run-time range of positions.
        positions = range(0, cast(maxlen.tensor, lengths.dtype), 1, dtype=lengths.dtype)
        mask = less(positions, reshape_ops.expand_dims(lengths, -1))
        dtype = d.as_dtype(dtype)
        return mask if dtype is d.bool else cast(mask, dtype)
    if maxlen < 0:
        raise errors.InvalidArgumentError(
            None, "sequence_mask", "sequence_mask: maxlen must be >= 0, got %d." % maxlen)
    positions = range(0, maxlen, 1, dtype=lengths.dtype)
    mask = less(positions, reshape_ops.expand_dims(lengths, -1))
    dtype = d.as_dtype(dtype)
    return mask if dtype is d.bool else cast(mask, dtype)
