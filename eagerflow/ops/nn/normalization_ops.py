"""Statistics and normalization: l2_normalize, moments and batch_normalization.

These are composites of math and reduction ops and take their gradients from them. One
primitive lives here too: ``LayerNormGrad``, the input gradient of a layer normalization's
normalize step, which the optimizer's ``layer_norm`` pass writes in place of the
composite's gradient nodes (kernel in ``layer_norm_kernels``).
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT, _sample_values
from eagerflow.ops.math.cast import cast
from eagerflow.ops.array import reshape_ops, shape_ops
from eagerflow.ops.math import binary_math, unary_math
from eagerflow.ops.reduce import reductions
from eagerflow.ops.nn import _fail, _tensor, layer_norm_kernels
from eagerflow.ops.registry import AbstractValue

__all__ = ["l2_normalize", "moments", "batch_normalization"]

EXPORTS = {
    "nn": ["l2_normalize", "moments", "batch_normalization"],
    "math": ["l2_normalize"],
    "linalg": ["l2_normalize"],
}


def _axes_list(axis):
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    if hasattr(axis, "numpy"):
        value = np.asarray(axis.numpy())
        return value.tolist() if value.ndim else int(value)
    return int(axis)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """Normalizes along ``axis`` by the L2 norm: ``x / sqrt(max(sum(x ** 2), epsilon))``.

    Args:
        x: A floating or complex Tensor.
        axis: The dimension(s) to normalize along; None means all.
        epsilon: Lower bound on the squared norm (avoids dividing by zero).
        name: Unused (TF compatibility).
        dim: Deprecated alias of ``axis``.

    Returns:
        A Tensor of x's shape and dtype.

    Raises:
        InvalidArgumentError: If both ``axis`` and ``dim`` are given.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.l2_normalize([3.0, 4.0]).numpy().tolist()
        [0.6000000238418579, 0.800000011920929]
    """
    if dim is not None:
        if axis is not None:
            raise _fail("l2_normalize", "Cannot specify both 'axis' and 'dim'.")
        axis = dim
    x = _tensor(x)
    axis = _axes_list(axis)
    if x.dtype.is_complex:
        from eagerflow.ops.math.arithmetic import conj

        real_dtype = d.float32 if x.dtype is d.complex64 else d.float64
        square_sum = reductions.reduce_sum(cast(x * conj(x), real_dtype), axis, keepdims=True)
        inv_norm = unary_math.rsqrt(binary_math.maximum(square_sum, epsilon))
        return x * cast(inv_norm, x.dtype)
    square_sum = reductions.reduce_sum(unary_math.square(x), axis, keepdims=True)
    return x * unary_math.rsqrt(binary_math.maximum(square_sum, epsilon))


def moments(x, axes, shift=None, keepdims=False, name=None):
    """Computes the mean and variance of ``x`` over ``axes``.

    ``variance = mean((x - stop_gradient(mean)) ** 2)``, as TF (the stop_gradient does not
    change the value or the gradient, which is zero through the mean). float16 inputs are
    reduced in float32.

    Args:
        x: A floating Tensor.
        axes: Ints, the axes to reduce over.
        shift: Unused (TF compatibility).
        keepdims: Keep the reduced axes with size 1.
        name: Unused (TF compatibility).

    Returns:
        A tuple ``(mean, variance)`` of x's dtype.

    Example:
        >>> import eagerflow as ef
        >>> mean, var = ef.nn.moments(ef.constant([1.0, 3.0]), axes=[0])
        >>> float(mean), float(var)
        (2.0, 1.0)
    """
    x = _tensor(x)
    axes = _axes_list(axes)
    y = cast(x, d.float32) if x.dtype is d.float16 else x
    mean = reductions.reduce_mean(y, axes, keepdims=True)
    centered = y - shape_ops.stop_gradient(mean)
    variance = reductions.reduce_mean(centered * centered, axes, keepdims=keepdims)
    if not keepdims:
        mean = reshape_ops.squeeze(mean, axes)
    if x.dtype is d.float16:
        return cast(mean, d.float16), cast(variance, d.float16)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """Normalizes with given statistics: ``scale * (x - mean) / sqrt(variance + eps) + offset``.

    Computed as ``x * inv + (offset - mean * inv)`` with ``inv = scale * rsqrt(variance +
    eps)``, as TF. All of mean, variance, offset and scale broadcast against x.

    Args:
        x: A floating Tensor.
        mean: The mean (broadcastable to x).
        variance: The variance (broadcastable to x).
        offset: The beta offset, or None.
        scale: The gamma scale, or None.
        variance_epsilon: A small float added to the variance.
        name: Unused (TF compatibility).

    Returns:
        The normalized Tensor, of x's shape and dtype.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.batch_normalization(ef.constant([1.0, 3.0]), 2.0, 1.0, None, None,
        ...                           0.0).numpy().tolist()
        [-1.0, 1.0]
    """
    x = _tensor(x)
    mean = _tensor(mean, x.dtype)
    variance = _tensor(variance, mean.dtype)
    inv = unary_math.rsqrt(variance + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    shift = offset - mean * inv if offset is not None else -mean * inv
    return x * cast(inv, x.dtype) + cast(shift, x.dtype)


# -- The input gradient of the normalize step (written by the optimizer) -------------------

def _layer_norm_grad_kernel(xp):
    def kernel(gradients, centered, rstd):
        if gradients.ndim < 1 or gradients.shape != centered.shape or \
                rstd.shape != centered.shape[:-1] + (1,):
            raise _fail("LayerNormGrad", "expected gradients and centered inputs of one shape "
                        "[..., N] and rstd of [..., 1], got %s, %s and %s." % (
                            list(gradients.shape), list(centered.shape), list(rstd.shape)))
        return layer_norm_kernels.input_grad(xp, gradients, centered, rstd)
    return kernel


def _layer_norm_grad_shape(g, c, r):
    return AbstractValue(g.shape if g.shape is not None else c.shape, g.dtype)


def _layer_norm_grad_reference(g, c, r):
    w = [a.astype(np.float64) for a in (g, c, r)]
    g64, c64, r64 = w
    n = c64 * r64
    out = r64 * (g64 - g64.mean(-1, keepdims=True) - n * (g64 * n).mean(-1, keepdims=True))
    return out.astype(g.dtype)


def _layer_norm_grad_vjp(u, g, c, r, out):
    # out = r g - r <g> - r**3 c <g c>, linear and self-adjoint in g.
    mean = reductions.reduce_mean
    gc = mean(g * c, -1, keepdims=True)
    r3 = r * r * r
    grad_g = execute(LAYER_NORM_GRAD, (u, c, r))
    grad_c = -r3 * (u * gc + g * mean(u * c, -1, keepdims=True))
    grad_r = reductions.reduce_sum(
        u * (g - mean(g, -1, keepdims=True) - 3.0 * (r * r) * c * gc), -1, keepdims=True)
    return grad_g, grad_c, grad_r


def _layer_norm_grad_samples(rng, dtype):
    out = []
    for shape in ((2, 5), (3, 1, 4), (1, 7), (4, 1), (0, 3), (2, 0), (6,)):
        g = _sample_values(rng, shape, dtype, (-2.0, 2.0))
        c = _sample_values(rng, shape, dtype, (-2.0, 2.0))
        r = _sample_values(rng, shape[:-1] + (1,), dtype, (0.5, 2.0))
        out.append(((g, c, r), {}))
    return out


LAYER_NORM_GRAD = registry.primitive(
    "LayerNormGrad", _layer_norm_grad_kernel, dtypes=FLOAT, family="nn",
    shape_fn=_layer_norm_grad_shape, vjp=_layer_norm_grad_vjp, saves=(0, 1, 2),
    reference=_layer_norm_grad_reference, samples=_layer_norm_grad_samples, sweep_dtypes=FLOAT,
    bad_samples=lambda rng: [
        ((np.ones((2, 3), np.float32), np.ones((2, 3), np.float32),
          np.ones((2, 3), np.float32)), {}, errors.InvalidArgumentError)],
    doc="The input gradient of ``(x - mean) * rstd`` along the last axis from the "
        "normalized value's cotangent, the centered input and rstd (see "
        "``layer_norm_kernels``).")
