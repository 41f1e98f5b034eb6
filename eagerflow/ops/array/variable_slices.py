"""``variable[key].assign(value)``: assignment to a slice of a variable, as TF.

TF gives the tensor that slicing a variable returns an ``assign`` method (its
``_SliceHelperVar``): ``v[1].assign(9.0)`` and ``v[::2].assign([7.0, 8.0])`` update those
elements of ``v`` and return ``v``. Only ``assign`` exists: ``v[1:3].assign_add(...)`` is an
AttributeError in TF and here. The slice is the same tensor as ``v.read_value()[key]``, of a
subclass that remembers the variable and the key; the update is one scatter of the selected
flat positions (computed from the static shape at call or trace time), so it works eagerly
and inside ``@function``, and gradients flow as through ``tensor_scatter_nd_update``.
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors

_SLICE_CLASSES = {}


def _slice_class(base):
    """The subclass of ``base`` (Tensor or a symbolic tensor class) carrying ``assign``."""
    cls = _SLICE_CLASSES.get(base)
    if cls is None:
        cls = type(base.__name__, (base,), {
            "__slots__": ("_sliced_variable", "_slice_key"),
            "__module__": base.__module__,
            "assign": _assign,
        })
        _SLICE_CLASSES[base] = cls
    return cls


def _slot_names(cls):
    for klass in cls.__mro__:
        for name in klass.__dict__.get("__slots__", ()):
            if name != "__weakref__":
                yield name


def sliced_variable(variable, key):
    """``variable[key]``: the sliced value, with an ``assign`` method as in TF.

    Example:
        >>> import eagerflow as ef
        >>> v = ef.Variable([1.0, 2.0, 3.0, 4.0])
        >>> _ = v[1].assign(9.0)
        >>> _ = v[::2].assign([7.0, 8.0])
        >>> v.numpy().tolist()
        [7.0, 9.0, 8.0, 4.0]
    """
    from eagerflow.ops.array.slicing import getitem

    value = getitem(variable.read_value(), key)
    cls = _slice_class(value.__class__)
    out = cls.__new__(cls)
    for name in _slot_names(value.__class__):
        try:
            object.__setattr__(out, name, getattr(value, name))
        except AttributeError:
            pass  # a slot the value never set
    out._sliced_variable = variable
    out._slice_key = key
    return out


def _assign(self, value, use_locking=None, name=None, read_value=True):
    """Assigns ``value`` to this slice of the variable; returns the variable."""
    return assign_slice(self._sliced_variable, self._slice_key, value, read_value)


def _static_index(index, dim, key):
    """A Python int (or slice) from one entry of a slicing key."""
    if isinstance(index, slice):
        return slice(*(_static_index(b, dim, key) if b is not None else None
                       for b in (index.start, index.stop, index.step)))
    if isinstance(index, (bool, np.bool_)):
        raise TypeError("Slice assignment does not take a bool index (key %r)." % (key,))
    if isinstance(index, (int, np.integer)):
        return int(index)
    if getattr(index, "shape", None) == () and hasattr(index, "numpy"):
        try:
            return int(index.numpy())
        except Exception:  # noqa: BLE001 - a symbolic index: reported below
            pass
    raise TypeError(
        "Slice assignment needs indices known when it runs (Python ints, slices, ... or "
        "None), got %r in key %r. Use tensor_scatter_nd_update with computed indices and "
        "assign the result for data-dependent positions." % (index, key))


def _flat_positions(shape, key):
    """The flat indices of ``variable[key]`` and the sliced shape."""
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise errors.InvalidArgumentError(
            None, "StridedSliceAssign", "Slice assignment: more than one ... in %r." % (key,))
    explicit = sum(1 for k in items if k is not None and k is not Ellipsis)
    if explicit > len(shape):
        raise errors.InvalidArgumentError(
            None, "StridedSliceAssign", "Slice assignment: key %r has %d indices for a "
            "variable of rank %d." % (key, explicit, len(shape)))
    expanded = []
    for k in items:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - explicit))
        elif k is not None:  # a new axis selects nothing: the value is reshaped below
            expanded.append(k)
    expanded.extend([slice(None)] * (len(shape) - len(expanded)))
    axes = []
    kept = []
    for axis, (k, dim) in enumerate(zip(expanded, shape)):
        k = _static_index(k, dim, key)
        if isinstance(k, slice):
            picked = np.arange(dim)[k]
            kept.append(len(picked))
        else:
            if not -dim <= k < dim:
                raise errors.InvalidArgumentError(
                    None, "StridedSliceAssign", "Slice assignment: index %d is out of range "
                    "for axis %d of size %d (key %r)." % (k, axis, dim, key))
            picked = np.array([k % dim])
        axes.append(picked)
    if not axes:
        return np.zeros((1,), np.int64), ()
    grids = np.meshgrid(*axes, indexing="ij")
    flat = np.ravel_multi_index(grids, shape).reshape(-1).astype(np.int64)
    return flat, tuple(kept)


def assign_slice(variable, key, value, read_value=True):
    """Assigns ``value`` (broadcast to the slice's shape) to ``variable[key]``.

    Raises:
        InvalidArgumentError: If the key does not fit the variable or the value does not
            broadcast to the slice.
        TypeError: If an index is not known when the assignment runs.
    """
    from eagerflow.ops.indexing.index_nd_ops import tensor_scatter_nd_update
    from eagerflow.ops.array.reshape_ops import reshape
    from eagerflow.ops.math.broadcast import broadcast_to
    from eagerflow.tensor import convert_to_tensor

    shape = variable.shape
    if not shape.is_fully_defined():
        raise errors.InvalidArgumentError(
            None, "StridedSliceAssign", "Slice assignment needs a variable of static shape; "
            "%s has shape %s." % (variable.name, shape))
    dims = tuple(shape.as_list())
    flat, sliced_shape = _flat_positions(dims, key)
    # The slice's own shape, new axes included (a zero-stride view: nothing is allocated).
    static_key = tuple(_static_index(k, None, key) if k is not None and k is not Ellipsis
                       else k for k in (key if isinstance(key, tuple) else (key,)))
    view_shape = np.broadcast_to(np.zeros((), bool), dims)[static_key].shape
    value = convert_to_tensor(value, dtype=variable.dtype)
    try:
        value = reshape(broadcast_to(value, view_shape), sliced_shape)
    except errors.InvalidArgumentError:
        raise errors.InvalidArgumentError(
            None, "StridedSliceAssign", "Slice assignment: a value of shape %s does not fit "
            "%s[%r], of shape %s." % (value.shape, variable.name, key, list(sliced_shape))
        ) from None
    updated = tensor_scatter_nd_update(
        reshape(variable.read_value(), [-1]), flat.reshape(-1, 1), reshape(value, [-1]))
    return variable.assign(reshape(updated, dims), read_value=read_value)
