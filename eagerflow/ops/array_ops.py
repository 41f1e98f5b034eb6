"""Structural array ops: reshape, transpose, concat, stack, split, pad, tile, reverse, roll...

These ops move or copy elements without arithmetic, so every dtype is accepted and each
gradient is the adjoint movement (reshape back, inverse permutation, split for concat, fold
the padding back...). Shapes, axes and sizes are static attrs; a value computed inside a
traced function is rejected with a message that says to pass a static one.

The family lives in one module per concept; this module re-exports their public names (and
the creation ops of :mod:`eagerflow.ops.creation_ops`: zeros, ones, fill, range, ...):

* :mod:`eagerflow.ops.reshape_ops`: reshape, transpose, expand_dims, squeeze.
* :mod:`eagerflow.ops.join_ops`: concat, split, stack, unstack.
* :mod:`eagerflow.ops.pad_ops`: pad (constant, reflect and symmetric).
* :mod:`eagerflow.ops.tile_repeat_ops`: tile, repeat, reverse, roll.
* :mod:`eagerflow.ops.shape_ops`: shape, shape_n, size, rank, ensure_shape, the broadcast
  shape functions, identity, identity_n, stop_gradient and where_indices.
* :mod:`eagerflow.ops.array_common`: the checks and helpers they share.

Example:
    >>> import eagerflow as ef
    >>> x = ef.reshape(ef.range(6), [2, -1])
    >>> ef.concat([x, x], axis=1).shape
    TensorShape([2, 6])
"""

from __future__ import annotations

from eagerflow.ops.creation_ops import (  # noqa: F401 - re-exported: array_ops.zeros etc.
    EYE, FILL, LINSPACE, ONES, RANGE, ZEROS, eye, fill, int_tuple, linspace, meshgrid, ones,
    ones_like, range, sequence_mask, zeros, zeros_like,
)
from eagerflow.ops.reshape_ops import (  # noqa: F401
    reshape, transpose, expand_dims, squeeze,
)
from eagerflow.ops.join_ops import (  # noqa: F401
    concat, stack, unstack, split,
)
from eagerflow.ops.pad_ops import (  # noqa: F401
    pad,
)
from eagerflow.ops.tile_repeat_ops import (  # noqa: F401
    tile, reverse, roll, repeat,
)
from eagerflow.ops.shape_ops import (  # noqa: F401
    identity, identity_n, stop_gradient, shape, shape_n, size, rank, ensure_shape,
    broadcast_static_shape, broadcast_dynamic_shape, where_indices,
)

# The family's primitives and constants, and the helpers that other modules and tests
# reach through this module.
from eagerflow.ops.reshape_ops import (  # noqa: F401
    EXPAND_DIMS, RESHAPE, RESHAPE_LIKE, SQUEEZE, TRANSPOSE, reshape_like,
)
from eagerflow.ops.join_ops import (  # noqa: F401
    CONCAT, PACK, SPLIT, SPLITV, UNPACK, _concat_vjp, _split_sizes_for_grad,
)
from eagerflow.ops.pad_ops import (  # noqa: F401
    MIRROR_PAD, PAD, PAD_GRAD,
)
from eagerflow.ops.tile_repeat_ops import (  # noqa: F401
    REPEAT, REPEAT_GRAD, REVERSE, ROLL, TILE, _interleaved,
)
from eagerflow.ops.shape_ops import (  # noqa: F401
    BROADCAST_ARGS, ENSURE_SHAPE, IDENTITY, RANK, SHAPE, SIZE, STOP_GRADIENT, WHERE,
)

__all__ = [
    "reshape", "transpose", "expand_dims", "squeeze", "concat", "stack", "unstack", "split",
    "tile", "pad", "reverse", "roll", "identity", "identity_n", "stop_gradient", "shape",
    "shape_n", "size", "rank", "repeat", "ensure_shape", "broadcast_static_shape",
    "broadcast_dynamic_shape", "where_indices",
]

# Each part lists its own names in its EXPORTS (scripts/gen_api.py takes every name from
# exactly one module).
EXPORTS = {}
