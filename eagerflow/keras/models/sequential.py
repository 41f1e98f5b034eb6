"""``Sequential``: a plain stack of layers, each feeding the next.

When the input shape is known (a ``keras.Input``/``InputLayer`` first, an ``input_shape=``
on the first layer, ``build(shape)``, or the first call), the stack is also recorded as a
functional graph, so the model has ``inputs``/``outputs``, output shapes for ``summary`` and a
configuration that saves and loads.

Example:
    >>> import numpy as np
    >>> from eagerflow import keras
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
    ...                           keras.layers.Dense(1, name="out")])
    >>> [type(layer).__name__ for layer in model.layers], model.layers[-1].name
    (['Dense', 'Dense'], 'out')
    >>> model.output_shape, model.count_params()  # (4*8 + 8) + (8*1 + 1)
    ((None, 1), 49)
"""

from __future__ import annotations

from eagerflow.keras.layers import base as base_layer
from eagerflow.keras.layers import core as core_layers
from eagerflow.keras.models import keras_tensor as kt_lib
from eagerflow.keras.models.model import Model
from eagerflow.tensor_shape import TensorShape

__all__ = ["Sequential"]


class Sequential(Model):
    """A model made of layers applied one after the other.

    Args:
        layers: Optional list of layers (a ``keras.Input`` tensor or ``InputLayer`` first
            fixes the input shape).
        trainable: Whether the weights are trained.
        name: The model's name (default ``sequential``, made unique).

    Raises:
        TypeError: If an element is not a layer.

    Example:
        >>> from eagerflow import keras
        >>> model = keras.Sequential(name="stack")
        >>> model.add(keras.Input((3,)))
        >>> model.add(keras.layers.Dense(2))
        >>> model.input_shape, model.output_shape
        ((None, 3), (None, 2))
    """

    def __init__(self, layers=None, trainable=True, name=None, **kwargs):
        if name is None:
            name = base_layer._unique_layer_name("sequential")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self._input_layer = None
        self._stack = []
        self._graph = None  # (inputs, outputs) KerasTensors once the input shape is known
        for layer in layers or ():
            self.add(layer, rebuild=False)
        self._maybe_build_graph()

    # -- structure ------------------------------------------------------------------------------
    def add(self, layer, rebuild=True):
        """Appends a layer (a ``keras.Input`` tensor sets the input shape instead).

        Raises:
            TypeError: If ``layer`` is not a Layer or an Input tensor.
            ValueError: For a second input or a duplicate layer name.
        """
        if isinstance(layer, kt_lib.KerasTensor):
            history = layer._keras_history
            if history is None or not isinstance(history.layer, core_layers.InputLayer):
                raise TypeError("Sequential.add accepts keras.Input tensors, not the output of "
                                "another layer (%r)." % (layer,))
            layer = history.layer
        if not isinstance(layer, base_layer.Layer):
            raise TypeError("The added layer must be an instance of class Layer. Received: "
                            "layer=%r of type %s." % (layer, type(layer)))
        if isinstance(layer, core_layers.InputLayer):
            if self._input_layer is not None or self._stack:
                raise ValueError("Sequential model %r: an InputLayer can only be the first "
                                 "layer." % self.name)
            self._input_layer = layer
        else:
            if any(existing.name == layer.name for existing in self._stack):
                raise ValueError("All layers added to a Sequential model should have unique "
                                 "names. Name %r is already the name of a layer in this model. "
                                 "Update the `name` argument to pass a unique name."
                                 % layer.name)
            self._stack.append(layer)
        self._graph = None
        self.built = False
        if rebuild:
            self._maybe_build_graph()

    def pop(self, rebuild=True):
        """Removes and returns the last layer.

        Raises:
            TypeError: If there is no layer to remove.
        """
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        layer = self._stack.pop()
        self._graph = None
        self.built = False
        if rebuild:
            self._maybe_build_graph()
        return layer

    @property
    def layers(self):
        return list(self._stack)

    def _input_batch_shape(self):
        if self._input_layer is not None:
            return self._input_layer.batch_shape
        if self._stack:
            first = self._stack[0]
            shape = getattr(first, "_batch_input_shape", None)
            if shape is not None:
                return shape
        return None

    def _maybe_build_graph(self):
        shape = self._input_batch_shape()
        if shape is not None and self._stack:
            self._build_graph(shape)

    def _build_graph(self, batch_shape, dtype=None):
        if self._input_layer is not None and tuple(self._input_layer.batch_shape) == tuple(
                batch_shape):
            inputs = kt_lib._input_tensor(self._input_layer)
        else:
            if self._input_layer is not None:
                dtype = self._input_layer.dtype
            elif dtype is None and getattr(self._stack[0], "_batch_input_shape", None):
                dtype = self._stack[0].dtype
            inputs = kt_lib.Input(batch_shape=tuple(batch_shape), dtype=dtype and
                                  getattr(dtype, "name", dtype))
            self._input_layer = inputs._keras_history.layer
        x = inputs
        for layer in self._stack:
            x = layer(x)
        self._graph = (inputs, x)
        self.built = True
        self._build_shapes = list(TensorShape(batch_shape).as_list())

    def build(self, input_shape=None):
        """Builds every layer for inputs of ``input_shape`` (batch dimension first).

        Raises:
            ValueError: If no input shape is known.
        """
        if input_shape is None:
            input_shape = self._input_batch_shape()
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        if isinstance(input_shape, (list, tuple)) and input_shape and isinstance(
                input_shape[0], (list, tuple)):
            raise ValueError("Sequential models take a single input; got shapes %r."
                             % (input_shape,))
        self._build_graph(tuple(TensorShape(input_shape).as_list()))

    def _build_input_shape(self, inputs, args, kwargs):
        shape = getattr(inputs, "shape", None)
        dtype = getattr(inputs, "dtype", None)
        if shape is None or isinstance(inputs, (list, tuple, dict)):
            return base_layer.shapes_of(inputs)
        return _ShapeAndDtype(TensorShape(shape), dtype)

    def maybe_build(self, input_shape):
        if self.built:
            return
        dtype = None
        if isinstance(input_shape, _ShapeAndDtype):
            input_shape, dtype = input_shape.shape, input_shape.dtype
        if isinstance(input_shape, TensorShape) and input_shape.rank and self._stack:
            dims = input_shape.as_list()
            self._build_graph(tuple([None] + dims[1:]), dtype=dtype)
        self.built = True

    @property
    def inputs(self):
        return [self._graph[0]] if self._graph is not None else None

    @property
    def outputs(self):
        return [self._graph[1]] if self._graph is not None else None

    @property
    def input(self):
        return self._graph[0] if self._graph is not None else None

    @property
    def output(self):
        return self._graph[1] if self._graph is not None else None

    @property
    def input_shape(self):
        self._require_graph("input_shape")
        return tuple(self._graph[0].shape.as_list())

    @property
    def output_shape(self):
        self._require_graph("output_shape")
        return tuple(self._graph[1].shape.as_list())

    @property
    def output_names(self):
        return [self._stack[-1].name] if self._stack else []

    def _require_graph(self, what):
        if self._graph is None:
            raise AttributeError("Sequential model %r has no %s yet: it has not been built. "
                                 "Add a keras.Input first, or call build() or the model."
                                 % (self.name, what))

    # -- calling --------------------------------------------------------------------------------
    def call(self, inputs, training=None, mask=None):
        if not self._stack:
            raise ValueError("Sequential model %r has no layers; add some before calling it."
                             % self.name)
        x = inputs
        if self._input_layer is not None:
            from eagerflow.keras.models.functional import _conform_input

            if self._graph is not None:
                x = _conform_input(self._graph[0], x)
        for layer in self._stack:
            x = layer(x)
        return x

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape)
        for layer in self._stack:
            shape = layer.compute_output_shape(shape)
        return shape

    # -- config -----------------------------------------------------------------------------------
    def get_config(self):
        """``{"name", "trainable", "layers", "build_input_shape"}``; an InputLayer comes
        first in ``layers`` when the input shape is known."""
        from eagerflow.keras import saving

        layers = []
        if self._input_layer is not None:
            layers.append(saving.serialize_keras_object(self._input_layer))
        layers.extend(saving.serialize_keras_object(layer) for layer in self._stack)
        return {"name": self.name, "trainable": self.trainable, "layers": layers,
                "build_input_shape": self._build_shapes}

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=True):
        """Rebuilds the stack from :meth:`get_config` output."""
        from eagerflow.keras import saving

        model = cls(name=config.get("name"), trainable=config.get("trainable", True))
        for layer_config in config.get("layers", []):
            layer = saving.deserialize_keras_object(layer_config, custom_objects=custom_objects,
                                                    safe_mode=safe_mode)
            model.add(layer, rebuild=False)
        model._maybe_build_graph()
        if not model.built and config.get("build_input_shape"):
            model.build(tuple(config["build_input_shape"]))
        return model


class _ShapeAndDtype:
    """What a Sequential model builds from on its first call: the input's shape and dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype
