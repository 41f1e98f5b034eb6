"""Recording plans: a tape that repeats a known structure records no entries.

A training loop records the same ops on a fresh tape at every step, and from the second
step on its backward pass replays one compiled graph (``eagerflow.function.backward_replay``).
Building an entry per op and then a structure key per gradient call is then pure overhead:
the structure is already known. So when a gradient replays a compiled backward, the tape's
entries are turned into a plan: per op its primitive, attrs, input wiring (in the tape's
own numbering of the tensors it tracks), input shapes, saved dtypes and output metadata.

The next tape whose first recorded op is the plan's first op (the same primitive on inputs
of the same shapes) follows the plan: each op is checked against the next step (which
costs less than building its entry) and only the tensors the gradient rules read are
kept, in the order the compiled backward takes them.
A gradient that asks for exactly the planned targets and sources runs the compiled graph
on them directly. Anything else (an op that differs, a custom-gradient entry, another
request, an explanation of a None gradient) first materializes the entries the plan stood
for, so every other path sees an ordinary tape.

Example:
    >>> import eagerflow as ef
    >>> w = ef.Variable([1.0, 2.0])
    >>> for _ in range(3):  # the third tape follows the plan made by the second
    ...     with ef.GradientTape() as tape:
    ...         loss = ef.reduce_sum(w * w)
    ...     grad = tape.gradient(loss, [w])[0]
    >>> grad.numpy().tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

from eagerflow.framework import context
from eagerflow.tape_entry import Entry
from eagerflow.tensor import Tensor

__all__ = ["Plan", "make_plan", "start", "follow", "materialize", "run"]

_next_id = context.new_id
_new = object.__new__

# (first primitive, its input shapes...) -> the most recent plan starting with that op.
_PLANS = {}
_MAX_PLANS = 64


class _Step:
    """What one recorded op must look like, and what of it the backward pass keeps."""

    __slots__ = ("prim", "attrs", "wiring", "shapes", "keep", "keep_dtypes", "all_inputs",
                 "saves_out", "out_local", "signature", "device", "floats", "meta")


class Plan:
    """The recorded structure of a tape whose backward pass is compiled.

    Attributes:
        steps: One ``_Step`` per recorded op, in order.
        n: The number of steps.
        target_local: The tape-local number of the one target.
        source_locals: The tape-local numbers of the sources, in request order.
        run_flat: The compiled backward: ``run_flat(saved_values + [target_value])``.
    """

    __slots__ = ("steps", "n", "target_local", "source_locals", "run_flat")


def make_plan(tape, entries, target, sources, runner):
    """Registers a plan for ``entries`` when they qualify (every entry is live, an ordinary
    single-output primitive); returns it or None.

    Whether a structure qualifies depends only on what its replay key describes, so a
    refusal is remembered on the compiled runner and not worked out again.
    """
    run_flat = getattr(runner, "flat", None)
    if run_flat is None or runner.no_plan or not entries:
        return None
    plan = _plan(tape, entries, target, sources, run_flat)
    if plan is None:
        runner.no_plan = True
        return None
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    first = plan.steps[0]
    _PLANS[(first.prim,) + first.shapes] = plan
    return plan


def _plan(tape, entries, target, sources, run_flat):
    ids = tape._ids
    target_local = ids.get(getattr(target, "_tid", 0), -1)
    if target_local < 0:
        return None
    steps = []
    for e in entries:
        prim = e.prim
        if prim is None or e.backward is not None or len(e.output_ids) != 1:
            return None
        s = _new(_Step)
        s.prim = prim
        s.attrs = e.attrs
        s.wiring = tuple([ids.get(tid, -1) if tid else -1 for tid in e.input_ids])
        s.shapes = e.input_shapes
        s.keep = tuple([i for i, t in enumerate(e.inputs) if t is not None])
        s.keep_dtypes = tuple([e.inputs[i]._value.dtype for i in s.keep])
        # Every input kept (the same tuple object, so that follow tests it with ``is``).
        s.all_inputs = s.keep if len(s.keep) == len(e.inputs) else None
        s.saves_out = e.out is not None
        s.out_local = ids.get(e.output_ids[0], -1)
        shape, dtype, device = e.output_meta[0]
        if s.out_local < 0 or device is None:
            return None
        s.device = device
        # What follow() compares: input wiring and shapes, output shape, dtype and device,
        # and the number the output gets on the tape.
        s.signature = s.wiring + tuple(s.shapes) + (shape, dtype, device, s.out_local)
        s.floats = e.input_float
        s.meta = e.output_meta
        steps.append(s)
    source_locals = tuple([ids.get(getattr(s, "_tid", 0) or 0, -1) for s in sources])
    if -1 in source_locals:  # an unwatched source: left to the checks of the ordinary path
        return None
    plan = _new(Plan)
    plan.steps = steps
    plan.n = len(steps)
    plan.target_local = target_local
    plan.source_locals = source_locals
    plan.run_flat = run_flat
    return plan


def start(tape, prim, inputs):
    """Decides at a tape's first recorded op whether it follows a plan (sets ``tape._plan``
    to the plan, or False). Plans are found by their first op and its input shapes, so
    that steps which alternate (a GAN's two losses) each find their own."""
    if len(inputs) == 2:
        key = (prim, inputs[0]._value.shape, inputs[1]._value.shape)
    else:
        key = (prim,) + tuple([t._value.shape for t in inputs])
    plan = _PLANS.get(key, False)
    tape._plan = plan
    return plan


def follow(tape, plan, prim, inputs, attrs, result):
    """Records one op as the tape's next planned step; False (after materializing the
    steps so far) when it is not that step."""
    k = tape._pos
    if k == plan.n or result.__class__ is not Tensor:  # several outputs, or symbolic ones
        return abandon(tape)
    s = plan.steps[k]
    if s.prim is not prim or (s.attrs is not attrs and not _same_attrs(s.attrs, attrs)):
        return abandon(tape)
    ids = tape._ids
    get = ids.get
    out = result._value
    tid = result._tid
    n = len(inputs)
    # One tuple comparison checks the wiring, the shapes, the output and the numbering
    # (tuples compare items by identity first, cheaper than numpy's dtype ==).
    if n == 2:
        a, b = inputs
        va = a._value
        vb = b._value
        found = (get(a._tid, -1), get(b._tid, -1), va.shape, vb.shape, out.shape, out.dtype,
                 result._device, len(ids))
    elif n == 1:
        a = inputs[0]
        va = a._value
        found = (get(a._tid, -1), va.shape, out.shape, out.dtype, result._device, len(ids))
    else:
        found = tuple([get(t._tid, -1) for t in inputs]) + tuple(
            [t._value.shape for t in inputs]) + (out.shape, out.dtype, result._device, len(ids))
    if found != s.signature or (tid and tid in ids):
        return abandon(tape)
    keep = s.keep
    if keep:
        if keep is s.all_inputs:
            if n == 2:
                if (va.dtype, vb.dtype) != s.keep_dtypes:
                    return abandon(tape)
            elif n == 1:
                if (va.dtype,) != s.keep_dtypes:
                    return abandon(tape)
            elif tuple([t._value.dtype for t in inputs]) != s.keep_dtypes:
                return abandon(tape)
            kept = inputs
        else:
            kept = tuple([inputs[i] for i in keep])
            if tuple([t._value.dtype for t in kept]) != s.keep_dtypes:
                return abandon(tape)
        saved = tape._saved
        saved.extend(kept)
        if s.saves_out:
            saved.append(result)
    elif s.saves_out:
        tape._saved.append(result)
    if not tid:
        tid = result._tid = _next_id()
    ids[tid] = s.out_local
    tape._pos = k + 1
    return True


def _same_attrs(planned, attrs):
    try:
        return planned == attrs
    except Exception:  # noqa: BLE001 - an attr that cannot be compared (an array): differs
        return False


def abandon(tape):
    materialize(tape)
    return False


def materialize(tape):
    """Turns the steps a tape followed into ordinary entries; the tape stops following."""
    plan = tape._plan
    tape._plan = False
    if not plan or not tape._pos:
        return
    tids = list(tape._ids)  # the tape-local number of a tensor is its position here
    saved = iter(tape._saved)
    entries = []
    for s in plan.steps[:tape._pos]:
        e = _new(Entry)
        e.prim = s.prim
        e.attrs = s.attrs
        e.input_ids = tuple([tids[w] if w >= 0 else 0 for w in s.wiring])
        e.input_shapes = s.shapes
        e.input_float = s.floats
        if s.prim.vjp is None:
            e.inputs = ()  # as recorded: an op without a gradient rule keeps nothing
        else:
            inputs = [None] * len(s.wiring)
            for i in s.keep:
                inputs[i] = next(saved)
            e.inputs = tuple(inputs)
        e.out = next(saved) if s.saves_out else None
        e.output_ids = (tids[s.out_local],)
        e.output_meta = s.meta
        e.backward = None
        entries.append(e)
    tape._recorded[:0] = entries
    tape._saved = []
    tape._pos = 0


def run(tape, plan, targets, sources):
    """The gradients when this request is the plan's (one target and the planned sources,
    with every step recorded); None otherwise."""
    if tape._pos != plan.n or len(targets) != 1:
        return None
    get = tape._ids.get
    target = targets[0]
    if get(getattr(target, "_tid", 0), -1) != plan.target_local:
        return None
    if tuple([get(getattr(s, "_tid", 0), -1) for s in sources]) != plan.source_locals:
        return None
    args = [t._value for t in tape._saved]
    args.append(target._value)
    return plan.run_flat(args)
