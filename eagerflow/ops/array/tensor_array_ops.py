"""``eagerflow.TensorArray``: a list of same-shaped tensors that loops can grow.

A TensorArray is a value: ``write`` and ``scatter`` return a new TensorArray, as in TF 2.
Its state is one dense buffer tensor ``[size, *element_shape]`` (its *flow*), so it enters
``while_loop`` and ``cond`` as an ordinary tensor and gradients flow through it like through
any op: ``TensorArrayScatter`` writes rows (growing the buffer when ``dynamic_size``), and
its gradient reads the written rows back and clears them for the buffer it came from.

An element shape not given is learned from the first write. Until then the buffer is a
placeholder of shape ``[size]``; inside a loop its rank is unknown to the trace, and the
first write at run time gives it the element shape.

Example:
    >>> import eagerflow as ef
    >>> ta = ef.TensorArray(ef.float32, size=0, dynamic_size=True)
    >>> for i in range(3):
    ...     ta = ta.write(i, ef.fill([2], float(i)))
    >>> ta.stack().numpy().tolist()
    [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
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

__all__ = ["TensorArray", "TENSOR_ARRAY_SCATTER", "TENSOR_ARRAY_UNSCATTER"]


# -- primitives -------------------------------------------------------------------------------
def _rows(indices):
    return np.asarray(indices).astype(np.int64).reshape(-1)


def _scatter_kernel(xp):
    def kernel(buf, indices, values, *, dynamic, infer):
        idx = _rows(indices)
        n = buf.shape[0]
        if infer and buf.ndim == 1 and values.ndim > 1:
            # The placeholder of an array whose element shape comes from its first write.
            buf = xp.zeros((n,) + tuple(values.shape[1:]), dtype=buf.dtype)
        if tuple(values.shape[1:]) != tuple(buf.shape[1:]) or values.shape[0] != idx.size:
            raise errors.InvalidArgumentError(
                None, None, "TensorArray: could not write elements of shape %s (%d of them "
                "for %d indices) into an array of elements of shape %s; every element "
                "must have the same shape." % (list(values.shape[1:]), values.shape[0],
                                               idx.size, list(buf.shape[1:])))
        if idx.size and idx.min() < 0:
            raise errors.InvalidArgumentError(
                None, None, "TensorArray: index %d is negative." % int(idx.min()))
        need = int(idx.max()) + 1 if idx.size else 0
        if need > n:
            if not dynamic:
                raise errors.InvalidArgumentError(
                    None, None, "TensorArray: index %d is out of range for an array of "
                    "size %d; create it with dynamic_size=True to let it grow." % (
                        need - 1, n))
            out = xp.zeros((need,) + tuple(buf.shape[1:]), dtype=buf.dtype)
            out[:n] = buf
        else:
            out = buf.copy()
        out[idx] = values
        return out
    return kernel


def _scatter_shape(buf, indices, values, *, dynamic, infer):
    if infer and (buf.shape is None or len(buf.shape) == 1) and values.shape is not None:
        element = tuple(values.shape[1:])
        first = buf.shape[0] if buf.shape is not None else None
    else:
        element = None if buf.shape is None else tuple(buf.shape[1:])
        first = None if buf.shape is None else buf.shape[0]
    if dynamic:
        first = None
    if element is None:
        return AbstractValue(None, buf.dtype)
    return AbstractValue((first,) + element, buf.dtype)


def _unscatter_kernel(xp):
    def kernel(g, buf, indices):
        n = buf.shape[0]
        if tuple(g.shape[1:]) != tuple(buf.shape[1:]):
            return xp.zeros(buf.shape, dtype=g.dtype)  # the placeholder took no gradient
        out = g[:n].copy()
        idx = _rows(indices)
        idx = idx[idx < n]
        out[idx] = 0
        return out
    return kernel


def _unscatter_shape(g, buf, indices):
    return AbstractValue(buf.shape, g.dtype)


def _scatter_reference(buf, indices, values, *, dynamic, infer):
    out = np.array(buf, copy=True)
    out[_rows(indices)] = values
    return out


def _scatter_samples(rng, dtype):
    np_dtype = dtype.np_dtype
    buf = rng.standard_normal((4, 3)).astype(np_dtype)
    values = rng.standard_normal((2, 3)).astype(np_dtype)
    return [((buf, np.array([2, 0], np.int32), values), {"dynamic": False, "infer": False})]


def _reserve_kernel(xp):
    def kernel(size, *, dtype, element_shape):
        n = int(np.asarray(size).item())
        if n < 0:
            raise errors.InvalidArgumentError(
                None, None, "TensorArray: size must be >= 0, got %d." % n)
        return xp.zeros((n,) + tuple(element_shape), dtype=d.as_dtype(dtype).np_dtype)
    return kernel


def _reserve_shape(size, *, dtype, element_shape):
    return AbstractValue((None,) + tuple(element_shape), d.as_dtype(dtype))


def _reserve_reference(size, *, dtype, element_shape):
    return np.zeros((int(size),) + tuple(element_shape), d.as_dtype(dtype).np_dtype)


def _reserve_samples(rng, dtype):
    return [((np.array(3, dtype.np_dtype),), {"dtype": "float32", "element_shape": (2,)}),
            ((np.array(0, dtype.np_dtype),), {"dtype": "int32", "element_shape": ()})]


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


TENSOR_ARRAY_RESERVE = registry.primitive(
    "TensorArrayReserve", _reserve_kernel, family="array", shape_fn=_reserve_shape,
    dtypes=(d.int32, d.int64), reference=_reserve_reference, samples=_reserve_samples,
    sweep_dtypes=(d.int32,))
TENSOR_ARRAY_SCATTER = registry.primitive(
    "TensorArrayScatter", _scatter_kernel, family="array", dtype_group=(0, 2),
    shape_fn=_scatter_shape, reference=_scatter_reference, samples=_scatter_samples,
    sweep_dtypes=(d.float32, d.float64))
TENSOR_ARRAY_UNSCATTER = registry.primitive(
    "TensorArrayUnscatter", _unscatter_kernel, family="array", dtype_group=(0, 1),
    shape_fn=_unscatter_shape, reference=_unscatter_reference, samples=_unscatter_samples,
    sweep_dtypes=(d.float32, d.float64))


@registry.defvjp(TENSOR_ARRAY_SCATTER, saves=(0, 1))
def _scatter_vjp(g, buf, indices, values, out, dynamic, infer):
    from eagerflow.ops.indexing.gather_ops import gather

    return (execute(TENSOR_ARRAY_UNSCATTER, (g, buf, indices), {}), None,
            gather(g, indices))


# -- the TensorArray ------------------------------------------------------------------------
class TensorArray:
    """A list of same-shaped tensors (``tf.TensorArray``), usable in loops and graphs.

    Args:
        dtype: The elements' dtype.
        size: The number of elements (an int or scalar int tensor); 0 with
            ``dynamic_size=True`` to start empty.
        dynamic_size: If True, writing past the end grows the array.
        clear_after_read: Accepted for compatibility (reads never clear).
        tensor_array_name: Accepted for compatibility.
        handle: Not supported (must be None).
        flow: A buffer tensor ``[size, *element_shape]`` to start from.
        infer_shape: Accepted for compatibility (element shapes are always checked).
        element_shape: The elements' shape, if known; else learned from the first write.
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
        self._element_shape = None if element_shape is None else TensorShape(element_shape)
        if flow is not None:
            if not isinstance(flow, Tensor):
                flow = convert_to_tensor(flow, dtype=self._dtype)
            self._flow = flow
            if self._element_shape is None and flow.shape.rank is not None and \
                    flow.shape.rank > 1:
                self._element_shape = TensorShape(flow.shape.as_list()[1:])
            return
        if size is None:
            raise ValueError("TensorArray(): size must be given (0 with dynamic_size=True "
                             "for an array that grows).")
        self._flow = self._new_buffer(size)

    def _new_buffer(self, size):
        from eagerflow.ops.array.creation_ops import zeros
        from eagerflow.ops.static_value import constant_value

        element = self._element_shape
        if element is not None and element.is_fully_defined():
            dims = element.as_list()
        else:
            dims = []
        if isinstance(size, Tensor):
            known = constant_value(size)
            if known is None:
                return execute(TENSOR_ARRAY_RESERVE, (size,), {
                    "dtype": self._dtype.name, "element_shape": tuple(dims)})
            size = int(known)
        return zeros([int(size)] + dims, self._dtype)

    @classmethod
    def _from_flow(cls, template, flow):
        ta = cls.__new__(cls)
        ta._dtype = template._dtype
        ta._dynamic_size = template._dynamic_size
        ta._element_shape = template._element_shape
        shape = flow.shape
        if template._element_shape is None and shape.rank is not None and shape.rank > 1:
            ta._element_shape = TensorShape(shape.as_list()[1:])
        ta._flow = flow
        return ta

    # -- the loop protocol: while_loop and cond carry the flow tensor -------------------------
    def _loop_value(self):
        return self._flow

    def _loop_invariant(self):
        """The flow's shape invariant in a loop: None where writes may change it."""
        if not self._known_element():
            return TensorShape(None)
        dims = self._flow.shape.as_list()
        return TensorShape([None if self._dynamic_size else dims[0]] + dims[1:])

    def _with_loop_value(self, flow):
        return TensorArray._from_flow(self, flow)

    def _loop_element_unknown(self):
        return not self._known_element()

    def _with_element_shape(self, element_shape):
        """This (unwritten) array, re-made for elements of ``element_shape``."""
        from eagerflow.ops.array.shape_ops import shape

        ta = TensorArray._from_flow(self, self._flow)
        ta._element_shape = TensorShape(element_shape)
        n = self._flow.shape.as_list()[0] if self._flow.shape.rank else None
        ta._flow = ta._new_buffer(n if n is not None else shape(self._flow)[0])
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
        return self._element_shape if self._element_shape is not None else TensorShape(None)

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
        self._check_element(value.shape)
        return self._scatter(reshape(convert_to_tensor(index, dtype=d.int32), [1]),
                             expand_dims(value, 0), value.shape)

    def scatter(self, indices, value, name=None):
        """Returns a new array with ``value[k]`` at ``indices[k]``."""
        value = convert_to_tensor(value, dtype=self._dtype)
        self._check_element(value.shape[1:] if value.shape.rank else TensorShape(None))
        return self._scatter(convert_to_tensor(indices, dtype=d.int32), value,
                             value.shape[1:] if value.shape.rank else TensorShape(None))

    def _scatter(self, indices, values, element_shape):
        flow = execute(TENSOR_ARRAY_SCATTER, (self._flow, indices, values),
                       {"dynamic": self._dynamic_size, "infer": not self._known_element()})
        ta = TensorArray._from_flow(self, flow)
        if ta._element_shape is None and element_shape.rank is not None:
            ta._element_shape = TensorShape(element_shape)
        return ta

    def _check_element(self, shape):
        element = self._element_shape
        if element is None or shape.rank is None:
            return
        if not element.is_compatible_with(shape):
            raise ValueError(
                "TensorArray: could not write an element of shape %s into an array of "
                "elements of shape %s; every element must have the same shape." % (
                    shape, element))

    def read(self, index, name=None):
        """The element at ``index``."""
        from eagerflow.ops.indexing.gather_ops import gather

        return gather(self._flow, convert_to_tensor(index, dtype=d.int32))

    def gather(self, indices, name=None):
        """The elements at ``indices``, stacked."""
        from eagerflow.ops.indexing.gather_ops import gather

        return gather(self._flow, convert_to_tensor(indices, dtype=d.int32))

    def stack(self, name=None):
        """All elements stacked along a new first axis: ``[size, *element_shape]``."""
        from eagerflow.ops.array.shape_ops import identity

        return identity(self._flow)

    def unstack(self, value, name=None):
        """Returns a new array whose elements are the rows of ``value``."""
        value = convert_to_tensor(value, dtype=self._dtype)
        ta = TensorArray._from_flow(self, value)
        if value.shape.rank:
            ta._element_shape = TensorShape(value.shape.as_list()[1:])
        return ta

    def concat(self, name=None):
        """The elements joined along their first axis (all elements have the same shape)."""
        from eagerflow.ops.array.reshape_ops import reshape
        from eagerflow.ops.array.shape_ops import shape

        flow_shape = self._flow.shape
        if flow_shape.rank is not None and flow_shape.rank < 2:
            raise ValueError("TensorArray.concat(): the elements must have rank >= 1.")
        if flow_shape.rank is not None and None not in flow_shape.as_list()[2:]:
            return reshape(self._flow, [-1] + flow_shape.as_list()[2:])
        from eagerflow.ops.array.join_ops import concat as tf_concat

        rest = shape(self._flow)[2:]
        return reshape(self._flow, tf_concat([convert_to_tensor([-1]), rest], 0))

    def split(self, value, lengths, name=None):
        """Returns a new array whose elements are ``value`` split into ``lengths`` rows."""
        from eagerflow.ops.array.join_ops import split as tf_split
        from eagerflow.ops.array.join_ops import stack as tf_stack

        pieces = tf_split(convert_to_tensor(value, dtype=self._dtype), lengths)
        return self.unstack(tf_stack(pieces))

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
