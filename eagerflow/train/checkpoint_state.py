"""The ``checkpoint`` state file: which checkpoints a directory holds, newest last.

TF's text format (``model_checkpoint_path: "ckpt-3"``, the kept paths, their timestamps),
with paths relative to the file's directory. ``Checkpoint.save`` writes one naming its new
checkpoint, ``CheckpointManager`` one listing everything it keeps; ``latest_checkpoint``
reads it. The file is untrusted input: every name in it must stay inside its directory.

Example:
    >>> import os, tempfile
    >>> from eagerflow.train.checkpoint_state import CheckpointState, write_state
    >>> d = tempfile.mkdtemp()
    >>> write_state(d, CheckpointState(os.path.join(d, "ckpt-2"), [os.path.join(d, "ckpt-2")]))
    >>> open(os.path.join(d, "checkpoint")).read().splitlines()[0]
    'model_checkpoint_path: "ckpt-2"'
"""

from __future__ import annotations

import os
import re

from eagerflow import errors
from eagerflow.io import atomic, untrusted

__all__ = ["CheckpointState", "get_checkpoint_state", "write_state"]

_STATE = "checkpoint"
_LINE = re.compile(r'^\s*(\w+)\s*:\s*(.*?)\s*$')


class CheckpointState:
    """The parsed ``checkpoint`` state file.

    Attributes:
        model_checkpoint_path: The latest checkpoint prefix (absolute), or None.
        all_model_checkpoint_paths: The kept prefixes, oldest first.
        all_model_checkpoint_timestamps: Their save times (seconds since the epoch).
        last_preserved_timestamp: When the last ``keep_checkpoint_every_n_hours`` one was kept.
    """

    def __init__(self, model_checkpoint_path=None, all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp=None):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp


def _unquote(text):
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return text


def _quote(text):
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """Reads ``checkpoint_dir/checkpoint``; None if it does not exist or cannot be parsed.

    Relative paths in the file are resolved against ``checkpoint_dir``.

    Example:
        >>> import tempfile
        >>> from eagerflow.train import get_checkpoint_state
        >>> get_checkpoint_state(tempfile.mkdtemp()) is None
        True
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = os.path.join(checkpoint_dir, latest_filename or _STATE)
    try:
        text = untrusted.read_regular(path, max_bytes=_STATE_LIMIT).decode("utf-8")
    except (errors.NotFoundError, UnicodeDecodeError):
        return None
    state = CheckpointState()

    def resolve(p):
        return _inside(checkpoint_dir, p, path)

    try:
        for line in text.splitlines():  # a path outside raises InvalidArgumentError below
            m = _LINE.match(line)
            if not m:
                continue
            field, value = m.group(1), m.group(2)
            if field == "model_checkpoint_path":
                state.model_checkpoint_path = resolve(_unquote(value))
            elif field == "all_model_checkpoint_paths":
                state.all_model_checkpoint_paths.append(resolve(_unquote(value)))
            elif field == "all_model_checkpoint_timestamps":
                state.all_model_checkpoint_timestamps.append(float(value))
            elif field == "last_preserved_timestamp":
                state.last_preserved_timestamp = float(value)
    except errors.InvalidArgumentError:
        raise
    except ValueError:
        return None
    return state


# A state file lists a few hundred paths at most; anything larger is not one.
_STATE_LIMIT = 16 << 20


def _inside(directory, name, state_path):
    """``directory/name`` for a checkpoint named by the state file; the name must be a
    relative path that stays inside ``directory`` (the state file decides what is read and
    deleted, so ``../x`` or ``/etc/x`` must not name anything)."""
    parts = name.replace("\\", "/").split("/")
    if not name or os.path.isabs(name) or name.startswith("\\") or ".." in parts or (
            os.path.splitdrive(name)[0]):
        raise errors.InvalidArgumentError(
            None, None, "The checkpoint state file %s names %r, which is not a path inside "
            "its directory; checkpoint paths there must be relative names such as "
            "'ckpt-3'. The file is damaged or hostile: delete it (checkpoints are not "
            "touched) or write it again with a CheckpointManager." % (state_path, name[:200]))
    return os.path.join(directory, name)


def write_state(directory, state, latest_filename=None):
    def rel(p):
        # Paths in the state file are relative to its directory (TF's save_relative_paths),
        # whether the manager was given "./ckpt" or an absolute path: a prefix that is
        # relative to the working directory would be joined to the directory again on read.
        return os.path.relpath(os.path.abspath(p), os.path.abspath(directory))

    lines = []
    if state.model_checkpoint_path:
        lines.append("model_checkpoint_path: " + _quote(rel(state.model_checkpoint_path)))
    lines += ["all_model_checkpoint_paths: " + _quote(rel(p))
              for p in state.all_model_checkpoint_paths]
    lines += ["all_model_checkpoint_timestamps: %r" % t
              for t in state.all_model_checkpoint_timestamps]
    if state.last_preserved_timestamp is not None:
        lines.append("last_preserved_timestamp: %r" % state.last_preserved_timestamp)
    atomic.write_text(os.path.join(directory, latest_filename or _STATE),
                      "\n".join(lines) + "\n")
