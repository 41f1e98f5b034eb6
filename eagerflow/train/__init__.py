"""``eagerflow.train``: checkpoints (``tf.train`` names).

Example:
    >>> import tempfile
    >>> import eagerflow as ef
    >>> ef.train.latest_checkpoint(tempfile.mkdtemp()) is None
    True
"""

from eagerflow.io.example import (
    BytesList, Example, Feature, FeatureList, FeatureLists, Features, FloatList, Int64List,
    SequenceExample,
)
from eagerflow.train.checkpoint import Checkpoint, CheckpointLoadStatus, CheckpointOptions
from eagerflow.train.checkpoint_management import (
    CheckpointManager,
    get_checkpoint_state,
    latest_checkpoint,
    list_variables,
    load_variable,
)

__all__ = ["Example", "SequenceExample", "Features", "Feature", "FeatureList", "FeatureLists",
           "BytesList", "FloatList", "Int64List", "Checkpoint", "CheckpointLoadStatus",
           "CheckpointManager", "CheckpointOptions",
           "get_checkpoint_state", "latest_checkpoint", "list_variables", "load_variable"]
