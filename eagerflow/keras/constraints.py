"""Weight constraints, as ``tf.keras.constraints``.

A constraint maps a weight to its projection onto an allowed set; optimizers apply a
variable's ``constraint`` after each update. With ``norms = sqrt(sum(w ** 2, axis))`` and
``eps = 1e-7``:

- ``MaxNorm(m)``: ``w * clip(norms, 0, m) / (eps + norms)``
- ``MinMaxNorm(lo, hi, rate)``: ``w * (rate * clip(norms, lo, hi) + (1 - rate) * norms) /
  (eps + norms)``
- ``UnitNorm()``: ``w / (eps + norms)``
- ``NonNeg()``: ``w * (w >= 0)``

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import constraints
    >>> constraints.NonNeg()(ef.constant([-1.0, 2.0])).numpy().tolist()
    [-0.0, 2.0]
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.errors import short_repr

__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "get", "serialize",
           "deserialize"]

_EPSILON = 1e-7


def _norms(w, axis):
    return ef.sqrt(ef.reduce_sum(ef.square(w), axis=axis, keepdims=True))


class Constraint:
    """Base class: subclasses implement ``__call__(w)`` returning the projected weight.

    Example:
        >>> from eagerflow.keras.constraints import Constraint
        >>> import eagerflow as ef
        >>> class Clip(Constraint):
        ...     def __call__(self, w):
        ...         return ef.clip_by_value(w, -1.0, 1.0)
        >>> Clip()(ef.constant([3.0])).numpy().tolist()
        [1.0]
    """

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % kv for kv in self.get_config().items()))


class MaxNorm(Constraint):
    """Rescales slices whose L2 norm along ``axis`` exceeds ``max_value``.

    Args:
        max_value: The largest allowed norm.
        axis: Axis (or axes) the norm is taken over; 0 for a Dense kernel means each
            unit's incoming weights, ``[0, 1, 2]`` for a Conv2D kernel.

    Example:
        >>> from eagerflow.keras.constraints import MaxNorm
        >>> import eagerflow as ef
        >>> [round(float(v), 4) for v in MaxNorm(1.0)(ef.constant([[3.0], [4.0]])).numpy().ravel()]
        [0.6, 0.8]
    """

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        w = ef.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = ef.clip_by_value(norms, 0.0, float(self.max_value))
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves slice norms along ``axis`` into ``[min_value, max_value]`` at ``rate``.

    Args:
        min_value: Smallest allowed norm.
        max_value: Largest allowed norm.
        rate: 1.0 projects fully; smaller values move norms part of the way.
        axis: Axis (or axes) the norm is taken over.

    Example:
        >>> from eagerflow.keras.constraints import MinMaxNorm
        >>> import eagerflow as ef
        >>> MinMaxNorm(2.0, 3.0)(ef.constant([[1.0], [0.0]])).numpy().round(4).tolist()
        [[2.0], [0.0]]
    """

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        w = ef.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = (self.rate * ef.clip_by_value(norms, float(self.min_value),
                                                float(self.max_value))
                   + (1.0 - self.rate) * norms)
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


class NonNeg(Constraint):
    """Zeroes negative entries.

    Example:
        >>> from eagerflow.keras.constraints import NonNeg
        >>> import eagerflow as ef
        >>> NonNeg()(ef.constant([-1.0, 1.0])).numpy().tolist()
        [-0.0, 1.0]
    """

    def __call__(self, w):
        w = ef.convert_to_tensor(w)
        return w * ef.cast(ef.greater_equal(w, 0.0), w.dtype)


class UnitNorm(Constraint):
    """Scales slices along ``axis`` to unit L2 norm.

    Args:
        axis: Axis (or axes) the norm is taken over.

    Example:
        >>> from eagerflow.keras.constraints import UnitNorm
        >>> import eagerflow as ef
        >>> [round(float(v), 4) for v in UnitNorm()(ef.constant([[3.0], [4.0]])).numpy().ravel()]
        [0.6, 0.8]
    """

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = ef.convert_to_tensor(w)
        return w / (_EPSILON + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


_CLASSES = {c.__name__: c for c in (Constraint, MaxNorm, MinMaxNorm, NonNeg, UnitNorm)}
_ALIASES = {"max_norm": MaxNorm, "maxnorm": MaxNorm, "min_max_norm": MinMaxNorm,
            "non_neg": NonNeg, "nonneg": NonNeg, "unit_norm": UnitNorm, "unitnorm": UnitNorm}
max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm


def serialize(constraint):
    """Returns ``{"class_name": ..., "config": ...}``.

    Example:
        >>> from eagerflow.keras.constraints import NonNeg, serialize
        >>> serialize(NonNeg())
        {'class_name': 'NonNeg', 'config': {}}
    """
    if constraint is None:
        return None
    return {"class_name": type(constraint).__name__, "config": constraint.get_config()}


def deserialize(config, custom_objects=None):
    """Rebuilds a constraint from ``serialize``'s dict or a name.

    Raises:
        ValueError: For an unknown class name.

    Example:
        >>> from eagerflow.keras.constraints import deserialize
        >>> deserialize({"class_name": "MaxNorm", "config": {"max_value": 3}}).max_value
        3
    """
    if isinstance(config, str):
        return get(config, custom_objects)
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name) or _ALIASES.get(name)
    if cls is None:
        raise ValueError("Unknown constraint: %r. Pass custom constraints through "
                         "custom_objects." % (name,))
    return cls.from_config(config.get("config", {}))


def get(identifier, custom_objects=None):
    """Turns None, a name (``"max_norm"``), a dict or a callable into a constraint.

    Raises:
        ValueError: If the identifier cannot be interpreted.

    Example:
        >>> from eagerflow.keras.constraints import get
        >>> type(get("non_neg")).__name__
        'NonNeg'
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier, custom_objects)
    if isinstance(identifier, str):
        cls = ((custom_objects or {}).get(identifier) or _ALIASES.get(identifier)
               or _CLASSES.get(identifier))
        if cls is None:
            raise ValueError("Could not interpret constraint identifier: %r. Known names: %s."
                             % (identifier, ", ".join(sorted(_ALIASES))))
        return cls() if isinstance(cls, type) else cls
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret constraint identifier: %s."
                     % (short_repr(identifier),))
