"""``eagerflow.ragged``: ragged tensors (``tf.ragged``).

Example:
    >>> import eagerflow as ef
    >>> ef.ragged.constant([[1, 2], [3]]).flat_values.numpy().tolist()
    [1, 2, 3]
"""

from eagerflow.ragged.ragged_tensor import (  # noqa: F401
    RaggedTensor, RaggedTensorSpec, concat, constant, gather, map_flat_values, stack,
)

__all__ = ["RaggedTensor", "RaggedTensorSpec", "constant", "map_flat_values", "stack",
           "concat", "gather"]
