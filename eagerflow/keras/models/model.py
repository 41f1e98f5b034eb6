"""``Model``: a layer with training (``compile``/``fit``/``evaluate``/``predict``), saving and
``summary``.

Two ways to make one, as in Keras:

- functional: ``Model(inputs, outputs)`` with KerasTensors from ``Input`` and layer calls
  (returns a :class:`~eagerflow.keras.models.functional.Functional`);
- subclassing: define layers in ``__init__`` and the forward pass in ``call``.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow import keras
    >>> class TwoLayer(keras.Model):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.hidden = keras.layers.Dense(4, activation="relu")
    ...         self.out = keras.layers.Dense(1)
    ...     def call(self, x):
    ...         return self.out(self.hidden(x))
    >>> model = TwoLayer()
    >>> model(ef.ones([2, 3])).shape
    TensorShape([2, 1])
    >>> model.count_params()  # (3*4 + 4) + (4*1 + 1)
    21
"""

from __future__ import annotations

import json

from eagerflow import nest
from eagerflow.keras.layers import base as base_layer
from eagerflow.keras.models import keras_tensor as kt_lib
from eagerflow.keras.models.training import Trainer
from eagerflow.tensor_shape import TensorShape

__all__ = ["Model"]


def _is_functional_call(args, kwargs):
    if "inputs" in kwargs and "outputs" in kwargs:
        return True
    if len(args) == 2 or (len(args) == 1 and "outputs" in kwargs):
        first = nest.flatten(args[0]) if args else []
        return bool(first) and all(isinstance(x, kt_lib.KerasTensor) for x in first)
    return False


_FUNCTIONAL_SUBCLASSES = {}


def _functional_subclass(cls, functional):
    """``cls`` with Functional behind it in the MRO: its own methods first, then the graph's
    call, build and config (made once per class)."""
    made = _FUNCTIONAL_SUBCLASSES.get(cls)
    if made is None:
        made = type(cls.__name__, (cls, functional), {"__module__": cls.__module__,
                                                      "__qualname__": cls.__qualname__})
        _FUNCTIONAL_SUBCLASSES[cls] = made
    return made


class Model(Trainer, base_layer.Layer):
    """A model: a Layer that trains, evaluates, predicts, saves and summarizes itself.

    Args:
        inputs: (functional) The input KerasTensor(s): one, a list, or a dict.
        outputs: (functional) The output KerasTensor(s): one, a list, or a dict.
        name: The model's name.
        trainable: Whether its weights are trained.
        **kwargs: Base Layer arguments.

    Example:
        >>> from eagerflow import keras
        >>> x = keras.Input((3,))
        >>> model = keras.Model(x, keras.layers.Dense(2)(x))
        >>> type(model).__name__, model.output_shape
        ('Functional', (None, 2))
    """

    # How saved_model recognizes a Keras model (it may not import keras).
    _is_keras_model = True

    def __new__(cls, *args, **kwargs):
        if _is_functional_call(args, kwargs):
            from eagerflow.keras.models.functional import Functional  # see eagerflow.keras

            if cls is Model:
                return Functional.__new__(Functional)
            if not issubclass(cls, Functional):
                # A subclass made functionally (``CustomModel(inputs, outputs)``, with its own
                # train_step): as Keras 3, it runs its graph like a Functional model.
                return Functional.__new__(_functional_subclass(cls, Functional))
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        if _is_functional_call(args, kwargs) and not getattr(self, "_functional_init", False):
            from eagerflow.keras.models import functional

            functional.init_graph_network(self, *args, **kwargs)
            return
        if args:
            raise TypeError("Model(): positional arguments are only accepted for the "
                            "functional form Model(inputs, outputs); got %d." % len(args))
        kwargs.pop("inputs", None)
        kwargs.pop("outputs", None)
        base_layer.Layer.__init__(self, **kwargs)
        self._init_model_state()

    def _init_model_state(self):
        self._is_graph_network = False
        self._build_shapes = None
        self._init_trainer()

    # -- calling and building -----------------------------------------------------------------
    def call(self, *args, **kwargs):
        raise NotImplementedError(
            "Model %s has no call(): subclass keras.Model and define call(self, inputs), or "
            "build a functional model with keras.Model(inputs, outputs)." % self.name)

    def maybe_build(self, input_shape):
        if self.built:
            return
        if type(self).build is not Model.build:
            base_layer.Layer.maybe_build(self, input_shape)
        # A subclassed model's weights come from its first call.
        self.built = True
        if self._build_shapes is None and input_shape is not None:
            self._build_shapes = _shape_config(input_shape)

    def build(self, input_shape=None):
        """Creates the weights by running ``call`` on symbolic inputs of ``input_shape``.

        Args:
            input_shape: One shape (batch dimension first, e.g. ``(None, 3)``), a list of
                shapes or a dict of shapes, as ``call`` expects its inputs.

        Raises:
            ValueError: If ``input_shape`` is None.

        Example:
            >>> from eagerflow import keras
            >>> class M(keras.Model):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.d = keras.layers.Dense(2)
            ...     def call(self, x):
            ...         return self.d(x)
            >>> m = M(); m.build((None, 5)); m.count_params()
            12
        """
        if self.built and self.weights:
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument to build() for a "
                             "subclassed model, e.g. model.build((None, 784)).")
        structure = _shape_structure(input_shape)
        flat = nest.flatten(structure, expand_composites=False) if not isinstance(
            structure, TensorShape) else [structure]
        from eagerflow.keras import backend

        specs = [(s, backend.floatx()) for s in flat]

        def run(*tensors):
            inputs = tensors[0] if isinstance(structure, TensorShape) else \
                nest.pack_sequence_as(structure, list(tensors))
            return self(inputs)

        # Marked built first: a subclass's build() calling super().build() must not be
        # called again by the symbolic call.
        self.built = True
        try:
            kt_lib.trace_with_batch_fallback(run, specs)
        except Exception:
            self.built = False
            raise
        finally:
            self._clear_losses()
        self._build_shapes = _shape_config(structure)

    def get_build_config(self):
        """The input shape(s) the model was built with, for rebuilding after loading."""
        if self._build_shapes is None:
            return None
        return {"input_shape": self._build_shapes}

    def build_from_config(self, config):
        """Builds the model from :meth:`get_build_config` output."""
        if config and config.get("input_shape") is not None and not self.built:
            self.build(_from_shape_config(config["input_shape"]))
        elif config and config.get("input_shape") is not None and not self.weights:
            self.built = False
            self.build(_from_shape_config(config["input_shape"]))

    # -- structure ----------------------------------------------------------------------------
    def get_layer(self, name=None, index=None):
        """A sublayer by name or by index in ``layers``.

        Raises:
            ValueError: If no layer has that name or index, or neither is given.

        Example:
            >>> from eagerflow import keras
            >>> m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="h")])
            >>> m.get_layer("h").units, m.get_layer(index=0).name
            (3, 'h')
        """
        if index is not None and name is not None:
            raise ValueError("Provide only a layer name or a layer index. Received: "
                             "index=%r, name=%r." % (index, name))
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError("Was asked to retrieve layer at index %d but model only has "
                                 "%d layers." % (index, len(layers)))
            return layers[index]
        if name is not None:
            for layer in layers:
                if layer.name == name:
                    return layer
            raise ValueError("No such layer: %s. Existing layers are: %s."
                             % (name, [layer.name for layer in layers]))
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    # -- summary --------------------------------------------------------------------------------
    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False,
                show_trainable=False, layer_range=None):
        """Prints a table of the layers: name (type), output shape, parameter count.

        Args:
            line_length: Total width of the table (default 98, or 120 with a
                "Connected to" column).
            positions: Relative or absolute column boundaries.
            print_fn: Called with each line instead of ``print``.
            expand_nested: Show the layers of nested models, indented.
            show_trainable: Add a column saying whether each layer is trainable.
            layer_range: ``[first_name, last_name]`` to print part of the model.

        Example:
            >>> from eagerflow import keras
            >>> m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
            >>> m.summary(print_fn=lambda line: None)
        """
        from eagerflow.keras.models import summary as summary_lib

        summary_lib.print_summary(self, line_length=line_length, positions=positions,
                                  print_fn=print_fn, expand_nested=expand_nested,
                                  show_trainable=show_trainable, layer_range=layer_range)

    # -- saving ---------------------------------------------------------------------------------
    def save_weights(self, filepath, overwrite=True):
        """Writes every weight to one file (eagerflow's checksummed format), atomically.

        The file holds a JSON manifest (name, dtype, shape, offset and sha256 of each
        tensor) and the raw little-endian bytes. It is written to a temporary file in the
        same directory, flushed and fsynced, then renamed over ``filepath``, so a crash
        never leaves a half-written file behind. Any file name works (``.weights.h5`` is
        accepted but the content is not HDF5).

        Args:
            filepath: Where to write.
            overwrite: If False and the file exists, raise instead of replacing it.

        Under a multi-worker strategy only the chief's (rank 0's) file is kept (the other
        workers save to a temporary directory, then wait at a barrier until the chief's
        file is complete).

        Raises:
            FileExistsError: If ``overwrite`` is False and ``filepath`` exists.
            ValueError: If the model has no weights yet (not built).
        """
        from eagerflow.framework import worker_context
        from eagerflow.keras.models import saving

        # Under a multi-worker strategy only the chief's file is kept; the others wait.
        with worker_context.write_path(getattr(self, "distribute_strategy", None),
                                       filepath) as path:
            saving.save_weights(self, path, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False, **kwargs):
        """Loads weights written by :meth:`save_weights` (or from a ``.keras`` file).

        Every tensor's checksum, dtype and shape is verified; a mismatch or a truncated file
        raises an error naming the file and the tensor.

        Args:
            filepath: The weights file, or a ``.keras`` model file.
            skip_mismatch: Skip (with a warning) weights whose shape does not match instead of
                raising.
            **kwargs: ``by_name`` (tf.keras 2) is accepted; weights always match by their
                place in the model.

        Raises:
            ValueError: On a corrupt or truncated file, or weights that do not fit.
        """
        from eagerflow.keras.models import saving

        saving.load_weights(self, filepath, skip_mismatch=skip_mismatch)

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """Saves architecture, weights, optimizer state and compile settings to a ``.keras``
        file (a zip of JSON config and raw weights; written atomically).

        Args:
            filepath: Path ending in ``.keras``.
            overwrite: If False and the file exists, raise instead of replacing it.
            zipped: Must be None or True.
            **kwargs: ``save_format="keras"`` is accepted.

        Under a multi-worker strategy only the chief's (rank 0's) file is kept (the other
        workers save to a temporary directory, then wait at a barrier until the chief's
        file is complete).

        Raises:
            ValueError: For another extension.
            NotImplementedError: For a subclassed model without ``get_config``.
        """
        from eagerflow.framework import worker_context
        from eagerflow.keras.models import saving

        with worker_context.write_path(getattr(self, "distribute_strategy", None),
                                       filepath) as path:
            saving.save_model(self, path, overwrite=overwrite, zipped=zipped, **kwargs)

    def export(self, filepath, format="tf_saved_model", verbose=None,  # noqa: A002
               input_signature=None, **kwargs):
        """Writes the inference call as a serving SavedModel (Keras 3's ``export``).

        The SavedModel has a ``serve`` endpoint (also the ``serve`` and
        ``serving_default`` signatures) and the model's variables; load it with
        ``saved_model.load(filepath)``. See :mod:`eagerflow.keras.models.export`.

        Args:
            filepath: The directory to write.
            format: ``"tf_saved_model"`` (the only format supported).
            verbose: Print the endpoints (default True).
            input_signature: Optional TensorSpec(s) for the inputs (default: the model's
                inputs with a None batch dimension).
            **kwargs: Refused.

        Raises:
            ValueError: For another format or an unbuilt model without input_signature.
        """
        from eagerflow.keras.models import export

        export.export_model(self, filepath, format=format, verbose=verbose,
                            input_signature=input_signature, **kwargs)

    def get_config(self):
        """The constructor arguments of a subclassed model (it must override this).

        Raises:
            NotImplementedError: If the subclass does not define ``get_config``.
        """
        if type(self).get_config is Model.get_config:
            raise NotImplementedError(
                "Model %s (class %s) is a subclassed model and does not define get_config(), "
                "so its architecture cannot be saved. Define get_config() returning the "
                "constructor arguments (and register the class with "
                "@keras.saving.register_keras_serializable()), or save only the weights with "
                "model.save_weights()." % (self.name, type(self).__name__))
        return {"name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=True):
        """Creates a model from :meth:`get_config` output (a functional graph's config
        gives a functional model, as in Keras)."""
        if cls is Model and "layers" in config and "input_layers" in config:
            from eagerflow.keras.models.functional import Functional  # see eagerflow.keras

            return Functional.from_config(config, custom_objects=custom_objects,
                                          safe_mode=safe_mode)
        return cls(**config)

    def to_json(self, **kwargs):
        """The model's architecture as a JSON string (no weights).

        Example:
            >>> import json
            >>> from eagerflow import keras
            >>> m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
            >>> json.loads(m.to_json())["class_name"]
            'Sequential'
        """
        from eagerflow.keras.models import saving

        return json.dumps(saving.serialize_model(self), **kwargs)

    def __repr__(self):
        return "<%s name=%s, built=%s>" % (type(self).__name__, self.name, self.built)


# -- shapes in configs ----------------------------------------------------------------------------
def _is_single_shape(shape):
    if isinstance(shape, TensorShape):
        return True
    return isinstance(shape, (list, tuple)) and all(
        d is None or isinstance(d, int) for d in shape)


def _shape_structure(shape):
    """Input shape(s) as TensorShapes in a list/dict structure."""
    if _is_single_shape(shape):
        return TensorShape(shape)
    if isinstance(shape, dict):
        return {k: _shape_structure(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)):
        return [_shape_structure(s) for s in shape]
    raise ValueError("Cannot interpret %r as an input shape: use a tuple like (None, 3), a "
                     "list of such tuples, or a dict of them." % (shape,))


def _shape_config(shape):
    """A JSON-compatible form of a (structure of) shape(s)."""
    if isinstance(shape, TensorShape):
        return shape.as_list() if shape.rank is not None else None
    if _is_single_shape(shape):
        return list(shape)
    if isinstance(shape, dict):
        return {k: _shape_config(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)):
        return [_shape_config(s) for s in shape]
    return None


def _from_shape_config(config):
    if isinstance(config, dict):
        return {k: _from_shape_config(v) for k, v in config.items()}
    if isinstance(config, list) and config and all(isinstance(c, list) for c in config):
        return [_from_shape_config(c) for c in config]
    return tuple(config)
