"""Functions of RaggedTensors (``tf.ragged``): build one from lists, map over its values,
stack, concatenate and gather rows.

Example:
    >>> import eagerflow as ef
    >>> ef.ragged.concat([ef.ragged.constant([[1], [2, 3]]), ef.ragged.constant([[4]])],
    ...                  axis=0).to_list()
    [[1], [2, 3], [4]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ragged.ragged_tensor import (
    RaggedTensor, _mismatched_splits, concat_rows, concat_values, gather_rows, same_partitions,
    stack_rows,
)
from eagerflow.tensor import convert_to_tensor

__all__ = ["constant", "map_flat_values", "stack", "concat", "gather"]


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None,
             row_splits_dtype=d.int64):
    """A RaggedTensor from nested Python lists (``tf.ragged.constant``).

    Example:
        >>> import eagerflow as ef
        >>> ef.ragged.constant([["a", "b"], ["c"]]).to_list()
        [[b'a', b'b'], [b'c']]
    """
    depth = _depth(pylist)
    if depth < 1:
        raise errors.InvalidArgumentError(
            None, "RaggedTensor", "ragged.constant needs a list of rank >= 1, got %r."
            % (pylist,))
    rank = depth - 1 if ragged_rank is None else int(ragged_rank)
    if inner_shape is not None and ragged_rank is None:
        rank = depth - 1 - len(inner_shape)
    splits = []
    level = [pylist]
    for _ in range(rank + 1):
        nxt, s = [], [0]
        for row in level:
            nxt.extend(row)
            s.append(len(nxt))
        splits.append(np.asarray(s, d.as_dtype(row_splits_dtype).np_dtype))
        level = nxt
    splits = splits[1:]
    values = convert_to_tensor(level, dtype=dtype) if level else convert_to_tensor(
        np.zeros((0,) + tuple(inner_shape or ()),
                 (d.as_dtype(dtype) if dtype is not None else d.float32).np_dtype))
    if rank == 0:
        return convert_to_tensor(pylist, dtype=dtype)
    if d.as_dtype(row_splits_dtype) not in (d.int32, d.int64):
        raise ValueError("ragged.constant: row_splits_dtype must be int32 or int64, got %s."
                         % d.as_dtype(row_splits_dtype).name)
    return RaggedTensor.from_nested_row_splits(values, splits)


def _depth(value):
    if isinstance(value, (list, tuple)):
        depths = [_depth(v) for v in value]
        return 1 + (max(depths) if depths else 0)
    if isinstance(value, np.ndarray):
        return value.ndim
    return 0


def map_flat_values(op, *args, **kwargs):
    """Applies ``op`` to the flat values of the ragged arguments (``tf.ragged.map_flat_values``).

    Example:
        >>> import eagerflow as ef
        >>> rt = ef.ragged.constant([[1.0, 2.0], [3.0]])
        >>> ef.ragged.map_flat_values(ef.square, rt).to_list()
        [[1.0, 4.0], [9.0]]
    """
    template = None
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, RaggedTensor):
            if template is not None and not same_partitions(template, a):
                raise errors.InvalidArgumentError(
                    None, "map_flat_values", "all ragged arguments need the same partitions.")
            template = template or a
    if template is None:
        return op(*args, **kwargs)
    unwrap = (lambda a: a.flat_values if isinstance(a, RaggedTensor) else a)
    out = op(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
    return template.with_flat_values(out)


def stack(values, axis=0, name=None):
    """Stacks tensors (ragged or dense) into a RaggedTensor along ``axis=0``.

    Example:
        >>> import eagerflow as ef
        >>> ef.ragged.stack([ef.constant([1, 2]), ef.constant([3])]).to_list()
        [[1, 2], [3]]
    """
    if axis != 0:
        raise errors.UnimplementedError(
            None, "RaggedStack", "ragged.stack supports axis=0 only, got %r." % axis)
    return stack_rows([v if isinstance(v, RaggedTensor) else convert_to_tensor(v)
                       for v in values])


def concat(values, axis, name=None):
    """Concatenates ragged tensors (axis 0 or 1), as ``tf.concat`` does for ragged inputs.

    Example:
        >>> import eagerflow as ef
        >>> a, b = ef.ragged.constant([[1], [2, 3]]), ef.ragged.constant([[4, 5], []])
        >>> ef.ragged.concat([a, b], axis=1).to_list()
        [[1, 4, 5], [2, 3]]
    """
    values = [v if isinstance(v, RaggedTensor) else RaggedTensor.from_tensor(v)
              for v in values]
    if axis == 0:
        return concat_rows(values)
    if axis == 1:
        n = len(values[0])
        if any(len(v) != n for v in values):
            raise errors.InvalidArgumentError(
                None, "RaggedConcat", "concat along axis 1 needs the same number of rows, got "
                "%s." % [len(v) for v in values])
        if len({v.row_splits.dtype for v in values}) > 1:
            raise _mismatched_splits()
        rows = [concat_values([v[i] for v in values]) for i in range(n)]
        return stack_rows(rows, values[0].row_splits.dtype) if rows else values[0]
    raise errors.UnimplementedError(
        None, "RaggedConcat", "ragged concat supports axis 0 and 1, got %r." % axis)


def gather(params, indices, name=None):
    """Rows of a RaggedTensor (``tf.gather`` on ragged ``params``).

    Example:
        >>> import eagerflow as ef
        >>> ef.ragged.gather(ef.ragged.constant([[1], [2, 3], []]), [1, 0]).to_list()
        [[2, 3], [1]]
    """
    idx = np.asarray(convert_to_tensor(indices)._value).astype(np.int64).reshape(-1)
    n = len(params)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise errors.InvalidArgumentError(
            None, "RaggedGather", "gather: indices %s out of range for %d rows."
            % (idx.tolist(), n))
    s = np.asarray(params.row_splits._value)
    value_idx = np.concatenate([np.arange(s[r], s[r + 1]) for r in idx]) if idx.size else \
        np.zeros(0, np.int64)
    return RaggedTensor.from_row_lengths(gather_rows(params.values, value_idx),
                                         (s[1:] - s[:-1])[idx].astype(s.dtype))
