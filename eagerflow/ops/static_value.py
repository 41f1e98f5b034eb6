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
# Ops that only move elements: what they pick from a partly known vector (``shape(x)[1]``
# of an x of shape [None, 3]) is known when it does not depend on the unknown entries.
_MOVING_OPS = frozenset(("StridedSlice", "GatherV2", "Identity", "Reshape", "ExpandDims",
                         "Squeeze"))


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


def _moved_known_entries(node, index, depth):
    """The value of a moving op over a partly known first input, when the entries it picks
    are known: it is evaluated with two different stand-ins for the unknown entries, and
    the results agree only when they never read them."""
    src, i = node.inputs[0]
    known = _known_entries(src, i, depth + 1)
    if known is None or None not in known:
        return None
    rest = []
    for s, j in node.inputs[1:]:
        value = _node_value(s, j, depth + 1)
        if value is None:
            return None
        rest.append(value)
    from eagerflow.backend import numpy_backend

    dtype = src.avals[i].dtype.np_dtype
    kernel = node.prim.kernel(numpy_backend)
    outs = []
    for stand_in in (-1, -2):
        vector = np.asarray([stand_in if v is None else v for v in known], dtype)
        try:
            inputs, attrs = bind_dynamic([vector] + rest, node.attrs)
            out = kernel(*inputs, **attrs)
        except Exception:  # noqa: BLE001 - not foldable now
            return None
        outs.append(np.asarray(out if node.prim.single else out[index]))
    return outs[0] if np.array_equal(outs[0], outs[1]) else None


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
            return _moved_known_entries(node, index, depth) if node.op in _MOVING_OPS else None
        inputs.append(value)
    from eagerflow.backend import numpy_backend

    try:
        inputs, attrs = bind_dynamic(inputs, node.attrs)
        with np.errstate(all="ignore"):
            out = prim.kernel(numpy_backend)(*inputs, **attrs)
    except Exception:  # noqa: BLE001 - not foldable now; it will run (and fail) later
        return None
    if not prim.single:
        out = out[index]
    return np.asarray(out)


# --- values known only when the graph runs ----------------------------------------------------

class DynamicShape(tuple):
    """A shape-like attr whose value is known only when the graph runs.

    It is the tuple of what is known now (an int where the entry folds, None where it does
    not; pairs for paddings), so shape rules read it as a partially known shape, and it
    carries ``tensor``, the symbolic integer tensor that holds the whole value at run time.
    The tracer turns such an attr into an extra input of the node (see ``split_dynamic``):
    TF's graph ops take these values as tensor inputs too (``Fill(dims, value)``).
    """

    def __new__(cls, known, tensor):
        self = tuple.__new__(cls, known)
        self.tensor = tensor
        return self

    def __repr__(self):
        return "DynamicShape(%s)" % (list(self),)


class DynamicScalar:
    """An integer attr (a depth, a row count) known only when the graph runs.

    Shape rules see None for it (``static``); ``tensor`` holds it at run time.
    """

    __slots__ = ("tensor",)
    static = None

    def __init__(self, tensor):
        self.tensor = tensor

    def __repr__(self):
        return "DynamicScalar(%s)" % (self.tensor,)


DYNAMIC_ATTRS = "_dynamic"  # node attr: names of the attrs given by the node's last inputs


def _is_symbolic(value):
    return getattr(value, "_node", None) is not None


def dynamic_int_tuple(value, pairs=False):
    """A ``DynamicShape`` for a shape-like value built from symbolic tensors, or None.

    ``value`` is a symbolic 1-D integer tensor (2-D ``[n, 2]`` with ``pairs``), or a list
    mixing Python ints and symbolic integer scalars (lists of pairs with ``pairs``), which is
    packed into one tensor as TF auto-packs it. Returns None when ``value`` is none of these
    (the caller reports the error).
    """
    from eagerflow.tensor import Tensor

    if isinstance(value, Tensor):
        if not _is_symbolic(value) or value.dtype.np_dtype.kind not in "iu":
            return None
        shape = value.shape.dims if hasattr(value.shape, "dims") else value.shape
        if shape is not None and len(shape) == 0 and not pairs:
            return dynamic_int_tuple([value])  # a scalar size, as an int is a 1-D shape
        if shape is None or len(shape) != (2 if pairs else 1) or shape[0] is None or \
                (pairs and shape[1] != 2):
            return None
        if pairs:
            return DynamicShape(((None, None),) * shape[0], value)
        return DynamicShape(constant_value_as_shape(value, shape[0]), value)
    if not isinstance(value, (list, tuple)):
        return None
    rows = value if pairs else [value]
    known = []
    symbolic = False
    for row in rows:
        if pairs and (not isinstance(row, (list, tuple)) or len(row) != 2):
            return None
        entries = []
        for v in row:
            if v.__class__ is int or isinstance(v, np.integer):
                entries.append(int(v))
                continue
            if not isinstance(v, Tensor) or v.dtype.np_dtype.kind not in "iu" or \
                    v.shape.rank != 0:
                return None
            folded = constant_value(v)
            if folded is None:
                symbolic = True
            entries.append(None if folded is None else int(folded))
        known.append(tuple(entries))
    if not symbolic:
        return tuple(known) if pairs else known[0]
    from eagerflow.ops.array.join_ops import stack
    from eagerflow.ops.math.cast import cast

    # One integer dtype for the packed value: int64 if any entry is, else int32.
    wide = any(isinstance(v, Tensor) and v.dtype.np_dtype.itemsize == 8
               for row in rows for v in row)
    dtype = np.dtype(np.int64 if wide else np.int32)

    def entry(v):
        if isinstance(v, Tensor):
            return v if v.dtype.np_dtype == dtype else cast(v, dtype.name)
        return np.asarray(v, dtype)

    tensor = stack([stack([entry(v) for v in row]) for row in rows]) if pairs else \
        stack([entry(v) for v in value])
    return DynamicShape(tuple(known) if pairs else known[0], tensor)


def dynamic_scalar(value):
    """A ``DynamicScalar`` for a symbolic integer scalar, else None."""
    from eagerflow.tensor import Tensor

    if isinstance(value, Tensor) and _is_symbolic(value) and \
            value.dtype.np_dtype.kind in "iu" and value.shape.rank == 0:
        return DynamicScalar(value)
    return None


def constant_value_as_shape(tensor, length):
    """What is known now of a 1-D integer ``tensor`` of ``length`` entries, as a tuple of
    ints and None (TF's ``constant_value_as_shape``): the dims of a ``Shape``, the known
    entries of a ``Pack`` or ``ConcatV2``, and None for the rest."""
    value = constant_value(tensor)
    if value is not None:
        return tuple(int(v) for v in value.reshape(-1))
    known = _known_entries(tensor._node, tensor._index, 0)
    if known is None or len(known) != length:
        return (None,) * length
    return known


def _known_entries(node, index, depth):
    if depth > 16:
        return None
    if node.op == "Shape" and node.inputs:
        src, i = node.inputs[0]
        return src.avals[i].shape
    if node.op == "Pack" and node.attrs.get("axis", 0) == 0:
        out = []
        for src, i in node.inputs:
            value = _node_value(src, i, 0)
            if value is not None and value.ndim != 0:
                return None
            out.append(None if value is None else int(value))
        return tuple(out)
    if node.op == "ConcatV2":
        out = ()
        for src, i in node.inputs:
            part = _known_entries(src, i, depth + 1)
            if part is None:
                value = _node_value(src, i, 0)
                shape = src.avals[i].shape
                if value is not None:
                    part = tuple(int(v) for v in value.reshape(-1))
                elif shape is not None and len(shape) == 1 and shape[0] is not None:
                    part = (None,) * shape[0]
                else:
                    return None
            out += tuple(part)
        return out
    if node.op == "Cast" and node.inputs:
        src, i = node.inputs[0]
        return _known_entries(src, i, depth + 1)
    return None


def split_dynamic(attrs):
    """The attrs a node keeps, and the tensors it takes as extra inputs, for attrs holding
    values known only at run time (``DynamicShape``/``DynamicScalar``).

    Returns:
        ``(static_attrs, tensors)``: ``static_attrs`` holds what is known of each such attr
        (a tuple with None entries, or None) and, under ``DYNAMIC_ATTRS``, their names in
        the order of ``tensors``; ``(attrs, ())`` when there are none.
    """
    names = [k for k, v in attrs.items() if v.__class__ is DynamicShape or
             v.__class__ is DynamicScalar]
    if not names:
        return attrs, ()
    static = dict(attrs)
    tensors = []
    for k in names:
        v = attrs[k]
        static[k] = None if v.__class__ is DynamicScalar else tuple(v)
        tensors.append(v.tensor)
    static[DYNAMIC_ATTRS] = tuple(names)
    return static, tuple(tensors)


def runtime_attr(array):
    """A run-time value of a dynamic attr as the kernel takes it: an int for a scalar, a
    tuple of ints for a vector, a tuple of tuples for a matrix (paddings)."""
    array = np.asarray(array)
    if array.ndim == 0:
        return int(array)
    return tuple(runtime_attr(row) for row in array) if array.ndim > 1 else \
        tuple(int(v) for v in array)


def _rebind_dynamic(values, attrs, bind):
    """``(inputs, attrs)`` with the dynamic attrs' trailing inputs taken off and each of
    those attrs set to ``bind(value, known)`` (``known``: what the attr holds at trace time).
    A node without dynamic attrs passes through."""
    names = attrs.get(DYNAMIC_ATTRS)
    if names is None:
        return values, attrs
    k = len(names)
    out = dict(attrs)
    del out[DYNAMIC_ATTRS]
    for name, value in zip(names, values[len(values) - k:]):
        out[name] = bind(value, out[name])
    return values[:len(values) - k], out


def bind_dynamic(values, attrs):
    """A node's kernel arguments: its inputs less the dynamic attrs' values, and its attrs
    with those values in place (as ``runtime_attr`` reads them). Other nodes pass through."""
    return _rebind_dynamic(values, attrs, lambda value, known: runtime_attr(_host(value)))


def symbolic_attrs(values, attrs):
    """The inverse of ``split_dynamic``, for a node re-emitted inside a trace (the replay of
    a loop body for its gradient): its inputs less the dynamic attrs' tensors, and its attrs
    with those tensors back in ``DynamicShape``/``DynamicScalar``, which the tracer splits
    off again."""
    return _rebind_dynamic(values, attrs, lambda tensor, known: DynamicScalar(tensor)
                           if known is None else DynamicShape(known, tensor))


def rule_attrs(attrs):
    """A node's attrs as its shape rule reads them (what is known of the dynamic attrs)."""
    if DYNAMIC_ATTRS not in attrs:
        return attrs
    out = dict(attrs)
    del out[DYNAMIC_ATTRS]
    return out


def dynamic_count(attrs):
    """How many of a node's last inputs hold dynamic attrs."""
    names = attrs.get(DYNAMIC_ATTRS)
    return 0 if names is None else len(names)


def _host(value):
    if hasattr(value, "_value"):  # an eager Tensor (graph replay)
        return constant_value(value)
    if type(value).__module__.startswith("cupy"):
        return value.get()
    return value
