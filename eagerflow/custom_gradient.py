"""``custom_gradient`` and ``recompute_grad``: user-defined backward passes.

Example:
    >>> import eagerflow as ef
    >>> @ef.custom_gradient
    ... def clip_grad(x):
    ...     def grad(dy):
    ...         return ef.clip_by_value(dy, -1.0, 1.0)
    ...     return ef.identity(x), grad
    >>> x = ef.constant(2.0)
    >>> with ef.GradientTape() as t:
    ...     t.watch(x)
    ...     y = clip_grad(x) * 10.0
    >>> t.gradient(y, x).numpy()
    np.float32(1.0)
"""

from __future__ import annotations

import functools
import inspect

from eagerflow import errors, nest
from eagerflow.framework import context
from eagerflow.tape import GradientTape, stop_recording_all
from eagerflow.tape_entry import Entry as _Entry
from eagerflow.tape_entry import is_float as _is_float
from eagerflow.tensor import Tensor, wrap

__all__ = ["custom_gradient", "recompute_grad"]


def _accepts_variables(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "variables" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


# Installed by eagerflow.function (a layer above): while a function is traced, a
# custom_gradient call goes there and becomes a graph node whose backward is a sub-graph, so
# the rule is part of the graph (and of a saved function), not only of this process.
_traced_call = None


def set_traced_call(fn):
    """Installs ``fn(f, args, kwargs) -> result``, which runs a call while tracing."""
    global _traced_call
    _traced_call = fn


def custom_gradient(f=None):
    """Decorates ``f(*x) -> (y, grad_fn)`` so that tapes use ``grad_fn`` for its gradient.

    ``grad_fn(*dy)`` returns one gradient per positional tensor input of ``f``. When ``f``
    reads trainable variables, ``grad_fn(*dy, variables=...)`` must accept the
    ``variables`` keyword and return ``(input_grads, variable_grads)``; otherwise calling
    ``f`` under a tape raises (TF would fail later or ignore the variables). Keyword
    arguments of ``f`` are passed through and are not differentiated.

    Inside a traced function ``grad_fn`` is traced once, with the forward pass, into a
    sub-graph of the function: the rule then travels with the graph, so a function saved
    (``saved_model.save``) and loaded again still differentiates with it.

    Args:
        f: The function to decorate.

    Returns:
        The decorated function.

    Raises:
        TypeError: If ``f`` reads variables and ``grad_fn`` has no ``variables`` parameter.
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        if context.state.trace is not None and _traced_call is not None:
            return _traced_call(f, args, kwargs)
        recording = [t for t in context.state.tapes if t._recording]
        if not recording:
            result, _ = f(*args, **kwargs)
            return result
        return _call_with_custom_gradient(f, args, kwargs, recording)

    return wrapped


class Call:
    """One call of a custom-gradient function: what it returned and what it differentiates.

    Attributes:
        result: ``f``'s first result (the outputs, any structure).
        grad_fn: ``f``'s second result.
        all_args: The positional, then keyword, arguments.
        tensor_args: ``(position in all_args, argument)`` for each tensor or variable
            argument: the inputs ``grad_fn`` returns gradients for.
        variables: Variables ``f`` read that are not arguments (``grad_fn(variables=)``).
    """

    def __init__(self, f, args, kwargs):
        with stop_recording_all():
            with GradientTape(watch_accessed_variables=True) as probe:
                self.result, self.grad_fn = f(*args, **kwargs)
        # Inputs are the tensors and variables passed positionally or by keyword (a keyword
        # call applies the rule too; TF silently drops it there). A variable passed as an
        # argument is an input, as in TF; only variables read otherwise go to `variables=`.
        self.all_args = list(args) + list(kwargs.values())
        argument_ids = {id(a) for a in self.all_args if getattr(a, "_is_variable", False)}
        self.variables = [v for v in probe.watched_variables() if id(v) not in argument_ids]
        if self.variables and not _accepts_variables(self.grad_fn):
            raise TypeError(
                "@custom_gradient function %s reads trainable variables %s, so its grad_fn "
                "must accept a `variables` keyword argument and return (input_grads, "
                "variable_grads)." % (getattr(f, "__name__", f),
                                      [v.name for v in self.variables]))
        self.tensor_args = [(i, a) for i, a in enumerate(self.all_args)
                            if isinstance(a, Tensor) or getattr(a, "_is_variable", False)]
        self.outputs = nest.flatten(self.result)
        for o in self.outputs:
            if not isinstance(o, Tensor):
                raise errors.InvalidArgumentError(
                    None, "custom_gradient", "custom_gradient outputs must be tensors, got %r"
                    % (o,))

    def gradients(self, dys):
        """``grad_fn`` on the output cotangents ``dys``: one gradient (or None) per tensor
        argument, then one per variable of ``variables``."""
        variables = self.variables
        if variables:
            grads = self.grad_fn(*dys, variables=variables)
            if not isinstance(grads, (tuple, list)) or len(grads) != 2:
                raise errors.InvalidArgumentError(
                    None, "custom_gradient", "grad_fn with variables must return "
                    "(input_grads, variable_grads)")
            input_grads, var_grads = grads
        else:
            input_grads, var_grads = self.grad_fn(*dys), []
        input_grads = list(nest.flatten(input_grads)) if isinstance(
            input_grads, (list, tuple)) else [input_grads]
        n_all, n_args = len(self.all_args), len(self.tensor_args)
        if len(input_grads) != n_all and len(input_grads) == n_args:
            by_pos = input_grads
        elif len(input_grads) == n_all:
            by_pos = [input_grads[i] for i, _ in self.tensor_args]
        else:
            raise errors.InvalidArgumentError(
                None, "custom_gradient", "grad_fn returned %d gradients for %d inputs"
                % (len(input_grads), n_all))
        var_grads = list(nest.flatten(var_grads)) if var_grads else []
        if len(var_grads) not in (0, len(variables)):
            raise errors.InvalidArgumentError(
                None, "custom_gradient", "grad_fn returned %d variable gradients for %d "
                "variables %s" % (len(var_grads), len(variables),
                                  [v.name for v in variables]))
        return tuple(by_pos) + tuple(var_grads or [None] * len(variables))

    def watch_variables(self, tapes):
        """The reads happened while tapes were paused: tapes that watch accessed variables
        watch them now."""
        for tape in tapes:
            if tape._watch_accessed_variables:
                for v in self.variables:
                    tape._watch_variable(v)
                for _, a in self.tensor_args:
                    if getattr(a, "_is_variable", False) and a.trainable:
                        tape._watch_variable(a)


def _call_with_custom_gradient(f, args, kwargs, tapes):
    call = Call(f, args, kwargs)
    # A fresh identity of each output, with its own id.
    outputs = [wrap(o._value, o._device) for o in call.outputs]
    input_objs = [a for _, a in call.tensor_args] + call.variables

    def backward(cotangent):
        return call.gradients(cotangent if isinstance(cotangent, tuple) else (cotangent,))

    call.watch_variables(tapes)
    record(tapes, input_objs, outputs, backward)
    return nest.pack_sequence_as(call.result, outputs)


def record(tapes, sources, outputs, backward, devices=True):
    """Records ``backward`` on each recording tape of ``tapes`` that watches a source.

    Args:
        tapes: Candidate tapes.
        sources: Tensors and variables, one per gradient ``backward`` returns.
        outputs: The output tensors (fresh ids are given to them).
        backward: ``backward(cotangents) -> gradients``.
        devices: Whether the tape may build zeros for missing cotangents (False for
            symbolic outputs, whose shapes may be unknown: ``backward`` then gets None).
    """
    from eagerflow.tape import _append_entry, _assign_id

    entry = _Entry(
        None, tuple(o._tid for o in sources),
        tuple(o._value.shape for o in sources),
        tuple(_is_float(o._value.dtype) for o in sources), None, None, {},
        (), tuple((o._value.shape, o._value.dtype, o._device if devices else None)
                  for o in outputs),
        backward=backward)
    entry.output_ids = tuple(_assign_id(o) for o in outputs)
    for tape in tapes:
        if tape._recording and any(i and i in tape._ids for i in entry.input_ids):
            _append_entry(tape, entry)


def recompute_grad(f):
    """Trades compute for memory: ``f``'s activations are recomputed during backprop.

    The forward pass keeps only ``f``'s inputs; the backward pass runs ``f`` again under a
    tape and differentiates that.

    Example:
        >>> import eagerflow as ef
        >>> block = ef.recompute_grad(lambda x: ef.tanh(x) * x)
        >>> x = ef.constant(0.5)
        >>> with ef.GradientTape() as t:
        ...     t.watch(x)
        ...     y = block(x)
        >>> round(float(t.gradient(y, x)), 4)
        0.8553
    """

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        @custom_gradient
        def inner(*inner_args):
            result = f(*inner_args, **kwargs)

            def grad_fn(*dys, variables=None):
                with GradientTape() as tape:
                    tape.watch([a for a in inner_args if isinstance(a, Tensor)])
                    again = f(*inner_args, **kwargs)
                sources = [a for a in inner_args if isinstance(a, Tensor)] + list(
                    variables or [])
                grads = tape.gradient(again, sources, output_gradients=list(dys))
                n = len(sources) - len(variables or [])
                if variables:
                    return grads[:n], grads[n:]
                return grads[:n]

            return result, grad_fn

        return inner(*args)

    return wrapped
