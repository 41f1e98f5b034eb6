"""``eagerflow.keras``: the Keras-like API (layers, models, training). Data sets live in
``eagerflow.keras.datasets``."""
