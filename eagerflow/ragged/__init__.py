"""``eagerflow.ragged``: ragged tensors (``tf.ragged``).

Example:
    >>> import eagerflow as ef
    >>> ef.ragged.constant([[1, 2], [3]]).flat_values.numpy().tolist()
    [1, 2, 3]
"""

from eagerflow.ragged.ragged_tensor import RaggedTensor, RaggedTensorSpec  # noqa: F401
from eagerflow.ragged.ragged_array_ops import (  # noqa: F401
    concat, constant, gather, map_flat_values, stack,
)
# Registers the public ops' RaggedTensor implementations (tf.concat, reductions, ...).
from eagerflow.ragged import ragged_dispatch  # noqa: F401

__all__ = ["RaggedTensor", "RaggedTensorSpec", "constant", "map_flat_values", "stack",
           "concat", "gather"]
