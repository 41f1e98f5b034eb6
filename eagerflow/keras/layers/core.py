"""Core layers: InputLayer, Dense, Activation, Lambda, Embedding, Masking, Identity.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layers.Dense(4, activation="relu")(ef.ones([2, 3])).shape
    TensorShape([2, 4])
"""

from __future__ import annotations

import base64
import importlib
import inspect
import marshal
import re
import types

import eagerflow as ef
from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.keras import activations
from eagerflow.keras import constraints as constraints_lib
from eagerflow.keras import initializers as initializers_lib
from eagerflow.keras import regularizers as regularizers_lib
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import InputSpec, Layer
from eagerflow.tensor_shape import TensorShape

__all__ = ["InputLayer", "Dense", "Activation", "Lambda", "Embedding", "Masking", "Identity"]


def weight_options(layer, prefix, initializer, regularizer, constraint):
    """Sets ``<prefix>_initializer/_regularizer/_constraint`` from identifiers."""
    setattr(layer, prefix + "_initializer", initializers_lib.get(initializer))
    setattr(layer, prefix + "_regularizer", regularizers_lib.get(regularizer))
    setattr(layer, prefix + "_constraint", constraints_lib.get(constraint))


def weight_config(layer, *prefixes):
    """The serialized ``<prefix>_initializer/_regularizer/_constraint`` entries of a config."""
    config = {}
    for p in prefixes:
        config[p + "_initializer"] = initializers_lib.serialize(getattr(layer, p + "_initializer"))
        config[p + "_regularizer"] = regularizers_lib.serialize(getattr(layer, p + "_regularizer"))
        config[p + "_constraint"] = constraints_lib.serialize(getattr(layer, p + "_constraint"))
    return config


class InputLayer(Layer):
    """The entry point of a model: holds the expected input shape and dtype; calling it
    returns its input unchanged.

    Args:
        input_shape: Shape without the batch dimension (tuple; None entries are unknown).
        batch_size: Optional static batch size.
        dtype: Input dtype (default float32).
        input_tensor: Optional tensor this layer wraps.
        sparse: Must be falsy (sparse inputs are not supported).
        name: Layer name.
        ragged: Must be falsy (ragged inputs are not supported).
        batch_shape: Full shape including the batch dimension (alternative to
            ``input_shape``/``batch_size``); ``batch_input_shape`` and ``shape`` are accepted
            as tf.keras 2 / Keras 3 spellings.

    Raises:
        ValueError: For sparse or ragged inputs, or both batch_shape and input_shape.

    Example:
        >>> from eagerflow.keras import layers
        >>> layers.InputLayer(input_shape=(3,)).batch_shape
        (None, 3)
    """

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 sparse=None, name=None, ragged=None, batch_shape=None, **kwargs):
        batch_shape = kwargs.pop("batch_input_shape", batch_shape)
        if "shape" in kwargs:
            input_shape = kwargs.pop("shape")
        kwargs.pop("type_spec", None)
        if sparse or ragged:
            raise ValueError("InputLayer: sparse and ragged inputs are not supported.")
        if batch_shape is not None and input_shape is not None:
            raise ValueError("Only provide the input_shape OR batch_shape argument to "
                             "InputLayer, not both at the same time.")
        if input_tensor is not None and batch_shape is None and input_shape is None:
            batch_shape = tuple(TensorShape(input_tensor.shape).as_list())
        if batch_shape is None:
            if input_shape is None:
                input_shape = ()
            if isinstance(input_shape, int):
                input_shape = (input_shape,)
            batch_shape = (batch_size,) + tuple(input_shape)
        if dtype is None:
            dtype = input_tensor.dtype if input_tensor is not None else "float32"
        super().__init__(name=name, dtype=dtypes_lib.as_dtype(dtype).name, **kwargs)
        self._batch_input_shape = tuple(batch_shape)
        self._autocast = False
        self.input_tensor = input_tensor
        self.sparse = False
        self.ragged = False
        self.is_placeholder = input_tensor is None
        self.built = True

    @property
    def batch_shape(self):
        """The full input shape, batch dimension first."""
        return self._batch_input_shape

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return TensorShape(self._batch_input_shape)

    def get_config(self):
        return {"batch_shape": self._batch_input_shape, "dtype": self.dtype,
                "sparse": False, "ragged": False, "name": self.name}


class Dense(Layer):
    """Densely connected layer: ``y = activation(x @ kernel + bias)`` over the last axis.

    For inputs of rank > 2 the kernel applies to the last axis of every position, e.g.
    ``(batch, t, d) -> (batch, t, units)``.

    Args:
        units: Positive int, output size.
        activation: Activation name or function (None: linear).
        use_bias: Whether to add a bias.
        kernel_initializer: Kernel initializer (default ``"glorot_uniform"``).
        bias_initializer: Bias initializer (default ``"zeros"``).
        kernel_regularizer: Optional kernel regularizer.
        bias_regularizer: Optional bias regularizer.
        activity_regularizer: Optional regularizer of the output.
        kernel_constraint: Optional kernel constraint.
        bias_constraint: Optional bias constraint.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For non-positive units, or inputs whose last axis is unknown.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Dense(2)(ef.ones([4, 5, 3])).shape
        TensorShape([4, 5, 2])
    """

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = layer_utils.check_positive_int(units, "units", "Dense")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        weight_options(self, "kernel", kernel_initializer, kernel_regularizer,
                       kernel_constraint)
        weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        last = input_shape[-1] if input_shape.rank else None
        if last is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             "defined. Found None. Full input shape received: %s" % input_shape)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.kernel = self.add_weight("kernel", (last, self.units),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.units,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        outputs = ef.matmul(inputs, self._cast_compute(self.kernel))
        if self.use_bias:
            outputs = outputs + self._cast_compute(self.bias)
        return self.activation(outputs)

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape)
        if input_shape.rank is None or input_shape.rank < 2:
            raise ValueError("Dense expects inputs of rank >= 2, got shape %s." % input_shape)
        return TensorShape(input_shape.as_list()[:-1] + [self.units])

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "activation": activations.serialize(self.activation),
                       "use_bias": self.use_bias})
        config.update(weight_config(self, "kernel", "bias"))
        return config


class Activation(Layer):
    """Applies an activation function: ``y = activation(x)``.

    Args:
        activation: Activation name or function.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Activation("relu")(ef.constant([[-1.0, 1.0]])).numpy().tolist()
        [[0.0, 1.0]]
    """

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.supports_masking = True

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


class Identity(Layer):
    """Returns its input unchanged (``y = x``), mask included.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Identity()(ef.ones([2])).numpy().tolist()
        [1.0, 1.0]
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)


def _serialize_function(fn):
    if isinstance(fn, types.LambdaType) and fn.__name__ == "<lambda>":
        code = base64.b64encode(marshal.dumps(fn.__code__)).decode("ascii")
        closure = [c.cell_contents for c in fn.__closure__] if fn.__closure__ else None
        return "lambda", {"code": code, "defaults": fn.__defaults__, "closure": closure}
    return "function", {"module": fn.__module__, "name": fn.__qualname__}


def _deserialize_function(kind, value, custom_objects, safe_mode):
    """The function a Lambda config names.

    A file decides what ``value`` says, so with ``safe_mode`` (the default) only
    ``custom_objects``, registered Keras objects and eagerflow's own public functions are
    found: no module named by the file is imported and no bytecode is unmarshalled.
    """
    if kind == "function":
        name = value.get("name") if isinstance(value, dict) else value
        module = value.get("module") if isinstance(value, dict) else None
        if not isinstance(name, str) or not (module is None or isinstance(module, str)):
            raise errors.InvalidArgumentError(
                None, None, "Lambda.from_config: the function is named by %r; expected a "
                "name and a module." % (value,))
        if custom_objects:
            for key in (name, "%s.%s" % (module, name) if module else None):
                if key and key in custom_objects:
                    return custom_objects[key]
        from eagerflow.keras import saving

        found = saving.get_registered_object(name)
        if found is not None:
            return found
        if module is None:
            return activations.deserialize(name)
        if safe_mode:
            return _own_function(module, name)
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    if kind != "lambda":
        raise errors.InvalidArgumentError(
            None, None, "Lambda.from_config: unknown function type %r (expected 'function' "
            "or 'lambda')." % (kind,))
    if safe_mode:
        raise errors.InvalidArgumentError(
            None, None,
            "Requested the deserialization of a Lambda layer with a Python `lambda` inside it. "
            "This carries a potential risk of arbitrary code execution and is disallowed by "
            "default (safe_mode=True: marshalled bytecode is never loaded). If you trust the "
            "source of the config, pass safe_mode=False to Lambda.from_config or "
            "keras.models.load_model.")
    code = marshal.loads(base64.b64decode(value["code"]))
    closure = value.get("closure")
    cells = tuple(types.CellType(c) for c in closure) if closure else None
    defaults = tuple(value["defaults"]) if value.get("defaults") else None
    return types.FunctionType(code, globals(), code.co_name, defaults, cells)


_OWN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def _own_function(module, name):
    """An eagerflow public function ``module.name``, with no import the file could direct.

    Only modules eagerflow has already imported are consulted, and the attribute must be a
    public function eagerflow defines (not a module, class or anything imported from
    elsewhere), so a file cannot reach ``os.system`` through an attribute chain.
    """
    import sys

    obj = sys.modules.get(module) if (module == "eagerflow" or module.startswith(
        "eagerflow.")) else None
    fn = getattr(obj, name, None) if obj is not None and _OWN_NAME.match(name) else None
    if fn is None or not callable(fn) or inspect.isclass(fn) or inspect.ismodule(fn) or \
            not str(getattr(fn, "__module__", "")).startswith("eagerflow"):
        raise errors.InvalidArgumentError(
            None, None, "Lambda.from_config: the file names the function %s.%s, which is "
            "neither in custom_objects nor registered nor an eagerflow function. With "
            "safe_mode=True (the default) no module named by a file is imported: pass "
            "custom_objects={%r: fn}, register it with "
            "@keras.saving.register_keras_serializable(), or, if you trust the file, load "
            "with safe_mode=False." % (module[:80], name[:80], name[:80]))
    return fn


class Lambda(Layer):
    """Wraps a function of tensors as a layer: ``y = function(x, **arguments)``.

    Functions whose signature has ``mask`` or ``training`` receive them. Prefer a Layer
    subclass for anything with weights: variables a function creates are not tracked.

    Args:
        function: The function (a module-level function serializes by name, a lambda by its
            bytecode).
        output_shape: Optional output shape (without batch) or a function of the input shape.
        mask: Optional output mask, or a function ``(inputs, mask) -> mask``.
        arguments: Optional dict of keyword arguments for ``function``.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: If ``function`` is not callable.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Lambda(lambda x: x * 2.0)(ef.ones([1, 2])).numpy().tolist()
        [[2.0, 2.0]]
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise ValueError("Lambda: `function` must be callable, got %r." % (function,))
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape = output_shape
        self.mask = mask
        self.supports_masking = mask is not None
        params = inspect.signature(function).parameters if _has_signature(function) else {}
        self._fn_mask = "mask" in params
        self._fn_training = "training" in params

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if self._fn_mask:
            kwargs["mask"] = mask
        if self._fn_training:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            input_shape = TensorShape(input_shape)
            if not input_shape.is_fully_defined():
                raise NotImplementedError(
                    "Lambda %s: give output_shape to compute shapes of inputs with unknown "
                    "dimensions (%s)." % (self.name, input_shape))
            out = self.function(ef.zeros(input_shape.as_list(), dtype=self.compute_dtype),
                                **self.arguments)
            return TensorShape(out.shape)
        if callable(self._output_shape):
            return TensorShape(self._output_shape(input_shape))
        batch = TensorShape(input_shape)[0] if TensorShape(input_shape).rank else None
        return TensorShape((batch,) + tuple(self._output_shape))

    def get_config(self):
        config = super().get_config()
        kind, value = _serialize_function(self.function)
        config.update({"function": value, "function_type": kind, "arguments": self.arguments})
        if self._output_shape is not None:
            if callable(self._output_shape):
                okind, ovalue = _serialize_function(self._output_shape)
                config.update({"output_shape": ovalue, "output_shape_type": okind})
            else:
                config.update({"output_shape": list(self._output_shape),
                               "output_shape_type": "raw"})
        if self.mask is not None:
            if callable(self.mask):
                mkind, mvalue = _serialize_function(self.mask)
                config.update({"mask": mvalue, "mask_type": mkind})
            else:
                config.update({"mask": self.mask, "mask_type": "raw"})
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=True):
        """Rebuilds the layer; a serialized ``lambda`` needs ``safe_mode=False``."""
        config = dict(config)
        config["function"] = _deserialize_function(
            config.pop("function_type", "function"), config["function"], custom_objects,
            safe_mode)
        for key in ("output_shape", "mask"):
            kind = config.pop(key + "_type", "raw")
            if key in config and kind != "raw":
                config[key] = _deserialize_function(kind, config[key], custom_objects, safe_mode)
        return cls(**config)


def _has_signature(fn):
    try:
        inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return True


class Embedding(Layer):
    """Maps integer ids to dense vectors: ``y[..., :] = embeddings[x[...], :]``.

    Args:
        input_dim: Vocabulary size (ids in ``[0, input_dim)``).
        output_dim: Embedding size.
        embeddings_initializer: Initializer (default ``"uniform"``: U(-0.05, 0.05)).
        embeddings_regularizer: Optional regularizer.
        activity_regularizer: Optional output regularizer.
        embeddings_constraint: Optional constraint.
        mask_zero: If True, id 0 is padding: the output mask is ``x != 0``.
        **kwargs: Base Layer arguments (``input_length`` is accepted for tf.keras 2 code).

    Raises:
        ValueError: For non-positive dimensions.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Embedding(10, 4)(ef.constant([[1, 2, 3]])).shape
        TensorShape([1, 3, 4])
    """

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, **kwargs):
        input_length = kwargs.pop("input_length", None)
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if (isinstance(input_dim, bool) or isinstance(output_dim, bool)
                or not isinstance(input_dim, int) or not isinstance(output_dim, int)
                or input_dim <= 0 or output_dim <= 0):
            raise ValueError("Both `input_dim` and `output_dim` should be positive integers. "
                             "Received input_dim=%r and output_dim=%r" % (input_dim, output_dim))
        self.input_dim = input_dim
        self.output_dim = output_dim
        weight_options(self, "embeddings", embeddings_initializer, embeddings_regularizer,
                       embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self._autocast = False  # ids are integers; never cast them to the compute dtype

    def build(self, input_shape=None):
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        self.built = True

    def call(self, inputs):
        inputs = ef.convert_to_tensor(inputs)
        if inputs.dtype not in (ef.int32, ef.int64):
            inputs = ef.cast(inputs, ef.int32)
        return self._cast_compute(ef.gather(self.embeddings, inputs))

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ef.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return TensorShape(TensorShape(input_shape).as_list() + [self.output_dim])

    def get_config(self):
        config = super().get_config()
        config.update({"input_dim": self.input_dim, "output_dim": self.output_dim,
                       "mask_zero": self.mask_zero})
        config.update(weight_config(self, "embeddings"))
        return config


class Masking(Layer):
    """Masks timesteps whose features all equal ``mask_value``.

    ``mask[b, t] = any(x[b, t, :] != mask_value)``; masked timesteps are zeroed in the
    output and skipped by mask-aware layers downstream (RNNs, attention, pooling).

    Args:
        mask_value: The padding value.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> x = ef.constant([[[1.0], [0.0]]])
        >>> layers.Masking()(x).numpy().tolist()
        [[[1.0], [0.0]]]
    """

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return ef.reduce_any(ef.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs):
        keep = ef.reduce_any(ef.not_equal(inputs, self.mask_value), axis=-1, keepdims=True)
        return inputs * ef.cast(keep, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config["mask_value"] = self.mask_value
        return config
