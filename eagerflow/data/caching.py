"""``cache``: keep the elements of the first complete pass, in memory or in files.

The file cache is a directory holding, per chunk of elements and per component, one
``.npy`` file of the raw bytes of the chunk's values (saved and loaded with
``allow_pickle=False``), plus ``index.json`` describing dtypes and shapes. It is written to
a temporary sibling directory during the first pass and moved into place with
``os.replace`` only when that pass completes, so a pass that stops early (or a crash) never
leaves a partial cache behind; the next pass simply starts again. Any later pass, in this
program or another, reads the files instead of running the input.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.data import iterator_state, ragged_elements, sparse_elements, structure
from eagerflow.data.dataset import Dataset
from eagerflow.data.iterator_state import StatefulIterator

__all__ = ["CacheDataset"]

_FORMAT = "eagerflow.data.cache"
_VERSION = 1
_INDEX = "index.json"
_CHUNK_ELEMENTS = 4096
_CHUNK_BYTES = 64 << 20


def _as_path(filename):
    if hasattr(filename, "numpy"):
        filename = filename.numpy()
    if isinstance(filename, bytes):
        filename = filename.decode()
    try:
        return os.fspath(filename)
    except TypeError:
        raise TypeError("Dataset.cache: `filename` must be a string or path, got %r."
                        % (filename,)) from None


class CacheDataset(Dataset):
    """``cache``: the input's first complete pass, replayed from memory or files."""

    def __init__(self, input_dataset, filename):
        super().__init__((input_dataset,))
        self._path = _as_path(filename)
        self._memory = None
        self._lock = threading.Lock()

    def _compute_spec(self):
        return self._inputs[0].element_spec

    def _cardinality(self):
        return self._inputs[0]._cardinality()

    def _elements(self):
        if not self._path:
            return _MemoryCacheIterator(self)
        return _FileCacheIterator(self)

    # -- files ----------------------------------------------------------------------------------

    def _write_pass(self, iterator):
        """Yields the elements of ``iterator`` (an input pass) while writing them to a
        temporary directory, moved into place when the pass completes."""
        # shutil and uuid are imported where used: programs that never write a file cache
        # do not pay for them at import.
        import shutil
        import uuid

        path = os.path.abspath(self._path)
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        temp = "%s.tmp-%d-%s" % (path, os.getpid(), uuid.uuid4().hex[:8])
        os.mkdir(temp)
        writer = _Writer(temp)
        done = False
        try:
            for element in iterator:
                writer.add(element)
                yield element
            writer.finish(lambda: self.element_spec)
            done = True
            _publish(temp, path)
        finally:
            if not done or os.path.exists(temp):
                shutil.rmtree(temp, ignore_errors=True)


class _MemoryCacheIterator(StatefulIterator):
    """The first complete pass is kept in memory; later passes read it.

    Saved state, as TF's: while reading, the cache and the index; while the first pass is
    collecting, what it collected and the input's state.
    """

    __slots__ = ("_dataset", "_cached", "_next", "_input", "_collected")
    _op = "MemoryCache"

    def __init__(self, dataset):
        self._dataset = dataset
        self._cached = dataset._memory
        self._next = 0
        self._input = None if self._cached is not None else dataset._inputs[0]._elements()
        self._collected = []

    def __next__(self):
        if self._input is None:
            if self._next >= len(self._cached):
                raise StopIteration
            self._next += 1
            return self._cached[self._next - 1]
        try:
            element = next(self._input)
        except StopIteration:
            dataset = self._dataset
            with dataset._lock:  # only a complete pass is kept
                if dataset._memory is None:
                    dataset._memory = self._collected
            self._cached, self._next = self._collected, len(self._collected)
            self._input.close()
            self._input = None
            raise
        self._collected.append(element)
        return element

    def close(self):
        if self._input is not None:
            self._input.close()

    def save(self, writer):
        reading = self._input is None
        writer.int("reading", reading)
        if reading:
            writer.int("next", self._next)
            writer.elements("cache", self._cached, "cache")
        else:
            writer.elements("collected", self._collected, "cache")
            writer.save_input("", self._input, self._dataset._inputs[0])

    def restore(self, reader):
        dataset = self._dataset
        spec = dataset.element_spec
        if reader.int("reading"):
            cached = reader.elements("cache", spec)
            index = reader.int("next")
            if not 0 <= index <= len(cached):
                raise iterator_state._not_found(reader.prefix, "bad saved cache index")
            with dataset._lock:
                if dataset._memory is None:
                    dataset._memory = cached
            if self._input is not None:
                self._input.close()
            self._input, self._cached, self._next = None, cached, index
            return
        if self._input is None:
            self._input = dataset._inputs[0]._elements()
        self._collected = reader.elements("collected", spec)
        reader.restore_input("", self._input, dataset._inputs[0])


class _FileCacheIterator(StatefulIterator):
    """Reads a finished file cache, or runs the input pass writing one.

    Saved state: while reading, how many elements were read (a restore reads past them in
    the files, which are regular files); while writing, the input's state. A restored
    writing pass goes on without writing (the elements before the save are not in this
    process), so the cache is written by the next complete pass instead.
    """

    __slots__ = ("_dataset", "_reading", "_read", "_input", "_elements")
    _op = "FileCache"

    def __init__(self, dataset):
        self._dataset = dataset
        self._read = 0
        self._reading = os.path.exists(os.path.join(dataset._path, _INDEX))
        if self._reading:
            self._input = None
            self._elements = _read(dataset._path, dataset.element_spec)
        else:
            self._input = dataset._inputs[0]._elements()
            self._elements = dataset._write_pass(self._input)

    def __next__(self):
        element = next(self._elements)
        self._read += 1
        return element

    def close(self):
        self._elements.close()
        if self._input is not None:
            self._input.close()

    def save(self, writer):
        writer.int("reading", self._reading)
        if self._reading:
            writer.int("read", self._read)
        else:
            writer.save_input("", self._input, self._dataset._inputs[0])

    def restore(self, reader):
        dataset = self._dataset
        self.close()
        if reader.int("reading"):
            count = reader.count("read")
            self._reading, self._input, self._read = True, None, 0
            self._elements = _read(dataset._path, dataset.element_spec)
            for _ in range(count):
                if next(self._elements, None) is None:
                    break
                self._read += 1
            return
        self._reading = False
        self._input = dataset._inputs[0]._elements()
        reader.restore_input("", self._input, dataset._inputs[0])
        self._elements = self._input


def _publish(temp, path):
    """Moves a finished cache into place, unless another pass already did."""
    try:
        os.replace(temp, path)
    except OSError:
        if os.path.exists(os.path.join(path, _INDEX)):
            return  # a concurrent pass finished first; its cache holds the same elements
        raise errors.AlreadyExistsError(
            None, "cache", "Dataset.cache: cannot create the cache directory %r: a "
            "non-empty directory without a cache index is in the way. Remove it or choose "
            "another filename." % path) from None


class _Writer:
    """Accumulates elements and writes them in chunks of raw-byte ``.npy`` files."""

    def __init__(self, directory):
        self.directory = directory
        self.chunks = []
        self.pending = []
        self.pending_bytes = 0
        self.dtypes = None

    def add(self, element):
        arrays = []
        for t in structure.flatten(element):  # a Ragged/SparseTensor is stored as its arrays
            if ragged_elements.is_ragged(t):
                arrays.extend(ragged_elements.component_arrays(t))
            elif sparse_elements.is_sparse(t):
                arrays.extend(sparse_elements.component_arrays(t))
            else:
                arrays.append(np.asarray(t))
        if self.dtypes is None:
            self.dtypes = [dtypes_lib.from_numpy(a.dtype).name for a in arrays]
        self.pending.append(arrays)
        self.pending_bytes += sum(a.nbytes for a in arrays)
        if len(self.pending) >= _CHUNK_ELEMENTS or self.pending_bytes >= _CHUNK_BYTES:
            self._flush()

    def _flush(self):
        if not self.pending:
            return
        number = len(self.chunks)
        components = []
        for i, column in enumerate(zip(*self.pending)):
            shapes = [list(a.shape) for a in column]
            data = np.concatenate([np.ascontiguousarray(a).reshape(-1).view(np.uint8)
                                   for a in column])
            name = "chunk-%06d-%d.npy" % (number, i)
            np.save(os.path.join(self.directory, name), data, allow_pickle=False)
            entry = {"file": name, "sha256": hashlib.sha256(data).hexdigest()}
            if all(s == shapes[0] for s in shapes):
                entry["shape"] = shapes[0]
            else:
                entry["shapes"] = shapes
            components.append(entry)
        self.chunks.append({"count": len(self.pending), "components": components})
        self.pending, self.pending_bytes = [], 0

    def finish(self, get_spec):
        """Writes the index; ``get_spec`` gives the dtypes when no element was seen."""
        import json

        self._flush()
        dtypes = self.dtypes or _component_dtypes(structure.flatten(get_spec()))
        index = {"format": _FORMAT, "version": _VERSION, "dtypes": dtypes,
                 "chunks": self.chunks}
        index["digest"] = _digest(index)
        with open(os.path.join(self.directory, _INDEX), "w") as f:
            json.dump(index, f)


_CHUNK_NAME = re.compile(r"chunk-\d{6}-\d+\.npy\Z")


def _damaged(path, what):
    return errors.DataLossError(None, "cache", "Dataset.cache: the cache in %r is damaged "
                                "(%s). Delete the directory to rebuild it." % (path, what))


def _read(path, spec):
    """Yields the elements of a finished cache directory.

    The directory is untrusted input (another program may have written it): the index is
    size- and depth-checked JSON, chunk files must be plain names of this directory, and
    every declared size is checked against the bytes present before it is used.
    """
    from eagerflow.io import untrusted

    index = untrusted.json_loads(untrusted.read_regular(os.path.join(path, _INDEX),
                                                        max_bytes=256 << 20), path)
    if not isinstance(index, dict):
        raise _damaged(path, "the index is not a JSON object")
    digest = index.pop("digest", None)
    if digest is not None and digest != _digest(index):
        raise _damaged(path, "the index fails its checksum")
    leaves = structure.flatten(spec)
    stored = index.get("dtypes", [])
    expected = _component_dtypes(leaves)
    if index.get("format") != _FORMAT or stored != expected:
        raise errors.InvalidArgumentError(
            None, "cache", "Dataset.cache: the cache in %r holds elements of dtypes %s, but "
            "this dataset produces %s. Delete the directory or use another filename."
            % (path, stored, expected))
    counts = [_component_count(s) for s in leaves]
    pack = structure.packer(spec)
    wrap = structure.wrap_array
    np_dtypes = [dtypes_lib.as_dtype(name).np_dtype for name in stored]
    chunks = index.get("chunks")
    if not isinstance(chunks, list):
        raise _damaged(path, "the index lists no chunks")
    for chunk in chunks:
        try:
            count, components = chunk["count"], chunk["components"]
            if count.__class__ is not int or count < 0 or len(components) != len(np_dtypes):
                raise ValueError("a chunk of %r elements and %d components" % (
                    count, len(components)))
            columns = []
            for entry, np_dtype in zip(components, np_dtypes):
                data = _load_chunk(path, entry["file"], entry.get("sha256")).view(np_dtype)
                data.flags.writeable = False
                columns.append(_split(data, entry, count))
        except errors.OpError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise _damaged(path, str(exc)[:200]) from None
        if len(counts) == len(columns):
            for i in range(count):
                yield pack([wrap(column[i]) for column in columns])
            continue
        for i in range(count):
            values, k = [], 0
            for n, s in zip(counts, leaves):
                if n == 1:
                    values.append(wrap(columns[k][i]))
                else:
                    helper = sparse_elements if sparse_elements.is_sparse_spec(s) else \
                        ragged_elements
                    try:
                        values.append(helper.from_component_arrays(
                            [columns[k + j][i] for j in range(n)]))
                    except errors.InvalidArgumentError as exc:
                        raise _damaged(path, exc.message[:200]) from None
                k += n
            yield pack(values)


def _component_count(spec):
    return 3 if sparse_elements.is_sparse_spec(spec) else ragged_elements.component_count(spec)


def _component_dtypes(leaves):
    """The dtype names of the stored arrays: one per dense component; for a ragged one its
    values' dtype then int64 for each level of row splits; for a sparse one int64 indices,
    its values' dtype and an int64 dense shape."""
    out = []
    for s in leaves:
        if sparse_elements.is_sparse_spec(s):
            out.extend(["int64", s.dtype.name, "int64"])
            continue
        out.append(s.dtype.name)
        out.extend(["int64"] * (ragged_elements.component_count(s) - 1))
    return out


def _digest(index):
    """The SHA-256 of an index's canonical JSON (without its own digest)."""
    import json

    return hashlib.sha256(json.dumps(index, sort_keys=True).encode("utf-8")).hexdigest()


def _load_chunk(path, name, sha256=None):
    """The uint8 bytes of one chunk file, its header checked against its size first."""
    from eagerflow.io import untrusted

    if not isinstance(name, str) or not _CHUNK_NAME.match(name):
        raise _damaged(path, "a chunk file is named %.80r" % (name,))
    full = untrusted.check_inside(path, os.path.join(path, name))
    with untrusted.open_regular(full) as f:
        size = os.fstat(f.fileno()).st_size
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        except Exception as exc:  # noqa: BLE001 - numpy's header parser raises many kinds
            raise _damaged(path, "%s: %s: %s" % (name, type(exc).__name__,
                                                 str(exc)[:100])) from None
        if dtype != np.uint8 or len(shape) != 1 or shape[0] != size - f.tell():
            raise _damaged(path, "%s declares %s %s for %d bytes" % (
                name, dtype, list(shape), size - f.tell()))
        data = f.read(shape[0])
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise _damaged(path, "%s fails its checksum" % name)
    return np.frombuffer(data, np.uint8)


def _split(data, entry, count):
    """Per-element views of one component's flat data (shapes checked: ValueError)."""
    def dims(shape):
        if not isinstance(shape, list) or not all(d.__class__ is int and d >= 0
                                                  for d in shape):
            raise ValueError("an element shape %.80r" % (shape,))
        return shape

    if "shape" in entry:
        stacked = data.reshape([count] + dims(entry["shape"]))
        return [stacked[i, ...] for i in range(count)]
    out, offset = [], 0
    shapes = entry["shapes"]
    if not isinstance(shapes, list) or len(shapes) != count:
        raise ValueError("%d element shapes for %d elements" % (len(shapes), count))
    for shape in shapes:
        size = 1
        for d in dims(shape):  # Python ints: no wrap-around
            size *= d
        out.append(data[offset:offset + size].reshape(shape))
        offset += size
    if offset != data.size:
        raise ValueError("%d values for elements of %d" % (data.size, offset))
    return out
