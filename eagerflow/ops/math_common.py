"""Helpers shared by the math modules: conjugation for complex gradients, select, tensor
conversion, scipy.special and the integer-division check.
"""

from __future__ import annotations

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.arithmetic import conj as _conj_op
from eagerflow.ops.arithmetic import SELECT
from eagerflow.ops.dispatch import execute
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = []

EXPORTS = {}


# ----------------------------------------------------------------------------- helpers


def _c(t):
    """conj(t) for complex tensors; t itself otherwise (no op recorded)."""
    return _conj_op(t) if t.dtype.is_complex else t


def _where(cond, x, y):
    return execute(SELECT, (cond, x, y))


def _with_dtype(x):
    """Returns (x, its DType); Python values and numpy arrays become Tensors."""
    if x.__class__ is Tensor:
        return x, x.dtype
    dt = getattr(x, "dtype", None)
    if isinstance(dt, d.DType):  # variables and symbolic tensors
        return x, dt
    x = convert_to_tensor(x)
    return x, x.dtype


def _scipy_special():
    import scipy.special

    return scipy.special


def _check_int_divisor(y, op):
    if y.dtype.kind in "iu" and bool((y == 0).any()):
        raise errors.InvalidArgumentError(
            None, None, "Integer division by zero in %s. Mask zero divisors first, e.g. with "
            "where(y == 0, 1, y)." % op)
