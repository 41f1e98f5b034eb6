"""Reading files that may be hostile: regular files only, bounded sizes, bounded JSON.

Every loader of a file format (bundles, graphs, SavedModels, ``.keras`` archives, legacy
weights, checkpoint state) reads through these helpers, so the rules are the same
everywhere:

* only regular files are opened: a FIFO (which would block forever), a device such as
  ``/dev/zero`` (endless bytes) or a directory is refused before a byte is read, and the
  open itself never blocks;
* a file inside a directory being loaded (a SavedModel, a checkpoint directory) must
  resolve, symlinks followed, to a path inside that directory;
* a size a file declares is compared, in Python integers (no wrap-around), with the bytes
  actually present before anything of that size is allocated;
* JSON is parsed only after its nesting depth is checked (deep nesting would exhaust the
  parser's recursion), and every failure is an ``eagerflow.errors`` exception;
* zip members have size and compression-ratio limits (a small archive must not inflate
  to gigabytes).

Example:
    >>> import os, tempfile
    >>> from eagerflow.io import untrusted
    >>> path = os.path.join(tempfile.mkdtemp(), "x.json")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"a": [1, 2]}')
    >>> untrusted.json_loads(untrusted.read_regular(path), path)
    {'a': [1, 2]}
    >>> untrusted.json_loads(b"[" * 1000 + b"]" * 1000, "deep.json")
    Traceback (most recent call last):
    ...
    eagerflow.errors.DataLossError: ...
"""

from __future__ import annotations

import json
import os
import re
import stat

from eagerflow import errors

__all__ = ["open_regular", "read_regular", "json_loads", "check_inside", "read_zip_member",
           "MAX_JSON_DEPTH", "MAX_ZIP_RATIO"]

MAX_JSON_DEPTH = 100
# A member that inflates more than this many times its stored size (beyond the first MiB)
# is refused: real configs compress about 5-20x, weights are stored uncompressed.
MAX_ZIP_RATIO = 200
_ZIP_SMALL = 1 << 20


def _loss(what, message):
    return errors.DataLossError(None, None, "%s: %s" % (what, message))


def open_regular(path, what=None):
    """Opens ``path`` for binary reading if it is a regular file (symlinks followed).

    The open never blocks (``O_NONBLOCK``, then checked with ``fstat`` on the open
    descriptor, so the file cannot be swapped between the check and the read).

    Raises:
        NotFoundError: If nothing is there.
        InvalidArgumentError: If it is a FIFO, device, socket or directory.
        PermissionDeniedError: If it cannot be read.
    """
    path = os.fspath(path)
    what = what or path
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, "%s: no such file" % what) from None
    except IsADirectoryError:
        raise errors.InvalidArgumentError(None, None, "%s: expected a file, found a "
                                          "directory" % what) from None
    except PermissionError:
        raise errors.PermissionDeniedError(None, None, "%s: permission denied" % what) \
            from None
    except OSError as exc:
        raise errors.InvalidArgumentError(None, None, "%s: cannot be opened (%s)" % (
            what, exc.strerror or exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise errors.InvalidArgumentError(
                None, None, "%s is %s; eagerflow reads models, weights and checkpoints only "
                "from regular files." % (what, kind))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path, max_bytes=None, what=None):
    """The whole content of the regular file ``path`` (see :func:`open_regular`).

    Raises:
        ResourceExhaustedError: If the file is larger than ``max_bytes``.
    """
    what = what or os.fspath(path)
    with open_regular(path, what) as f:
        size = os.fstat(f.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise errors.ResourceExhaustedError(
                None, None, "%s is %d bytes, more than the %d this reader accepts." % (
                    what, size, max_bytes))
        data = f.read(size + 1)  # +1: a file that grew while reading is noticed
    if len(data) != size:
        raise _loss(what, "the file changed size while it was read")
    return data


def check_inside(root, path, what=None):
    """``path`` if it resolves (symlinks followed) to a location inside ``root``.

    Raises:
        PermissionDeniedError: If it resolves outside ``root`` (e.g. a symlink in a
            SavedModel directory pointing at ``/etc/passwd``).
    """
    real_root = os.path.realpath(os.fspath(root))
    real = os.path.realpath(os.fspath(path))
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise errors.PermissionDeniedError(
            None, None, "%s resolves to %s, outside %s; a file of a saved directory must "
            "stay inside it (a symlink pointing out is refused)." % (
                what or path, real, real_root))
    return path


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(rb"[\[\]{}]")


def json_depth_ok(data, max_depth=MAX_JSON_DEPTH):
    """True when the brackets of JSON ``data`` (bytes) nest at most ``max_depth`` deep."""
    depth = 0
    for m in _BRACKETS.finditer(_STRING.sub(b'""', data)):
        if m.group() in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                return False
        else:
            depth -= 1
    return True


def json_loads(data, what, max_depth=MAX_JSON_DEPTH):
    """Parses JSON from a file (bytes or str) with a nesting-depth limit.

    Raises:
        DataLossError: If it is not UTF-8 JSON, or nests deeper than ``max_depth``.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if not json_depth_ok(data, max_depth):
        raise _loss(what, "the JSON nests deeper than %d levels (corrupt or hostile)"
                    % max_depth)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _loss(what, "not valid JSON (%s)" % str(exc)[:200]) from None


def read_zip_member(archive, name, what, max_bytes, max_ratio=MAX_ZIP_RATIO):
    """The bytes of zip member ``name``, refusing oversized or over-compressed members.

    The declared sizes are checked before inflating, and the read stops at ``max_bytes``
    whatever the declared size says.

    Raises:
        NotFoundError: If there is no such member.
        ResourceExhaustedError: If it inflates beyond ``max_bytes`` or ``max_ratio``.
        DataLossError: If the archive is corrupt.
    """
    import zipfile

    try:
        info = archive.getinfo(name)
    except KeyError:
        raise errors.NotFoundError(None, None, "%s has no member %s" % (what, name)) from None
    if info.file_size > max_bytes:
        raise errors.ResourceExhaustedError(
            None, None, "%s: member %s inflates to %d bytes, more than the %d allowed." % (
                what, name, info.file_size, max_bytes))
    if info.file_size > _ZIP_SMALL and info.file_size > max_ratio * max(info.compress_size, 1):
        raise errors.ResourceExhaustedError(
            None, None, "%s: member %s inflates %d bytes to %d (more than %dx): refused as a "
            "zip bomb." % (what, name, info.compress_size, info.file_size, max_ratio))
    try:
        with archive.open(info) as f:
            data = f.read(max_bytes + 1)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError,
            NotImplementedError, RuntimeError) as exc:
        raise _loss(what, "member %s cannot be read (%s)" % (name, str(exc)[:200])) from None
    except Exception as exc:  # noqa: BLE001 - zlib.error and friends from a damaged stream
        raise _loss(what, "member %s cannot be read (%s: %s)" % (
            name, type(exc).__name__, str(exc)[:200])) from None
    if len(data) > max_bytes:
        raise errors.ResourceExhaustedError(
            None, None, "%s: member %s inflates to more than %d bytes." % (
                what, name, max_bytes))
    return data
