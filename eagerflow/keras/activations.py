"""Activation functions by name, as ``tf.keras.activations``.

Each function maps a floating tensor elementwise (``softmax``/``log_softmax`` along an axis)
and is built from eagerflow ops, so it is differentiable and traceable. ``get`` turns a name,
a serialized form or a callable into a function; ``serialize``/``deserialize`` convert to and
from names.

Where tf.keras 2 and Keras 3 disagree, Keras 3 is followed: ``hard_sigmoid(x)`` is
``relu6(x + 3) / 6`` (Keras 2 used ``clip(0.2 x + 0.5, 0, 1)``).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import activations
    >>> activations.get("relu")(ef.constant([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from eagerflow.errors import short_repr
import eagerflow as ef

__all__ = ["relu", "sigmoid", "tanh", "softmax", "log_softmax", "gelu", "elu", "selu",
           "softplus", "softsign", "swish", "silu", "linear", "exponential", "hard_sigmoid",
           "hard_silu", "hard_swish", "leaky_relu", "relu6", "mish", "get", "serialize",
           "deserialize"]


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """Rectified linear unit with optional leak, ceiling and threshold.

    ``f(x) = max_value`` for ``x >= max_value``, ``x`` for ``threshold < x < max_value``,
    and ``negative_slope * (x - threshold)`` otherwise.

    Args:
        x: A floating tensor.
        negative_slope: Slope below the threshold (tf.keras 2 called this ``alpha``).
        max_value: Optional ceiling.
        threshold: Values at or below it are damped.

    Returns:
        A tensor like ``x``.

    Example:
        >>> from eagerflow.keras.activations import relu
        >>> import eagerflow as ef
        >>> relu(ef.constant([-2.0, 1.0, 9.0]), max_value=6.0).numpy().tolist()
        [0.0, 1.0, 6.0]
    """
    x = ef.convert_to_tensor(x)
    if negative_slope != 0 and max_value is None and threshold == 0:
        return ef.nn.leaky_relu(x, alpha=negative_slope)
    if threshold != 0:
        negative_part = ef.nn.relu(threshold - x)
        x = x * ef.cast(ef.greater(x, threshold), x.dtype)
    else:
        negative_part = ef.nn.relu(-x) if negative_slope != 0 else None
        x = ef.nn.relu6(x) if max_value == 6 else ef.nn.relu(x)
    if max_value is not None:
        x = ef.clip_by_value(x, 0.0, float(max_value))
    if negative_slope != 0:
        x = x - negative_slope * negative_part
    return x


def sigmoid(x):
    """``1 / (1 + exp(-x))``.

    Example:
        >>> from eagerflow.keras.activations import sigmoid
        >>> import eagerflow as ef
        >>> float(sigmoid(ef.constant(0.0)))
        0.5
    """
    return ef.sigmoid(x)


def tanh(x):
    """Hyperbolic tangent.

    Example:
        >>> from eagerflow.keras.activations import tanh
        >>> import eagerflow as ef
        >>> float(tanh(ef.constant(0.0)))
        0.0
    """
    return ef.tanh(x)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x), axis)``, computed stably.

    Example:
        >>> from eagerflow.keras.activations import softmax
        >>> import eagerflow as ef
        >>> softmax(ef.constant([0.0, 0.0])).numpy().tolist()
        [0.5, 0.5]
    """
    return ef.nn.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    """``x - logsumexp(x, axis)``.

    Example:
        >>> from eagerflow.keras.activations import log_softmax
        >>> import eagerflow as ef
        >>> round(float(log_softmax(ef.constant([0.0, 0.0]))[0]), 4)
        -0.6931
    """
    return ef.nn.log_softmax(x, axis=axis)


def gelu(x, approximate=False):
    """Gaussian error linear unit: ``x * Phi(x)`` (tanh approximation if ``approximate``).

    Example:
        >>> from eagerflow.keras.activations import gelu
        >>> import eagerflow as ef
        >>> float(gelu(ef.constant(0.0)))
        0.0
    """
    return ef.nn.gelu(x, approximate=approximate)


def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Example:
        >>> from eagerflow.keras.activations import elu
        >>> import eagerflow as ef
        >>> round(float(elu(ef.constant(-1.0))), 4)
        -0.6321
    """
    x = ef.convert_to_tensor(x)
    y = ef.nn.elu(x)
    if alpha == 1.0:
        return y
    return ef.where(ef.greater(x, 0.0), y, alpha * y)


def selu(x):
    """``scale * elu(x, alpha)`` with alpha=1.67326324, scale=1.05070098 (self-normalizing).

    Example:
        >>> from eagerflow.keras.activations import selu
        >>> import eagerflow as ef
        >>> round(float(selu(ef.constant(1.0))), 4)
        1.0507
    """
    return ef.nn.selu(x)


def softplus(x):
    """``log(exp(x) + 1)``.

    Example:
        >>> from eagerflow.keras.activations import softplus
        >>> import eagerflow as ef
        >>> round(float(softplus(ef.constant(0.0))), 4)
        0.6931
    """
    return ef.nn.softplus(x)


def softsign(x):
    """``x / (abs(x) + 1)``.

    Example:
        >>> from eagerflow.keras.activations import softsign
        >>> import eagerflow as ef
        >>> float(softsign(ef.constant(1.0)))
        0.5
    """
    return ef.nn.softsign(x)


def silu(x):
    """Swish / SiLU: ``x * sigmoid(x)``.

    Example:
        >>> from eagerflow.keras.activations import silu
        >>> import eagerflow as ef
        >>> float(silu(ef.constant(0.0)))
        0.0
    """
    return ef.nn.silu(x)


swish = silu


def linear(x):
    """The identity (what ``activation=None`` means).

    Example:
        >>> from eagerflow.keras.activations import linear
        >>> linear(3.0)
        3.0
    """
    return x


def exponential(x):
    """``exp(x)``.

    Example:
        >>> from eagerflow.keras.activations import exponential
        >>> import eagerflow as ef
        >>> float(exponential(ef.constant(0.0)))
        1.0
    """
    return ef.exp(x)


def hard_sigmoid(x):
    """Piecewise-linear sigmoid: ``relu6(x + 3) / 6`` (0 below -3, 1 above 3).

    Example:
        >>> from eagerflow.keras.activations import hard_sigmoid
        >>> import eagerflow as ef
        >>> float(hard_sigmoid(ef.constant(0.0)))
        0.5
    """
    return ef.nn.relu6(x + 3.0) * (1.0 / 6.0)


def hard_silu(x):
    """``x * hard_sigmoid(x)``.

    Example:
        >>> from eagerflow.keras.activations import hard_silu
        >>> import eagerflow as ef
        >>> float(hard_silu(ef.constant(3.0)))
        3.0
    """
    x = ef.convert_to_tensor(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def leaky_relu(x, negative_slope=0.2):
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise.

    Example:
        >>> from eagerflow.keras.activations import leaky_relu
        >>> import eagerflow as ef
        >>> leaky_relu(ef.constant([-1.0, 1.0])).numpy().tolist()
        [-0.20000000298023224, 1.0]
    """
    return ef.nn.leaky_relu(x, alpha=negative_slope)


def relu6(x):
    """``min(max(x, 0), 6)``.

    Example:
        >>> from eagerflow.keras.activations import relu6
        >>> import eagerflow as ef
        >>> float(relu6(ef.constant(8.0)))
        6.0
    """
    return ef.nn.relu6(x)


def mish(x):
    """``x * tanh(softplus(x))``.

    Example:
        >>> from eagerflow.keras.activations import mish
        >>> import eagerflow as ef
        >>> float(mish(ef.constant(0.0)))
        0.0
    """
    x = ef.convert_to_tensor(x)
    return x * ef.tanh(ef.nn.softplus(x))


_ACTIVATIONS = {
    "relu": relu, "sigmoid": sigmoid, "tanh": tanh, "softmax": softmax,
    "log_softmax": log_softmax, "gelu": gelu, "elu": elu, "selu": selu,
    "softplus": softplus, "softsign": softsign, "swish": swish, "silu": silu,
    "linear": linear, "exponential": exponential, "hard_sigmoid": hard_sigmoid,
    "hard_silu": hard_silu, "hard_swish": hard_swish, "leaky_relu": leaky_relu,
    "relu6": relu6, "mish": mish,
}
_NAMES = {id(fn): name for name, fn in _ACTIVATIONS.items()}
_NAMES[id(swish)] = "silu"
_NAMES[id(hard_swish)] = "hard_silu"


def serialize(activation):
    """Returns the name of a built-in activation (or a custom function's ``__name__``).

    Args:
        activation: An activation function.

    Returns:
        A string.

    Raises:
        ValueError: If ``activation`` is not callable.

    Example:
        >>> from eagerflow.keras.activations import relu, serialize
        >>> serialize(relu)
        'relu'
    """
    if activation is None:
        return "linear"
    name = _NAMES.get(id(activation))
    if name is not None:
        return name
    if not callable(activation):
        raise ValueError("Cannot serialize %r: it is not an activation function." % (activation,))
    # A layer object used as an activation serializes through the layer registry.
    if hasattr(activation, "get_config") and hasattr(activation, "call"):
        return {"class_name": type(activation).__name__, "config": activation.get_config()}
    return getattr(activation, "__name__", repr(activation))


def deserialize(name, custom_objects=None):
    """Returns the activation function called ``name``.

    Args:
        name: A built-in name, a name in ``custom_objects``, or a Keras 3 style dict whose
            ``config`` is the name.
        custom_objects: Optional dict of extra name -> function.

    Returns:
        A callable.

    Raises:
        ValueError: If the name is unknown.

    Example:
        >>> from eagerflow.keras.activations import deserialize, tanh
        >>> deserialize("tanh") is tanh
        True
    """
    if isinstance(name, dict):
        if isinstance(name.get("config"), str):
            name = name["config"]
        else:
            from eagerflow.keras import layers  # the name table: see eagerflow.keras

            return layers.deserialize(name, custom_objects=custom_objects)
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    fn = _ACTIVATIONS.get(name)
    if fn is None:
        raise ValueError("Could not interpret activation function identifier: %r. Known "
                         "activations: %s (or pass custom_objects)."
                         % (name, ", ".join(sorted(_ACTIVATIONS))))
    return fn


def get(identifier):
    """Turns an identifier into an activation function.

    Args:
        identifier: None (the identity ``linear``), a name, a serialized dict, or a callable
            (returned as is).

    Returns:
        A callable.

    Raises:
        ValueError: If the identifier cannot be interpreted.

    Example:
        >>> from eagerflow.keras.activations import get, linear
        >>> get(None) is linear
        True
    """
    if identifier is None:
        return linear
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret activation function identifier: %s (expected a "
                     "name such as 'relu', or a callable)." % (short_repr(identifier),))

