"""The op library: the registry, the dispatch function and one module per op family."""

import importlib

from eagerflow.ops import operators  # noqa: F401  (installs Tensor's Python operators)

# A family split into several modules lists its parts, then the module that re-exports them.
FAMILIES = (
    "arithmetic", "cast", "broadcast",
    "math_common", "unary_math", "special_math", "binary_math", "complex_math", "math_ops",
    "logical_ops",
    "reduction_common", "scans", "reductions", "reduction_composites", "reduction_ops",
    "sort_ops", "clip_ops",
    "array_common", "reshape_ops", "join_ops", "pad_ops", "tile_repeat_ops", "shape_ops",
    "array_ops",
    "slicing",
    "indexing_common", "gather_ops", "index_nd_ops", "segment_ops", "mask_ops", "search_ops",
    "indexing_ops",
    "matmul_ops", "diag_ops", "einsum_ops", "linalg_ops",
    "decomp_common", "linalg_solvers", "linalg_factorizations", "linalg_decomp",
    "nn_common", "activation_ops", "loss_ops", "normalization_ops", "nn_layer_ops", "nn_ops",
    "window_geometry", "conv_kernels", "conv_public", "conv_ops", "pool_ops",
    "philox", "random_distributions", "random_common", "random_stateful", "random_stateless",
    "random_ops",
    "string_ops", "string_split_ops",
    "range_dynamic", "tensor_array_ops", "debug_ops",
)


def load_all():
    """Imports every op family module, so the registry holds every primitive."""
    for name in FAMILIES:
        importlib.import_module("eagerflow.ops." + name)
