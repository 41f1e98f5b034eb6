"""Reductions built from the reduction primitives: reduce_logsumexp, reduce_variance,
reduce_std, reduce_euclidean_norm and count_nonzero.

These are plain functions of primitives and take their gradients from them.
"""

from __future__ import annotations

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.math.arithmetic import SELECT, conj, not_equal, zeros_like_t
from eagerflow.ops.math.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.reduce import _normalize_axes, _with_rank
from eagerflow.ops.reduce.reductions import MAX, MEAN, SUM, _reduce
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = [
    "reduce_logsumexp", "reduce_variance", "reduce_std", "reduce_euclidean_norm", "count_nonzero",
]

EXPORTS = {
    "": ["reduce_logsumexp"],
    "math": ["reduce_logsumexp", "reduce_variance", "reduce_std", "reduce_euclidean_norm",
             "count_nonzero"],
}


def _as_tensor(x):
    return x if x.__class__ is Tensor else convert_to_tensor(x)


def _squeeze_kept(t, axis, keepdims):
    """Drops the length-1 reduced axes of a keepdims result (a sum over size-1 axes)."""
    if keepdims:
        return t
    return execute(SUM, (t,), {"axis": axis, "keepdims": False})


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """Computes log(sum(exp(x))) across dimensions, without overflow or underflow.

    The maximum along the axes is subtracted before exponentiating (a non-finite maximum is
    replaced by 0, so all -inf gives -inf and +inf gives +inf).

    Args:
        input_tensor: A floating-point tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor.

    Raises:
        InvalidArgumentError: If an axis is out of range or the dtype is not floating.

    Example:
        >>> import eagerflow as ef
        >>> round(float(ef.reduce_logsumexp(ef.constant([1000.0, 1000.0]))), 2)
        1000.69
    """
    from eagerflow.ops.math import unary_math

    x, rank = _with_rank(input_tensor)
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(
            None, "reduce_logsumexp", "reduce_logsumexp needs a floating-point input, got %s. "
            "Cast it first, e.g. eagerflow.cast(x, eagerflow.float32)." % x.dtype.name)
    attrs = {"axis": None if axis is None else _normalize_axes(axis, rank, "reduce_logsumexp"),
             "keepdims": True}
    raw_max = execute(MAX, (x,), attrs)
    shift = execute(SELECT, (unary_math.is_finite(raw_max), raw_max, zeros_like_t(raw_max)))
    total = execute(SUM, (unary_math.exp(x - shift),), attrs)
    out = unary_math.log(total) + shift
    return _squeeze_kept(out, attrs["axis"], bool(keepdims))


def _variance(x, axis, keepdims, op):
    x, rank = _with_rank(x)
    dt = x.dtype
    if not (dt.is_floating or dt.is_complex):
        raise errors.InvalidArgumentError(
            None, op, "%s: input must be either real or complex, got %s. Cast it first, e.g. "
            "eagerflow.cast(x, eagerflow.float32)." % (op, dt.name))
    axes = None if axis is None else _normalize_axes(axis, rank, op)
    mean = execute(MEAN, (x,), {"axis": axes, "keepdims": True})
    diff = x - mean
    if dt.is_complex:
        squared = cast(diff * conj(diff), dt.real_dtype)  # |diff|^2, the real part
    else:
        squared = diff * diff
    return execute(MEAN, (squared,), {"axis": axes, "keepdims": bool(keepdims)})


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the (population) variance of elements across dimensions.

    For complex inputs the result is the mean of ``|x - mean|^2`` in the real dtype.

    Args:
        input_tensor: A floating-point or complex tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor (real dtype).

    Raises:
        InvalidArgumentError: If the input is an integer tensor or an axis is bad.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.reduce_variance(ef.constant([[1.0, 2.0], [3.0, 4.0]])).numpy()
        np.float32(1.25)
    """
    return _variance(input_tensor, axis, keepdims, "reduce_variance")


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Computes the (population) standard deviation of elements across dimensions.

    Args:
        input_tensor: A floating-point or complex tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor (real dtype).

    Raises:
        InvalidArgumentError: If the input is an integer tensor or an axis is bad.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.reduce_std(ef.constant([1.0, 3.0])).numpy()
        np.float32(1.0)
    """
    from eagerflow.ops.math import unary_math

    return unary_math.sqrt(_variance(input_tensor, axis, keepdims, "reduce_std"))


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """Computes sqrt(sum(|x|^2)) across dimensions.

    As in TF, an integer input gives an integer result (the root truncated toward zero),
    and a complex input a complex result.

    Args:
        input_tensor: A numeric tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1.
        name: Unused (TF compatibility).

    Returns:
        The reduced tensor, of the input's dtype.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.reduce_euclidean_norm(ef.constant([3.0, 4.0])).numpy()
        np.float32(5.0)
        >>> ef.math.reduce_euclidean_norm(ef.constant([[1, 2, 3], [1, 1, 1]])).numpy()
        np.int32(4)
    """
    from eagerflow.ops.math import unary_math

    x, rank = _with_rank(input_tensor)
    dt = x.dtype
    axes = None if axis is None else _normalize_axes(axis, rank, "reduce_euclidean_norm")
    attrs = {"axis": axes, "keepdims": bool(keepdims)}
    if dt.is_integer:
        total = execute(SUM, (x * x,), attrs)
        return cast(unary_math.sqrt(cast(total, "float64")), dt)
    squared = x * conj(x) if dt.is_complex else x * x
    return unary_math.sqrt(execute(SUM, (squared,), attrs))


def count_nonzero(input, axis=None, keepdims=None, dtype=d.int64, name=None):  # noqa: A002
    """Counts the nonzero elements (True for bool) across dimensions.

    Args:
        input: A numeric or bool tensor.
        axis: None (all axes), an int, or a list/tuple/1-D tensor of ints.
        keepdims: If true, keeps the reduced dimensions with length 1 (None means False).
        dtype: The output dtype (default int64).
        name: Unused (TF compatibility).

    Returns:
        The counts, of ``dtype``.

    Raises:
        InvalidArgumentError: If an axis is out of range or repeated.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.count_nonzero(ef.constant([[0, 1], [2, 3]]), axis=1).numpy().tolist()
        [1, 2]
    """
    x = _as_tensor(input)
    counts = _reduce(SUM, "count_nonzero", cast(not_equal(x, 0), d.int64), axis, keepdims)
    return cast(counts, dtype)
