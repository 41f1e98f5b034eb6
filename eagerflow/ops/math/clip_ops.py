"""Norm clipping: ``clip_by_norm``, ``clip_by_global_norm``, ``global_norm``.

All three are composites of primitives (no gradient rules of their own), with TF's
formulas:

* ``clip_by_norm(t, c)  = t * c / max(||t||, c)`` (the norm over ``axes``), with a
  where-guard so that the gradient at ``t = 0`` is finite;
* ``global_norm(ts)     = sqrt(sum_i ||t_i||^2)``;
* ``clip_by_global_norm(ts, c) = [t * c * min(1 / n, 1 / c) for t in ts]`` with
  ``n = global_norm(ts)``: an infinite or NaN norm turns every output into NaN, so a
  blown-up gradient is never silently applied.

Example:
    >>> import eagerflow as ef
    >>> ef.clip_by_norm(ef.constant([3.0, 4.0]), 1.0).numpy().tolist()
    [0.6000000238418579, 0.800000011920929]
"""

from __future__ import annotations

from collections.abc import Sequence

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.indexed_slices import IndexedSlices
from eagerflow.ops.math.arithmetic import SELECT, conj, greater, zeros_like_t
from eagerflow.ops.math.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["clip_by_norm", "clip_by_global_norm", "global_norm"]

EXPORTS = {
    "": ["clip_by_norm", "clip_by_global_norm"],
    "linalg": ["global_norm"],
}


def _tensor(t, dtype=None):
    if t.__class__ is Tensor and dtype is None:
        return t
    return convert_to_tensor(t, dtype=dtype)


def _values(t):
    """The dense values of a tensor, or the rows of IndexedSlices (as TF clips them)."""
    return _tensor(t.values if isinstance(t, IndexedSlices) else t)


def _like(original, values):
    if isinstance(original, IndexedSlices):
        return IndexedSlices(values, original.indices, original.dense_shape)
    return values


def _squared_norm(t, axes, keepdims):
    """sum(|t|^2) over ``axes`` in t's real dtype."""
    from eagerflow.ops.reduce import reductions
    squares = cast(t * conj(t), t.dtype.real_dtype) if t.dtype.is_complex else t * t
    return reductions.reduce_sum(squares, axes, keepdims=keepdims)


def _floating(t, op):
    if not (t.dtype.is_floating or t.dtype.is_complex):
        raise errors.InvalidArgumentError(
            None, op, "%s needs floating-point or complex tensors, got %s. Cast it first, e.g. "
            "eagerflow.cast(t, eagerflow.float32)." % (op, t.dtype.name))


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """Clips a tensor so that its L2 norm (over ``axes``) is at most ``clip_norm``.

    If the norm is already at most ``clip_norm`` the values are unchanged; otherwise they
    are scaled to ``t * clip_norm / norm``. With ``axes`` each slice along them is clipped
    separately (``axes=[1]`` clips each row of a matrix).

    Args:
        t: A floating-point (or complex) tensor, or IndexedSlices (clipped by the norm of
            their values; the result is IndexedSlices).
        clip_norm: A positive scalar (or a tensor broadcastable to the norm's shape).
        axes: The axes to compute the norm over (default: all), an int, list or 1-D tensor.
        name: Unused (TF compatibility).

    Returns:
        The clipped tensor, of t's shape and dtype.

    Raises:
        InvalidArgumentError: If t is not floating, or ``clip_norm`` does not broadcast to a
            shape that keeps t's shape.

    Example:
        >>> import eagerflow as ef
        >>> x = ef.constant([[3.0, 4.0], [0.3, 0.4]])
        >>> clipped = ef.clip_by_norm(x, 1.0, axes=[1]).numpy().tolist()
        >>> [[round(v, 3) for v in row] for row in clipped]
        [[0.6, 0.8], [0.3, 0.4]]
    """
    from eagerflow.ops.math import binary_math, unary_math

    original, t = t, _values(t)
    _floating(t, "clip_by_norm")
    real = t.dtype.real_dtype
    clip = _tensor(clip_norm, None if clip_norm.__class__ is Tensor else real)
    l2sum = _squared_norm(t, axes, keepdims=True)
    # Take the sqrt only where the sum is positive, so the gradient at t = 0 is not nan.
    positive = greater(l2sum, 0)
    safe = execute(SELECT, (positive, l2sum, zeros_like_t(l2sum) + 1))
    l2norm = execute(SELECT, (positive, unary_math.sqrt(safe), l2sum))
    scale = clip / binary_math.maximum(l2norm, clip)
    if t.dtype.is_complex:
        scale = cast(scale, t.dtype)
    out = t * scale
    if tuple(out.shape) != tuple(t.shape):
        raise errors.InvalidArgumentError(
            None, "clip_by_norm", "clip_by_norm: clip_norm of shape %s broadcasts t of shape "
            "%s to %s. Pass a scalar clip_norm (or one that broadcasts to the norm's shape)."
            % (list(clip.shape), list(t.shape), list(out.shape)))
    return _like(original, out)


def global_norm(t_list, name=None):
    """Computes the global L2 norm of several tensors: sqrt(sum of their squared norms).

    None entries are ignored. Unlike TF, tensors of different floating dtypes are accepted:
    their squared norms are added in the widest of those dtypes. An empty list (or only
    None) gives 0.

    Args:
        t_list: A list or tuple of tensors, IndexedSlices or None.
        name: Unused (TF compatibility).

    Returns:
        A scalar tensor.

    Raises:
        TypeError: If ``t_list`` is not a sequence.
        InvalidArgumentError: If an entry is not floating-point or complex.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.global_norm([ef.constant([3.0]), None, ef.constant([[4.0]])]).numpy()
        np.float32(5.0)
    """
    from eagerflow.ops.math import unary_math

    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError("global_norm: t_list should be a list or tuple of tensors, got %s."
                        % type(t_list).__name__)
    sums = []
    for t in t_list:
        if t is None:
            continue
        t = _values(t)
        _floating(t, "global_norm")
        sums.append(_squared_norm(t, None, keepdims=False))
    if not sums:
        return convert_to_tensor(0.0, dtype=d.float32)
    widest = max((s.dtype for s in sums), key=lambda dt: dt.size)
    total = None
    for s in sums:
        s = cast(s, widest)
        total = s if total is None else total + s
    return unary_math.sqrt(total)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales several tensors by one factor so that their global norm is at most clip_norm.

    Each ``t_list[i]`` becomes ``t_list[i] * clip_norm / max(global_norm, clip_norm)``;
    None entries stay None. If the global norm is inf or NaN every output is NaN (as in TF),
    which makes a diverged step visible instead of silently applying it.

    Args:
        t_list: A list or tuple of tensors, IndexedSlices or None.
        clip_norm: A positive scalar.
        use_norm: The global norm to use, if already computed (a scalar tensor).
        name: Unused (TF compatibility).

    Returns:
        ``(list_clipped, global_norm)``: the clipped tensors (a list, None where t_list has
        None) and the global norm used.

    Raises:
        TypeError: If ``t_list`` is not a sequence.

    Example:
        >>> import eagerflow as ef
        >>> clipped, norm = ef.clip_by_global_norm([ef.constant([6.0]), ef.constant([8.0])],
        ...                                        5.0)
        >>> [c.numpy().tolist() for c in clipped], norm.numpy()
        ([[3.0], [4.0]], np.float32(10.0))
    """
    from eagerflow.ops.math import binary_math

    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError("clip_by_global_norm: t_list should be a list or tuple of tensors, "
                        "got %s." % type(t_list).__name__)
    t_list = list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list)
    use_norm = _tensor(use_norm)
    clip = _tensor(clip_norm, None if clip_norm.__class__ is Tensor else use_norm.dtype)
    one = convert_to_tensor(1.0, dtype=use_norm.dtype)
    scale = clip * binary_math.minimum(one / use_norm, one / clip)
    # use_norm - use_norm is 0 for a finite norm and NaN for inf/NaN: it poisons the scale.
    scale = scale + (use_norm - use_norm)
    clipped = []
    for t in t_list:
        if t is None:
            clipped.append(None)
            continue
        v = _values(t)
        clipped.append(_like(t, v * cast(scale, v.dtype)))
    return clipped, use_norm
