"""Sparse components of dataset elements: slicing, batching and unbatching SparseTensors.

As in tf.data, batching SparseTensors of rank ``r`` gives one SparseTensor of rank ``r + 1``
(each element's indices with its position in the batch in front, the dense shape the
largest of each dimension), and unbatching splits one along its first dimension: what
``map(parse_example)`` with a ``VarLenFeature`` produces flows through ``batch`` and
``unbatch``. The work is done on the host arrays.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.data import sparse_elements
    >>> rows = sparse_elements.rows(ef.SparseTensor([[0, 1], [2, 0]], [5, 6], [3, 2]))
    >>> [ef.sparse.to_dense(r).numpy().tolist() for r in rows]
    [[0, 5], [0, 0], [6, 0]]
    >>> ef.sparse.to_dense(sparse_elements.stack(rows)).numpy().tolist()
    [[0, 5], [0, 0], [6, 0]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.data import structure
from eagerflow.sparse.sparse_tensor import SparseTensor, SparseTensorSpec

__all__ = ["is_sparse", "is_sparse_spec", "rows", "nrows", "stack", "probe",
           "component_arrays", "from_component_arrays"]


def is_sparse(value):
    """True for a SparseTensor."""
    return isinstance(value, SparseTensor)


def is_sparse_spec(spec):
    """True for a SparseTensorSpec."""
    return isinstance(spec, SparseTensorSpec)


def _build(indices, values, dense_shape):
    wrap = structure.wrap_read_only_view
    return SparseTensor._from_parts(wrap(indices), wrap(values), wrap(dense_shape))


def component_arrays(value):
    """A SparseTensor's host arrays: indices, values, dense_shape."""
    host = structure.host_value
    return [host(value.indices), host(value.values), host(value.dense_shape)]


def nrows(value):
    """The size of a SparseTensor's first dimension."""
    return int(structure.host_value(value.dense_shape)[0])


def rows(value):
    """The slices of a SparseTensor along its first dimension (each of rank one less)."""
    indices, values, shape = component_arrays(value)
    if shape.size == 0:
        raise errors.InvalidArgumentError(
            None, "unbatch", "A scalar SparseTensor has no first dimension to split.")
    order = np.argsort(indices[:, 0], kind="stable") if indices.size else np.zeros(0, np.int64)
    indices, values = indices[order], values[order]
    bounds = np.searchsorted(indices[:, 0], np.arange(int(shape[0]) + 1)) if indices.size \
        else np.zeros(int(shape[0]) + 1, np.int64)
    inner = shape[1:]
    return [_build(indices[a:b, 1:], values[a:b], inner) for a, b in zip(bounds[:-1], bounds[1:])]


def stack(values):
    """One SparseTensor whose slices along a new first dimension are ``values``.

    Raises:
        InvalidArgumentError: If the values' ranks or dtypes differ.
    """
    parts = [component_arrays(v) for v in values]
    rank = parts[0][2].size
    dtype = parts[0][1].dtype
    for i, (_, vals, shape) in enumerate(parts):
        if shape.size != rank or vals.dtype != dtype:
            raise errors.InvalidArgumentError(
                None, "batch", "Cannot batch SparseTensors of different ranks or dtypes: "
                "element 0 has rank %d and dtype %s, element %d has %d and %s."
                % (rank, dtype, i, shape.size, vals.dtype))
    indices = np.concatenate(
        [np.concatenate([np.full((len(idx), 1), i, np.int64), idx.reshape(len(idx), rank)], 1)
         for i, (idx, _, _) in enumerate(parts)]) if parts else np.zeros((0, rank + 1), np.int64)
    dense = np.max(np.stack([p[2] for p in parts]), 0) if rank else np.zeros(0, np.int64)
    shape = np.concatenate([np.asarray([len(parts)], np.int64), dense.astype(np.int64)])
    return _build(indices, np.concatenate([p[1] for p in parts]), shape)


def from_component_arrays(arrays):
    """The SparseTensor of :func:`component_arrays`; arrays read from a file are untrusted,
    so the SparseTensor constructor checks that they fit together (InvalidArgumentError)."""
    indices, values, shape = arrays
    if indices.dtype != np.int64 or shape.dtype != np.int64:
        raise errors.InvalidArgumentError(
            None, "SparseTensor", "indices and dense_shape must be int64, got %s and %s."
            % (indices.dtype, shape.dtype))
    if shape.ndim == 1 and indices.size == 0:
        indices = indices.reshape(0, shape.size)
    return SparseTensor(indices, values, shape)


def probe(spec, size, fill):
    """An example SparseTensor of ``spec`` (unknown dimensions ``size``), with one value."""
    dims = [size if n is None else n for n in (spec.shape.as_list() if spec.shape.rank
                                                is not None else [size])]
    index = np.zeros((1 if all(dims) else 0, len(dims)), np.int64)
    return _build(index, np.full(len(index), fill, spec.dtype.np_dtype),
                  np.asarray(dims, np.int64))
