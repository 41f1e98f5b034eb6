"""The op library: the registry, the dispatch function and one module per op family."""

import importlib

from eagerflow.ops import operators  # noqa: F401  (installs Tensor's Python operators)

FAMILIES = (
    "arithmetic", "cast", "broadcast", "math_ops", "logical_ops", "reduction_ops", "sort_ops",
    "clip_ops", "array_ops", "slicing", "indexing_ops", "linalg_ops", "linalg_decomp",
    "nn_ops", "conv_ops", "pool_ops", "random_ops",
)


def load_all():
    """Imports every op family module, so the registry holds every primitive."""
    for name in FAMILIES:
        importlib.import_module("eagerflow.ops." + name)
