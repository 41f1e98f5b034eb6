"""Weight regularizers, as ``tf.keras.regularizers``.

A regularizer maps a weight to a scalar penalty that a layer adds to its ``losses``
(recomputed from the current weight value every time ``losses`` is read):

- ``L1(l1)``: ``l1 * sum(|w|)``
- ``L2(l2)``: ``l2 * sum(w ** 2)`` (no factor 1/2, as in Keras)
- ``L1L2(l1, l2)``: the sum of both
- ``OrthogonalRegularizer(factor, mode)``: ``factor`` times the mean absolute off-diagonal
  entry of ``W W^T`` after normalizing each row (``mode="rows"``) or column to unit length.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import regularizers
    >>> float(regularizers.L2(0.5)(ef.constant([1.0, 2.0])))
    2.5
"""

from __future__ import annotations

import numbers

import eagerflow as ef
from eagerflow.errors import short_repr

__all__ = ["Regularizer", "L1", "L2", "L1L2", "OrthogonalRegularizer", "l1", "l2", "l1_l2",
           "orthogonal_regularizer", "get", "serialize", "deserialize"]


def _factor(value, name, cls):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
        raise ValueError("%s: invalid value for argument %s: expected a non-negative float, "
                         "got %s=%r." % (cls, name, name, value))
    return float(value)


class Regularizer:
    """Base class: subclasses implement ``__call__(x)`` returning a scalar tensor.

    Example:
        >>> from eagerflow.keras.regularizers import Regularizer
        >>> import eagerflow as ef
        >>> class Sum(Regularizer):
        ...     def __call__(self, x):
        ...         return ef.reduce_sum(x)
        >>> float(Sum()(ef.ones([3])))
        3.0
    """

    def __call__(self, x):
        return ef.constant(0.0)

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % kv for kv in self.get_config().items()))


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x ** 2)``.

    Args:
        l1: Non-negative L1 factor.
        l2: Non-negative L2 factor.

    Raises:
        ValueError: For a negative or non-numeric factor.

    Example:
        >>> from eagerflow.keras.regularizers import L1L2
        >>> import eagerflow as ef
        >>> float(L1L2(l1=1.0, l2=1.0)(ef.constant([-2.0])))
        6.0
    """

    def __init__(self, l1=0.0, l2=0.0):  # noqa: E741 - Keras' argument names
        self.l1 = _factor(l1, "l1", type(self).__name__)
        self.l2 = _factor(l2, "l2", type(self).__name__)

    def __call__(self, x):
        x = ef.convert_to_tensor(x)
        total = ef.zeros([], dtype=x.dtype)
        if self.l1:
            total = total + self.l1 * ef.reduce_sum(ef.abs(x))
        if self.l2:
            total = total + self.l2 * ef.reduce_sum(ef.square(x))
        return total

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """``l1 * sum(|x|)``.

    Args:
        l1: Non-negative factor (default 0.01).

    Example:
        >>> from eagerflow.keras.regularizers import L1
        >>> import eagerflow as ef
        >>> float(L1(0.5)(ef.constant([-2.0, 2.0])))
        2.0
    """

    def __init__(self, l1=0.01, **kwargs):  # noqa: E741
        super().__init__(l1=kwargs.pop("l", l1))

    def get_config(self):
        return {"l1": self.l1}


class L2(L1L2):
    """``l2 * sum(x ** 2)``.

    Args:
        l2: Non-negative factor (default 0.01).

    Example:
        >>> from eagerflow.keras.regularizers import L2
        >>> import eagerflow as ef
        >>> float(L2(0.1)(ef.constant([3.0])))
        0.9000000357627869
    """

    def __init__(self, l2=0.01, **kwargs):
        super().__init__(l2=kwargs.pop("l", l2))

    def get_config(self):
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Encourages the rows (or columns) of a 2-D weight to be mutually orthogonal.

    ``factor * sum(|offdiag(N N^T)|) / (n (n - 1))`` where ``N`` has the rows (``"rows"``)
    or columns (``"columns"``) of ``x`` normalized to unit length and ``n`` is their count.

    Args:
        factor: Non-negative factor (default 0.01).
        mode: ``"rows"`` or ``"columns"``.

    Raises:
        ValueError: For a bad factor or mode, or a weight that is not 2-D.

    Example:
        >>> from eagerflow.keras.regularizers import OrthogonalRegularizer
        >>> import eagerflow as ef
        >>> float(OrthogonalRegularizer(1.0)(ef.eye(3)))
        0.0
    """

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = _factor(factor, "factor", "OrthogonalRegularizer")
        if mode not in ("rows", "columns"):
            raise ValueError("OrthogonalRegularizer: invalid mode=%r; expected 'rows' or "
                             "'columns'." % (mode,))
        self.mode = mode

    def __call__(self, x):
        x = ef.convert_to_tensor(x)
        if x.shape.rank != 2:
            raise ValueError("OrthogonalRegularizer expects a 2-D weight, got shape %s."
                             % (x.shape,))
        if self.mode == "columns":
            x = ef.transpose(x)
        x = ef.math.l2_normalize(x, axis=1)
        product = ef.matmul(x, x, transpose_b=True)
        n = x.shape[0]
        off = product * (1.0 - ef.eye(n, dtype=x.dtype))
        pairs = max(n * (n - 1) / 2.0, 1.0)
        return self.factor * 0.5 * ef.reduce_sum(ef.abs(off)) / pairs

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


def l1(l1=0.01):  # noqa: E741
    """Shorthand for ``L1(l1)``.

    Example:
        >>> from eagerflow.keras.regularizers import l1
        >>> l1(0.1).l1
        0.1
    """
    return L1(l1)


def l2(l2=0.01):
    """Shorthand for ``L2(l2)``.

    Example:
        >>> from eagerflow.keras.regularizers import l2
        >>> l2(0.1).l2
        0.1
    """
    return L2(l2)


def l1_l2(l1=0.01, l2=0.01):  # noqa: E741
    """Shorthand for ``L1L2(l1, l2)`` with both factors defaulting to 0.01.

    Example:
        >>> from eagerflow.keras.regularizers import l1_l2
        >>> l1_l2().get_config()
        {'l1': 0.01, 'l2': 0.01}
    """
    return L1L2(l1, l2)


orthogonal_regularizer = OrthogonalRegularizer

_CLASSES = {c.__name__: c for c in (Regularizer, L1, L2, L1L2, OrthogonalRegularizer)}
_ALIASES = {"l1": L1, "l2": L2, "l1_l2": L1L2, "l1l2": L1L2,
            "orthogonal_regularizer": OrthogonalRegularizer}


def serialize(regularizer):
    """Returns ``{"class_name": ..., "config": ...}``.

    Example:
        >>> from eagerflow.keras.regularizers import L2, serialize
        >>> serialize(L2(0.5))
        {'class_name': 'L2', 'config': {'l2': 0.5}}
    """
    if regularizer is None:
        return None
    return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}


def deserialize(config, custom_objects=None):
    """Rebuilds a regularizer from ``serialize``'s dict or a name.

    Raises:
        ValueError: For an unknown class name.

    Example:
        >>> from eagerflow.keras.regularizers import deserialize
        >>> deserialize({"class_name": "L1", "config": {"l1": 0.2}}).l1
        0.2
    """
    if isinstance(config, str):
        return get(config, custom_objects)
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name) or _ALIASES.get(name)
    if cls is None:
        raise ValueError("Unknown regularizer: %r. Pass custom regularizers through "
                         "custom_objects." % (name,))
    return cls.from_config(config.get("config", {}))


def get(identifier, custom_objects=None):
    """Turns None, a name (``"l2"``), a dict or a callable into a regularizer.

    Raises:
        ValueError: If the identifier cannot be interpreted.

    Example:
        >>> from eagerflow.keras.regularizers import get
        >>> get("l2").l2
        0.01
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier, custom_objects)
    if isinstance(identifier, str):
        cls = ((custom_objects or {}).get(identifier) or _ALIASES.get(identifier)
               or _CLASSES.get(identifier))
        if cls is None:
            raise ValueError("Could not interpret regularizer identifier: %r. Known names: %s."
                             % (identifier, ", ".join(sorted(_ALIASES))))
        return cls() if isinstance(cls, type) else cls
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret regularizer identifier: %s."
                     % (short_repr(identifier),))
