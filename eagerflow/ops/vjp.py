"""Calling a primitive's gradient rule: the one place shared by the tape and the checks.

``apply_vjp`` hands the rule only what its ``saves`` declares (everything else is None, so
a rule that reads an undeclared value fails in the tests), normalizes its result to one
entry per input, and reduces each broadcast gradient to its input's shape.
"""

from __future__ import annotations

from eagerflow import errors
from eagerflow.ops.math.broadcast import sum_to_shape
from eagerflow.tensor import Tensor


def saved_inputs(prim, inputs):
    """The inputs a VJP reads, with None in place of those it does not."""
    keep = prim.saves_inputs
    if keep == "all":
        return tuple(inputs)
    if not keep:
        return (None,) * len(inputs)
    return tuple([t if i in keep else None for i, t in enumerate(inputs)])


def apply_vjp(prim, cotangent, inputs, output, attrs, input_shapes, skip=None):
    """Runs ``prim.vjp`` and returns one gradient (Tensor or None) per input.

    Args:
        prim: The Primitive.
        cotangent: The output cotangent (a tuple for multi-output primitives).
        inputs: The saved inputs (None where not saved).
        output: The saved output(s), or None.
        attrs: The call's attributes.
        input_shapes: The static shapes of all inputs, for broadcast reduction.
        skip: Optional tuple of booleans: inputs whose gradient is not needed (passed on to
            rules declared with ``vjp_skips``).
    """
    if prim.vjp is None:
        return (None,) * len(input_shapes)
    if skip is not None and prim.vjp_skips:
        grads = prim.vjp(cotangent, *inputs, output, skip=skip, **attrs)
    elif attrs:
        grads = prim.vjp(cotangent, *inputs, output, **attrs)
    else:
        grads = prim.vjp(cotangent, *inputs, output)
    n = len(input_shapes)
    if n == 1:
        if grads.__class__ is not tuple and grads.__class__ is not list:
            grads = (grads,)
    elif not isinstance(grads, (tuple, list)) or len(grads) != n:
        raise errors.InternalError(
            None, prim.name, "The gradient rule of %s returned %s for %d inputs"
            % (prim.name, type(grads).__name__, n))
    out = []
    for g, shape in zip(grads, input_shapes):
        if g is not None:
            value = g._value if g.__class__ is Tensor else getattr(g, "_value", None)
            g_shape = value.shape if value is not None else tuple(g.shape)
            # An unknown rank (a TensorArray placeholder in a loop) has nothing to reduce.
            if g_shape != shape and g_shape is not None and shape is not None:
                g = sum_to_shape(g, shape)
        out.append(g)
    return out
