"""Atomic file writes: a reader sees the old file or the new one, never a mix.

Every write goes to a temporary name in the destination's own directory (so the final
``os.replace`` is a rename within one filesystem, which POSIX makes atomic), is flushed and
fsynced, renamed over the destination, and then the directory itself is fsynced so the
rename survives a power loss. A process killed at any point leaves at worst a temporary file
whose name starts with ``.`` and contains ``.tmp-``; ``is_temporary`` recognizes those names so
readers and cleaners never mistake them for real files.

Example:
    >>> import os, tempfile
    >>> from eagerflow.io import atomic
    >>> d = tempfile.mkdtemp()
    >>> path = atomic.write_bytes(os.path.join(d, "state"), b"hello")
    >>> open(path, "rb").read()
    b'hello'
"""

from __future__ import annotations

import contextlib
import os
import secrets

__all__ = ["atomic_open", "write_bytes", "write_text", "fsync_directory", "is_temporary",
           "remove_temporaries"]

_TMP_MARK = ".tmp-"


def fsync_directory(directory):
    """Flushes a directory's entries (new names, renames) to disk.

    Args:
        directory: The directory path.

    Example:
        >>> import tempfile
        >>> from eagerflow.io.atomic import fsync_directory
        >>> fsync_directory(tempfile.gettempdir())
    """
    if not hasattr(os, "O_DIRECTORY"):  # Windows cannot open a directory; rename is durable
        return
    fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def is_temporary(name):
    """Whether ``name`` (a base name or path) is an unfinished temporary of this module.

    Example:
        >>> from eagerflow.io.atomic import is_temporary
        >>> is_temporary(".ckpt-1.efckpt.tmp-1a2b"), is_temporary("ckpt-1.efckpt")
        (True, False)
    """
    base = os.path.basename(name)
    return base.startswith(".") and _TMP_MARK in base


@contextlib.contextmanager
def atomic_open(path, mode="wb"):
    """Opens a temporary file that replaces ``path`` atomically when the block succeeds.

    If the block raises, the temporary is removed and ``path`` is untouched.

    Args:
        path: The destination file.
        mode: ``"wb"`` or ``"w"`` (text, UTF-8).

    Yields:
        A writable file object.

    Raises:
        ValueError: If ``mode`` is not a write mode.

    Example:
        >>> import os, tempfile
        >>> from eagerflow.io.atomic import atomic_open
        >>> p = os.path.join(tempfile.mkdtemp(), "f.txt")
        >>> with atomic_open(p, "w") as f:
        ...     _ = f.write("done")
        >>> open(p).read()
        'done'
    """
    if mode not in ("wb", "w"):
        raise ValueError("atomic_open: mode must be 'wb' or 'w', got %r" % (mode,))
    path = os.fspath(path)
    directory, base = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, ".%s%s%d-%s" % (base, _TMP_MARK, os.getpid(),
                                                  secrets.token_hex(4)))
    kwargs = {"encoding": "utf-8"} if mode == "w" else {}
    # "x": created exclusively, so a file (or symlink) planted at the name is never used.
    f = open(tmp, mode.replace("w", "x"), **kwargs)
    try:
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    fsync_directory(directory)


def write_bytes(path, data):
    """Atomically writes ``data`` to ``path``; returns ``path``.

    Example:
        >>> import os, tempfile
        >>> from eagerflow.io.atomic import write_bytes
        >>> p = write_bytes(os.path.join(tempfile.mkdtemp(), "b"), b"x")
        >>> os.path.getsize(p)
        1
    """
    with atomic_open(path, "wb") as f:
        f.write(data)
    return path


def write_text(path, text):
    """Atomically writes UTF-8 ``text`` to ``path``; returns ``path``.

    Example:
        >>> import os, tempfile
        >>> from eagerflow.io.atomic import write_text
        >>> p = write_text(os.path.join(tempfile.mkdtemp(), "t"), "hi")
        >>> open(p).read()
        'hi'
    """
    with atomic_open(path, "w") as f:
        f.write(text)
    return path


def remove_temporaries(directory):
    """Deletes leftover temporaries (from killed writers) in ``directory``; returns them.

    Only call this when no other process is writing into ``directory``.

    Example:
        >>> import tempfile
        >>> from eagerflow.io.atomic import remove_temporaries
        >>> remove_temporaries(tempfile.mkdtemp())
        []
    """
    removed = []
    for name in sorted(os.listdir(directory)):
        if is_temporary(name):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(directory, name))
                removed.append(name)
    return removed
