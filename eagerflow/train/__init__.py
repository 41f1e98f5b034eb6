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

__all__ = ["Example", "SequenceExample", "Features", "Feature", "FeatureList", "FeatureLists",
           "BytesList", "FloatList", "Int64List", "Checkpoint", "CheckpointLoadStatus",
           "CheckpointManager", "CheckpointOptions", "CheckpointReader", "get_checkpoint_state",
           "latest_checkpoint", "list_variables", "load_checkpoint", "load_variable"]

# tf.train.Example and its parts load on first use (protobuf messages checkpoints never need).
_EXAMPLE_NAMES = ("Example", "SequenceExample", "Features", "Feature", "FeatureList",
                  "FeatureLists", "BytesList", "FloatList", "Int64List")


def __getattr__(name):
    if name in _EXAMPLE_NAMES:
        from eagerflow.ops.io import example

        value = getattr(example, name)
        globals()[name] = value
        return value
    raise AttributeError("module 'eagerflow.train' has no attribute %r" % name)
