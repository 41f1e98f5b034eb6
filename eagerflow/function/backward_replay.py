"""Compiling the backward passes of eager tapes into graphs.

A training loop records the same sequence of ops on a fresh tape at every step. The tape's
fast path (``eagerflow.tape_replay``) keys a tape by its structure; the second time a
structure is differentiated it asks :func:`compile_backward` (installed with
``tape_replay.set_backward_compiler``) to trace the tape's own reverse walk once, on copies
of its entries whose saved values are symbolic placeholders, and compile it. Later tapes
with the same structure run that graph on their own saved arrays instead of calling each
gradient rule eagerly.
"""

from __future__ import annotations

from eagerflow import dtypes as dtypes_lib
from eagerflow.function.graph import Graph
from eagerflow.function.symbolic import SymbolicTensor
from eagerflow.function.tracer import Tracer, tracing
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import wrap

__all__ = ["compile_backward"]


def compile_backward(entries, targets, backward, seeded=False):
    """Traces and compiles ``backward`` for this tape structure; returns its runner.

    Args:
        entries: The live entries, in record order.
        targets: The targets (eager tensors).
        backward: ``backward(entries, targets, seeds) -> gradients``, the tape's reverse
            walk; it runs once here, on symbolic copies.
        seeded: The targets' cotangents (``output_gradients``) are inputs of the graph, one
            per target with the target's shape and dtype; otherwise they are ones.

    Returns:
        ``run(entries, targets, seeds=())``, the gradients of real entries, with
        ``run.flat(arrays)`` taking the saved arrays, targets and seeds flat, in order.
    """
    from eagerflow.function import passes
    from eagerflow.function.multi_device import make_executor

    graph = Graph("tape_backward")
    tracer = Tracer(graph)

    def placeholder(t, name):
        value = t._value
        node = graph.add_placeholder(
            AbstractValue(value.shape, dtypes_lib.from_numpy(value.dtype)), name)
        return SymbolicTensor(graph, node, 0)

    symbolic = []
    for k, e in enumerate(entries):
        inputs = tuple(None if t is None else placeholder(t, "saved%d" % k) for t in e.inputs)
        if e.out is None:
            out = None
        elif isinstance(e.out, tuple):
            out = tuple(placeholder(o, "out%d" % k) for o in e.out)
        else:
            out = placeholder(e.out, "out%d" % k)
        symbolic.append(e.rebind(e.input_ids, inputs, out, e.output_ids))
    target_syms = []
    for t in targets:
        s = placeholder(t, "target")
        s._tid = t._tid
        target_syms.append(s)
    seed_syms = [placeholder(t, "seed") for t in targets] if seeded else None
    with tracing(tracer):
        grads = backward(symbolic, target_syms, seed_syms)
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

    run.flat = run_flat  # for recording plans, which keep the args flat
    return run
