"""Nested elements of datasets: flattening, packing, conversion and specs.

tf.data has its own idea of structure, different from ``tf.nest``: tuples (namedtuples
included) and dicts are structure, while a Python *list* is one value, converted to a single
tensor. So ``from_tensor_slices(([1, 2], [3, 4]))`` has two components and
``from_tensor_slices([[1, 2], [3, 4]])`` has one. This module implements that rule once.

Elements travel through a pipeline as nested structures of eager Tensors on the CPU;
sources hold numpy arrays and wrap them (without a copy) only when they hand them out.

Example:
    >>> from eagerflow.data import structure
    >>> element = {"b": (1, 2), "a": [3, 4]}
    >>> structure.flatten(element)
    [[3, 4], 1, 2]
    >>> structure.pack(element, ["A", "B1", "B2"])
    {'b': ('B1', 'B2'), 'a': 'A'}
"""

from __future__ import annotations

import collections.abc

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow.framework import context
from eagerflow.ragged import RaggedTensor, RaggedTensorSpec
from eagerflow.sparse.sparse_tensor import SparseTensor, SparseTensorSpec
from eagerflow.tensor import Tensor, convert_to_tensor, wrap
from eagerflow.tensor_shape import TensorShape, TensorSpec

__all__ = ["is_nested", "flatten", "flatten_up_to", "pack", "packer", "leaf_paths",
           "map_structure", "same_structure", "tensor_of", "to_tensors", "normalize_output",
           "host_array", "host_value", "wrap_array", "DatasetSpec", "spec_of",
           "spec_of_array", "relax_specs", "describe", "check_state", "call_with_element"]

_Mapping = collections.abc.Mapping


def is_nested(value):
    """True for tuples (namedtuples included) and mappings: tf.data's structure types."""
    return isinstance(value, (tuple, _Mapping))


def _keys(mapping):
    try:
        return sorted(mapping)
    except TypeError:
        return sorted(mapping, key=repr)


def flatten(structure):
    """The leaves of ``structure`` depth-first; dict values in sorted key order (as TF)."""
    kind = type(structure)
    if kind is Tensor:
        return [structure]
    if kind is tuple and all(type(c) is Tensor for c in structure):
        return list(structure)  # the common flat tuple of tensors, without recursion
    if not isinstance(structure, (tuple, _Mapping)):
        return [structure]
    out = []
    _flatten_into(structure, out)
    return out


def _flatten_into(node, out):
    if isinstance(node, tuple):
        for child in node:
            _flatten_into(child, out)
    elif isinstance(node, _Mapping):
        for key in _keys(node):
            _flatten_into(node[key], out)
    else:
        out.append(node)


def _rebuild(template, children):
    if isinstance(template, _Mapping):
        by_key = dict(zip(_keys(template), children))
        if type(template) is not dict:
            try:
                return type(template)((k, by_key[k]) for k in template)
            except TypeError:
                pass
        return {k: by_key[k] for k in template}
    if hasattr(template, "_fields"):
        return type(template)(*children)
    return tuple(children)


def packer(template):
    """A fast function ``flat sequence -> structure shaped like template``.

    Pipelines pack every element, so the common shapes (one leaf, a flat tuple) get a
    dedicated function instead of a recursive walk.
    """
    if not is_nested(template):
        return lambda flat: flat[0]
    if type(template) is tuple and not any(is_nested(c) for c in template):
        return tuple
    return lambda flat: pack(template, flat)


def pack(template, flat):
    """Packs ``flat`` (a sequence of leaves) into the shape of ``template``."""
    position = [0]

    def build(node):
        if isinstance(node, tuple):
            kids = [build(c) for c in node]
        elif isinstance(node, _Mapping):
            kids = [build(node[k]) for k in _keys(node)]
        else:
            value = flat[position[0]]
            position[0] += 1
            return value
        return _rebuild(node, kids)

    result = build(template)
    if position[0] != len(flat):
        raise ValueError("Cannot pack %d values into a structure with %d leaves."
                         % (len(flat), position[0]))
    return result


def leaf_paths(structure):
    """A readable path for every leaf, in flatten order: ``["[0]", "['x']"]`` ("" for a leaf)."""
    out = []

    def walk(node, path):
        if isinstance(node, tuple):
            for i, child in enumerate(node):
                walk(child, "%s[%d]" % (path, i))
        elif isinstance(node, _Mapping):
            for key in _keys(node):
                walk(node[key], "%s[%r]" % (path, key))
        else:
            out.append(path)

    walk(structure, "")
    return out


def map_structure(fn, structure):
    """Applies ``fn`` to every leaf of one structure."""
    return pack(structure, [fn(leaf) for leaf in flatten(structure)])


def same_structure(a, b):
    """True when two structures have the same nesting, types of nodes and dict keys."""
    if isinstance(a, tuple) != isinstance(b, tuple) or \
            isinstance(a, _Mapping) != isinstance(b, _Mapping):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_structure(x, y) for x, y in zip(a, b))
    if isinstance(a, _Mapping):
        return set(a) == set(b) and all(same_structure(a[k], b[k]) for k in a)
    return True


def flatten_up_to(template, value, what):
    """Flattens ``value`` to the leaves of ``template``: a leaf of ``template`` takes any
    value (a list there is one value, such as a shape), and a list is accepted where
    ``template`` has a tuple.

    Raises:
        TypeError: If the nesting differs; the message starts with ``what``.
    """
    if not is_nested(template):
        return [value]
    if isinstance(template, tuple):
        if isinstance(value, list):
            value = tuple(value)  # a list where a tuple is expected: accepted (TF refuses)
        if not isinstance(value, tuple) or len(value) != len(template):
            raise TypeError("%s: expected a structure like %s, got %s."
                            % (what, describe(template), _short(value)))
        out = []
        for t, v in zip(template, value):
            out.extend(flatten_up_to(t, v, what))
        return out
    if not isinstance(value, _Mapping) or set(value) != set(template):
        raise TypeError("%s: expected a dict with keys %s, got %s."
                        % (what, sorted(map(str, template)), _short(value)))
    out = []
    for key in _keys(template):
        out.extend(flatten_up_to(template[key], value[key], what))
    return out


# -- values ---------------------------------------------------------------------------------


def tensor_of(value, what="element"):
    """One leaf as a Tensor: tensors pass through, anything else is converted like TF."""
    if isinstance(value, (Tensor, RaggedTensor, SparseTensor)):
        return value  # a Tensor, or a RaggedTensor (one leaf of an element)
    if value is None:
        raise TypeError(
            "A dataset %s cannot contain None; use an empty tensor or drop the component."
            % what)
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError) as exc:
        raise TypeError("Cannot convert a dataset %s component %s to a tensor: %s"
                        % (what, _short(value), exc)) from None


def to_tensors(value, what="element"):
    """A user structure with tf.data's rules: lists become single tensors."""
    kind = type(value)
    if kind is Tensor or kind is tuple and all(type(c) is Tensor for c in value):
        return value  # already tensors: the common case on every element of a map
    return map_structure(lambda leaf: tensor_of(leaf, what), value)


def normalize_output(value):
    """Normalizes what a user function returned as an element (TF's rules).

    A top-level list becomes a tuple, as TF does for ``map`` functions (a list nested deeper
    is one tensor); every leaf becomes a tensor, except datasets, which stay datasets.
    """
    kind = type(value)
    if kind is Tensor or kind is tuple and all(type(c) is Tensor for c in value):
        return value
    if isinstance(value, list):
        value = tuple(value)
    return map_structure(
        lambda leaf: leaf if hasattr(leaf, "_elements") else tensor_of(leaf, "function output"),
        value)


def host_array(value):
    """A read-only numpy array of a leaf, converted with TF's dtype rules (a copy of user
    arrays, so later writes by the caller cannot change the dataset)."""
    if isinstance(value, Tensor):
        array = np.asarray(value)
    else:
        array = np.asarray(tensor_of(value))
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


_CPU = context.CPU0
_ndarray = np.ndarray


def host_value(tensor):
    """A tensor's value as a numpy array (no copy on the CPU, a copy from a GPU)."""
    value = tensor._value
    return value if type(value) is _ndarray else np.asarray(tensor)


def wrap_array(array):
    """A CPU Tensor around a (read-only) numpy array, without a copy."""
    return wrap(array, _CPU)


def wrap_read_only_view(array):
    """A CPU Tensor around a read-only view of ``array`` (a component of a batch buffer
    that later steps must not write through), without a copy."""
    view = array.view()
    view.flags.writeable = False
    return wrap(view, _CPU)


# -- specs ----------------------------------------------------------------------------------


class DatasetSpec:
    """The type of a component that is itself a dataset (the elements of ``window``).

    Args:
        element_spec: The nested TensorSpec of the inner dataset's elements.
    """

    __slots__ = ("element_spec",)

    def __init__(self, element_spec):
        self.element_spec = element_spec

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and other.element_spec == self.element_spec

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return "DatasetSpec(%r, TensorShape([]))" % (self.element_spec,)


def _spec_of_leaf(leaf):
    if isinstance(leaf, Tensor):
        return TensorSpec(leaf.shape, leaf.dtype)
    if isinstance(leaf, RaggedTensor):
        return RaggedTensorSpec.from_value(leaf)
    if isinstance(leaf, SparseTensor):
        return SparseTensorSpec.from_value(leaf)
    return DatasetSpec(leaf.element_spec)  # a dataset inside an element


def spec_of(element):
    """The spec structure describing one element (TensorSpec, or DatasetSpec for datasets)."""
    return map_structure(_spec_of_leaf, element)


def spec_of_array(array, batched=False):
    """The spec of a numpy array; ``batched`` drops the leading dimension."""
    shape = array.shape[1:] if batched else array.shape
    return TensorSpec(TensorShape(tuple(shape)), dtypes_lib.from_numpy(array.dtype))


def relax_specs(a, b, what):
    """The most specific spec structure compatible with both, as ``concatenate`` needs.

    Raises:
        TypeError: If the structures or dtypes differ (naming ``what``).
    """
    if not same_structure(a, b):
        raise TypeError("%s: incompatible element structures %s and %s; both datasets must "
                        "produce the same nesting of components." % (what, describe(a),
                                                                     describe(b)))
    flat_a, flat_b = flatten(a), flatten(b)
    out = []
    for i, (x, y) in enumerate(zip(flat_a, flat_b)):
        if isinstance(x, DatasetSpec) or isinstance(y, DatasetSpec):
            if not (isinstance(x, DatasetSpec) and isinstance(y, DatasetSpec)):
                raise TypeError("%s: component %d is a dataset in one structure and a "
                                "tensor in the other." % (what, i))
            out.append(DatasetSpec(relax_specs(x.element_spec, y.element_spec, what)))
            continue
        if _is_composite_spec(x) or _is_composite_spec(y):
            try:
                out.append(x.most_specific_compatible_type(y) if _is_composite_spec(x)
                           else y.most_specific_compatible_type(x))
            except TypeError:
                raise TypeError("%s: component %d is %s in one structure and %s in the "
                                "other; they must have the same kind, dtype (and ragged rank)."
                                % (what, i, x, y)) from None
            continue
        if x.dtype is not y.dtype:
            raise TypeError("%s: component %d has dtype %s in one dataset and %s in the "
                            "other; cast one with map(lambda ...: tf.cast(...))."
                            % (what, i, x.dtype.name, y.dtype.name))
        out.append(TensorSpec(x.shape.most_specific_compatible_shape(y.shape), x.dtype))
    return pack(a, out)


def _is_ragged_spec(spec):
    return isinstance(spec, RaggedTensorSpec)


def _is_composite_spec(spec):
    return isinstance(spec, (RaggedTensorSpec, SparseTensorSpec))


def describe(spec):
    """A short text for a spec structure: ``(float32[None, 3], int64[])``."""
    def one(s):
        if isinstance(s, DatasetSpec):
            return "Dataset<%s>" % describe(s.element_spec)
        if _is_ragged_spec(s):
            return "ragged(%d) %s" % (s.ragged_rank, one(TensorSpec(s.shape, s.dtype)))
        if isinstance(s, SparseTensorSpec):
            return "sparse %s" % one(TensorSpec(s.shape, s.dtype))
        if not isinstance(s, TensorSpec):
            return type(s).__name__
        dims = "?" if s.shape.rank is None else ", ".join(
            "None" if d is None else str(d) for d in s.shape)
        return "%s[%s]" % (s.dtype.name, dims)

    if isinstance(spec, tuple):
        return "(" + ", ".join(describe(c) for c in spec) + ")"
    if isinstance(spec, _Mapping):
        return "{" + ", ".join("%r: %s" % (k, describe(spec[k])) for k in spec) + "}"
    return one(spec)


def check_state(value, spec, method):
    """Checks a new state against the initial state's spec (structure and dtypes)."""
    if not same_structure(spec, value):
        raise TypeError("Dataset.%s: the function returned the structure %s, but the state "
                        "has the structure %s." % (method, describe(
                            spec_of(value)), describe(spec)))
    for i, (s, t) in enumerate(zip(flatten(spec), flatten(value))):
        if s.dtype is not t.dtype:
            raise TypeError("Dataset.%s: state component %d changed dtype from %s to %s; "
                            "cast it back with tf.cast." % (method, i, s.dtype.name,
                                                           t.dtype.name))
    return value


# -- calling user functions -----------------------------------------------------------------


def call_with_element(fn, element):
    """Calls a user function the way tf.data does: a tuple element is unpacked into
    positional arguments; anything else (a dict, a single tensor, a namedtuple) is passed
    as one argument."""
    if type(element) is tuple:
        return fn(*element)
    return fn(element)


def _short(value):
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."
