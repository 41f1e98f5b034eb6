"""``eagerflow.nest``: working with nested structures, as ``tf.nest`` does.

Lists, tuples, namedtuples and dicts (flattened in sorted key order, as TF) are structure;
everything else (tensors, arrays, numbers, None) is a leaf.

Example:
    >>> from eagerflow import nest
    >>> nest.flatten({"b": [1, 2], "a": 3})
    [3, 1, 2]
    >>> nest.map_structure(lambda x: x * 10, (1, [2]))
    (10, [20])
"""

from __future__ import annotations

import collections.abc

from eagerflow.errors import short_repr

__all__ = ["flatten", "pack_sequence_as", "map_structure", "assert_same_structure",
           "is_nested", "flatten_with_paths"]


_SEQUENCES = (list, tuple, dict)


def _too_deep(what):
    import sys

    return ValueError("nest.%s: the structure is nested deeper than Python's recursion limit "
                      "(%d levels); use fewer levels of lists, or one tensor."
                      % (what, sys.getrecursionlimit()))


def is_nested(structure):
    """True for lists, tuples (namedtuples included) and mappings."""
    cls = structure.__class__
    if cls in _SEQUENCES:
        return True
    if cls.__module__ == "eagerflow.tensor" or structure is None:
        return False  # the common leaves, without the slow abstract-class check
    return isinstance(structure, (list, tuple, collections.abc.Mapping))


def _sorted_keys(mapping):
    try:
        return sorted(mapping)
    except TypeError:
        return sorted(mapping, key=repr)


def _children(structure):
    cls = structure.__class__
    if cls is list or cls is tuple:
        return list(structure)
    if isinstance(structure, collections.abc.Mapping):
        return [structure[k] for k in _sorted_keys(structure)]
    return list(structure)


def _is_composite(structure):
    """A value made of tensors that traced functions take apart (``PerReplica``): it has
    ``_nest_composite = True``, ``_composite_components()`` and ``_from_components(list)``."""
    return getattr(structure, "_nest_composite", False)


def _is_nested_or_composite(structure):
    return is_nested(structure) or _is_composite(structure)


def _children_or_components(structure):
    if _is_composite(structure):
        return list(structure._composite_components())
    return _children(structure)


def _rebuild_or_compose(structure, children):
    if _is_composite(structure):
        return structure._from_components(children)
    return _rebuild(structure, children)


def flatten(structure, expand_composites=False):
    """Returns the leaves of ``structure`` in TF's order (a leaf gives ``[leaf]``).

    With ``expand_composites=True`` composite values (a strategy's ``PerReplica``) are
    taken apart into their components too.
    """
    if expand_composites:
        return _flatten_expanding(structure)
    if not is_nested(structure):
        return [structure]
    out = []
    stack = [structure]
    # Depth-first, left to right, without recursion limits.
    while stack:
        item = stack.pop()
        if is_nested(item):
            stack.extend(reversed(_children(item)))
        else:
            out.append(item)
    return out


def _flatten_expanding(structure):
    out = []
    stack = [structure]
    while stack:
        item = stack.pop()
        if _is_nested_or_composite(item):
            stack.extend(reversed(_children_or_components(item)))
        else:
            out.append(item)
    return out


def _rebuild(structure, children):
    if isinstance(structure, collections.abc.Mapping):
        keys = _sorted_keys(structure)
        by_key = dict(zip(keys, children))
        if isinstance(structure, collections.defaultdict):
            result = collections.defaultdict(structure.default_factory)
        else:
            try:
                result = type(structure)()
            except TypeError:
                result = {}
        for k in structure:  # keep the original insertion order
            result[k] = by_key[k]
        return result
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*children)
    if isinstance(structure, tuple):
        return tuple(children)
    if isinstance(structure, list):
        return list(children)
    return type(structure)(children)


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """Packs a flat sequence into the shape of ``structure``.

    Raises:
        ValueError: If the number of leaves differs.
    """
    flat_sequence = list(flat_sequence)
    nested, children, rebuild = (
        (_is_nested_or_composite, _children_or_components, _rebuild_or_compose)
        if expand_composites else (is_nested, _children, _rebuild))
    if not nested(structure):
        if len(flat_sequence) != 1:
            raise ValueError("Structure is a single leaf but %d values were given"
                             % len(flat_sequence))
        return flat_sequence[0]
    position = [0]

    def build(node):
        if not nested(node):
            value = flat_sequence[position[0]]
            position[0] += 1
            return value
        return rebuild(node, [build(c) for c in children(node)])

    count = len(flatten(structure, expand_composites))
    if count != len(flat_sequence):
        raise ValueError("Structure has %d leaves but flat_sequence has %d elements"
                         % (count, len(flat_sequence)))
    try:
        return build(structure)
    except RecursionError:
        raise _too_deep("pack_sequence_as") from None


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError (or TypeError) when two structures differ."""
    try:
        _assert_same(nest1, nest2, check_types)
    except RecursionError:
        raise _too_deep("assert_same_structure") from None


def _assert_same(nest1, nest2, check_types):
    if is_nested(nest1) != is_nested(nest2):
        raise ValueError("The two structures don't have the same nested structure: %s and %s"
                         % (short_repr(nest1), short_repr(nest2)))
    if not is_nested(nest1):
        return
    if check_types and type(nest1) is not type(nest2):
        both_seq = isinstance(nest1, (list, tuple)) and isinstance(nest2, (list, tuple))
        if not (both_seq and type(nest1).__name__ == type(nest2).__name__):
            raise TypeError("The two structures don't have the same sequence type: %s and %s"
                            % (type(nest1).__name__, type(nest2).__name__))
    is_map1 = isinstance(nest1, collections.abc.Mapping)
    if is_map1 != isinstance(nest2, collections.abc.Mapping):
        raise ValueError("The two structures don't have the same nested structure: a %s and "
                         "a %s" % (type(nest1).__name__, type(nest2).__name__))
    if is_map1:
        if set(nest1) != set(nest2):
            raise ValueError("The two dictionaries don't have the same keys: %s and %s"
                             % (sorted(map(str, nest1)), sorted(map(str, nest2))))
    a, b = _children(nest1), _children(nest2)
    if len(a) != len(b):
        raise ValueError("The two structures don't have the same number of elements: %d and %d"
                         % (len(a), len(b)))
    for x, y in zip(a, b):
        _assert_same(x, y, check_types)


def map_structure(func, *structures, check_types=True, expand_composites=False):
    """Applies ``func`` to corresponding leaves and returns the first structure's shape."""
    if not structures:
        raise ValueError("map_structure needs at least one structure")
    for other in structures[1:]:
        assert_same_structure(structures[0], other, check_types)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*xs) for xs in zip(*flats)])


def flatten_with_paths(structure, expand_composites=False):
    """Returns ``[(path_tuple, leaf), ...]`` in flatten order.

    With ``expand_composites=True`` a composite's components get paths
    ``(..., TypeName, i)``, so a PerReplica and a tuple of the same length differ.
    """
    out = []

    def walk(node, path):
        if expand_composites and _is_composite(node):
            for i, c in enumerate(node._composite_components()):
                walk(c, path + (type(node).__name__, i))
            return
        if not is_nested(node):
            out.append((path, node))
            return
        if isinstance(node, collections.abc.Mapping):
            for k in _sorted_keys(node):
                walk(node[k], path + (k,))
        else:
            for i, c in enumerate(node):
                walk(c, path + (i,))

    try:
        walk(structure, ())
    except RecursionError:
        raise _too_deep("flatten_with_paths") from None
    return out
