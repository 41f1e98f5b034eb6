"""What a gradient tape records: one :class:`Entry` per op.

An entry holds the primitive (or a custom backward function), the ids linking its inputs and
outputs to other entries, and only the values its gradient rule declares it reads. The tape
(:mod:`eagerflow.tape`) appends entries as ops run; its fast path (:mod:`eagerflow.tape_replay`)
reads a tape's structure from its entries, follows a plan instead of building entries, and
turns the plan back into entries (:meth:`Entry.rebind`) when needed.
"""

from __future__ import annotations

__all__ = ["Entry", "is_float", "FLOAT_DTYPES"]

_new = object.__new__


class Entry:
    """One recorded op: what its gradient rule needs, and the ids linking it to others."""

    __slots__ = ("prim", "input_ids", "input_shapes", "input_float", "inputs", "out", "attrs",
                 "output_ids", "output_meta", "backward")

    def __init__(self, prim, input_ids, input_shapes, input_float, inputs, out, attrs,
                 output_ids, output_meta, backward=None):
        self.prim = prim
        self.input_ids = input_ids
        self.input_shapes = input_shapes
        self.input_float = input_float
        self.inputs = inputs
        self.out = out
        self.attrs = attrs
        self.output_ids = output_ids
        self.output_meta = output_meta  # (shape, DType, device) per output, for zero fills
        self.backward = backward  # custom backward (custom_gradient), else None

    def rebind(self, input_ids, inputs, out, output_ids):
        """This entry's op on other tensors: the same primitive, attrs, shapes and output
        metadata, with other ids and saved values (symbolic ones, to trace a backward pass;
        real ones, to materialize a plan's step)."""
        e = _new(Entry)
        e.prim = self.prim
        e.input_ids = input_ids
        e.input_shapes = self.input_shapes
        e.input_float = self.input_float
        e.inputs = inputs
        e.out = out
        e.attrs = self.attrs
        e.output_ids = output_ids
        e.output_meta = self.output_meta
        e.backward = self.backward
        return e

    @property
    def name(self):
        return self.prim.name if self.prim is not None else "CustomGradient"

    @property
    def differentiable(self):
        return self.backward is not None or (self.prim is not None and self.prim.vjp is not None)


def is_float(dtype_np):
    """Whether a numpy dtype takes gradients (floating or complex, bfloat16 included)."""
    return dtype_np.kind in "fc" or dtype_np.name == "bfloat16"


class _FloatDtypes(dict):
    """numpy dtype -> whether tensors of it have gradients (floating or complex)."""

    def __missing__(self, dtype_np):
        known = self[dtype_np] = is_float(dtype_np)
        return known


FLOAT_DTYPES = _FloatDtypes()
