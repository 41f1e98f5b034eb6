"""Primitives behind SparseTensor whose output size depends on a dense shape's values.

* :mod:`eagerflow.ops.sparse.sparse_ops`: ``SparseToDense``, ``SparseTensorDenseMatMul``
  and ``SparseReshape``. Everything else in ``tf.sparse`` is built from ordinary ops.
"""
