"""``eagerflow.keras.optimizers``: Keras 3 optimizers, schedules and loss scaling.

Example:
    >>> from eagerflow.keras import optimizers
    >>> opt = optimizers.get("adam")
    >>> type(opt).__name__, opt.get_config()["epsilon"]
    ('Adam', 1e-07)
"""

from __future__ import annotations

from eagerflow.errors import short_repr
from eagerflow.keras.optimizers import schedules
from eagerflow.keras.optimizers.adadelta import Adadelta
from eagerflow.keras.optimizers.adagrad import Adagrad
from eagerflow.keras.optimizers.adam import Adam
from eagerflow.keras.optimizers.adamax import Adamax
from eagerflow.keras.optimizers.adamw import AdamW
from eagerflow.keras.optimizers.base import Optimizer
from eagerflow.keras.optimizers.lion import Lion
from eagerflow.keras.optimizers.loss_scale import LossScaleOptimizer
from eagerflow.keras.optimizers.nadam import Nadam
from eagerflow.keras.optimizers.rmsprop import RMSprop
from eagerflow.keras.optimizers.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "Nadam", "Lion", "LossScaleOptimizer", "schedules", "serialize", "deserialize",
           "get"]

_ALL = {cls.__name__.lower(): cls for cls in (
    SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam, Lion, LossScaleOptimizer)}


def serialize(optimizer):
    """An optimizer as a JSON-compatible dict (Keras 3's format).

    Args:
        optimizer: An ``Optimizer``.

    Returns:
        ``{"module", "class_name", "config", "registered_name"}``.

    Raises:
        TypeError: If ``optimizer`` is not an ``Optimizer``.

    Example:
        >>> from eagerflow.keras import optimizers
        >>> optimizers.serialize(optimizers.SGD(0.5))["config"]["learning_rate"]
        0.5
    """
    if not isinstance(optimizer, Optimizer):
        raise TypeError("serialize expects an Optimizer, got %r" % (optimizer,))
    cls = type(optimizer)
    builtin = _ALL.get(cls.__name__.lower()) is cls
    return {"module": "keras.optimizers" if builtin else cls.__module__,
            "class_name": cls.__name__, "config": optimizer.get_config(),
            "registered_name": None if builtin else cls.__name__}


def deserialize(config, custom_objects=None):
    """Rebuilds an optimizer from ``serialize``'s output.

    Class names are matched case-insensitively ("adam", "Adam").

    Args:
        config: A dict with ``class_name`` and ``config``.
        custom_objects: Optional ``{name: class}`` for user-defined optimizers.

    Returns:
        A new ``Optimizer``.

    Raises:
        ValueError: If the class is unknown.

    Example:
        >>> from eagerflow.keras import optimizers
        >>> d = optimizers.serialize(optimizers.RMSprop(centered=True))
        >>> optimizers.deserialize(d).centered
        True
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("Could not deserialize optimizer from %r: expected a dict with "
                         "'class_name' and 'config'." % (config,))
    name = config["class_name"]
    custom = dict(custom_objects or {})
    cls = custom.get(name) or _ALL.get(name.lower())
    if cls is None:
        raise ValueError("Unknown optimizer: %r. Known: %s. Pass custom optimizers with "
                         "custom_objects={'%s': cls}." % (name, sorted(_ALL), name))
    return cls.from_config(config.get("config", {}), custom_objects=custom_objects)


def get(identifier):
    """Resolves an optimizer from an instance, a name ("adam", "SGD") or a config dict.

    Args:
        identifier: An ``Optimizer``, a string, a serialized dict, or None.

    Returns:
        An ``Optimizer`` (a new one with default arguments for a string), or None.

    Raises:
        ValueError: If the identifier cannot be interpreted.

    Example:
        >>> from eagerflow.keras import optimizers
        >>> type(optimizers.get("rmsprop")).__name__
        'RMSprop'
    """
    if identifier is None:
        return None
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _ALL.get(identifier.lower())
        if cls is not None and cls is not LossScaleOptimizer:
            return cls()
    raise ValueError("Could not interpret optimizer identifier: %s. Use an Optimizer "
                     "instance or one of %s." % (short_repr(identifier), sorted(
                         k for k in _ALL if k != "lossscaleoptimizer")))
