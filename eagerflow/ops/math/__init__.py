"""Elementwise math: powers and roots, exponentials, trigonometry, special functions,
rounding, min/max, safe division, complex parts, ``add_n`` and ``clip_by_value``.

Most of these sit on the eager fast path, so each is declared with the elementwise family
factories and its kernel is the bare array function (``lambda xp: xp.exp``).

Gradient rules use TF's convention for complex inputs: the rule returns ``g * conj(f'(x))``,
and for a real-valued function of a complex ``z`` the gradient is ``df/dRe(z) +
i df/dIm(z)``. Every rule is written with eagerflow ops, so it can be differentiated again.

The family is one module per concept in this package:

* :mod:`eagerflow.ops.math.unary_math`: sign, powers and roots, exponentials and logs, sigmoid,
  trigonometry, rounding, is_nan/is_inf/is_finite.
* :mod:`eagerflow.ops.math.special_math`: erf, erfc, erfinv, lgamma, digamma, polygamma.
* :mod:`eagerflow.ops.math.binary_math`: maximum, minimum, atan2, squared_difference, the
  x == 0 / y == 0 safe ops, truncating division, add_n, clip_by_value, polyval.
* :mod:`eagerflow.ops.math.complex_math`: abs, complex, real, imag, angle.
* this package's ``__init__``: the helpers they share.

Example:
    >>> import eagerflow as ef
    >>> ef.sqrt(ef.constant([4.0, 9.0])).numpy().tolist()
    [2.0, 3.0]

The helpers here are shared by the math modules: conjugation for complex gradients,
select, tensor conversion, scipy.special and the integer-division check.
"""

from __future__ import annotations

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.math.arithmetic import conj as _conj_op
from eagerflow.ops.math.arithmetic import SELECT
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
