"""``eagerflow.keras.models``: ``Model``, ``Sequential``, the functional API and saving.

Example:
    >>> from eagerflow import keras
    >>> inputs = keras.Input((3,))
    >>> outputs = keras.layers.Dense(1)(inputs)
    >>> model = keras.models.Model(inputs, outputs)
    >>> model.count_params()
    4
"""

from eagerflow.keras.models.functional import Functional, Input, KerasTensor  # noqa: F401
from eagerflow.keras.models.model import Model  # noqa: F401
from eagerflow.keras.models.saving import load_model, model_from_json  # noqa: F401
from eagerflow.keras.models.saving import save_model  # noqa: F401
from eagerflow.keras.models.sequential import Sequential  # noqa: F401

__all__ = ["Model", "Sequential", "Functional", "Input", "KerasTensor", "load_model",
           "save_model", "model_from_json", "clone_model"]


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model with the same architecture and freshly initialized weights.

    Args:
        model: A Sequential or functional model.
        input_tensors: Not supported (must be None).
        clone_function: Optional ``f(layer) -> new layer``; default rebuilds each layer from
            its config.

    Returns:
        The new model.

    Raises:
        ValueError: For a subclassed model without ``get_config``, or ``input_tensors``.

    Example:
        >>> from eagerflow import keras
        >>> m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
        >>> c = keras.models.clone_model(m)
        >>> c.count_params() == m.count_params() and c.layers[0] is not m.layers[0]
        True
    """
    if input_tensors is not None:
        raise ValueError("clone_model(input_tensors=...) is not supported.")
    from eagerflow.keras import saving

    if clone_function is None:
        clone = saving.deserialize_keras_object(saving.serialize_keras_object(model))
        if isinstance(clone, Sequential) and not clone.built and model.built:
            try:
                clone.build(model.input_shape)
            except (AttributeError, ValueError):
                pass
        return clone
    if isinstance(model, Sequential):
        return Sequential([clone_function(layer) for layer in model.layers], name=model.name)
    raise ValueError("clone_model(clone_function=...) supports Sequential models only.")
