"""String tensors in the ops that move elements without reading them, as in TF.

Gather, concat, reshape, where and the like are declared in their own families for numbers
and bools; strings are added to them here, in one place. This module is small and loaded
by ``import eagerflow`` (string tensors exist from the start), while the string ops
themselves load on first use.

Example:
    >>> import eagerflow as ef
    >>> ef.gather(ef.constant(["a", "b", "c"]), [2, 0]).numpy().tolist()
    [b'c', b'a']
"""

from __future__ import annotations

from eagerflow import dtypes as d
from eagerflow.ops import registry
from eagerflow.ops.array import (  # noqa: F401 - the structural ops' families, loaded first
    creation_ops, join_ops, reshape_ops, shape_ops, slicing, tile_repeat_ops,
)
from eagerflow.ops.indexing import (  # noqa: F401 - the structural ops' families, loaded first
    gather_ops, index_nd_ops, mask_ops, search_ops,
)
from eagerflow.ops.math import (  # noqa: F401 - the structural ops' families, loaded first
    arithmetic, broadcast,
)

__all__ = ["STRUCTURAL"]

STRUCTURAL = ("SelectV2", "BroadcastTo", "Fill", "GatherV2", "GatherNd", "ConcatV2",
              "SplitV", "Split", "Pack", "Unpack", "BooleanMask", "Reshape", "Transpose",
              "ExpandDims", "Squeeze", "Unique", "Identity", "Shape", "Size", "Rank",
              "EnsureShape", "StridedSlice", "Tile", "ReverseV2", "TensorScatterUpdate",
              "ScatterNd")

for _name in STRUCTURAL:
    registry.add_dtypes(registry.get(_name), (d.string,))
