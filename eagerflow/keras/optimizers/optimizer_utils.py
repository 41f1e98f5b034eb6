"""Helpers of the optimizers: the float type, casts to a variable's dtype, dense gradients,
argument checks, named initializers and the aggregation names.
"""

from __future__ import annotations

import eagerflow as ef

_AGGREGATIONS = {
    None: ef.VariableAggregation.NONE, "none": ef.VariableAggregation.NONE,
    "sum": ef.VariableAggregation.SUM, "mean": ef.VariableAggregation.MEAN,
    "only_first_replica": ef.VariableAggregation.ONLY_FIRST_REPLICA,
}


def floatx():
    """Keras' default float dtype name (``eagerflow.keras.backend.floatx()`` if present)."""
    try:
        from eagerflow.keras import backend
    except ImportError:
        return "float32"
    get = getattr(backend, "floatx", None)
    return get() if get is not None else "float32"


def _cast(x, dtype):
    """``x`` as a tensor of ``dtype`` (no op when it already is one)."""
    if getattr(x, "_is_variable", False):
        x = x.read_value()
    if isinstance(x, ef.Tensor):
        return x if x.dtype is dtype else ef.cast(x, dtype)
    return ef.constant(x, dtype=dtype)


def _dense(grad):
    """A gradient as a dense tensor (IndexedSlices are summed into their rows)."""
    if isinstance(grad, ef.IndexedSlices):
        return ef.convert_to_tensor(grad)
    return grad if isinstance(grad, ef.Tensor) else ef.convert_to_tensor(grad)


def _check_nonneg(name, value, upper=None):
    if value is None:
        return
    if not isinstance(value, (int, float)) or value < 0 or (upper is not None and
                                                             value > upper):
        bound = "[0, %s]" % upper if upper is not None else ">= 0"
        raise ValueError("Argument `%s` must be a number %s. Received: %s=%r"
                         % (name, bound, name, value))


