"""Cache keys for traced functions, and the words that say why a function retraced.

A call's key is the structure of its arguments with each tensor replaced by its spec
(dtype and shape, possibly generalized), each plain variable by its spec (dtype, shape,
device, trainability, and which other variable arguments it is the same object as), each
Generator by its algorithm and its state variable's spec, each other variable-like object
(distributed, sharded) by its identity and each other Python value by itself (it must be
hashable). Comparing a new key with earlier ones names the argument that changed and how.

As TF, a plain variable keyed by its spec traces once for every variable of that spec: a
call with other variables runs the trace bound to them (``ConcreteFunction._bound_to``).
"""

from __future__ import annotations

import weakref

import numpy as np

from eagerflow import nest
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape, TensorSpec

__all__ = ["make_key", "describe_difference", "TensorKey", "CompositeKey", "flatten_arguments",
           "pack_arguments", "type_spec"]


class TensorKey:
    """The key of one tensor argument: dtype and (possibly generalized) shape."""

    __slots__ = ("dtype", "shape", "_hash")

    def __init__(self, dtype, shape):
        self.dtype = dtype
        self.shape = shape  # tuple with None dims, or None for unknown rank
        self._hash = hash((dtype.name, shape))

    def __eq__(self, other):
        return (isinstance(other, TensorKey) and self.dtype is other.dtype
                and self.shape == other.shape)

    def __hash__(self):
        return self._hash

    def accepts(self, dtype, shape):
        """True when a tensor of ``dtype``/``shape`` fits this (possibly relaxed) key."""
        if dtype is not self.dtype:
            return False
        return TensorShape(self.shape).is_compatible_with(shape)

    def spec(self, name=None):
        return TensorSpec(TensorShape(self.shape), self.dtype, name)

    def __repr__(self):
        return "%s%s" % (self.dtype.name, list(self.shape) if self.shape is not None else "[?]")


class CompositeKey:
    """The key of a composite argument (SparseTensor, RaggedTensor): its type spec.

    As TF keys composite tensors on their ``TypeSpec``, a SparseTensor's key is its static
    shape and dtype, not its number of values: the key's component TensorKeys (which follow
    it) have the spec's component shapes (indices ``[None, rank]``), so one trace serves
    every SparseTensor of that spec.
    """

    __slots__ = ("spec",)

    def __init__(self, spec):
        self.spec = spec

    def __eq__(self, other):
        return isinstance(other, CompositeKey) and self.spec == other.spec

    def __hash__(self):
        return hash(self.spec)

    def accepts(self, other):
        return isinstance(other, CompositeKey) and self.spec.is_compatible_with(other.spec)

    def __repr__(self):
        return repr(self.spec)


def type_spec(value):
    """The spec of a composite value (``SparseTensor._type_spec``), a composite spec itself,
    or None (plain values, and composites without a spec such as PerReplica)."""
    if not getattr(value, "_nest_composite", False):
        return None
    if hasattr(value, "value_type") and hasattr(value, "is_compatible_with"):
        return value  # already a spec
    return getattr(value, "_type_spec", None)


def _component_keys(path, spec):
    """The CompositeKey of ``spec`` and the TensorKeys of its components, with paths."""
    items = [(path, CompositeKey(spec))]
    for i, s in enumerate(nest.flatten(spec, expand_composites=True)):
        items.append((path + (type(spec).__name__, i),
                      TensorKey(s.dtype, tuple(s.shape.dims) if s.shape.rank is not None
                                else None)))
    return items


def composite_items(arguments, leaf_items):
    """The key items of canonical arguments, composites keyed by their spec.

    ``leaf_items(path, leaf)`` gives the items of a non-composite leaf. Each composite value
    contributes its components (in order) to ``flat`` and is replaced in ``arguments`` by
    its spec, so a trace builds placeholders of the spec's (relaxed) component shapes and
    rebuilds the value with the spec's static shape. Returns ``(items, flat)``.
    """
    items, flat = [], []
    for name, value in arguments.items():
        replaced = False
        leaves = []
        for path, leaf in nest.flatten_with_paths(value):
            spec = type_spec(leaf)
            full = (name,) + tuple(path)
            if spec is None:
                leaves.append(leaf)
                for sub, part in nest.flatten_with_paths(leaf, expand_composites=True):
                    items.extend(leaf_items(full + tuple(sub), part, flat))
                continue
            if spec is not leaf:
                flat.extend(nest.flatten(leaf, expand_composites=True))
            items.extend(_component_keys(full, spec))
            leaves.append(spec)
            replaced = True
        if replaced:
            arguments[name] = nest.pack_sequence_as(value, leaves)
    return items, flat


class VariableKey:
    """The key of a variable-like argument keyed by identity (distributed, sharded and
    other variables a trace cannot be rebound to)."""

    __slots__ = ("ref", "_id")

    def __init__(self, variable):
        self.ref = variable
        self._id = id(variable)

    def __eq__(self, other):
        return isinstance(other, VariableKey) and other._id == self._id

    def __hash__(self):
        return self._id

    def __repr__(self):
        return "variable %s" % getattr(self.ref, "name", "?")


class VariableSpecKey:
    """The key of a plain Variable (or a Generator, through its state variable) argument.

    Equal for any variable of the same dtype, shape, device and trainability, and of the
    same place in the call's aliasing (``alias``: the number of the first variable argument
    that is the same object, so ``f(v, v)`` and ``f(v, w)`` trace apart: their graphs read
    one variable or two). ``kind`` is ``"variable"`` or ``("Generator", algorithm)``. A
    call's key holds its variable; a key kept in a lookup table holds it weakly
    (:func:`weak_key`), so the tables keep no variable alive.
    """

    __slots__ = ("variable", "_ref", "kind", "spec", "alias", "_hash")

    def __init__(self, variable, kind):
        self.variable = variable
        self._ref = None
        self.kind = kind
        self.spec = _variable_spec(variable)
        self.alias = 0
        self._hash = None

    dtype = property(lambda self: self.spec[0][0])
    shape = property(lambda self: self.spec[0][1])
    device = property(lambda self: self.spec[0][2])
    trainable = property(lambda self: self.spec[0][3])

    def weak(self):
        """This key holding its variable weakly."""
        out = object.__new__(VariableSpecKey)
        out.variable = None
        out._ref = self._ref or weakref.ref(self.variable)
        out.kind, out.spec, out.alias, out._hash = self.kind, self.spec, self.alias, self._hash
        return out

    @property
    def name(self):
        variable = self.variable if self._ref is None else self._ref()
        return "?" if variable is None else variable.name

    def __eq__(self, other):
        # Specs compare as tuples: the same variable's spec is the same object.
        return (other.__class__ is VariableSpecKey and self.alias == other.alias
                and (self.spec is other.spec or self.spec[0] == other.spec[0])
                and self.kind == other.kind)

    def __hash__(self):
        h = self._hash
        if h is None:
            h = self._hash = hash((self.spec[1], self.kind, self.alias))
        return h

    def __repr__(self):
        what = "variable" if self.kind == "variable" else "Generator(alg=%s)" % self.kind[1]
        return "%s %s%s" % (what, self.dtype.name, list(self.shape)
                            if self.shape is not None else "[?]")


def _variable_spec(variable):
    """``((dtype, shape, device, trainable), hash)`` of a plain Variable, made once and kept
    on it (none of them changes after creation): every call with a variable reads it."""
    fields = variable.__dict__
    spec = fields.get("_function_key_spec")
    if spec is None:
        dims = variable._shape._dims
        values = (variable.dtype, None if dims is None else tuple(dims),
                  variable._device.name, variable._trainable)
        spec = fields["_function_key_spec"] = (values, hash((values[0].name,) + values[1:]))
    return spec


def weak_key(key):
    """``key`` as kept in a lookup table: its variables held weakly."""
    structure, leaves = key
    for k in leaves:
        if k.__class__ is VariableSpecKey and k.variable is not None:
            return structure, tuple(k.weak() if k.__class__ is VariableSpecKey else k
                                    for k in leaves)
    return key


_bindable_classes = None


def bindable_variable(value):
    """The variable a trace may be rebound through for argument ``value``: a plain Variable
    itself, a Generator's state variable; None for anything else (keyed by identity)."""
    global _bindable_classes
    if _bindable_classes is None:
        from eagerflow.ops.random.random_generator import Generator
        from eagerflow.variables import Variable

        _bindable_classes = (Variable, Generator)
    cls = value.__class__
    if cls is _bindable_classes[0]:
        return value
    if cls is _bindable_classes[1]:
        state = value._state_var  # a distributed generator's state keeps the identity key
        return state if state.__class__ is _bindable_classes[0] else None
    return None


def key_variables(key):
    """The variables of a call's key, in argument order (what a trace is bound to)."""
    return [k.variable for k in key[1] if k.__class__ is VariableSpecKey]  # a call's key


def identity_key(key):
    """``key`` with each variable keyed by its identity (see ``Function`` on variables
    reachable from a function's closure)."""
    structure, leaves = key
    if not any(k.__class__ is VariableSpecKey for k in leaves):
        return key
    return structure, tuple(VariableKey(k.variable) if k.__class__ is VariableSpecKey else k
                            for k in leaves)


def number_aliases(leaves):
    """Sets each VariableSpecKey's ``alias``: the number of its variable among the distinct
    variables of the call, in order of first appearance."""
    seen = None
    for k in leaves:
        if k.__class__ is VariableSpecKey:
            if seen is None:  # the first variable: alias 0, as made
                seen = {id(k.variable): 0}
                continue
            k.alias = seen.setdefault(id(k.variable), len(seen))
            k._hash = None


def _leaf_key(path, value, flat_tensors):
    if isinstance(value, Tensor):
        flat_tensors.append(value)
        return TensorKey(value.dtype, tuple(value._value.shape) if value._value.shape
                         is not None else None)
    variable = bindable_variable(value)
    if variable is not None:
        return VariableSpecKey(variable, "variable" if variable is value
                               else (type(value).__name__, value.algorithm))
    if getattr(value, "_is_variable", False):
        return VariableKey(value)
    if isinstance(value, np.ndarray):
        from eagerflow.tensor import convert_to_tensor

        t = convert_to_tensor(value)
        flat_tensors.append(t)
        return TensorKey(t.dtype, tuple(t._value.shape))
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            "Argument %s of a @function is %r, an unhashable %s. Non-tensor arguments become "
            "part of the function's cache key, so they must be hashable: pass a tuple "
            "instead of a list, a tensor instead of an array-like, or make the object "
            "hashable." % (_path_text(path), value, type(value).__name__)) from None
    return ("py", type(value).__name__, value)


def flatten_arguments(arguments):
    """``[(path, leaf)]`` of canonical arguments ``{name: value}`` in parameter order.

    ``nest`` sorts dict keys, but a call's tensors are matched to the graph's placeholders by
    position, so arguments are flattened in the order the parameters are declared.
    """
    out = []
    for name, value in arguments.items():
        for path, leaf in nest.flatten_with_paths(value, expand_composites=True):
            out.append(((name,) + tuple(path), leaf))
    return out


def pack_arguments(arguments, leaves):
    """The inverse of :func:`flatten_arguments`: ``{name: value}`` rebuilt from ``leaves``."""
    leaves = iter(leaves)
    out = {}
    for name, value in arguments.items():
        flat = [next(leaves) for _ in nest.flatten(value, expand_composites=True)]
        out[name] = nest.pack_sequence_as(value, flat, expand_composites=True)
    return out


def make_key(arguments):
    """Returns (key, flat_tensors) for canonical arguments ``{name: value}``."""
    items, flat_tensors = composite_items(
        arguments, lambda path, leaf, flat: [(path, _leaf_key(path, leaf, flat))])
    structure = tuple(path for path, _ in items)
    leaves = tuple(k for _, k in items)
    number_aliases(leaves)
    return (structure, leaves), flat_tensors


def _path_text(path):
    if not path:
        return "?"
    text = str(path[0])
    for p in path[1:]:
        text += "[%r]" % (p,)
    return "`%s`" % text


def describe_difference(old_key, new_key):
    """A sentence saying which argument changed between two keys, and how."""
    old_structure, old_leaves = old_key
    new_structure, new_leaves = new_key
    if old_structure != new_structure:
        old_args = {p[0] for p in old_structure if p}
        new_args = {p[0] for p in new_structure if p}
        changed = sorted(str(a) for a in old_args ^ new_args) or sorted(
            str(p[0]) for p, q in zip(old_structure, new_structure) if p != q and p)
        return "the structure of argument(s) %s changed (nesting or number of elements)" % (
            ", ".join("`%s`" % c for c in changed[:3]) or "?")
    reasons = []
    changed_types = []  # a composite whose type changed: its components say nothing more
    for path, old, new in zip(new_structure, old_leaves, new_leaves):
        if old == new or any(path[:len(p)] == p for p in changed_types):
            continue
        where = _path_text(path)
        if isinstance(old, TensorKey) and isinstance(new, TensorKey):
            if old.dtype is not new.dtype:
                reasons.append("%s changed dtype %s -> %s" % (where, old.dtype.name,
                                                               new.dtype.name))
            else:
                reasons.append("%s changed shape %s -> %s" % (
                    where, list(old.shape) if old.shape is not None else "?",
                    list(new.shape) if new.shape is not None else "?"))
        elif isinstance(old, CompositeKey) and isinstance(new, CompositeKey):
            reasons.append("%s changed type %r -> %r" % (where, old.spec, new.spec))
            changed_types.append(path)
        elif isinstance(old, tuple) and isinstance(new, tuple):
            reasons.append("%s is a Python value that changed %r -> %r (each new Python value "
                           "traces again; pass a tensor to avoid this)" % (where, old[2], new[2]))
        elif isinstance(old, VariableKey) and isinstance(new, VariableKey):
            reasons.append("%s is a different variable (%s)" % (where, new.ref.name))
        elif isinstance(old, VariableSpecKey) and isinstance(new, VariableSpecKey):
            reasons.append("%s %s (%s)" % (where, _variable_change(old, new), new.name))
        else:
            reasons.append("%s changed kind (%r -> %r)" % (where, old, new))
    return "; ".join(reasons) if reasons else "the arguments differ"


def _variable_change(old, new):
    """What differs between two VariableSpecKeys, in words."""
    if old.kind != new.kind:
        return "is a variable-holding argument of another kind (%r -> %r)" % (old.kind, new.kind)
    if old.dtype is not new.dtype:
        return "is a variable of another dtype (%s -> %s)" % (old.dtype.name, new.dtype.name)
    if old.shape != new.shape:
        return "is a variable of another shape (%s -> %s)" % (
            list(old.shape) if old.shape is not None else "?",
            list(new.shape) if new.shape is not None else "?")
    if old.device != new.device:
        return "is a variable on another device (%s -> %s)" % (old.device, new.device)
    if old.trainable != new.trainable:
        return "is a variable of another trainability (trainable %s -> %s)" % (
            old.trainable, new.trainable)
    if new.alias < old.alias:
        return "is now the same variable object as an earlier argument (it was not)"
    return "is now a different variable object from an earlier argument (it was the same)"


def relax(old_key, new_key):
    """The most specific key that accepts both (None where shapes differ), or None."""
    old_structure, old_leaves = old_key
    new_structure, new_leaves = new_key
    if old_structure != new_structure:
        return None
    leaves = []
    for old, new in zip(old_leaves, new_leaves):
        if isinstance(old, TensorKey) and isinstance(new, TensorKey):
            if old.dtype is not new.dtype:
                return None
            shape = TensorShape(old.shape).most_specific_compatible_shape(new.shape)
            leaves.append(TensorKey(old.dtype, tuple(shape.dims) if shape.rank is not None
                                    else None))
        elif isinstance(old, CompositeKey) and isinstance(new, CompositeKey) and old != new:
            try:
                leaves.append(CompositeKey(old.spec.most_specific_compatible_type(new.spec)))
            except TypeError:
                return None
        elif old != new:
            return None
        else:
            leaves.append(new)  # equal; the call's own holds its variable (a table's may not)
    return (old_structure, tuple(leaves))


def key_accepts(key, call_key):
    """True when a (relaxed) key accepts a call's exact key."""
    structure, leaves = key
    call_structure, call_leaves = call_key
    if structure != call_structure:
        return False
    for k, c in zip(leaves, call_leaves):
        if isinstance(k, TensorKey) and isinstance(c, TensorKey):
            if not k.accepts(c.dtype, c.shape):
                return False
        elif isinstance(k, CompositeKey):
            if not k.accepts(c):
                return False
        elif k != c:
            return False
    return True


def signature_key(input_signature, arguments, param_names):
    """Validates call arguments against an input_signature; returns (key, flat_tensors)."""
    from eagerflow.tensor import convert_to_tensor

    flat_tensors = []
    leaves = []
    paths = []
    for name, spec in zip(param_names, input_signature):
        value = arguments.get(name)
        spec_leaves = nest.flatten(spec)
        if not nest.is_nested(spec) and nest.is_nested(value):
            # A TensorSpec takes any value convertible to it, nested lists included (TF).
            try:
                value = arguments[name] = convert_to_tensor(value, dtype=spec.dtype)
            except (TypeError, ValueError):
                pass  # reported below as a structure mismatch
        try:
            nest.assert_same_structure(spec, value, check_types=False)
        except (ValueError, TypeError):
            # TypeError, as TF raises for a call that does not bind to the signature.
            raise TypeError(
                "Argument `%s` does not match the function's input_signature: "
                "expected the structure %s, got %r." % (name, spec, value)) from None
        new_leaves = []
        for (path, leaf), s in zip(nest.flatten_with_paths(value), spec_leaves):
            _check_composite(name, path, leaf, s)
            full = (name,) + tuple(path)
            if type_spec(s) is not None:
                # A composite: its components are checked against the spec's, and the trace
                # sees the spec (its static shape), not this first value.
                for (p, key), t in zip(_component_keys(full, s)[1:],
                                       nest.flatten(leaf, expand_composites=True)):
                    _check_tensor(name, p[len(full):], t, key.spec())
                    flat_tensors.append(t)
                paths.extend(p for p, _ in _component_keys(full, s))
                leaves.extend(k for _, k in _component_keys(full, s))
                new_leaves.append(s)
                continue
            t = leaf if isinstance(leaf, Tensor) else convert_to_tensor(leaf, dtype=s.dtype)
            _check_tensor(name, tuple(path), t, s)
            flat_tensors.append(t)
            leaves.append(TensorKey(s.dtype, tuple(s.shape.dims) if s.shape.rank is not None
                                    else None))
            paths.append(full)
            new_leaves.append(t)
        if any(n is not leaf for n, leaf in zip(new_leaves, nest.flatten(value))):
            # The trace must see tensors (and specs), not the Python values of this call.
            arguments[name] = nest.pack_sequence_as(value, new_leaves)
    return (tuple(paths), tuple(leaves)), flat_tensors


def _check_tensor(name, path, t, spec):
    if not spec.is_compatible_with(t):
        raise TypeError(
            "Argument `%s` (%s%s) is not compatible with its input_signature"
            " %s. Either pass a matching tensor or change the signature."
            % ((name,) + path if path else name, t.dtype.name, list(t._value.shape), spec))


def _check_composite(name, path, value, spec):
    """A composite spec (RaggedTensorSpec) takes only a value it describes, and a TensorSpec
    takes no composite value: their components would not line up."""
    where = "`%s`" % "".join([str(name)] + ["[%r]" % (p,) for p in path])
    spec_composite = getattr(spec, "_nest_composite", False)
    value_composite = getattr(value, "_nest_composite", False)
    if spec_composite and not spec.is_compatible_with(value):
        raise TypeError(
            "Argument %s is %s, which is not compatible with its input_signature %r. Pass a "
            "value of that type (a RaggedTensor with the same dtype and ragged_rank) or "
            "change the signature." % (where, _short(value), spec))
    if value_composite and not spec_composite:
        raise TypeError(
            "Argument %s is a %s, but its input_signature is %r. Use a %sSpec in the "
            "signature or convert the value (e.g. RaggedTensor.to_tensor())."
            % (where, type(value).__name__, spec, type(value).__name__))


def _short(value):
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."
