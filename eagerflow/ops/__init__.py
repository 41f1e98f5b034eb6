"""The op library: the registry, the dispatch function and one module per op family."""

from eagerflow.ops import operators  # noqa: F401  (installs Tensor's Python operators)
