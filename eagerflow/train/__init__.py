"""``eagerflow.train``: checkpoints (``tf.train`` names).

Example:
    >>> import tempfile
    >>> import eagerflow as ef
    >>> ef.train.latest_checkpoint(tempfile.mkdtemp()) is None
    True
"""

from eagerflow.train.checkpoint import Checkpoint, CheckpointLoadStatus, CheckpointOptions
from eagerflow.train.checkpoint_management import (
    CheckpointManager,
    get_checkpoint_state,
    latest_checkpoint,
    CheckpointReader,
    list_variables,
    load_checkpoint,
    load_variable,
)

__all__ = ["Checkpoint", "CheckpointLoadStatus", "CheckpointManager", "CheckpointOptions",
           "CheckpointReader", "get_checkpoint_state", "latest_checkpoint", "list_variables",
           "load_checkpoint", "load_variable"]
