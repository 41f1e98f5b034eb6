"""Bundled and local data sets, loaded as numpy arrays like ``tf.keras.datasets``.

``digits`` ships inside the package; ``mnist`` and ``fashion_mnist`` read files already on
disk (nothing is downloaded).
"""

from eagerflow.keras.datasets import digits, fashion_mnist, mnist  # noqa: F401
