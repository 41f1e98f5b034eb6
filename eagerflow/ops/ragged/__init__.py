"""Primitives behind composite tensors: densifying ragged rows, vocabulary lookup.

* :mod:`eagerflow.ops.ragged.ragged_ops`: ``RaggedToDense`` (and its gradient) and
  ``TableLookup``.
"""
