"""Small top-level utilities: ``executing_eagerly`` and ``get_static_value``.

Example:
    >>> import eagerflow as ef
    >>> ef.executing_eagerly()
    True
    >>> ef.get_static_value(ef.constant([1, 2])).tolist()
    [1, 2]
"""

from __future__ import annotations

import numpy as np

from eagerflow.framework import context
from eagerflow.tensor import Tensor


def executing_eagerly():
    """True unless called while a function is being traced into a graph."""
    return context.state.trace is None


def get_static_value(tensor, partial=False):
    """The value of ``tensor`` as a numpy array when it is known now, else None.

    Inside a traced function, constants and values computed only from constants and static
    shapes are known (``tf.get_static_value`` semantics).
    """
    if isinstance(tensor, Tensor):
        from eagerflow.ops.static_value import constant_value

        return constant_value(tensor)
    if getattr(tensor, "_is_variable", False):
        return None
    if isinstance(tensor, (int, float, bool, complex, list, tuple, np.ndarray, np.generic)):
        return np.asarray(tensor)
    return None
