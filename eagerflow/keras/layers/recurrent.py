"""Recurrent layers: the cells (SimpleRNNCell, LSTMCell, GRUCell, StackedRNNCells), the
generic ``RNN`` loop, and SimpleRNN, LSTM and GRU.

The loop runs in Python over a static time dimension, one cell step per timestep; under
``eagerflow.function`` tracing this unrolls into the graph. When the time dimension is known
only at run time (a traced function over ``Input(shape=(None, features))``) the same step
runs inside one ``while_loop``, as in TF. With inputs ``x_t`` (batch,
features) and ``sigma`` the recurrent activation, ``phi`` the activation:

- SimpleRNN: ``h_t = phi(x_t W + h_{t-1} U + b)``
- LSTM (gates i, f, c, o in that order in W, U, b):
  ``z = x_t W + h_{t-1} U + b``; ``i = sigma(z_i)``, ``f = sigma(z_f)``, ``o = sigma(z_o)``;
  ``c_t = f c_{t-1} + i phi(z_c)``; ``h_t = o phi(c_t)``
- GRU (gates z, r, h), ``reset_after=True`` (default; bias has two rows, input and
  recurrent): ``x' = x_t W + b_in``, ``h' = h_{t-1} U + b_rec``; ``z = sigma(x'_z + h'_z)``,
  ``r = sigma(x'_r + h'_r)``, ``hh = phi(x'_h + r h'_h)``; ``h_t = z h_{t-1} + (1 - z) hh``.
  With ``reset_after=False`` the reset gate applies before the product:
  ``hh = phi(x'_h + (r h_{t-1}) U_h)`` and the single bias row is added to ``x'``.

``dropout`` masks the inputs and ``recurrent_dropout`` the previous state (one mask per
sequence, reused at every step), in training only. A Keras mask ``(batch, time)`` freezes the
state on masked steps and repeats the previous output there (zeros instead with
``zero_output_for_mask``).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layers.LSTM(4, return_sequences=True)(ef.ones([2, 5, 3])).shape
    TensorShape([2, 5, 4])
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import InputSpec, Layer
from eagerflow.keras.layers.recurrent_cells import (  # noqa: F401 - re-exported
    GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells,
)
from eagerflow.tensor_shape import TensorShape

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells", "RNN", "SimpleRNN",
           "LSTM", "GRU"]


class RNN(Layer):
    """Runs a cell over the time axis of ``(batch, time, features)`` inputs.

    Args:
        cell: A cell (``call(inputs, states) -> (output, new_states)`` and ``state_size``),
            or a list of cells (stacked).
        return_sequences: Return every step's output ``(batch, time, units)`` instead of the
            last one.
        return_state: Also return the final states: ``[output, *states]``.
        go_backwards: Process the sequence from the end; sequences come out in that order.
        stateful: Keep the final states of a batch as the initial states of the next
            (needs a static batch size; ``reset_states()`` zeroes them).
        unroll: Accepted; a static time dimension is always unrolled, an unknown one runs
            as a ``while_loop``.
        time_major: Inputs are ``(time, batch, features)``.
        zero_output_for_mask: Output zeros (instead of the previous output) on masked steps.
        **kwargs: Base Layer arguments.

    Call arguments:
        inputs: A 3-D tensor.
        mask: Optional boolean ``(batch, time)``.
        training: Enables dropout.
        initial_state: Optional list of initial state tensors.

    Raises:
        ValueError: For initial states of the wrong count.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> out, h = layers.RNN(layers.SimpleRNNCell(4), return_state=True)(ef.ones([2, 3, 5]))
        >>> h.shape
        TensorShape([2, 4])
    """

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, zero_output_for_mask=False,
                 **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not callable(getattr(cell, "call", None)) or not hasattr(cell, "state_size"):
            raise ValueError("RNN: `cell` should have a `call` method and a `state_size` "
                             "attribute, got %r." % (cell,))
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)
        self.time_major = bool(time_major)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=3)
        self._state_variables = None

    _NON_TRACKED = Layer._NON_TRACKED | {"_state_variables"}

    @property
    def _num_states(self):
        size = self.cell.state_size
        return len(size) if isinstance(size, (list, tuple)) else 1

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if len(dims) != 3:
            raise ValueError("RNN layer %s expects inputs of shape (batch, time, features), "
                             "got %s." % (self.name, dims))
        if self.time_major:
            dims = [dims[1], dims[0], dims[2]]
        self.input_spec = InputSpec(ndim=3, axes={-1: dims[-1]})
        self.cell.maybe_build(TensorShape([dims[0], dims[2]]))
        self.built = True

    @property
    def states(self):
        """The stateful layer's state variables (None until the first call)."""
        return self._state_variables

    def reset_states(self, states=None):
        """Zeroes a stateful layer's states (or sets them to ``states``)."""
        if not self.stateful:
            raise AttributeError("Layer %s must be stateful to reset its states." % self.name)
        if self._state_variables is None:
            return
        if states is None:
            for v in self._state_variables:
                v.assign(ef.zeros_like(v.read_value()))
            return
        states = states if isinstance(states, (list, tuple)) else [states]
        if len(states) != len(self._state_variables):
            raise ValueError("Layer %s expects %d states, but it received %d state values."
                             % (self.name, len(self._state_variables), len(states)))
        for v, s in zip(self._state_variables, states):
            v.assign(s)

    reset_state = reset_states

    def _initial_states(self, inputs, initial_state):
        batch = layer_utils.static_or_dynamic_shape(inputs)[0]
        n = self._num_states
        if initial_state is not None:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [
                initial_state]
            if len(states) != n:
                raise ValueError("Layer %s: an initial_state of %d tensor(s) was passed, but the "
                                 "cell has %d state(s) (state_size=%s)."
                                 % (self.name, len(states), n, self.cell.state_size))
            return [ef.convert_to_tensor(s) for s in states]
        if self.stateful:
            if self._state_variables is None:
                if isinstance(batch, int):
                    zeros = self.cell.get_initial_state(batch_size=batch,
                                                        dtype=inputs.dtype)
                else:
                    raise ValueError("Stateful RNN layer %s needs a static batch size; got "
                                     "input shape %s." % (self.name, inputs.shape))
                with ef.name_scope(self.name):
                    self._state_variables = [ef.Variable(z, trainable=False, name="state")
                                             for z in zeros]
            return [v.read_value() for v in self._state_variables]
        if isinstance(batch, int):
            return self.cell.get_initial_state(batch_size=batch, dtype=inputs.dtype)
        # A batch known only at run time (a traced function with a None batch dimension):
        # op shape attributes must be static, so broadcast one zero row over a (batch, 1)
        # column of zeros taken from the inputs.
        column = ef.zeros_like(inputs[:, 0, :1])
        return [column + z for z in self.cell.get_initial_state(batch_size=1, dtype=inputs.dtype)]

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if self.time_major:
            inputs = ef.transpose(inputs, [1, 0, 2])
        states = self._initial_states(inputs, initial_state)
        if mask is not None:
            mask = ef.cast(mask, ef.bool)
        step = self._step_function(inputs, states, training)
        if inputs.shape[1] is None:
            outputs, last, states = self._while_loop(step, inputs, mask, states)
        else:
            outputs, last, states = self._unrolled_loop(step, inputs, mask, states)
        if self.stateful:
            for v, s in zip(self._state_variables, states):
                v.assign(ef.cast(s, v.dtype))
        if self.return_sequences:
            output = outputs()
            if self.time_major:
                output = ef.transpose(output, [1, 0, 2])
        else:
            output = last
        if self.return_state:
            return [output] + list(states)
        return output

    def _step_function(self, inputs, states, training):
        """``step(x_t, keep_t, states, previous_output) -> (output, states)``: one cell step,
        with the mask's rule (masked rows keep their state and repeat the previous output,
        or output zeros with ``zero_output_for_mask``). Both loops run this one function."""
        cell = self.cell
        cell_step = getattr(cell, "step", None)
        if cell_step is not None:
            # One dropout mask per sequence, reused at every step (the first step's inputs
            # give its shape; sliced only when an input dropout needs it).
            first = inputs[:, 0] if getattr(cell, "dropout", 0) and inputs.shape[1] != 0 \
                else inputs
            dp, rec = cell.dropout_masks(first, states, training)

        def step(x, keep, states, previous):
            if cell_step is not None:
                out, new_states = cell_step(x, states, dp, rec)
            else:
                out, new_states = cell(x, states, training=training)
                new_states = list(new_states) if isinstance(new_states, (list, tuple)) else [
                    new_states]
            if keep is not None:
                keep = ef.expand_dims(keep, -1)
                new_states = [ef.where(keep, n, s) for n, s in zip(new_states, states)]
                fallback = ef.zeros_like(out) if (
                    self.zero_output_for_mask or previous is None) else previous
                out = ef.where(keep, out, fallback)
            return out, list(new_states)

        return step

    def _unrolled_loop(self, step, inputs, mask, states):
        """The loop in Python over a static time dimension (unrolled when traced)."""
        steps = inputs.shape[1]
        xs = ef.unstack(inputs, axis=1)
        ms = ef.unstack(mask, axis=1) if mask is not None else None
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        outputs = []
        out = None
        for t in order:
            out, states = step(xs[t], ms[t] if ms is not None else None, states, out)
            outputs.append(out)
        return (lambda: ef.stack(outputs, axis=1)), out, states

    def _while_loop(self, step, inputs, mask, states):
        """The loop as one ``while_loop`` over a time dimension known only when the traced
        function runs (``Input(shape=(None, features))``), as TF's symbolic RNN loop: the
        steps' inputs and outputs go through TensorArrays."""
        n = ef.shape(inputs)[1]
        xs = ef.TensorArray(inputs.dtype, size=n).unstack(ef.transpose(inputs, [1, 0, 2]))
        ms = ef.TensorArray(ef.bool, size=n).unstack(ef.transpose(mask, [1, 0])) \
            if mask is not None else None
        out_size = getattr(self.cell, "output_size", self.cell.state_size)
        if isinstance(out_size, (list, tuple)):
            out_size = out_size[0]
        dtype = states[0].dtype
        # The output before the first step (what a masked first step repeats): zeros of
        # (batch, output_size), the batch taken from the states so it may be dynamic.
        last = ef.zeros_like(states[0][:, :1]) + ef.zeros([int(out_size)], dtype)
        # The outputs' buffer (time, batch, units) is allocated up front from the inputs'
        # shape, so its rank is known even with a dynamic batch (the while_loop's gradient
        # keeps a history of it).
        column = ef.zeros_like(ef.transpose(inputs[:, :, :1], [1, 0, 2]), dtype=dtype)
        ys = ef.TensorArray(dtype, flow=column + ef.zeros([int(out_size)], dtype))

        def body(t, last, states, ys):
            index = n - 1 - t if self.go_backwards else t
            out, states = step(xs.read(index), ms.read(index) if ms is not None else None,
                               states, last if mask is not None else None)
            return t + 1, out, states, ys.write(t, out)

        _, last, states, ys = ef.while_loop(lambda t, *_: t < n, body,
                                            (ef.constant(0), last, list(states), ys))
        def sequences():
            # The stacked steps keep the static (batch, units) that the buffer may not carry
            # when the batch is dynamic.
            return ef.ensure_shape(ef.transpose(ys.stack(), [1, 0, 2]),
                                   [inputs.shape[0], None, last.shape[-1]])

        return sequences, last, states

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if self.time_major:
            dims = [dims[1], dims[0], dims[2]]
        out_size = getattr(self.cell, "output_size", self.cell.state_size)
        if isinstance(out_size, (list, tuple)):
            out_size = out_size[0]
        if self.return_sequences:
            out = [dims[0], dims[1], out_size] if not self.time_major else [
                dims[1], dims[0], out_size]
        else:
            out = [dims[0], out_size]
        out = TensorShape(out)
        if not self.return_state:
            return out
        sizes = self.cell.state_size if isinstance(self.cell.state_size, (list, tuple)) else [
            self.cell.state_size]
        return [out] + [TensorShape([dims[0], n]) for n in sizes]

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * self._num_states
        return output_mask

    def _rnn_config(self):
        return {"return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll, "time_major": self.time_major,
                "zero_output_for_mask": self.zero_output_for_mask}

    def get_config(self):
        from eagerflow.keras import layers  # the name table: see eagerflow.keras

        config = super().get_config()
        config.update(self._rnn_config())
        config["cell"] = layers.serialize(self.cell)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from eagerflow.keras import layers  # the name table: see eagerflow.keras

        config = dict(config)
        config["cell"] = layers.deserialize(config["cell"], custom_objects)
        return cls(**config)


_CELL_ATTRS = frozenset((
    "units", "activation", "recurrent_activation", "use_bias", "kernel_initializer",
    "recurrent_initializer", "bias_initializer", "kernel_regularizer", "recurrent_regularizer",
    "bias_regularizer", "kernel_constraint", "recurrent_constraint", "bias_constraint",
    "dropout", "recurrent_dropout", "unit_forget_bias", "reset_after", "seed"))


class _BuiltinRNN(RNN):
    """An RNN whose cell is built from the layer's own arguments (flat config)."""

    _cell_class = SimpleRNNCell
    _cell_name = "simple_rnn_cell"

    def __init__(self, cell_kwargs, return_sequences, return_state, go_backwards, stateful,
                 unroll, activity_regularizer, **kwargs):
        rnn_kwargs = {k: kwargs.pop(k) for k in ("time_major", "zero_output_for_mask")
                      if k in kwargs}
        kwargs.pop("implementation", None)
        dtype = kwargs.get("dtype")
        trainable = kwargs.get("trainable", True)
        cell = self._cell_class(name=self._cell_name, dtype=dtype, trainable=trainable,
                                **cell_kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         activity_regularizer=activity_regularizer, **rnn_kwargs, **kwargs)

    def __getattr__(self, name):
        if name in _CELL_ATTRS:
            cell = self.__dict__.get("cell")
            if cell is not None:
                return getattr(cell, name)
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    def get_config(self):
        config = Layer.get_config(self)
        config.update(self._rnn_config())
        cell_config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell_config.pop(key, None)
        config.update(cell_config)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


class SimpleRNN(_BuiltinRNN):
    """Fully connected RNN layer: ``h_t = activation(x_t W + h_{t-1} U + b)``.

    Args:
        units: State size.
        activation: Activation (default tanh).
        use_bias: Whether to add ``b``.
        kernel_initializer, recurrent_initializer, bias_initializer: Initializers.
        kernel_regularizer, recurrent_regularizer, bias_regularizer: Regularizers.
        activity_regularizer: Output regularizer.
        kernel_constraint, recurrent_constraint, bias_constraint: Constraints.
        dropout, recurrent_dropout: Dropout rates (training only).
        return_sequences, return_state, go_backwards, stateful, unroll: See ``RNN``.
        seed: Optional int seed of the dropout masks.
        **kwargs: Base Layer arguments (and ``time_major``, ``zero_output_for_mask``).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.SimpleRNN(4)(ef.ones([2, 3, 5])).shape
        TensorShape([2, 4])
    """

    _cell_class = SimpleRNNCell
    _cell_name = "simple_rnn_cell"

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, seed=None, **kwargs):
        cell_kwargs = dict(units=units, activation=activation, use_bias=use_bias,
                           kernel_initializer=kernel_initializer,
                           recurrent_initializer=recurrent_initializer,
                           bias_initializer=bias_initializer,
                           kernel_regularizer=kernel_regularizer,
                           recurrent_regularizer=recurrent_regularizer,
                           bias_regularizer=bias_regularizer,
                           kernel_constraint=kernel_constraint,
                           recurrent_constraint=recurrent_constraint,
                           bias_constraint=bias_constraint, dropout=dropout,
                           recurrent_dropout=recurrent_dropout, seed=seed)
        super().__init__(cell_kwargs, return_sequences, return_state, go_backwards, stateful,
                         unroll, activity_regularizer, **kwargs)


class LSTM(_BuiltinRNN):
    """Long short-term memory layer (see the module docstring for the equations).

    Args:
        units: State size.
        activation: Activation phi (default tanh).
        recurrent_activation: Gate activation sigma (default sigmoid).
        use_bias: Whether to add ``b``.
        kernel_initializer, recurrent_initializer, bias_initializer: Initializers.
        unit_forget_bias: Initialize the forget gate's bias to ones (default True).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: Regularizers.
        activity_regularizer: Output regularizer.
        kernel_constraint, recurrent_constraint, bias_constraint: Constraints.
        dropout, recurrent_dropout: Dropout rates (training only).
        return_sequences, return_state, go_backwards, stateful, unroll: See ``RNN``.
        seed: Optional int seed of the dropout masks.
        **kwargs: Base Layer arguments (and ``time_major``, ``zero_output_for_mask``).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> out, h, c = layers.LSTM(4, return_state=True)(ef.ones([2, 3, 5]))
        >>> [t.shape for t in (out, h, c)]
        [TensorShape([2, 4]), TensorShape([2, 4]), TensorShape([2, 4])]
    """

    _cell_class = LSTMCell
    _cell_name = "lstm_cell"

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, seed=None, **kwargs):
        cell_kwargs = dict(units=units, activation=activation,
                           recurrent_activation=recurrent_activation, use_bias=use_bias,
                           kernel_initializer=kernel_initializer,
                           recurrent_initializer=recurrent_initializer,
                           bias_initializer=bias_initializer, unit_forget_bias=unit_forget_bias,
                           kernel_regularizer=kernel_regularizer,
                           recurrent_regularizer=recurrent_regularizer,
                           bias_regularizer=bias_regularizer,
                           kernel_constraint=kernel_constraint,
                           recurrent_constraint=recurrent_constraint,
                           bias_constraint=bias_constraint, dropout=dropout,
                           recurrent_dropout=recurrent_dropout, seed=seed)
        super().__init__(cell_kwargs, return_sequences, return_state, go_backwards, stateful,
                         unroll, activity_regularizer, **kwargs)


class GRU(_BuiltinRNN):
    """Gated recurrent unit layer (see the module docstring for the equations).

    Args:
        units: State size.
        activation: Activation phi (default tanh).
        recurrent_activation: Gate activation sigma (default sigmoid).
        use_bias: Whether to use biases.
        kernel_initializer, recurrent_initializer, bias_initializer: Initializers.
        kernel_regularizer, recurrent_regularizer, bias_regularizer: Regularizers.
        activity_regularizer: Output regularizer.
        kernel_constraint, recurrent_constraint, bias_constraint: Constraints.
        dropout, recurrent_dropout: Dropout rates (training only).
        return_sequences, return_state, go_backwards, stateful, unroll: See ``RNN``.
        reset_after: Reset gate after the recurrent product (default True).
        seed: Optional int seed of the dropout masks.
        **kwargs: Base Layer arguments (and ``time_major``, ``zero_output_for_mask``).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.GRU(4, go_backwards=True)(ef.ones([2, 3, 5])).shape
        TensorShape([2, 4])
    """

    _cell_class = GRUCell
    _cell_name = "gru_cell"

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, reset_after=True, seed=None,
                 **kwargs):
        cell_kwargs = dict(units=units, activation=activation,
                           recurrent_activation=recurrent_activation, use_bias=use_bias,
                           kernel_initializer=kernel_initializer,
                           recurrent_initializer=recurrent_initializer,
                           bias_initializer=bias_initializer,
                           kernel_regularizer=kernel_regularizer,
                           recurrent_regularizer=recurrent_regularizer,
                           bias_regularizer=bias_regularizer,
                           kernel_constraint=kernel_constraint,
                           recurrent_constraint=recurrent_constraint,
                           bias_constraint=bias_constraint, dropout=dropout,
                           recurrent_dropout=recurrent_dropout, reset_after=reset_after,
                           seed=seed)
        super().__init__(cell_kwargs, return_sequences, return_state, go_backwards, stateful,
                         unroll, activity_regularizer, **kwargs)

