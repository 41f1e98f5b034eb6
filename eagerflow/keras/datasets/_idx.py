"""Reading the MNIST-style data files from local disk: IDX files (optionally gzipped) and
Keras' ``mnist.npz``. Nothing is downloaded: the files must already be on disk.

Example:
    >>> import gzip, os, struct, tempfile
    >>> import numpy as np
    >>> from eagerflow.keras.datasets import _idx
    >>> path = os.path.join(tempfile.mkdtemp(), "labels-idx1-ubyte.gz")
    >>> with gzip.open(path, "wb") as f:
    ...     _ = f.write(struct.pack(">II", 0x801, 3) + bytes([7, 1, 4]))
    >>> _idx.read_idx(path).tolist()
    [7, 1, 4]
"""

from __future__ import annotations

import gzip
import os
import struct

import numpy as np

__all__ = ["read_idx", "cache_dir", "find_files", "load_npz"]

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4",
              0x0E: ">f8"}


def cache_dir():
    """Keras' data directory: ``$KERAS_HOME/datasets`` or ``~/.keras/datasets``."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, "datasets")


def read_idx(path):
    """Reads one IDX file (``.gz`` or raw) into a numpy array.

    Raises:
        ValueError: For a bad magic number or a size that does not match the header.
    """
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError("%s is not an IDX file (bad magic number)." % path)
    type_code, ndim = data[2], data[3]
    if type_code not in _IDX_TYPES:
        raise ValueError("%s: unknown IDX element type 0x%02x." % (path, type_code))
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError("%s is truncated (incomplete header)." % path)
    shape = struct.unpack(">" + "I" * ndim, data[4:header])
    dtype = np.dtype(_IDX_TYPES[type_code])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) - header != expected:
        raise ValueError("%s: the header promises %s elements (%d bytes) but the file holds %d "
                         "bytes of data; the file is truncated or corrupt."
                         % (path, "x".join(map(str, shape)), expected, len(data) - header))
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="), copy=True)


def find_files(directory, names):
    """Paths of ``names`` (each gzipped or not) in ``directory``, or None if one is missing."""
    found = []
    for name in names:
        for candidate in (name, name + ".gz"):
            path = os.path.join(directory, candidate)
            if os.path.isfile(path):
                found.append(path)
                break
        else:
            return None
    return found


def load_npz(path):
    """``(x_train, y_train), (x_test, y_test)`` from a Keras-style ``.npz`` (no pickles).

    Raises:
        ValueError: If a key is missing.
    """
    with np.load(path, allow_pickle=False) as f:
        missing = [k for k in ("x_train", "y_train", "x_test", "y_test") if k not in f.files]
        if missing:
            raise ValueError("%s lacks the arrays %s (expected x_train, y_train, x_test, "
                             "y_test)." % (path, missing))
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


_IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
              "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def load_idx_set(directory):
    """The four MNIST-layout IDX files of ``directory`` as train/test arrays, or None."""
    paths = find_files(directory, _IDX_NAMES)
    if paths is None:
        return None
    x_train, y_train, x_test, y_test = (read_idx(p) for p in paths)
    if len(x_train) != len(y_train) or len(x_test) != len(y_test):
        raise ValueError("%s: image and label counts differ (%d/%d train, %d/%d test)."
                         % (directory, len(x_train), len(y_train), len(x_test), len(y_test)))
    return (x_train, y_train), (x_test, y_test)


def not_found(dataset, searched, files, source):
    """The FileNotFoundError raised when a data set is not on disk."""
    return FileNotFoundError(
        "The %s data set was not found. eagerflow does not download data sets; put the files "
        "on disk and try again.\nLooked in:\n  %s\nExpected either %s, or the four files %s "
        "(gzipped or not) in one of those directories (or pass path=... to load_data).\n"
        "The files are published at %s."
        % (dataset, "\n  ".join(searched), files[0], ", ".join(files[1:]), source))
