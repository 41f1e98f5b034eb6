"""Elementwise math: powers and roots, exponentials, trigonometry, special functions,
rounding, min/max, safe division, complex parts, ``add_n`` and ``clip_by_value``.

Most of these sit on the eager fast path, so each is declared with the elementwise family
factories and its kernel is the bare array function (``lambda xp: xp.exp``).

Gradient rules use TF's convention for complex inputs: the rule returns ``g * conj(f'(x))``,
and for a real-valued function of a complex ``z`` the gradient is ``df/dRe(z) +
i df/dIm(z)``. Every rule is written with eagerflow ops, so it can be differentiated again.

The family lives in one module per concept; this module re-exports their public names, and
exports arithmetic's conj, floor, floordiv, floormod, negative and pow into ``tf.math``:

* :mod:`eagerflow.ops.unary_math`: sign, powers and roots, exponentials and logs, sigmoid,
  trigonometry, rounding, is_nan/is_inf/is_finite.
* :mod:`eagerflow.ops.special_math`: erf, erfc, erfinv, lgamma, digamma, polygamma.
* :mod:`eagerflow.ops.binary_math`: maximum, minimum, atan2, squared_difference, the
  x == 0 / y == 0 safe ops, truncating division, add_n, clip_by_value, polyval.
* :mod:`eagerflow.ops.complex_math`: abs, complex, real, imag, angle.
* :mod:`eagerflow.ops.math_common`: the helpers they share.

Example:
    >>> import eagerflow as ef
    >>> ef.sqrt(ef.constant([4.0, 9.0])).numpy().tolist()
    [2.0, 3.0]
"""

from __future__ import annotations

from eagerflow.ops.arithmetic import (  # noqa: F401 - re-exported into tf.math
    conj, floor, floordiv, floormod, negative, pow,
)
from eagerflow.ops.unary_math import (  # noqa: F401
    acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, exp, expm1, is_finite, is_inf, is_nan,
    log, log1p, log_sigmoid, reciprocal, rint, round, rsqrt, sigmoid, sign, sin, sinh, sqrt,
    square, tan, tanh,
)
from eagerflow.ops.special_math import (  # noqa: F401
    digamma, erf, erfc, erfinv, lgamma, polygamma,
)
from eagerflow.ops.binary_math import (  # noqa: F401
    add_n, atan2, clip_by_value, divide_no_nan, maximum, minimum, mod, multiply_no_nan, polyval,
    reciprocal_no_nan, squared_difference, truncatediv, truncatemod, xdivy, xlog1py, xlogy,
)
from eagerflow.ops.complex_math import (  # noqa: F401
    abs, angle, complex, imag, real,
)

# The family's primitives and constants, and the helpers that other modules and tests
# reach through this module.
from eagerflow.ops.unary_math import (  # noqa: F401
    ABS, ACOS, ACOSH, ASIN, ASINH, ATAN, ATANH, CEIL, COS, COSH, EXP, EXPM1, IS_FINITE, IS_INF,
    IS_NAN, LOG, LOG1P, LOG_SIGMOID, RECIPROCAL, RINT, ROUND, RSQRT, SIGMOID, SIGN, SIN, SINH,
    SQRT, SQUARE, TAN, TANH,
)
from eagerflow.ops.special_math import (  # noqa: F401
    DIGAMMA, ERF, ERFC, ERFINV, LGAMMA, POLYGAMMA,
)
from eagerflow.ops.binary_math import (  # noqa: F401
    ADD_N, ATAN2, DIV_NO_NAN, MAXIMUM, MINIMUM, MUL_NO_NAN, SQUARED_DIFFERENCE, TRUNCATE_DIV,
    TRUNCATE_MOD, XDIVY, XLOG1PY, XLOGY,
)
from eagerflow.ops.complex_math import (  # noqa: F401
    ANGLE, COMPLEX_ABS, COMPLEX_PRIM, IMAG, REAL,
)

__all__ = [
    "abs", "acos", "acosh", "add_n", "angle", "asin", "asinh", "atan", "atan2", "atanh", "ceil",
    "clip_by_value", "complex", "conj", "cos", "cosh", "digamma", "divide_no_nan", "erf", "erfc",
    "erfinv", "exp", "expm1", "floor", "floordiv", "floormod", "imag", "is_finite", "is_inf",
    "is_nan", "lgamma", "log", "log1p", "log_sigmoid", "maximum", "minimum", "mod",
    "multiply_no_nan", "negative", "polygamma", "polyval", "pow", "real", "reciprocal",
    "reciprocal_no_nan", "rint", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt",
    "square", "squared_difference", "tan", "tanh", "truncatediv", "truncatemod", "xdivy",
    "xlog1py", "xlogy",
]

# arithmetic's ops that TF also has in tf.math (and a few at the top level).
EXPORTS = {
    "": ["floor", "negative", "pow"],
    "math": ["conj", "floor", "floordiv", "floormod", "negative", "pow"],
}
