"""Static values of tensors: what is already known about a value before it runs.

Eager tensors are known. A symbolic tensor (inside a trace) is known when it is a constant,
the shape/size/rank of a tensor whose static shape is fully known, or a pure op whose inputs
are all known (evaluated on numpy here, as TF's ``constant_value`` does). This lets
``reshape(x, shape(y))`` and similar code trace with static shapes.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.ops.static_value import constant_value
    >>> constant_value(ef.constant([2, 3])).tolist()
    [2, 3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["constant_value"]

# Folding is for small shape-like values; bigger results are left to run time.
_MAX_ELEMENTS = 1 << 16
_SHAPE_OPS = {"Shape": "shape", "Size": "size", "Rank": "rank"}


def constant_value(tensor):
    """The value of ``tensor`` as a numpy array when it is known now, else None."""
    node = getattr(tensor, "_node", None)
    if node is None:
        value = getattr(tensor, "_value", None)
        if value is None or getattr(tensor, "_is_variable", False):
            return None
        if getattr(tensor._device, "backend_index", 0):
            return np.asarray(tensor._device.backend.to_numpy(value))
        return np.asarray(value)
    return _node_value(node, tensor._index, 0)


def _node_value(node, index, depth):
    if depth > 64:
        return None
    if node.is_constant:
        return np.asarray(node.value)
    if node.op in _SHAPE_OPS and node.inputs:
        src, i = node.inputs[0]
        shape = src.avals[i].shape
        if shape is None or any(d is None for d in shape):
            return None
        out_dtype = node.avals[0].dtype.np_dtype
        kind = _SHAPE_OPS[node.op]
        if kind == "shape":
            return np.asarray(shape, dtype=out_dtype)
        if kind == "size":
            return np.asarray(int(np.prod(shape, dtype=np.int64)), dtype=out_dtype)
        return np.asarray(len(shape), dtype=out_dtype)
    prim = node.prim
    if prim is None or prim.stateful or node.stateful:
        return None
    for aval in node.avals:
        if aval.shape is None or any(d is None for d in aval.shape) or \
                int(np.prod(aval.shape, dtype=np.int64)) > _MAX_ELEMENTS:
            return None
    inputs = []
    for src, i in node.inputs:
        value = _node_value(src, i, depth + 1)
        if value is None:
            return None
        inputs.append(value)
    from eagerflow.backend import numpy_backend

    try:
        with np.errstate(all="ignore"):
            out = prim.kernel(numpy_backend)(*inputs, **node.attrs)
    except Exception:  # noqa: BLE001 - not foldable now; it will run (and fail) later
        return None
    if not prim.single:
        out = out[index]
    return np.asarray(out)
