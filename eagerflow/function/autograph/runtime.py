"""The namespace converted code sees as ``ag__``: the operators and a few builtins.

Calls of ``range`` and ``len`` on symbolic tensors behave as TF's converted code does
(``range(n)`` over a tensor ``n`` is ``eagerflow.range``, so a ``for`` over it becomes a
graph loop; ``len`` of a tensor whose first dimension is unknown is its dynamic size).
"""

from __future__ import annotations

import builtins

from eagerflow.function.autograph.conversion import converted_call  # noqa: F401
from eagerflow.function.autograph.operators import (  # noqa: F401
    Undefined, UndefinedReturnValue, and_, for_stmt, if_exp, if_stmt, list_append, not_, or_,
    retval, while_stmt,
)
from eagerflow.function.symbolic import SymbolicTensor


def _range(*args):
    if any(isinstance(a, SymbolicTensor) for a in args):
        from eagerflow.ops.array.creation_ops import range as tf_range

        return tf_range(*args)
    return builtins.range(*args)


def _len(value):
    if isinstance(value, SymbolicTensor):
        shape = value.shape
        if shape.rank == 0:
            raise TypeError("len() of a scalar tensor is not defined.")
        if shape.rank is None or shape.as_list()[0] is None:
            from eagerflow.ops.array.shape_ops import shape as tf_shape

            return tf_shape(value)[0]
    return builtins.len(value)


BUILTINS = {builtins.range: _range, builtins.len: _len}
