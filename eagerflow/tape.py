"""GradientTape: reverse-mode automatic differentiation, with TF 2 semantics.

Every op call goes through ``eagerflow.ops.dispatch.execute``; while a tape is active and
an op reads a tensor the tape watches, dispatch hands the call to ``_record`` here, which
appends an entry holding only what the op's gradient rule declared it reads (``saves``).
``gradient`` walks the entries in reverse (record order is a topological order),
accumulates cotangents by tensor id, and reduces broadcast gradients in one place
(``eagerflow.ops.vjp.apply_vjp``). Gradient rules are ordinary op calls, so an outer tape
records them: nested tapes give higher-order derivatives.

A tape whose structure was seen before differentiates it with a compiled graph, and from
then on records it by following a plan rather than building entries; both read one
structure key of the tape's entries (``eagerflow.tape_replay``).

When a requested gradient is None the tape can say why (not watched, not connected, a
non-differentiable op on the path, an integer dtype, recording stopped): see
:meth:`GradientTape.explain_none` and the ``eagerflow.tape`` logger. The explanation is
computed only when a None is returned, so it costs nothing otherwise.

Example:
    >>> import eagerflow as ef
    >>> x = ef.constant(3.0)
    >>> with ef.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> tape.gradient(y, x).numpy()
    np.float32(6.0)
"""

from __future__ import annotations

import enum
import logging

from eagerflow import errors
from eagerflow import nest
from eagerflow import tape_backward
from eagerflow import tape_explain
from eagerflow import tape_jacobian
from eagerflow import tape_replay
from eagerflow.framework import context
from eagerflow.ops import dispatch
from eagerflow.tape_backward import _identity_gradients, _source_is_float, _source_value
from eagerflow.tape_entry import FLOAT_DTYPES as _FLOAT_DTYPES
from eagerflow.tape_entry import Entry as _Entry
from eagerflow.tape_entry import is_float as _is_float
from eagerflow.tape_explain import (
    _describe_source,
    _none_warnings_enabled,
    set_none_gradient_warnings,
)
from eagerflow.tensor import Tensor

__all__ = ["GradientTape", "UnconnectedGradients", "stop_recording_all",
           "set_none_gradient_warnings"]

_log = logging.getLogger("eagerflow.tape")
_next_id = context.new_id
_state = context.state


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for a source not connected to the target."""

    NONE = "none"
    ZERO = "zero"


def _assign_id(t):
    tid = t._tid
    if not tid:
        tid = _next_id()
        t._tid = tid
    return tid


def _record(tapes, prim, inputs, attrs, result):
    """Dispatch's recorder: adds an entry to each recording tape that watches an input."""
    entry = None
    for tape in tapes:
        if not tape._recording:
            continue
        ids = tape._ids
        for t in inputs:
            if t._tid in ids:
                break
        else:
            continue
        plan = tape._plan
        if plan is not False:  # following a plan (None: the tape's first op decides)
            if plan is None:
                plan = tape_replay.start(tape, prim, inputs)
            if plan and tape_replay.follow(tape, plan, prim, inputs, attrs, result):
                continue
        if entry is None:
            entry = _make_entry(prim, inputs, attrs, result)
        tape._recorded.append(entry)
        for tid in entry.output_ids:
            if tid not in ids:
                ids[tid] = len(ids)


def _append_entry(tape, entry):
    """Records an entry built elsewhere (a @function call, control flow, custom_gradient)."""
    tape_replay.materialize(tape)
    tape._recorded.append(entry)
    ids = tape._ids
    for tid in entry.output_ids:
        if tid not in ids:
            ids[tid] = len(ids)




_new = object.__new__


def _make_entry(prim, inputs, attrs, result):
    # The hot path of every recorded op: one- and two-input ops (nearly all) are unrolled,
    # and the entry's slots are filled here rather than through a constructor call.
    floats = _FLOAT_DTYPES
    e = _new(_Entry)
    n = len(inputs)
    if n == 2:
        a, b = inputs
        va = a._value
        vb = b._value
        e.input_ids = (a._tid, b._tid)
        e.input_shapes = (va.shape, vb.shape)
        e.input_float = (floats[va.dtype], floats[vb.dtype])
    elif n == 1:
        a = inputs[0]
        va = a._value
        e.input_ids = (a._tid,)
        e.input_shapes = (va.shape,)
        e.input_float = (floats[va.dtype],)
    else:
        e.input_ids = tuple([t._tid for t in inputs])
        e.input_shapes = tuple([t._value.shape for t in inputs])
        e.input_float = tuple([floats[t._value.dtype] for t in inputs])
    if prim.vjp is None:
        e.inputs = ()
        e.out = None
    else:
        keep = prim.saves_inputs
        if keep.__class__ is str:  # "all"
            e.inputs = tuple(inputs)
        elif not keep:
            e.inputs = (None,) * n
        elif n == 2:
            e.inputs = (a if 0 in keep else None, b if 1 in keep else None)
        else:
            e.inputs = tuple([t if i in keep else None for i, t in enumerate(inputs)])
        e.out = result if prim.saves_out else None
    if result.__class__ is tuple:
        out_ids = []
        meta = []
        for o in result:
            tid = o._tid
            if not tid:
                tid = o._tid = _next_id()
            out_ids.append(tid)
            meta.append((o._value.shape, o._value.dtype, o._device))
        e.output_ids = tuple(out_ids)
        e.output_meta = tuple(meta)
    else:
        tid = result._tid
        if not tid:
            tid = result._tid = _next_id()
        value = result._value
        e.output_ids = (tid,)
        e.output_meta = ((value.shape, value.dtype, result._device),)
    e.prim = prim
    e.attrs = attrs
    e.backward = None
    return e


def _variable_read(variable, tensor):
    """Called when a variable is read under an active tape: auto-watch and link ids."""
    tid = variable._tid or 0
    tensor._tid = tid
    for tape in _state.tapes:
        if tape._recording and tid not in tape._variables and \
                tape._watch_accessed_variables and variable.trainable:
            tape._watch_variable(variable)


dispatch.set_tape_recorder(_record)








context.variable_read_hook = _variable_read




class GradientTape:
    """Records operations for reverse-mode differentiation.

    Args:
        persistent: If True, ``gradient`` may be called several times (resources are
            kept until the tape is deleted); otherwise once.
        watch_accessed_variables: If True (default), trainable variables read while the
            tape is active are watched automatically.

    Example:
        >>> import eagerflow as ef
        >>> w = ef.Variable(2.0)
        >>> with ef.GradientTape() as tape:
        ...     loss = w * w * 3.0
        >>> tape.gradient(loss, w).numpy()
        np.float32(12.0)
    """

    # State flags, set on the instance when they change (a tape is built at every step).
    _recording = False
    _active = False
    _used = False
    _stopped = False  # was recording ever stopped (for None explanations)
    # The recording plan this tape follows (eagerflow.tape_replay): None until its first
    # recorded op decides, then a Plan, or False for ordinary entries.
    _plan = None
    _pos = 0  # the number of planned steps recorded

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._recorded = []  # entries, in record order
        self._saved = []  # while following a plan: the tensors its backward reads
        # Every tensor id this tape watches or recorded -> its tape-local number (the order
        # it was first seen in); plans describe wiring with these numbers.
        self._ids = {}
        self._variables = {}  # variable id -> variable, in watch order

    @property
    def _entries(self):
        """The recorded entries (steps followed by a plan are materialized first)."""
        if self._plan:
            tape_replay.materialize(self)
        return self._recorded

    # -- recording ------------------------------------------------------------------------
    def __enter__(self):
        if self._active:
            raise errors.FailedPreconditionError(
                None, None, "This GradientTape is already active; tapes cannot be re-entered.")
        self._active = True
        self._recording = True
        context.push_tape(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._active:
            context.pop_tape(self)
        self._active = False
        self._recording = False
        return False

    def watch(self, tensor):
        """Ensures ``tensor`` (a tensor, variable or nested structure of them) is traced.

        Raises:
            ValueError: If an element is not a tensor or variable.
        """
        for t in nest.flatten(tensor):
            if getattr(t, "_is_variable", False):
                self._watch_variable(t)
                continue
            if not isinstance(t, Tensor):
                if hasattr(t, "_tid") and hasattr(t, "_value"):  # symbolic tensors
                    pass
                else:
                    raise ValueError(
                        "GradientTape.watch takes tensors or variables, got %r. Convert "
                        "it first with eagerflow.convert_to_tensor." % (t,))
            if not _is_float(t._value.dtype) if hasattr(t._value, "dtype") else False:
                _log.debug("Watching a tensor of dtype %s: its gradient will be None",
                           t.dtype.name)
            tid = _assign_id(t)
            if tid not in self._ids:
                self._ids[tid] = len(self._ids)

    def _watch_variable(self, variable):
        tid = variable._tid
        if tid not in self._variables:
            self._variables[tid] = variable
            ids = self._ids
            if tid not in ids:
                ids[tid] = len(ids)

    def watched_variables(self):
        """The variables this tape watches, in the order they were first watched."""
        return tuple(self._variables.values())

    def stop_recording(self):
        """A context manager during which ops are not recorded on this tape.

        Example:
            >>> import eagerflow as ef
            >>> x = ef.constant(1.0)
            >>> with ef.GradientTape() as t:
            ...     t.watch(x)
            ...     with t.stop_recording():
            ...         y = x * 2.0
            >>> t.gradient(y, x) is None
            True
        """
        return _StopRecording(self)

    def reset(self):
        """Clears everything recorded so far (the tape stays active)."""
        self._recorded = []
        self._saved = []
        self._plan = False  # a reset tape records ordinary entries
        self._pos = 0
        self._ids = {}
        self._variables = {}
        self._used = False

    # -- differentiation ------------------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Computes the gradient of ``target`` with respect to ``sources``.

        Args:
            target: A tensor or nested structure of tensors; several targets are summed.
            sources: A tensor, variable or nested structure (list, tuple, dict) of them.
            output_gradients: Optional cotangents, one per target (default: ones).
            unconnected_gradients: ``"none"`` (default) or ``"zero"`` for unconnected sources.

        Returns:
            Gradients in the structure of ``sources``; None (or zeros) where unconnected.
            Integer and bool sources get None, as in TF.

        Raises:
            RuntimeError: If a non-persistent tape is used twice.
        """
        if self._used and not self._persistent:
            raise RuntimeError(
                "A non-persistent GradientTape can only be used to compute one set of "
                "gradients (or jacobians). Use GradientTape(persistent=True) to call "
                "gradient several times.")
        if unconnected_gradients is UnconnectedGradients.NONE:
            unconnected = unconnected_gradients
        else:
            unconnected = UnconnectedGradients(
                unconnected_gradients.value
                if isinstance(unconnected_gradients, UnconnectedGradients)
                else str(unconnected_gradients).lower())
        flat_sources = _flat(sources)
        flat_targets = _flat(target)
        seeds = None if output_gradients is None else nest.flatten(output_gradients)
        if seeds is not None and len(seeds) != len(flat_targets):
            raise errors.InvalidArgumentError(
                None, "gradient", "output_gradients has %d entries for %d targets."
                % (len(seeds), len(flat_targets)))
        was_recording = self._recording
        self._recording = False  # our own backward pass is not recorded on this tape
        try:
            grads = self._backward(flat_targets, flat_sources, seeds)
        finally:
            self._recording = was_recording and self._active
        self._used = True
        for g in grads:
            if g is None:
                grads = _identity_gradients(grads, flat_targets, flat_sources, seeds)
                break
        if not self._persistent:
            self._recorded = []
            self._saved = []
            self._plan = False
            self._pos = 0
        for g in grads:
            if g is None:  # (not ``None in grads``: tensors compare elementwise)
                grads = self._fill_none(grads, flat_targets, flat_sources, unconnected)
                break
        if sources.__class__ is list and len(grads) == len(sources):
            return grads
        return nest.pack_sequence_as(sources, grads)

    def _fill_none(self, grads, flat_targets, flat_sources, unconnected):
        """Zeros for unconnected gradients when asked; logs why the rest are None."""
        out = []
        none_indices = []
        for src, g in zip(flat_sources, grads):
            if g is None:
                none_indices.append(len(out))
                if unconnected is UnconnectedGradients.ZERO and _source_is_float(src):
                    from eagerflow.ops.math.arithmetic import zeros_like_t

                    g = zeros_like_t(_source_value(src))
            out.append(g)
        if none_indices and _none_warnings_enabled():
            for i in none_indices:
                _log.warning("Gradient for source %d (%s) is None: %s", i,
                             _describe_source(flat_sources[i]),
                             self._why_none(flat_targets, flat_sources[i]))
        return out

    def explain_none(self, target, source):
        """Says why ``gradient(target, source)`` is (or would be) None.

        Works on a persistent tape, or on any tape right after ``gradient`` for the
        sources it returned None for.

        Returns:
            A sentence naming the reason, or None when the gradient exists.

        Example:
            >>> import eagerflow as ef
            >>> x = ef.constant(1.0)
            >>> with ef.GradientTape(persistent=True) as t:
            ...     y = x * 2.0
            >>> "never watched" in t.explain_none(y, x)
            True
        """
        return self._why_none(nest.flatten(target), source)

    # The reverse walk, called as a method (no extra call on the hot path).
    _backward = tape_backward.backward

    # -- explanations -----------------------------------------------------------------------
    def _why_none(self, targets, source):
        return tape_explain.why_none(self, targets, source)

    # -- jacobians --------------------------------------------------------------------------
    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """The full Jacobian of ``target`` with respect to each source.

        The result for a source of shape S and a target of shape T has shape T + S.
        Computed with one backward pass per target element (each a one-hot cotangent),
        which is correct for every op; from the second row on the rows replay one compiled
        backward graph with the cotangent as its input. ``batch_jacobian`` is vectorized
        over the batch.

        Example:
            >>> import eagerflow as ef
            >>> x = ef.constant([1.0, 2.0])
            >>> with ef.GradientTape() as t:
            ...     t.watch(x)
            ...     y = x * x
            >>> t.jacobian(y, x).numpy().tolist()
            [[2.0, 0.0], [0.0, 4.0]]
        """
        return tape_jacobian.jacobian(self, target, sources, unconnected_gradients,
                                      parallel_iterations, experimental_use_pfor)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example Jacobians: target [B, ...] and source [B, ...] give [B, T..., S...].

        Assumes example b of the target depends only on example b of the source (as TF);
        one backward pass per target element covers the whole batch at once.

        Example:
            >>> import eagerflow as ef
            >>> x = ef.constant([[1.0, 2.0], [3.0, 4.0]])
            >>> with ef.GradientTape() as t:
            ...     t.watch(x)
            ...     y = x * x
            >>> t.batch_jacobian(y, x).numpy()[1].tolist()
            [[6.0, 0.0], [0.0, 8.0]]
        """
        return tape_jacobian.batch_jacobian(self, target, source, unconnected_gradients,
                                            parallel_iterations, experimental_use_pfor)




def _flat(structure):
    """``nest.flatten`` with a fast path for a leaf or a flat list/tuple of leaves."""
    cls = structure.__class__
    if cls is Tensor:
        return [structure]
    if cls is list or cls is tuple:
        for item in structure:
            c = item.__class__
            if c is not Tensor and not getattr(c, "_is_variable", False) and \
                    nest.is_nested(item):
                return nest.flatten(structure)
        return list(structure)
    if cls is dict:
        return nest.flatten(structure)
    if not nest.is_nested(structure):
        return [structure]
    return nest.flatten(structure)


















class _StopRecording:
    def __init__(self, tape):
        self._tape = tape

    def __enter__(self):
        if not self._tape._recording:
            raise ValueError("Tape.stop_recording() is only valid while the tape is recording.")
        self._tape._recording = False
        self._tape._stopped = True

    def __exit__(self, *exc):
        self._tape._recording = self._tape._active
        return False


class stop_recording_all:  # noqa: N801 - used like a function-style context manager
    """Pauses every active tape on this thread (used by custom_gradient)."""

    def __enter__(self):
        self._paused = [t for t in _state.tapes if t._recording]
        for t in self._paused:
            t._recording = False

    def __exit__(self, *exc):
        for t in self._paused:
            t._recording = t._active
        return False
