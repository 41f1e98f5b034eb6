"""``eagerflow.TensorArray``: a list of tensors that loops can grow (``tf.TensorArray``).

A TensorArray is a value: ``write``, ``scatter``, ``unstack`` and ``split`` return a new
TensorArray, as in TF 2. Its state is two tensors, which enter ``while_loop`` and ``cond``
as ordinary loop variables and through which gradients flow like through any op:

- the *buffer* ``[size, *padded_shape]``: every element stored from the corner of its row,
  the row padded with zeros up to the largest element written along each dimension;
- the *shapes* ``[m, rank]`` (int32): row ``k`` is the shape of element ``k``, ``-1``
  where element ``k`` fills its whole row (never written, or written by ``unstack``) and
  for every row past ``m``.

When all elements have one shape (the usual case) the buffer is exactly TF's stacked
array: ``stack`` returns it and ``concat`` reshapes it, with no copy. Elements of different
sizes (``infer_shape=False``, or an ``element_shape`` with None dimensions written with
values of different sizes at run time) are cut out of their padded rows by ``read``,
``gather`` and ``concat``; ``stack`` refuses them with TF's error.

An element shape not given is learned from the first write. Until then the buffer is a
placeholder of shape ``[size]``; an element shape of known rank with None dimensions
starts as a buffer with 0 along those dimensions, which writes grow.

Example:
    >>> import eagerflow as ef
    >>> ta = ef.TensorArray(ef.float32, size=0, dynamic_size=True)
    >>> for i in range(3):
    ...     ta = ta.write(i, ef.fill([2], float(i)))
    >>> ta.stack().numpy().tolist()
    [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    >>> ragged = ef.TensorArray(ef.float32, size=0, dynamic_size=True, infer_shape=False)
    >>> ragged.write(0, [1.0]).write(1, [2.0, 3.0]).concat().numpy().tolist()
    [1.0, 2.0, 3.0]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["TensorArray", "TENSOR_ARRAY_SCATTER", "TENSOR_ARRAY_UNSCATTER",
           "TENSOR_ARRAY_GATHER", "TENSOR_ARRAY_UNGATHER", "TENSOR_ARRAY_SPLIT"]


# -- helpers shared by the kernels ------------------------------------------------------------
def _on_host(array):
    """A small index or shape array as numpy (read back when it lives on a GPU)."""
    get = getattr(array, "get", None)
    return np.asarray(get() if get is not None and not isinstance(array, np.ndarray)
                      else array)


def _rows(indices):
    return _on_host(indices).reshape(-1)


def _corner(shape):
    """The index of the top-left block of ``shape`` inside a larger padded array."""
    return tuple(slice(0, int(x)) for x in shape)


def _empty(xp, shape, dtype):
    """An array of zeros, or of empty strings for a string array (TF's default element)."""
    if np.dtype(dtype) == object:
        return np.full(shape, b"", dtype=object)
    return xp.zeros(shape, dtype=dtype)


def _shapes_of(buf, shapes, idx):
    """The shapes ``[len(idx), rank]`` (int64) of the elements at rows ``idx``."""
    pad = np.asarray(buf.shape[1:], np.int64)
    out = np.tile(pad, (idx.size, 1))
    s = _on_host(shapes)
    if s.ndim == 2 and s.shape[1] == pad.size and s.shape[0]:
        inside = idx < s.shape[0]
        rows = s[idx[inside]].astype(np.int64)
        out[inside] = np.where(rows < 0, pad, rows)
    return out


def _effective(buf, shapes):
    """The shape of every element, ``[size, rank]`` (int64), ``-1`` rows resolved."""
    n, pad = buf.shape[0], np.asarray(buf.shape[1:], np.int64)
    eff = np.tile(pad, (n, 1))
    s = _on_host(shapes).astype(np.int64)
    if s.ndim == 2 and s.shape[1] == pad.size and s.shape[0]:
        m = min(s.shape[0], n)
        eff[:m] = np.where(s[:m] < 0, pad, s[:m])
    return eff


def _selection(buf, indices, every):
    """The rows a read takes, and whether it reads one element (a scalar index)."""
    n = buf.shape[0]
    if every:
        return np.arange(n), False
    idx = _on_host(indices).astype(np.int64)
    scalar = idx.ndim == 0
    idx = idx.reshape(-1)
    bad = idx[(idx < 0) | (idx >= n)]
    if bad.size:
        raise errors.OutOfRangeError(
            None, None, "TensorArray: tried to read from index %d but array size is: %d."
            % (int(bad[0]), n))
    return idx, scalar


def _add_at(xp, out, index, values):
    """``out[index] += values`` summing repeated rows (numpy's ``add.at``; cupyx's
    ``scatter_add`` on a GPU)."""
    at = getattr(xp.add, "at", None)
    if at is not None:
        at(out, index, values)
        return
    import cupyx

    cupyx.scatter_add(out, index, values)


def _shape_text(s):
    return "[%s]" % ",".join(str(int(x)) for x in s)


def _concat_check(buf, sel):
    if buf.ndim < 2:
        raise errors.InvalidArgumentError(
            None, None, "TensorArray.concat(): Concat saw a scalar shape at index 0 but "
            "requires at least vectors (use stack() for scalars).")
    for k in range(1, len(sel)):
        if (sel[k, 1:] != sel[0, 1:]).any():
            raise errors.InvalidArgumentError(
                None, None, "TensorArray.concat(): ConcatOp : Dimensions after the first "
                "must be equal: element shapes %s vs. %s at positions 0 and %d." % (
                    _shape_text(sel[0]), _shape_text(sel[k]), k))


def _stack_check(sel):
    for k in range(1, len(sel)):
        if (sel[k] != sel[0]).any():
            raise errors.InvalidArgumentError(
                None, None, "TensorArray: Shapes of all inputs must match: values[0].shape "
                "= %s != values[%d].shape = %s; elements of different shapes can be "
                "joined with concat(), not stacked." % (
                    _shape_text(sel[0]), k, _shape_text(sel[k])))


# -- TensorArrayScatter: writes rows -----------------------------------------------------------
def _scatter_kernel(xp):
    def kernel(buf, shapes, indices, values, *, dynamic, infer):
        idx = _rows(indices)
        n = buf.shape[0]
        if infer and buf.ndim == 1 and values.ndim > 1:
            # The placeholder of an array whose element shape comes from its first write.
            buf = _empty(xp, (n,) + tuple(values.shape[1:]), buf.dtype)
            shapes = np.zeros((0, values.ndim - 1), np.int32)
        if values.ndim != buf.ndim or values.shape[0] != idx.size:
            raise errors.InvalidArgumentError(
                None, None, "TensorArray: could not write elements of shape %s (%d of them "
                "for %d indices) into an array of elements of rank %d; every element "
                "must have the same rank." % (list(values.shape[1:]), values.shape[0],
                                              idx.size, buf.ndim - 1))
        # One write (the usual call) reads its index once; numpy's min/max cost more.
        lo, hi = (int(idx[0]),) * 2 if idx.size == 1 else (
            (int(idx.min()), int(idx.max())) if idx.size else (0, -1))
        if lo < 0:
            raise errors.InvalidArgumentError(
                None, None, "TensorArray: index %d is negative." % lo)
        need = hi + 1
        if need > n and not dynamic:
            raise errors.InvalidArgumentError(
                None, None, "TensorArray: index %d is out of range for an array of "
                "size %d; create it with dynamic_size=True to let it grow." % (need - 1, n))
        pad = tuple(buf.shape[1:])
        vel = tuple(values.shape[1:])
        grown = tuple(max(a, b) for a, b in zip(pad, vel))
        s = shapes if isinstance(shapes, np.ndarray) and shapes.dtype == np.int32 else \
            _on_host(shapes).astype(np.int32)
        if s.ndim != 2 or s.shape[1] != len(pad):
            s = np.zeros((0, len(pad)), np.int32)
        rows = max(n, need)
        if grown != pad:
            # Every row of the old buffer keeps its shape: recorded before the padding grows.
            s = _effective(buf, s).astype(np.int32)
            out = _empty(xp, (rows,) + grown, buf.dtype)
            out[(slice(0, n),) + _corner(pad)] = buf
        elif rows > n:
            out = _empty(xp, (rows,) + pad, buf.dtype)
            out[:n] = buf
        else:
            out = buf.copy()
        full = vel == grown
        if not full:
            out[idx] = _empty(np, (), out.dtype)
        out[(idx,) + _corner(vel)] = values
        # A row written with the padded shape needs no record (-1, as rows past the end);
        # the others record theirs. The usual array, of one shape, never records any.
        if full and (s.shape[0] == 0 or lo >= s.shape[0]):
            return out, xp.asarray(s)
        if not full and s.shape[0] < need:
            s = np.concatenate([s, np.full((need - s.shape[0], len(pad)), -1, np.int32)])
        else:
            s = s.copy()
        inside = idx[idx < s.shape[0]]
        s[inside] = -1 if full else vel
        return out, xp.asarray(s)
    return kernel


def _scatter_shape(buf, shapes, indices, values, *, dynamic, infer):
    rank = None
    if infer and (buf.shape is None or len(buf.shape) == 1) and values.shape is not None:
        element = tuple(values.shape[1:])
        first = buf.shape[0] if buf.shape is not None else None
    elif buf.shape is None:
        element, first = None, None
    else:
        first = buf.shape[0]
        element = tuple(buf.shape[1:])
        if values.shape is not None and len(values.shape) == len(buf.shape):
            # The padding grows to the larger of the two where both are known; a value
            # dimension known only at run time keeps the buffer's (the element shapes the
            # writes agreed on while tracing).
            element = tuple(a if b is None else None if a is None else max(a, b)
                            for a, b in zip(element, values.shape[1:]))
    if dynamic:
        first = None
    if element is not None:
        rank = len(element)
    shapes_aval = AbstractValue((None, rank), d.int32)
    if element is None:
        return AbstractValue(None, buf.dtype), shapes_aval
    return AbstractValue((first,) + element, buf.dtype), shapes_aval


def _scatter_reference(buf, shapes, indices, values, *, dynamic, infer):
    idx = _rows(indices)
    eff = _effective(buf, shapes)
    written = {int(k): v for k, v in zip(idx, values)}
    elements = {k: buf[(k,) + _corner(eff[k])] for k in range(buf.shape[0])}
    elements.update(written)
    n = max([buf.shape[0]] + [k + 1 for k in written])
    pad = tuple(max(a, b) for a, b in zip(buf.shape[1:], values.shape[1:]))
    out = np.zeros((n,) + pad, buf.dtype)
    for k, v in elements.items():
        out[(k,) + _corner(v.shape)] = v
    grown = pad != tuple(buf.shape[1:])
    s = eff.astype(np.int32) if grown else np.array(shapes, np.int32).reshape(
        -1, buf.ndim - 1)
    full = tuple(values.shape[1:]) == pad
    need = max(written) + 1
    if not full and len(s) < need:
        s = np.concatenate([s, np.full((need - len(s), buf.ndim - 1), -1, np.int32)])
    for k in written:
        if k < len(s):
            s[k] = -1 if full else values.shape[1:]
    return out, s


def _scatter_samples(rng, dtype):
    np_dtype = dtype.np_dtype
    buf = rng.standard_normal((4, 3)).astype(np_dtype)
    values = rng.standard_normal((2, 3)).astype(np_dtype)
    return [((buf, np.zeros((0, 1), np.int32), np.array([2, 0], np.int32), values),
             {"dynamic": False, "infer": False}),
            ((buf, np.array([[-1], [2]], np.int32), np.array([1], np.int32), values[:1, :2]),
             {"dynamic": False, "infer": False})]


def _scatter_grad_samples(rng):
    # Smaller elements written into padded rows, and rows past the buffer's end.
    buf = rng.standard_normal((3, 3))
    return [((buf, np.array([[-1], [3]], np.int32), np.array([1, 4], np.int32),
              rng.standard_normal((2, 2))), {"dynamic": True, "infer": False}),
            ((buf, np.array([[2]], np.int32), np.array([0], np.int32),
              rng.standard_normal((1, 4))), {"dynamic": False, "infer": False})]


# -- TensorArrayUnscatter: the gradient of a scatter for the buffer it wrote into -------------
def _unscatter_kernel(xp):
    def kernel(g, buf, indices):
        n = buf.shape[0]
        if g.ndim != buf.ndim:
            return xp.zeros(buf.shape, dtype=g.dtype)  # the placeholder took no gradient
        out = g[(slice(0, n),) + _corner(buf.shape[1:])].copy()
        idx = _rows(indices)
        out[idx[idx < n]] = 0
        return out
    return kernel


def _unscatter_shape(g, buf, indices):
    return AbstractValue(buf.shape, g.dtype)


def _unscatter_reference(g, buf, indices):
    out = np.array(g[:buf.shape[0]], copy=True)
    idx = _rows(indices)
    out[idx[idx < buf.shape[0]]] = 0
    return out


def _unscatter_samples(rng, dtype):
    np_dtype = dtype.np_dtype
    g = rng.standard_normal((5, 2)).astype(np_dtype)
    buf = rng.standard_normal((4, 2)).astype(np_dtype)
    return [((g, buf, np.array([1, 4], np.int32)), {})]


# -- TensorArrayGather: read, gather, stack and concat -----------------------------------------
def _gather_kernel(xp):
    def kernel(buf, shapes, indices, *, every, concat, element_shape, shape_known):
        idx, scalar = _selection(buf, indices, every)
        if not concat and np.shape(shapes)[0] == 0:
            # Every element fills its row (the usual array, of one shape): plain indexing.
            if every:
                return buf
            out = buf[int(idx[0])] if scalar else buf[idx]
            return out if hasattr(out, "shape") else np.asarray(out, dtype=buf.dtype)
        sel = _shapes_of(buf, shapes, idx)
        pad = np.asarray(buf.shape[1:], np.int64)
        if concat:
            _concat_check(buf, sel)
            if every and (sel == pad).all():
                return buf.reshape((-1,) + tuple(buf.shape[2:]))
            rest = _corner(sel[0, 1:] if len(sel) else pad[1:])
            pieces = [buf[(int(k), slice(0, int(s[0]))) + rest] for k, s in zip(idx, sel)]
            if not pieces:
                return _empty(xp, (0,) + tuple(buf.shape[2:]), buf.dtype)
            return xp.concatenate(pieces, axis=0)
        _stack_check(sel)
        common = sel[0] if len(sel) else pad
        if scalar:
            out = buf[(int(idx[0]),) + _corner(common)]
            # An element of a string array of scalars comes out as bytes: keep it an array.
            return out if hasattr(out, "shape") else np.asarray(out, dtype=buf.dtype)
        if every and (common == pad).all():
            return buf
        return buf[idx][(slice(None),) + _corner(common)]
    return kernel


def _element_dims(element_shape, shape_known, buf):
    if shape_known:
        return tuple(None if x < 0 else x for x in element_shape)
    return None


def _gather_shape(buf, shapes, indices, *, every, concat, element_shape, shape_known):
    element = _element_dims(element_shape, shape_known, buf)
    if concat:
        if element is not None:
            return AbstractValue((None,) + element[1:], buf.dtype)
        if buf.shape is not None:
            return AbstractValue((None,) + tuple(buf.shape[2:]), buf.dtype)
        return AbstractValue(None, buf.dtype)
    if element is None:
        return AbstractValue(None, buf.dtype)
    if every:
        return AbstractValue((None if buf.shape is None else buf.shape[0],) + element,
                             buf.dtype)
    if indices.shape is None:
        return AbstractValue(None, buf.dtype)
    return AbstractValue(tuple(indices.shape) + element, buf.dtype)


def _gather_reference(buf, shapes, indices, *, every, concat, element_shape, shape_known):
    elements = [buf[(k,) + _corner(s)] for k, s in enumerate(_effective(buf, shapes))]
    if not every:
        idx = np.asarray(indices)
        if idx.ndim == 0:
            return elements[int(idx)]
        elements = [elements[int(k)] for k in idx]
    return np.concatenate(elements) if concat else np.stack(elements)


def _gather_samples(rng, dtype):
    np_dtype = dtype.np_dtype
    buf = rng.standard_normal((3, 4, 2)).astype(np_dtype)
    ragged = np.array([[2, 2], [-1, -1], [1, 2]], np.int32)
    base = {"every": False, "concat": False, "element_shape": (), "shape_known": False}
    return [
        ((buf, np.zeros((0, 2), np.int32), np.array(1, np.int32)), base),
        ((buf, ragged, np.array([2, 0, 2], np.int32)), dict(base, concat=True)),
        ((buf, ragged, np.array([0, 0], np.int32)), base),
        ((buf, np.zeros((0, 2), np.int32), np.zeros(0, np.int32)),
         dict(base, every=True, element_shape=(4, 2), shape_known=True)),
        ((buf, ragged, np.zeros(0, np.int32)), dict(base, every=True, concat=True))]


# -- TensorArrayUngather: the gradient of a read for the buffer ------------------------------
def _ungather_kernel(xp):
    def kernel(g, buf, shapes, indices, *, every, concat):
        idx, scalar = _selection(buf, indices, every)
        sel = _shapes_of(buf, shapes, idx)
        pad = np.asarray(buf.shape[1:], np.int64)
        if every and len(sel) and (sel == pad).all() and not scalar:
            return g.reshape(buf.shape)
        out = xp.zeros(buf.shape, dtype=g.dtype)
        if concat:
            rest = _corner(sel[0, 1:]) if len(sel) else ()
            start = 0
            for k, s in zip(idx, sel):
                out[(int(k), slice(0, int(s[0]))) + rest] += g[start:start + int(s[0])]
                start += int(s[0])
        elif scalar:
            out[(int(idx[0]),) + _corner(sel[0])] += g
        elif len(sel):
            _add_at(xp, out, (idx,) + _corner(sel[0]), g)
        return out
    return kernel


def _ungather_shape(g, buf, shapes, indices, *, every, concat):
    return AbstractValue(buf.shape, g.dtype)


def _ungather_reference(g, buf, shapes, indices, *, every, concat):
    out = np.zeros(buf.shape, g.dtype)
    eff = _effective(buf, shapes)
    idx = np.arange(buf.shape[0]) if every else np.asarray(indices)
    if idx.ndim == 0:
        out[(int(idx),) + _corner(eff[int(idx)])] += g
        return out
    start = 0
    for j, k in enumerate(idx):
        corner = (int(k),) + _corner(eff[k])
        if concat:
            out[corner] += g[start:start + eff[k][0]]
            start += eff[k][0]
        else:
            out[corner] += g[j]
    return out


def _ungather_samples(rng, dtype):
    np_dtype = dtype.np_dtype
    buf = np.zeros((3, 4, 2), np_dtype)
    ragged = np.array([[2, 2], [-1, -1], [1, 2]], np.int32)
    return [
        ((rng.standard_normal((4, 2)).astype(np_dtype), buf, ragged,
          np.array(1, np.int32)), {"every": False, "concat": False}),
        ((rng.standard_normal((5, 2)).astype(np_dtype), buf, ragged,
          np.array([2, 0, 2], np.int32)), {"every": False, "concat": True}),
        ((rng.standard_normal((2, 4, 2)).astype(np_dtype), buf, np.zeros((0, 2), np.int32),
          np.array([1, 1], np.int32)), {"every": False, "concat": False}),
        ((rng.standard_normal((7, 2)).astype(np_dtype), buf, ragged,
          np.zeros(0, np.int32)), {"every": True, "concat": True})]


# -- TensorArraySplit: an array whose elements are pieces of one tensor ------------------------
def _split_kernel(xp):
    def kernel(value, lengths):
        ln = _on_host(lengths).astype(np.int64).reshape(-1)
        if value.ndim < 1:
            raise errors.InvalidArgumentError(
                None, None, "TensorArray.split(): the value must have rank >= 1.")
        if (ln < 0).any() or int(ln.sum()) != value.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, "TensorArray.split(): expected sum of lengths to be equal to "
                "values.shape[0], but sum of lengths is %d and value's shape is: %s." % (
                    int(ln.sum()), list(value.shape)))
        rest = tuple(value.shape[1:])
        longest = int(ln.max()) if ln.size else 0
        buf = _empty(xp, (ln.size, longest) + rest, value.dtype)
        start = 0
        for k, n in enumerate(ln):
            buf[k, :n] = value[start:start + n]
            start += int(n)
        shapes = np.empty((ln.size, value.ndim), np.int32)
        shapes[:, 0] = ln
        shapes[:, 1:] = rest
        return buf, xp.asarray(shapes)
    return kernel


def _split_shape(value, lengths):
    k = lengths.shape[0] if lengths.shape else None
    if value.shape is None:
        return AbstractValue(None, value.dtype), AbstractValue((k, None), d.int32)
    return (AbstractValue((k, None) + tuple(value.shape[1:]), value.dtype),
            AbstractValue((k, len(value.shape)), d.int32))


def _split_reference(value, lengths):
    return _split_kernel(np)(value, lengths)


def _split_samples(rng, dtype):
    value = rng.standard_normal((6, 2)).astype(dtype.np_dtype)
    return [((value, np.array([1, 3, 0, 2], np.int32)), {}),
            ((value, np.array([3, 3], np.int32)), {})]


# -- TensorArrayReserve: an array of a size known at run time ----------------------------------
def _reserve_kernel(xp):
    def kernel(size, *, dtype, element_shape):
        n = int(np.asarray(size).item())
        if n < 0:
            raise errors.InvalidArgumentError(
                None, None, "TensorArray: size must be >= 0, got %d." % n)
        return _empty(xp, (n,) + tuple(element_shape), d.as_dtype(dtype).np_dtype)
    return kernel


def _reserve_shape(size, *, dtype, element_shape):
    return AbstractValue((None,) + tuple(element_shape), d.as_dtype(dtype))


def _reserve_reference(size, *, dtype, element_shape):
    return np.zeros((int(size),) + tuple(element_shape), d.as_dtype(dtype).np_dtype)


def _reserve_samples(rng, dtype):
    return [((np.array(3, dtype.np_dtype),), {"dtype": "float32", "element_shape": (2,)}),
            ((np.array(0, dtype.np_dtype),), {"dtype": "int32", "element_shape": ()})]


# Arrays of any dtype, strings included (their ops only move elements).
_ELEMENTS = tuple(d.ALL_DTYPES) + ((d.string,) if d.string not in d.ALL_DTYPES else ())

TENSOR_ARRAY_RESERVE = registry.primitive(
    "TensorArrayReserve", _reserve_kernel, family="array", shape_fn=_reserve_shape,
    dtypes=(d.int32, d.int64), reference=_reserve_reference, samples=_reserve_samples,
    sweep_dtypes=(d.int32,))
TENSOR_ARRAY_SCATTER = registry.primitive(
    "TensorArrayScatter", _scatter_kernel, family="array", dtypes=_ELEMENTS,
    dtype_group=(0, 3), num_outputs=2,
    shape_fn=_scatter_shape, reference=_scatter_reference, samples=_scatter_samples,
    grad_samples=_scatter_grad_samples, sweep_dtypes=(d.float32, d.float64))
TENSOR_ARRAY_UNSCATTER = registry.primitive(
    "TensorArrayUnscatter", _unscatter_kernel, family="array", dtype_group=(0, 1),
    shape_fn=_unscatter_shape, reference=_unscatter_reference, samples=_unscatter_samples,
    sweep_dtypes=(d.float32, d.float64))
TENSOR_ARRAY_GATHER = registry.primitive(
    "TensorArrayGather", _gather_kernel, family="array", dtypes=_ELEMENTS, dtype_group=(0,),
    shape_fn=_gather_shape, reference=_gather_reference, samples=_gather_samples,
    sweep_dtypes=(d.float32, d.float64))
TENSOR_ARRAY_UNGATHER = registry.primitive(
    "TensorArrayUngather", _ungather_kernel, family="array", dtype_group=(0, 1),
    shape_fn=_ungather_shape, reference=_ungather_reference, samples=_ungather_samples,
    sweep_dtypes=(d.float32, d.float64))
TENSOR_ARRAY_SPLIT = registry.primitive(
    "TensorArraySplit", _split_kernel, family="array", dtypes=_ELEMENTS, dtype_group=(0,),
    num_outputs=2,
    shape_fn=_split_shape, reference=_split_reference, samples=_split_samples,
    sweep_dtypes=(d.float32, d.float64))


def _no_indices():
    return convert_to_tensor(np.zeros(0, np.int32))


def _gather(buf, shapes, indices, element_shape, *, every=False, concat=False):
    """A TensorArrayGather with the static element shape the Python side knows."""
    known = element_shape is not None and element_shape.rank is not None
    dims = tuple(-1 if x is None else int(x) for x in element_shape.as_list()) if known \
        else ()
    return execute(TENSOR_ARRAY_GATHER, (buf, shapes, indices), {
        "every": every, "concat": concat, "element_shape": dims, "shape_known": known})


@registry.defvjp(TENSOR_ARRAY_SCATTER, saves=(0, 2, 3, "out"))
def _scatter_vjp(g, buf, shapes, indices, values, out, dynamic, infer):
    # The written values are read back from the rows they went to, cut to their shape
    # (the output's shapes record it).
    grad_values = _gather(g[0], out[1], indices, values.shape[1:] if values.shape.rank
                          else None)
    return (execute(TENSOR_ARRAY_UNSCATTER, (g[0], buf, indices), {}), None, None,
            grad_values)


@registry.defvjp(TENSOR_ARRAY_GATHER, saves=(0, 1, 2))
def _gather_vjp(g, buf, shapes, indices, out, every, concat, element_shape, shape_known):
    return (execute(TENSOR_ARRAY_UNGATHER, (g, buf, shapes, indices),
                    {"every": every, "concat": concat}), None, None)


@registry.defvjp(TENSOR_ARRAY_SPLIT, saves=("out",))
def _split_vjp(g, value, lengths, out):
    return _gather(g[0], out[1], _no_indices(), None, every=True, concat=True), None


# -- the TensorArray ------------------------------------------------------------------------
class TensorArray:
    """A list of tensors (``tf.TensorArray``), usable in loops and graphs.

    Args:
        dtype: The elements' dtype.
        size: The number of elements (an int or scalar int tensor); 0 with
            ``dynamic_size=True`` to start empty.
        dynamic_size: If True, writing past the end grows the array.
        clear_after_read: Accepted for compatibility (reads never clear).
        tensor_array_name: Accepted for compatibility.
        handle: Not supported (must be None).
        flow: A buffer tensor ``[size, *element_shape]`` to start from.
        infer_shape: If True (the default), every element must have the shape of the
            first one (as far as it is known when it is written); if False, elements may
            differ in size (joined by ``concat``; ``stack`` needs them equal).
        element_shape: The elements' shape, if known (None dimensions may vary between
            elements); else learned from the first write.
        colocate_with_first_write_call: Accepted for compatibility.
        name: Accepted for compatibility.

    Example:
        >>> import eagerflow as ef
        >>> @ef.function
        ... def squares(n):
        ...     ta = ef.TensorArray(ef.int32, size=n)
        ...     for i in ef.range(n):
        ...         ta = ta.write(i, i * i)
        ...     return ta.stack()
        >>> squares(ef.constant(4)).numpy().tolist()
        [0, 1, 4, 9]
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if handle is not None:
            raise errors.UnimplementedError(None, "TensorArray", "TensorArray(handle=...) "
                                            "is not supported; pass flow= or size=.")
        self._dtype = d.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = bool(infer_shape)
        self._element_shape = None if element_shape is None else TensorShape(element_shape)
        if self._element_shape is not None and self._element_shape.rank is None:
            self._element_shape = None
        # What element_shape reports when writes do not refine it (infer_shape=False).
        self._declared_shape = self._element_shape
        if flow is not None:
            if not isinstance(flow, Tensor):
                flow = convert_to_tensor(flow, dtype=self._dtype)
            self._flow = flow
            rank = flow.shape.rank
            if self._element_shape is None and rank is not None and rank > 1:
                self._element_shape = TensorShape(flow.shape.as_list()[1:])
            self._shapes = self._no_shapes(None if rank is None else max(rank - 1, 0))
            return
        if size is None:
            raise ValueError("TensorArray(): size must be given (0 with dynamic_size=True "
                             "for an array that grows).")
        self._flow = self._new_buffer(size)
        self._shapes = self._no_shapes(self._flow.shape.rank - 1
                                       if self._flow.shape.rank else 0)

    @staticmethod
    def _no_shapes(rank):
        # Every element fills its row: no shape recorded.
        return convert_to_tensor(np.zeros((0, rank or 0), np.int32))

    def _new_buffer(self, size):
        from eagerflow.ops.array.creation_ops import zeros
        from eagerflow.ops.static_value import constant_value

        element = self._element_shape
        # None dimensions start at 0 and grow with the writes; an unknown rank waits for
        # the first write in a placeholder of shape [size].
        dims = [] if element is None else [0 if x is None else x for x in element.as_list()]
        if isinstance(size, Tensor):
            known = constant_value(size)
            if known is None:
                return execute(TENSOR_ARRAY_RESERVE, (size,), {
                    "dtype": self._dtype.name, "element_shape": tuple(dims)})
            size = int(known)
        if self._dtype == d.string:
            return convert_to_tensor(np.full([int(size)] + dims, b"", dtype=object))
        return zeros([int(size)] + dims, self._dtype)

    @classmethod
    def _from_flow(cls, template, flow, shapes):
        ta = cls.__new__(cls)
        ta._dtype = template._dtype
        ta._dynamic_size = template._dynamic_size
        ta._infer_shape = template._infer_shape
        ta._declared_shape = template._declared_shape
        ta._element_shape = template._element_shape
        rank = flow.shape.rank
        if template._element_shape is None and rank is not None and rank > 1:
            dims = flow.shape.as_list()[1:]
            ta._element_shape = TensorShape(dims if template._infer_shape
                                            else [None] * len(dims))
        ta._flow = flow
        ta._shapes = shapes
        return ta

    # -- the loop protocol: while_loop and cond carry the buffer and the shapes ---------------
    def _loop_value(self):
        return (self._flow, self._shapes)

    def _loop_invariant(self):
        """The shapes the two tensors may take in a loop: None where writes may change."""
        if not self._known_element():
            return (TensorShape(None), TensorShape([None, None]))
        dims = self._flow.shape.as_list()
        element = self._element_shape.as_list()
        return (TensorShape([None if self._dynamic_size else dims[0]] + element),
                TensorShape([None, len(element)]))

    def _with_loop_value(self, tensors):
        flow, shapes = tensors
        return TensorArray._from_flow(self, flow, shapes)

    def _learned_element_shape(self):
        """What the writes taught of the element shape (its rank at least), for a loop's
        probe; ``element_shape`` may report less (``infer_shape=False``)."""
        return self._element_shape if self._element_shape is not None else TensorShape(None)

    def _loop_element_unknown(self):
        return not self._known_element()

    def _with_element_shape(self, element_shape):
        """This (unwritten) array, re-made for elements of ``element_shape``."""
        from eagerflow.ops.array.shape_ops import shape

        ta = TensorArray._from_flow(self, self._flow, self._shapes)
        ta._element_shape = TensorShape(element_shape)
        n = self._flow.shape.as_list()[0] if self._flow.shape.rank else None
        ta._flow = ta._new_buffer(n if n is not None else shape(self._flow)[0])
        ta._shapes = self._no_shapes(ta._element_shape.rank)
        return ta

    def _known_element(self):
        # The buffer is allocated for its elements (not the 1-D placeholder of an array
        # waiting for its first write): writes keep its rank, even where some of the
        # element's dimensions are only known at run time (a dynamic batch).
        return self._element_shape is not None and self._element_shape.rank is not None \
            and self._flow.shape.rank == self._element_shape.rank + 1

    # -- TF's API -------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def element_shape(self):
        """The elements' shape: learned from the writes, or (``infer_shape=False``) the
        one given at construction, as TF's."""
        shape = self._element_shape if self._infer_shape else self._declared_shape
        return shape if shape is not None else TensorShape(None)

    @property
    def flow(self):
        return self._flow

    @property
    def handle(self):
        return self._flow

    def write(self, index, value, name=None):
        """Returns a new array with ``value`` at ``index``."""
        from eagerflow.ops.array.reshape_ops import expand_dims, reshape

        value = convert_to_tensor(value, dtype=self._dtype)
        element = self._merged_element(value.shape, index)
        return self._scatter(reshape(convert_to_tensor(index, dtype=d.int32), [1]),
                             expand_dims(value, 0), element)

    def scatter(self, indices, value, name=None):
        """Returns a new array with ``value[k]`` at ``indices[k]``."""
        value = convert_to_tensor(value, dtype=self._dtype)
        element = self._merged_element(
            value.shape[1:] if value.shape.rank else TensorShape(None), indices)
        return self._scatter(convert_to_tensor(indices, dtype=d.int32), value, element)

    def _scatter(self, indices, values, element_shape):
        flow, shapes = execute(TENSOR_ARRAY_SCATTER, (self._flow, self._shapes, indices,
                                                      values),
                               {"dynamic": self._dynamic_size,
                                "infer": not self._known_element()})
        ta = TensorArray._from_flow(self, flow, shapes)
        ta._element_shape = element_shape
        return ta

    def _merged_element(self, shape, index):
        """The element shape after writing an element of ``shape`` (TF's rules)."""
        element = self._element_shape
        if shape.rank is None or (element is not None and element._dims == shape._dims):
            return element  # the usual write: the element shape it already has
        if element is None:
            return TensorShape(shape) if self._infer_shape else \
                TensorShape([None] * shape.rank)
        if element.rank != shape.rank or (
                self._infer_shape and not element.is_compatible_with(shape)):
            from eagerflow.ops.static_value import constant_value

            at = constant_value(index) if isinstance(index, Tensor) else index
            raise ValueError(
                "TensorArray: could not write to index %s because the value shape is %s, "
                "which is incompatible with the array's element shape %s; every element "
                "must have the same shape (create the TensorArray with infer_shape=False "
                "for elements of different sizes)." % (
                    at if at is not None else "?", shape, element))
        if self._infer_shape:
            return element.merge_with(shape)
        # Elements may differ: a dimension stays known while all agree on it.
        return TensorShape([a if a == b else None
                            for a, b in zip(element.as_list(), shape.as_list())])

    def read(self, index, name=None):
        """The element at ``index``."""
        return _gather(self._flow, self._shapes, convert_to_tensor(index, dtype=d.int32),
                       self._element_shape)

    def gather(self, indices, name=None):
        """The elements at ``indices``, stacked (they must have one shape)."""
        return _gather(self._flow, self._shapes, convert_to_tensor(indices, dtype=d.int32),
                       self._element_shape)

    def stack(self, name=None):
        """All elements stacked along a new first axis: ``[size, *element_shape]``.

        Raises:
            InvalidArgumentError: If the elements do not all have one shape.
        """
        return _gather(self._flow, self._shapes, _no_indices(), self._element_shape,
                       every=True)

    def concat(self, name=None):
        """The elements joined along their first axis (the other dimensions must agree)."""
        return _gather(self._flow, self._shapes, _no_indices(), self._element_shape,
                       every=True, concat=True)

    def unstack(self, value, name=None):
        """Returns a new array whose elements are the rows of ``value``."""
        value = convert_to_tensor(value, dtype=self._dtype)
        rank = value.shape.rank
        ta = TensorArray._from_flow(self, value, self._no_shapes(
            None if rank is None else max(rank - 1, 0)))
        if rank:
            ta._element_shape = TensorShape(value.shape.as_list()[1:])
        return ta

    def split(self, value, lengths, name=None):
        """Returns a new array whose elements are ``value`` cut into ``lengths`` rows."""
        value = convert_to_tensor(value, dtype=self._dtype)
        flow, shapes = execute(TENSOR_ARRAY_SPLIT, (
            value, convert_to_tensor(lengths, dtype=d.int32)), {})
        ta = TensorArray._from_flow(self, flow, shapes)
        if value.shape.rank:
            rest = value.shape.as_list()[1:]
            element = TensorShape([None] + rest)
            if self._element_shape is not None and self._element_shape.rank is not None:
                element = self._element_shape.merge_with(element) if \
                    self._element_shape.is_compatible_with(element) else element
            ta._element_shape = element
        return ta

    def size(self, name=None):
        """The number of elements, as an int32 scalar tensor."""
        from eagerflow.ops.array.shape_ops import shape

        return shape(self._flow)[0]

    def identity(self):
        return self

    def mark_used(self):
        """Accepted for compatibility."""

    def close(self, name=None):
        """Accepted for compatibility."""

    def __repr__(self):
        return "<eagerflow.TensorArray dtype=%s element_shape=%s dynamic_size=%s>" % (
            self._dtype.name, self.element_shape, self._dynamic_size)
