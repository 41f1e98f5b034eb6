"""``eagerflow.debugging``: assertions and numeric checks (``tf.debugging``).

Eagerly a failed check raises at once; inside a ``@function`` a check that is known while
tracing is decided then, and the others run with the graph (see
:mod:`eagerflow.function.assertions`).

Example:
    >>> import eagerflow as ef
    >>> ef.debugging.assert_equal(ef.constant([1, 2]), ef.constant([1, 2]))
    >>> ef.debugging.assert_rank(ef.ones([2, 3]), 2)
"""

from eagerflow.function.assertions import (  # noqa: F401
    Assert, assert_all_finite, assert_equal, assert_greater, assert_greater_equal,
    assert_less, assert_less_equal, assert_near, assert_negative, assert_non_negative,
    assert_non_positive, assert_none_equal, assert_positive, assert_proper_iterable,
    assert_integer, assert_rank, assert_rank_at_least, assert_rank_in, assert_scalar,
    assert_shapes, assert_type,
)
from eagerflow.debugging.numerics import (  # noqa: F401
    disable_check_numerics, enable_check_numerics,
)
from eagerflow.ops.debug_ops import check_numerics  # noqa: F401


def is_numeric_tensor(tensor):
    """True for a tensor of a numeric (not bool or string) dtype."""
    from eagerflow.tensor import Tensor

    dtype = getattr(tensor, "dtype", None)
    return isinstance(tensor, Tensor) and dtype is not None and (
        dtype.is_floating or dtype.is_integer or dtype.is_complex)


__all__ = ["Assert", "assert_equal", "assert_none_equal", "assert_less", "assert_less_equal",
           "assert_greater", "assert_greater_equal", "assert_positive", "assert_negative",
           "assert_non_negative", "assert_non_positive", "assert_near", "assert_rank",
           "assert_rank_at_least", "assert_rank_in", "assert_shapes", "assert_type",
           "assert_all_finite", "assert_proper_iterable", "assert_scalar", "assert_integer",
           "check_numerics",
           "enable_check_numerics", "disable_check_numerics", "is_numeric_tensor"]
