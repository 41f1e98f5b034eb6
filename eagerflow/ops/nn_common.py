"""Helpers shared by the nn modules: lazy access to sibling families, conversions, errors.

The math, reduction, array and indexing families are imported on first use, since the nn
modules are written against their level and some of them import after these.
"""

from __future__ import annotations

from eagerflow import errors
from eagerflow.ops.arithmetic import SELECT
from eagerflow.ops.dispatch import execute
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = []

EXPORTS = {}


# Sibling families are imported on first use: they are written against this module's
# level and some import after it.
def _math():
    from eagerflow.ops import math_ops
    return math_ops


def _reduce():
    from eagerflow.ops import reduction_ops
    return reduction_ops


def _array():
    from eagerflow.ops import array_ops
    return array_ops


def _index():
    from eagerflow.ops import indexing_ops
    return indexing_ops


def _where(cond, x, y):
    return execute(SELECT, (cond, x, y))


def _tensor(x, dtype=None):
    """x as a tensor (eager or symbolic); Python values take ``dtype`` when given."""
    if x.__class__ is Tensor or hasattr(x, "_as_tensor"):
        return convert_to_tensor(x)
    return convert_to_tensor(x, dtype=dtype)


def _fail(op, message):
    return errors.InvalidArgumentError(None, op, "%s: %s" % (op, message))


def _upcast(xp, x):
    """Half-precision floats are computed in float32 (one rounding at the end)."""
    return x.astype(xp.float32) if x.dtype.itemsize < 4 else x
