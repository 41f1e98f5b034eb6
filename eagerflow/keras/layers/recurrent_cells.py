"""Recurrent cells: one timestep of SimpleRNN, LSTM and GRU, and StackedRNNCells.

A cell maps ``(inputs, states) -> (output, new_states)`` for one timestep; ``RNN`` (in
``recurrent.py``, where the equations are written out) runs it over a sequence. Built-in
cells also expose ``step(x, states, dropout_mask, recurrent_mask)``, the same computation with
the per-sequence dropout masks passed in, which the RNN loop calls directly.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> out, (h, c) = layers.LSTMCell(3)(ef.ones([2, 4]), [ef.zeros([2, 3]), ef.zeros([2, 3])])
    >>> h.shape
    TensorShape([2, 3])
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.keras import activations
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import Layer
from eagerflow.keras.layers.core import weight_config, weight_options
from eagerflow.tensor_shape import TensorShape

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells"]


def _dropout_mask(x, rate, seed):
    """A (batch, n) keep-mask scaled by 1 / (1 - rate)."""
    return ef.nn.dropout(ef.ones_like(x), rate, seed=seed)


def _feature_dims(cell, input_shape):
    """The input shape as a list, refusing inputs without a feature axis (rank 0 or unknown)."""
    dims = TensorShape(input_shape).dims
    if not dims:
        raise ValueError("%s %s: inputs must have a feature axis ([batch, features]), got "
                         "shape %s." % (type(cell).__name__, cell.name, TensorShape(input_shape)))
    return TensorShape(input_shape).as_list()


class _Cell(Layer):
    """Shared parts of the built-in cells: weights, dropout masks, config."""

    _gates = 1

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        kwargs.pop("implementation", None)
        super().__init__(**kwargs)
        name = type(self).__name__
        self.units = layer_utils.check_positive_int(units, "units", name)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        weight_options(self, "kernel", kernel_initializer, kernel_regularizer,
                       kernel_constraint)
        weight_options(self, "recurrent", recurrent_initializer, recurrent_regularizer,
                       recurrent_constraint)
        weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        layer_utils.check_rate(self.dropout, "dropout", name)
        layer_utils.check_rate(self.recurrent_dropout, "recurrent_dropout", name)
        self.seed = seed

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def _build_kernels(self, input_dim):
        n = self._gates * self.units
        self.kernel = self.add_weight("kernel", (input_dim, n),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, n),
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)

    def _add_bias(self, shape, initializer=None):
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", shape,
                                        initializer=initializer or self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)

    def build(self, input_shape):
        dims = _feature_dims(self, input_shape)
        if dims[-1] is None:
            raise ValueError("%s %s: the feature dimension of the inputs must be defined, got "
                             "shape %s." % (type(self).__name__, self.name, dims))
        self._build_kernels(dims[-1])
        self._add_bias((self._gates * self.units,))
        self.built = True

    def dropout_masks(self, inputs, states, training):
        """(input mask or None, recurrent mask or None) for one sequence."""
        if not layer_utils.training_flag(training):
            return None, None
        dp = _dropout_mask(inputs, self.dropout, self.seed) if self.dropout > 0 else None
        rec = (_dropout_mask(states[0], self.recurrent_dropout, self.seed)
               if self.recurrent_dropout > 0 else None)
        return dp, rec

    def get_initial_state(self, batch_size=None, dtype=None, inputs=None):
        """Zero states of shape (batch_size, state) for each state."""
        dtype = dtype or self.compute_dtype
        sizes = self.state_size if isinstance(self.state_size, (list, tuple)) else [
            self.state_size]
        return [ef.zeros([batch_size, n], dtype=dtype) for n in sizes]

    def call(self, inputs, states, training=None):
        """One step: returns ``(output, new_states)``."""
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        dp, rec = self.dropout_masks(inputs, states, training)
        return self.step(inputs, states, dp, rec)

    def _weights_in_compute_dtype(self):
        return (self._cast_compute(self.kernel), self._cast_compute(self.recurrent_kernel),
                self._cast_compute(self.bias))

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units,
                       "activation": activations.serialize(self.activation),
                       "use_bias": self.use_bias, "dropout": self.dropout,
                       "recurrent_dropout": self.recurrent_dropout, "seed": self.seed})
        wc = weight_config(self, "kernel", "recurrent", "bias")
        for kind in ("initializer", "regularizer", "constraint"):
            wc["recurrent_" + kind] = wc.pop("recurrent_" + kind)
        config.update(wc)
        return config


class SimpleRNNCell(_Cell):
    """One step of a fully connected RNN: ``h_t = activation(x_t W + h_{t-1} U + b)``.

    Args:
        units: State size.
        activation: Activation (default tanh).
        use_bias: Whether to add ``b``.
        kernel_initializer, recurrent_initializer, bias_initializer: Initializers
            (glorot_uniform, orthogonal, zeros).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: Regularizers.
        kernel_constraint, recurrent_constraint, bias_constraint: Constraints.
        dropout: Input dropout rate (training only).
        recurrent_dropout: State dropout rate (training only).
        seed: Optional int seed of the dropout masks.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> cell = layers.SimpleRNNCell(3)
        >>> out, states = cell(ef.ones([2, 4]), [ef.zeros([2, 3])])
        >>> out.shape
        TensorShape([2, 3])
    """

    def step(self, x, states, dp=None, rec=None):
        kernel, recurrent, bias = self._weights_in_compute_dtype()
        h = states[0]
        if dp is not None:
            x = x * dp
        if rec is not None:
            h = h * rec
        z = ef.matmul(x, kernel)
        if bias is not None:
            z = z + bias
        out = self.activation(z + ef.matmul(h, recurrent))
        return out, [out]


class LSTMCell(_Cell):
    """One LSTM step (see the module docstring); states are ``[h, c]``.

    Args:
        units: State size.
        activation: Activation phi (default tanh).
        recurrent_activation: Gate activation sigma (default sigmoid).
        use_bias: Whether to add ``b``.
        kernel_initializer, recurrent_initializer, bias_initializer: Initializers
            (glorot_uniform, orthogonal, zeros).
        unit_forget_bias: Initialize the forget gate's bias to ones (default True).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: Regularizers.
        kernel_constraint, recurrent_constraint, bias_constraint: Constraints.
        dropout: Input dropout rate (training only).
        recurrent_dropout: State dropout rate (training only).
        seed: Optional int seed of the dropout masks.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> cell = layers.LSTMCell(3)
        >>> out, (h, c) = cell(ef.ones([2, 4]), [ef.zeros([2, 3]), ef.zeros([2, 3])])
        >>> c.shape
        TensorShape([2, 3])
    """

    _gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(units, activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, kernel_regularizer,
                         recurrent_regularizer, bias_regularizer, kernel_constraint,
                         recurrent_constraint, bias_constraint, dropout, recurrent_dropout,
                         seed, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        return [self.units, self.units]

    def build(self, input_shape):
        dims = _feature_dims(self, input_shape)
        if dims[-1] is None:
            raise ValueError("LSTMCell %s: the feature dimension of the inputs must be "
                             "defined, got shape %s." % (self.name, dims))
        self._build_kernels(dims[-1])
        initializer = None
        if self.unit_forget_bias:
            base, units = self.bias_initializer, self.units

            def initializer(shape, dtype=None, **kwargs):
                return ef.concat([base((units,), dtype=dtype), ef.ones([units], dtype=dtype),
                                  base((2 * units,), dtype=dtype)], axis=0)
        self._add_bias((4 * self.units,), initializer)
        self.built = True

    def step(self, x, states, dp=None, rec=None):
        kernel, recurrent, bias = self._weights_in_compute_dtype()
        h, c = states[0], states[1]
        if dp is not None:
            x = x * dp
        if rec is not None:
            h = h * rec
        z = ef.matmul(x, kernel) + ef.matmul(h, recurrent)
        if bias is not None:
            z = z + bias
        zi, zf, zc, zo = ef.split(z, 4, axis=-1)
        i = self.recurrent_activation(zi)
        f = self.recurrent_activation(zf)
        o = self.recurrent_activation(zo)
        c = f * c + i * self.activation(zc)
        h = o * self.activation(c)
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update({"recurrent_activation": activations.serialize(self.recurrent_activation),
                       "unit_forget_bias": self.unit_forget_bias})
        return config


class GRUCell(_Cell):
    """One GRU step (see the module docstring).

    Args:
        units: State size.
        activation: Activation phi (default tanh).
        recurrent_activation: Gate activation sigma (default sigmoid).
        use_bias: Whether to use biases.
        kernel_initializer, recurrent_initializer, bias_initializer: Initializers
            (glorot_uniform, orthogonal, zeros).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: Regularizers.
        kernel_constraint, recurrent_constraint, bias_constraint: Constraints.
        dropout: Input dropout rate (training only).
        recurrent_dropout: State dropout rate (training only).
        reset_after: Apply the reset gate after the recurrent product (default True, the
            cuDNN-compatible form with separate input and recurrent biases).
        seed: Optional int seed of the dropout masks.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> cell = layers.GRUCell(3)
        >>> cell(ef.ones([2, 4]), [ef.zeros([2, 3])])[0].shape
        TensorShape([2, 3])
    """

    _gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, reset_after=True,
                 seed=None, **kwargs):
        super().__init__(units, activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, kernel_regularizer,
                         recurrent_regularizer, bias_regularizer, kernel_constraint,
                         recurrent_constraint, bias_constraint, dropout, recurrent_dropout,
                         seed, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    def build(self, input_shape):
        dims = _feature_dims(self, input_shape)
        if dims[-1] is None:
            raise ValueError("GRUCell %s: the feature dimension of the inputs must be defined, "
                             "got shape %s." % (self.name, dims))
        self._build_kernels(dims[-1])
        shape = (2, 3 * self.units) if self.reset_after else (3 * self.units,)
        self._add_bias(shape)
        self.built = True

    def step(self, x, states, dp=None, rec=None):
        kernel, recurrent, bias = self._weights_in_compute_dtype()
        h_prev = states[0]
        h = h_prev
        if dp is not None:
            x = x * dp
        if rec is not None:
            h = h * rec
        xz = ef.matmul(x, kernel)
        if self.reset_after:
            hz = ef.matmul(h, recurrent)
            if bias is not None:
                xz = xz + bias[0]
                hz = hz + bias[1]
            x_z, x_r, x_h = ef.split(xz, 3, axis=-1)
            r_z, r_r, r_h = ef.split(hz, 3, axis=-1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(x_h + r * r_h)
        else:
            if bias is not None:
                xz = xz + bias
            x_z, x_r, x_h = ef.split(xz, 3, axis=-1)
            u = self.units
            zr = ef.matmul(h, recurrent[:, :2 * u])
            z = self.recurrent_activation(x_z + zr[:, :u])
            r = self.recurrent_activation(x_r + zr[:, u:])
            hh = self.activation(x_h + ef.matmul(r * h, recurrent[:, 2 * u:]))
        out = z * h_prev + (1.0 - z) * hh
        return out, [out]

    def get_config(self):
        config = super().get_config()
        config.update({"recurrent_activation": activations.serialize(self.recurrent_activation),
                       "reset_after": self.reset_after})
        return config


class StackedRNNCells(Layer):
    """Cells applied one after another within each timestep; the states are the
    concatenation of every cell's states, first cell first.

    Args:
        cells: List of cells.
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> rnn = layers.RNN(layers.StackedRNNCells([layers.GRUCell(3), layers.GRUCell(2)]))
        >>> rnn(ef.ones([1, 4, 5])).shape
        TensorShape([1, 2])
    """

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        self.cells = list(cells)
        for cell in self.cells:
            if not hasattr(cell, "state_size") or not callable(getattr(cell, "call", None)):
                raise ValueError("StackedRNNCells: every cell needs `call` and `state_size`, "
                                 "got %r." % (cell,))

    @property
    def state_size(self):
        out = []
        for cell in self.cells:
            size = cell.state_size
            out.extend(size if isinstance(size, (list, tuple)) else [size])
        return out

    @property
    def output_size(self):
        return getattr(self.cells[-1], "output_size", self.cells[-1].state_size)

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        for cell in self.cells:
            cell.maybe_build(TensorShape(dims))
            out = cell.output_size
            dims = dims[:-1] + [out[0] if isinstance(out, (list, tuple)) else out]
        self.built = True

    def _splits(self, states):
        out, i = [], 0
        for cell in self.cells:
            n = len(cell.state_size) if isinstance(cell.state_size, (list, tuple)) else 1
            out.append(list(states[i:i + n]))
            i += n
        return out

    def dropout_masks(self, inputs, states, training):
        # A cell's input is known only inside the step: its masks are drawn at the first
        # step and kept in this per-sequence cache.
        return {"training": training, "masks": {}}, None

    def get_initial_state(self, batch_size=None, dtype=None, inputs=None):
        out = []
        for cell in self.cells:
            out.extend(cell.get_initial_state(batch_size=batch_size, dtype=dtype))
        return out

    def step(self, x, states, dp=None, rec=None):
        cache = dp if isinstance(dp, dict) else {"training": None, "masks": {}}
        new_states = []
        for i, (cell, cell_states) in enumerate(zip(self.cells, self._splits(states))):
            if hasattr(cell, "step"):
                if i not in cache["masks"]:
                    cache["masks"][i] = cell.dropout_masks(x, cell_states, cache["training"])
                x, s = cell.step(x, cell_states, *cache["masks"][i])
            else:
                x, s = cell(x, cell_states, training=cache["training"])
            new_states.extend(s if isinstance(s, (list, tuple)) else [s])
        return x, new_states

    def call(self, inputs, states, training=None):
        return self.step(inputs, list(states), {"training": training, "masks": {}}, None)

    def get_config(self):
        from eagerflow.keras import layers  # the name table: see eagerflow.keras

        config = super().get_config()
        config["cells"] = [layers.serialize(c) for c in self.cells]
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from eagerflow.keras import layers  # the name table: see eagerflow.keras

        config = dict(config)
        config["cells"] = [layers.deserialize(c, custom_objects) for c in config["cells"]]
        return cls(**config)
