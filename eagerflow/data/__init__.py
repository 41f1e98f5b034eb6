"""``eagerflow.data``: input pipelines with ``tf.data``'s API and semantics.

Example:
    >>> import numpy as np
    >>> from eagerflow import data
    >>> x, y = np.arange(12.0).reshape(6, 2), np.arange(6)
    >>> ds = data.Dataset.from_tensor_slices((x, y)).shuffle(6, seed=1).batch(4)
    >>> [xb.shape.as_list() for xb, yb in ds]
    [[4, 2], [2, 2]]
"""

from eagerflow.data import experimental  # noqa: F401
from eagerflow.data.arguments import AUTOTUNE  # noqa: F401
from eagerflow.data.arguments import INFINITE as INFINITE_CARDINALITY  # noqa: F401
from eagerflow.data.arguments import UNKNOWN as UNKNOWN_CARDINALITY  # noqa: F401
from eagerflow.data.dataset import Dataset, DatasetIterator  # noqa: F401
from eagerflow.data.file_sources import TextLineDataset, TFRecordDataset  # noqa: F401
from eagerflow.data.options import Options  # noqa: F401
from eagerflow.data.structure import DatasetSpec  # noqa: F401

# The implementation modules, imported here so a Dataset method's local import is a
# dictionary lookup at call time.
from eagerflow.data import (  # noqa: E402,F401
    batching, caching, mapping, prefetching, sampling, selection, shuffling, sources,
    windowing,
)

Iterator = DatasetIterator

__all__ = ["Dataset", "DatasetSpec", "Iterator", "Options", "AUTOTUNE", "INFINITE_CARDINALITY",
           "UNKNOWN_CARDINALITY", "experimental", "TextLineDataset", "TFRecordDataset"]
