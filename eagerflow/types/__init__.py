"""``eagerflow.types``: type names for annotations and isinstance checks (``tf.types``)."""

from eagerflow.types import experimental  # noqa: F401

__all__ = ["experimental"]
