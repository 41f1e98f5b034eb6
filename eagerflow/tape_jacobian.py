"""Jacobians on a tape: one backward pass per target element, each seeded with a one-hot
cotangent (correct for every op); from the second row on the rows replay one compiled
backward graph with the cotangent as its input. ``batch_jacobian`` seeds a whole batch at
once.
"""

from __future__ import annotations

from eagerflow import errors
from eagerflow import nest
from eagerflow.tape_backward import _source_value
from eagerflow.tensor import convert_to_tensor

__all__ = ["jacobian", "batch_jacobian"]


def jacobian(tape, target, sources, unconnected_gradients,
             parallel_iterations, experimental_use_pfor):
    """See ``GradientTape.jacobian``."""
    import numpy as np

    from eagerflow.ops.math.arithmetic import zeros_like_t
    from eagerflow.tensor import wrap

    if tape._used and not tape._persistent:
        raise RuntimeError("A non-persistent GradientTape can only be used once; use "
                           "persistent=True to compute several jacobians.")
    flat_sources = nest.flatten(sources)
    target = convert_to_tensor(target)
    size = int(np.prod(target._value.shape)) if target._value.shape else 1
    persistent, tape._persistent = tape._persistent, True
    rows = [[] for _ in flat_sources]
    try:
        xp = target._device.backend
        for k in range(size):
            onehot = xp.zeros(size, dtype=target._value.dtype)
            onehot[k] = 1
            seed = wrap(onehot.reshape(target._value.shape), target._device)
            g = tape.gradient(target, flat_sources, output_gradients=[seed],
                              unconnected_gradients=unconnected_gradients)
            for j, gj in enumerate(g):
                rows[j].append(gj)
    finally:
        tape._persistent = persistent
        tape._used = True
    out = []
    from eagerflow.ops.array.reshape_ops import reshape
    from eagerflow.ops.array.join_ops import stack

    for src, parts in zip(flat_sources, rows):
        if any(p is None for p in parts):
            if all(p is None for p in parts):
                out.append(None)
                continue
            parts = [p if p is not None else zeros_like_t(_source_value(src)) for p in parts]
        stacked = stack(parts, axis=0)
        out.append(reshape(stacked, tuple(target._value.shape) +
                           tuple(_source_value(src)._value.shape)))
    return nest.pack_sequence_as(sources, out)


def batch_jacobian(tape, target, source, unconnected_gradients,
                   parallel_iterations, experimental_use_pfor):
    """See ``GradientTape.batch_jacobian``."""
    import numpy as np

    from eagerflow.tensor import wrap

    if tape._used and not tape._persistent:
        raise RuntimeError("A non-persistent GradientTape can only be used once.")
    target = convert_to_tensor(target)
    tshape = tuple(target._value.shape)
    if not tshape:
        raise errors.InvalidArgumentError(
            None, "batch_jacobian", "batch_jacobian needs a target with a batch dimension")
    batch = tshape[0]
    inner = int(np.prod(tshape[1:])) if len(tshape) > 1 else 1
    src = _source_value(source)
    if src._value.shape[:1] != (batch,):
        raise errors.InvalidArgumentError(
            None, "batch_jacobian", "target batch size %d differs from source shape %s"
            % (batch, list(src._value.shape)))
    persistent, tape._persistent = tape._persistent, True
    parts = []
    try:
        xp = target._device.backend
        for k in range(inner):
            onehot = xp.zeros((batch, inner), dtype=target._value.dtype)
            onehot[:, k] = 1
            seed = wrap(onehot.reshape(tshape), target._device)
            g = tape.gradient(target, source, output_gradients=[seed],
                              unconnected_gradients=unconnected_gradients)
            parts.append(g)
    finally:
        tape._persistent = persistent
        tape._used = True
    if all(p is None for p in parts):
        return None
    from eagerflow.ops.math.arithmetic import zeros_like_t
    from eagerflow.ops.array.reshape_ops import reshape
    from eagerflow.ops.array.join_ops import stack

    parts = [p if p is not None else zeros_like_t(src) for p in parts]
    stacked = stack(parts, axis=1)  # [B, inner, S...]
    return reshape(stacked, tshape + tuple(src._value.shape[1:]))
