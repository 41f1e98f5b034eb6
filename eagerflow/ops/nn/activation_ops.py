"""Activations: the elementwise primitives relu, relu6, leaky_relu, elu, selu, softplus,
softsign and gelu, the composites silu, swish and crelu, and softmax and log_softmax.

The softmax kernels are stable, per slice along the class axis with ``m = max(x)``::

    softmax(x)            = exp(x - m) / sum(exp(x - m))
    log_softmax(x)        = (x - m) - log(sum(exp(x - m)))

float16 and bfloat16 inputs are computed in float32 inside these kernels and rounded once.

Example:
    >>> import eagerflow as ef
    >>> ef.nn.relu(ef.constant([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

import numbers

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.backend import cpu_jit, cpu_threads
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import greater, less, zeros_like_t
from eagerflow.ops.math.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import (
    BINARY_SHAPES, FLOAT, REAL, UNARY_SHAPES, _sample_values, binary, unary,
)
from eagerflow.ops.array import join_ops
from eagerflow.ops.math import complex_math, unary_math
from eagerflow.ops.reduce import reductions
from eagerflow.ops.nn import _fail, _tensor, _where, gelu_kernels, softmax_kernels
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor
from eagerflow.ops.family import GPU_FLOAT, GPU_NUM

__all__ = [
    "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "softplus", "softsign",
    "softmax", "log_softmax", "crelu",
]

EXPORTS = {
    "nn": ["relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "softplus",
           "softsign", "softmax", "log_softmax", "crelu"],
    "math": ["softplus", "softsign", "softmax", "log_softmax"],
}


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# ---------------------------------------------------------------------------------------
# Elementwise activations (primitives).
# ---------------------------------------------------------------------------------------

_ROW_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ZERO_ROWS = {}       # dtype -> a read-only row of zeros, grown on demand


def relu_numpy(x, out=None):
    """``maximum(x, 0)`` on numpy arrays, with the zero as a row that ``x``'s rows meet.

    numpy's maximum against a scalar takes its scalar loop, while against an array it
    runs on vector units: one thread, CPU time, median of 31, [64, 26, 26, 32] float32:
    0.67 ms against a scalar, 0.32 ms against a zero row of 832. The results are the
    same bits (signed zeros and NaN included). A C-contiguous float32/float64 array of
    4096 elements or more is viewed as rows of its trailing dimensions (at least 256
    elements where it has them); other arrays take the scalar form. ``out`` is written
    when given (the fused regions' buffers).

    Example:
        >>> import numpy as np
        >>> from eagerflow.ops.nn.activation_ops import relu_numpy
        >>> relu_numpy(np.array([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    if x.__class__ is np.ndarray and x.size >= 4096 and x.dtype in _ROW_FLOATS and \
            x.flags.c_contiguous and (out is None or (out.flags.c_contiguous and
                                                       out.shape == x.shape)):
        row = 1
        for n in reversed(x.shape):
            row *= n
            if row >= 256:
                break
        zeros = _ZERO_ROWS.get(x.dtype)
        if zeros is None or zeros.shape[0] < row:
            zeros = np.zeros(max(row, 1024), x.dtype)
            zeros.flags.writeable = False
            _ZERO_ROWS[x.dtype] = zeros     # one atomic store: readers see either row
        if out is None:
            out = np.empty(x.shape, x.dtype)
        if row:
            np.maximum(x.reshape(-1, row), zeros[:row], out=out.reshape(-1, row))
        return out
    return np.maximum(x, 0, out=out)


def _relu_kernel(xp):
    if cpu_threads.is_numpy(xp):
        return relu_numpy
    maximum = xp.maximum
    return lambda x: maximum(x, 0)


def _relu6_kernel(xp):
    maximum, minimum = xp.maximum, xp.minimum
    return lambda x: minimum(maximum(x, 0), 6)


def _leaky_relu_kernel(xp):
    where = xp.where
    # alpha defaults to TF's 0.2 so that attribute-free sweeps can call the kernel.
    return lambda x, *, alpha=0.2: where(x > 0, x, x * alpha)


def _elu_kernel(xp):
    where, expm1, minimum = xp.where, xp.expm1, xp.minimum
    # expm1 of min(x, 0): the unused branch never overflows.
    return lambda x: where(x > 0, x, expm1(minimum(x, 0)))


def _selu_kernel(xp):
    where, expm1, minimum = xp.where, xp.expm1, xp.minimum
    return lambda x: SELU_SCALE * where(x > 0, x, SELU_ALPHA * expm1(minimum(x, 0)))


def _softplus_kernel(xp):
    logaddexp = xp.logaddexp
    # log(1 + exp(x)) = logaddexp(0, x): exact for large |x| (x, resp. exp(x)).
    return lambda x: logaddexp(x, 0)


def _softsign_kernel(xp):
    absolute = xp.abs
    return lambda x: x / (1 + absolute(x))


def _relu_grad_loop(g, features, out, lo, hi):
    # g * (features > 0) in one pass: the mask's 1 or 0 multiplies g, as numpy's product
    # with the boolean mask does (NaN and infinite cotangents, signed zeros included).
    gb, fb, ob = g[lo:hi], features[lo:hi], out[lo:hi]
    one, zero = gb.dtype.type(1), gb.dtype.type(0)
    for i in range(hi - lo):
        ob[i] = gb[i] * (one if fb[i] > zero else zero)


# One thread, CPU time, median of 21 rounds of 24 calls (inputs rotated over six sets):
# [1024, 512] float32 0.358 ms in numpy (the mask, then the product), 0.230 ms compiled.
_RELU_GRAD_LOOP = cpu_jit.kernel(_relu_grad_loop, error_model="numpy", signatures=[
    "void(%s[::1], %s[::1], %s[::1], int64, int64)" % ((t,) * 3)
    for t in ("float32", "float64")])


def _relu_grad_kernel(xp):
    multiply, greater_ = xp.multiply, xp.greater
    numpy = cpu_threads.is_numpy(xp)

    # TF's ReluGrad: gradients * (features > 0). A multiply by the mask, not a select:
    # ``where`` on a data-dependent mask is several times slower on CPUs (branches), and
    # the product propagates NaN/Inf cotangents exactly as TF's kernel does. Large
    # float32/float64 arrays of one shape take the compiled loop of the same product.
    def kernel(g, features):
        if numpy and g.__class__ is features.__class__ is np.ndarray and \
                g.dtype == features.dtype and g.dtype in _ROW_FLOATS and \
                g.shape == features.shape and cpu_jit.wanted(g.size) and \
                g.flags.c_contiguous and features.flags.c_contiguous and \
                g.flags.writeable and features.flags.writeable and \
                g.flags.aligned and features.flags.aligned:  # (compiled for these)
            fn = _RELU_GRAD_LOOP.compiled()
            if fn is not None:
                out = np.empty(g.shape, g.dtype)
                a, b, o = g.reshape(-1), features.reshape(-1), out.reshape(-1)
                cpu_threads.run_blocks(lambda lo, hi: fn(a, b, o, lo, hi), o.size, o.size,
                                       cpu_threads.FUSED_MIN_ELEMENTS)
                return out
        return multiply(g, greater_(features, 0))

    return kernel


def _relu_grad_vjp(dy, g, features, out):
    # Linear in ``g``; piecewise constant (zero derivative) in ``features``.
    return execute(RELU_GRAD, (dy, features)), None


def _relu_vjp(g, x, out):
    # Zero at 0, as TF's ReluGrad (features > 0); relu's output has the same sign pattern.
    return execute(RELU_GRAD, (g, out))


def _relu6_vjp(g, x, out):
    zeros = zeros_like_t(g)
    return _where(greater(out, 0), _where(less(out, 6), g, zeros), zeros)


def _leaky_relu_vjp(g, x, out, *, alpha=0.2):
    return _where(greater(x, 0), g, g * alpha)


def _elu_vjp(g, x, out):
    # For x <= 0, d/dx (exp(x) - 1) = exp(x) = out + 1.
    return _where(less(out, 0), g * (out + 1), g)


def _selu_vjp(g, x, out):
    return _where(less(out, 0), g * (out + SELU_SCALE * SELU_ALPHA), g * SELU_SCALE)


def _softplus_vjp(g, x, out):
    return g * unary_math.sigmoid(x)


def _softsign_vjp(g, x, out):
    denom = 1 + complex_math.abs(x)
    return g / (denom * denom)


def _leaky_relu_samples(rng, dtype):
    return [((_sample_values(rng, s, dtype, (-3.0, 3.0)),), {"alpha": alpha})
            for s in UNARY_SHAPES for alpha in (0.2, 0.0, 1.5)]


RELU_GRAD = binary("ReluGrad", _relu_grad_kernel, dtypes=REAL, family="nn",
                   reference=lambda g, features: g * (features > 0), vjp=_relu_grad_vjp,
                   saves=(1,), gpu_expr=(GPU_NUM, "{0} * ({T})({1} > ({T})0)"))
RELU = unary("Relu", _relu_kernel, dtypes=REAL, family="nn",
             reference=lambda x: np.maximum(x, 0), vjp=_relu_vjp, saves=("out",),
             gpu_expr=(GPU_NUM, "({0} > ({T})0 || isnan((double){0})) ? {0} : ({T})0"))
RELU6 = unary("Relu6", _relu6_kernel, dtypes=REAL, family="nn", domain=(-3.0, 9.0),
              reference=lambda x: np.clip(x, 0, 6), vjp=_relu6_vjp, saves=("out",),
              gpu_expr=(GPU_NUM, "isnan((double){0}) ? {0} : ({0} > ({T})6 ? ({T})6 : "
                   "({0} > ({T})0 ? {0} : ({T})0))"))
LEAKY_RELU = unary(
    "LeakyRelu", _leaky_relu_kernel, dtypes=FLOAT, family="nn",
    reference=lambda x, *, alpha=0.2: np.where(x > 0, x, x * alpha), samples=_leaky_relu_samples,
    vjp=_leaky_relu_vjp, saves=(0,),
    gpu_expr=(GPU_FLOAT, "{0} > ({T})0 ? {0} : {0} * ({T})({alpha})"))
ELU = unary("Elu", _elu_kernel, dtypes=FLOAT, family="nn",
            reference=lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
            vjp=_elu_vjp, saves=("out",))
SELU = unary("Selu", _selu_kernel, dtypes=FLOAT, family="nn",
             reference=lambda x: SELU_SCALE * np.where(
                 x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
             vjp=_selu_vjp, saves=("out",))
SOFTPLUS = unary("Softplus", _softplus_kernel, dtypes=FLOAT, family="nn", domain=(-30.0, 30.0),
                 reference=lambda x: np.logaddexp(x, 0), vjp=_softplus_vjp, saves=(0,))
SOFTSIGN = unary("Softsign", _softsign_kernel, dtypes=FLOAT, family="nn",
                 reference=lambda x: x / (1 + np.abs(x)), vjp=_softsign_vjp, saves=(0,),
                 gpu_expr=(GPU_FLOAT, "{0} / (({T})1 + fabs({0}))"))


# GELU: one primitive for both forms (``approximate``), with its gradient as a second one
# (see ``gelu_kernels``). The composite was 9 nodes forward and a 13-op gradient region.
# No GPU scalar expression: the form is a bool attr, which never enters CUDA source, so on
# a GPU the two run their own kernels (the same passes, on cupy arrays).

def _gelu_kernel(xp):
    def kernel(x, *, approximate=False):
        return gelu_kernels.forward(xp, x, bool(approximate))
    return kernel


def _gelu_grad_kernel(xp):
    def kernel(gradients, features, *, approximate=False):
        if gradients.shape != features.shape:
            gradients, features = xp.broadcast_arrays(gradients, features)
        return gelu_kernels.backward(xp, gradients, features, bool(approximate))
    return kernel


def _gelu_reference(x, *, approximate=False):
    w = x.astype(np.float64)
    if approximate:
        y = 0.5 * w * (1.0 + np.tanh(gelu_kernels.C * (w + gelu_kernels.A * w ** 3)))
    else:
        from scipy import special

        y = 0.5 * w * (1.0 + special.erf(w * gelu_kernels.SQRT_HALF))
    return y.astype(x.dtype)


def _gelu_derivatives(w, approximate):
    """gelu' and gelu'' of a float64 array (the references)."""
    if approximate:
        c, a = gelu_kernels.C, gelu_kernels.A
        t = np.tanh(c * (w + a * w ** 3))
        dz = c * (1.0 + 3.0 * a * w * w)
        first = 0.5 * (1.0 + t) + 0.5 * w * (1.0 - t * t) * dz
        second = (1.0 - t * t) * (dz - w * t * dz * dz + 3.0 * a * c * w * w)
        return first, second
    from scipy import special

    pdf = np.exp(-0.5 * w * w) * gelu_kernels.INV_SQRT_2PI
    return 0.5 * (1.0 + special.erf(w * gelu_kernels.SQRT_HALF)) + w * pdf, pdf * (2.0 - w * w)


def _gelu_grad_reference(gradients, features, *, approximate=False):
    first, _ = _gelu_derivatives(features.astype(np.float64), approximate)
    return (gradients.astype(np.float64) * first).astype(np.result_type(gradients, features))


def _gelu_second(x, approximate):
    """gelu''(x) as ops: the derivative GeluGrad's own gradient needs."""
    if approximate:
        c, a = gelu_kernels.C, gelu_kernels.A
        t = unary_math.tanh(c * x * (1.0 + a * (x * x)))
        dz = c * (1.0 + 3.0 * a * (x * x))
        return (1.0 - t * t) * (dz - x * t * dz * dz + 3.0 * a * c * (x * x))
    pdf = unary_math.exp(-0.5 * (x * x)) * gelu_kernels.INV_SQRT_2PI
    return pdf * (2.0 - x * x)


def _gelu_vjp(g, x, out, *, approximate=False):
    return execute(GELU_GRAD, (g, x), {"approximate": approximate})


def _gelu_grad_vjp(c, gradients, features, out, *, approximate=False):
    # out = gradients * gelu'(features): linear in the gradients.
    return (execute(GELU_GRAD, (c, features), {"approximate": approximate}),
            c * gradients * _gelu_second(features, approximate))


def _gelu_samples(rng, dtype):
    return [((_sample_values(rng, s, dtype, (-4.0, 4.0)),), {"approximate": approximate})
            for s in UNARY_SHAPES for approximate in (False, True)]


def _gelu_grad_samples(rng, dtype):
    return [((_sample_values(rng, a, dtype, (-2.0, 2.0)),
              _sample_values(rng, b, dtype, (-4.0, 4.0))), {"approximate": approximate})
            for a, b in BINARY_SHAPES for approximate in (False, True)]


GELU = unary(
    "Gelu", _gelu_kernel, dtypes=FLOAT, family="nn", domain=(-4.0, 4.0),
    reference=_gelu_reference, samples=_gelu_samples, sweep_dtypes=FLOAT,
    vjp=_gelu_vjp, saves=(0,),
    doc="GELU, the tanh form when ``approximate`` (see ``gelu_kernels``).")
GELU_GRAD = binary(
    "GeluGrad", _gelu_grad_kernel, dtypes=FLOAT, family="nn", domain=(-2.0, 2.0),
    domain_y=(-4.0, 4.0), reference=_gelu_grad_reference, samples=_gelu_grad_samples,
    sweep_dtypes=FLOAT, vjp=_gelu_grad_vjp, saves=(0, 1),
    doc="The gradient of Gelu: ``gradients * gelu'(features)``.")


def relu(features, name=None):
    """Computes rectified linear: ``max(features, 0)``.

    The gradient at 0 is 0, as in TF. NaN inputs give NaN.

    Args:
        features: A real Tensor (float or integer).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape and dtype.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.relu([-2.0, 0.0, 3.0]).numpy().tolist()
        [0.0, 0.0, 3.0]
    """
    return execute(RELU, (features,))


def relu6(features, name=None):
    """Computes rectified linear 6: ``min(max(features, 0), 6)``.

    Args:
        features: A real Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape and dtype.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.relu6([-1.0, 3.0, 8.0]).numpy().tolist()
        [0.0, 3.0, 6.0]
    """
    return execute(RELU6, (features,))


def leaky_relu(features, alpha=0.2, name=None):
    """Computes leaky relu: ``features`` where positive, ``alpha * features`` elsewhere.

    Integer inputs are cast to float32 first, as in TF.

    Args:
        features: A real Tensor.
        alpha: Slope for negative inputs (a Python number).
        name: Unused (TF compatibility).

    Returns:
        A floating Tensor of features' shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.leaky_relu([-1.0, 2.0], alpha=0.1).numpy().tolist()
        [-0.10000000149011612, 2.0]
    """
    if features.__class__ is not Tensor or features._value.dtype.kind != "f":
        features = _tensor(features)
        if features.dtype.is_integer:
            features = cast(features, d.float32)
    return execute(LEAKY_RELU, (features,), {"alpha": float(alpha)})


def elu(features, name=None):
    """Computes the exponential linear unit: ``features`` if > 0 else ``exp(features) - 1``.

    Args:
        features: A floating Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape and dtype.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.elu([0.0, 1.0]).numpy().tolist()
        [0.0, 1.0]
    """
    return execute(ELU, (features,))


def selu(features, name=None):
    """Computes scaled elu: ``scale * (features if > 0 else alpha * (exp(features) - 1))``.

    ``alpha = 1.6732632423543772`` and ``scale = 1.0507009873554805``.

    Args:
        features: A floating Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape and dtype.

    Example:
        >>> import eagerflow as ef
        >>> round(float(ef.nn.selu([1.0])[0]), 4)
        1.0507
    """
    return execute(SELU, (features,))


def softplus(features, name=None):
    """Computes softplus: ``log(exp(features) + 1)``, without overflow for large inputs.

    Args:
        features: A floating Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape and dtype.

    Example:
        >>> import eagerflow as ef
        >>> print(ef.math.softplus([-1.0, 1.0, 100.0]).numpy().round(4))
        [  0.3133   1.3133 100.    ]
    """
    return execute(SOFTPLUS, (features,))


def softsign(features, name=None):
    """Computes softsign: ``features / (abs(features) + 1)``.

    Args:
        features: A floating Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape and dtype.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.softsign([1.0, -3.0]).numpy().tolist()
        [0.5, -0.75]
    """
    return execute(SOFTSIGN, (features,))


# ---------------------------------------------------------------------------------------
# Activations built from math ops (composites).
# ---------------------------------------------------------------------------------------

def gelu(features, approximate=False, name=None):
    """Computes the Gaussian error linear unit.

    Exact form ``0.5 * x * (1 + erf(x / sqrt(2)))``; with ``approximate=True`` the tanh form
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``.

    Args:
        features: A floating Tensor.
        approximate: Whether to use the tanh approximation.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the same shape and dtype.

    Raises:
        InvalidArgumentError: If ``features`` is not floating point.

    Example:
        >>> import eagerflow as ef
        >>> print(ef.nn.gelu([-1.0, 1.0]).numpy().round(4))
        [-0.1587  0.8413]
    """
    x = _tensor(features)
    if not x.dtype.is_floating:
        raise _fail("gelu", "features must be a floating point tensor, got dtype %s. Cast it "
                    "first, e.g. eagerflow.cast(x, eagerflow.float32)." % x.dtype.name)
    return execute(GELU, (x,), {"approximate": bool(approximate)})


def silu(features, beta=1.0):
    """Computes the SiLU (swish) activation: ``features * sigmoid(beta * features)``.

    Args:
        features: A floating Tensor.
        beta: A scalar (Python number or Tensor) hyperparameter; 1.0 gives SiLU.

    Returns:
        A Tensor of the same shape and dtype.

    Example:
        >>> import eagerflow as ef
        >>> print(ef.nn.silu([-1.0, 1.0]).numpy().round(4))
        [-0.2689  0.7311]
    """
    x = _tensor(features)
    sigmoid = unary_math.sigmoid
    if isinstance(beta, numbers.Real) and beta == 1.0:
        return x * sigmoid(x)
    if hasattr(beta, "dtype") and beta.dtype != x.dtype:
        beta = cast(beta, x.dtype)
    return x * sigmoid(beta * x)


swish = silu


def crelu(features, axis=-1, name=None):
    """Concatenated relu: ``concat([relu(features), relu(-features)], axis)``.

    The output is twice as large as ``features`` along ``axis``.

    Args:
        features: A real Tensor.
        axis: The axis to concatenate along.
        name: Unused (TF compatibility).

    Returns:
        A Tensor.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.crelu([1.0, -2.0]).numpy().tolist()
        [1.0, 0.0, 0.0, 2.0]
    """
    x = _tensor(features)
    return execute(RELU, (join_ops.concat([x, -x], axis),))


# ---------------------------------------------------------------------------------------
# softmax and log_softmax (primitives with stable kernels).
# ---------------------------------------------------------------------------------------

def _check_class_axis(shape, axis, what="logits"):
    """Rank >= 1 and axis within it; shape may hold None dims (tracing)."""
    if shape is None:
        return
    rank = len(shape)
    if rank == 0:
        raise errors.InvalidArgumentError(
            None, None, "%s must have >= 1 dimension, got shape []. Reshape a scalar to [1] "
            "(or add a class axis) first." % what)
    if not -rank <= axis < rank:
        raise errors.InvalidArgumentError(
            None, None, "axis %d is out of range for %s of rank %d (valid: [%d, %d])."
            % (axis, what, rank, -rank, rank - 1))


def _softmax_kernel(log):
    def factory(xp):
        def kernel(x, *, axis):
            _check_class_axis(x.shape, axis)
            return softmax_kernels.forward(xp, x, axis, log)
        return kernel
    return factory


def _softmax_grad_kernel(log):
    def factory(xp):
        def kernel(g, out, *, axis):
            _check_class_axis(out.shape, axis, "the softmax result")
            if g.shape != out.shape:
                raise errors.InvalidArgumentError(
                    None, None, "the gradient's shape %s differs from the softmax result's "
                    "%s; both must be the shape of the logits." % (list(g.shape),
                                                                    list(out.shape)))
            return softmax_kernels.backward(xp, g, out, axis, log)
        return kernel
    return factory


def _softmax_grad_shape(g, out, *, axis):
    _check_class_axis(out.shape, axis, "the softmax result")
    if g.shape is not None and out.shape is not None and (
            len(g.shape) != len(out.shape) or any(
                a is not None and b is not None and a != b for a, b in zip(g.shape, out.shape))):
        raise errors.InvalidArgumentError(
            None, None, "the gradient's shape %s differs from the softmax result's %s; both "
            "must be the shape of the logits." % (list(g.shape), list(out.shape)))
    shape = out.shape if out.shape is not None else g.shape
    if shape is not None and g.shape is not None:
        shape = tuple(a if a is not None else b for a, b in zip(shape, g.shape))
    return AbstractValue(shape, out.dtype)


def _softmax_shape(x, *, axis):
    _check_class_axis(x.shape, axis)
    return AbstractValue(x.shape, x.dtype)


def _softmax_reference(x, *, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True)) if x.size else x
    return e / e.sum(axis=axis, keepdims=True) if x.size else x


def _log_softmax_reference(x, *, axis):
    if not x.size:
        return x
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def _softmax_vjp(g, x, out, *, axis):
    # d softmax: out * (g - <g, out>) along the axis, one fused kernel.
    return execute(SOFTMAX_GRAD, (g, out), {"axis": axis})


def _log_softmax_vjp(g, x, out, *, axis):
    # d log_softmax: g - softmax * sum(g), softmax = exp(out), one fused kernel.
    return execute(LOG_SOFTMAX_GRAD, (g, out), {"axis": axis})


def _softmax_grad_vjp(c, g, y, out, *, axis):
    # h = y * g - y * <g, y>:  dh/dg . c = y * (c - <c, y>)  (the same kernel), and
    # dh/dy . c = c * (g - <g, y>) - <c, y> * g.
    sum_ = reductions.reduce_sum
    gy = sum_(g * y, axis=axis, keepdims=True)
    cy = sum_(c * y, axis=axis, keepdims=True)
    return execute(SOFTMAX_GRAD, (c, y), {"axis": axis}), c * (g - gy) - cy * g


def _log_softmax_grad_vjp(c, g, y, out, *, axis):
    # h = g - exp(y) * sum(g):  dh/dg . c = c - sum(c * exp(y)), dh/dy . c = -c exp(y) sum(g).
    sum_ = reductions.reduce_sum
    p = unary_math.exp(y)
    return (c - sum_(c * p, axis=axis, keepdims=True),
            -(c * p) * sum_(g, axis=axis, keepdims=True))


def _softmax_grad_reference(g, y, *, axis):
    return y * (g - (g * y).sum(axis=axis, keepdims=True))


def _log_softmax_grad_reference(g, y, *, axis):
    return g - np.exp(y) * g.sum(axis=axis, keepdims=True)


def _softmax_grad_samples(rng, dtype):
    return [((args[0], _sample_values(rng, args[0].shape, dtype, (-2.0, 2.0))), attrs)
            for args, attrs in _softmax_samples(rng, dtype)]


def _softmax_grad_bad_samples(rng):
    ones = np.ones((2, 3), np.float32)
    return [((np.float32(1.0), np.float32(1.0)), {"axis": -1}, errors.InvalidArgumentError),
            ((ones, ones), {"axis": 2}, errors.InvalidArgumentError),
            ((ones, np.ones((3, 2), np.float32)), {"axis": -1}, errors.InvalidArgumentError)]


def _softmax_samples(rng, dtype):
    out = []
    for shape, axes in (((5,), (-1, 0)), ((2, 3), (-1, 0, 1)), ((2, 1, 3), (-1, 1, -3)),
                        ((0,), (-1,)), ((2, 0), (-1, 0)), ((1,), (0,))):
        for axis in axes:
            out.append(((_sample_values(rng, shape, dtype, (-4.0, 4.0)),), {"axis": axis}))
    return out


def _softmax_bad_samples(rng):
    return [((np.float32(1.0),), {"axis": -1}, errors.InvalidArgumentError),
            ((np.ones((2, 3), np.float32),), {"axis": 2}, errors.InvalidArgumentError),
            ((np.ones((2, 3), np.float32),), {"axis": -3}, errors.InvalidArgumentError)]


SOFTMAX = registry.primitive(
    "Softmax", _softmax_kernel(False), dtypes=FLOAT, shape_fn=_softmax_shape, family="nn",
    vjp=_softmax_vjp, saves=("out",), reference=_softmax_reference, samples=_softmax_samples,
    bad_samples=_softmax_bad_samples)
LOG_SOFTMAX = registry.primitive(
    "LogSoftmax", _softmax_kernel(True), dtypes=FLOAT, shape_fn=_softmax_shape, family="nn",
    vjp=_log_softmax_vjp, saves=("out",), reference=_log_softmax_reference,
    samples=_softmax_samples, bad_samples=_softmax_bad_samples)
SOFTMAX_GRAD = registry.primitive(
    "SoftmaxGrad", _softmax_grad_kernel(False), dtypes=FLOAT, shape_fn=_softmax_grad_shape,
    family="nn", vjp=_softmax_grad_vjp, saves=(0, 1), reference=_softmax_grad_reference,
    samples=_softmax_grad_samples, bad_samples=_softmax_grad_bad_samples,
    doc="The gradient of Softmax from its result: ``y * (g - sum(g * y, axis))``.")
LOG_SOFTMAX_GRAD = registry.primitive(
    "LogSoftmaxGrad", _softmax_grad_kernel(True), dtypes=FLOAT, shape_fn=_softmax_grad_shape,
    family="nn", vjp=_log_softmax_grad_vjp, saves=(0, 1),
    reference=_log_softmax_grad_reference, samples=_softmax_grad_samples,
    bad_samples=_softmax_grad_bad_samples,
    doc="The gradient of LogSoftmax from its result: ``g - exp(y) * sum(g, axis)``.")


def _axis_attr(axis, op):
    if axis is None:
        return -1
    try:
        return int(axis)
    except (TypeError, ValueError):
        raise _fail(op, "axis must be an int, got %r." % (axis,)) from None


def softmax(logits, axis=None, name=None):
    """Computes softmax activations: ``exp(logits) / reduce_sum(exp(logits), axis)``.

    Computed stably (the maximum along ``axis`` is subtracted first).

    Args:
        logits: A non-empty-rank floating Tensor.
        axis: The dimension softmax is performed on; None means -1 (the last).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of logits' shape and dtype.

    Raises:
        InvalidArgumentError: If logits is a scalar or ``axis`` is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.softmax([0.0, 0.0]).numpy().tolist()
        [0.5, 0.5]
    """
    return execute(SOFTMAX, (logits,), {"axis": -1 if axis is None else _axis_attr(
        axis, "softmax")})


def log_softmax(logits, axis=None, name=None):
    """Computes log softmax activations: ``logits - log(reduce_sum(exp(logits), axis))``.

    Args:
        logits: A floating Tensor of rank >= 1.
        axis: The dimension softmax is performed on; None means -1 (the last).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of logits' shape and dtype.

    Raises:
        InvalidArgumentError: If logits is a scalar or ``axis`` is out of range.

    Example:
        >>> import eagerflow as ef
        >>> print(ef.nn.log_softmax([0.0, 0.0]).numpy().round(4))
        [-0.6931 -0.6931]
    """
    return execute(LOG_SOFTMAX, (logits,), {"axis": -1 if axis is None else _axis_attr(
        axis, "log_softmax")})
