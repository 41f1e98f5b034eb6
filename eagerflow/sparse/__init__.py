"""``eagerflow.sparse``: sparse tensors in coordinate form (``tf.sparse``).

Example:
    >>> import eagerflow as ef
    >>> st = ef.sparse.from_dense([[0.0, 2.0]])
    >>> ef.sparse.reduce_sum(st).numpy()
    np.float32(2.0)
"""

from eagerflow.sparse.sparse_ops import (  # noqa: F401
    add, concat, from_dense, reduce_sum, reorder, reshape, retain, slice, sparse_dense_matmul,
    to_dense,
)
from eagerflow.sparse.sparse_tensor import SparseTensor, SparseTensorSpec  # noqa: F401

__all__ = ["SparseTensor", "SparseTensorSpec", "to_dense", "from_dense", "add", "reorder",
           "reshape", "sparse_dense_matmul", "reduce_sum", "retain", "slice", "concat"]
