"""Why a gradient is None: the reason a tape gives (``GradientTape.explain_none``) and the
optional warning that names it whenever ``gradient`` returns None.

The reasons: the source is not a float, was never watched (or is a variable not read, not
trainable), a non-differentiable op sits on every path, recording was stopped, the
records were released, or nothing connects the two. The explanation is computed only
when a None is returned, so it costs nothing otherwise.
"""

from __future__ import annotations

from eagerflow.tape_backward import _source_is_float
from eagerflow.tape_entry import is_float as _is_float

__all__ = ["why_none", "set_none_gradient_warnings"]

_warn_none = [False]


def why_none(tape, targets, source):
    """The reason ``tape.gradient(targets, source)`` is None, or None when it is not."""
    if not _source_is_float(source):
        dt = getattr(source, "dtype", None)
        return ("the source has dtype %s: only floating and complex tensors have "
                "gradients; cast it to a float first" % getattr(dt, "name", dt))
    tid = getattr(source, "_tid", 0)
    if not tid or tid not in tape._ids:
        if getattr(source, "_is_variable", False):
            if not source.trainable:
                return ("the variable %r is not trainable and was not watched: call "
                        "tape.watch(v)" % source.name)
            if not tape._watch_accessed_variables:
                return ("the tape was created with watch_accessed_variables=False and "
                        "the variable %r was never watched" % source.name)
            return ("the variable %r was not read while the tape was recording"
                    % source.name)
        return ("the source was never watched: call tape.watch(x) (constants are not "
                "watched automatically; trainable variables are)")
    target_ids = {getattr(t, "_tid", 0) for t in targets if t is not None}
    # Reachability with and without non-differentiable edges.
    reach_all = {tid}
    blocking = []
    reach_diff = {tid}
    for e in tape._entries:
        if any(i in reach_all for i in e.input_ids):
            reach_all.update(e.output_ids)
        diff_inputs = [i for i, f in zip(e.input_ids, e.input_float) if i in reach_diff and f]
        if diff_inputs:
            float_out = [o for o, meta in zip(e.output_ids, e.output_meta)
                         if _is_float(meta[1])]
            if e.differentiable and float_out:
                reach_diff.update(float_out)
            else:
                blocking.append(e)
    if target_ids & reach_diff:
        return None
    if target_ids & reach_all:
        names = sorted({e.name for e in blocking})
        return ("a non-differentiable op is on every path from the source to the target "
                "(%s); integer outputs and ops such as argmax, comparisons, round and "
                "stop_gradient have no gradient" % ", ".join(names or ["integer cast"]))
    if tape._stopped:
        return ("the target is not connected to the source on this tape; recording was "
                "stopped (stop_recording) for part of the computation, which may be why")
    if not tape._entries and not tape._persistent and tape._used:
        return "the tape's records were released by the previous gradient call"
    return ("the target is not connected to the source: no recorded operation leads from "
            "the source to the target (was the target computed outside the tape, or from "
            "a copy of the source?)")

def _describe_source(src):
    name = getattr(src, "name", None) if getattr(src, "_is_variable", False) else None
    shape = list(getattr(src._value, "shape", ())) if hasattr(src, "_value") else "?"
    return "variable %r" % name if name else "tensor of shape %s" % (shape,)


def set_none_gradient_warnings(enabled):
    """Logs a warning naming the reason whenever ``gradient`` returns None (default off).

    Example:
        >>> import eagerflow as ef
        >>> ef.autodiff.set_none_gradient_warnings(False)
    """
    _warn_none[0] = bool(enabled)


def _none_warnings_enabled():
    return _warn_none[0]
