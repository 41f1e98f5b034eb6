"""Slicing: ``Tensor.__getitem__``, ``strided_slice`` and ``slice``.

Every form of basic indexing is one primitive, ``StridedSlice``, with TF's static attrs:
``begin``, ``end``, ``strides`` (tuples of ints, one entry per index in the key) and five
bit masks over those entries:

* ``begin_mask`` / ``end_mask``: bit i set means entry i's begin/end is absent (``:``);
* ``ellipsis_mask``: entry i is ``...`` (at most one);
* ``new_axis_mask``: entry i is ``tf.newaxis`` (``None``), a new dimension of size 1;
* ``shrink_axis_mask``: entry i is an integer index; its dimension is removed.

Begins and ends clamp like Python slices; an integer index out of range raises
InvalidArgumentError naming the index, the dimension and its size. An implicit ``...``
follows the last entry.

``Tensor.__getitem__`` follows TF 2: ints, slices (negative steps and None bounds), ``...``,
``None``, and scalar integer tensors as indices; a list key is read as a tuple (``t[[0, 1]]``
is ``t[0, 1]``, unlike numpy); a bool tensor or bool numpy array key is
``boolean_mask(t, key)``. A 1-D integer tensor key raises TypeError, as in TF: use
``gather``. eagerflow accepts scalar tensors of any integer dtype (TF only int16/32/64).

Example:
    >>> import eagerflow as ef
    >>> t = ef.constant([[1, 2, 3], [4, 5, 6]])
    >>> t[:, ::-1].numpy().tolist()
    [[3, 2, 1], [6, 5, 4]]
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.indexing import gather_ops, mask_ops
from eagerflow.ops import indexing
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL
from eagerflow.ops.array import int_tuple
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.static_value import DynamicShape, constant_value, dynamic_int_tuple
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["getitem", "strided_slice", "slice"]

EXPORTS = {"": ["strided_slice", "slice"]}

_builtin_slice = slice

# --------------------------------------------------------------------------- the plan

_NEW, _SHRINK, _RANGE = 0, 1, 2
_PLANS = {}
_PLAN_LIMIT = 4096


def _fail(message):
    return errors.InvalidArgumentError(None, None, message)


def _build_plan(ndim, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                shrink_axis_mask):
    """Expands a strided-slice spec against a rank into per-dimension entries.

    Returns ``(index, checks, entries)``: a numpy basic index, the ``(dim, value)`` pairs of
    integer indices to bounds-check, and ``(kind, dim, value)`` entries for shape rules.
    """
    n = len(begin)
    if len(end) != n or len(strides) != n:
        raise _fail("begin, end and strides must have the same length, got %d, %d and %d."
                    % (n, len(end), len(strides)))
    if ellipsis_mask & (ellipsis_mask - 1):
        raise _fail("Multiple ellipses in slice spec not allowed (ellipsis_mask = %d)."
                    % ellipsis_mask)
    has_ellipsis = bool(ellipsis_mask & ((1 << n) - 1))
    # An ellipsis entry is never a new axis; entries that are neither index a dimension.
    real = sum(1 for i in range(n)
               if not (ellipsis_mask >> i) & 1 and not (new_axis_mask >> i) & 1)
    if real > ndim:
        raise _fail("Index out of range using input dim %d; input has only %d dims (the key "
                    "indexes %d dims)." % (ndim, ndim, real))
    entries, index, checks = [], [], []
    dim = 0
    for i in range(n if has_ellipsis else n + 1):
        bit = 1 << i
        if i == n or ellipsis_mask & bit:
            for _ in range(ndim - real):
                entries.append((_RANGE, dim, _builtin_slice(None)))
                index.append(_builtin_slice(None))
                dim += 1
        elif new_axis_mask & bit:
            entries.append((_NEW, None, None))
            index.append(None)
        else:
            stride = strides[i]
            if stride == 0:
                raise _fail("strides[%d] must be non-zero." % i)
            if shrink_axis_mask & bit:
                if stride < 0:
                    raise _fail("only stride 1 allowed on non-range indexing (strides[%d] = "
                                "%d with shrink_axis_mask bit %d set)." % (i, stride, i))
                entries.append((_SHRINK, dim, begin[i]))
                index.append(begin[i])
                checks.append((dim, begin[i]))
            else:
                sl = _builtin_slice(None if begin_mask & bit else begin[i],
                                    None if end_mask & bit else end[i], stride)
                entries.append((_RANGE, dim, sl))
                index.append(sl)
            dim += 1
    return tuple(index), tuple(checks), tuple(entries)


def _plan(ndim, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
          shrink_axis_mask):
    key = (ndim, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
           shrink_axis_mask)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _build_plan(*key)
        if len(_PLANS) >= _PLAN_LIMIT:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def _out_of_bounds(value, dim, size):
    return _fail("slice index %d of dimension %d out of bounds: the dimension has size %d, "
                 "so an index must be in [%d, %d)." % (value, dim, size, -size, size))


def _strided_slice_kernel(xp):
    def kernel(x, *, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
               shrink_axis_mask):
        index, checks, _ = _plan(x.ndim, begin, end, strides, begin_mask, end_mask,
                                 ellipsis_mask, new_axis_mask, shrink_axis_mask)
        if checks:
            shape = x.shape
            for dim, value in checks:
                size = shape[dim]
                if not -size <= value < size:
                    raise _out_of_bounds(value, dim, size)
        # A copy, as in TF: the result must not keep the whole input alive or alias it.
        out = x[index]
        if x.dtype.kind == "O":  # one string element comes back as bytes, not an array
            return np.array(out, dtype=object)
        return out.copy()
    return kernel


def _strided_slice_grad_kernel(xp):
    def kernel(dy, *, shape, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
               new_axis_mask, shrink_axis_mask):
        index, _, _ = _plan(len(shape), begin, end, strides, begin_mask, end_mask,
                            ellipsis_mask, new_axis_mask, shrink_axis_mask)
        out = xp.zeros(shape, dy.dtype)
        out[index] = dy
        return out
    return kernel


def _strided_slice_shape(x, **attrs):
    if x.shape is None:
        return AbstractValue(None, x.dtype)
    spec = [attrs[k] for k in _ATTR_NAMES]
    unknown = _unknown_entries(len(x.shape), *spec)
    if unknown:  # bounds known only at run time (a DynamicShape): planned with stand-ins
        spec[:3] = [tuple(0 if v is None else v for v in spec[0]),
                    tuple(0 if v is None else v for v in spec[1]),
                    tuple(1 if v is None else v for v in spec[2])]
    _, _, entries = _plan(len(x.shape), *spec)
    dims = []
    for k, (kind, dim, value) in enumerate(entries):
        size = None if dim is None else x.shape[dim]
        if kind == _NEW:
            dims.append(1)
        elif kind == _RANGE:
            dims.append(None if size is None or k in unknown else
                        len(range(*value.indices(size))))
        elif size is not None and k not in unknown and not -size <= value < size:
            raise _out_of_bounds(value, dim, size)
    return AbstractValue(dims, x.dtype)


def _unknown_entries(ndim, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
                     new_axis_mask, shrink_axis_mask):
    """Positions among the plan's entries whose begin, end or stride is unknown (None)."""
    n = len(begin)
    if None not in begin and None not in end and None not in strides:
        return ()
    real = sum(1 for i in range(n)
               if not (ellipsis_mask >> i) & 1 and not (new_axis_mask >> i) & 1)
    has_ellipsis = bool(ellipsis_mask & ((1 << n) - 1))
    out, k = [], 0
    for i in range(n if has_ellipsis else n + 1):
        bit = 1 << i
        if i == n or ellipsis_mask & bit:
            k += max(ndim - real, 0)
            continue
        if not new_axis_mask & bit and (
                strides[i] is None or (begin[i] is None and not begin_mask & bit) or
                (end[i] is None and not end_mask & bit and not shrink_axis_mask & bit)):
            out.append(k)
        k += 1
    return tuple(out)


_ATTR_NAMES = ("begin", "end", "strides", "begin_mask", "end_mask", "ellipsis_mask",
               "new_axis_mask", "shrink_axis_mask")


def _canonical(v, masked, is_end, stride, size):
    """TF's canonical begin/end: masked -> the edge, else wrap negatives and clamp into
    [0, size] (stride > 0) or [-1, size - 1] (stride < 0)."""
    lo, hi = (0, size) if stride > 0 else (-1, size - 1)
    if masked:
        return (hi if is_end else lo) if stride > 0 else (lo if is_end else hi)
    v = v + size if v < 0 else v
    return min(max(v, lo), hi)


def _reference(x, *, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
               shrink_axis_mask):
    """numpy reference following TF's specification step by step (sparse -> dense spec,
    then canonical begin/end per dimension), written independently of the kernel."""
    x = np.asarray(x)
    n = len(begin)
    spec = []
    for i in range(n):
        if (ellipsis_mask >> i) & 1:
            spec.append(("ellipsis",))
        elif (new_axis_mask >> i) & 1:
            spec.append(("new",))
        else:
            spec.append(("dim", begin[i], end[i], strides[i], (begin_mask >> i) & 1,
                         (end_mask >> i) & 1, (shrink_axis_mask >> i) & 1))
    if not any(s[0] == "ellipsis" for s in spec):
        spec.append(("ellipsis",))
    after = 0
    ranges, final_shape, full = [], [], 0
    for k, s in enumerate(spec):
        if s[0] == "ellipsis":
            after = sum(1 for t in spec[k + 1:] if t[0] == "dim")
            stop = x.ndim - after
            while full < stop:
                ranges.append(np.arange(x.shape[full]))
                final_shape.append(x.shape[full])
                full += 1
        elif s[0] == "new":
            final_shape.append(1)
        else:
            _, b, e, st, bm, em, shrink = s
            size = x.shape[full]
            if shrink:
                b = b + size if b < 0 else b
                assert 0 <= b < size, "index out of bounds"
                ranges.append(np.array([b]))
            else:
                cb = _canonical(b, bm, False, st, size)
                ce = _canonical(e, em, True, st, size)
                picked = np.arange(cb, ce, st)
                ranges.append(picked)
                final_shape.append(len(picked))
            full += 1
    picked = x[np.ix_(*ranges)] if ranges else x
    return np.asarray(picked).reshape(final_shape)


def _sample_keys():
    E = Ellipsis
    S = _builtin_slice
    return [
        ((5,), 2), ((5,), -1), ((5,), S(1, 4)), ((5,), S(None, None, -1)),
        ((5,), S(-2, None, -2)), ((5,), S(10, -10, -3)), ((5,), S(3, 1)),
        ((5,), S(-100, 100)), ((4, 3), (S(None), 1)), ((4, 3), (E, None)),
        ((2, 3, 4), (1, E, S(None, None, 2))), ((2, 3, 4), (None, E, None, 0)),
        ((2, 3, 4), (S(None), None, S(1, None), -1)), ((), (None,)), ((), E),
        ((0, 3), (S(None), 2)), ((3, 0), (S(1, 2),)), ((4, 3), (-1, S(None, None, -1))),
        ((2, 3, 4), (E, 1, S(3, 0, -2))), ((2, 3, 4), (0, 2, 3)),
    ]


def _samples(rng, dtype):
    out = []
    for shape, key in _sample_keys():
        attrs, _ = _parse(key if isinstance(key, tuple) else (key,))
        out.append(((indexing._values(rng, shape, dtype),), attrs))
    # A raw spec: shrink, ellipsis in the middle and a new axis after it.
    out.append(((indexing._values(rng, (3, 4, 5, 2), dtype),), {
        "begin": (1, 0, 0, 4), "end": (2, 0, 0, 0), "strides": (1, 1, 1, -2),
        "begin_mask": 0, "end_mask": 8, "ellipsis_mask": 2, "new_axis_mask": 4,
        "shrink_axis_mask": 1}))
    return out


def _bad_samples(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    bad = errors.InvalidArgumentError

    def attrs(**kw):
        out = dict(zip(_ATTR_NAMES, ((0,), (1,), (1,), 0, 0, 0, 0, 0)))
        out.update(kw)
        return out

    return [
        ((x,), attrs(begin=(4,), end=(5,), shrink_axis_mask=1), bad),
        ((x,), attrs(begin=(-5,), end=(-4,), shrink_axis_mask=1), bad),
        ((x,), attrs(begin=(0, 0, 0), end=(1, 1, 1), strides=(1, 1, 1), shrink_axis_mask=7),
         bad),
        ((x,), attrs(strides=(0,)), bad),
        ((x,), attrs(begin=(0, 0), end=(0, 0), strides=(1, 1), ellipsis_mask=3), bad),
        ((x,), attrs(end=(1, 2)), bad),
        ((x,), attrs(strides=(-1,), shrink_axis_mask=1), bad),
    ]


def _strided_slice_vjp(g, x, out, **attrs):
    shape = tuple(x.shape)
    if None in shape:
        # Dimensions known only at run time (a traced function over None dimensions, e.g.
        # x[:, t] in a while_loop): the input's shape is an input of the gradient.
        from eagerflow.ops.array.shape_ops import shape as shape_of

        return execute(STRIDED_SLICE_GRAD, (g,), dict(
            attrs, shape=DynamicShape(shape, shape_of(x))))
    return execute(STRIDED_SLICE_GRAD, (g,), dict(attrs, shape=shape))


STRIDED_SLICE = registry.primitive(
    "StridedSlice", _strided_slice_kernel, dtypes=ALL, shape_fn=_strided_slice_shape,
    saves=(0,), reference=_reference, samples=_samples, bad_samples=_bad_samples,
    family="array", vjp=_strided_slice_vjp)


def _grad_reference(dy, *, shape, **attrs):
    # The adjoint of the reference: scatter through the positions it reads.
    positions = _reference(np.arange(int(np.prod(shape))).reshape(shape), **attrs)
    out = np.zeros(int(np.prod(shape)), np.asarray(dy).dtype)
    out[np.asarray(positions).reshape(-1)] = np.asarray(dy).reshape(-1)
    return out.reshape(shape)


def _grad_samples(rng, dtype):
    out = []
    for (x,), attrs in _samples(rng, dtype):
        dy = _reference(x, **attrs)
        out.append(((dy,), dict(attrs, shape=np.shape(x))))
    return out


STRIDED_SLICE_GRAD = registry.primitive(
    "StridedSliceGrad", _strided_slice_grad_kernel, dtypes=ALL, family="array",
    shape_fn=lambda dy, *, shape, **attrs: AbstractValue(shape, dy.dtype), saves=(),
    vjp=lambda g, dy, out, *, shape, **attrs: execute(STRIDED_SLICE, (g,), attrs),
    reference=_grad_reference, samples=_grad_samples)


# --------------------------------------------------------------------------- __getitem__

_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                     "scalar integer tensors are valid indices")


class _Dynamic:
    """A symbolic scalar index (inside a trace): applied with a gather after the slice."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


def _index_value(v):
    """A static int for an index value, or _Dynamic for a symbolic scalar int tensor."""
    if v.__class__ is int:
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if v.__class__ is Tensor:
        value = v._value
        if value.ndim == 0 and value.dtype.kind in "iu":
            return v.__index__()
        raise TypeError("%s, got a %s tensor of shape %s. Use eagerflow.gather for tensors of "
                        "indices, eagerflow.boolean_mask for masks."
                        % (_SLICE_TYPE_ERROR, v.dtype.name, list(value.shape)))
    if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "iu":
        return int(v)
    if getattr(v, "_is_eagerflow_tensor_like", False) or hasattr(v, "_as_tensor"):
        dtype, shape = getattr(v, "dtype", None), getattr(v, "shape", None)
        if dtype is not None and getattr(dtype, "is_integer", False) and shape is not None \
                and len(shape) == 0:
            try:
                return operator.index(v)
            except TypeError:
                return _Dynamic(v)
    raise TypeError("%s, got %r" % (_SLICE_TYPE_ERROR, v))


def _parse(spec):
    """TF's ``_slice_helper``: a tuple key -> (StridedSlice attrs, dynamic indices)."""
    begin, end, strides = [], [], []
    begin_mask = end_mask = ellipsis_mask = new_axis_mask = shrink_axis_mask = 0
    dynamic = None
    for i, s in enumerate(spec):
        bit = 1 << i
        cls = s.__class__
        if cls is int:
            begin.append(s)
            end.append(s + 1)
            strides.append(1)
            shrink_axis_mask |= bit
        elif cls is _builtin_slice:
            bounds = []
            for v in (s.start, s.stop, s.step):
                v = None if v is None else _index_value(v)
                if v.__class__ is _Dynamic:
                    # A bound known when the graph runs: StridedSlice takes it as an input.
                    folded = constant_value(v.tensor)
                    v = v.tensor if folded is None else int(folded)
                bounds.append(v)
            start, stop, step = bounds
            if start is None:
                begin_mask |= bit
                start = 0
            if stop is None:
                end_mask |= bit
                stop = 0
            begin.append(start)
            end.append(stop)
            strides.append(1 if step is None else step)
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            if s is None:
                new_axis_mask |= bit
            else:
                ellipsis_mask |= bit
        else:
            v = _index_value(s)
            if v.__class__ is _Dynamic:
                # Sliced as ':' here; a gather picks the element afterwards.
                dynamic = (dynamic or []) + [(i, v.tensor)]
                begin.append(0)
                end.append(0)
                strides.append(1)
                begin_mask |= bit
                end_mask |= bit
            else:
                begin.append(v)
                end.append(v + 1)
                strides.append(1)
                shrink_axis_mask |= bit
    attrs = {"begin": _bounds(begin), "end": _bounds(end), "strides": _bounds(strides),
             "begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
             "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask}
    return attrs, dynamic


def _bounds(values):
    """Static bounds as a tuple; with traced scalars among them, a DynamicShape."""
    for v in values:
        if v.__class__ is not int:
            out = dynamic_int_tuple(values)
            if out is None:  # a tensor-like that is neither an int nor a traced tensor
                raise errors.UnimplementedError(
                    None, "StridedSlice", "StridedSlice: slice bounds must be ints or scalar "
                    "integer tensors, got %s. Use eagerflow.gather(x, eagerflow.range(start, "
                    "stop, step), axis=...) instead." % errors.short_repr(list(values)))
            return out
    return tuple(values)


def _apply_dynamic(tensor, out, spec, attrs, dynamic):
    """Picks symbolic scalar indices out of the sliced result with gathers."""
    from eagerflow.ops.math.arithmetic import less, where

    ndim = len(tensor.shape)
    real = sum(1 for s in spec if s is not Ellipsis and s is not None)
    positions = {}
    out_axis = in_dim = 0
    for i, s in enumerate(spec):
        if s is Ellipsis:
            out_axis += ndim - real
            in_dim += ndim - real
        elif s is None:
            out_axis += 1
        elif (attrs["shrink_axis_mask"] >> i) & 1:
            in_dim += 1
        else:
            positions[i] = (out_axis, in_dim)
            out_axis += 1
            in_dim += 1
    for i, index in reversed(dynamic):  # last first: earlier axes keep their numbers
        axis, dim = positions[i]
        size = tensor.shape[dim]
        if size is not None:
            index = where(less(index, 0), index + size, index)
        out = gather_ops.gather(out, index, axis=axis)
    return out


def _int_attrs(i):
    return {"begin": (i,), "end": (i + 1,), "strides": (1,), "begin_mask": 0, "end_mask": 0,
            "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 1}


_INT_ATTRS = {i: _int_attrs(i) for i in range(-8, 64)}
_SLICE_ATTRS = {}
_TUPLE_ATTRS = {}
_CACHE_LIMIT = 1024


def _cached_tuple_attrs(key):
    """Attrs of a key made only of ints, None, ... and int/None slices, from a cache.

    The cache key spells each slice as a tuple and checks exact types, so that ``1.0`` or
    ``True`` (equal to 1 as dict keys) never hit an int's entry.
    """
    sig = []
    for s in key:
        cls = s.__class__
        if cls is int or s is None or s is Ellipsis:
            sig.append(s)
        elif cls is _builtin_slice:
            a, b, c = s.start, s.stop, s.step
            if (a is None or a.__class__ is int) and (b is None or b.__class__ is int) \
                    and (c is None or c.__class__ is int):
                sig.append((a, b, c))
            else:
                return None
        else:
            return None
    sig = tuple(sig)
    attrs = _TUPLE_ATTRS.get(sig)
    if attrs is None:
        attrs = _parse(key)[0]
        if len(_TUPLE_ATTRS) >= _CACHE_LIMIT:
            _TUPLE_ATTRS.clear()
        _TUPLE_ATTRS[sig] = attrs
    return attrs


def _is_bool_key(key):
    if key.__class__ is bool:
        return True
    if key.__class__ is Tensor:
        return key._value.dtype.kind == "b"
    if isinstance(key, np.ndarray):
        return key.dtype.kind == "b"
    if getattr(key, "_is_eagerflow_tensor_like", False):
        return getattr(key, "dtype", None) is not None and key.dtype.is_bool
    return False


def getitem(tensor, key):
    """``tensor[key]`` with TF 2's semantics (see the module docstring).

    Args:
        tensor: A Tensor.
        key: An int, slice, ``...``, ``None`` (newaxis), scalar integer tensor, a tuple or
            list of these, or a bool tensor/array mask.

    Returns:
        A Tensor.

    Raises:
        TypeError: For an index of another kind (a float, a 1-D int tensor), as TF.
        InvalidArgumentError: For an integer index out of range or too many indices.

    Example:
        >>> import eagerflow as ef
        >>> ef.constant([[1, 2], [3, 4]])[1, ::-1].numpy().tolist()
        [4, 3]
    """
    cls = key.__class__
    if cls is int:
        attrs = _INT_ATTRS.get(key)
        return execute(STRIDED_SLICE, (tensor,), attrs if attrs is not None else _int_attrs(key))
    if cls is _builtin_slice:
        start, stop, step = key.start, key.stop, key.step
        if (start is None or start.__class__ is int) and (stop is None or stop.__class__ is int) \
                and (step is None or step.__class__ is int):
            k = (start, stop, step)
            attrs = _SLICE_ATTRS.get(k)
            if attrs is None:
                attrs = _parse((key,))[0]
                if len(_SLICE_ATTRS) < _CACHE_LIMIT:
                    _SLICE_ATTRS[k] = attrs
            return execute(STRIDED_SLICE, (tensor,), attrs)
    if cls is tuple:
        attrs = _cached_tuple_attrs(key)
        if attrs is not None:
            return execute(STRIDED_SLICE, (tensor,), attrs)
    elif _is_bool_key(key):
        return mask_ops.boolean_mask(tensor, key)
    else:
        key = tuple(key) if cls is list else (key,)
    attrs, dynamic = _parse(key)
    out = execute(STRIDED_SLICE, (tensor,), attrs)
    if dynamic:
        out = _apply_dynamic(tensor, out, key, attrs, dynamic)
    return out


# --------------------------------------------------------------------------- public API

def _int_tuple(value, what, op):
    """The array family's ``int_tuple`` (a DynamicShape for values known at run time)."""
    return int_tuple(value, op, what)


def _dynamic_slice(input_, begin, size):
    """``slice`` with a begin or size known only at run time: a StridedSlice whose begin and
    end are tensor inputs (end = begin + size, or the dimension for a size of -1), checked
    to have the requested size where it is known, as TF's Slice gives it."""
    from eagerflow.ops.array.shape_ops import ensure_shape, shape as shape_of
    from eagerflow.ops.math.arithmetic import add, equal, where
    from eagerflow.ops.math.cast import cast

    def as_tensor(value):
        if value.__class__ is DynamicShape:
            return value.tensor
        return convert_to_tensor(np.asarray(value, np.int32))

    b = as_tensor(begin)
    s = as_tensor(size)
    if s.dtype != b.dtype:
        s = cast(s, b.dtype)
    dims = shape_of(input_, out_type=b.dtype)
    end = where(equal(s, -1), dims, add(b, s))
    rank = len(begin)
    attrs = {"begin": DynamicShape(tuple(begin), b),
             "end": DynamicShape(tuple(None if s_ is None or s_ == -1 or b_ is None
                                       else b_ + s_ for b_, s_ in zip(begin, size)), end),
             "strides": (1,) * rank, "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
             "new_axis_mask": 0, "shrink_axis_mask": 0}
    out = execute(STRIDED_SLICE, (input_,), attrs)
    known = [s_ if s_ is not None and s_ >= 0 else None for s_ in size]
    if any(k is not None for k in known) and None in tuple(out.shape):
        out = ensure_shape(out, known)
    return out


def _mask(value, what):
    try:
        return operator.index(value)
    except TypeError:
        raise errors.InvalidArgumentError(
            None, "StridedSlice", "StridedSlice: %s must be an int, got %r."
            % (what, value)) from None


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """Extracts a strided slice of a tensor (the primitive behind ``tensor[...]``).

    Entry i of begin/end/strides describes one index of a key; the masks' bit i say that
    entry i has no begin (``begin_mask``), no end (``end_mask``), is ``...``
    (``ellipsis_mask``), is a new axis (``new_axis_mask``) or an integer index that removes
    its dimension (``shrink_axis_mask``). ``t[1:, None, ..., 0]`` is
    ``strided_slice(t, [1, 0, 0, 0], [0, 0, 0, 1], [1, 1, 1, 1], end_mask=1,
    new_axis_mask=2, ellipsis_mask=4, shrink_axis_mask=8)``.

    Args:
        input_: A Tensor.
        begin: A list (or 1-D int tensor) of begin indices.
        end: End indices (exclusive), same length.
        strides: Steps, same length, non-zero (default all 1).
        begin_mask: Bits of entries whose begin is ignored (start at the edge).
        end_mask: Bits of entries whose end is ignored (run to the edge).
        ellipsis_mask: The bit of the entry that is ``...`` (at most one).
        new_axis_mask: Bits of entries that insert a dimension of size 1.
        shrink_axis_mask: Bits of entries that index one element and drop the dimension.
        var: Unused (TF's variable slice assignment).
        name: Unused.

    Returns:
        A Tensor of input's dtype.

    Raises:
        InvalidArgumentError: For lengths that differ, a zero stride, several ellipses, or an
            integer index out of range.

    Example:
        >>> import eagerflow as ef
        >>> t = ef.constant([[1, 2, 3], [4, 5, 6]])
        >>> ef.strided_slice(t, [0, 2], [2, 0], [1, -1]).numpy().tolist()
        [[3, 2], [6, 5]]
    """
    begin = _int_tuple(begin, "begin", "StridedSlice")
    end = _int_tuple(end, "end", "StridedSlice")
    strides = (1,) * len(begin) if strides is None else _int_tuple(
        strides, "strides", "StridedSlice")
    if not len(begin) == len(end) == len(strides):
        raise errors.InvalidArgumentError(
            None, "StridedSlice", "StridedSlice: expected begin, end and strides of equal "
            "length, got %d, %d and %d." % (len(begin), len(end), len(strides)))
    attrs = {"begin": begin, "end": end, "strides": strides,
             "begin_mask": _mask(begin_mask, "begin_mask"),
             "end_mask": _mask(end_mask, "end_mask"),
             "ellipsis_mask": _mask(ellipsis_mask, "ellipsis_mask"),
             "new_axis_mask": _mask(new_axis_mask, "new_axis_mask"),
             "shrink_axis_mask": _mask(shrink_axis_mask, "shrink_axis_mask")}
    return execute(STRIDED_SLICE, (input_,), attrs)


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    """Extracts the block starting at ``begin`` of extent ``size``.

    Unlike Python slicing nothing is clamped: ``begin[i]`` must be in ``[0, dim_i]`` and
    ``size[i]`` in ``[0, dim_i - begin[i]]``, or -1 for everything to the end.

    Args:
        input_: A Tensor.
        begin: One start index per dimension (list or 1-D int tensor).
        size: One extent per dimension; -1 means to the end.
        name: Unused.

    Returns:
        A Tensor of input's dtype and rank.

    Raises:
        InvalidArgumentError: If begin/size do not have one entry per dimension or leave
            the tensor.

    Example:
        >>> import eagerflow as ef
        >>> t = ef.constant([[1, 2, 3], [4, 5, 6]])
        >>> ef.slice(t, [0, 1], [2, -1]).numpy().tolist()
        [[2, 3], [5, 6]]
    """
    if not (input_.__class__ is Tensor or hasattr(input_, "shape")):
        input_ = convert_to_tensor(input_)
    begin = _int_tuple(begin, "begin", "Slice")
    size = _int_tuple(size, "size", "Slice")
    shape = tuple(input_.shape)
    rank = len(shape)
    if len(begin) != rank or len(size) != rank:
        raise errors.InvalidArgumentError(
            None, "Slice", "Slice: expected begin and size to have %d entries (the rank of "
            "input shape %s), got %d and %d." % (rank, list(shape), len(begin), len(size)))
    if begin.__class__ is DynamicShape or size.__class__ is DynamicShape:
        return _dynamic_slice(input_, begin, size)
    end, end_mask = [], 0
    for i, (b, s, dim) in enumerate(zip(begin, size, shape)):
        if b < 0 or (dim is not None and b > dim):
            raise errors.InvalidArgumentError(
                None, "Slice", "Slice: expected begin[%d] in [0, %s], but got %d (input shape "
                "%s)." % (i, "?" if dim is None else dim, b, list(shape)))
        if s == -1:
            end.append(0)
            end_mask |= 1 << i
            continue
        if s < 0 or (dim is not None and b + s > dim):
            raise errors.InvalidArgumentError(
                None, "Slice", "Slice: expected size[%d] in [0, %s], but got %d (input shape "
                "%s, begin %s); use -1 for 'to the end'." % (
                    i, "?" if dim is None else dim - b, s, list(shape), list(begin)))
        end.append(b + s)
    attrs = {"begin": begin, "end": tuple(end), "strides": (1,) * rank, "begin_mask": 0,
             "end_mask": end_mask, "ellipsis_mask": 0, "new_axis_mask": 0,
             "shrink_axis_mask": 0}
    return execute(STRIDED_SLICE, (input_,), attrs)
