"""Values that travel through ``cond`` and ``while_loop`` as a few tensors (a TensorArray).

Such a value has ``_loop_value()`` (the tuple of tensors that carries its state),
``_with_loop_value(tensors)`` (the same kind of value around new tensors) and
``_loop_invariant()`` (the shapes those tensors may take across loop iterations, one per
tensor). Control flow replaces these values by their tensors on the way in and rebuilds
them on the way out.
"""

from __future__ import annotations

from eagerflow import nest

__all__ = ["is_composite", "has_composites", "to_tensors", "from_tensors"]


class _Templates(list):
    """One entry per leaf of a structure (the composite, or None), and the structure."""

    structure = None


def is_composite(value):
    return hasattr(value, "_loop_value") and hasattr(value, "_with_loop_value")


def has_composites(structure):
    return any(is_composite(x) for x in nest.flatten(structure))


def to_tensors(structure):
    """``structure`` with each composite replaced by its tuple of tensors; the templates."""
    flat = nest.flatten(structure)
    templates = _Templates(x if is_composite(x) else None for x in flat)
    templates.structure = structure
    tensors = [x._loop_value() if t is not None else x for x, t in zip(flat, templates)]
    return nest.pack_sequence_as(structure, tensors), templates


def from_tensors(templates, structure):
    """Rebuilds the composites of ``templates`` around the tensors of ``structure`` (a
    structure shaped as ``to_tensors`` returned it)."""
    flat = nest.flatten(structure)
    out, pos = [], 0
    for t in templates:
        if t is None:
            out.append(flat[pos])
            pos += 1
        else:
            k = len(t._loop_value())
            out.append(t._with_loop_value(tuple(flat[pos:pos + k])))
            pos += k
    return nest.pack_sequence_as(templates.structure, out)
