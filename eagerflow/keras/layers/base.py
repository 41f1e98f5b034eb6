"""``Layer``, the base of every Keras layer.

A layer is a Module that creates its weights lazily: the first ``layer(inputs)`` calls
``build(input_shape)`` with the inputs' static shapes (a TensorShape, or a nested structure of
them for several inputs), then ``call``. Everything a layer does on tensors goes through
eagerflow ops, so a layer runs eagerly, under a GradientTape and inside ``eagerflow.function``
alike.

What ``__call__`` adds around ``call``:

- numpy arrays and Python numbers among the inputs become tensors;
- the inputs are checked against ``input_spec`` (rank, last axis...) with errors naming the
  layer and the shapes;
- floating inputs are cast to the layer's compute dtype (its DTypePolicy, see
  ``eagerflow.keras.mixed_precision``);
- ``training`` is resolved: an explicit argument wins, then the value of the enclosing layer
  call, then the default in ``call``'s signature; inner layers inherit it;
- Keras masks travel with tensors (``get_keras_mask``/``set_keras_mask``): a layer whose
  ``call`` takes ``mask`` receives its input's mask, and ``compute_mask`` sets its output's;
- losses added with ``add_loss`` during a call are reset at the next outermost call;
  regularization losses are recomputed from the current weights whenever ``losses`` is read.

Extension point for symbolic (functional API) inputs: objects with a true attribute
``_is_keras_symbolic`` are never converted; when any input is one, ``__call__`` hands the call
to the handler installed with ``set_symbolic_call_handler(fn)``, as ``fn(layer, inputs, args,
kwargs)``. ``Layer.maybe_build(input_shape)`` builds from shapes alone, so such a handler can
create weights without running ``call``.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> class Scale(layers.Layer):
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight("w", shape=(input_shape[-1],), initializer="ones")
    ...     def call(self, inputs):
    ...         return inputs * self.w
    >>> layer = Scale()
    >>> layer(ef.ones([2, 3])).shape
    TensorShape([2, 3])
    >>> [w.shape for w in layer.weights]
    [TensorShape([3])]
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import weakref

import numpy as np

import eagerflow as ef
from eagerflow import dtypes as dtypes_lib
from eagerflow.framework import context
from eagerflow.function.autograph import conversion as autograph_conversion
from eagerflow.keras import constraints as constraints_lib
from eagerflow.keras import initializers as initializers_lib
from eagerflow.keras import mixed_precision
from eagerflow.keras import regularizers as regularizers_lib
from eagerflow.keras.layers import call_context
from eagerflow.keras.layers.call_context import (  # noqa: F401 - re-exported
    _as_shape, _call_signature, _call_stack, _convert, _flatten, _is_symbolic,
    _is_tensor_like, _map_structure, _unique_layer_name, get_keras_mask, in_call_context,
    reset_name_uids, set_keras_mask, set_symbolic_call_handler, shapes_of, to_snake_case,
)
from eagerflow.keras.layers.input_spec import (  # noqa: F401 - re-exported
    InputSpec, assert_input_compatibility,
)
from eagerflow.module import Module
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape
from eagerflow.variables import VariableAggregation, VariableSynchronization

__all__ = ["Layer", "InputSpec", "get_keras_mask", "set_keras_mask", "global_policy",
           "set_symbolic_call_handler", "reset_name_uids", "to_snake_case", "shapes_of"]

# Attribute values that never hold variables or layers.
_ATOMIC = frozenset((str, int, float, bool, bytes, type(None)))

# Layers holding per-call losses (add_loss, activity regularizers), by id (a layer class may
# define __eq__ and so not be hashable). The outermost call clears them; while none is
# pending it skips the walk over every sublayer.
_PENDING_CALL_LOSSES = weakref.WeakValueDictionary()

global_policy = mixed_precision.global_policy

# -- Layer ------------------------------------------------------------------------------------

_ALLOWED_KWARGS = frozenset(("input_dim", "input_shape", "batch_input_shape", "batch_size",
                             "weights", "activity_regularizer", "autocast", "implementation",
                             "dynamic"))


class Layer(Module):
    """Base class of Keras layers: lazy weights, dtype policy, masks, losses, configs.

    Subclasses implement ``build(input_shape)`` (create weights with ``add_weight``) and
    ``call(inputs, ...)`` (the computation, in eagerflow ops), plus ``get_config`` for their
    constructor arguments, and ``compute_output_shape`` when the output shape follows from
    the input shape.

    Args:
        trainable: Whether the layer's weights are trained (``layer.trainable = False``
            freezes it and all its sublayers).
        name: Layer name; by default the class name in snake case, made unique
            (``dense``, ``dense_1``...).
        dtype: A dtype or DTypePolicy (or its name); None takes the global policy.
        **kwargs: ``input_shape``/``batch_input_shape``/``batch_size``/``input_dim`` (kept for
            Sequential models), ``weights`` (initial weights set after build),
            ``activity_regularizer``, ``autocast`` (default True).

    Raises:
        TypeError: For an unknown keyword argument.

    Example:
        >>> from eagerflow.keras import layers
        >>> layers.Dense(2).name.startswith("dense")
        True
    """

    # Attributes never searched for sublayers or variables (they point outside the layer).
    _NON_TRACKED = frozenset(("_inbound_nodes", "_outbound_nodes", "_keras_history",
                              "_parent_model"))

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        unknown = set(kwargs) - _ALLOWED_KWARGS
        if unknown:
            raise TypeError("%s: keyword argument(s) not understood: %s. Accepted extra "
                            "arguments: %s." % (type(self).__name__, sorted(unknown),
                                                sorted(_ALLOWED_KWARGS)))
        if name is None:
            name = _unique_layer_name(to_snake_case(type(self).__name__))
        elif not isinstance(name, str):
            raise TypeError("Layer name must be a string, got %r." % (name,))
        elif "/" in name:
            raise ValueError("Layer name %r must not contain '/'." % (name,))
        Module.__init__(self, name=name)
        self._dtype_policy = mixed_precision.get_policy(dtype)
        self._trainable = bool(trainable)
        self.built = False
        self._input_spec = None
        self.supports_masking = getattr(self, "supports_masking", False)
        self.stateful = False
        self._dynamic = bool(kwargs.get("dynamic", False))
        self._autocast = bool(kwargs.get("autocast", True))
        self._layer_weights = []
        self._call_losses = []
        self._callable_losses = []
        self._activity_regularizer = regularizers_lib.get(kwargs.get("activity_regularizer"))
        self._initial_weights = kwargs.get("weights")
        batch_shape = kwargs.get("batch_input_shape")
        if batch_shape is None:
            input_shape = kwargs.get("input_shape")
            if input_shape is None and kwargs.get("input_dim") is not None:
                input_shape = (kwargs["input_dim"],)
            if input_shape is not None:
                if isinstance(input_shape, int):
                    input_shape = (input_shape,)
                batch_shape = (kwargs.get("batch_size"),) + tuple(input_shape)
        self._batch_input_shape = tuple(batch_shape) if batch_shape is not None else None

    # -- dtypes ---------------------------------------------------------------------------------
    @property
    def dtype_policy(self):
        """The layer's DTypePolicy."""
        return self._dtype_policy

    @property
    def dtype(self):
        """The variable dtype (a string), as tf.keras' ``Layer.dtype``."""
        return self._dtype_policy.variable_dtype

    @property
    def compute_dtype(self):
        """The dtype (a string) floating inputs are cast to and the math runs in."""
        return self._dtype_policy.compute_dtype

    @property
    def variable_dtype(self):
        """The dtype (a string) of the variables ``add_weight`` creates by default."""
        return self._dtype_policy.variable_dtype

    def _cast_compute(self, x):
        """Reads a weight (or tensor) in the compute dtype (mixed policies keep float32
        variables; the cast is differentiable, so gradients reach the float32 variable)."""
        if x is None:
            return None
        if dtypes_lib.as_dtype(x.dtype).name != self.compute_dtype:
            return ef.cast(x, self.compute_dtype)
        return x

    # -- properties -----------------------------------------------------------------------------
    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        for layer in self._flatten_layers(include_self=True):
            layer._trainable = bool(value)

    @property
    def input_spec(self):
        """An InputSpec (or a list of them) checked on every call, or None."""
        return self._input_spec

    @input_spec.setter
    def input_spec(self, value):
        for spec in _flatten(value):
            if spec is not None and not isinstance(spec, InputSpec):
                raise TypeError("Layer input_spec must be an instance of InputSpec. Got: %r"
                                % (spec,))
        self._input_spec = value

    # -- the symbolic tensors of the layer's first call in a functional graph (Keras 3) --------
    def _node_attribute(self, attribute, what):
        nodes = self.__dict__.get("_inbound_nodes")
        if not nodes:
            raise AttributeError(
                "The layer %s has never been called and thus has no defined %s. Call it on "
                "a keras.Input (or build a functional or Sequential model with an Input) "
                "first." % (self.name, what))
        values = attribute(nodes[0])
        return values[0] if isinstance(values, list) and len(values) == 1 else values

    @property
    def input(self):
        """The KerasTensor(s) the layer was first called on (for feature extraction:
        ``Model(inputs=model.input, outputs=model.layers[k].output)``).

        Raises:
            AttributeError: If the layer was never called on symbolic inputs.
        """
        return self._node_attribute(lambda node: list(node.input_tensors), "input")

    @property
    def output(self):
        """The KerasTensor(s) of the layer's first symbolic call.

        Raises:
            AttributeError: If the layer was never called on symbolic inputs.
        """
        return self._node_attribute(lambda node: list(node.flat_outputs), "output")

    @property
    def dynamic(self):
        return self._dynamic

    @property
    def activity_regularizer(self):
        return self._activity_regularizer

    @activity_regularizer.setter
    def activity_regularizer(self, value):
        self._activity_regularizer = regularizers_lib.get(value)

    @property
    def batch_input_shape(self):
        return self._batch_input_shape

    # -- tracking -------------------------------------------------------------------------------
    def _tracked_values(self):
        skip = self._NON_TRACKED
        ignored = Module._TF_MODULE_IGNORED_PROPERTIES
        for key, value in vars(self).items():
            # Config values (names, sizes, flags) are most attributes: skipped at once.
            if value.__class__ in _ATOMIC or key in skip or key in ignored:
                continue
            if isinstance(value, (list, tuple, dict)):
                if value:
                    yield from _flatten(value)
            else:
                yield value

    def _tracked_children(self):
        """This layer's own variables and its direct sublayers, in one walk of its
        attributes (``trainable_variables`` runs it for every layer at every step)."""
        variables = list(self._layer_weights)
        variable_ids = {id(v) for v in variables}
        layers = []
        layer_ids = {id(self)}
        for leaf in self._tracked_values():
            if isinstance(leaf, Layer):
                if id(leaf) not in layer_ids:
                    layer_ids.add(id(leaf))
                    layers.append(leaf)
            elif getattr(leaf, "_is_variable", False) and id(leaf) not in variable_ids:
                variable_ids.add(id(leaf))
                variables.append(leaf)
        return variables, layers

    def _direct_layers(self):
        return self._tracked_children()[1]

    def _flatten_layers(self, include_self=True, recursive=True):
        """This layer (optionally) and its sublayers, depth first in attribute order."""
        out = [self] if include_self else []
        seen = {id(self)}
        stack = list(reversed(self._direct_layers()))
        while stack:
            layer = stack.pop()
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            out.append(layer)
            if recursive:
                stack.extend(reversed(layer._direct_layers()))
        return out

    @property
    def layers(self):
        """Direct sublayers, in the order they were assigned."""
        return self._direct_layers()

    def _own_variables(self):
        return self._tracked_children()[0]

    def _gather_weights(self, trainable):
        """Variables whose effective trainability is ``trainable``: a variable counts as
        trainable only if it is and no layer on its path (this one included) is frozen.
        One walk with a visited set, so layers referring to each other cannot loop."""
        out = []
        seen = set()

        def visit(layer, frozen):
            if id(layer) in seen:
                return
            seen.add(id(layer))
            frozen = frozen or not layer._trainable
            variables, children = layer._tracked_children()
            for v in variables:
                if (bool(v.trainable) and not frozen) == trainable:
                    out.append(v)
            for child in children:
                visit(child, frozen)

        visit(self, False)
        return _dedupe(out)

    @property
    def trainable_weights(self):
        """Trainable variables of this layer then its sublayers; empty when frozen."""
        return self._gather_weights(True)

    @property
    def non_trainable_weights(self):
        """Non-trainable variables; all variables when the layer is frozen."""
        return self._gather_weights(False)

    @property
    def weights(self):
        """``trainable_weights + non_trainable_weights`` (the order of get/set_weights)."""
        return _dedupe(self.trainable_weights + self.non_trainable_weights)

    variables = weights

    @property
    def trainable_variables(self):
        return tuple(self.trainable_weights)

    @property
    def non_trainable_variables(self):
        return tuple(self.non_trainable_weights)

    # -- weights --------------------------------------------------------------------------------
    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, use_resource=None,
                   synchronization=VariableSynchronization.AUTO,
                   aggregation=VariableAggregation.NONE, **kwargs):
        """Creates a variable of this layer (through ``eagerflow.Variable``, so variable
        creator scopes such as distribution strategies' apply).

        Args:
            name: Variable name (prefixed by the layer's name scope).
            shape: Fully known shape; None means a scalar.
            dtype: Defaults to the policy's variable dtype.
            initializer: Initializer or identifier; defaults to ``"glorot_uniform"`` for
                floating and ``"zeros"`` for other dtypes.
            regularizer: Regularizer or identifier; its penalty joins ``losses``.
            trainable: Defaults to True (False for ``ON_READ`` synchronization).
            constraint: Constraint or identifier, applied by optimizers after updates.
            use_resource: Ignored (all variables are resource variables).
            synchronization: A VariableSynchronization.
            aggregation: A VariableAggregation.
            **kwargs: ``initial_value`` may replace the initializer; ``experimental_autocast``
                is accepted and ignored.

        Returns:
            The variable.

        Raises:
            ValueError: For an unknown shape or a trainable ON_READ variable.

        Example:
            >>> from eagerflow.keras import layers
            >>> layer = layers.Layer()
            >>> layer.add_weight("w", (2,), initializer="ones").numpy().tolist()
            [1.0, 1.0]
        """
        unknown = set(kwargs) - {"initial_value", "experimental_autocast", "getter",
                                 "partitioner", "caching_device", "autocast"}
        if unknown:
            raise TypeError("add_weight: unknown keyword argument(s) %s." % sorted(unknown))
        shape = () if shape is None else tuple(TensorShape(shape).as_list())
        if any(d is None for d in shape):
            raise ValueError("Layer %s: cannot create weight %r with partially unknown shape "
                             "%s; build the layer with known dimensions."
                             % (self.name, name, list(shape)))
        dtype = dtypes_lib.as_dtype(dtype or self.variable_dtype)
        if synchronization is VariableSynchronization.ON_READ:
            if trainable:
                raise ValueError("Synchronization value can be set to "
                                 "VariableSynchronization.ON_READ only for non-trainable "
                                 "variables. You have specified trainable=True and "
                                 "synchronization=VariableSynchronization.ON_READ.")
            trainable = False
        elif trainable is None:
            trainable = True
        initial_value = kwargs.get("initial_value")
        if initial_value is None:
            if initializer is None:
                initializer = "glorot_uniform" if dtype.is_floating else "zeros"
            initializer = initializers_lib.get(initializer)
            initial_value = functools.partial(initializer, shape, dtype=dtype)
        regularizer = regularizers_lib.get(regularizer)
        constraint = constraints_lib.get(constraint)
        # build already runs inside the layer's scope; add_weight from __init__ does not.
        scope = context.state.name_scope or ""
        inside = scope == self.name + "/" or scope.endswith("/" + self.name + "/")
        with contextlib.nullcontext() if inside else ef.name_scope(self.name):
            variable = ef.Variable(initial_value=initial_value, trainable=trainable,
                                   name=name or "Variable", dtype=dtype, constraint=constraint,
                                   synchronization=synchronization, aggregation=aggregation)
        # A variable split into shards by a strategy's partitioner: its shards are the
        # layer's weights (what optimizers update and checkpoints store), as in TF.
        self._layer_weights.extend(getattr(variable, "variables", None)
                                   if getattr(variable, "_is_sharded_variable", False)
                                   else [variable])
        if regularizer is not None:
            self._callable_losses.append(_RegularizationLoss(regularizer, variable, name))
        return variable

    add_variable = add_weight

    def get_weights(self):
        """The current values of ``weights`` as numpy arrays.

        Example:
            >>> from eagerflow.keras import layers
            >>> d = layers.Dense(2); d.build((None, 3))
            >>> [w.shape for w in d.get_weights()]
            [(3, 2), (2,)]
        """
        return [np.asarray(w.numpy()) for w in self.weights]

    def set_weights(self, weights):
        """Assigns numpy arrays to ``weights``, in order.

        Args:
            weights: A list with one array per weight, each of the weight's shape.

        Raises:
            ValueError: When the count or a shape does not match.

        Example:
            >>> import numpy as np
            >>> from eagerflow.keras import layers
            >>> d = layers.Dense(2); d.build((None, 3))
            >>> d.set_weights([np.ones((3, 2)), np.zeros(2)])
        """
        params = self.weights
        weights = list(weights)
        if len(params) != len(weights):
            raise ValueError(
                'You called set_weights(weights) on layer "%s" with a weight list of length '
                "%d, but the layer was expecting %d weights (%s)."
                % (self.name, len(weights), len(params),
                   ", ".join("%s %s" % (p.name, tuple(p.shape)) for p in params)))
        arrays = []
        for param, value in zip(params, weights):
            value = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
            expected = tuple(param.shape.as_list())
            if value.shape != expected:
                raise ValueError('Layer "%s" weight %s has shape %s, but the value provided has '
                                 "shape %s." % (self.name, param.name, expected, value.shape))
            arrays.append(value.astype(dtypes_lib.as_dtype(param.dtype).as_numpy_dtype,
                                       copy=False))
        for param, value in zip(params, arrays):
            param.assign(value)

    def count_params(self):
        """Total number of scalars in ``weights``.

        Raises:
            ValueError: If the layer is not built.
        """
        if not self.built:
            raise ValueError("You tried to call count_params on layer %s, but the layer isn't "
                             "built. You can build it manually via: "
                             "`%s.build(batch_input_shape)`." % (self.name, self.name))
        return int(sum(np.prod(w.shape.as_list(), dtype=np.int64) for w in self.weights))

    # -- losses ---------------------------------------------------------------------------------
    def add_loss(self, losses, **kwargs):
        """Adds loss tensors (reset at the next outermost call) or zero-argument callables
        (evaluated each time ``losses`` is read).

        Example:
            >>> import eagerflow as ef
            >>> from eagerflow.keras import layers
            >>> layer = layers.Layer(); layer.add_loss(ef.constant(2.0))
            >>> [float(x) for x in layer.losses]
            [2.0]
        """
        for loss in _flatten(losses):
            if loss is None:
                continue
            if callable(loss) and not _is_tensor_like(loss):
                self._callable_losses.append(loss)
            else:
                self._call_losses.append(ef.convert_to_tensor(loss))
                _PENDING_CALL_LOSSES[id(self)] = self

    @property
    def losses(self):
        """Losses of this layer and its sublayers: per-call losses, then callable and
        regularization losses computed from the current weights."""
        out = []
        for layer in self._flatten_layers(include_self=True):
            out.extend(layer._call_losses)
            for fn in layer._callable_losses:
                value = fn()
                if value is not None:
                    out.append(value)
        return out

    def _clear_losses(self):
        if not _PENDING_CALL_LOSSES:
            return  # no layer holds a per-call loss: no need to walk every sublayer
        for layer in self._flatten_layers(include_self=True):
            layer._reset_call_losses()

    def _reset_call_losses(self):
        self._call_losses = []
        _PENDING_CALL_LOSSES.pop(id(self), None)

    def add_update(self, updates):
        """Runs update callables (updates are applied when made in eager code; kept for
        tf.keras compatibility)."""
        for update in _flatten(updates):
            if callable(update):
                update()

    def add_metric(self, value, name=None, **kwargs):
        """Not supported on layers: use ``Model.compile(metrics=...)`` or a Metric object."""
        raise NotImplementedError("Layer.add_metric is not supported; track metrics with "
                                  "eagerflow.keras.metrics objects instead.")

    # -- building -------------------------------------------------------------------------------
    def build(self, input_shape):
        """Creates the weights; the default only records the input shape.

        Args:
            input_shape: TensorShape (or nested structure of them) of the first call's inputs.
        """
        self.built = True

    def maybe_build(self, input_shape):
        """Builds the layer from shapes (tuples, lists or TensorShapes) if not built yet."""
        if self.built:
            return
        with ef.name_scope(self.name):
            self.build(_as_shape(input_shape) if input_shape is not None else None)
        self.built = True
        if self._initial_weights is not None:
            weights, self._initial_weights = self._initial_weights, None
            self.set_weights(weights)

    _maybe_build = maybe_build

    def _build_input_shape(self, inputs, args, kwargs):
        """What ``build`` receives; layers with several tensor arguments override it."""
        return shapes_of(inputs)

    def compute_output_shape(self, input_shape):
        """The output shape for an input shape (TensorShape or nested list of them).

        Raises:
            NotImplementedError: Unless the layer defines it.
        """
        raise NotImplementedError("Layer %s (%s) does not define compute_output_shape; call it "
                                  "on a tensor to learn its output shape."
                                  % (self.name, type(self).__name__))

    def compute_mask(self, inputs, mask=None):
        """The output mask: the input mask for layers with ``supports_masking``, else None."""
        if not self.supports_masking:
            return None
        return mask

    # -- calling --------------------------------------------------------------------------------
    def call(self, inputs, *args, **kwargs):
        """The layer's computation; the default returns the inputs unchanged."""
        return inputs

    def __call__(self, *args, **kwargs):
        if args:
            inputs, args = args[0], args[1:]
        elif "inputs" in kwargs:
            inputs = kwargs.pop("inputs")
        else:
            raise TypeError("Layer %s was called without inputs." % self.name)
        # One eager tensor (the usual call) is neither symbolic nor in need of conversion.
        single = inputs.__class__ is Tensor
        if not single:
            call_context.check_nesting(inputs, self.name)
            handler = call_context._symbolic_handler
            if handler is not None and any(_is_symbolic(x) for x in _flatten(inputs)):
                return handler(self, inputs, args, kwargs)
            inputs = _map_structure(_convert, inputs)
        takes_training, takes_mask, var_kw, training_default = _call_signature(type(self))
        frames = _call_stack.frames
        if not frames:
            self._clear_losses()

        # training: explicit > enclosing call > call's default.
        training = kwargs.get("training")
        if training is None and frames:
            training = frames[-1][1]
        if training is None:
            training = training_default
        if takes_training:
            kwargs["training"] = training
        elif not var_kw:
            kwargs.pop("training", None)

        input_masks = None
        if kwargs.get("mask") is None:
            if single:
                masks = get_keras_mask(inputs)
                has_mask = masks is not None
            else:
                masks = _map_structure(get_keras_mask, inputs)
                has_mask = any(m is not None for m in _flatten(masks))
            if has_mask:
                input_masks = masks
                if takes_mask:
                    kwargs["mask"] = masks
        else:
            input_masks = kwargs["mask"]
        if "mask" in kwargs and not takes_mask and not var_kw:
            kwargs.pop("mask")

        assert_input_compatibility(self._input_spec, inputs, self.name)
        if not self.built:
            self.maybe_build(self._build_input_shape(inputs, args, kwargs))
        if self._autocast:
            inputs, args, kwargs = self._autocast_inputs(inputs, args, kwargs)

        _call_stack.frames = frames + ((self, training),)
        call = self.call
        if context.state.trace is not None and autograph_conversion.is_active():
            call = autograph_conversion.convert_user_code(call)  # a user call(), as TF
        try:
            with ef.name_scope(self.name):
                outputs = call(inputs, *args, **kwargs)
        finally:
            _call_stack.frames = frames

        if self._activity_regularizer is not None:
            for out in _flatten(outputs):
                if _is_tensor_like(out):
                    self._call_losses.append(self._activity_regularizer(out))
                    _PENDING_CALL_LOSSES[id(self)] = self
        if self.supports_masking or type(self).compute_mask is not Layer.compute_mask:
            self._attach_masks(inputs, outputs, input_masks)
        return outputs

    def _attach_masks(self, inputs, outputs, input_masks):
        out_masks = self.compute_mask(inputs, input_masks)
        if out_masks is None:
            return
        flat_out = _flatten(outputs)
        flat_masks = _flatten(out_masks) if isinstance(out_masks, (list, tuple)) else [out_masks]
        if len(flat_masks) == 1 and len(flat_out) > 1:
            flat_masks = flat_masks * len(flat_out)
        for out, mask in zip(flat_out, flat_masks):
            if mask is not None and isinstance(out, Tensor):
                set_keras_mask(out, mask)

    def _autocast_inputs(self, inputs, args, kwargs):
        target = dtypes_lib.as_dtype(self.compute_dtype)
        if not target.is_floating:
            return inputs, args, kwargs
        if inputs.__class__ is Tensor and not args and (
                inputs.dtype is target or not inputs.dtype.is_floating) and all(
                k == "training" or k.endswith("mask") for k in kwargs):
            return inputs, args, kwargs  # the usual call: one tensor, nothing to cast

        def cast(x):
            if isinstance(x, Tensor) and x.dtype.is_floating and x.dtype is not target:
                mask = get_keras_mask(x)
                y = ef.cast(x, target)
                if mask is not None:
                    set_keras_mask(y, mask)
                return y
            return x

        inputs = _map_structure(cast, inputs)
        args = tuple(_map_structure(cast, a) for a in args)
        kwargs = {k: (v if k == "training" or k.endswith("mask") else _map_structure(cast, v))
                  for k, v in kwargs.items()}
        return inputs, args, kwargs

    # -- config ---------------------------------------------------------------------------------
    def get_config(self):
        """The constructor arguments that recreate this layer (without its weights).

        Example:
            >>> from eagerflow.keras import layers
            >>> layers.Dense(3, name="d").get_config()["units"]
            3
        """
        if type(self).get_config is Layer.get_config:
            extra = _extra_init_args(type(self))
            if extra:
                raise NotImplementedError(
                    "Layer %s has arguments %s in `__init__` and therefore must override "
                    "`get_config()` to return them." % (type(self).__name__, extra))
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": mixed_precision.serialize(self._dtype_policy)}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        if self._activity_regularizer is not None:
            config["activity_regularizer"] = regularizers_lib.serialize(
                self._activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config):
        """Creates a layer from ``get_config``'s output."""
        return cls(**config)

    def __repr__(self):
        return "<%s name=%s, built=%s>" % (type(self).__name__, self.name, self.built)


@functools.lru_cache(maxsize=None)
def _extra_init_args(cls):
    """Constructor parameters of ``cls`` that the base Layer's config does not cover."""
    if cls.__init__ is Layer.__init__:
        return []
    params = inspect.signature(cls.__init__).parameters
    base_names = {"self", "trainable", "name", "dtype"}
    return [n for n, p in params.items() if n not in base_names and p.kind not in (
        inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]


class _RegularizationLoss:
    """A weight's regularization penalty, recomputed from the variable at each read."""

    def __init__(self, regularizer, variable, name):
        self.regularizer = regularizer
        self.variable = variable
        self.name = name

    def __call__(self):
        with ef.name_scope((self.name or "weight") + "_regularizer"):
            return self.regularizer(self.variable)


def _dedupe(values):
    seen = set()
    out = []
    for v in values:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out
