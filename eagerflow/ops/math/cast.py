"""Dtype conversion: ``cast``, ``saturate_cast``, ``bitcast``.

Example:
    >>> import eagerflow as ef
    >>> ef.cast(ef.constant([1.7, -1.7]), ef.int32).numpy().tolist()
    [1, -1]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, unary_samples
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import convert_to_tensor
from eagerflow.ops.family import GPU_ANY


def _cast_kernel(xp):
    def kernel(x, *, dtype):
        target = d.as_dtype(dtype).np_dtype
        if x.dtype.kind == "c" and target.kind != "c":
            x = x.real  # TF drops the imaginary part
        with np.errstate(all="ignore"):
            return x.astype(target, copy=False)
    return kernel


def _cast_vjp(g, x, out, *, dtype):
    src = x.dtype
    if not (src.is_floating or src.is_complex):
        return None
    if not (d.as_dtype(dtype).is_floating or d.as_dtype(dtype).is_complex):
        return None
    return execute(CAST, (g,), {"dtype": src.name})


def _cast_reference(x, *, dtype):
    if np.iscomplexobj(x) and not d.as_dtype(dtype).is_complex:
        x = x.real
    with np.errstate(all="ignore"):
        return x.astype(d.as_dtype(dtype).np_dtype)


def _cast_samples(rng, dtype):
    base = unary_samples((-3.0, 3.0))(rng, dtype)
    return [(args, {"dtype": target}) for args, _ in base
            for target in ("float32", "int32", "float64", "bool")]


def _cast_grad_samples(rng):
    # Finite differences need full precision: casts to narrower floats are checked in the
    # reference sweep; here the rule is checked on float64 -> float64/complex128.
    x = rng.uniform(-3, 3, size=(2, 3))
    return [((x,), {"dtype": "float64"}), ((x,), {"dtype": "complex128"})]


CAST = registry.primitive(
    "Cast", _cast_kernel, dtypes=ALL, vjp=_cast_vjp, saves=(0,), reference=_cast_reference,
    samples=_cast_samples, grad_samples=_cast_grad_samples,
    sweep_dtypes=(d.float32, d.float64, d.int32),
    shape_fn=lambda x, *, dtype: AbstractValue(x.shape, d.as_dtype(dtype)), family="math",
    gpu_expr=(GPU_ANY, None))
CAST.elementwise = True


def cast(x, dtype, name=None):
    """Casts a tensor to a new dtype.

    Floats cast to integers truncate toward zero; complex to real keeps the real part, as in
    TF. Casting to the tensor's own dtype returns it unchanged.

    Args:
        x: A Tensor or convertible value.
        dtype: The target dtype.
        name: Unused.

    Returns:
        A Tensor of ``dtype`` with x's shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.cast([True, False], ef.float32).numpy().tolist()
        [1.0, 0.0]
    """
    dtype = d.as_dtype(dtype)
    current = getattr(x, "dtype", None)
    if current is dtype and hasattr(x, "_value"):
        return x
    if dtype is d.string or current is d.string:
        return _cast_string(x, dtype)
    return execute(CAST, (x,), {"dtype": dtype.name})


def _cast_string(x, dtype):
    """TF's rule: a string casts only to string; numbers and strings convert by parsing."""
    x = convert_to_tensor(x) if not hasattr(x, "dtype") else x
    if x.dtype is dtype:
        return x
    raise errors.UnimplementedError(
        None, "Cast", "Cast %s to %s is not supported: use eagerflow.strings.to_number to "
        "parse strings and eagerflow.strings.as_string to format numbers."
        % (x.dtype.name, dtype.name))


def saturate_cast(value, dtype, name=None):
    """Casts, clamping values to the target dtype's range first (no wrap-around).

    A float bound the source dtype cannot hold exactly is rounded inwards: a float32 3e9
    saturates to int32 as 2147483520, the largest float32 below 2**31 (as TF). To int64,
    values past the range saturate to the largest float below 2**63 (TF 2.21 wraps them
    to -2**63 instead).

    Example:
        >>> import eagerflow as ef
        >>> ef.saturate_cast(ef.constant([300.0, -5.0]), ef.uint8).numpy().tolist()
        [255, 0]
    """
    from eagerflow.ops.math import arithmetic

    dtype = d.as_dtype(dtype)
    value = execute(CAST, (value,), {"dtype": value.dtype.name}) if hasattr(value, "dtype") \
        else value
    from eagerflow.tensor import convert_to_tensor

    value = convert_to_tensor(value)
    if value.dtype.is_floating or value.dtype.is_integer:
        lo, hi = dtype.min, dtype.max
        src = value.dtype
        if src.is_integer:
            lo, hi = max(lo, src.min), min(hi, src.max)
        lo_t = convert_to_tensor(_bound(lo, src, np.inf), dtype=src)
        hi_t = convert_to_tensor(_bound(hi, src, -np.inf), dtype=src)
        value = arithmetic.where(arithmetic.less(value, lo_t), lo_t, value)
        value = arithmetic.where(arithmetic.greater(value, hi_t), hi_t, value)
    return cast(value, dtype)


def _bound(limit, src, inward):
    """``limit`` as a value of ``src``, rounded towards ``inward`` when ``src`` cannot hold it
    exactly: int32's max in float32 rounds up to 2**31, which would overflow the cast, so
    the bound is the largest float32 below it (2147483520), as in TF."""
    if not src.is_floating:
        return limit
    value = np.asarray(limit, dtype=src.np_dtype)
    if (inward < 0 and float(value) > limit) or (inward > 0 and float(value) < limit):
        value = np.nextafter(value, np.asarray(inward, dtype=src.np_dtype))
    return value


def _bitcast_kernel(xp):
    def kernel(x, *, dtype):
        target = d.as_dtype(dtype).np_dtype
        if target.itemsize == x.dtype.itemsize:
            return x.view(target)
        if target.itemsize < x.dtype.itemsize:
            return xp.ascontiguousarray(x).view(target).reshape(
                x.shape + (x.dtype.itemsize // target.itemsize,))
        ratio = target.itemsize // x.dtype.itemsize
        if not x.shape or x.shape[-1] != ratio:
            raise errors.InvalidArgumentError(
                None, "Bitcast", "Bitcast from %s to %s needs a last dimension of %d, got "
                "shape %s" % (x.dtype, target, ratio, list(x.shape)))
        return xp.ascontiguousarray(x).view(target).reshape(x.shape[:-1])
    return kernel


BITCAST = registry.primitive(
    "Bitcast", _bitcast_kernel, dtypes=ALL, family="math",
    reference=lambda x, *, dtype: np.ascontiguousarray(x).view(d.as_dtype(dtype).np_dtype),
    samples=lambda rng, dtype: [((rng.uniform(-3, 3, size=(4,)).astype(dtype.np_dtype),),
                                 {"dtype": dtype.name})],
)


def bitcast(input, type, name=None):  # noqa: A002 - TF's argument names
    """Reinterprets the bytes of a tensor as another dtype (no data change)."""
    return execute(BITCAST, (input,), {"dtype": d.as_dtype(type).name})

__all__ = ["cast", "saturate_cast", "bitcast"]
EXPORTS = {"": ["cast", "saturate_cast", "bitcast"], "dtypes": ["cast", "saturate_cast"]}


d.register_function("cast", cast)  # tf.dtypes.cast
d.register_function("saturate_cast", saturate_cast)
