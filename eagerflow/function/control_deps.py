"""``control_dependencies`` and ``init_scope`` (TF's graph-building scopes).

Inside a traced function, ops created under ``control_dependencies(inputs)`` run after the
ops that produced ``inputs``: the nodes name them as control inputs, which also keeps
them alive through dead-code elimination. (Stateful ops already run in program order, as
TF 2's automatic control dependencies order them.) Eagerly ops run when called, so the
scope only checks its argument, as TF's does.

``init_scope`` runs its block eagerly even while a function is traced: variables and
other state made there are made once, outside the graph.
"""

from __future__ import annotations

import contextlib

from eagerflow.framework import context
from eagerflow.function.symbolic import SymbolicTensor
from eagerflow.function.tracer import eager_mode
from eagerflow.tensor import Tensor

__all__ = ["control_dependencies", "init_scope"]

_state = context.state


@contextlib.contextmanager
def control_dependencies(control_inputs):
    """Ops created in the block depend on ``control_inputs`` (``tf.control_dependencies``).

    Args:
        control_inputs: A list of tensors or graph nodes (None entries, such as an eager
            ``Assert``'s result, are skipped), or None to add no dependencies.

    Example:
        >>> import eagerflow as ef
        >>> @ef.function
        ... def f(x):
        ...     check = ef.debugging.assert_positive(x)
        ...     with ef.control_dependencies([check]):
        ...         return ef.identity(x)
        >>> float(f(ef.constant(2.0)))
        2.0
    """
    if control_inputs is not None and not isinstance(control_inputs, (list, tuple)):
        raise TypeError("control_dependencies(): control_inputs must be a list of tensors or "
                        "operations, got %s." % type(control_inputs).__name__)
    tracer = _state.trace
    if tracer is None:
        yield
        return
    nodes = []
    for c in control_inputs or ():
        if c is None:
            continue
        if isinstance(c, SymbolicTensor):
            c = tracer.to_symbolic(c)._node
        elif isinstance(c, Tensor) or getattr(c, "_is_variable", False):
            continue  # an eager value has already been computed
        nodes.append(c)
    saved = list(tracer.control_inputs)
    tracer.control_inputs.extend(n for n in nodes if n not in tracer.control_inputs)
    try:
        yield
    finally:
        tracer.control_inputs[:] = saved


def init_scope():
    """Runs the block eagerly, outside any trace (``tf.init_scope``).

    Example:
        >>> import eagerflow as ef
        >>> @ef.function
        ... def f(x):
        ...     with ef.init_scope():
        ...         eager = ef.executing_eagerly()
        ...     return x if eager else -x
        >>> float(f(ef.constant(1.0)))
        1.0
    """
    return eager_mode()
