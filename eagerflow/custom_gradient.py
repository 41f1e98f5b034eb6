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
from eagerflow.tape import GradientTape, _Entry, _is_float, stop_recording_all
from eagerflow.tensor import Tensor, wrap

__all__ = ["custom_gradient", "recompute_grad"]


def _accepts_variables(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "variables" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def custom_gradient(f=None):
    """Decorates ``f(*x) -> (y, grad_fn)`` so that tapes use ``grad_fn`` for its gradient.

    ``grad_fn(*dy)`` returns one gradient per positional tensor input of ``f``. When ``f``
    reads trainable variables, ``grad_fn(*dy, variables=...)`` must accept the
    ``variables`` keyword and return ``(input_grads, variable_grads)``; otherwise calling
    ``f`` under a tape raises (TF would fail later or ignore the variables). Keyword
    arguments of ``f`` are passed through and are not differentiated.

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
        recording = [t for t in context.state.tapes if t._recording]
        if not recording:
            result, _ = f(*args, **kwargs)
            return result
        return _call_with_custom_gradient(f, args, kwargs, recording)

    return wrapped


def _call_with_custom_gradient(f, args, kwargs, tapes):
    with stop_recording_all():
        with GradientTape(watch_accessed_variables=True) as probe:
            result, grad_fn = f(*args, **kwargs)
    # Inputs are the tensors and variables passed positionally or by keyword (a keyword call
    # applies the rule too; TF silently drops it there). A variable passed as an argument is
    # an input, as in TF; only variables the function reads otherwise go to `variables=`.
    all_args = list(args) + list(kwargs.values())
    argument_ids = {id(a) for a in all_args if getattr(a, "_is_variable", False)}
    variables = [v for v in probe.watched_variables() if id(v) not in argument_ids]
    if variables and not _accepts_variables(grad_fn):
        raise TypeError(
            "@custom_gradient function %s reads trainable variables %s, so its grad_fn must "
            "accept a `variables` keyword argument and return (input_grads, variable_grads)."
            % (getattr(f, "__name__", f), [v.name for v in variables]))
    tensor_args = [(i, a) for i, a in enumerate(all_args)
                   if isinstance(a, Tensor) or getattr(a, "_is_variable", False)]
    flat_out = nest.flatten(result)
    outputs = []
    tracing = context.state.trace is not None
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise errors.InvalidArgumentError(
                None, "custom_gradient", "custom_gradient outputs must be tensors, got %r" % o)
        if tracing:
            # A symbolic output needs a graph node of its own (an Identity), not a copy of
            # its abstract value, or the graph would lose the connection to it.
            from eagerflow.ops.array.shape_ops import identity

            with stop_recording_all():
                outputs.append(identity(o))
        else:
            outputs.append(wrap(o._value, o._device))  # a fresh identity with its own id
    input_objs = [a for _, a in tensor_args] + variables
    n_args = len(tensor_args)

    def backward(cotangent):
        dys = cotangent if isinstance(cotangent, tuple) else (cotangent,)
        if variables:
            grads = grad_fn(*dys, variables=variables)
            if not isinstance(grads, (tuple, list)) or len(grads) != 2:
                raise errors.InvalidArgumentError(
                    None, "custom_gradient", "grad_fn with variables must return "
                    "(input_grads, variable_grads)")
            input_grads, var_grads = grads
        else:
            input_grads, var_grads = grad_fn(*dys), []
        input_grads = list(nest.flatten(input_grads)) if isinstance(
            input_grads, (list, tuple)) else [input_grads]
        if len(input_grads) != len(all_args) and len(input_grads) == n_args:
            by_pos = input_grads
        elif len(input_grads) == len(all_args):
            by_pos = [input_grads[i] for i, _ in tensor_args]
        else:
            raise errors.InvalidArgumentError(
                None, "custom_gradient", "grad_fn returned %d gradients for %d inputs"
                % (len(input_grads), len(all_args)))
        return tuple(by_pos) + tuple(var_grads or [None] * len(variables))

    entry = _Entry(
        None, tuple(o._tid for o in input_objs),
        tuple(o._value.shape for o in input_objs),
        tuple(_is_float(o._value.dtype) for o in input_objs), None, None, {},
        (), tuple((o._value.shape, o._value.dtype, o._device) for o in outputs),
        backward=backward)
    from eagerflow.tape import _append_entry, _assign_id

    entry.output_ids = tuple(_assign_id(o) for o in outputs)
    for tape in tapes:
        if tape._watch_accessed_variables:  # the reads happened while tapes were paused
            for v in variables:
                tape._watch_variable(v)
            for _, a in tensor_args:
                if getattr(a, "_is_variable", False) and a.trainable:
                    tape._watch_variable(a)
        if any(i in tape._ids for i in entry.input_ids if i) or any(
                v._tid in tape._ids for v in variables):
            _append_entry(tape, entry)
    return nest.pack_sequence_as(result, outputs)


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
