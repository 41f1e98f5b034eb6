"""``eagerflow.keras.backend``: Keras' global settings and a few tensor helpers.

The float type Keras uses by default (``floatx``), the fuzz factor of losses (``epsilon``),
the image data format, and ``clear_session`` (fresh layer names, dropped cached functions).

Example:
    >>> from eagerflow.keras import backend
    >>> backend.floatx(), backend.epsilon(), backend.image_data_format()
    ('float32', 1e-07, 'channels_last')
"""

from __future__ import annotations

import gc
import sys

import numpy as np

__all__ = ["floatx", "set_floatx", "epsilon", "set_epsilon", "image_data_format",
           "set_image_data_format", "clear_session", "backend", "get_value", "set_value",
           "batch_get_value", "batch_set_value", "int_shape", "is_keras_tensor",
           "count_params", "get_uid", "reset_uids"]

_FLOATX = "float32"
_EPSILON = 1e-7
_ALLOWED_FLOATX = ("float16", "bfloat16", "float32", "float64")
_UIDS = {}


def backend():
    """The backend name: ``"tensorflow"``, whose semantics eagerflow implements.

    Example:
        >>> from eagerflow.keras import backend
        >>> backend.backend()
        'tensorflow'
    """
    return "tensorflow"


def floatx():
    """The default float dtype name of Keras (``"float32"`` unless changed).

    Example:
        >>> from eagerflow.keras import backend
        >>> backend.floatx()
        'float32'
    """
    return _FLOATX


def set_floatx(value):
    """Sets the default float dtype (``"float16"``, ``"bfloat16"``, ``"float32"``, ``"float64"``).

    Raises:
        ValueError: For any other value.

    Example:
        >>> from eagerflow.keras import backend
        >>> backend.set_floatx("float64"); backend.floatx()
        'float64'
        >>> backend.set_floatx("float32")
    """
    global _FLOATX
    if value not in _ALLOWED_FLOATX:
        raise ValueError("Unknown `floatx` value: %r. Expected one of %s."
                         % (value, list(_ALLOWED_FLOATX)))
    _FLOATX = str(value)


def epsilon():
    """The fuzz factor losses and metrics add to avoid division by zero (``1e-7``).

    Example:
        >>> from eagerflow.keras import backend
        >>> backend.epsilon()
        1e-07
    """
    return _EPSILON


def set_epsilon(value):
    """Sets the fuzz factor returned by :func:`epsilon`.

    Example:
        >>> from eagerflow.keras import backend
        >>> backend.set_epsilon(1e-5); backend.epsilon()
        1e-05
        >>> backend.set_epsilon(1e-7)
    """
    global _EPSILON
    _EPSILON = float(value)


def image_data_format():
    """The default data format of image layers: ``"channels_last"`` unless changed.

    Example:
        >>> from eagerflow.keras import backend
        >>> backend.image_data_format()
        'channels_last'
    """
    from eagerflow.keras.layers import layer_utils

    return layer_utils.image_data_format()


def set_image_data_format(data_format):
    """Sets the default image data format (``"channels_last"`` or ``"channels_first"``).

    Raises:
        ValueError: For any other value.

    Example:
        >>> from eagerflow.keras import backend
        >>> backend.set_image_data_format("channels_first")
        >>> backend.image_data_format()
        'channels_first'
        >>> backend.set_image_data_format("channels_last")
    """
    from eagerflow.keras.layers import layer_utils

    layer_utils.set_image_data_format(data_format)


def clear_session(free_memory=True):
    """Resets Keras' global state: automatic layer names start again at ``dense``.

    Models and layers made before keep working; only new names are affected.

    Args:
        free_memory: Run the garbage collector afterwards.

    Example:
        >>> from eagerflow.keras import backend, layers
        >>> backend.clear_session()
        >>> layers.Dense(1).name
        'dense'
    """
    from eagerflow.keras.layers import base

    base.reset_name_uids()
    _UIDS.clear()
    tensors = sys.modules.get("eagerflow.keras.models.keras_tensor")
    if tensors is not None:  # only if the functional API was used
        tensors.reset_tensor_names()
    if free_memory:
        gc.collect()


def get_uid(prefix=""):
    """A per-prefix counter starting at 1 (Keras' ``get_uid``).

    Example:
        >>> from eagerflow.keras import backend
        >>> backend.reset_uids(); backend.get_uid("x"), backend.get_uid("x")
        (1, 2)
    """
    _UIDS[prefix] = _UIDS.get(prefix, 0) + 1
    return _UIDS[prefix]


def reset_uids():
    """Resets the counters of :func:`get_uid`."""
    _UIDS.clear()


def get_value(x):
    """The value of a variable or tensor as numpy (``float``/``int`` stay as they are).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import backend
        >>> float(backend.get_value(ef.Variable(2.0)))
        2.0
    """
    if isinstance(x, (int, float, np.ndarray, np.generic)):
        return x
    return x.numpy()


def set_value(x, value):
    """Assigns ``value`` to the variable ``x`` (e.g. an optimizer's learning rate).

    Raises:
        TypeError: If ``x`` is not a variable.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import backend
        >>> v = ef.Variable(1.0); backend.set_value(v, 0.5); float(v)
        0.5
    """
    if not getattr(x, "_is_variable", False):
        raise TypeError("set_value expects a Variable, got %r." % (x,))
    import eagerflow as ef

    x.assign(ef.cast(ef.convert_to_tensor(np.asarray(value)), x.dtype))


def batch_get_value(tensors):
    """``[get_value(t) for t in tensors]``.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import backend
        >>> [float(v) for v in backend.batch_get_value([ef.Variable(1.0), ef.Variable(2.0)])]
        [1.0, 2.0]
    """
    return [get_value(t) for t in tensors]


def batch_set_value(tuples):
    """``set_value(x, v)`` for every ``(x, v)`` pair.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import backend
        >>> v = ef.Variable(0.0); backend.batch_set_value([(v, 3.0)]); float(v)
        3.0
    """
    for x, value in tuples:
        set_value(x, value)


def int_shape(x):
    """The static shape of a tensor, variable or KerasTensor as a tuple (None if unknown).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import backend
        >>> backend.int_shape(ef.ones([2, 3]))
        (2, 3)
    """
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    try:
        return tuple(None if d is None else int(d) for d in shape)
    except TypeError:
        return None


def is_keras_tensor(x):
    """True for the symbolic tensors of the functional API (``keras.Input`` and layer calls on
    them).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import backend, Input
        >>> backend.is_keras_tensor(Input((2,))), backend.is_keras_tensor(ef.ones([2]))
        (True, False)
    """
    return getattr(x, "_is_keras_symbolic", False) is True


def count_params(x):
    """Number of scalars in a variable or tensor.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import backend
        >>> backend.count_params(ef.zeros([3, 4]))
        12
    """
    shape = int_shape(x)
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """A tensor of normal samples (the Keras 2 backend function, still in ``tf.keras``).

    Example:
        >>> from eagerflow.keras import backend
        >>> backend.random_normal((2, 3), seed=1).shape
        TensorShape([2, 3])
    """
    from eagerflow.keras import random

    return random.normal(shape, mean=mean, stddev=stddev, dtype=dtype or floatx(), seed=seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """A tensor of uniform samples in ``[minval, maxval)`` (Keras 2 backend function)."""
    from eagerflow.keras import random

    return random.uniform(shape, minval=minval, maxval=maxval, dtype=dtype or floatx(),
                          seed=seed)
