"""TFRecord files: TF's record framing, masked CRC32C checksums, GZIP/ZLIB compression.

Each record is ``uint64 length | uint32 masked_crc(length) | data | uint32 masked_crc(data)``,
little-endian, exactly as TensorFlow writes them (and as TensorBoard's event files are
framed). A file is untrusted input: the reader streams it, checks the length's checksum
before trusting it, refuses a length larger than the bytes left in the file (or than
``max_record_bytes``) before reading it, and checks the data's checksum.

Example:
    >>> import os, tempfile
    >>> from eagerflow.io import tfrecord
    >>> path = os.path.join(tempfile.mkdtemp(), "r.tfrecord")
    >>> with tfrecord.TFRecordWriter(path) as w:
    ...     w.write(b"hello")
    >>> list(tfrecord.read_records(path))
    [b'hello']
"""

from __future__ import annotations

import io
import os
import struct
import zlib

from eagerflow import errors
from eagerflow.io import atomic, untrusted
from eagerflow.io.crc32c import crc32c, masked_crc32c

__all__ = ["frame", "read_records", "TFRecordWriter", "TFRecordOptions", "crc32c",
           "masked_crc32c"]

# The largest record accepted by default; TF has no limit, but a corrupt or hostile length
# must never make the reader allocate more than this.
MAX_RECORD_BYTES = 1 << 31
_COMPRESSIONS = ("", "GZIP", "ZLIB")


def frame(data):
    """One TFRecord: the length, its masked CRC, the data and the data's masked CRC."""
    data = bytes(data)
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


class TFRecordOptions:
    """Options of a TFRecord file (``tf.io.TFRecordOptions``): the compression.

    Args:
        compression_type: ``None``/``""``, ``"GZIP"`` or ``"ZLIB"``.
        compression_level: zlib's level (0-9), -1 for the default.
    """

    def __init__(self, compression_type=None, compression_level=None, **unused):
        self.compression_type = _compression(compression_type, "TFRecordOptions")
        self.compression_level = -1 if compression_level is None else int(compression_level)


def _compression(value, where):
    if isinstance(value, TFRecordOptions):
        return value.compression_type
    value = "" if value is None else str(value).upper()
    if value not in _COMPRESSIONS:
        raise errors.InvalidArgumentError(
            None, where, "%s: compression_type must be None, '', 'GZIP' or 'ZLIB', got %r."
            % (where, value))
    return value


class TFRecordWriter:
    """Writes records to a TFRecord file (``tf.io.TFRecordWriter``).

    The file is written to a temporary name and moved into place on ``close``, so a reader
    never sees a half-written file.

    Args:
        path: The file to write.
        options: A TFRecordOptions or a compression type string.

    Example:
        >>> import os, tempfile
        >>> import eagerflow as ef
        >>> p = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
        >>> with ef.io.TFRecordWriter(p, "GZIP") as w:
        ...     w.write(b"a")
        >>> [r.numpy() for r in ef.data.TFRecordDataset(p, compression_type="GZIP")]
        [b'a']
    """

    def __init__(self, path, options=None):
        self._path = os.fspath(path)
        opts = options if isinstance(options, TFRecordOptions) else TFRecordOptions(options)
        self._compression = opts.compression_type
        level = opts.compression_level
        self._atomic = atomic.atomic_open(self._path, "wb")
        self._file = self._atomic.__enter__()
        if self._compression == "GZIP":
            import gzip

            self._sink = gzip.GzipFile(filename="", fileobj=self._file, mode="wb", mtime=0,
                                       compresslevel=9 if level < 0 else level)
            self._zlib = None
        elif self._compression == "ZLIB":
            self._zlib = zlib.compressobj(level)
            self._sink = None
        else:
            self._sink, self._zlib = self._file, None

    def write(self, record):
        """Appends one record (bytes, or a scalar string tensor)."""
        if hasattr(record, "numpy"):
            record = record.numpy()
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise errors.InvalidArgumentError(
                None, "TFRecordWriter", "write needs bytes, got %s." % type(record).__name__)
        data = frame(record)
        if self._zlib is not None:
            self._file.write(self._zlib.compress(data))
        else:
            self._sink.write(data)

    def flush(self):
        if self._zlib is not None:
            self._file.write(self._zlib.flush(zlib.Z_SYNC_FLUSH))
        elif self._sink is not self._file:
            self._sink.flush()
        self._file.flush()

    def close(self):
        """Finishes the file and moves it into place."""
        if self._file is None:
            return
        if self._zlib is not None:
            self._file.write(self._zlib.flush())
        elif self._sink is not self._file:
            self._sink.close()
        self._file = None
        self._atomic.__exit__(None, None, None)  # flushes, fsyncs and moves into place

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif self._file is not None:  # leave no partial file behind
            self._file = None
            try:  # removes the temporary; the with statement re-raises the error itself
                self._atomic.__exit__(exc_type, exc, tb)
            except BaseException:  # noqa: BLE001, S110 - it is exc, raised again by `with`
                pass


class _ZlibReader(io.RawIOBase):
    """A readable stream of a zlib-compressed file."""

    def __init__(self, f):
        self._f = f
        self._d = zlib.decompressobj()
        self._buf = b""

    def readable(self):
        return True

    def readinto(self, b):
        while len(self._buf) < len(b) and not self._d.eof:
            chunk = self._f.read(1 << 16)
            if not chunk:
                break
            self._buf += self._d.decompress(chunk)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def _open(path, compression):
    f = untrusted.open_regular(path)  # a FIFO or device is refused, never blocked on
    if compression == "GZIP":
        import gzip

        return f, gzip.GzipFile(fileobj=f, mode="rb"), None
    if compression == "ZLIB":
        return f, io.BufferedReader(_ZlibReader(f)), None
    return f, f, os.fstat(f.fileno()).st_size


def _read_exact(stream, n, path, what, pos):
    data = stream.read(n)
    if len(data) != n:
        raise errors.DataLossError(
            None, "TFRecordReader", "%s: truncated record %s at byte %d (%d of %d bytes)."
            % (path, what, pos, len(data), n))
    return data


def read_records(path, compression_type=None, max_record_bytes=MAX_RECORD_BYTES):
    """Yields the records of a TFRecord file, checking lengths and both checksums.

    Args:
        path: The file.
        compression_type: None/"", "GZIP" or "ZLIB".
        max_record_bytes: Refuse any record declaring more bytes than this.

    Yields:
        Each record's data as bytes.

    Raises:
        DataLossError: A record is truncated, too long, or a checksum does not match.
        NotFoundError: The file does not exist.
    """
    compression = _compression(compression_type, "TFRecordDataset")
    path = os.fspath(path)
    raw, stream, size = _open(path, compression)
    try:
        pos = 0
        while True:
            try:
                header = stream.read(12)
            except (OSError, EOFError, zlib.error) as exc:
                raise errors.DataLossError(
                    None, "TFRecordReader", "%s: bad %s data: %s" % (path, compression, exc)
                ) from None
            if not header:
                return
            if len(header) < 12:
                raise errors.DataLossError(
                    None, "TFRecordReader", "%s: truncated record header at byte %d." % (
                        path, pos))
            (length,) = struct.unpack("<Q", header[:8])
            (hcrc,) = struct.unpack("<I", header[8:])
            if hcrc != masked_crc32c(header[:8]):
                raise errors.DataLossError(
                    None, "TFRecordReader", "%s: corrupted record length at byte %d." % (
                        path, pos))
            if length > max_record_bytes or (size is not None and
                                             pos + 16 + length > size):
                raise errors.DataLossError(
                    None, "TFRecordReader", "%s: the record at byte %d declares %d bytes, more "
                    "than the file holds or the limit of %d." % (path, pos, length,
                                                                 max_record_bytes))
            try:
                data = _read_exact(stream, length, path, "data", pos)
                footer = _read_exact(stream, 4, path, "checksum", pos)
            except (OSError, EOFError, zlib.error) as exc:
                raise errors.DataLossError(
                    None, "TFRecordReader", "%s: bad %s data: %s" % (path, compression, exc)
                ) from None
            if struct.unpack("<I", footer)[0] != masked_crc32c(data):
                raise errors.DataLossError(
                    None, "TFRecordReader", "%s: corrupted record data at byte %d." % (
                        path, pos))
            yield data
            pos += 16 + length
    finally:
        if stream is not raw:
            stream.close()
        raw.close()
