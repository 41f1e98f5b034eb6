"""``eagerflow.experimental``: DLPack interop (``tf.experimental.dlpack``)."""

from eagerflow.experimental import dlpack  # noqa: F401
