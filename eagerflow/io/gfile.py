"""``tf.io.gfile``: file system functions over local paths.

Errors are eagerflow's (``NotFoundError``, ``AlreadyExistsError``...), as TF raises them.

Example:
    >>> import os, tempfile
    >>> from eagerflow.io import gfile
    >>> d = tempfile.mkdtemp()
    >>> with gfile.GFile(os.path.join(d, "a.txt"), "w") as f:
    ...     _ = f.write("hi")
    >>> gfile.listdir(d), gfile.exists(os.path.join(d, "a.txt"))
    (['a.txt'], True)
"""

from __future__ import annotations

import glob as _glob
import os
import shutil

from eagerflow import errors

__all__ = ["exists", "glob", "makedirs", "mkdir", "listdir", "isdir", "remove", "rename",
           "rmtree", "copy", "stat", "walk", "GFile", "Open"]


def _path(p):
    if hasattr(p, "numpy"):
        p = p.numpy()
    if isinstance(p, bytes):
        p = p.decode("utf-8")
    return os.fspath(p)


def _os_error(exc, op, path):
    if isinstance(exc, FileNotFoundError):
        return errors.NotFoundError(None, op, "%s: %s: no such file or directory." % (op, path))
    if isinstance(exc, FileExistsError):
        return errors.AlreadyExistsError(None, op, "%s: %s already exists." % (op, path))
    if isinstance(exc, PermissionError):
        return errors.PermissionDeniedError(None, op, "%s: %s: permission denied." % (op, path))
    return errors.UnknownError(None, op, "%s: %s: %s" % (op, path, exc))


def exists(path):
    """True if ``path`` exists."""
    return os.path.exists(_path(path))


def isdir(path):
    """True if ``path`` is a directory."""
    return os.path.isdir(_path(path))


def glob(pattern):
    """The sorted paths matching a glob pattern (``*``, ``?``, ``[...]``)."""
    return sorted(_glob.glob(_path(pattern)))


def makedirs(path):
    """Creates a directory and its parents; no error if it exists."""
    try:
        os.makedirs(_path(path), exist_ok=True)
    except OSError as exc:
        raise _os_error(exc, "makedirs", path) from None


def mkdir(path):
    """Creates one directory (its parent must exist)."""
    try:
        os.mkdir(_path(path))
    except OSError as exc:
        raise _os_error(exc, "mkdir", path) from None


def listdir(path):
    """The names in a directory, sorted."""
    try:
        return sorted(os.listdir(_path(path)))
    except OSError as exc:
        raise _os_error(exc, "listdir", path) from None


def remove(path):
    """Deletes a file."""
    try:
        os.remove(_path(path))
    except OSError as exc:
        raise _os_error(exc, "remove", path) from None


def rmtree(path):
    """Deletes a directory and everything in it."""
    try:
        shutil.rmtree(_path(path))
    except OSError as exc:
        raise _os_error(exc, "rmtree", path) from None


def rename(src, dst, overwrite=False):
    """Renames a file; an existing ``dst`` raises unless ``overwrite``."""
    src, dst = _path(src), _path(dst)
    if not overwrite and os.path.exists(dst):
        raise errors.AlreadyExistsError(None, "rename", "rename: %s already exists; pass "
                                        "overwrite=True to replace it." % dst)
    try:
        os.replace(src, dst)
    except OSError as exc:
        raise _os_error(exc, "rename", src) from None


def copy(src, dst, overwrite=False):
    """Copies a file; an existing ``dst`` raises unless ``overwrite``."""
    src, dst = _path(src), _path(dst)
    if not overwrite and os.path.exists(dst):
        raise errors.AlreadyExistsError(None, "copy", "copy: %s already exists." % dst)
    try:
        shutil.copyfile(src, dst)
    except OSError as exc:
        raise _os_error(exc, "copy", src) from None


def stat(path):
    """An ``os.stat_result`` of ``path`` (``length`` is ``st_size``)."""
    try:
        return os.stat(_path(path))
    except OSError as exc:
        raise _os_error(exc, "stat", path) from None


def walk(top, topdown=True, onerror=None):
    """``os.walk`` over a directory tree."""
    return os.walk(_path(top), topdown=topdown, onerror=onerror)


class GFile:
    """A file object (``tf.io.gfile.GFile``): text or binary by ``mode``.

    Args:
        name: The path.
        mode: ``"r"``, ``"w"``, ``"a"``, with ``"b"`` for bytes.
    """

    def __init__(self, name, mode="r"):
        self.name = _path(name)
        self.mode = mode
        try:
            self._f = open(self.name, mode if "b" in mode else mode,
                           **({} if "b" in mode else {"encoding": "utf-8"}))
        except OSError as exc:
            raise _os_error(exc, "GFile", self.name) from None

    def read(self, n=-1):
        return self._f.read(n)

    def readline(self):
        return self._f.readline()

    def readlines(self):
        return self._f.readlines()

    def write(self, data):
        return self._f.write(data)

    def flush(self):
        self._f.flush()

    def seek(self, offset, whence=0):
        return self._f.seek(offset, whence)

    def tell(self):
        return self._f.tell()

    def size(self):
        return os.fstat(self._f.fileno()).st_size

    def close(self):
        self._f.close()

    def __iter__(self):
        return iter(self._f)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


Open = GFile
