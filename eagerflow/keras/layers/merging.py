"""Layers combining a list of tensors: Add, Subtract, Multiply, Average, Maximum, Minimum,
Concatenate, Dot, and their functional forms (``add([a, b])``...).

Elementwise merges broadcast their inputs (numpy rules) and combine masks with a logical AND.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> layers.Add()([ef.ones([2, 3]), ef.ones([2, 3])]).numpy()[0].tolist()
    [2.0, 2.0, 2.0]
"""

from __future__ import annotations

import string

import eagerflow as ef
from eagerflow.keras.layers.base import Layer
from eagerflow.tensor_shape import TensorShape

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "Dot",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate", "dot"]


def _broadcast_dims(a, b, layer):
    """numpy broadcasting of two static shapes (None where unknown)."""
    if a is None or b is None:
        return None
    out = []
    for x, y in zip(([1] * (len(b) - len(a)) + a), ([1] * (len(a) - len(b)) + b)):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(y if x is None else x)
        elif x == y:
            out.append(x)
        else:
            raise ValueError("%s: inputs have incompatible shapes. Received shapes %s and %s"
                             % (layer, tuple(a), tuple(b)))
    return out


def _as_list_of_shapes(input_shape, layer):
    if not isinstance(input_shape, (list, tuple)) or not input_shape or not all(
            isinstance(s, (TensorShape, list, tuple)) or s is None for s in input_shape):
        raise ValueError("A merge layer (%s) should be called on a list of inputs. Received: "
                         "input_shape=%s" % (layer, input_shape))
    if isinstance(input_shape, TensorShape):
        raise ValueError("A merge layer (%s) should be called on a list of inputs. Received: "
                         "input_shape=%s" % (layer, input_shape))
    return [TensorShape(s) for s in input_shape]


class _Merge(Layer):
    """Base of the elementwise merges: ``_merge(list_of_tensors) -> tensor``."""

    _min_inputs = 1

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _check_inputs(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError("A merge layer (%s) should be called on a list of inputs. "
                             "Received: inputs=%r (not a list)" % (self.name, inputs))
        if len(inputs) < self._min_inputs:
            raise ValueError("A merge layer (%s) should be called on a list of at least %d "
                             "input(s). Got %d inputs." % (self.name, self._min_inputs,
                                                         len(inputs)))

    def build(self, input_shape):
        shapes = _as_list_of_shapes(input_shape, self.name)
        if len(shapes) < self._min_inputs:
            raise ValueError("A merge layer (%s) should be called on a list of at least %d "
                             "input(s). Got %d inputs." % (self.name, self._min_inputs,
                                                         len(shapes)))
        self.compute_output_shape(shapes)
        self.built = True

    def __call__(self, *args, **kwargs):
        if args:
            self._check_inputs(args[0])
        return super().__call__(*args, **kwargs)

    def call(self, inputs):
        return self._merge(list(inputs))

    def compute_output_shape(self, input_shape):
        shapes = _as_list_of_shapes(input_shape, self.name)
        out = shapes[0].as_list() if shapes[0].rank is not None else None
        for s in shapes[1:]:
            out = _broadcast_dims(out, s.as_list() if s.rank is not None else None, self.name)
        return TensorShape(out)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)) or len(mask) != len(inputs):
            raise ValueError("%s: `mask` should be a list with one entry per input." % self.name)
        masks = [m for m in mask if m is not None]
        if not masks:
            return None
        out = masks[0]
        for m in masks[1:]:
            out = ef.logical_and(out, m)
        return out


class Add(_Merge):
    """Sum of the inputs: ``y = x_1 + ... + x_n``.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Add()([ef.constant([1.0]), ef.constant([2.0])]).numpy().tolist()
        [3.0]
    """

    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out


class Subtract(_Merge):
    """Difference of exactly two inputs: ``y = x_1 - x_2``.

    Raises:
        ValueError: Unless called on exactly two inputs.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Subtract()([ef.constant([3.0]), ef.constant([1.0])]).numpy().tolist()
        [2.0]
    """

    _min_inputs = 2

    def _check_inputs(self, inputs):
        super()._check_inputs(inputs)
        if len(inputs) != 2:
            raise ValueError("A `Subtract` layer (%s) should be called on exactly 2 inputs. "
                             "Received %d inputs." % (self.name, len(inputs)))

    def _merge(self, inputs):
        return inputs[0] - inputs[1]


class Multiply(_Merge):
    """Elementwise product of the inputs.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Multiply()([ef.constant([2.0]), ef.constant([3.0])]).numpy().tolist()
        [6.0]
    """

    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out * x
        return out


class Average(_Merge):
    """Elementwise mean of the inputs: ``(x_1 + ... + x_n) / n``.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Average()([ef.constant([1.0]), ef.constant([3.0])]).numpy().tolist()
        [2.0]
    """

    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out / float(len(inputs))


class Maximum(_Merge):
    """Elementwise maximum of the inputs.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Maximum()([ef.constant([1.0]), ef.constant([3.0])]).numpy().tolist()
        [3.0]
    """

    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = ef.maximum(out, x)
        return out


class Minimum(_Merge):
    """Elementwise minimum of the inputs.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Minimum()([ef.constant([1.0]), ef.constant([3.0])]).numpy().tolist()
        [1.0]
    """

    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = ef.minimum(out, x)
        return out


class Concatenate(_Merge):
    """Concatenates the inputs along ``axis``; all other axes must match.

    Args:
        axis: Concatenation axis (default -1).
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: If the shapes differ off the concatenation axis.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Concatenate()([ef.ones([2, 3]), ef.ones([2, 4])]).shape
        TensorShape([2, 7])
    """

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def _merge(self, inputs):
        return ef.concat(inputs, axis=self.axis)

    def compute_output_shape(self, input_shape):
        shapes = _as_list_of_shapes(input_shape, self.name)
        if any(s.rank is None for s in shapes):
            return TensorShape(None)
        rank = shapes[0].rank
        if any(s.rank != rank for s in shapes) or not -rank <= self.axis < rank:
            raise ValueError("A `Concatenate` layer (%s) requires inputs of the same rank with "
                             "axis=%d in range. Received: input_shape=%s"
                             % (self.name, self.axis, [tuple(s.as_list()) for s in shapes]))
        axis = self.axis % rank
        out = shapes[0].as_list()
        for s in shapes[1:]:
            dims = s.as_list()
            for i in range(rank):
                if i == axis:
                    out[i] = None if out[i] is None or dims[i] is None else out[i] + dims[i]
                elif out[i] is not None and dims[i] is not None and out[i] != dims[i]:
                    raise ValueError(
                        "A `Concatenate` layer (%s) requires inputs with matching shapes "
                        "except for the concatenation axis. Received: input_shape=%s"
                        % (self.name, [tuple(x.as_list()) for x in shapes]))
                elif out[i] is None:
                    out[i] = dims[i]
        return TensorShape(out)

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        masks = []
        for x, m in zip(inputs, mask):
            if m is None:
                masks.append(ef.ones_like(x, dtype=ef.bool))
            elif m.shape.rank < x.shape.rank:
                masks.append(ef.broadcast_to(ef.expand_dims(m, -1), ef.shape(x)))
            else:
                masks.append(m)
        return ef.reduce_any(ef.concat(masks, axis=self.axis), axis=-1)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


class Dot(_Merge):
    """Batched dot product of two inputs, contracting ``axes`` (per sample).

    For ``(b, n)`` inputs and ``axes=1``: ``y[b, 0] = sum_i x1[b, i] x2[b, i]``. For
    ``(b, n, d)`` and ``(b, m, d)`` with ``axes=2``: ``y[b, i, j] = sum_k x1[b, i, k]
    x2[b, j, k]``. With ``normalize=True`` both inputs are L2-normalized along the
    contracted axes first (cosine similarity).

    Args:
        axes: Int, or a pair of ints (one axis per input); axis 0 (batch) is not allowed.
        normalize: L2-normalize before the product.
        **kwargs: Base Layer arguments.

    Raises:
        ValueError: Unless called on two inputs whose contracted axes have equal sizes.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> layers.Dot(axes=1)([ef.constant([[1.0, 2.0]]), ef.constant([[3.0, 4.0]])]).numpy()
        array([[11.]], dtype=float32)
    """

    _min_inputs = 2

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axes, int):
            axes = (axes, axes)
        axes = tuple(int(a) for a in axes)
        if len(axes) != 2:
            raise ValueError("Dot: `axes` must be an int or a pair of ints, got %r." % (axes,))
        self.axes = axes
        self.normalize = bool(normalize)
        self.supports_masking = False

    def _check_inputs(self, inputs):
        super()._check_inputs(inputs)
        if len(inputs) != 2:
            raise ValueError("A `Dot` layer (%s) should be called on exactly 2 inputs. "
                             "Received %d inputs." % (self.name, len(inputs)))

    def _resolved_axes(self, ranks):
        axes = [a % r if a < 0 else a for a, r in zip(self.axes, ranks)]
        if 0 in axes:
            raise ValueError("Dot %s: cannot contract over axis 0 (the batch axis)." % self.name)
        return axes

    def _equation(self, r1, r2):
        a1, a2 = self._resolved_axes((r1, r2))
        letters = iter(string.ascii_lowercase[1:])
        s1 = ["a"] + [next(letters) for _ in range(r1 - 1)]
        s2 = ["a"] + [next(letters) for _ in range(r2 - 1)]
        s2[a2] = s1[a1]
        out = ["a"] + [c for i, c in enumerate(s1) if i not in (0, a1)] + [
            c for i, c in enumerate(s2) if i not in (0, a2)]
        return "%s,%s->%s" % ("".join(s1), "".join(s2), "".join(out)), len(out)

    def _merge(self, inputs):
        x1, x2 = inputs
        a1, a2 = self._resolved_axes((x1.shape.rank, x2.shape.rank))
        if self.normalize:
            x1 = ef.math.l2_normalize(x1, axis=a1)
            x2 = ef.math.l2_normalize(x2, axis=a2)
        equation, out_rank = self._equation(x1.shape.rank, x2.shape.rank)
        out = ef.einsum(equation, x1, x2)
        return ef.expand_dims(out, 1) if out_rank == 1 else out

    def compute_output_shape(self, input_shape):
        shapes = _as_list_of_shapes(input_shape, self.name)
        if len(shapes) != 2:
            raise ValueError("A `Dot` layer (%s) should be called on exactly 2 inputs."
                             % self.name)
        d1, d2 = shapes[0].as_list(), shapes[1].as_list()
        a1, a2 = self._resolved_axes((len(d1), len(d2)))
        if d1[a1] is not None and d2[a2] is not None and d1[a1] != d2[a2]:
            raise ValueError("Dot %s: incompatible input shapes: %s (axis %d) and %s (axis %d) "
                             "differ on the contracted axis." % (self.name, d1, a1, d2, a2))
        out = [d1[0]] + [d for i, d in enumerate(d1) if i not in (0, a1)] + [
            d for i, d in enumerate(d2) if i not in (0, a2)]
        return TensorShape(out if len(out) > 1 else out + [1])

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update({"axes": self.axes, "normalize": self.normalize})
        return config


def _functional(cls, doc):
    def merge(inputs, **kwargs):
        return cls(**kwargs)(inputs)

    merge.__name__ = cls.__name__.lower()
    merge.__doc__ = doc
    return merge


add = _functional(Add, """``Add()(inputs)``.

    Example:
        >>> from eagerflow.keras.layers.merging import add
        >>> import eagerflow as ef
        >>> add([ef.constant([1.0]), ef.constant([2.0])]).numpy().tolist()
        [3.0]
    """)
subtract = _functional(Subtract, "``Subtract()(inputs)`` (see Subtract).")
multiply = _functional(Multiply, "``Multiply()(inputs)`` (see Multiply).")
average = _functional(Average, "``Average()(inputs)`` (see Average).")
maximum = _functional(Maximum, "``Maximum()(inputs)`` (see Maximum).")
minimum = _functional(Minimum, "``Minimum()(inputs)`` (see Minimum).")


def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis)(inputs)``.

    Example:
        >>> from eagerflow.keras.layers.merging import concatenate
        >>> import eagerflow as ef
        >>> concatenate([ef.ones([1, 2]), ef.ones([1, 1])]).shape
        TensorShape([1, 3])
    """
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs, axes, normalize=False, **kwargs):
    """``Dot(axes, normalize)(inputs)``.

    Example:
        >>> from eagerflow.keras.layers.merging import dot
        >>> import eagerflow as ef
        >>> dot([ef.ones([1, 2]), ef.ones([1, 2])], axes=1).numpy().tolist()
        [[2.0]]
    """
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
