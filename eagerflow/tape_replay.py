"""The tape's fast path: one structure key, the compiled backward it selects, and plans.

A training loop records the same ops on a fresh tape at every step. Three things make such
a loop cheap, and all three read one description of a tape's structure, the **structure
key** built by :func:`structure` from the tape's own entries:

- **Compiled backward.** The second time a structure is differentiated, its backward pass
  is traced once into a graph (by the compiler that ``eagerflow.function`` installs with
  :func:`set_backward_compiler`; the gradient rules run on copies of the tape's entries
  whose saved values are symbolic) and later tapes of that structure run the graph on
  their own saved arrays.
- **Recording plans.** Once a structure replays, building an entry per op is overhead:
  the structure is known. The key's steps become a plan, registered under its first op and
  that op's input shapes (so alternating steps, a GAN's two losses, each find their own).
  The next tape whose first recorded op matches checks each op against the next step's
  signature (cheaper than building its entry) and keeps only the tensors the gradient
  rules read, in the order the compiled backward takes them.
- **Direct runs.** A gradient that asks for exactly the planned target and sources runs
  the compiled graph on the kept tensors directly. Anything else (an op that differs, a
  custom-gradient entry, another request, an explanation of a None gradient) first
  materializes the entries the plan stood for, so every other path sees an ordinary tape.

One step of the key describes one entry: its primitive, its attrs, the dtypes of the inputs
it saves, and its **signature**: input wiring and shapes, then per output its shape, dtype,
device and number. Wiring and numbers are the tape's own numbering of the tensors it tracks
(``tape._ids``, in the order first seen), so a plan compares a new op with one tuple
comparison. (A rule can only depend on an input's dtype if it saves that input, so saved
dtypes are enough; which inputs and whether the output are saved follows from the
primitive.)

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
from eagerflow.tensor import Tensor

__all__ = ["Plan", "set_backward_compiler", "structure", "compiled", "make_plan", "start",
           "follow", "materialize", "run"]

_next_id = context.new_id
_new = object.__new__

# Installed by eagerflow.function (the tape sits below tracing): see set_backward_compiler.
_compiler = None
# Structure key -> its compiled backward; structures seen once are differentiated eagerly.
_COMPILED = {}
_SEEN = {}
_MAX_COMPILED = 64
# (first primitive, its input shapes...) -> the most recent plan starting with that op.
_PLANS = {}
_MAX_PLANS = 64


def set_backward_compiler(compiler):
    """Installs the compiler of recurring backward passes (None turns replay off).

    Args:
        compiler: ``compiler(entries, targets, backward, seeded) -> runner``: traces
            ``backward(entries, targets, seeds)`` (the tape's reverse walk) on copies of
            the entries whose saved values are symbolic, and returns a runner:
            ``runner(entries, targets, seeds)`` gives the gradients from real entries and
            ``runner.flat(arrays)`` from the saved arrays, targets and seeds in order.

    Returns:
        The compiler installed before.
    """
    global _compiler
    previous, _compiler = _compiler, compiler
    return previous


def compiler_installed():
    return _compiler is not None


def structure(tape, live, targets, source_ids, wanted):
    """The structure key of a tape's live entries, or None when they do not replay (a
    custom gradient, differentiated eagerly).

    Two tapes with equal keys run the same backward graph. Attrs enter as their items; a
    key holding an unhashable attr fails at lookup, which :func:`compiled` treats as "no
    replay".
    """
    get = tape._ids.get
    steps = []
    for e in live:
        prim = e.prim
        if prim is None or e.backward is not None:
            return None
        input_ids = e.input_ids
        inputs = e.inputs
        # One- and two-input ops (nearly all) are unrolled.
        if len(input_ids) == 2:
            wiring = (get(input_ids[0], -1), get(input_ids[1], -1))
        elif len(input_ids) == 1:
            wiring = (get(input_ids[0], -1),)
        else:
            wiring = tuple([get(i, -1) for i in input_ids])
        if len(inputs) == 2:
            a, b = inputs
            if a is None:
                saved = () if b is None else (b._value.dtype,)
            else:
                saved = (a._value.dtype,) if b is None else (a._value.dtype, b._value.dtype)
        else:
            saved = tuple([t._value.dtype for t in inputs if t is not None])
        if len(e.output_ids) == 1:
            outs = e.output_meta[0] + (get(e.output_ids[0], -1),)
        else:
            outs = ()
            for meta, tid in zip(e.output_meta, e.output_ids):
                outs += meta + (get(tid, -1),)
        attrs = e.attrs
        steps.append((prim, tuple(attrs.items()) if attrs else None, saved,
                      wiring + e.input_shapes + outs))
    return (tuple(steps), tuple([get(getattr(t, "_tid", 0), -1) for t in targets]),
            tuple([get(i, -1) if i in wanted else -1 for i in source_ids]))


def compiled(key, live, targets, backward, seeded):
    """The compiled backward for this structure key, or None while it is differentiated
    eagerly (the first sighting of a structure, or a key that cannot be hashed)."""
    try:
        runner = _COMPILED.get(key)
    except TypeError:  # an unhashable attr: this structure is differentiated eagerly
        return None
    if runner is not None:
        return runner
    count = _SEEN.get(key, 0) + 1
    if len(_SEEN) > 1024:
        _SEEN.clear()
    _SEEN[key] = count
    if count < 2:
        return None
    runner = _compiler(live, targets, backward, seeded)
    if len(_COMPILED) >= _MAX_COMPILED:
        _COMPILED.clear()
    _COMPILED[key] = runner
    runner.no_plan = False
    return runner


class _Step:
    """One step of a plan: the key's step, and what the recording fast path reads of it."""

    __slots__ = ("prim", "attrs", "signature", "keep", "keep_dtypes", "all_inputs",
                 "saves_out", "out_local", "template")


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


def make_plan(tape, entries, key, runner):
    """Registers the plan of a keyed structure when it qualifies (every entry is live, an
    ordinary single-output primitive, one target); returns it or None.

    Whether a structure qualifies depends only on its key, so a refusal is remembered on
    the compiled runner and not worked out again.
    """
    if runner.no_plan or not entries:
        return None
    plan = _plan(tape, entries, key, runner.flat)
    if plan is None:
        runner.no_plan = True
        return None
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    first = plan.steps[0]
    _PLANS[(first.prim,) + first.template.input_shapes] = plan
    return plan


def _plan(tape, entries, key, run_flat):
    step_keys, target_locals, source_locals = key
    if len(target_locals) != 1 or target_locals[0] < 0 or -1 in source_locals:
        return None  # an unwatched source: left to the checks of the ordinary path
    get = tape._ids.get
    steps = []
    for e, (prim, _, saved, signature) in zip(entries, step_keys):
        if len(e.output_ids) != 1 or e.output_meta[0][2] is None or signature[-1] < 0:
            return None  # several outputs, or a symbolic one
        s = _new(_Step)
        s.prim = prim
        s.attrs = e.attrs
        s.signature = signature
        s.keep = tuple([i for i, t in enumerate(e.inputs) if t is not None])
        s.keep_dtypes = saved
        # Every input kept (the same tuple object, so that follow tests it with ``is``).
        s.all_inputs = s.keep if len(s.keep) == len(e.inputs) else None
        s.saves_out = e.out is not None
        s.out_local = signature[-1]
        # The entry in the tape's numbering, without values: materialize rebinds it.
        s.template = e.rebind(tuple([get(i, -1) if i else -1 for i in e.input_ids]),
                              None, None, (s.out_local,))
        steps.append(s)
    plan = _new(Plan)
    plan.steps = steps
    plan.n = len(steps)
    plan.target_local = target_locals[0]
    plan.source_locals = source_locals
    plan.run_flat = run_flat
    return plan


def start(tape, prim, inputs):
    """Decides at a tape's first recorded op whether it follows a plan (sets ``tape._plan``
    to the plan, or False)."""
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
    # The op's signature, built as structure() builds it from an entry (one output, which
    # gets the next number), and compared in one tuple comparison (tuples compare items by
    # identity first, cheaper than numpy's dtype ==).
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
        t = s.template
        if s.prim.vjp is None:
            inputs = ()  # as recorded: an op without a gradient rule keeps nothing
        else:
            inputs = [None] * len(t.input_ids)
            for i in s.keep:
                inputs[i] = next(saved)
            inputs = tuple(inputs)
        out = next(saved) if s.saves_out else None
        entries.append(t.rebind(tuple([tids[w] if w >= 0 else 0 for w in t.input_ids]),
                                inputs, out, (tids[s.out_local],)))
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
