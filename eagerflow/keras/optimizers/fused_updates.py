"""An eager ``apply_gradients`` on a GPU variable as the graph path's generated kernel.

Run eagerly, ``update_step`` is one cupy kernel per elementwise op: Adam's update of one
variable is about fifteen launches, each a pass over the parameter's size. Traced, the
same Python becomes a graph whose passes fuse it (``assign_update``, ``fusion``, then
``update_loops``: the moments and the parameter in one region with several results),
and on a GPU that region is one generated ``cupy.ElementwiseKernel`` writing ``m``, ``v``
and the parameter in place (``function.passes.fused_gpu``). So for a GPU variable an
eager update runs ``update_step`` traced: one ``@function`` per optimizer, whose
arguments are the gradient, the variable, the learning rate and the variable's slots.
Variable arguments are keyed by their spec (dtype, shape, device), so one trace, and one
compiled kernel, serves every variable of one dtype and shape: a call with other
variables runs the trace bound to them. The optimizer's numeric and string attributes
(``beta_1``, ``epsilon``, ``amsgrad``...) are a static argument: changing one retraces.

CPU variables keep the eager path: on a CPU the eager ops are numpy calls and a trace
would add its own overhead to small updates. The built-in optimizers take this path; a
subclass defining its own ``update_step`` opts in with ``traced_eager_updates = True``
when that step reads per-variable state through ``get_slot`` only and keeps no Python
state per call (``False`` opts a built-in out).

Example:
    >>> import numpy as np
    >>> import eagerflow as ef
    >>> from eagerflow.keras.optimizers import Adam, fused_updates
    >>> opt = Adam(0.1)
    >>> w = ef.Variable(np.ones(4, np.float32))
    >>> opt.build([w])
    >>> fused_updates.update(opt, ef.constant(np.full(4, 0.5, np.float32)), w,
    ...                      opt._current_learning_rate())
    >>> [round(float(x), 4) for x in w.numpy()]
    [0.9, 0.9, 0.9, 0.9]
"""

from __future__ import annotations

import weakref

__all__ = ["wanted", "update"]

_HYPER_TYPES = (bool, int, float, str, type(None))


def wanted(optimizer, variable):
    """Whether ``variable``'s eager update runs as the traced update (see the module)."""
    from eagerflow.utils import executing_eagerly

    device = getattr(variable, "_device", None)
    if not getattr(device, "backend_index", 0) or not executing_eagerly() or \
            getattr(variable, "_is_distributed_variable", False) or \
            not getattr(variable, "_is_variable", False):
        return False
    opted = getattr(optimizer, "traced_eager_updates", None)
    if opted is None:
        # The built-in optimizers only: their update_step reads per-variable state through
        # get_slot alone and keeps no Python state, which a trace bound to other
        # variables relies on.
        return type(optimizer).update_step.__module__.startswith(_BUILT_IN)
    return bool(opted)


_BUILT_IN = "eagerflow.keras.optimizers."


def _hyperparameters(optimizer):
    """The optimizer's plain attributes as a hashable static argument of the trace."""
    return tuple(sorted((k, v) for k, v in vars(optimizer).items()
                        if v.__class__ in _HYPER_TYPES))


def _slots(optimizer, variable):
    """The variable's slot variables, in the order they were made."""
    table = optimizer._slots.get(optimizer._var_key(variable))
    return tuple(table.values()) if table else ()


# optimizer -> its traced update (kept off the optimizer, whose attributes checkpoints and
# variable tracking walk)
_TRACED = weakref.WeakKeyDictionary()


def update(optimizer, gradient, variable, learning_rate):
    """Runs ``optimizer.update_step(gradient, variable, learning_rate)`` traced.

    Args:
        optimizer: A built Keras optimizer.
        gradient: The dense gradient tensor.
        variable: The variable to update.
        learning_rate: This step's learning rate (Variable or tensor).
    """
    import eagerflow as ef

    fn = _TRACED.get(optimizer)
    if fn is None:
        # The optimizer is reached through a weak reference: a strong one would keep it
        # alive from its own table entry, and would make every variable it holds look
        # reachable from the closure (``function._reachable_elsewhere``), keying the
        # variable arguments by identity (one trace per variable instead of per spec).
        owner = weakref.ref(optimizer)

        def traced_update(gradient, variable, learning_rate, slots, hyperparameters):
            # The slots are arguments so that a trace bound to other variables updates
            # theirs: ``get_slot`` inside finds the very slot objects passed here.
            del slots, hyperparameters
            owner().update_step(gradient, variable, learning_rate)

        fn = ef.function(traced_update, autograph=False)
        _TRACED[optimizer] = fn
    if not getattr(learning_rate, "_is_variable", False) and \
            not isinstance(learning_rate, ef.Tensor):
        learning_rate = ef.convert_to_tensor(learning_rate)
    fn(gradient, variable, learning_rate, _slots(optimizer, variable),
       _hyperparameters(optimizer))
