"""Keras layers, as ``tf.keras.layers``, plus ``serialize``/``deserialize``/``get``.

Every layer builds its weights on first call from the input shape, runs on eagerflow ops
(eager, taped and traced alike) and round-trips through ``get_config``/``from_config``.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layer = layers.deserialize(layers.serialize(layers.Dense(3, name="d")))
    >>> type(layer).__name__, layer.units
    ('Dense', 3)
"""

import inspect as _inspect

from eagerflow.errors import short_repr
from eagerflow.keras.layers.activation_layers import (  # noqa: F401
    ELU, LeakyReLU, PReLU, ReLU, Softmax,
)
from eagerflow.keras.layers.attention import MultiHeadAttention  # noqa: F401
from eagerflow.keras.layers.base import (  # noqa: F401
    InputSpec, Layer, get_keras_mask, set_keras_mask,
)
from eagerflow.keras.layers.convolutional import (  # noqa: F401
    Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose, DepthwiseConv2D,
    SeparableConv2D,
)
from eagerflow.keras.layers.core import (  # noqa: F401
    Activation, Dense, Embedding, Identity, InputLayer, Lambda, Masking,
)
from eagerflow.keras.layers.einsum_dense import EinsumDense  # noqa: F401
from eagerflow.keras.layers.merging import (  # noqa: F401
    Add, Average, Concatenate, Dot, Maximum, Minimum, Multiply, Subtract, add, average,
    concatenate, dot, maximum, minimum, multiply, subtract,
)
from eagerflow.keras.layers.normalization import (  # noqa: F401
    BatchNormalization, GroupNormalization, LayerNormalization,
)
from eagerflow.keras.layers.pooling import (  # noqa: F401
    AveragePooling1D, AveragePooling2D, AveragePooling3D, AvgPool1D, AvgPool2D, AvgPool3D,
    GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAveragePooling3D, GlobalAvgPool1D,
    GlobalAvgPool2D, GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPooling1D, GlobalMaxPooling2D,
    GlobalMaxPooling3D, MaxPool1D, MaxPool2D, MaxPool3D, MaxPooling1D, MaxPooling2D,
    MaxPooling3D,
)
from eagerflow.keras.layers.recurrent import (  # noqa: F401
    GRU, LSTM, RNN, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell, StackedRNNCells,
)
from eagerflow.keras.layers.regularization import (  # noqa: F401
    Dropout, GaussianDropout, GaussianNoise, SpatialDropout1D, SpatialDropout2D,
    SpatialDropout3D,
)
from eagerflow.keras.layers.reshaping import (  # noqa: F401
    Cropping1D, Cropping2D, Flatten, Permute, RepeatVector, Reshape, UpSampling1D,
    UpSampling2D, ZeroPadding1D, ZeroPadding2D, ZeroPadding3D,
)
from eagerflow.keras.layers.wrappers import Bidirectional, TimeDistributed, Wrapper  # noqa: F401

_registry = {}


def register(cls, name=None):
    """Makes ``deserialize`` find ``cls`` by ``name`` (default: its class name).

    Example:
        >>> from eagerflow.keras.layers import Layer, register
        >>> class MyLayer(Layer):
        ...     pass
        >>> register(MyLayer) is MyLayer
        True
    """
    _registry[name or cls.__name__] = cls
    return cls


def _all_layer_classes():
    seen = {}
    stack = [Layer]
    while stack:
        cls = stack.pop()
        if cls.__name__ not in seen or cls.__module__.startswith("eagerflow."):
            if cls.__module__.startswith("eagerflow."):
                seen[cls.__name__] = cls
        stack.extend(cls.__subclasses__())
    return seen


def serialize(layer):
    """``{"class_name": ..., "config": layer.get_config()}``.

    Example:
        >>> from eagerflow.keras.layers import Dropout, serialize
        >>> serialize(Dropout(0.5, name="drop"))["config"]["rate"]
        0.5
    """
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def deserialize(config, custom_objects=None, safe_mode=True):
    """Rebuilds a layer from ``serialize``'s output.

    Args:
        config: A dict with ``class_name`` and ``config``.
        custom_objects: Optional dict name -> class for layers defined outside eagerflow.
        safe_mode: Passed to ``Lambda.from_config`` (serialized lambdas need False).

    Returns:
        A Layer.

    Raises:
        ValueError: For an unknown class name.

    Example:
        >>> from eagerflow.keras.layers import deserialize
        >>> deserialize({"class_name": "Flatten", "config": {}}).__class__.__name__
        'Flatten'
    """
    if isinstance(config, Layer):
        return config
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or _registry.get(name)
    if cls is None:
        cls = globals().get(name) if isinstance(globals().get(name), type) else None
    if cls is None or not (isinstance(cls, type) and issubclass(cls, Layer)):
        cls = _all_layer_classes().get(name, cls)
    if cls is None:
        raise ValueError("Unknown layer: %r. Please ensure you are using a "
                         "`eagerflow.keras.layers` class, or pass your own class through "
                         "custom_objects={%r: MyLayer}." % (name, name))
    kwargs = {}
    params = _inspect.signature(cls.from_config).parameters
    if "custom_objects" in params:
        kwargs["custom_objects"] = custom_objects
    if "safe_mode" in params:
        kwargs["safe_mode"] = safe_mode
    return cls.from_config(dict(config.get("config", {})), **kwargs)


def get(identifier, custom_objects=None):
    """A Layer from a Layer, a serialized dict, or a class name (default config).

    Raises:
        ValueError: If the identifier cannot be interpreted.

    Example:
        >>> from eagerflow.keras.layers import get
        >>> type(get("Flatten")).__name__
        'Flatten'
    """
    if isinstance(identifier, Layer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier, custom_objects)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}}, custom_objects)
    raise ValueError("Could not interpret layer identifier: %s."
                     % (short_repr(identifier),))


def __getattr__(name):
    # ``keras.layers.Input`` is the functional API's entry point, defined with the models
    # (a layer module importing models would point the import arrows upward).
    if name == "Input":
        from eagerflow.keras.models.keras_tensor import Input

        return Input
    raise AttributeError("module 'eagerflow.keras.layers' has no attribute %r" % name)
