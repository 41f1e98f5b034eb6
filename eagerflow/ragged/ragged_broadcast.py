"""Broadcasting a RaggedTensor against dense tensors of any rank, by TF's ragged rules.

Shapes line up from the right, as numpy's do, with a ragged dimension counting as a
dimension whose size varies by row:

* a dense operand of higher rank gives the ragged tensor new leading dimensions of size 1,
  each a uniform partition (``[2, None]`` against ``[3, 2, 1]`` is ``[1, 2, None]``);
* an outermost dimension of size 1 repeats to the other operand's size (``[3, 2, None]``);
* a dense dimension of size 1 repeats along the ragged tensor's rows, a ragged one
  included; a dense dimension of size ``k > 1`` lines up only with a dimension whose rows
  all have length ``k`` (checked eagerly; in a trace only the dimensions made here, whose
  lengths are known, are accepted).

The result keeps the ragged tensor's row partitions (with the new uniform ones in front),
and each dense operand is gathered onto its flat values at their coordinates, so the
elementwise op then runs on flat values only; the gathers trace and carry gradients to
both operands.

Example:
    >>> import eagerflow as ef
    >>> rt = ef.ragged.constant([[1.0, 2.0], [3.0]])
    >>> ef.add(rt, ef.constant([[10.0], [20.0]])).to_list()
    [[11.0, 12.0], [23.0]]
    >>> ef.add(rt, ef.zeros([3, 2, 1])).shape.as_list()
    [3, 2, None]
"""

from __future__ import annotations

import numpy as np

from eagerflow import _api as api
from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.static_value import constant_value
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["needs_broadcast", "broadcast_operands"]


def _rank(a):
    return len(a.shape) if hasattr(a, "shape") and a.shape is not None else np.ndim(a)


def needs_broadcast(template, dense):
    """True when a dense operand is deeper than the ragged tensor's inner dimensions."""
    return _rank(dense) > template.flat_values.ndim - 1


def _fail(op, text):
    return errors.InvalidArgumentError(None, op, "%s: %s" % (op, text))


def _tile_outer(rt, times):
    """``times`` copies of a one-row ragged tensor, stacked as its rows."""
    from eagerflow.ragged.ragged_tensor import RaggedTensor

    splits = list(rt.nested_row_splits)
    flat = rt.flat_values
    out = api.reshape(api.tile(api.expand_dims(flat, 0), [times] + [1] * flat.ndim),
                      [-1] + flat.shape.as_list()[1:])
    levels = []
    v = rt
    while isinstance(v, RaggedTensor):
        levels.append(v._uniform)
        v = v.values
    for s, uniform in zip(reversed(splits), reversed(levels)):
        offsets = api.range(times, dtype=s.dtype) * s[-1]
        tiled = api.reshape(api.expand_dims(s[1:], 0) + api.expand_dims(offsets, 1), [-1])
        out = RaggedTensor(out, api.concat([s[:1], tiled], 0), _internal=True,
                           _uniform=uniform)
    return out


def _lengths_are(splits, k):
    """Whether every row of one partition has length ``k`` (None when unknown: traced)."""
    value = constant_value(splits)
    if value is None:
        return None
    return bool(np.all(np.diff(value) == k))


def _coordinates(rt):
    """For each flat value, its index along each dimension up to the innermost ragged one."""
    splits = rt.nested_row_splits
    position = api.range(api.shape(rt.flat_values, out_type=d.int64)[0], dtype=d.int64)
    coords = []
    for s in reversed(splits):
        s = api.cast(s, d.int64)
        row = api.searchsorted(s[1:], position, side="right", out_type=d.int64)
        coords.insert(0, position - api.gather(s, row))
        position = row
    coords.insert(0, position)
    return coords


def broadcast_operands(op, template, args):
    """The result's partitions and the operands aligned with its flat values.

    Args:
        op: The op's name, for errors.
        template: The RaggedTensor whose partitions the ragged arguments share.
        args: The op's arguments: RaggedTensors (of ``template``'s partitions) and dense
            values, at least one deeper than the template's inner dimensions.

    Returns:
        ``(result, operands)``: a RaggedTensor whose partitions the result takes (its flat
        values are positions, to be replaced) and one flat operand per argument.

    Raises:
        InvalidArgumentError: If the shapes cannot broadcast.
        UnimplementedError: For a case that needs values a trace does not have.
    """
    from eagerflow.ragged.ragged_tensor import RaggedTensor

    dense = {i: (a if isinstance(a, Tensor) else convert_to_tensor(a))
             for i, a in enumerate(args) if not isinstance(a, RaggedTensor)
             and needs_broadcast(template, a)}
    rank = max([template.ndim] + [t.ndim for t in dense.values()])
    for i, t in dense.items():
        for _ in range(rank - t.ndim):
            t = api.expand_dims(t, 0)
        dense[i] = t
    nvalues = api.shape(template.flat_values, out_type=d.int64)[0]
    result = template.with_flat_values(api.range(nvalues, dtype=d.int64))
    # Known row lengths of each partition (outermost first); None where ragged.
    uniform = [None] * template.ragged_rank
    dtype = template.row_splits.dtype
    for _ in range(rank - template.ndim):
        n = result.shape[0]
        count = api.cast(api.shape(result.row_splits, out_type=d.int64)[0] - 1, dtype)
        result = RaggedTensor(result, api.stack([api.zeros([], dtype), count]), _internal=True,
                              _uniform=n)
        uniform.insert(0, n)
    ragged_rank = result.ragged_rank
    shapes = {i: t.shape.as_list() for i, t in dense.items()}
    tiled = False
    outer = sorted({s[0] for s in shapes.values()} - {1}, key=str)
    if outer:
        if len(outer) > 1 or outer[0] is None:
            raise errors.UnimplementedError(
                None, op, "%s: the dense operands' outermost sizes %s must be static and "
                "agree to broadcast against a RaggedTensor." % (op, outer))
        size = outer[0]
        nrows = result.shape[0]
        if nrows == 1:
            result, tiled = _tile_outer(result, size), True
        elif nrows is None:
            raise errors.UnimplementedError(
                None, op, "%s: broadcasting needs the RaggedTensor's number of rows, unknown "
                "in this trace." % op)
        elif nrows != size:
            raise _fail(op, "a RaggedTensor with %d rows does not broadcast against a dense "
                            "dimension of size %d." % (nrows, size))
    for level in range(ragged_rank):
        sizes = sorted({s[level + 1] for s in shapes.values()} - {1}, key=str)
        if not sizes:
            continue
        if len(sizes) > 1 or sizes[0] is None:
            raise errors.UnimplementedError(
                None, op, "%s: dense sizes %s against ragged dimension %d must be static and "
                "agree." % (op, sizes, level + 1))
        k = sizes[0]
        same = (uniform[level] == k) if uniform[level] is not None else \
            _lengths_are(result.nested_row_splits[level], k)
        if same is None:
            raise errors.UnimplementedError(
                None, op, "%s: dimension %d of the RaggedTensor is ragged and a dense operand "
                "has size %d there; in a trace the row lengths are unknown, so only size 1 "
                "broadcasts against it." % (op, level + 1, k))
        if not same:
            raise _fail(op, "dimension %d of the RaggedTensor (shape %s) has rows of other "
                            "lengths than the dense operand's size %d there; a dense "
                            "dimension must be 1 or equal every row's length."
                        % (level + 1, result.shape, k))
    coords = _coordinates(result)
    positions = result.flat_values
    operands = []
    for i, a in enumerate(args):
        if isinstance(a, RaggedTensor):
            operands.append(api.gather(a.flat_values, positions) if tiled else a.flat_values)
        elif i in dense:
            index = [coords[k] if shapes[i][k] != 1 else api.zeros_like(coords[k])
                     for k in range(ragged_rank + 1)]
            operands.append(api.gather_nd(dense[i], api.stack(index, axis=1)))
        else:
            operands.append(a)
    return result, operands
