"""The tape's reverse walk: from a gradient request to the cotangents of its sources.

Record order is a topological order, so the walk visits the live entries (those reachable
from the wanted sources) in reverse, accumulates cotangents by tensor id and reduces
broadcast gradients in one place (``eagerflow.ops.vjp.apply_vjp``). A structure seen
before runs its compiled backward instead, and a tape that follows a plan runs it on the
kept tensors directly (``eagerflow.tape_replay``); the walk is then what was compiled.
"""

from __future__ import annotations

from eagerflow import errors
from eagerflow import tape_replay
from eagerflow.framework import context
from eagerflow.ops import dispatch
from eagerflow.ops.vjp import apply_vjp
from eagerflow.tape_entry import FLOAT_DTYPES as _FLOAT_DTYPES
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["backward"]

_state = context.state


def backward(tape, targets, sources, seeds):
    """The gradients of ``targets`` (flat) for ``sources`` (flat) recorded on ``tape``."""
    plan = tape._plan
    if plan and seeds is None and _state.trace is None and not _any_recording():
        grads = tape_replay.run(tape, plan, targets, sources)
        if grads is not None:
            return grads
    ids = tape._ids
    source_ids = []
    wanted = set()
    for s in sources:
        if s.__class__ is not Tensor and not getattr(s, "_is_variable", False) and \
                not hasattr(s, "_tid"):
            raise errors.InvalidArgumentError(
                None, "gradient", "Sources must be tensors or variables, got %r." % (s,))
        tid = s._tid
        if tid not in ids:
            tid = 0
        source_ids.append(tid)
        if tid and _source_is_float(s):
            wanted.add(tid)
    if not wanted:
        return [None] * len(sources)
    entries = tape._entries
    live, reachable = _reachable(entries, wanted)
    if tape_replay.compiler_installed() and _state.trace is None and (
            seeds is None or _replayable_seeds(targets, seeds)) and not _any_recording():
        key = tape_replay.structure(tape, live, targets, source_ids, wanted)
        if key is not None:
            if seeds is not None:
                key += ("seeded",)

            def walk(entries, targets, seeds):
                return _propagate(entries, reachable, targets, source_ids, wanted, seeds)

            runner = tape_replay.compiled(key, live, targets, walk, seeds is not None)
            if runner is not None:
                if seeds is None and len(live) == len(entries):
                    # The next tape recording this structure follows a plan instead.
                    tape_replay.make_plan(tape, live, key, runner)
                return runner(live, targets, seeds or ())
    return _propagate(live, reachable, targets, source_ids, wanted, seeds)

def _any_recording():
    """True while some tape records (a backward pass must then run op by op, recorded)."""
    for t in _state.tapes:
        if t._recording:
            return True
    return False


def _reachable(entries, wanted):
    """The entries forward-reachable from the wanted sources (the others cannot matter),
    and the ids reachable: the wanted ones and the live entries' outputs."""
    reachable = set(wanted)
    live = []
    for e in entries:
        for tid in e.input_ids:
            if tid in reachable:
                reachable.update(e.output_ids)
                live.append(e)
                break
    return live, reachable


def _replayable_seeds(targets, seeds):
    """True when every cotangent is an eager tensor of its target's shape and dtype (so a
    compiled backward with the cotangents as inputs applies)."""
    for t, s in zip(targets, seeds):
        if s.__class__ is not Tensor or t.__class__ is not Tensor or \
                s._value.shape != t._value.shape or s._value.dtype != t._value.dtype or \
                s._device is not t._device:
            return False
    return True


def _identity_gradients(grads, targets, sources, seeds):
    """As TF, a target that is itself the source has gradient ones (or its seed), even when
    nothing was recorded: ``tape.gradient(v, v)`` is ones for an unwatched variable."""
    grads = list(grads)
    for i, src in enumerate(sources):
        if grads[i] is not None or not _source_is_float(src):
            continue
        for j, t in enumerate(targets):
            if t is src:
                seed = seeds[j] if seeds is not None else None
                grads[i] = _ones_like(_source_value(src)) if seed is None else seed
                break
    return grads


def _propagate(live, reachable, targets, source_ids, wanted, seeds):
    """Walks the live entries in reverse, accumulating cotangents by tensor id.

    Works on recorded entries and, when a backward pass is compiled for replay, on their
    copies with symbolic saved values (``eagerflow.tape_replay``). ``reachable`` is the set
    of ids :func:`_reachable` found for them.
    """
    from eagerflow.ops.math.arithmetic import ADD

    grads = {}
    for i, t in enumerate(targets):
        if t is None:
            continue
        tid = getattr(t, "_tid", 0)
        if not tid or tid not in reachable:
            continue
        seed = _ones_like(t) if seeds is None or seeds[i] is None else \
            convert_to_tensor(seeds[i], dtype=t.dtype)
        grads[tid] = seed if tid not in grads else dispatch.execute(ADD, (grads[tid], seed))
    for e in reversed(live):
        cots = [grads.get(tid) for tid in e.output_ids]
        if all(g is None for g in cots) or not e.differentiable:
            continue
        for tid in e.output_ids:
            if tid not in wanted:
                grads.pop(tid, None)  # this cotangent is complete: free it early
        if e.prim.single if e.prim is not None else len(cots) == 1:
            cotangent = cots[0]
        else:
            cotangent = tuple(g if g is not None else _zeros(meta)
                              for g, meta in zip(cots, e.output_meta))
        if e.backward is not None:
            in_grads = e.backward(cotangent)
        else:
            skip = None
            if e.prim.vjp_skips:
                skip = tuple(not (tid and f and tid in reachable)
                             for tid, f in zip(e.input_ids, e.input_float))
                if not any(skip):
                    skip = None
            in_grads = apply_vjp(e.prim, cotangent, e.inputs, e.out, e.attrs,
                                 e.input_shapes, skip)
        for tid, g, is_float in zip(e.input_ids, in_grads, e.input_float):
            if g is None or not tid or tid not in reachable or not is_float:
                continue
            prev = grads.get(tid)
            grads[tid] = g if prev is None else dispatch.execute(ADD, (prev, g))
    return [grads.get(tid) if tid in wanted else None for tid in source_ids]


def _ones_like(t):
    from eagerflow.ops.math.arithmetic import ONES_LIKE

    if t.__class__ is Tensor and t._value.shape == ():
        # The usual scalar loss: a cached constant one (seeds are never recorded or mutated).
        return dispatch._scalar(ONES_LIKE, 1, t._value.dtype, t._device)
    return dispatch.execute(ONES_LIKE, (t,))


def _zeros(meta):
    from eagerflow.tensor import wrap

    shape, np_dtype, device = meta
    if device is None or shape is None or None in shape:
        # A symbolic output (traced control flow, or dims known only at run time): its
        # backward takes None as zero.
        return None
    return wrap(device.backend.zeros(shape, dtype=np_dtype), device)


def _source_value(src):
    if getattr(src, "_is_variable", False):
        from eagerflow.tensor import wrap

        return wrap(src._value, src._device)
    return src


def _source_is_float(src):
    value = getattr(src, "_value", None)
    return value is not None and _FLOAT_DTYPES[value.dtype]
