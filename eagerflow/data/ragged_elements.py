"""Ragged components of dataset elements: slicing, batching and unbatching them.

As in tf.data, a component described by a ``RaggedTensorSpec`` of ragged rank ``r`` holds a
RaggedTensor when ``r >= 1`` and a dense Tensor when ``r == 0`` (a row of a RaggedTensor of
ragged rank 1, such as ``from_tensor_slices`` yields). Batching such components adds a
ragged dimension (``r + 1``) and unbatching removes one. The work is done on the host
arrays (flat values and row splits): a batch is one concatenation per level, a row a view.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.data import ragged_elements
    >>> rows = ragged_elements.rows(ef.ragged.constant([[1, 2], [], [3]]))
    >>> [r.numpy().tolist() for r in rows]
    [[1, 2], [], [3]]
    >>> ragged_elements.stack(rows).to_list()
    [[1, 2], [], [3]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.data import structure
from eagerflow.ragged import RaggedTensor, RaggedTensorSpec
from eagerflow.tensor_shape import TensorSpec

__all__ = ["is_ragged", "is_ragged_spec", "rows", "nrows", "stack", "from_dense",
           "to_ragged_spec", "probe", "component_arrays", "component_count",
           "from_component_arrays"]


def is_ragged(value):
    """True for a RaggedTensor."""
    return isinstance(value, RaggedTensor)


def is_ragged_spec(spec):
    """True for a RaggedTensorSpec."""
    return isinstance(spec, RaggedTensorSpec)


def _parts(value):
    """(flat values array, [row splits arrays, outermost first]) of a value."""
    if isinstance(value, RaggedTensor):
        return (structure.host_value(value.flat_values),
                [structure.host_value(s) for s in value.nested_row_splits])
    return structure.host_value(value), []


def _build(flat, splits, validate=False):
    values = structure.wrap_read_only_view(flat)
    if not splits:
        return values
    return RaggedTensor.from_nested_row_splits(
        values, [structure.wrap_read_only_view(s) for s in splits], validate=validate)


def component_arrays(value):
    """A value's host arrays: the flat values, then each level's row splits."""
    flat, splits = _parts(value)
    return [flat] + splits


def component_count(spec):
    """How many arrays :func:`component_arrays` gives for a value of ``spec``."""
    return 1 + spec.ragged_rank if isinstance(spec, RaggedTensorSpec) else 1


def from_component_arrays(arrays):
    """The value of :func:`component_arrays`; the row splits are checked (arrays read
    from a file are untrusted), raising InvalidArgumentError if they are inconsistent."""
    for s in arrays[1:]:
        if s.ndim != 1 or s.dtype not in (np.int64, np.int32) or s.dtype != arrays[1].dtype:
            raise errors.InvalidArgumentError(
                None, "RaggedTensor", "row splits must be int64 (or int32) vectors of one "
                "dtype, got %s %s."
                % (s.dtype, list(s.shape)))
    return _build(arrays[0], list(arrays[1:]), validate=True)


def nrows(value):
    """The size of a value's first dimension."""
    if isinstance(value, RaggedTensor):
        return int(value.row_splits.shape[0]) - 1
    return int(value.shape[0])


def rows(value):
    """The rows of a RaggedTensor, each with one ragged dimension fewer (a dense Tensor for
    ragged rank 1); a dense Tensor gives its slices along the first dimension."""
    flat, splits = _parts(value)
    if not splits:
        return [structure.wrap_read_only_view(flat[i]) for i in range(flat.shape[0])]
    outer, inner = splits[0], splits[1:]
    out = []
    for i in range(outer.shape[0] - 1):
        start, stop = int(outer[i]), int(outer[i + 1])
        levels = []
        for s in inner:  # narrow each deeper level to the positions of this row
            piece = s[start:stop + 1]
            levels.append(piece - piece[0])
            start, stop = int(piece[0]), int(piece[-1])
        out.append(_build(flat[start:stop], levels))
    return out


def stack(values, splits_dtype=None):
    """One RaggedTensor whose rows are ``values`` (all of one ragged rank and dtype); the new
    partition takes the rows' splits dtype, or ``splits_dtype`` (the spec's) for dense rows.

    Raises:
        InvalidArgumentError: If the values' ragged ranks, dtypes or inner dimensions differ.
    """
    parts = [_parts(v) for v in values]
    depth = len(parts[0][1])
    first = parts[0][0]
    for index, (flat, splits) in enumerate(parts):
        if len(splits) != depth or flat.dtype != first.dtype or \
                flat.shape[1:] != first.shape[1:]:
            raise errors.InvalidArgumentError(
                None, "batch", "Cannot batch ragged components that differ: element 0 has "
                "ragged rank %d, dtype %s and inner shape %s, element %d has %d, %s and %s."
                % (depth, first.dtype, list(first.shape[1:]), index, len(splits), flat.dtype,
                   list(flat.shape[1:])))
    # The rows' partitions keep their dtype (int32 stays int32, as in TF).
    dtype = parts[0][1][0].dtype if depth else np.dtype(
        splits_dtype.np_dtype if splits_dtype is not None else np.int64)
    if any(sp[0].dtype != dtype for _, sp in parts if sp):
        raise errors.InvalidArgumentError(
            None, "batch", "Cannot batch ragged components whose row splits have different "
            "dtypes; use RaggedTensor.with_row_splits_dtype() to convert them.")
    lengths = np.asarray([p[1][0].shape[0] - 1 if depth else p[0].shape[0] for p in parts],
                         dtype)
    outer = np.concatenate([np.zeros(1, dtype), np.cumsum(lengths).astype(dtype)])
    levels = [outer]
    for k in range(depth):
        pieces, offset = [np.zeros(1, dtype)], 0
        for _, splits in parts:
            s = splits[k]
            pieces.append(s[1:] + offset)
            offset += int(s[-1])
        levels.append(np.concatenate(pieces))
    flat = np.concatenate([p[0] for p in parts])
    return _build(flat, levels)


def to_ragged_spec(spec, row_splits_dtype):
    """``ragged_batch``'s rule (TF's): a dense component with an unknown dimension becomes
    ragged up to its last unknown dimension; others stay as they are."""
    if not isinstance(spec, TensorSpec) or spec.shape.rank in (None, 0) or \
            spec.shape.is_fully_defined():
        return spec
    dims = spec.shape.as_list()
    ragged_rank = max(i for i, n in enumerate(dims) if n is None)
    return RaggedTensorSpec(dims, spec.dtype, ragged_rank, row_splits_dtype)


def from_dense(value, ragged_rank):
    """A dense Tensor as a RaggedTensor of ``ragged_rank`` with uniform rows (itself for 0)."""
    if not ragged_rank or isinstance(value, RaggedTensor):
        return value
    array = structure.host_value(value)
    dims = array.shape
    splits, count = [], 1
    for k in range(ragged_rank):
        count *= dims[k]
        splits.append(np.arange(0, count * dims[k + 1] + 1, max(dims[k + 1], 1),
                                dtype=np.int64)[:count + 1] if dims[k + 1] else
                      np.zeros(count + 1, np.int64))
    flat = array.reshape((count * dims[ragged_rank],) + dims[ragged_rank + 1:])
    return _build(flat, splits)


def probe(spec, size, fill):
    """An example value of a RaggedTensorSpec: ``size`` rows (where the dimension is
    unknown) of ``size`` values each, filled with ``fill``."""
    dims = [size if n is None else n for n in spec.shape.as_list()]
    flat = np.full([int(np.prod(dims[:spec.ragged_rank + 1]))] + dims[spec.ragged_rank + 1:],
                   fill, spec.dtype.np_dtype)
    if not spec.ragged_rank:
        return structure.wrap_array(flat.reshape(dims))
    return from_dense(structure.wrap_array(flat.reshape(dims)), spec.ragged_rank)
