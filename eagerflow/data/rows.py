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

import numpy as np

from eagerflow.data import structure
from eagerflow.data.iterator_state import StatefulIterator

__all__ = ["Rows", "block_length", "take_blocks", "skip_blocks", "shard_blocks",
           "repeat_blocks", "chunked", "iterate_elements", "iterate_batches"]


_wrap = structure.wrap_array

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
        self.blocks = blocks if blocks is not None else (lambda: PlainBlocks(size))


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


class _Blocks(StatefulIterator):
    """A stream of index blocks whose position can be saved (see ``iterator_state``)."""

    __slots__ = ("_input",)

    def close(self):
        if self._input is not None:
            self._input.close()

    def _save_input(self, writer):
        writer.save_input("", self._input, _stream_name(self._input))

    def _restore_input(self, reader):
        reader.restore_input("", self._input, _stream_name(self._input))


def _stream_name(stream):
    return getattr(stream, "_op", type(stream).__name__)


class PlainBlocks(_Blocks):
    """The plain pass over ``size`` rows: one slice."""

    __slots__ = ("_size", "_done")
    _op = "Slice"

    def __init__(self, size):
        self._input = None
        self._size = size
        self._done = False

    def __next__(self):
        if self._done:
            raise StopIteration
        self._done = True
        return slice(0, self._size, 1)

    def save(self, writer):
        writer.int("done", self._done)

    def restore(self, reader):
        self._done = bool(reader.int("done"))


class _CountedBlocks(_Blocks):
    """A block stream that passes a count of positions through its input (Take, Skip):
    the count still to go is its saved state."""

    __slots__ = ("_remaining",)

    def __init__(self, blocks, count):
        self._input = blocks
        self._remaining = count

    def save(self, writer):
        writer.int("remaining", self._remaining)
        self._save_input(writer)

    def restore(self, reader):
        self._remaining = reader.count("remaining", self._remaining)
        self._restore_input(reader)


class _TakeBlocks(_CountedBlocks):
    __slots__ = ()
    _op = "Take"

    def __next__(self):
        if self._remaining <= 0 or self._input is None:
            raise StopIteration
        block = next(self._input)
        n = block_length(block)
        if n > self._remaining:
            block, _ = _split(block, self._remaining)
            n = self._remaining
        self._remaining -= n
        return block


def take_blocks(blocks, count):
    """The first ``count`` positions of a stream of blocks."""
    return _TakeBlocks(blocks, count)


class _SkipBlocks(_CountedBlocks):
    __slots__ = ()
    _op = "Skip"

    def __next__(self):
        while True:
            block = next(self._input)
            if self._remaining <= 0:
                return block
            n = block_length(block)
            if n <= self._remaining:
                self._remaining -= n
                continue
            _, block = _split(block, self._remaining)
            self._remaining = 0
            return block


def skip_blocks(blocks, count):
    """All but the first ``count`` positions of a stream of blocks."""
    return _SkipBlocks(blocks, count)


class _ShardBlocks(_Blocks):
    __slots__ = ("_num", "_index", "_offset")
    _op = "Shard"

    def __init__(self, blocks, num_shards, index):
        self._input = blocks
        self._num, self._index = num_shards, index
        self._offset = 0  # place in the stream of the next block's first position

    def __next__(self):
        num = self._num
        while True:
            block = next(self._input)
            n = block_length(block)
            first = (self._index - self._offset) % num  # first kept position in the block
            self._offset += n
            if first < n:
                if isinstance(block, slice):
                    start = block.start + first * block.step
                    return slice(start, block.stop, block.step * num)
                return block[first::num]

    def save(self, writer):
        writer.int("offset", self._offset)
        self._save_input(writer)

    def restore(self, reader):
        self._offset = reader.count("offset")
        self._restore_input(reader)


def shard_blocks(blocks, num_shards, index):
    """Positions whose place in the stream is ``index`` modulo ``num_shards``."""
    return _ShardBlocks(blocks, num_shards, index)


class _RepeatBlocks(_Blocks):
    __slots__ = ("_start_pass", "_count", "_passes", "_empty")
    _op = "Repeat"

    def __init__(self, start_pass, count):
        self._start_pass = start_pass
        self._count = count
        self._passes = 0  # passes started
        self._empty = True
        self._input = None
        if count != 0:  # the first pass starts with the iterator, as in TF
            self._input = start_pass()
            self._passes = 1

    def __next__(self):
        while True:
            if self._input is None:
                if self._count is not None and self._passes >= self._count:
                    raise StopIteration
                self._input = self._start_pass()
                self._passes += 1
                self._empty = True
            for block in self._input:
                if block_length(block):
                    self._empty = False
                    return block
            self._input = None
            if self._empty:  # repeating an empty pass would never yield: stop, as TF
                self._count = self._passes
                raise StopIteration

    def save(self, writer):
        writer.int("passes", self._passes)
        writer.int("empty", self._empty)
        writer.int("ended", self._count is not None and self._count == self._passes and
                   self._input is None)
        writer.int("in_pass", self._input is not None)
        if self._input is not None:
            self._save_input(writer)

    def restore(self, reader):
        self._passes = reader.count("passes", self._count)
        self._empty = bool(reader.int("empty"))
        if reader.int("ended"):
            self._count = self._passes
        if not reader.int("in_pass"):
            self._input = None
        else:
            self._input = self._start_pass()
            reader.restore_input("", self._input, _stream_name(self._input))


def repeat_blocks(start_pass, count):
    """``count`` passes (None: forever); stops early if a pass is empty (as TF's repeat)."""
    return _RepeatBlocks(start_pass, count)


class _ChunkedBlocks(_Blocks):
    __slots__ = ("_size", "_pending")
    _op = "Chunk"

    def __init__(self, blocks, size):
        self._input = blocks
        self._size = size
        self._pending = None

    def __next__(self):
        block = self._pending
        if block is None:
            block = next(self._input)
        if block_length(block) > self._size:
            block, self._pending = _split(block, self._size)
        else:
            self._pending = None
        return block

    def save(self, writer):
        writer.int("pending", self._pending is not None)
        if self._pending is not None:
            writer.block("block", self._pending)
        self._save_input(writer)

    def restore(self, reader):
        self._pending = reader.block("block") if reader.int("pending") else None
        self._restore_input(reader)


def chunked(blocks, size):
    """The same positions in blocks of at most ``size`` (bounds memory on huge ranges)."""
    return _ChunkedBlocks(blocks, size)


# -- iterating --------------------------------------------------------------------------------


class _RowElements(StatefulIterator):
    """A pass's elements one at a time (packed, components as CPU Tensors).

    Its state is the positions of the gathered chunk not yet returned and the stream's.
    """

    __slots__ = ("_rows", "_pack", "_stream", "_block", "_arrays", "_at", "_n")
    _op = "Rows"

    def __init__(self, rows):
        self._rows = rows
        self._pack = structure.packer(rows.template)
        self._stream = _ChunkedBlocks(rows.blocks(), _ELEMENT_CHUNK)
        self._block, self._arrays, self._at, self._n = None, (), 0, 0

    def _advance(self):
        n = 0
        while not n:
            block = next(self._stream)
            n = block_length(block)
        self._block, self._n, self._at = block, n, 0
        self._arrays = self._rows.gather(block)

    def __next__(self):
        # The hot path of in-memory pipelines: keep it to a few attribute reads.
        i = self._at
        if i >= self._n:
            self._advance()
            i = 0
        self._at = i + 1
        return self._pack([_wrap(a[i, ...]) for a in self._arrays])

    def close(self):
        self._stream.close()

    def save(self, writer):
        rest = None if self._block is None else _split(self._block, self._at)[1]
        writer.int("pending", rest is not None)
        if rest is not None:
            writer.block("block", rest)
        writer.save_input("", self._stream, self._stream._op)

    def restore(self, reader):
        block = reader.block("block") if reader.int("pending") else None
        _check_block(block, self._rows.size, reader)
        reader.restore_input("", self._stream, self._stream._op)
        if block is not None and block_length(block):
            self._block, self._n, self._at = block, block_length(block), 0
            self._arrays = self._rows.gather(block)


def _check_block(block, size, reader):
    """A restored block must address rows that exist."""
    if block is None or not block_length(block):
        return
    if isinstance(block, slice):
        last = block.start + (block_length(block) - 1) * block.step
        bad = last >= size
    else:
        bad = int(block.min()) < 0 or int(block.max()) >= size
    if bad:
        from eagerflow.data.iterator_state import _not_found

        raise _not_found(reader.prefix, "saved positions beyond the %d rows" % size)


def iterate_elements(rows):
    """A pass's elements one at a time (an iterator whose position can be saved)."""
    return _RowElements(rows)


class _RowBatches(StatefulIterator):
    """A pass's elements in batches, one ``gather`` per batch."""

    __slots__ = ("_rows", "_pack", "_stream", "_batch_size", "_drop", "_block", "_done")
    _op = "RowBatches"

    def __init__(self, rows, batch_size, drop_remainder):
        self._rows = rows
        self._pack = structure.packer(rows.template)
        self._stream = rows.blocks()
        self._batch_size, self._drop = batch_size, drop_remainder
        self._block = None  # positions taken from the stream, not yet batched
        self._done = False

    def _emit(self, parts):
        wrap = structure.wrap_array
        return self._pack([wrap(a) for a in self._rows.gather(_merge(parts))])

    def __next__(self):
        if self._done:
            raise StopIteration
        parts, count = [], 0
        while True:
            block = self._block
            if block is None:
                try:
                    block = next(self._stream)
                except StopIteration:
                    self._done = True
                    if count and not self._drop:
                        return self._emit(parts)
                    raise
            n = block_length(block)
            need = self._batch_size - count
            if n <= need:
                self._block = None
                if n:
                    parts.append(block)
                    count += n
            else:
                head, self._block = _split(block, need)
                parts.append(head)
                count = self._batch_size
            if count == self._batch_size:
                return self._emit(parts)

    def close(self):
        self._stream.close()

    def save(self, writer):
        writer.int("done", self._done)
        writer.int("pending", self._block is not None)
        if self._block is not None:
            writer.block("block", self._block)
        writer.save_input("", self._stream, _stream_name(self._stream))

    def restore(self, reader):
        self._done = bool(reader.int("done"))
        self._block = reader.block("block") if reader.int("pending") else None
        _check_block(self._block, self._rows.size, reader)
        reader.restore_input("", self._stream, _stream_name(self._stream))


def iterate_batches(rows, batch_size, drop_remainder):
    """A pass's elements in batches, one ``gather`` per batch."""
    return _RowBatches(rows, batch_size, drop_remainder)
