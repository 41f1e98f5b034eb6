"""Layer wrappers: Bidirectional (an RNN in both directions) and TimeDistributed (a layer
applied to every timestep).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layers.Bidirectional(layers.LSTM(3))(ef.ones([2, 4, 5])).shape
    TensorShape([2, 6])
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import InputSpec, Layer, _call_signature
from eagerflow.errors import short_repr
from eagerflow.tensor_shape import TensorShape

__all__ = ["Bidirectional", "TimeDistributed", "Wrapper"]

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class Wrapper(Layer):
    """Base class of layers that wrap another layer (``self.layer``).

    Args:
        layer: The wrapped Layer.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: If ``layer`` is not a Layer.
    """

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("%s: please initialize the wrapper with a `Layer` instance. "
                             "Received: layer=%r" % (type(self).__name__, layer))
        kwargs.setdefault("dtype", layer.dtype_policy)
        super().__init__(**kwargs)
        # The wrapped layer casts its own inputs; casting here too could lose precision.
        self._autocast = False
        self.layer = layer

    def get_config(self):
        from eagerflow.keras import layers  # the name table: see eagerflow.keras

        config = super().get_config()
        config["layer"] = layers.serialize(self.layer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from eagerflow.keras import layers  # the name table: see eagerflow.keras

        config = dict(config)
        config["layer"] = layers.deserialize(config["layer"], custom_objects)
        return cls(**config)


def _copy_layer(layer, name, **overrides):
    config = layer.get_config()
    config.update(overrides)
    config["name"] = name
    return type(layer).from_config(config)


class Bidirectional(Layer):
    """Runs a recurrent layer forwards and a copy of it backwards, then merges the outputs.

    The backward layer processes the reversed sequence; with ``return_sequences`` its
    outputs are reversed back so that position ``t`` of both halves refers to input step
    ``t``. ``merge_mode`` combines them: ``"concat"`` (last axis), ``"sum"``, ``"mul"``,
    ``"ave"``, or None (a list ``[forward, backward]``). With ``return_state`` the forward
    states follow the output, then the backward states.

    Args:
        layer: An RNN layer (LSTM, GRU, SimpleRNN, RNN); its config makes both copies.
        merge_mode: How to combine the two directions.
        weights: Optional initial weights (forward then backward).
        backward_layer: Optional explicit backward layer (must have ``go_backwards=True``
            relative to ``layer`` and the same return flags).
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For an unknown merge mode, a non-RNN layer, or a mismatched
            backward_layer.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> bi = layers.Bidirectional(layers.GRU(3, return_sequences=True), merge_mode="sum")
        >>> bi(ef.ones([2, 4, 5])).shape
        TensorShape([2, 4, 3])
    """

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None,
                 **kwargs):
        if not isinstance(layer, Layer) or not hasattr(layer, "go_backwards"):
            raise ValueError("Bidirectional: please initialize with a recurrent layer (LSTM, "
                             "GRU, SimpleRNN or RNN). Received: layer=%r" % (layer,))
        if merge_mode not in _MERGE_MODES:
            raise ValueError('Invalid merge mode. Received: merge_mode=%s. Merge mode should '
                             'be one of {"sum", "mul", "ave", "concat", None}'
                             % (short_repr(merge_mode),))
        kwargs.setdefault("dtype", layer.dtype_policy)
        super().__init__(weights=weights, **kwargs)
        # The wrapped layers cast their own inputs; casting here too could lose precision.
        self._autocast = False
        self.forward_layer = _copy_layer(layer, "forward_" + layer.name)
        if backward_layer is None:
            self.backward_layer = _copy_layer(layer, "backward_" + layer.name,
                                              go_backwards=not layer.go_backwards)
            self._custom_backward = False
        else:
            if not isinstance(backward_layer, Layer) or not hasattr(backward_layer,
                                                                    "go_backwards"):
                raise ValueError("Bidirectional: backward_layer must be a recurrent layer "
                                 "(LSTM, GRU, SimpleRNN or RNN). Received: backward_layer=%r"
                                 % (backward_layer,))
            if backward_layer.go_backwards == layer.go_backwards:
                raise ValueError("Bidirectional: backward_layer.go_backwards must be the "
                                 "opposite of layer.go_backwards (got %s for both)."
                                 % layer.go_backwards)
            for attr in ("return_sequences", "return_state"):
                if getattr(backward_layer, attr) != getattr(layer, attr):
                    raise ValueError("Bidirectional: forward and backward layers must have "
                                     "the same %s." % attr)
            self.backward_layer = backward_layer
            self._custom_backward = True
        self._layer_config = layer.get_config()
        self._layer_class = type(layer)
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        for rnn in (self.forward_layer, self.backward_layer):
            # Masked steps must give zeros in both directions so the halves line up.
            if hasattr(rnn, "zero_output_for_mask"):
                rnn.zero_output_for_mask = rnn.return_sequences
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=3)

    @property
    def _time_axis(self):
        return 0 if getattr(self.forward_layer, "time_major", False) else 1

    def build(self, input_shape):
        self.forward_layer.maybe_build(input_shape)
        self.backward_layer.maybe_build(input_shape)
        self.built = True

    def call(self, inputs, mask=None, training=None, initial_state=None):
        kwargs = {"training": training}
        if mask is not None:
            kwargs["mask"] = mask
        fwd_state = bwd_state = None
        if initial_state is not None:
            states = list(initial_state)
            if len(states) % 2:
                raise ValueError("Bidirectional %s: initial_state must hold the forward "
                                 "states then the backward states (an even count), got %d."
                                 % (self.name, len(states)))
            half = len(states) // 2
            fwd_state, bwd_state = states[:half], states[half:]
        y = self.forward_layer(inputs, initial_state=fwd_state, **kwargs)
        y_rev = self.backward_layer(inputs, initial_state=bwd_state, **kwargs)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = ef.reverse(y_rev, [self._time_axis])
        if self.merge_mode == "concat":
            output = ef.concat([y, y_rev], axis=-1)
        elif self.merge_mode == "sum":
            output = y + y_rev
        elif self.merge_mode == "ave":
            output = (y + y_rev) * 0.5
        elif self.merge_mode == "mul":
            output = y * y_rev
        else:
            output = [y, y_rev]
        if self.return_state:
            if self.merge_mode is None:
                return output + states
            return [output] + states
        return output

    def compute_output_shape(self, input_shape):
        out = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            states = out[1:] * 2
            out = out[0]
        dims = out.as_list()
        if self.merge_mode == "concat":
            dims[-1] = None if dims[-1] is None else dims[-1] * 2
            out = TensorShape(dims)
        elif self.merge_mode is None:
            out = [out, out]
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out_mask = mask if self.return_sequences else None
        masks = [out_mask, out_mask] if self.merge_mode is None else [out_mask]
        if self.return_state:
            n = len(self.forward_layer.cell.state_size) if isinstance(
                self.forward_layer.cell.state_size, (list, tuple)) else 1
            return masks + [None] * (2 * n)
        return masks if self.merge_mode is None else out_mask

    def reset_states(self, states=None):
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        half = len(states) // 2
        self.forward_layer.reset_states(states[:half])
        self.backward_layer.reset_states(states[half:])

    def get_config(self):
        from eagerflow.keras import layers  # the name table: see eagerflow.keras

        config = super().get_config()
        config["layer"] = {"class_name": self._layer_class.__name__,
                           "config": self._layer_config}
        config["merge_mode"] = self.merge_mode
        if self._custom_backward:
            config["backward_layer"] = layers.serialize(self.backward_layer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from eagerflow.keras import layers  # the name table: see eagerflow.keras

        config = dict(config)
        config["layer"] = layers.deserialize(config["layer"], custom_objects)
        if config.get("backward_layer") is not None:
            config["backward_layer"] = layers.deserialize(config["backward_layer"],
                                                          custom_objects)
        return cls(**config)


class TimeDistributed(Wrapper):
    """Applies ``layer`` to every timestep: ``y[:, t] = layer(x[:, t])`` (one set of weights).

    Args:
        layer: The Layer to apply; it sees inputs of shape ``(batch, *x.shape[2:])``.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For inputs of rank < 3 or a non-Layer.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.TimeDistributed(layers.Dense(2))(ef.ones([4, 3, 5])).shape
        TensorShape([4, 3, 2])
    """

    def __init__(self, layer, **kwargs):
        super().__init__(layer, **kwargs)
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=3)

    def _inner_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if len(dims) < 3:
            raise ValueError("TimeDistributed %s requires inputs of rank >= 3 (batch, time, "
                             "...), got shape %s." % (self.name, dims))
        batch = dims[0] * dims[1] if dims[0] is not None and dims[1] is not None else None
        return dims, TensorShape([batch] + dims[2:])

    def build(self, input_shape):
        _, inner = self._inner_shape(input_shape)
        self.layer.maybe_build(inner)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        shape = layer_utils.static_or_dynamic_shape(inputs)
        x = ef.reshape(inputs, [-1] + list(shape[2:]))
        takes_training, takes_mask, _, _ = _call_signature(type(self.layer))
        kwargs = {}
        if takes_training:
            kwargs["training"] = training
        if takes_mask and mask is not None:
            kwargs["mask"] = ef.reshape(mask, [-1] + list(
                layer_utils.static_or_dynamic_shape(mask)[2:]))
        y = self.layer(x, **kwargs)
        y_shape = layer_utils.static_or_dynamic_shape(y)
        lead = [shape[0] if isinstance(shape[0], int) else -1, shape[1]]
        return ef.reshape(y, lead + list(y_shape[1:]))

    def compute_output_shape(self, input_shape):
        dims, inner = self._inner_shape(input_shape)
        out = self.layer.compute_output_shape(inner).as_list()
        return TensorShape(dims[:2] + out[1:])
