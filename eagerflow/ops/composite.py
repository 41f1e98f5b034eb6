"""Dispatch of public ops to composite tensors (RaggedTensor) that are not Tensors.

A handful of public functions (``concat``, ``stack``, ``gather``, the reductions) also
accept RaggedTensors, as TF's dispatch lets them; ``gather`` also accepts a ShardedVariable
(a variable split across parameter servers), which gathers from each shard where it lives.
The composite type registers its implementation here (``register``), from its own module
above the ops; the public function asks for it (``handler``) only when an argument is not a
plain Tensor, so the common path pays nothing. Elementwise primitives
(``Primitive.elementwise``: the unary and binary families, cast, the per-string ops) need no
public-function code: the dispatcher hands a call with a RaggedTensor argument to the
``"elementwise"`` handler, which runs the op on the flat values.

Example:
    >>> import eagerflow as ef
    >>> ef.reduce_sum(ef.ragged.constant([[1, 2], [3]]), axis=1).numpy().tolist()
    [3, 3]
"""

from __future__ import annotations

__all__ = ["register", "handler"]

_HANDLERS = {}


def register(op_name, fn, kind="ragged"):
    """Makes ``fn`` the implementation of public op ``op_name`` for composite inputs of
    ``kind`` (``"ragged"``, or ``"sharded"`` for sharded variables)."""
    _HANDLERS[op_name if kind == "ragged" else (kind, op_name)] = fn


def handler(op_name, *values):
    """The registered implementation when some value is a composite tensor, else None."""
    for v in values:
        if getattr(v, "_is_ragged", False):
            return _HANDLERS.get(op_name)
        if getattr(v, "_is_sharded_variable", False):
            return _HANDLERS.get(("sharded", op_name))
    return None
