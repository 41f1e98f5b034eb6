"""The top-level public functions, gathered from the op families."""

from eagerflow.ops.arithmetic import (  # noqa: F401
    add, divide, equal, floordiv, floormod, greater, greater_equal, less, less_equal, multiply,
    negative, not_equal, pow, subtract, truediv, where,
)
from eagerflow.ops.cast import bitcast, cast, saturate_cast  # noqa: F401
from eagerflow.ops.broadcast import broadcast_to  # noqa: F401
from eagerflow.framework.device_scope import device  # noqa: F401
from eagerflow.framework.device_spec import DeviceSpec  # noqa: F401
from eagerflow.variables import (  # noqa: F401
    Variable, VariableAggregation, VariableSynchronization, variable_creator_scope,
)
from eagerflow.indexed_slices import IndexedSlices  # noqa: F401
from eagerflow.tape import GradientTape, UnconnectedGradients  # noqa: F401
from eagerflow import config, nest  # noqa: F401
from eagerflow.framework.name_scope import name_scope  # noqa: F401
from eagerflow.module import Module  # noqa: F401
from eagerflow.custom_gradient import custom_gradient, recompute_grad  # noqa: F401
