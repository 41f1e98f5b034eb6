"""Replaying compiled backward passes of eager tapes.

A training loop records the same sequence of ops on a fresh tape at every step. The first
time a tape of a given structure is differentiated, its backward pass is traced once into a
graph (the gradient rules run on symbolic stand-ins for the saved values) and compiled; later
tapes with the same structure run that graph on their own saved arrays instead of calling
each gradient rule eagerly. The replay is used only when no other tape records (a nested
tape needs the backward ops themselves) and every entry is an ordinary primitive.
"""

from __future__ import annotations

from eagerflow import dtypes as dtypes_lib
from eagerflow.function.graph import Graph
from eagerflow.function.symbolic import SymbolicTensor
from eagerflow.function.tracer import Tracer, tracing
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import wrap

__all__ = ["compile_backward"]

_CACHE = {}
_MAX_CACHE = 64


def live_structure(entries, wanted, source_ids, target_ids):
    """The entries forward-reachable from the wanted sources, and a hashable key of their
    structure (None when replay does not apply), found in one pass.

    Two tapes with equal keys run the same backward graph: equal primitives, attrs, input
    wiring, input shapes, saved values' dtypes and output metadata. (A rule can only depend
    on an input's dtype if it saves that input, so saved dtypes are enough; whether the
    output is saved follows from the primitive.) Attrs enter as their items in call order;
    a key holding an unhashable attr fails at lookup, where the caller treats it as "no
    replay".
    """
    # Sources first, so that which leaf input is which source is part of the key.
    local = {}
    n = 0
    for i in source_ids:
        if i not in local:
            local[i] = n
            n += 1
    get = local.get
    reachable = set(wanted)
    live = []
    parts = []
    for e in entries:
        input_ids = e.input_ids
        for tid in input_ids:
            if tid in reachable:
                break
        else:
            continue
        output_ids = e.output_ids
        reachable.update(output_ids)
        live.append(e)
        if parts is None:
            continue
        prim = e.prim
        if prim is None or e.backward is not None:
            parts = None  # a custom gradient: differentiated eagerly
            continue
        attrs = e.attrs
        inputs = e.inputs
        if len(inputs) == 2:
            a, b = inputs
            saved = (None if a is None else a._value.dtype, None if b is None else b._value.dtype)
            wiring = (get(input_ids[0], -1), get(input_ids[1], -1))
        elif len(inputs) == 1:
            a = inputs[0]
            saved = None if a is None else a._value.dtype
            wiring = get(input_ids[0], -1)
        else:
            saved = tuple([None if t is None else t._value.dtype for t in inputs])
            wiring = tuple([get(i, -1) for i in input_ids])
        parts.append((prim, tuple(attrs.items()) if attrs else None, wiring, e.input_shapes,
                      saved, e.output_meta))
        for i in output_ids:
            if i not in local:  # an intermediate source keeps its source number
                local[i] = n
                n += 1
    if parts is None:
        return live, None
    return live, (tuple(parts), tuple([get(i, -1) for i in target_ids]),
                  tuple([local[i] for i in source_ids]))


def compile_backward(entries, targets, source_ids, wanted, key, seeded=False):
    """Traces and compiles the backward pass of this tape structure; returns its runner.

    With ``seeded``, the targets' cotangents (``output_gradients``) are inputs of the graph,
    one per target with the target's shape and dtype; otherwise they are ones.
    """
    from eagerflow import tape as tape_lib

    def backward_fn(shadows, symbolic_targets, ids, seeds):
        return tape_lib._propagate(shadows, symbolic_targets, ids, wanted, seeds)

    runner = _build(entries, targets, source_ids, backward_fn, seeded)
    if len(_CACHE) >= _MAX_CACHE:
        _CACHE.clear()
    _CACHE[key] = runner
    return runner


class _Shadow:
    """An entry whose saved values are symbolic placeholders."""

    __slots__ = ("prim", "input_ids", "input_shapes", "input_float", "inputs", "out",
                 "attrs", "output_ids", "output_meta", "backward")

    def __init__(self, entry, inputs, out):
        self.prim = entry.prim
        self.input_ids = entry.input_ids
        self.input_shapes = entry.input_shapes
        self.input_float = entry.input_float
        self.inputs = inputs
        self.out = out
        self.attrs = entry.attrs
        self.output_ids = entry.output_ids
        self.output_meta = entry.output_meta
        self.backward = None

    differentiable = property(lambda self: self.prim.vjp is not None)
    name = property(lambda self: self.prim.name)


def _build(entries, targets, source_ids, backward_fn, seeded):
    from eagerflow.function import passes
    from eagerflow.function.multi_device import make_executor

    graph = Graph("tape_backward")
    tracer = Tracer(graph)

    def placeholder(t, name):
        value = t._value
        node = graph.add_placeholder(
            AbstractValue(value.shape, dtypes_lib.from_numpy(value.dtype)), name)
        return SymbolicTensor(graph, node, 0)

    shadows = []
    for k, e in enumerate(entries):
        inputs = tuple(None if t is None else placeholder(t, "saved%d" % k) for t in e.inputs)
        if e.out is None:
            out = None
        elif isinstance(e.out, tuple):
            out = tuple(placeholder(o, "out%d" % k) for o in e.out)
        else:
            out = placeholder(e.out, "out%d" % k)
        shadows.append(_Shadow(e, inputs, out))
    target_syms = []
    for t in targets:
        s = placeholder(t, "target")
        s._tid = t._tid
        target_syms.append(s)
    seed_syms = [placeholder(t, "seed") for t in targets] if seeded else None
    with tracing(tracer):
        grads = backward_fn(shadows, target_syms, source_ids, seed_syms)
    slots = []
    for g in grads:
        if g is None:
            slots.append(None)
        else:
            g = tracer.to_symbolic(g)
            slots.append(len(graph.outputs))
            graph.outputs.append((g._node, g._index))
    executor = make_executor(passes.optimize(graph))
    device = targets[0]._device
    captures = [c for _, c in graph.captures]

    def run_flat(args):
        """The gradients from the flat saved arrays, targets and cotangents, in order."""
        values = executor.run(args, [c._value for c in captures] if captures else ())
        return [None if s is None else wrap(values[s], device) for s in slots]

    def run(live_entries, live_targets, seeds=()):
        args = []
        append = args.append
        for e in live_entries:
            for t in e.inputs:
                if t is not None:
                    append(t._value)
            out = e.out
            if out is not None:
                if out.__class__ is tuple:
                    args.extend([o._value for o in out])
                else:
                    append(out._value)
        for t in live_targets:
            append(t._value)
        for t in seeds:
            append(t._value)
        return run_flat(args)

    run.flat = run_flat  # for recording plans (eagerflow.tape_plan), which keep the args flat
    run.no_plan = False  # set by tape_plan when this structure cannot be planned
    return run
