"""File datasets: ``TextLineDataset``, ``TFRecordDataset`` and ``experimental.CsvDataset``.

Each reads its files in order, streaming (a file is never read whole into memory), and
validates what it reads (record framing and checksums, CSV field counts).

Example:
    >>> import os, tempfile
    >>> import eagerflow as ef
    >>> p = os.path.join(tempfile.mkdtemp(), "t.txt")
    >>> _ = open(p, "w").write("a\\nbb\\n")
    >>> [x.numpy() for x in ef.data.TextLineDataset(p)]
    [b'a', b'bb']
"""

from __future__ import annotations

import gzip
import io
import os
import zlib

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.data import iterator_state, structure
from eagerflow.data.iterator_state import StatefulIterator
from eagerflow.data.dataset import Dataset
from eagerflow.io import tfrecord, untrusted
from eagerflow.ops.io.csv_ops import _default_of, _fields, decode_csv
from eagerflow.tensor_shape import TensorSpec

__all__ = ["TextLineDataset", "TFRecordDataset", "CsvDataset"]


def _filenames(filenames, where):
    """A list of str paths from a string, list, string tensor or dataset of them."""
    if isinstance(filenames, Dataset):
        filenames = [f for f in filenames]
    if hasattr(filenames, "numpy"):
        filenames = filenames.numpy()
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    out = []
    for f in np.asarray(filenames, dtype=object).reshape(-1) if not isinstance(
            filenames, list) else filenames:
        if hasattr(f, "numpy"):
            f = f.numpy()
        if isinstance(f, bytes):
            f = f.decode("utf-8")
        if not isinstance(f, (str, os.PathLike)):
            raise TypeError("%s: filenames must be strings, got %r." % (where, f))
        out.append(os.fspath(f))
    if not out:
        raise errors.InvalidArgumentError(None, where, "%s needs at least one filename." % where)
    return out


def _string(value):
    out = np.empty((), dtype=object)
    out[()] = value
    return structure.wrap_array(out)


def _open_text(path, compression, where):
    raw = untrusted.open_regular(path, "%s: %s" % (where, path))
    if compression == "GZIP":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "ZLIB":
        return io.BytesIO(zlib.decompress(raw.read()))
    return raw


class TextLineDataset(Dataset):
    """The lines of text files, without their line endings (``tf.data.TextLineDataset``).

    Args:
        filenames: A path, a list of paths or a string tensor of them.
        compression_type: None/"", "GZIP" or "ZLIB".
        buffer_size: Unused (reads are buffered by the file object).
        num_parallel_reads: Unused: files are read in order.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        super().__init__()
        self._files = _filenames(filenames, "TextLineDataset")
        self._compression = tfrecord._compression(compression_type, "TextLineDataset")
        self._spec = TensorSpec([], d.string)

    def _elements(self):
        return _FileIterator(self._files, self._lines, _line_element, seekable=True)

    def _lines(self, path, offset=0):
        f = _open_text(path, self._compression, "TextLineDataset")
        try:
            if offset:
                f.seek(offset)  # a restored position (GZIP reads up to it)
            yield from f
        finally:
            f.close()


class TFRecordDataset(Dataset):
    """The records of TFRecord files (``tf.data.TFRecordDataset``).

    Records are checked as they are read: a truncated file, a length larger than the file
    or a checksum mismatch raises ``DataLossError``.

    Args:
        filenames: A path, a list of paths or a string tensor of them.
        compression_type: None/"", "GZIP" or "ZLIB".
        buffer_size: Unused.
        num_parallel_reads: Unused: files are read in order.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        super().__init__()
        self._files = _filenames(filenames, "TFRecordDataset")
        self._compression = tfrecord._compression(compression_type, "TFRecordDataset")
        self._spec = TensorSpec([], d.string)

    def _elements(self):
        return _FileIterator(self._files, lambda path: tfrecord.read_records(
            path, self._compression), _string)


class CsvDataset(Dataset):
    """The rows of CSV files as tuples of column tensors (``tf.data.experimental.CsvDataset``).

    Args:
        filenames: A path or list of paths.
        record_defaults: One entry per (selected) column, as ``io.decode_csv`` takes.
        compression_type: None/"", "GZIP" or "ZLIB".
        buffer_size: Unused.
        header: Skip each file's first line.
        field_delim: The delimiter.
        use_quote_delim: Whether double quotes delimit fields.
        na_value: A field equal to it takes the default.
        select_cols: The columns to keep.
        exclude_cols: The columns to drop (instead of ``select_cols``).
    """

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=",", use_quote_delim=True, na_value="",
                 select_cols=None, exclude_cols=None, name=None):
        super().__init__()
        if select_cols is not None and exclude_cols is not None:
            raise errors.InvalidArgumentError(
                None, "CsvDataset", "CsvDataset: give select_cols or exclude_cols, not both.")
        self._lines = TextLineDataset(filenames, compression_type)
        self._header = bool(header)
        self._defaults = list(record_defaults)
        self._kw = dict(field_delim=field_delim, use_quote_delim=use_quote_delim,
                        na_value=na_value, select_cols=select_cols)
        self._exclude = None if exclude_cols is None else sorted(int(c) for c in exclude_cols)
        dtypes = [d.as_dtype(_default_of(v, i)[0]) for i, v in enumerate(self._defaults)]
        self._spec = tuple(TensorSpec([], dt) for dt in dtypes)

    def _elements(self):
        return _FileIterator(self._lines._files, self._rows, lambda row: row)

    def _rows(self, path):
        """One file's rows; each file line is one record (None for lines skipped)."""
        f = _open_text(path, self._lines._compression, "CsvDataset")
        try:
            for i, line in enumerate(f):
                if i == 0 and self._header:
                    yield None
                    continue
                line = line.rstrip(b"\r\n")
                if not line:
                    yield None
                    continue
                kw = dict(self._kw)
                if self._exclude is not None:
                    n = len(_fields(line, _delim_bytes(kw["field_delim"]),
                                    kw["use_quote_delim"]))
                    kw["select_cols"] = [c for c in range(n) if c not in self._exclude]
                yield tuple(decode_csv(line, self._defaults, **kw))
        finally:
            f.close()


def _line_element(line):
    if line.endswith(b"\n"):
        line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
    return _string(line)


_END = object()


class _FileIterator(StatefulIterator):
    """The records of several files in order; saves the file and the position in it.

    With ``seekable`` (text lines: ``open_records(path, offset)`` starts at a byte offset)
    the position is the byte offset of the next record, as TF saves it; otherwise it is
    the number of records read, and restoring reopens the file and reads past them (the
    files are regular files, so this cannot block). A record that ``make`` turns into None
    is skipped (a CSV header or blank line).
    """

    __slots__ = ("_files", "_open", "_make", "_seekable", "_file", "_records", "_read")
    _op = "Files"

    def __init__(self, files, open_records, make, seekable=False):
        self._files, self._open, self._make = files, open_records, make
        self._seekable = seekable
        self._file = 0  # index of the file being read
        self._records = None  # its record iterator, opened on demand
        self._read = 0  # bytes (seekable) or records read from it

    def _reopen(self):
        path = self._files[self._file]
        if self._seekable:
            self._records = self._open(path, self._read)
            return
        self._records = self._open(path)
        for _ in range(self._read):  # a restored position: read past these
            if next(self._records, _END) is _END:
                break

    def __next__(self):
        while self._file < len(self._files):
            if self._records is None:
                self._reopen()
            for record in self._records:
                self._read += len(record) if self._seekable else 1
                element = self._make(record)
                if element is not None:
                    return element
            self._records.close()
            self._records, self._read = None, 0
            self._file += 1
        raise StopIteration

    def close(self):
        if self._records is not None:
            self._records.close()

    def save(self, writer):
        writer.ints("file_read", (self._file, self._read))

    def restore(self, reader):
        file, read = reader.ints("file_read", 2).tolist()
        if not 0 <= file <= len(self._files) or read < 0:
            raise iterator_state._not_found(reader.prefix, "saved file %d of %d" % (
                file, len(self._files)))
        self._file, self._read = file, read


def _delim_bytes(delim):
    return delim.encode() if isinstance(delim, str) else delim
