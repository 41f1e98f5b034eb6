"""Layer building blocks: bias_add, dropout and embedding_lookup.

bias_add adds a per-channel bias in either data format; dropout zeroes elements with
probability ``rate`` and scales the rest, drawing its mask with ``random.uniform`` (TF's
seed semantics); embedding_lookup gathers rows of a table or of its 'mod' partitions, with
an optional max-norm clip.
"""

from __future__ import annotations

import numbers

import numpy as np

from eagerflow.ops.math.arithmetic import floordiv, floormod, greater, greater_equal, zeros_like_t
from eagerflow.ops.math.cast import cast
from eagerflow.ops.array import join_ops, reshape_ops, shape_ops
from eagerflow.ops.indexing import gather_ops
from eagerflow.ops.math import binary_math, unary_math
from eagerflow.ops.reduce import reductions
from eagerflow.ops.nn import _fail, _tensor, _where
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["bias_add", "dropout", "embedding_lookup"]

EXPORTS = {
    "nn": ["bias_add", "dropout", "embedding_lookup"],
}


# ---------------------------------------------------------------------------------------
# bias_add.
# ---------------------------------------------------------------------------------------

def bias_add(value, bias, data_format=None, name=None):
    """Adds a 1-D ``bias`` to ``value`` along its channel dimension.

    The channel dimension is the last one for ``data_format`` None or ``"N...C"`` (NHWC),
    dimension 1 for ``"NC..."`` (NCHW). The gradient for bias is the sum over the other
    dimensions.

    Args:
        value: A Tensor of rank >= 2.
        bias: A 1-D Tensor of value's dtype, as long as the channel dimension.
        data_format: None, ``"N...C"`` or ``"NC..."`` (e.g. ``"NHWC"``, ``"NCHW"``).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of value's shape and dtype.

    Raises:
        InvalidArgumentError: If bias is not 1-D, its size does not match the channel
            dimension, value has rank < 2, the dtypes differ or data_format is unknown.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.bias_add([[1.0, 2.0]], [10.0, 20.0]).numpy().tolist()
        [[11.0, 22.0]]
    """
    op = "bias_add"
    value = _tensor(value)
    bias = _tensor(bias, value.dtype)
    channels_first = False
    if data_format is not None:
        fmt = data_format.decode() if isinstance(data_format, bytes) else str(data_format)
        if fmt.startswith("NC"):
            channels_first = True
        elif not (fmt.startswith("N") and fmt.endswith("C")):
            raise _fail(op, "data_format must be of the form `N...C` or `NC...`, got %r."
                        % (data_format,))
    if bias.dtype != value.dtype:
        raise _fail(op, "value and bias must have the same dtype, got %s and %s. Cast bias "
                    "with eagerflow.cast(bias, %s)."
                    % (value.dtype.name, bias.dtype.name, value.dtype.name))
    vshape, bshape = value.shape, bias.shape
    if bshape.rank is not None and bshape.rank != 1:
        raise _fail(op, "bias must be 1-D, got shape %s (value shape %s)." % (bshape, vshape))
    if vshape.rank is None:
        if channels_first:
            raise _fail(op, "NC... data_format needs value of known rank.")
        return value + bias
    if vshape.rank < 2:
        raise _fail(op, "value must be at least 2-D (a batch and a channel dimension), got "
                    "shape %s." % vshape)
    channel_axis = 1 if channels_first else -1
    channels, nbias = vshape[channel_axis], bshape[0] if bshape.rank else None
    if channels is not None and nbias is not None and channels != nbias:
        raise _fail(op, "Must provide as many biases as the channel dimension of the input "
                    "tensor: bias shape %s vs. value shape %s (data_format %s, channel "
                    "dimension %d)." % (bshape, vshape, data_format or "NHWC", channel_axis))
    if channels_first and vshape.rank > 2:
        bias = reshape_ops.reshape(bias, [-1] + [1] * (vshape.rank - 2))
    return value + bias


# ---------------------------------------------------------------------------------------
# Dropout and embeddings.
# ---------------------------------------------------------------------------------------

def _static_rate(rate):
    """The rate as a float when it is known now (a number or an eager tensor), else None."""
    if isinstance(rate, numbers.Real):
        return float(rate)
    if rate.__class__ is Tensor or isinstance(rate, np.ndarray):
        value = np.asarray(rate)
        if value.ndim:
            raise _fail("dropout", "rate must be a scalar, got shape %s." % list(value.shape))
        return float(value)
    return None


def _noise_shape(x, noise_shape):
    shape = x.shape.as_list() if x.shape.rank is not None else None
    if noise_shape is None:
        if shape is None or None in shape:
            return shape_ops.shape(x)
        return shape
    if hasattr(noise_shape, "as_list"):
        noise_shape = noise_shape.as_list()
    elif hasattr(noise_shape, "numpy"):
        noise_shape = np.asarray(noise_shape.numpy()).tolist()
    noise = [None if n is None else int(n) for n in noise_shape]
    if shape is not None and len(noise) == len(shape):
        noise = [s if n is None else n for n, s in zip(noise, shape)]
    if shape is not None:
        ok = len(noise) <= len(shape) and all(
            n == 1 or s is None or n == s for n, s in zip(noise[::-1], shape[::-1]))
        if not ok or None in noise:
            raise _fail("dropout", "noise_shape %s must broadcast to x's shape %s (each "
                        "dimension equal to x's or 1)." % (list(noise_shape), shape))
    return noise


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Sets elements to zero with probability ``rate`` and scales the rest by 1/(1 - rate).

    A uniform random tensor ``u`` of ``noise_shape`` (default: x's shape) is drawn with
    ``eagerflow.random.uniform``; elements with ``u >= rate`` are kept. Dropped elements are
    exactly 0 (TF multiplies by the mask, so a dropped inf gives NaN there; here it gives 0).

    Args:
        x: A floating Tensor.
        rate: The drop probability, a scalar in [0, 1) (number or Tensor).
        noise_shape: Shape of the keep/drop mask, broadcast against x (e.g. ``[n, 1]`` to
            drop whole rows); None entries take x's dimension.
        seed: Op-level seed, combined with the global seed as in TF.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of x's shape and dtype.

    Raises:
        InvalidArgumentError: If rate is not in [0, 1) or not a scalar, x is not floating,
            or noise_shape does not broadcast to x's shape.

    Example:
        >>> import eagerflow as ef
        >>> y = ef.nn.dropout(ef.constant(1.0, shape=[1000]), rate=0.5, seed=1)
        >>> sorted(set(y.numpy().tolist()))
        [0.0, 2.0]
    """
    op = "dropout"
    value = _static_rate(rate)
    if value is not None and not 0.0 <= value < 1.0:
        raise _fail(op, "rate must be a scalar tensor or a float in the range [0, 1), got %r."
                    % (value,))
    x = _tensor(x)
    if not x.dtype.is_floating:
        raise _fail(op, "x has to be a floating point tensor since it's going to be scaled. "
                    "Got a %s tensor instead." % x.dtype.name)
    if isinstance(rate, numbers.Real):
        if rate == 0:
            return x
        kept = x * (1.0 / (1.0 - float(rate)))
    else:
        rate = _tensor(rate)
        if rate.dtype != x.dtype:
            rate = cast(rate, x.dtype)
        kept = x / (1.0 - rate)
    from eagerflow.ops.random import random_stateful

    uniform = random_stateful.uniform(_noise_shape(x, noise_shape), dtype=x.dtype, seed=seed)
    keep = greater_equal(uniform, rate)
    return _where(keep, kept, zeros_like_t(kept))


def _mod_positions(params, ids):
    """Row of the concatenated partitions holding each id, under the 'mod' strategy.

    Id ``i`` is row ``i // p`` of partition ``i % p`` (p partitions), as in TF.
    """
    p = len(params)
    rows = []
    for k, part in enumerate(params):
        n = part.shape[0] if part.shape.rank else None
        if n is None:
            raise _fail("embedding_lookup", "partition %d has unknown or scalar shape %s; "
                        "each partition needs a known first dimension." % (k, part.shape))
        if part.shape[1:] != params[0].shape[1:]:
            raise _fail("embedding_lookup", "all partitions must have the same shape after "
                        "the first dimension, got %s and %s." % (params[0].shape, part.shape))
        rows.append(n)
    ids = _tensor(ids)
    if ids.__class__ is Tensor:
        flat = np.asarray(ids).ravel()
        if not ids.dtype.is_integer:
            raise _fail("embedding_lookup", "ids must be integers, got %s." % ids.dtype.name)
        if flat.size:
            part, row = flat % p, flat // p
            bad = (flat < 0) | (row >= np.asarray(rows)[part])
            if bad.any():
                i = int(flat[bad][0])
                raise _fail("embedding_lookup", "id %d is out of range: under the 'mod' "
                            "strategy it is row %d of partition %d, which has %d rows "
                            "(partition sizes %s)." % (i, i // p, i % p, rows[i % p], rows))
    offsets = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(ids.dtype.np_dtype)
    start = gather_ops.gather(convert_to_tensor(offsets), floormod(ids, p))
    return start + floordiv(ids, p)


def embedding_lookup(params, ids, max_norm=None, name=None):
    """Looks up rows of ``params`` (an embedding table) for the ids: ``gather(params, ids)``.

    ``params`` may be a list of partitions of the table, split with TF's 'mod' strategy:
    id ``i`` is row ``i // p`` of partition ``i % p``.

    Args:
        params: A Tensor (or variable) of shape ``[vocab, ...]``, or a list of partitions.
        ids: An int32/int64 Tensor of ids.
        max_norm: If given, each looked-up embedding with a larger L2 norm is scaled down to
            this norm.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``ids.shape + params.shape[1:]``.

    Raises:
        InvalidArgumentError: If an id is out of range or params is empty.

    Example:
        >>> import eagerflow as ef
        >>> table = ef.constant([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
        >>> ef.nn.embedding_lookup(table, [2, 0]).numpy().tolist()
        [[2.0, 2.0], [0.0, 0.0]]
    """
    gather = gather_ops.gather
    if isinstance(params, (list, tuple)):
        if not params:
            raise _fail("embedding_lookup", "params must be a tensor or a non-empty list of "
                        "tensors.")
        if len(params) == 1:
            out = gather(params[0], ids)
        else:
            parts = [_tensor(p) for p in params]
            out = gather(join_ops.concat(parts, 0), _mod_positions(parts, ids))
    else:
        out = gather(params, ids)
    if max_norm is None:
        return out
    return _clip_embeddings(out, _tensor(ids).shape.rank, max_norm)


def _clip_embeddings(values, ids_rank, max_norm):
    """Scales each embedding (the axes after the ids' axes) to an L2 norm <= max_norm."""
    rank = values.shape.rank
    axes = list(range(ids_rank, rank))
    squares = values * values
    l2sum = reductions.reduce_sum(squares, axes, keepdims=True) if axes else squares
    positive = greater(l2sum, 0)
    # sqrt only of positive sums, so the gradient at a zero embedding stays finite.
    l2norm = _where(positive, unary_math.sqrt(_where(positive, l2sum, l2sum + 1)), l2sum)
    return values * max_norm / binary_math.maximum(l2norm, max_norm)
