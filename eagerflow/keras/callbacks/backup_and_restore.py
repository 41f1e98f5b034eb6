"""``BackupAndRestore``: resume an interrupted ``fit`` where it stopped.

At the end of every epoch the model's and the optimizer's variables (a ``train.Checkpoint``
of both, written atomically: weights, slots and the step count) and the epoch number (a
small JSON file) go to ``backup_dir``.
When ``fit`` starts and a backup is there, it is loaded and training continues with the
next epoch; when ``fit`` finishes, the backup is deleted. So a job killed mid-epoch and
started again with the same command ends with the same weights as one that never stopped
(given the same data order: no shuffling, or a shuffle seeded per epoch).

Under a multi-worker strategy the chief writes the backup and every worker reads it (the
directory must be visible to all of them: a shared or the same local filesystem).

Example:
    >>> from eagerflow.keras.callbacks import BackupAndRestore
    >>> BackupAndRestore("/tmp/backup").save_freq
    'epoch'
"""

from __future__ import annotations

import json
import os
import re

from eagerflow.keras.callbacks.callback import Callback

__all__ = ["BackupAndRestore"]

_STATE = "training_state.json"
_WEIGHTS = re.compile(r"\Aepoch-(\d{1,9})\Z")
_MAX_STATE_BYTES = 4096


class BackupAndRestore(Callback):
    """Backs up training state each epoch and restores it when ``fit`` starts again.

    Args:
        backup_dir: The directory of the backup (created when needed).
        save_freq: ``"epoch"`` (the only supported value; TF also takes a batch count).
        delete_checkpoint: Delete the backup once ``fit`` completes (default True).
        save_before_preemption: Accepted for TF compatibility (no preemption signal here).

    Raises:
        ValueError: An empty ``backup_dir`` or an unsupported ``save_freq``.
    """

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True,
                 save_before_preemption=False):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: backup_dir must be a directory path.")
        if save_freq != "epoch":
            raise ValueError("BackupAndRestore: save_freq=%r is not supported; use 'epoch'."
                             % (save_freq,))
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = bool(delete_checkpoint)
        self._state_path = os.path.join(self.backup_dir, _STATE)

    def _read_state(self):
        """``(epoch, weights file)`` of the last backup, or None.

        The state file is untrusted input: its size is bounded, the epoch must be a
        non-negative integer and the weights name must be one this callback writes.
        """
        if not os.path.exists(self._state_path):
            return None
        from eagerflow.io import untrusted

        with untrusted.open_regular(self._state_path) as f:  # a FIFO never blocks fit
            data = f.read(_MAX_STATE_BYTES + 1)
        try:
            state = json.loads(data.decode("utf-8")) if len(data) <= _MAX_STATE_BYTES else None
            epoch, weights = state["epoch"], state["weights"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            epoch = weights = None
        match = _WEIGHTS.match(weights) if isinstance(weights, str) else None
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0 or \
                match is None or int(match.group(1)) != epoch:
            raise ValueError("BackupAndRestore: %s is not a valid training state (expected "
                             '{"epoch": N, "weights": "epoch-N"}); delete the '
                             "backup directory to start over." % self._state_path)
        return epoch, os.path.join(self.backup_dir, weights)

    def on_train_begin(self, logs=None):
        state = self._read_state()
        if state is None:
            return
        epoch, weights = state
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and not getattr(optimizer, "built", False):
            # So the file's optimizer state (step count, slots) has variables to go into.
            optimizer.build(self.model.trainable_variables)
        self._checkpoint().restore(weights)
        self.model._initial_epoch = epoch + 1

    def _checkpoint(self):
        from eagerflow.train.checkpoint import Checkpoint

        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None:
            return Checkpoint(model=self.model)
        return Checkpoint(model=self.model, optimizer=optimizer)

    def on_epoch_end(self, epoch, logs=None):
        from eagerflow.framework import worker_context
        from eagerflow.io import atomic

        os.makedirs(self.backup_dir, exist_ok=True)
        name = "epoch-%d" % epoch
        previous = self._read_state()
        checkpoint = self._checkpoint()
        strategy = getattr(self.model, "distribute_strategy", None)
        # The variables first, under a new name; then the state that points at them; then
        # the old checkpoint goes. A kill at any point leaves a state naming a complete one.
        with worker_context.write_path(strategy, os.path.join(self.backup_dir, name)) as path:
            checkpoint.write(path)
        with worker_context.chief_writes(strategy, self._state_path) as write:
            if write:
                atomic.write_text(self._state_path,
                                  json.dumps({"epoch": int(epoch), "weights": name}))
                if previous is not None and os.path.basename(previous[1]) != name:
                    _remove(previous[1] + ".efckpt")

    def on_train_end(self, logs=None):
        from eagerflow.framework import worker_context

        if not self.delete_checkpoint:
            return
        strategy = getattr(self.model, "distribute_strategy", None)
        with worker_context.chief_writes(strategy, "the removed backup") as write:
            if write:
                state = self._read_state()
                _remove(self._state_path)
                if state is not None:
                    _remove(state[1] + ".efckpt")


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
