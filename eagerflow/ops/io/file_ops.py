"""``tf.io.read_file`` / ``write_file`` as stateful primitives, so they trace into graphs.

Example:
    >>> import os, tempfile
    >>> import eagerflow as ef
    >>> p = os.path.join(tempfile.mkdtemp(), "f.bin")
    >>> ef.io.write_file(p, b"data")
    >>> ef.io.read_file(p).numpy()
    b'data'
"""

from __future__ import annotations

import os

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import convert_to_tensor
from eagerflow.ops.family import HOST_FILES

__all__ = ["read_file", "write_file", "matching_files"]

# A file larger than this is refused by read_file before it is read (a hostile or mistaken
# path must not exhaust memory); TF has no limit, 2 GiB covers any sane input file.
MAX_FILE_BYTES = 1 << 31


def _scalar_path(x, op):
    if x.ndim != 0:
        raise errors.InvalidArgumentError(
            None, op, "%s: the filename must be a scalar string, got shape %s." % (op, x.shape))
    value = x[()] if isinstance(x, np.ndarray) else x
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _read_kernel(xp):
    def kernel(filename):
        path = _scalar_path(filename, "ReadFile")
        from eagerflow.io import untrusted  # the package's namespace imports this module

        with untrusted.open_regular(path, "ReadFile: %s" % path) as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise errors.ResourceExhaustedError(
                    None, "ReadFile", "ReadFile: %s has %d bytes, more than the limit of %d."
                    % (path, size, MAX_FILE_BYTES))
            data = f.read(size + 1)
        return np.array(data, dtype=object)
    return kernel


READ_FILE = registry.primitive(
    "ReadFile", _read_kernel, dtypes=(d.string,), stateful=True, family="io",
    host_sync=HOST_FILES,
    shape_fn=lambda f: AbstractValue((), d.string))


def _write_kernel(xp):
    def kernel(filename, contents):
        path = _scalar_path(filename, "WriteFile")
        data = contents[()] if isinstance(contents, np.ndarray) else contents
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        from eagerflow.io import atomic  # the package's namespace imports this module

        atomic.write_bytes(path, data)
        return np.zeros((0,), np.int32)
    return kernel


WRITE_FILE = registry.primitive(
    "WriteFile", _write_kernel, dtypes=(d.string,), stateful=True, family="io",
    host_sync=HOST_FILES,
    shape_fn=lambda f, c: AbstractValue((0,), d.int32))


def read_file(filename, name=None):
    """The whole contents of a file as a scalar string tensor (``tf.io.read_file``).

    Raises:
        NotFoundError: If the file does not exist.
    """
    return execute(READ_FILE, (convert_to_tensor(filename, dtype=d.string),))


def write_file(filename, contents, name=None):
    """Writes a scalar string tensor to a file, atomically (``tf.io.write_file``).

    Parent directories are created, as TF does.
    """
    execute(WRITE_FILE, (convert_to_tensor(filename, dtype=d.string),
                         convert_to_tensor(contents, dtype=d.string)))


def matching_files(pattern, name=None):
    """The sorted file names matching a glob pattern (``tf.io.matching_files``)."""
    from eagerflow.io import gfile

    if hasattr(pattern, "numpy"):
        pattern = pattern.numpy()
    return convert_to_tensor(np.array([p.encode() for p in gfile.glob(pattern)] or [],
                                      dtype=object))
