"""Random access to in-memory sources: the fast path behind batching numpy-backed data.

A dataset made from arrays (``from_tensor_slices``, ``range``) can hand out any set of its
elements at once: ``gather(index)`` returns every component's rows for an index that is a
slice or an int64 array. A pass over such a dataset is then a stream of *index blocks*
rather than of elements, and the order-only transformations (``take``, ``skip``,
``repeat``, ``shard``, ``shuffle``, ``zip`` of equal sources) work on those blocks. ``batch``
then gathers ``batch_size`` positions at once: contiguous ranges become numpy slices (views,
no copy) and shuffled ones a single fancy-indexing copy, instead of stacking one element at
a time.

Every pass over a Rows object, element by element or batch by batch, visits the same
positions in the same order, so ``ds.shuffle(n, seed=1)`` and ``ds.shuffle(n, seed=1)
.batch(4)`` agree exactly.
"""

from __future__ import annotations

import itertools

import numpy as np

from eagerflow.data import structure

__all__ = ["Rows", "block_length", "take_blocks", "skip_blocks", "shard_blocks",
           "repeat_blocks", "chunked", "stream_positions", "iterate_elements", "iterate_batches"]


# Element-by-element passes gather this many positions at a time.
_ELEMENT_CHUNK = 4096


class Rows:
    """Row access to a dataset's elements.

    Args:
        gather: index (a slice or an int64 array) -> tuple of numpy arrays, one per
            component, each with ``len(index)`` rows.
        size: Number of rows ``gather`` can address.
        template: The element structure (the element_spec), for packing components.
        blocks: A callable starting one pass: it returns an iterator of index blocks. None
            means the plain pass ``slice(0, size)``.

    Example:
        >>> import numpy as np
        >>> from eagerflow.data import rows
        >>> data = np.arange(10) * 10
        >>> r = rows.Rows(lambda index: (data[index],), 10, None,
        ...               blocks=lambda: iter([slice(2, 7, 1)]))
        >>> [b.numpy().tolist() for b in rows.iterate_batches(r, 2, drop_remainder=False)]
        [[20, 30], [40, 50], [60]]
    """

    __slots__ = ("gather", "size", "template", "blocks", "plain")

    def __init__(self, gather, size, template, blocks=None):
        self.gather = gather
        self.size = size
        self.template = template
        self.plain = blocks is None
        self.blocks = blocks if blocks is not None else (lambda: iter((slice(0, size, 1),)))


# -- index blocks: a normalized slice (0 <= start, step >= 1) or an int64 array ------------


def block_length(block):
    if isinstance(block, slice):
        return max(0, -(-(block.stop - block.start) // block.step))
    return len(block)


def _split(block, k):
    """(the first k positions, the rest)."""
    if isinstance(block, slice):
        cut = min(block.stop, block.start + k * block.step)
        return slice(block.start, cut, block.step), slice(cut, block.stop, block.step)
    return block[:k], block[k:]


def _as_array(block):
    if isinstance(block, slice):
        return np.arange(block.start, block.stop, block.step, dtype=np.int64)
    return block


def _merge(parts):
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([_as_array(p) for p in parts])


def take_blocks(blocks, count):
    """The first ``count`` positions of a stream of blocks."""
    remaining = count
    for block in blocks:
        if remaining <= 0:
            return
        n = block_length(block)
        if n > remaining:
            block, _ = _split(block, remaining)
            n = remaining
        remaining -= n
        yield block


def skip_blocks(blocks, count):
    """All but the first ``count`` positions of a stream of blocks."""
    remaining = count
    for block in blocks:
        if remaining > 0:
            n = block_length(block)
            if n <= remaining:
                remaining -= n
                continue
            _, block = _split(block, remaining)
            remaining = 0
        yield block


def shard_blocks(blocks, num_shards, index):
    """Positions whose place in the stream is ``index`` modulo ``num_shards``."""
    offset = 0  # place in the stream of the block's first position
    for block in blocks:
        n = block_length(block)
        first = (index - offset) % num_shards  # first kept position within this block
        if first < n:
            if isinstance(block, slice):
                start = block.start + first * block.step
                yield slice(start, block.stop, block.step * num_shards)
            else:
                yield block[first::num_shards]
        offset += n


def repeat_blocks(start_pass, count):
    """``count`` passes (None: forever); stops early if a pass is empty (as TF's repeat)."""
    passes = itertools.count() if count is None else range(count)
    for _ in passes:
        empty = True
        for block in start_pass():
            if block_length(block):
                empty = False
                yield block
        if empty:
            return


def chunked(blocks, size):
    """The same positions in blocks of at most ``size`` (bounds memory on huge ranges)."""
    for block in blocks:
        while block_length(block) > size:
            head, block = _split(block, size)
            yield head
        yield block


def stream_positions(blocks):
    """The positions of a stream of blocks as Python ints."""
    for block in chunked(blocks, _ELEMENT_CHUNK):
        yield from _as_array(block).tolist()


# -- iterating --------------------------------------------------------------------------------


def iterate_elements(rows):
    """Yields a pass's elements one at a time (packed, components as CPU Tensors)."""
    pack = structure.packer(rows.template)
    gather = rows.gather
    wrap = structure.wrap_array
    for block in chunked(rows.blocks(), _ELEMENT_CHUNK):
        n = block_length(block)
        if not n:
            continue
        arrays = gather(block)
        for i in range(n):
            yield pack([wrap(a[i, ...]) for a in arrays])


def iterate_batches(rows, batch_size, drop_remainder):
    """Yields a pass's elements in batches, one ``gather`` per batch."""
    pack = structure.packer(rows.template)
    gather = rows.gather
    wrap = structure.wrap_array
    parts, count = [], 0
    for block in rows.blocks():
        while True:
            n = block_length(block)
            if not n:
                break
            need = batch_size - count
            if n <= need:
                parts.append(block)
                count += n
                block = None
            else:
                head, block = _split(block, need)
                parts.append(head)
                count = batch_size
            if count == batch_size:
                yield pack([wrap(a) for a in gather(_merge(parts))])
                parts, count = [], 0
            if block is None:
                break
    if count and not drop_remainder:
        yield pack([wrap(a) for a in gather(_merge(parts))])
