"""The top-level public functions, gathered from the op families."""

from eagerflow.ops.arithmetic import (  # noqa: F401
    add, divide, equal, floordiv, floormod, greater, greater_equal, less, less_equal, multiply,
    negative, not_equal, pow, subtract, truediv, where,
)
from eagerflow.ops.cast import bitcast, cast, saturate_cast  # noqa: F401
