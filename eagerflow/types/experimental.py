"""``eagerflow.types.experimental`` (``tf.types.experimental``).

``GenericFunction`` / ``PolymorphicFunction`` are what ``eagerflow.function`` returns,
``ConcreteFunction`` one traced graph of it, and ``TensorLike`` what converts to a tensor.

Example:
    >>> import eagerflow as ef
    >>> f = ef.function(lambda x: x)
    >>> isinstance(f, ef.types.experimental.GenericFunction)
    True
"""

from __future__ import annotations

import typing

import numpy as np

from eagerflow.function.concrete import ConcreteFunction
from eagerflow.function.function import Function
from eagerflow.tensor import Tensor
from eagerflow.variables import Variable

__all__ = ["ConcreteFunction", "GenericFunction", "PolymorphicFunction", "TensorLike",
           "Callable", "FunctionType"]

GenericFunction = Function
PolymorphicFunction = Function
Callable = ConcreteFunction
FunctionType = type(lambda: None)
TensorLike = typing.Union[Tensor, Variable, np.ndarray, np.generic, int, float, bool, str,
                          bytes, complex, tuple, list]
