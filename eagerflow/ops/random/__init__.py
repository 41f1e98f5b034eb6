"""Helpers shared by the stateful and stateless random modules: kernels run on the host,
shape and dtype attrs, and argument handling of the public functions.

Kernels make their bits with numpy on the host and copy the result to the op's device
(``_host_kernel``), so every device produces the numbers the CPU does.
"""

from __future__ import annotations

import operator

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.registry import AbstractValue

__all__ = []

EXPORTS = {}


# ---------------------------------------------------------------------------------------
# Kernels: bits on the host, result copied to the device
# ---------------------------------------------------------------------------------------


def _host_kernel(fn):
    """A kernel factory running ``fn`` on numpy arrays whatever the device.

    On a GPU the inputs are copied to the host and the result back, so every device
    produces the numbers the CPU does.
    """

    def factory(xp):
        if not xp.is_gpu:
            return fn

        def kernel(*arrays, **attrs):
            out = fn(*[xp.to_numpy(a) for a in arrays], **attrs)
            if isinstance(out, tuple):
                return tuple(xp.asarray(o) for o in out)
            return xp.asarray(out)

        return kernel

    return factory


def _size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _invalid(message):
    return errors.InvalidArgumentError(None, None, message)


def _check_int_bounds(lo, hi):
    if lo.ndim or hi.ndim:
        raise _invalid("minval and maxval must be scalars (0-D), got shapes %s and %s"
                       % (list(lo.shape), list(hi.shape)))
    if not lo < hi:
        raise _invalid("Need minval < maxval, got %s >= %s: integers are drawn from "
                       "[minval, maxval), which is empty." % (lo, hi))


def _check_logits(logits, num_samples):
    if logits.ndim != 2:
        raise _invalid("logits must be a matrix [batch_size, num_classes], got shape %s"
                       % list(logits.shape))
    if logits.shape[1] == 0 and logits.shape[0] * num_samples:
        raise _invalid("logits has 0 classes; it needs at least one column")


# ---------------------------------------------------------------------------------------
# Dtypes, shapes and samples of the primitives
# ---------------------------------------------------------------------------------------

_UNIFORM_DTYPES = (d.float16, d.bfloat16, d.float32, d.float64)
_INT_DTYPES = (d.int32, d.int64)
_FULL_INT_DTYPES = (d.int32, d.int64, d.uint32, d.uint64)
_SAMPLE_SHAPES = [(), (0,), (1,), (5,), (2, 3), (3, 1, 2), (9,)]


def _creation_shape(*avals, shape, dtype, **attrs):
    return AbstractValue(shape, dtype)


def _bad_shape_samples(attrs):
    def bad(rng):
        return [((), dict(attrs, shape=(-1, 2)), errors.InvalidArgumentError)]
    return bad


def _validated_shape(kernel):
    """Wraps a kernel so a negative dimension in its ``shape`` attr is a clear error."""

    def checked(*arrays, shape, **attrs):
        if any(s < 0 for s in shape):
            raise _invalid("shape %s has a negative dimension; every dimension must be >= 0"
                           % list(shape))
        return kernel(*arrays, shape=shape, **attrs)

    return checked


def _multinomial_shape(logits, *seed, num_samples, output_dtype, **attrs):
    batch = None if logits.shape is None else logits.shape[0]
    return AbstractValue((batch, num_samples), output_dtype)


# ---------------------------------------------------------------------------------------
# Argument handling of the public functions
# ---------------------------------------------------------------------------------------


def _shape_attr(shape, op_name):
    """A shape argument as a tuple of non-negative ints (a bare int is refused, as in TF)."""
    from eagerflow.ops.array import int_tuple

    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        raise errors.InvalidArgumentError(
            None, op_name, "%s: shape must be a 1-D list of dimensions, got the scalar %d. "
            "Write [%d] for a vector." % (op_name, shape, shape))
    if isinstance(shape, (list, tuple)) and any(
            isinstance(s, (float, np.floating)) for s in shape):
        raise errors.InvalidArgumentError(
            None, op_name, "%s: shape must be a list of ints, got %s."
            % (op_name, errors.short_repr(shape)))
    dims = int_tuple(shape, op_name)
    if any(s is not None and s < 0 for s in dims):  # None: checked when the graph runs
        raise errors.InvalidArgumentError(
            None, op_name, "%s: shape %s has a negative dimension; every dimension must be "
            ">= 0." % (op_name, list(dims)))
    return dims


def _dtype_in(dtype, allowed, op_name):
    dtype = d.as_dtype(dtype)
    if dtype not in allowed:
        raise errors.InvalidArgumentError(
            None, op_name, "%s: invalid dtype %s; supported: %s." % (
                op_name, dtype.name, ", ".join(t.name for t in allowed)))
    return dtype


def _is_python_value(x, value):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == value


def _scale_shift(rnd, stddev, mean, dtype):
    """``rnd * stddev + mean`` in ``dtype``, skipped when they are the plain defaults."""
    if _is_python_value(stddev, 1) and _is_python_value(mean, 0):
        return rnd
    from eagerflow.ops.math import arithmetic
    from eagerflow.tensor import convert_to_tensor

    stddev = convert_to_tensor(stddev, dtype=dtype)
    mean = convert_to_tensor(mean, dtype=dtype)
    return arithmetic.add(arithmetic.multiply(rnd, stddev), mean)


def _stretch(rnd, minval, maxval, dtype):
    """Maps [0, 1) values to [minval, maxval) the way TF's uniform does."""
    from eagerflow.ops.math import arithmetic
    from eagerflow.tensor import convert_to_tensor

    minval_is_zero = isinstance(minval, int) and minval == 0
    maxval_is_one = isinstance(maxval, int) and maxval == 1
    if minval_is_zero and maxval_is_one:
        return rnd
    maxval = convert_to_tensor(maxval, dtype=dtype)
    if minval_is_zero:
        return arithmetic.multiply(rnd, maxval)
    minval = convert_to_tensor(minval, dtype=dtype)
    return arithmetic.add(arithmetic.multiply(rnd, arithmetic.subtract(maxval, minval)), minval)


def _num_samples(num_samples, op_name):
    if hasattr(num_samples, "numpy"):
        num_samples = num_samples.numpy()
    try:
        n = operator.index(num_samples)
    except TypeError:
        raise errors.InvalidArgumentError(
            None, op_name, "%s: num_samples must be an integer, got %s"
            % (op_name, errors.short_repr(num_samples))) from None
    if n < 0:
        raise errors.InvalidArgumentError(
            None, op_name, "%s: num_samples must be >= 0, got %d" % (op_name, n))
    return n


def _output_dtype(dtype, op_name):
    return _dtype_in(d.int64 if dtype is None else dtype, _INT_DTYPES, op_name).name
