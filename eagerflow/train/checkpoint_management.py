"""``CheckpointManager``: numbered checkpoints in a directory, old ones deleted.

The directory holds one ``<name>-<n>.efckpt`` bundle per checkpoint and a ``checkpoint``
state file in TF's text format (``model_checkpoint_path: "ckpt-3"`` plus the list of kept
checkpoints and their timestamps). Both are written atomically and in that order, so the
state file only ever names complete checkpoints: a process killed during a save leaves the
previous checkpoint as the latest. Unlike TF, ``restore_or_initialize`` (and
``restore_latest_valid``) fall back to the newest checkpoint that verifies when the latest
one is corrupt (e.g. a disk error after the save), rather than failing the whole job.

Example:
    >>> import tempfile
    >>> import eagerflow as ef
    >>> v = ef.Variable(1.0)
    >>> manager = ef.train.CheckpointManager(ef.train.Checkpoint(v=v), tempfile.mkdtemp(),
    ...                                      max_to_keep=2)
    >>> for _ in range(3):
    ...     _ = manager.save()
    >>> [p.rsplit("-", 1)[1] for p in manager.checkpoints]
    ['2', '3']
"""

from __future__ import annotations

import contextlib
import os
import re
import time

from eagerflow import errors
from eagerflow.io import atomic, bundle, untrusted
from eagerflow.train import checkpoint as checkpoint_lib
from eagerflow.train.checkpoint_state import (  # noqa: F401  (get_checkpoint_state is re-exported)
    CheckpointState,
    get_checkpoint_state,
    write_state,
)

__all__ = ["CheckpointManager", "latest_checkpoint", "list_variables", "load_variable",
           "get_checkpoint_state"]


def _exists(prefix, directory=None):
    path = checkpoint_lib.checkpoint_file(prefix)
    if directory is not None and os.path.lexists(path):
        untrusted.check_inside(directory, path, "Checkpoint file %s" % path)
    return os.path.isfile(path)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The newest checkpoint prefix recorded in ``checkpoint_dir``, or None.

    Only checkpoints whose file exists are returned; temporaries of unfinished saves never
    are.

    Args:
        checkpoint_dir: The directory a ``CheckpointManager`` saves into.
        latest_filename: The state file's name (default ``"checkpoint"``).

    Returns:
        A prefix to pass to ``Checkpoint.restore``, or None.

    Example:
        >>> import tempfile
        >>> import eagerflow as ef
        >>> ef.train.latest_checkpoint(tempfile.mkdtemp()) is None
        True
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not state.model_checkpoint_path:
        return None
    directory = os.fspath(checkpoint_dir)
    if _exists(state.model_checkpoint_path, directory):
        return state.model_checkpoint_path
    for prefix in reversed(state.all_model_checkpoint_paths):
        if _exists(prefix, directory):
            return prefix
    return None


def _resolve(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise errors.NotFoundError(None, None, "No checkpoint found in directory %s."
                                       % path)
        return latest
    return path


def list_variables(ckpt_dir_or_file):
    """``[(key, shape)]`` of the tensors in a checkpoint, sorted by key (as TF).

    Args:
        ckpt_dir_or_file: A checkpoint prefix, its file, or a directory (its latest).

    Returns:
        A list of ``(name, shape as a list)``.

    Raises:
        NotFoundError, DataLossError: If the checkpoint is missing or corrupt.

    Example:
        >>> import os, tempfile
        >>> import eagerflow as ef
        >>> m = ef.Module(); m.w = ef.Variable([1.0, 2.0])
        >>> p = ef.train.Checkpoint(m=m).write(os.path.join(tempfile.mkdtemp(), "c"))
        >>> ef.train.list_variables(p)[0]
        ('m/w/.ATTRIBUTES/VARIABLE_VALUE', [2])
    """
    reader = bundle.BundleReader(checkpoint_lib.checkpoint_file(_resolve(ckpt_dir_or_file)))
    return sorted((k, list(reader.entry(k).shape)) for k in reader.keys())


def load_variable(ckpt_dir_or_file, name):
    """One tensor of a checkpoint as a numpy array (verified).

    Args:
        ckpt_dir_or_file: A checkpoint prefix, its file, or a directory (its latest).
        name: A key from ``list_variables``; the ``/.ATTRIBUTES/VARIABLE_VALUE`` suffix
            may be left out.

    Returns:
        A numpy array.

    Raises:
        NotFoundError: If there is no such checkpoint or tensor.
        DataLossError: If the tensor is corrupt.

    Example:
        >>> import os, tempfile
        >>> import eagerflow as ef
        >>> m = ef.Module(); m.w = ef.Variable(5.0)
        >>> p = ef.train.Checkpoint(m=m).write(os.path.join(tempfile.mkdtemp(), "c"))
        >>> float(ef.train.load_variable(p, "m/w"))
        5.0
    """
    reader = bundle.BundleReader(checkpoint_lib.checkpoint_file(_resolve(ckpt_dir_or_file)))
    if name not in reader and name + checkpoint_lib._ATTR in reader:
        name = name + checkpoint_lib._ATTR
    return reader.read(name)


class CheckpointReader:
    """Reads the tensors of one checkpoint by key (what ``tf.train.load_checkpoint`` returns).

    Every tensor is verified against its checksum when read.

    Example:
        >>> import os, tempfile
        >>> import eagerflow as ef
        >>> m = ef.Module(); m.w = ef.Variable([1.0, 2.0])
        >>> p = ef.train.Checkpoint(m=m).write(os.path.join(tempfile.mkdtemp(), "c"))
        >>> reader = ef.train.load_checkpoint(p)
        >>> reader.get_tensor("m/w/.ATTRIBUTES/VARIABLE_VALUE").tolist()
        [1.0, 2.0]
    """

    def __init__(self, path):
        self._path = checkpoint_lib.checkpoint_file(_resolve(path))
        self._reader = bundle.BundleReader(self._path)

    def has_tensor(self, key):
        """Whether ``key`` names a tensor of the checkpoint."""
        return key in self._reader

    def get_tensor(self, key):
        """The tensor ``key`` as a numpy array.

        Raises:
            NotFoundError: If the checkpoint has no such key.
        """
        if key not in self._reader:
            raise errors.NotFoundError(
                None, None, "Key %s not found in checkpoint %s; its keys are listed by "
                "list_variables." % (key, self._path))
        return self._reader.read(key)

    def get_variable_to_shape_map(self):
        """``{key: shape as a list}`` for every tensor."""
        return {k: list(self._reader.entry(k).shape) for k in self._reader.keys()}

    def get_variable_to_dtype_map(self):
        """``{key: DType}`` for every tensor."""
        from eagerflow import dtypes

        return {k: dtypes.as_dtype(self._reader.entry(k).dtype) for k in self._reader.keys()}


def load_checkpoint(ckpt_dir_or_file):
    """A ``CheckpointReader`` for a checkpoint prefix, its file, or a directory's latest.

    Raises:
        NotFoundError, DataLossError: If the checkpoint is missing or corrupt.
    """
    return CheckpointReader(ckpt_dir_or_file)


def _number(prefix):
    m = re.search(r"-(\d+)$", prefix)
    return int(m.group(1)) if m else -1


class CheckpointManager:
    """Keeps the last ``max_to_keep`` checkpoints of a ``Checkpoint`` in ``directory``.

    Args:
        checkpoint: The ``Checkpoint`` to save and restore.
        directory: Where checkpoints and the ``checkpoint`` state file live (created).
        max_to_keep: How many recent checkpoints to keep; None keeps all.
        keep_checkpoint_every_n_hours: Additionally keep one checkpoint per this many hours
            (those are never deleted).
        checkpoint_name: The file prefix (default ``"ckpt"``).
        step_counter: A Variable whose value numbers the checkpoints and drives
            ``checkpoint_interval``.
        checkpoint_interval: Minimum number of steps between saves (needs ``step_counter``).
        init_op: A callable that ``restore_or_initialize`` runs when there is no checkpoint.

    Raises:
        ValueError: If ``checkpoint_interval`` is given without ``step_counter``, or
            ``max_to_keep`` is not a positive int or None.

    Example:
        >>> import tempfile
        >>> import eagerflow as ef
        >>> step = ef.Variable(0, dtype=ef.int64)
        >>> m = ef.train.CheckpointManager(ef.train.Checkpoint(step=step), tempfile.mkdtemp(),
        ...                                step_counter=step, checkpoint_interval=10)
        >>> m.save() is not None, m.save() is None
        (True, True)
    """

    def __init__(self, checkpoint, directory, max_to_keep=5, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_op=None):
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep < 1):
            raise ValueError("max_to_keep must be a positive int or None, got %r. (TF's "
                             "max_to_keep=0 'keep nothing' is not supported.)" % (max_to_keep,))
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not "
                             "None.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_every_n_hours = keep_checkpoint_every_n_hours
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._init_op = init_op
        self._last_saved_step = None
        os.makedirs(self._directory, exist_ok=True)
        state = get_checkpoint_state(self._directory)
        now = time.time()
        if state is not None:
            pairs = list(zip(state.all_model_checkpoint_paths,
                             state.all_model_checkpoint_timestamps
                             or [now] * len(state.all_model_checkpoint_paths)))
            self._kept = [(p, t) for p, t in pairs if _exists(p, self._directory)]
            self._last_preserved = state.last_preserved_timestamp or now
        else:
            self._kept = []
            self._last_preserved = now

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self):
        """The newest kept checkpoint prefix, or None."""
        return self._kept[-1][0] if self._kept else None

    @property
    def checkpoints(self):
        """The kept checkpoint prefixes, oldest first."""
        return [p for p, _ in self._kept]

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Saves a new checkpoint, then deletes the ones beyond ``max_to_keep``.

        Args:
            checkpoint_number: The number in the file name; default ``step_counter``'s value,
                else the checkpoint's ``save_counter``.
            check_interval: If True and ``checkpoint_interval`` is set, skip the save when
                fewer than that many steps passed since the last one.
            options: A ``CheckpointOptions`` (ignored).

        Returns:
            The new checkpoint prefix, or None if skipped.
        """
        if self._checkpoint_interval is not None:
            step = int(self._step_counter.numpy())
            if (check_interval and self._last_saved_step is not None
                    and step < self._last_saved_step + self._checkpoint_interval):
                return None
            self._last_saved_step = step
        if checkpoint_number is None and self._step_counter is not None:
            checkpoint_number = int(self._step_counter.numpy())
        counter = getattr(self._checkpoint, "save_counter", None)
        if checkpoint_number is None:
            counter.assign_add(1)
            checkpoint_number = int(counter.numpy())
        elif counter is not None:
            counter.assign_add(1)
        prefix = "%s-%d" % (self._prefix, int(checkpoint_number))
        self._checkpoint.write(prefix)
        now = time.time()
        self._kept = [(p, t) for p, t in self._kept if p != prefix] + [(prefix, now)]
        self._sweep()
        write_state(self._directory, CheckpointState(
            prefix, [p for p, _ in self._kept], [t for _, t in self._kept],
            self._last_preserved))
        # Temporaries of saves killed before their rename (this manager owns the directory).
        atomic.remove_temporaries(self._directory)
        return prefix

    def _sweep(self):
        """Drops the oldest checkpoints beyond ``max_to_keep`` (after the new one exists)."""
        if self._max_to_keep is None:
            return
        while len(self._kept) > self._max_to_keep:
            prefix, stamp = self._kept.pop(0)
            if (self._keep_every_n_hours is not None
                    and stamp - self._last_preserved >= self._keep_every_n_hours * 3600.0):
                self._last_preserved = stamp  # preserved forever: just stop tracking it
                continue
            path = checkpoint_lib.checkpoint_file(prefix)
            # Only a file inside this directory is ever deleted (os.remove of a symlink
            # removes the link, never its target).
            parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
            root = os.path.realpath(self._directory)
            if parent == root or parent.startswith(root.rstrip(os.sep) + os.sep):
                with contextlib.suppress(OSError):
                    os.remove(path)

    def restore_latest_valid(self):
        """Restores the newest checkpoint that loads, skipping corrupt ones.

        Returns:
            ``(prefix, status)``, or ``(None, None)`` when no checkpoint loads.

        Example:
            >>> import tempfile
            >>> import eagerflow as ef
            >>> m = ef.train.CheckpointManager(ef.train.Checkpoint(), tempfile.mkdtemp())
            >>> m.restore_latest_valid()
            (None, None)
        """
        candidates = sorted(set(self.checkpoints) | ({latest_checkpoint(self._directory)}
                                                     - {None}), key=_number)
        for prefix in reversed(candidates):
            untrusted.check_inside(self._directory, checkpoint_lib.checkpoint_file(prefix),
                                   "Checkpoint %s" % prefix)
            try:
                status = self._checkpoint.restore(prefix)
            except (errors.DataLossError, errors.NotFoundError,
                    errors.FailedPreconditionError):
                continue
            return prefix, status
        return None, None

    def restore_or_initialize(self):
        """Restores the newest valid checkpoint, or runs ``init_op`` if there is none.

        A corrupt latest checkpoint is skipped in favour of the previous good one.

        Returns:
            The restored prefix, or None if ``init_op`` ran (or there was nothing to do).
        """
        prefix, _ = self.restore_latest_valid()
        if prefix is not None:
            return prefix
        if self._init_op is not None:
            self._init_op()
        return None
