"""Indexing primitives: gather, scatter, segment reductions, masks, one_hot, unique, search.

Index inputs (``indices``, ``segment_ids``, masks) are outside each primitive's dtype group:
they are int32/int64 (bool for masks) whatever the data's dtype.

Indices are validated on every device. An index out of range raises InvalidArgumentError
naming its position and value (``indices[3] = 7 is not in [0, 5)``); numpy would wrap a
negative index silently, and TF on a GPU writes zeros instead of failing.

Gradients are dense tensors: where TF returns ``tf.IndexedSlices`` for a gather's params,
eagerflow returns the same values scattered into zeros of params' shape.

The family lives in one module per concept; this module re-exports their public names:

* :mod:`eagerflow.ops.gather_ops`: gather (``GatherV2`` and its gradient).
* :mod:`eagerflow.ops.index_nd_ops`: gather_nd, scatter_nd, tensor_scatter_nd_*.
* :mod:`eagerflow.ops.segment_ops`: unsorted_segment_sum/max/min/mean, segment_sum.
* :mod:`eagerflow.ops.mask_ops`: boolean_mask, one_hot, where_indices.
* :mod:`eagerflow.ops.search_ops`: unique, unique_with_counts, searchsorted.
* :mod:`eagerflow.ops.indexing_common`: the index checks and helpers they share.

Example:
    >>> import eagerflow as ef
    >>> ef.gather(ef.constant([10, 20, 30]), [2, 0]).numpy().tolist()
    [30, 10]
"""

from __future__ import annotations

from eagerflow.ops.gather_ops import (  # noqa: F401
    gather,
)
from eagerflow.ops.index_nd_ops import (  # noqa: F401
    gather_nd, scatter_nd, tensor_scatter_nd_update, tensor_scatter_nd_add, tensor_scatter_nd_sub,
    tensor_scatter_nd_max, tensor_scatter_nd_min,
)
from eagerflow.ops.segment_ops import (  # noqa: F401
    unsorted_segment_sum, unsorted_segment_max, unsorted_segment_min, unsorted_segment_mean,
    segment_sum,
)
from eagerflow.ops.mask_ops import (  # noqa: F401
    boolean_mask, one_hot, where_indices,
)
from eagerflow.ops.search_ops import (  # noqa: F401
    unique, unique_with_counts, searchsorted,
)

# The family's primitives and constants, and the helpers that other modules and tests
# reach through this module.
from eagerflow.ops.indexing_common import (  # noqa: F401
    _values,
)
from eagerflow.ops.gather_ops import (  # noqa: F401
    GATHER, GATHER_GRAD,
)
from eagerflow.ops.index_nd_ops import (  # noqa: F401
    GATHER_ND, SCATTER_ND, TENSOR_SCATTER_ADD, TENSOR_SCATTER_MAX, TENSOR_SCATTER_MIN,
    TENSOR_SCATTER_SUB, TENSOR_SCATTER_UPDATE,
)
from eagerflow.ops.segment_ops import (  # noqa: F401
    SEGMENT_SUM, UNSORTED_SEGMENT_MAX, UNSORTED_SEGMENT_MIN, UNSORTED_SEGMENT_SUM,
)
from eagerflow.ops.mask_ops import (  # noqa: F401
    BOOLEAN_MASK, BOOLEAN_MASK_GRAD, ONE_HOT,
)
from eagerflow.ops.search_ops import (  # noqa: F401
    LOWER_BOUND, UNIQUE, UNIQUE_WITH_COUNTS, UPPER_BOUND,
)

__all__ = [
    "gather", "gather_nd", "scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
    "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min",
    "unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
    "unsorted_segment_mean", "segment_sum", "boolean_mask", "one_hot", "where_indices", "unique",
    "unique_with_counts", "searchsorted",
]

# Each part lists its own names in its EXPORTS (scripts/gen_api.py takes every name from
# exactly one module).
EXPORTS = {}
