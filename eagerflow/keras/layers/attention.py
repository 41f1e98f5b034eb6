"""``MultiHeadAttention``: scaled dot-product attention with learned projections.

With query ``Q`` (batch, T, dq), value ``V`` (batch, S, dv) and key ``K`` (default ``V``),
for each head ``h``:

    q_h = Q Wq_h + bq_h,  k_h = K Wk_h + bk_h,  v_h = V Wv_h + bv_h
    A_h = softmax(q_h k_h^T / sqrt(key_dim) + (1 - mask) * (-1e9))       # (batch, T, S)
    O   = sum_h (dropout(A_h) v_h) Wo_h + bo

``A`` (before dropout) is what ``return_attention_scores`` returns, shaped
``(batch, num_heads, T, S)``. The mask combines ``attention_mask`` (batch, T, S), the Keras
masks of query/value/key (a query mask masks rows, value/key masks columns) and, with
``use_causal_mask``, the lower triangle ``i >= j``.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras import layers
    >>> mha = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    >>> mha(ef.ones([1, 3, 8]), ef.ones([1, 5, 8])).shape
    TensorShape([1, 3, 8])
"""

from __future__ import annotations

import math
import numbers
import string

import eagerflow as ef
from eagerflow.keras import constraints as constraints_lib
from eagerflow.keras import initializers as initializers_lib
from eagerflow.keras import regularizers as regularizers_lib
from eagerflow.keras.layers import layer_utils
from eagerflow.keras.layers.base import Layer, get_keras_mask, shapes_of
from eagerflow.keras.layers.einsum_dense import EinsumDense
from eagerflow.keras.layers.regularization import Dropout
from eagerflow.tensor_shape import TensorShape

__all__ = ["MultiHeadAttention"]

_LETTERS = string.ascii_lowercase


def _projection_equation(free_dims, bound_dims, output_dims):
    """``free+bound , bound+out -> free+out`` with the output letters as bias axes."""
    free = _LETTERS[:free_dims]
    bound = _LETTERS[free_dims:free_dims + bound_dims]
    out = _LETTERS[free_dims + bound_dims:free_dims + bound_dims + output_dims]
    return "%s%s,%s%s->%s%s" % (free, bound, bound, out, free, out), out


def _attention_equations(rank, attn_axes):
    """Einsum equations for scores and for combining values, for projected tensors of
    ``rank`` (batch, ..., heads, dim) attending over ``attn_axes``."""
    target = _LETTERS[:rank]
    batch_dims = [i for i in range(rank) if i not in attn_axes and i != rank - 1]
    source = ""
    offset = rank
    for i in range(rank):
        if i in batch_dims or i == rank - 1:
            source += target[i]
        else:
            source += _LETTERS[offset]
            offset += 1
    product = "".join([target[i] for i in batch_dims] + [target[i] for i in attn_axes]
                      + [source[i] for i in attn_axes])
    return ("%s,%s->%s" % (source, target, product), "%s,%s->%s" % (product, source, target),
            len(product))


class MultiHeadAttention(Layer):
    """Multi-head attention (see the module docstring for the math).

    Args:
        num_heads: Number of heads.
        key_dim: Size of each head for query and key.
        value_dim: Size of each head for value (default ``key_dim``).
        dropout: Dropout rate on the attention probabilities (training only).
        use_bias: Whether the projections have biases.
        output_shape: Size (int or tuple) of the output's last axes; default: the query's
            last dimension.
        attention_axes: Axes of the query/value (not counting batch and features) attention
            runs over; default all of them. Negative axes count from the query's last axis.
        kernel_initializer, bias_initializer: Initializers of the projections.
        kernel_regularizer, bias_regularizer: Optional regularizers.
        activity_regularizer: Optional output regularizer.
        kernel_constraint, bias_constraint: Optional constraints.
        seed: Optional int seed of the dropout.
        **kwargs: Base Layer arguments.

    Call arguments:
        query: ``(batch, T, dim)`` (or more axes with ``attention_axes``).
        value: ``(batch, S, dim)``.
        key: Optional ``(batch, S, dim)``; defaults to ``value``.
        attention_mask: Optional boolean ``(batch, T, S)``; True means "may attend".
        return_attention_scores: Also return the ``(batch, heads, T, S)`` probabilities.
        training: Enables the dropout.
        use_causal_mask: Forbid attending to later positions (``j > i``).

    Raises:
        ValueError: For non-positive sizes or a dropout outside [0, 1).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras import layers
        >>> mha = layers.MultiHeadAttention(2, 4)
        >>> out, scores = mha(ef.ones([1, 3, 8]), ef.ones([1, 3, 8]),
        ...                   return_attention_scores=True, use_causal_mask=True)
        >>> scores.shape
        TensorShape([1, 2, 3, 3])
    """

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 seed=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        name = "MultiHeadAttention"
        self.num_heads = layer_utils.check_positive_int(num_heads, "num_heads", name)
        self.key_dim = layer_utils.check_positive_int(key_dim, "key_dim", name)
        self.value_dim = (self.key_dim if value_dim is None else
                          layer_utils.check_positive_int(value_dim, "value_dim", name))
        self.dropout = layer_utils.check_rate(dropout, "dropout", name)
        self.use_bias = bool(use_bias)
        if isinstance(output_shape, numbers.Integral):
            output_shape = (int(output_shape),)
        self._output_shape = tuple(output_shape) if output_shape is not None else None
        if isinstance(attention_axes, numbers.Integral):
            attention_axes = (int(attention_axes),)
        self.attention_axes = tuple(attention_axes) if attention_axes is not None else None
        self.kernel_initializer = initializers_lib.get(kernel_initializer)
        self.bias_initializer = initializers_lib.get(bias_initializer)
        self.kernel_regularizer = regularizers_lib.get(kernel_regularizer)
        self.bias_regularizer = regularizers_lib.get(bias_regularizer)
        self.kernel_constraint = constraints_lib.get(kernel_constraint)
        self.bias_constraint = constraints_lib.get(bias_constraint)
        self.seed = seed
        self.supports_masking = True

    def _dense(self, equation, output_shape, bias_axes, name):
        return EinsumDense(
            equation, output_shape=output_shape, bias_axes=bias_axes if self.use_bias else None,
            kernel_initializer=_fresh(self.kernel_initializer),
            bias_initializer=_fresh(self.bias_initializer),
            kernel_regularizer=self.kernel_regularizer, bias_regularizer=self.bias_regularizer,
            kernel_constraint=self.kernel_constraint, bias_constraint=self.bias_constraint,
            name=name, dtype=self.dtype_policy)

    def build(self, query_shape, value_shape=None, key_shape=None):
        if value_shape is None and isinstance(query_shape, list):
            query_shape, value_shape, key_shape = (list(query_shape) + [None, None])[:3]
        query_shape = TensorShape(query_shape)
        value_shape = TensorShape(value_shape)
        key_shape = TensorShape(key_shape) if key_shape is not None else value_shape
        q_rank = query_shape.rank
        heads = [self.num_heads, self.key_dim]
        eq, bias = _projection_equation(q_rank - 1, 1, 2)
        self._query_dense = self._dense(eq, [None] * (q_rank - 2) + heads, bias, "query")
        self._query_dense.maybe_build(query_shape)
        eq, bias = _projection_equation(key_shape.rank - 1, 1, 2)
        self._key_dense = self._dense(eq, [None] * (key_shape.rank - 2) + heads, bias, "key")
        self._key_dense.maybe_build(key_shape)
        eq, bias = _projection_equation(value_shape.rank - 1, 1, 2)
        self._value_dense = self._dense(
            eq, [None] * (value_shape.rank - 2) + [self.num_heads, self.value_dim], bias,
            "value")
        self._value_dense.maybe_build(value_shape)

        rank = q_rank + 1
        if self.attention_axes is None:
            self._attn_axes = tuple(range(1, rank - 2))
        else:
            self._attn_axes = tuple(a % (q_rank - 1) if a < 0 else a
                                    for a in self.attention_axes)
            if any(not 1 <= a < rank - 2 for a in self._attn_axes):
                raise ValueError("MultiHeadAttention %s: attention_axes %s must name non-batch, "
                                 "non-feature axes of the query (rank %d)."
                                 % (self.name, self.attention_axes, q_rank))
        self._dot_equation, self._combine_equation, scores_rank = _attention_equations(
            rank, self._attn_axes)
        self._softmax_axes = list(range(scores_rank - len(self._attn_axes), scores_rank))
        out_dims = list(self._output_shape) if self._output_shape else [query_shape[-1]]
        eq, bias = _projection_equation(q_rank - 1, 2, len(out_dims))
        self._output_dense = self._dense(eq, [None] * (q_rank - 2) + out_dims, bias,
                                         "attention_output")
        self._output_dense.maybe_build(
            TensorShape(query_shape.as_list()[:-1] + [self.num_heads, self.value_dim]))
        self._dropout_layer = Dropout(self.dropout, seed=self.seed, dtype=self.dtype_policy)
        self.built = True

    def _build_input_shape(self, inputs, args, kwargs):
        value = args[0] if args else kwargs.get("value")
        key = args[1] if len(args) > 1 else kwargs.get("key")
        return [shapes_of(inputs), shapes_of(value), shapes_of(key) if key is not None
                else None]

    # -- masks ----------------------------------------------------------------------------------
    def _attention_mask(self, query, value, key, query_mask, value_mask, key_mask,
                        attention_mask, use_causal_mask):
        query_mask = query_mask if query_mask is not None else get_keras_mask(query)
        value_mask = value_mask if value_mask is not None else get_keras_mask(value)
        key_mask = key_mask if key_mask is not None else (
            get_keras_mask(key) if key is not None else None)
        auto = None
        if query_mask is not None:
            auto = ef.expand_dims(ef.cast(query_mask, ef.bool), -1)  # (B, T, 1)
        for m in (value_mask, key_mask):
            if m is not None:
                m = ef.expand_dims(ef.cast(m, ef.bool), -2)  # (B, 1, S)
                auto = m if auto is None else ef.logical_and(auto, m)
        if use_causal_mask:
            t, s = query.shape[1], value.shape[1]
            causal = ef.greater_equal(ef.reshape(ef.range(t), [1, t, 1]),
                                      ef.reshape(ef.range(s), [1, 1, s]))
            auto = causal if auto is None else ef.logical_and(auto, causal)
        if attention_mask is not None:
            attention_mask = ef.cast(attention_mask, ef.bool)
            if auto is not None:
                attention_mask = ef.logical_and(attention_mask, auto)
        else:
            attention_mask = auto
        return attention_mask

    def _masked_softmax(self, scores, mask):
        if mask is not None:
            expand_at = -len(self._attn_axes) * 2 - 1
            while mask.shape.rank < scores.shape.rank:
                mask = ef.expand_dims(mask, expand_at)
            big = -3e4 if scores.dtype == ef.float16 else -1e9
            scores = scores + (1.0 - ef.cast(mask, scores.dtype)) * big
        if len(self._softmax_axes) == 1:
            return ef.nn.softmax(scores, axis=self._softmax_axes[0])
        return ef.exp(scores - ef.reduce_logsumexp(scores, axis=self._softmax_axes,
                                                   keepdims=True))

    # -- call -----------------------------------------------------------------------------------
    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        mask = self._attention_mask(query, value, key, query_mask, value_mask, key_mask,
                                    attention_mask, use_causal_mask)
        if key is None:
            key = value
        q = self._query_dense(query)
        k = self._key_dense(key)
        v = self._value_dense(value)
        q = q * (1.0 / math.sqrt(float(self.key_dim)))
        scores = ef.einsum(self._dot_equation, k, q)
        scores = self._masked_softmax(scores, mask)
        probs = self._dropout_layer(scores, training=training)
        out = ef.einsum(self._combine_equation, probs, v)
        out = self._output_dense(out)
        if return_attention_scores:
            return out, scores
        return out

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        if value_shape is None and isinstance(query_shape, list) and query_shape and not \
                isinstance(query_shape[0], (int, type(None))):
            query_shape = query_shape[0]
        dims = TensorShape(query_shape).as_list()
        if self._output_shape:
            return TensorShape(dims[:-1] + list(self._output_shape))
        return TensorShape(dims)

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self.num_heads, "key_dim": self.key_dim,
            "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
            "output_shape": self._output_shape, "attention_axes": self.attention_axes,
            "kernel_initializer": initializers_lib.serialize(self.kernel_initializer),
            "bias_initializer": initializers_lib.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers_lib.serialize(self.kernel_regularizer),
            "bias_regularizer": regularizers_lib.serialize(self.bias_regularizer),
            "kernel_constraint": constraints_lib.serialize(self.kernel_constraint),
            "bias_constraint": constraints_lib.serialize(self.bias_constraint),
            "seed": self.seed})
        return config


def _fresh(initializer):
    """A copy of a serializable initializer (each projection draws its own values)."""
    if hasattr(initializer, "get_config") and hasattr(type(initializer), "from_config"):
        return type(initializer).from_config(initializer.get_config())
    return initializer
