"""The tensor bundle: eagerflow's one on-disk format for tensors (checkpoints, weights).

A bundle is one file, written atomically (see ``eagerflow.io.atomic``)::

    offset 0   8 bytes   magic b"EFBUNDLE"
    offset 8   8 bytes   H, the header length (unsigned little-endian)
    offset 16  32 bytes  sha256 of the header bytes
    offset 48  H bytes   the header: UTF-8 JSON (below)
    zero padding to a multiple of 64, where the data section starts
    data       raw little-endian tensor bytes, each tensor at a 64-byte aligned offset

The header is ``{"format": "eagerflow.bundle", "version": 1, "data_length": N,
"metadata": {...}, "tensors": [{"key", "dtype", "shape", "offset", "length", "sha256"}]}``
with offsets relative to the data section. One file (rather than TF's index + data shards)
means one rename makes a save visible, so a half-written bundle can never be opened.

Loading runs no code from the file: the header is JSON, tensors are ``numpy.frombuffer`` over
a whitelist of numeric dtypes, and nothing is unpickled. Readers check the magic, the header
checksum, the format version, the file size (truncation), each entry's length against its
dtype and shape, and each tensor's sha256, raising ``DataLossError`` (corrupt or truncated),
``FailedPreconditionError`` (a format version this eagerflow does not know), ``NotFoundError``
(missing file or key) or ``InvalidArgumentError`` (a dtype or shape other than the caller
expects), always naming the file and the tensor.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> from eagerflow.io import bundle
    >>> path = os.path.join(tempfile.mkdtemp(), "weights.efb")
    >>> _ = bundle.write(path, {"w": np.arange(3.0)}, metadata={"step": 1})
    >>> r = bundle.BundleReader(path)
    >>> r.read("w").tolist(), r.metadata["step"]
    ([0.0, 1.0, 2.0], 1)
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import sys

import numpy as np

from eagerflow import errors
from eagerflow.io import atomic, untrusted

__all__ = ["FORMAT", "VERSION", "MAGIC", "TensorEntry", "BundleReader", "write", "read",
           "write_stream", "write_bytes", "is_bundle"]

FORMAT = "eagerflow.bundle"
VERSION = 1
MAGIC = b"EFBUNDLE"
_PREFIX = struct.Struct("<8sQ32s")  # magic, header length, header sha256
_ALIGN = 64
_MAX_HEADER = 1 << 30

# Only plain numeric dtypes: nothing here can make numpy build Python objects.
_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "bfloat16", "float32", "float64", "complex64", "complex128")


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _dtype_name(array, path, key):
    name = array.dtype.name
    if name not in _DTYPES:
        raise errors.InvalidArgumentError(
            None, None, "Cannot write tensor %r to %s: dtype %s is not storable in a bundle. "
            "Supported dtypes: %s." % (key, path, array.dtype, ", ".join(_DTYPES)))
    return name


def _aligned(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def _as_bytes(array):
    """A contiguous little-endian uint8 view of ``array`` (no copy on little-endian hosts)."""
    array = np.ascontiguousarray(array)
    if sys.byteorder == "big" and array.dtype.itemsize > 1:
        array = array.byteswap()
    return array.reshape(-1).view(np.uint8)


class TensorEntry:
    """What the header says about one tensor.

    Attributes:
        key: The tensor's name in the bundle.
        dtype: Its dtype name (e.g. "float32").
        shape: Its shape, a tuple of ints.
        offset: Byte offset within the data section.
        length: Byte length.
        sha256: Hex sha256 of its bytes.
    """

    __slots__ = ("key", "dtype", "shape", "offset", "length", "sha256")

    def __init__(self, key, dtype, shape, offset, length, sha256):
        self.key, self.dtype, self.shape = key, dtype, tuple(shape)
        self.offset, self.length, self.sha256 = offset, length, sha256

    def __repr__(self):
        return "TensorEntry(%r, %s, %s)" % (self.key, self.dtype, list(self.shape))


def write(path, tensors, metadata=None):
    """Writes ``tensors`` to a bundle file at ``path``, atomically; returns ``path``.

    Args:
        path: The file to write (replaced atomically if it exists).
        tensors: A dict (or list of pairs) from string keys to arrays, Tensors or Variables.
        metadata: Optional JSON-serializable dict stored in the header.

    Returns:
        ``path``.

    Raises:
        InvalidArgumentError: If a key is not a string, is repeated, or a dtype cannot be
            stored (e.g. ``object`` or strings).
        TypeError: If ``metadata`` is not JSON-serializable.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from eagerflow.io import bundle
        >>> p = bundle.write(os.path.join(tempfile.mkdtemp(), "b"), {"x": np.ones(2)})
        >>> bundle.read(p)["x"].tolist()
        [1.0, 1.0]
    """
    path = os.fspath(path)
    with atomic.atomic_open(path, "wb") as f:
        write_stream(f, tensors, metadata, name=path)
    return path


def write_stream(stream, tensors, metadata=None, name="<stream>"):
    """Writes a bundle to the writable binary ``stream`` (e.g. a file or ``io.BytesIO``).

    Use this to put a bundle inside a container (a zip member, a socket); for files on disk
    use :func:`write`, which also makes the write atomic.

    Args:
        stream: A writable binary file object, positioned where the bundle should start.
        tensors: As in :func:`write`.
        metadata: As in :func:`write`.
        name: What error messages call the destination.

    Raises:
        InvalidArgumentError, TypeError: As :func:`write` (raised before anything is written).

    Example:
        >>> import io
        >>> import numpy as np
        >>> from eagerflow.io import bundle
        >>> buf = io.BytesIO()
        >>> bundle.write_stream(buf, {"x": np.ones(2)})
        >>> buf.getvalue()[:8]
        b'EFBUNDLE'
    """
    # Encoding everything first means a bad key or dtype never leaves a partial stream.
    for chunk in _encode(name, tensors, metadata):
        stream.write(chunk)


def write_bytes(tensors, metadata=None, name="<bytes>"):
    """The bytes of a bundle holding ``tensors`` (see :func:`write`).

    Raises:
        InvalidArgumentError, TypeError: As :func:`write`.

    Example:
        >>> import numpy as np
        >>> from eagerflow.io import bundle
        >>> data = bundle.write_bytes({"x": np.arange(2.0)})
        >>> bundle.BundleReader("<bytes>", data=data).read("x").tolist()
        [0.0, 1.0]
    """
    return b"".join(bytes(chunk) for chunk in _encode(name, tensors, metadata))


def _encode(path, tensors, metadata):
    """The bundle as a list of byte chunks (header, padding, tensor bytes)."""
    items = list(tensors.items()) if isinstance(tensors, dict) else list(tensors)
    entries, payloads, seen, offset = [], [], set(), 0
    for key, value in items:
        if not isinstance(key, str):
            raise errors.InvalidArgumentError(
                None, None, "Bundle keys must be strings; got %r for %s." % (key, path))
        if key in seen:
            raise errors.InvalidArgumentError(
                None, None, "Duplicate tensor key %r for %s." % (key, path))
        seen.add(key)
        array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        dtype = _dtype_name(array, path, key)
        raw = _as_bytes(array)
        offset = _aligned(offset)
        entries.append({"key": key, "dtype": dtype, "shape": list(array.shape),
                        "offset": offset, "length": int(raw.size),
                        "sha256": hashlib.sha256(raw).hexdigest()})
        payloads.append((offset, raw))
        offset += int(raw.size)
    header = json.dumps({"format": FORMAT, "version": VERSION, "data_length": offset,
                         "metadata": metadata or {}, "tensors": entries},
                        sort_keys=True, allow_nan=False).encode("utf-8")
    prefix = _PREFIX.pack(MAGIC, len(header), hashlib.sha256(header).digest())
    head_len = _PREFIX.size + len(header)
    data_start = _aligned(head_len)
    chunks = [prefix, header, b"\0" * (data_start - head_len)]
    position = 0
    for start, raw in payloads:
        chunks.append(b"\0" * (start - position))
        chunks.append(raw.data)
        position = start + raw.size
    return chunks


def is_bundle(path):
    """Whether ``path`` is a file that starts with the bundle magic.

    Example:
        >>> from eagerflow.io.bundle import is_bundle
        >>> is_bundle("/nonexistent")
        False
    """
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def _loss(path, what):
    return errors.DataLossError(None, None, "Corrupt or truncated bundle %s: %s" % (path, what))


class BundleReader:
    """Reads and verifies a bundle file.

    The header is read and checked on construction; tensors are read on demand, each
    verified against its recorded size and sha256.

    Args:
        path: The bundle file; with ``data``, only the name error messages use.
        data: Optional bytes of a bundle held in memory (e.g. a zip member, or the
            output of :func:`write_bytes`); then no file is opened.

    Raises:
        NotFoundError: If ``path`` does not exist (and no ``data`` is given).
        DataLossError: If the file is not a bundle, or its header is corrupt or truncated.
        FailedPreconditionError: If it was written in an unknown format version.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from eagerflow.io import bundle
        >>> p = bundle.write(os.path.join(tempfile.mkdtemp(), "b"), {"k": np.zeros((2, 3))})
        >>> bundle.BundleReader(p).entry("k").shape
        (2, 3)
    """

    def __init__(self, path, data=None):
        self.path = os.fspath(path)
        self._data = None if data is None else bytes(data)
        try:
            with self._open() as f:
                size = os.fstat(f.fileno()).st_size if self._data is None else len(
                    self._data)
                prefix = f.read(_PREFIX.size)
                if len(prefix) < _PREFIX.size or prefix[:len(MAGIC)] != MAGIC:
                    raise _loss(self.path, "it does not start with the eagerflow bundle "
                                "magic %r (not a bundle, or truncated)" % (MAGIC,))
                magic, header_len, digest = _PREFIX.unpack(prefix)
                if header_len > min(size, _MAX_HEADER):
                    raise _loss(self.path, "header length %d exceeds the file size %d"
                                % (header_len, size))
                header = f.read(header_len)
        except errors.NotFoundError:
            raise errors.NotFoundError(None, None, "Bundle file not found: %s"
                                       % self.path) from None
        if len(header) != header_len or hashlib.sha256(header).digest() != digest:
            raise _loss(self.path, "header checksum mismatch")
        try:
            info = untrusted.json_loads(header, "the header")
        except errors.DataLossError as exc:
            raise _loss(self.path, exc.message) from None
        if not isinstance(info, dict) or info.get("format") != FORMAT:
            raise _loss(self.path, "header format is %r, expected %r"
                        % (info.get("format") if isinstance(info, dict) else info, FORMAT))
        version = info.get("version")
        if version != VERSION:
            raise errors.FailedPreconditionError(
                None, None, "Bundle %s has format version %r; this eagerflow reads version "
                "%d. Read it with the eagerflow that wrote it (or a newer one) and save it "
                "again." % (self.path, version, VERSION))
        self._data_start = _aligned(_PREFIX.size + header_len)
        data_length = info.get("data_length")
        if not isinstance(data_length, int) or data_length < 0:
            raise _loss(self.path, "bad data_length %r" % (data_length,))
        expected = self._data_start + data_length
        if size != expected:
            raise _loss(self.path, "the file has %d bytes but its header describes %d (%s)"
                        % (size, expected, "truncated" if size < expected else
                           "trailing bytes"))
        self.metadata = info.get("metadata") or {}
        tensors = info.get("tensors", [])
        if not isinstance(tensors, list) or not isinstance(self.metadata, dict):
            raise _loss(self.path, "the header's tensors or metadata have the wrong type")
        self._entries = {}
        for raw in tensors:
            entry = self._parse_entry(raw, data_length)
            if entry.key in self._entries:
                raise _loss(self.path, "tensor %r appears twice" % entry.key)
            self._entries[entry.key] = entry

    def _open(self):
        if self._data is not None:
            return io.BytesIO(self._data)
        return untrusted.open_regular(self.path, "Bundle file %s" % self.path)

    def _parse_entry(self, raw, data_length):
        key = raw.get("key") if isinstance(raw, dict) else None
        if not isinstance(key, str):
            raise _loss(self.path, "a tensor entry has no string key: %r" % (raw,))
        dtype, shape = raw.get("dtype"), raw.get("shape")
        offset, length, digest = raw.get("offset"), raw.get("length"), raw.get("sha256")
        if dtype not in _DTYPES:
            raise _loss(self.path, "tensor %r has dtype %r, which bundles never contain "
                        "(only plain numeric dtypes are read; no Python objects, no pickle)"
                        % (key, dtype))
        if (not isinstance(shape, list) or len(shape) > 64 or not all(
                d.__class__ is int and d >= 0 for d in shape)):
            raise _loss(self.path, "tensor %r has an invalid shape %r" % (key, shape[:8] if
                                                                         isinstance(shape, list)
                                                                         else shape))
        if not (offset.__class__ is int and length.__class__ is int and offset >= 0
                and length >= 0 and offset + length <= data_length):
            raise _loss(self.path, "tensor %r has bytes [%r, +%r) outside the data section "
                        "of %d bytes" % (key, offset, length, data_length))
        want = _np_dtype(dtype).itemsize
        for d in shape:  # Python ints: a [2**62, 4] shape cannot wrap around to match
            want *= d
        if length != want:
            raise _loss(self.path, "tensor %r is %d bytes, but dtype %s and shape %s need %d"
                        % (key, length, dtype, shape, want))
        if not isinstance(digest, str):
            raise _loss(self.path, "tensor %r has no checksum" % key)
        return TensorEntry(key, dtype, shape, offset, length, digest)

    def keys(self):
        """The tensor keys, in the order they were written."""
        return list(self._entries)

    def __contains__(self, key):
        return key in self._entries

    def entry(self, key):
        """The ``TensorEntry`` of ``key``.

        Raises:
            NotFoundError: If the bundle has no such tensor.
        """
        try:
            return self._entries[key]
        except KeyError:
            close = sorted(self._entries)[:10]
            raise errors.NotFoundError(
                None, None, "Tensor %r not found in bundle %s. It has %d tensors, e.g. %s"
                % (key, self.path, len(self._entries), close)) from None

    def read(self, key, dtype=None, shape=None):
        """Reads and verifies tensor ``key`` as a numpy array.

        Args:
            key: The tensor key.
            dtype: If given, the dtype (name or numpy/eagerflow dtype) the caller expects.
            shape: If given, the shape the caller expects.

        Returns:
            A new numpy array.

        Raises:
            NotFoundError: If there is no such tensor (or the file went away).
            InvalidArgumentError: If ``dtype`` or ``shape`` differ from the stored ones.
            DataLossError: If the bytes are missing or fail their checksum.
        """
        entry = self.entry(key)
        if dtype is not None:
            want = getattr(dtype, "name", None) or np.dtype(dtype).name
            if want != entry.dtype:
                raise errors.InvalidArgumentError(
                    None, None, "Tensor %r in %s has dtype %s, but %s was expected."
                    % (key, self.path, entry.dtype, want))
        if shape is not None and tuple(shape) != entry.shape:
            raise errors.InvalidArgumentError(
                None, None, "Tensor %r in %s has shape %s, but shape %s was expected."
                % (key, self.path, list(entry.shape), list(shape)))
        try:
            with self._open() as f:
                f.seek(self._data_start + entry.offset)
                data = f.read(entry.length)
        except errors.NotFoundError:
            raise errors.NotFoundError(None, None, "Bundle file not found: %s"
                                       % self.path) from None
        if len(data) != entry.length:
            raise _loss(self.path, "tensor %r is truncated (%d of %d bytes)"
                        % (key, len(data), entry.length))
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise _loss(self.path, "tensor %r fails its sha256 checksum" % key)
        array = np.frombuffer(data, dtype=_np_dtype(entry.dtype)).reshape(entry.shape)
        if sys.byteorder == "big" and array.dtype.itemsize > 1:
            array = array.byteswap()
        return array.copy()

    def read_all(self):
        """Every tensor as ``{key: array}``, all verified before any is returned."""
        return {key: self.read(key) for key in self._entries}


def read(path):
    """Reads a whole bundle as ``{key: numpy array}`` (every tensor verified).

    Raises:
        NotFoundError, DataLossError, FailedPreconditionError: As ``BundleReader``.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from eagerflow.io import bundle
        >>> p = bundle.write(os.path.join(tempfile.mkdtemp(), "b"), {"i": np.int32(7)})
        >>> bundle.read(p)["i"].dtype.name
        'int32'
    """
    return BundleReader(path).read_all()
