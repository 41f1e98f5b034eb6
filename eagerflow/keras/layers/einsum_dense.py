"""``EinsumDense``: a dense layer whose contraction is any einsum equation.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layer = layers.EinsumDense("abc,cde->abde", output_shape=(None, 2, 8))
    >>> layer(ef.ones([4, 5, 16])).shape
    TensorShape([4, 5, 2, 8])
"""

from __future__ import annotations

import re

import eagerflow as ef
from eagerflow.keras import activations
from eagerflow.keras.layers.base import Layer
from eagerflow.keras.layers.core import weight_config, weight_options
from eagerflow.tensor_shape import TensorShape

__all__ = ["EinsumDense"]

_EQUATION = re.compile(r"^(\.\.\.)?([a-zA-Z]+),([a-zA-Z]+)->(\.\.\.)?([a-zA-Z]+)$")


def _parse(equation):
    if not isinstance(equation, str):
        raise TypeError("EinsumDense: equation must be a string like 'ab,bc->ac', got %r."
                        % (equation,))
    match = _EQUATION.match(equation.replace(" ", ""))
    if match is None:
        raise ValueError("EinsumDense: invalid equation %r. It must look like 'ab,bc->ac' "
                         "(two operands, one output), optionally with a leading '...' on the "
                         "input and output, e.g. '...b,bc->...c'." % (equation,))
    in_ell, in_spec, w_spec, out_ell, out_spec = match.groups()
    if bool(in_ell) != bool(out_ell):
        raise ValueError("EinsumDense: equation %r must elide ('...') both the input and the "
                         "output, or neither." % (equation,))
    return bool(in_ell), in_spec, w_spec, out_spec


class EinsumDense(Layer):
    """``y = activation(einsum(equation, x, kernel) + bias)``.

    The kernel's shape follows from the equation: each kernel letter takes its size from
    the input (if it appears there) or from the output. ``output_shape`` gives the sizes of
    the last output letters (the batch letter, and any letter found in the input, may be
    None). The bias spans the output axes from the first letter of ``bias_axes`` to the end,
    with size 1 on axes not in ``bias_axes``.

    Args:
        equation: E.g. ``"ab,bc->ac"`` or ``"...b,bc->...c"``.
        output_shape: Int or tuple: sizes of the trailing output axes.
        activation: Activation name or function.
        bias_axes: Output letters that get a bias (None: no bias).
        kernel_initializer, bias_initializer: Initializers.
        kernel_regularizer, bias_regularizer: Optional regularizers.
        activity_regularizer: Optional output regularizer.
        kernel_constraint, bias_constraint: Optional constraints.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: For a malformed equation, a kernel letter with no size, or a bias letter
            missing from the output.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.EinsumDense("ab,bc->ac", output_shape=3, bias_axes="c")(ef.ones([2, 4])).shape
        TensorShape([2, 3])
    """

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.equation = equation
        self._parsed = _parse(equation)
        if isinstance(output_shape, int):
            output_shape = (output_shape,)
        self.partial_output_shape = tuple(output_shape)
        out_spec = self._parsed[3]
        if len(self.partial_output_shape) > len(out_spec):
            raise ValueError("EinsumDense: output_shape %s has more entries than the output "
                             "%r of equation %r." % (output_shape, out_spec, equation))
        self.bias_axes = bias_axes
        if bias_axes:
            for letter in bias_axes:
                if letter not in out_spec:
                    raise ValueError("EinsumDense: bias axis %r is not in the output spec %r "
                                     "of equation %r." % (letter, out_spec, equation))
        self.activation = activations.get(activation)
        weight_options(self, "kernel", kernel_initializer, kernel_regularizer,
                       kernel_constraint)
        weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)

    def _sizes(self, input_shape):
        elided, in_spec, w_spec, out_spec = self._parsed
        dims = TensorShape(input_shape).as_list()
        lead = len(dims) - len(in_spec)
        if lead < 0 or (lead and not elided):
            raise ValueError("EinsumDense %s: input of rank %d does not match the input spec "
                             "%r of equation %r." % (self.name, len(dims), in_spec,
                                                     self.equation))
        size = {c: dims[lead + i] for i, c in enumerate(in_spec)}
        given = dict(zip(out_spec[len(out_spec) - len(self.partial_output_shape):],
                         self.partial_output_shape))
        out = []
        for c in out_spec:
            value = given.get(c)
            out.append(value if value is not None else size.get(c))
        for c, value in zip(out_spec, out):
            size.setdefault(c, value)
        kernel = []
        for c in w_spec:
            if size.get(c) is None:
                raise ValueError("EinsumDense %s: kernel dimension %r of equation %r has no "
                                 "known size in the input shape %s or output_shape %s."
                                 % (self.name, c, self.equation, dims,
                                    self.partial_output_shape))
            kernel.append(size[c])
        return dims[:lead] + out, kernel

    def build(self, input_shape):
        full_output, kernel_shape = self._sizes(input_shape)
        self.full_output_shape = tuple(full_output)
        self.kernel = self.add_weight("kernel", kernel_shape,
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = None
        if self.bias_axes:
            out_spec = self._parsed[3]
            first = min(out_spec.index(c) for c in self.bias_axes)
            offset = len(full_output) - len(out_spec)
            bias_shape = [full_output[offset + out_spec.index(c)] if c in self.bias_axes else 1
                          for c in out_spec[first:]]
            self.bias = self.add_weight("bias", bias_shape, initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        out = ef.einsum(self.equation, inputs, self._cast_compute(self.kernel))
        if self.bias is not None:
            out = out + self._cast_compute(self.bias)
        return self.activation(out)

    def compute_output_shape(self, input_shape):
        return TensorShape(self._sizes(input_shape)[0])

    def get_config(self):
        config = super().get_config()
        config.update({"equation": self.equation, "output_shape": self.partial_output_shape,
                       "activation": activations.serialize(self.activation),
                       "bias_axes": self.bias_axes})
        config.update(weight_config(self, "kernel", "bias"))
        return config
