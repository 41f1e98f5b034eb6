"""``enable_check_numerics``: every eager op's float output is checked for NaN and Inf.

Once enabled (per thread, as TF's), each op run eagerly checks its floating-point outputs
and raises InvalidArgumentError naming the op, the input shapes and dtypes and the user's
line as soon as one holds NaN or infinity. Ops run by a traced function's graph are not
checked one by one: put ``eagerflow.debugging.check_numerics`` where a graph needs it.
The check takes every op off the eager fast path, so it costs time until disabled.
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.ops import dispatch

__all__ = ["enable_check_numerics", "disable_check_numerics"]

_saved = None


def _where():
    from eagerflow.function.symbolic import user_frame

    found = user_frame()
    return "" if found is None else " (at %s:%d)" % (found[0], found[1])


def _checked(prim, args, attrs, run):
    out = (_saved or (lambda p, a, k, r: r(p, a, k)))(prim, args, attrs, run)
    for k, t in enumerate(out if isinstance(out, tuple) else (out,)):
        dtype = getattr(t, "dtype", None)
        if dtype is None or not (dtype.is_floating or dtype.is_complex):
            continue
        value = np.asarray(t.numpy())
        if not np.isfinite(value).all():
            what = "NaN" if np.isnan(value).any() else "Inf"
            raise errors.InvalidArgumentError(
                None, prim.name, "Detected %s in the output %d of op %s (inputs: %s)%s. "
                "Check numerics is on (eagerflow.debugging.enable_check_numerics)." % (
                    what, k, prim.name, ", ".join(
                        "%s%s" % (a.dtype.name, list(a.shape)) if hasattr(a, "dtype")
                        else repr(a) for a in args), _where()))
    return out


def enable_check_numerics(stack_height_limit=30, path_length_limit=50):
    """Checks every eager op's float outputs for NaN/Inf (``tf.debugging``).

    Example:
        >>> import eagerflow as ef
        >>> ef.debugging.enable_check_numerics()
        >>> try:
        ...     ef.math.log(ef.constant(-1.0))
        ... except ef.errors.InvalidArgumentError as exc:
        ...     print("Detected NaN" in str(exc))
        True
        >>> ef.debugging.disable_check_numerics()
    """
    global _saved
    if dispatch._profiler is _checked:
        return
    _saved = dispatch._profiler
    dispatch._profiler = _checked
    context.state.profiling = True
    context.state.refresh()


def disable_check_numerics():
    """Turns :func:`enable_check_numerics` off."""
    global _saved
    if dispatch._profiler is not _checked:
        return
    dispatch._profiler = _saved
    _saved = None
    context.state.profiling = dispatch._profiler is not None
    context.state.refresh()
