"""Bundled and local data sets, loaded as numpy arrays like ``tf.keras.datasets``."""

from eagerflow.keras.datasets import digits  # noqa: F401
