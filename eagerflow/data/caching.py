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

import os
import threading
from contextlib import closing

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.data import structure
from eagerflow.data.dataset import Dataset

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
            return self._from_memory()
        if os.path.exists(os.path.join(self._path, _INDEX)):
            return _read(self._path, self.element_spec)
        return self._write_pass()

    # -- memory ---------------------------------------------------------------------------------

    def _from_memory(self):
        cached = self._memory
        if cached is not None:
            yield from cached
            return
        collected = []
        with closing(self._inputs[0]._elements()) as iterator:
            for element in iterator:
                collected.append(element)
                yield element
        with self._lock:  # only a complete pass is kept
            if self._memory is None:
                self._memory = collected

    # -- files ----------------------------------------------------------------------------------

    def _write_pass(self):
        # json, shutil and uuid are imported where used: programs that never write a file
        # cache do not pay for them at import.
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
            with closing(self._inputs[0]._elements()) as iterator:
                for element in iterator:
                    writer.add(element)
                    yield element
            writer.finish(lambda: self.element_spec)
            done = True
            _publish(temp, path)
        finally:
            if not done or os.path.exists(temp):
                shutil.rmtree(temp, ignore_errors=True)


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
        arrays = [np.asarray(t) for t in structure.flatten(element)]
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
            entry = {"file": name}
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
        dtypes = self.dtypes or [s.dtype.name for s in structure.flatten(get_spec())]
        index = {"format": _FORMAT, "version": _VERSION, "dtypes": dtypes,
                 "chunks": self.chunks}
        with open(os.path.join(self.directory, _INDEX), "w") as f:
            json.dump(index, f)


def _read(path, spec):
    """Yields the elements of a finished cache directory."""
    import json

    with open(os.path.join(path, _INDEX)) as f:
        index = json.load(f)
    leaves = structure.flatten(spec)
    stored = index.get("dtypes", [])
    if index.get("format") != _FORMAT or stored != [s.dtype.name for s in leaves]:
        raise errors.InvalidArgumentError(
            None, "cache", "Dataset.cache: the cache in %r holds elements of dtypes %s, but "
            "this dataset produces %s. Delete the directory or use another filename."
            % (path, stored, [s.dtype.name for s in leaves]))
    pack = structure.packer(spec)
    wrap = structure.wrap_array
    np_dtypes = [dtypes_lib.as_dtype(name).np_dtype for name in stored]
    for chunk in index["chunks"]:
        columns = []
        for entry, np_dtype in zip(chunk["components"], np_dtypes):
            data = np.load(os.path.join(path, entry["file"]), allow_pickle=False)
            data = data.view(np_dtype)
            data.flags.writeable = False
            columns.append(_split(data, entry, chunk["count"]))
        for i in range(chunk["count"]):
            yield pack([wrap(column[i]) for column in columns])


def _split(data, entry, count):
    """Per-element views of one component's flat data."""
    if "shape" in entry:
        stacked = data.reshape([count] + entry["shape"])
        return [stacked[i, ...] for i in range(count)]
    out, offset = [], 0
    for shape in entry["shapes"]:
        size = int(np.prod(shape, dtype=np.int64))
        out.append(data[offset:offset + size].reshape(shape))
        offset += size
    return out
