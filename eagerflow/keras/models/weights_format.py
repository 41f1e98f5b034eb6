"""The older Keras weights file format (read by ``load_weights``; new files are bundles).

One file holds named tensors:

    bytes 0..7    magic ``b"EFWEIGHT"``
    bytes 8..15   header length N (uint64, little-endian)
    bytes 16..    the header: N bytes of UTF-8 JSON
    padding       zeros up to a multiple of 64
    data          each tensor's raw little-endian bytes, each starting on a multiple of 64

The JSON header is ``{"format": "eagerflow.weights", "version": 1, "data_bytes": total,
"metadata": {...}, "tensors": [{"name", "dtype", "shape", "offset", "nbytes",
"sha256"}, ...]}`` with offsets counted from the start of the data section. Reading checks
the magic, the version, the file size, every tensor's size and its SHA-256, so truncation and
corruption are reported with the file and the tensor named. Nothing is ever unpickled.

``write_file`` (kept to produce such files, e.g. in tests) writes atomically through
``eagerflow.io.atomic``.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> from eagerflow.keras.models import weights_format as wf
    >>> path = os.path.join(tempfile.mkdtemp(), "w.bin")
    >>> wf.write_file(path, [("a", np.arange(3, dtype=np.float32))], {"note": "demo"})
    >>> tensors, meta = wf.read_file(path)
    >>> tensors["a"].tolist(), meta
    ([0.0, 1.0, 2.0], {'note': 'demo'})
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct

import numpy as np

from eagerflow import errors
from eagerflow.io import atomic, untrusted

__all__ = ["write_file", "read_file", "write_stream", "read_stream", "WeightsFileError",
           "MAGIC", "FORMAT_VERSION"]

MAGIC = b"EFWEIGHT"
FORMAT_VERSION = 1
_ALIGN = 64


class WeightsFileError(errors.DataLossError, ValueError):
    """A weights file that is not eagerflow's format, or is truncated or corrupt."""


def _dtype_name(array):
    import eagerflow as ef

    return ef.as_dtype(array.dtype).name


def _numpy_dtype(name, where):
    import eagerflow as ef

    try:
        dtype = np.dtype(ef.as_dtype(name).as_numpy_dtype).newbyteorder("<")
    except Exception as exc:  # noqa: BLE001 - whatever a header holds in place of a name
        raise WeightsFileError("%s: unknown dtype %.60r (%s)." % (where, name, exc)) from None
    if dtype.kind not in "biufc" and dtype.name != "bfloat16":
        raise WeightsFileError("%s: dtype %s is not a numeric dtype (weights files hold "
                               "numbers only)." % (where, dtype))
    return dtype


def _pad(n):
    return (-n) % _ALIGN


def write_stream(stream, named_arrays, metadata=None):
    """Writes the format to a binary stream.

    Args:
        stream: A writable binary file object.
        named_arrays: ``[(name, array)]``; names must be unique.
        metadata: A JSON-compatible dict stored in the header.

    Raises:
        ValueError: For duplicate names.
    """
    entries = []
    blobs = []
    offset = 0
    names = set()
    for name, array in named_arrays:
        if name in names:
            raise ValueError("Duplicate weight name %r in the weights to write." % name)
        names.add(name)
        array = np.asarray(array)
        little = array.astype(array.dtype.newbyteorder("<"), copy=False) \
            if array.dtype.byteorder == ">" else array
        data = np.ascontiguousarray(little).tobytes()
        entries.append({"name": name, "dtype": _dtype_name(array), "shape": list(array.shape),
                        "offset": offset, "nbytes": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()})
        blobs.append(data)
        offset += len(data) + _pad(len(data))
    header = json.dumps({"format": "eagerflow.weights", "version": FORMAT_VERSION,
                         "data_bytes": offset, "metadata": metadata or {},
                         "tensors": entries}, sort_keys=True).encode("utf-8")
    stream.write(MAGIC)
    stream.write(struct.pack("<Q", len(header)))
    stream.write(header)
    stream.write(b"\0" * _pad(16 + len(header)))
    for data in blobs:
        stream.write(data)
        stream.write(b"\0" * _pad(len(data)))


def read_stream(stream, where="weights file", size=None):
    """Reads and verifies the format from a binary stream.

    Every size the header declares is checked against the bytes present before anything of
    that size is read or allocated.

    Args:
        stream: A readable, seekable binary file object positioned at the start.
        where: How to name the source in errors (the path).
        size: The stream's length in bytes (found by seeking when omitted).

    Returns:
        ``(tensors, metadata)``: an ordered dict name -> numpy array, and the header metadata.

    Raises:
        WeightsFileError: For a wrong magic/version, truncation, a checksum mismatch or a
            malformed header (a ``DataLossError`` and a ``ValueError``).
    """
    if size is None:
        start = stream.tell()
        size = stream.seek(0, io.SEEK_END) - start
        stream.seek(start)
    head = stream.read(16)
    if len(head) < 16 or head[:8] != MAGIC:
        raise WeightsFileError(
            "%s is not an eagerflow weights file (bad magic %r). It may be an HDF5 or "
            "TensorFlow checkpoint, which eagerflow does not read; save it again with "
            "eagerflow's save_weights." % (where, head[:8]))
    (length,) = struct.unpack("<Q", head[8:16])
    if length > size - 16:
        raise WeightsFileError("%s is truncated or corrupt: its header should be %d bytes, "
                               "only %d are present." % (where, length, size - 16))
    raw = stream.read(length)
    if len(raw) != length:
        raise WeightsFileError("%s is truncated: its header should be %d bytes, only %d are "
                               "present." % (where, length, len(raw)))
    try:
        header = untrusted.json_loads(raw, where)
    except errors.DataLossError as exc:
        raise WeightsFileError("%s has a corrupt header: %s" % (where, exc.message)) from None
    if not isinstance(header, dict) or header.get("format") != "eagerflow.weights":
        raise WeightsFileError("%s: unknown format %r." % (
            where, header.get("format") if isinstance(header, dict) else type(header)))
    if header.get("version") != FORMAT_VERSION:
        raise WeightsFileError("%s was written in format version %r; this eagerflow reads "
                               "version %d." % (where, header.get("version"), FORMAT_VERSION))
    data_bytes, entries = header.get("data_bytes"), header.get("tensors")
    data_start = 16 + length + _pad(16 + length)
    if data_bytes.__class__ is not int or data_bytes < 0 or not isinstance(entries, list):
        raise WeightsFileError("%s has a corrupt header (data_bytes %r)." % (
            where, data_bytes))
    if data_start + data_bytes != size:
        raise WeightsFileError("%s is truncated or corrupt: %d data bytes expected, %d "
                               "present." % (where, data_bytes, max(size - data_start, 0)))
    stream.read(_pad(16 + length))
    data = stream.read(data_bytes)
    if len(data) != data_bytes:
        raise WeightsFileError("%s is truncated: %d data bytes expected, %d present."
                               % (where, data_bytes, len(data)))
    tensors = {}
    for entry in entries:
        name, start, nbytes, shape, digest = _entry_fields(entry, where)
        chunk = data[start:start + nbytes]
        if len(chunk) != nbytes:
            raise WeightsFileError(
                "%s is truncated: tensor %r needs bytes %d..%d of the data section but the "
                "file ends after %d." % (where, name, start, start + nbytes, len(data)))
        padding = data[start + nbytes:start + nbytes + _pad(nbytes)]
        if padding.strip(b"\0"):
            raise WeightsFileError("%s is corrupt: the padding after tensor %r is not zero."
                                   % (where, name))
        if hashlib.sha256(chunk).hexdigest() != digest:
            raise WeightsFileError("%s is corrupt: the checksum of tensor %r does not match "
                                   "(sha256 %s expected)." % (where, name, digest))
        dtype = _numpy_dtype(entry.get("dtype"), "%s, tensor %r" % (where, name))
        expected = dtype.itemsize
        for d in shape:  # Python ints: no wrap-around
            expected *= d
        if expected != nbytes:
            raise WeightsFileError("%s is corrupt: tensor %r of shape %s and dtype %s should "
                                   "take %d bytes, the header says %d."
                                   % (where, name, shape, entry["dtype"], expected, nbytes))
        array = np.frombuffer(chunk, dtype=dtype).reshape(shape)
        tensors[name] = array.astype(array.dtype.newbyteorder("="), copy=True)
    metadata = header.get("metadata", {})
    return tensors, metadata if isinstance(metadata, dict) else {}


def _entry_fields(entry, where):
    fields = (entry.get("name"), entry.get("offset"), entry.get("nbytes"),
              entry.get("shape"), entry.get("sha256")) if isinstance(entry, dict) else ()
    if not fields or not isinstance(fields[0], str) or any(
            v.__class__ is not int or v < 0 for v in fields[1:3]) or not isinstance(
            fields[3], list) or len(fields[3]) > 64 or any(
            d.__class__ is not int or d < 0 for d in fields[3]) or not isinstance(
            fields[4], str):
        raise WeightsFileError("%s has a corrupt tensor entry %.200r." % (where, entry))
    return fields[0], fields[1], fields[2], tuple(fields[3]), fields[4]


def write_file(path, named_arrays, metadata=None):
    """Writes the format to ``path`` atomically (``eagerflow.io.atomic.atomic_open``)."""
    with atomic.atomic_open(os.fspath(path), "wb") as f:
        write_stream(f, named_arrays, metadata)


def read_file(path):
    """Reads and verifies ``path``; returns ``(tensors, metadata)``.

    Raises:
        FileNotFoundError: If the file does not exist.
        WeightsFileError: If it is not a valid weights file.
    """
    with untrusted.open_regular(path) as f:
        return read_stream(f, where=os.fspath(path), size=os.fstat(f.fileno()).st_size)


def read_bytes(data, where):
    """:func:`read_stream` over bytes in memory."""
    return read_stream(io.BytesIO(data), where=where, size=len(data))
