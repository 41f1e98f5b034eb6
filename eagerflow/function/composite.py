"""Values that travel through ``cond`` and ``while_loop`` as one tensor (a TensorArray).

Such a value has ``_loop_value()`` (the tensor that carries its state),
``_with_loop_value(t)`` (the same kind of value around a new tensor) and
``_loop_invariant()`` (the shape that tensor may take across loop iterations). Control flow
replaces these values by their tensors on the way in and rebuilds them on the way out.
"""

from __future__ import annotations

from eagerflow import nest

__all__ = ["is_composite", "has_composites", "to_tensors", "from_tensors"]


def is_composite(value):
    return hasattr(value, "_loop_value") and hasattr(value, "_with_loop_value")


def has_composites(structure):
    return any(is_composite(x) for x in nest.flatten(structure))


def to_tensors(structure):
    """``structure`` with each composite replaced by its tensor; and the templates."""
    flat = nest.flatten(structure)
    templates = [x if is_composite(x) else None for x in flat]
    tensors = [x._loop_value() if t is not None else x for x, t in zip(flat, templates)]
    return nest.pack_sequence_as(structure, tensors), templates


def from_tensors(templates, structure):
    """Rebuilds the composites of ``templates`` around the tensors of ``structure``."""
    flat = nest.flatten(structure)
    out = [t._with_loop_value(x) if t is not None else x for x, t in zip(flat, templates)]
    return nest.pack_sequence_as(structure, out)
