"""``eagerflow.keras``: the Keras API (layers, models, training, callbacks, saving).

Submodules load on first attribute access, so ``import eagerflow.keras`` costs almost
nothing and ``eagerflow.keras.Sequential`` pulls in only what models need.

A few imports inside functions remain, each of one of two kinds that no split of the
modules removes. A name table (``layers.deserialize``, ``losses.get``, ``metrics.get_function``,
``optimizers.serialize``) imports every class it names, so a class that (de)serializes nested
objects by name (a wrapper's inner layer, an RNN's cell, a loss given by name) looks the
table up when it runs. A base class that constructs its subclasses (``Model(inputs,
outputs)`` giving a ``Functional``; ``CallbackList`` adding ``History`` and
``ProgbarLogger``) imports them when it does, as ``tf.data.Dataset`` does.

Example:
    >>> import numpy as np
    >>> import eagerflow as ef
    >>> keras = ef.keras
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> history = model.fit(np.ones((8, 3)), np.zeros((8, 2)), epochs=2, verbose=0)
    >>> len(history.history["loss"])
    2
"""

from __future__ import annotations

import importlib

__all__ = ["layers", "models", "optimizers", "losses", "metrics", "callbacks", "initializers",
           "regularizers", "constraints", "activations", "mixed_precision", "datasets",
           "utils", "backend", "saving", "random", "Model", "Sequential", "Input", "InputSpec",
           "Layer", "Functional", "KerasTensor", "version", "__version__"]

__version__ = "3.0.0"

_SUBMODULES = ("layers", "models", "optimizers", "losses", "metrics", "callbacks",
               "initializers", "regularizers", "constraints", "activations",
               "mixed_precision", "datasets", "utils", "backend", "saving", "random")

# name -> (module, attribute)
_ATTRIBUTES = {
    "Model": ("eagerflow.keras.models", "Model"),
    "Sequential": ("eagerflow.keras.models", "Sequential"),
    "Functional": ("eagerflow.keras.models", "Functional"),
    "Input": ("eagerflow.keras.models", "Input"),
    "KerasTensor": ("eagerflow.keras.models", "KerasTensor"),
    "Layer": ("eagerflow.keras.layers", "Layer"),
    "InputSpec": ("eagerflow.keras.layers", "InputSpec"),
}


def version():
    """The Keras API version this namespace follows (``"3.0.0"``)."""
    return __version__


def __getattr__(name):
    if name in _SUBMODULES:
        module = importlib.import_module("eagerflow.keras." + name)
        globals()[name] = module
        return module
    target = _ATTRIBUTES.get(name)
    if target is not None:
        value = getattr(importlib.import_module(target[0]), target[1])
        globals()[name] = value
        return value
    raise AttributeError("module 'eagerflow.keras' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | set(_ATTRIBUTES))
