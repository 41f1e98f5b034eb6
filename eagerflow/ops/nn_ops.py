"""Neural-network ops (``tf.nn``): activations, softmax, cross-entropy, normalization.

Primitives are the ops on hot paths or that need a fused, numerically stable kernel: the
elementwise activations (relu, relu6, leaky_relu, elu, selu, softplus, softsign), softmax,
log_softmax, sparse softmax cross-entropy and l2_loss. Everything else (gelu, silu, the
other losses, moments, batch_normalization, bias_add, dropout, embedding_lookup...) is a
composite of primitives and takes its gradient from theirs.

The stable kernels, per slice along the class axis with ``m = max(x)``::

    softmax(x)            = exp(x - m) / sum(exp(x - m))
    log_softmax(x)        = (x - m) - log(sum(exp(x - m)))
    sparse_xent(x, label) = log(sum(exp(x - m))) - (x[label] - m)

float16 and bfloat16 inputs are computed in float32 inside these kernels and rounded once.

Example:
    >>> import eagerflow as ef
    >>> ef.nn.relu(ef.constant([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.arithmetic import (
    ONES_LIKE_fn, SELECT, floordiv, floormod, greater, greater_equal, less, zeros_like_t,
)
from eagerflow.ops.cast import cast
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT, REAL, UNARY_SHAPES, _sample_values, unary
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = [
    "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "softplus",
    "softsign", "softmax", "log_softmax", "sigmoid_cross_entropy_with_logits",
    "weighted_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits", "log_poisson_loss", "l2_normalize", "l2_loss",
    "moments", "batch_normalization", "bias_add", "dropout", "embedding_lookup", "crelu",
]

EXPORTS = {
    "nn": list(__all__),
    "math": ["softplus", "softsign", "softmax", "log_softmax", "l2_normalize"],
    "linalg": ["l2_normalize"],
}

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# Sibling families are imported on first use: they are written against this module's
# level and some import after it.
def _math():
    from eagerflow.ops import math_ops
    return math_ops


def _reduce():
    from eagerflow.ops import reduction_ops
    return reduction_ops


def _array():
    from eagerflow.ops import array_ops
    return array_ops


def _index():
    from eagerflow.ops import indexing_ops
    return indexing_ops


def _where(cond, x, y):
    return execute(SELECT, (cond, x, y))


def _tensor(x, dtype=None):
    """x as a tensor (eager or symbolic); Python values take ``dtype`` when given."""
    if x.__class__ is Tensor or hasattr(x, "_as_tensor"):
        return convert_to_tensor(x)
    return convert_to_tensor(x, dtype=dtype)


def _fail(op, message):
    return errors.InvalidArgumentError(None, op, "%s: %s" % (op, message))


def _upcast(xp, x):
    """Half-precision floats are computed in float32 (one rounding at the end)."""
    return x.astype(xp.float32) if x.dtype.itemsize < 4 else x


# ---------------------------------------------------------------------------------------
# Elementwise activations (primitives).
# ---------------------------------------------------------------------------------------

def _relu_kernel(xp):
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


def _relu_vjp(g, x, out):
    # Zero at 0, as TF's ReluGrad (features > 0).
    return _where(greater(out, 0), g, zeros_like_t(g))


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
    return g * _math().sigmoid(x)


def _softsign_vjp(g, x, out):
    denom = 1 + _math().abs(x)
    return g / (denom * denom)


def _leaky_relu_samples(rng, dtype):
    return [((_sample_values(rng, s, dtype, (-3.0, 3.0)),), {"alpha": alpha})
            for s in UNARY_SHAPES for alpha in (0.2, 0.0, 1.5)]


RELU = unary("Relu", _relu_kernel, dtypes=REAL, family="nn",
             reference=lambda x: np.maximum(x, 0), vjp=_relu_vjp, saves=("out",))
RELU6 = unary("Relu6", _relu6_kernel, dtypes=REAL, family="nn", domain=(-3.0, 9.0),
              reference=lambda x: np.clip(x, 0, 6), vjp=_relu6_vjp, saves=("out",))
LEAKY_RELU = unary(
    "LeakyRelu", _leaky_relu_kernel, dtypes=FLOAT, family="nn",
    reference=lambda x, *, alpha=0.2: np.where(x > 0, x, x * alpha), samples=_leaky_relu_samples,
    vjp=_leaky_relu_vjp, saves=(0,))
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
                 reference=lambda x: x / (1 + np.abs(x)), vjp=_softsign_vjp, saves=(0,))


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
    m = _math()
    if approximate:
        inner = 0.7978845608028654 * (x + 0.044715 * (x * x * x))
        return 0.5 * x * (1.0 + m.tanh(inner))
    return 0.5 * x * (1.0 + m.erf(x / 1.4142135623730951))


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
    sigmoid = _math().sigmoid
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
    return execute(RELU, (_array().concat([x, -x], axis),))


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
        exp, logf = xp.exp, xp.log

        def kernel(x, *, axis):
            _check_class_axis(x.shape, axis)
            if x.size == 0:
                return xp.empty_like(x)
            work = _upcast(xp, x)
            shifted = work - work.max(axis=axis, keepdims=True)
            if log:
                out = shifted - logf(exp(shifted).sum(axis=axis, keepdims=True))
            else:
                out = exp(shifted, out=shifted)  # shifted is a fresh array: reuse it
                out /= out.sum(axis=axis, keepdims=True)
            return out.astype(x.dtype, copy=False)
        return kernel
    return factory


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
    # d softmax: out * (g - <g, out>) along the axis.
    return out * (g - _reduce().reduce_sum(g * out, axis=axis, keepdims=True))


def _log_softmax_vjp(g, x, out, *, axis):
    # d log_softmax: g - softmax * sum(g), softmax = exp(out).
    return g - _math().exp(out) * _reduce().reduce_sum(g, axis=axis, keepdims=True)


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


# ---------------------------------------------------------------------------------------
# Cross-entropy losses.
# ---------------------------------------------------------------------------------------

_LABEL_DTYPES = ("int32", "int64")


def _check_sparse(logits_shape, labels_shape, labels_dtype_name):
    """TF's static checks of sparse xent; shapes may hold None dims (tracing)."""
    if labels_dtype_name not in _LABEL_DTYPES:
        raise errors.InvalidArgumentError(
            None, None, "labels must be int32 or int64 class indices, got dtype %s. Cast "
            "them, e.g. eagerflow.cast(labels, eagerflow.int32)." % labels_dtype_name)
    if logits_shape is None or labels_shape is None:
        return
    if len(logits_shape) == 0:
        raise errors.InvalidArgumentError(
            None, None, "Logits cannot be scalars - received shape []. Logits need a class "
            "axis: shape [..., num_classes].")
    if len(labels_shape) != len(logits_shape) - 1:
        raise errors.InvalidArgumentError(
            None, None, "Rank mismatch: Rank of labels (received %d, shape %s) should equal "
            "rank of logits minus 1 (received %d, shape %s)."
            % (len(labels_shape), list(labels_shape), len(logits_shape), list(logits_shape)))
    for a, b in zip(labels_shape, logits_shape[:-1]):
        if a is not None and b is not None and a != b:
            raise errors.InvalidArgumentError(
                None, None, "Shape mismatch: The shape of labels (received %s) should equal "
                "the shape of logits except for the last dimension (received %s)."
                % (list(labels_shape), list(logits_shape)))


def _sparse_xent_kernel(xp):
    exp, logf, take = xp.exp, xp.log, xp.take_along_axis

    def kernel(logits, labels):
        _check_sparse(logits.shape, labels.shape, np.dtype(labels.dtype).name)
        classes = logits.shape[-1]
        if labels.size:
            if classes == 0:
                raise errors.InvalidArgumentError(
                    None, None, "Must have at least one class, but got logits shape %s."
                    % list(logits.shape))
            low, high = int(labels.min()), int(labels.max())
            if low < 0 or high >= classes:
                flat = labels.ravel()
                bad = int(flat[(flat < 0) | (flat >= classes)][0])
                shown = " ".join(str(int(v)) for v in flat[:10].tolist()) + (
                    " ..." if flat.size > 10 else "")
                raise errors.InvalidArgumentError(
                    None, None, "Received a label value of %d which is outside the valid "
                    "range of [0, %d) (the number of classes, logits.shape[-1]). Label "
                    "values: %s" % (bad, classes, shown))
        if logits.size == 0:
            return xp.zeros(logits.shape[:-1], logits.dtype)
        work = _upcast(xp, logits)
        shifted = work - work.max(axis=-1, keepdims=True)
        lse = logf(exp(shifted).sum(axis=-1))
        picked = take(shifted, labels[..., None], axis=-1)[..., 0]
        return (lse - picked).astype(logits.dtype, copy=False)
    return kernel


def _sparse_xent_shape(logits, labels):
    _check_sparse(logits.shape, labels.shape, labels.dtype.name)
    return AbstractValue(None if logits.shape is None else logits.shape[:-1], logits.dtype)


def _sparse_xent_vjp(g, logits, labels, out):
    # TF's gradient: softmax(logits) - one_hot(labels), scaled per example. Written with
    # differentiable ops so an outer tape gets the second derivative.
    depth = logits.shape[-1]
    if depth is None:
        depth = _array().shape(logits)[-1]
    probs = execute(SOFTMAX, (logits,), {"axis": -1})
    onehot = _index().one_hot(labels, depth, dtype=logits.dtype)
    return _array().expand_dims(g, -1) * (probs - onehot), None


def _sparse_xent_reference(logits, labels):
    work = logits.astype(np.float64)
    s = work - work.max(axis=-1, keepdims=True) if work.size else work
    lse = np.log(np.exp(s).sum(axis=-1))
    picked = np.take_along_axis(s, labels[..., None].astype(np.int64), axis=-1)[..., 0]
    return (lse - picked).astype(logits.dtype)


def _sparse_xent_samples(rng, dtype):
    out = []
    for batch, classes, label_dtype in (((4,), 3, np.int32), ((2, 3), 5, np.int64),
                                        ((), 4, np.int32), ((0,), 3, np.int64),
                                        ((3,), 1, np.int32)):
        logits = _sample_values(rng, batch + (classes,), dtype, (-4.0, 4.0))
        labels = rng.integers(0, classes, size=batch).astype(label_dtype)
        out.append(((logits, labels), {}))
    return out


def _sparse_xent_bad_samples(rng):
    logits = rng.standard_normal((2, 3)).astype(np.float32)
    err = errors.InvalidArgumentError
    return [((logits, np.array([0, 3], np.int32)), {}, err),
            ((logits, np.array([-1, 0], np.int64)), {}, err),
            ((logits, np.array([0, 1, 2], np.int32)), {}, err),
            ((logits, np.array([[0], [1]], np.int32)), {}, err),
            ((np.float32(1.0), np.int32(0)), {}, err),
            ((logits, np.array([0.0, 1.0], np.float32)), {}, err),
            ((np.zeros((2, 0), np.float32), np.array([0, 0], np.int32)), {}, err)]


SPARSE_SOFTMAX_XENT = registry.primitive(
    "SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_kernel, dtypes=FLOAT,
    dtype_group=(0,), shape_fn=_sparse_xent_shape, family="nn", vjp=_sparse_xent_vjp,
    saves=(0, 1), reference=_sparse_xent_reference, samples=_sparse_xent_samples,
    bad_samples=_sparse_xent_bad_samples,
    hint="labels must be class indices in [0, logits.shape[-1]).")


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Computes sparse softmax cross entropy between ``logits`` and integer ``labels``.

    ``loss[i] = -log(softmax(logits[i])[labels[i]])``, computed stably in one fused kernel.
    The gradient with respect to logits is ``softmax(logits) - one_hot(labels)``; labels get
    no gradient. A label outside ``[0, num_classes)`` raises on every device (TF returns NaN
    on GPUs instead).

    Args:
        labels: int32/int64 Tensor of shape ``logits.shape[:-1]`` holding class indices.
        logits: Floating Tensor of shape ``[..., num_classes]`` (unscaled log-probabilities).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of labels' shape and logits' dtype: the per-example loss.

    Raises:
        InvalidArgumentError: On rank or shape mismatches, non-integer labels, or a label
            out of range (the message names the label and the number of classes).

    Example:
        >>> import eagerflow as ef
        >>> loss = ef.nn.sparse_softmax_cross_entropy_with_logits([0], [[0.0, 0.0]])
        >>> print(loss.numpy().round(4))
        [0.6931]
    """
    return execute(SPARSE_SOFTMAX_XENT, (logits, labels))


def _check_same_shape(a, b, what_a, what_b, op):
    if not a.shape.is_compatible_with(b.shape):
        raise _fail(op, "%s and %s must have the same shape, received (%s vs %s)."
                    % (what_a, what_b, a.shape, b.shape))


def _logits_and_labels(labels, logits, op):
    if labels is None or logits is None:
        raise _fail(op, "Both labels and logits must be provided.")
    logits = _tensor(logits)
    labels = _tensor(labels, dtype=logits.dtype)
    if labels.dtype != logits.dtype:
        raise _fail(op, "labels and logits must have the same dtype, got %s and %s. Cast "
                    "labels with eagerflow.cast(labels, %s)."
                    % (labels.dtype.name, logits.dtype.name, logits.dtype.name))
    return labels, logits


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """Computes softmax cross entropy between ``logits`` and ``labels``.

    ``loss = -reduce_sum(labels * log_softmax(logits, axis), axis)``. Each slice of labels
    along ``axis`` should be a probability distribution. Gradients flow into both logits and
    labels (wrap labels in ``stop_gradient`` to prevent the latter).

    Args:
        labels: A Tensor of logits' dtype and shape (or broadcastable to it).
        logits: A floating Tensor of rank >= 1 of unscaled log-probabilities.
        axis: The class dimension.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of logits' shape without ``axis``: the per-example loss.

    Raises:
        InvalidArgumentError: If dtypes differ, shapes are incompatible, or axis is invalid.

    Example:
        >>> import eagerflow as ef
        >>> loss = ef.nn.softmax_cross_entropy_with_logits([[0.5, 0.5]], [[0.0, 0.0]])
        >>> print(loss.numpy().round(4))
        [0.6931]
    """
    op = "softmax_cross_entropy_with_logits"
    labels, logits = _logits_and_labels(labels, logits, op)
    axis = _axis_attr(axis, op)
    lshape, xshape = labels.shape, logits.shape
    if lshape.rank is not None and xshape.rank is not None:
        ok = lshape.rank <= xshape.rank and all(
            a in (1, None) or b is None or a == b
            for a, b in zip(lshape.as_list()[::-1], xshape.as_list()[::-1]))
        if not ok:
            raise _fail(op, "labels must have logits' shape (or broadcast to it), received "
                        "(%s vs %s)." % (lshape, xshape))
    log_probs = execute(LOG_SOFTMAX, (logits,), {"axis": axis})
    return -_reduce().reduce_sum(labels * log_probs, axis=axis)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Computes sigmoid cross entropy given ``logits``, elementwise.

    ``loss = max(x, 0) - x * z + log(1 + exp(-abs(x)))`` for logits x and labels z: the
    stable form of ``-z * log(sigmoid(x)) - (1 - z) * log(1 - sigmoid(x))``.

    Args:
        labels: A Tensor of logits' dtype and shape, values in [0, 1].
        logits: A floating Tensor.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of logits' shape: the elementwise logistic loss.

    Raises:
        InvalidArgumentError: If either is missing, or shapes or dtypes differ.

    Example:
        >>> import eagerflow as ef
        >>> loss = ef.nn.sigmoid_cross_entropy_with_logits(labels=[1.0], logits=[0.0])
        >>> print(loss.numpy().round(4))
        [0.6931]
    """
    op = "sigmoid_cross_entropy_with_logits"
    labels, logits = _logits_and_labels(labels, logits, op)
    _check_same_shape(logits, labels, "logits", "labels", op)
    m = _math()
    zeros = zeros_like_t(logits)
    positive = greater_equal(logits, zeros)
    relu_logits = _where(positive, logits, zeros)
    neg_abs_logits = _where(positive, -logits, logits)
    return (relu_logits - logits * labels) + m.log1p(m.exp(neg_abs_logits))


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """Like sigmoid cross entropy with the positive term weighted by ``pos_weight``.

    ``loss = (1 - z) * x + (1 + (q - 1) * z) * (log(1 + exp(-abs(x))) + max(-x, 0))`` for
    logits x, labels z and pos_weight q.

    Args:
        labels: A Tensor of logits' dtype and shape.
        logits: A floating Tensor.
        pos_weight: A coefficient (number or Tensor) for the positive examples.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of logits' shape: the elementwise weighted logistic loss.

    Raises:
        InvalidArgumentError: If shapes or dtypes differ.

    Example:
        >>> import eagerflow as ef
        >>> print(ef.nn.weighted_cross_entropy_with_logits([1.0], [0.0], 2.0).numpy().round(4))
        [1.3863]
    """
    op = "weighted_cross_entropy_with_logits"
    labels, logits = _logits_and_labels(labels, logits, op)
    _check_same_shape(logits, labels, "logits", "labels", op)
    m = _math()
    log_weight = 1 + (pos_weight - 1) * labels
    return (1 - labels) * logits + log_weight * (
        m.log1p(m.exp(-m.abs(logits))) + execute(RELU, (-logits,)))


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """Computes the log Poisson loss: ``exp(log_input) - log_input * targets``.

    With ``compute_full_loss`` the Stirling term ``targets * log(targets) - targets +
    0.5 * log(2 * pi * targets)`` is added where ``targets > 1`` (it is 0 for targets in
    [0, 1]).

    Args:
        targets: A Tensor of log_input's dtype and shape.
        log_input: A floating Tensor (the log of the predicted rate).
        compute_full_loss: Whether to add the Stirling approximation term.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of log_input's shape: the elementwise loss.

    Raises:
        InvalidArgumentError: If shapes or dtypes differ.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.log_poisson_loss([1.0], [0.0]).numpy().tolist()
        [1.0]
    """
    op = "log_poisson_loss"
    targets, log_input = _logits_and_labels(targets, log_input, op)
    _check_same_shape(log_input, targets, "log_input", "targets", op)
    m = _math()
    result = m.exp(log_input) - log_input * targets
    if compute_full_loss:
        def outside_unit(value, inside):
            # value where targets > 1 or targets < 0 (NaN there, as in TF), else inside.
            return _where(greater(targets, 1.0), value, _where(less(targets, 0.0), value, inside))

        # Evaluate the term at 1 inside [0, 1], so log(0) never reaches a gradient.
        safe = outside_unit(targets, ONES_LIKE_fn(targets))
        stirling = safe * m.log(safe) - safe + 0.5 * m.log((2.0 * math.pi) * safe)
        result = result + outside_unit(stirling, zeros_like_t(targets))
    return result


# ---------------------------------------------------------------------------------------
# Norms and normalization.
# ---------------------------------------------------------------------------------------

def _l2_loss_kernel(xp):
    def kernel(x):
        w = _upcast(xp, x)
        return ((w * w).sum() / 2).astype(x.dtype)
    return kernel


L2_LOSS = registry.primitive(
    "L2Loss", _l2_loss_kernel, dtypes=FLOAT, family="nn",
    shape_fn=lambda x: AbstractValue((), x.dtype),
    vjp=lambda g, x, out: g * x, saves=(0,),
    reference=lambda x: (np.sum(x.astype(np.float64) ** 2) / 2).astype(x.dtype),
    samples=lambda rng, dtype: [((_sample_values(rng, s, dtype, (-3.0, 3.0)),), {})
                                for s in UNARY_SHAPES])


def l2_loss(t, name=None):
    """Computes half the squared L2 norm of a tensor: ``sum(t ** 2) / 2``.

    Args:
        t: A floating Tensor.
        name: Unused (TF compatibility).

    Returns:
        A 0-d Tensor of t's dtype.

    Example:
        >>> import eagerflow as ef
        >>> ef.nn.l2_loss([1.0, 2.0]).numpy()
        np.float32(2.5)
    """
    return execute(L2_LOSS, (t,))


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
    m, r = _math(), _reduce()
    axis = _axes_list(axis)
    if x.dtype.is_complex:
        from eagerflow.ops.arithmetic import conj

        real_dtype = d.float32 if x.dtype is d.complex64 else d.float64
        square_sum = r.reduce_sum(cast(x * conj(x), real_dtype), axis, keepdims=True)
        inv_norm = m.rsqrt(m.maximum(square_sum, epsilon))
        return x * cast(inv_norm, x.dtype)
    square_sum = r.reduce_sum(m.square(x), axis, keepdims=True)
    return x * m.rsqrt(m.maximum(square_sum, epsilon))


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
    r, a = _reduce(), _array()
    axes = _axes_list(axes)
    y = cast(x, d.float32) if x.dtype is d.float16 else x
    mean = r.reduce_mean(y, axes, keepdims=True)
    centered = y - a.stop_gradient(mean)
    variance = r.reduce_mean(centered * centered, axes, keepdims=keepdims)
    if not keepdims:
        mean = a.squeeze(mean, axes)
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
    inv = _math().rsqrt(variance + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    shift = offset - mean * inv if offset is not None else -mean * inv
    return x * cast(inv, x.dtype) + cast(shift, x.dtype)


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
        bias = _array().reshape(bias, [-1] + [1] * (vshape.rank - 2))
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
            return _array().shape(x)
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
    from eagerflow.ops import random_ops

    uniform = random_ops.uniform(_noise_shape(x, noise_shape), dtype=x.dtype, seed=seed)
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
    start = _index().gather(convert_to_tensor(offsets), floormod(ids, p))
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
    gather = _index().gather
    if isinstance(params, (list, tuple)):
        if not params:
            raise _fail("embedding_lookup", "params must be a tensor or a non-empty list of "
                        "tensors.")
        if len(params) == 1:
            out = gather(params[0], ids)
        else:
            parts = [_tensor(p) for p in params]
            out = gather(_array().concat(parts, 0), _mod_positions(parts, ids))
    else:
        out = gather(params, ids)
    if max_norm is None:
        return out
    return _clip_embeddings(out, _tensor(ids).shape.rank, max_norm)


def _clip_embeddings(values, ids_rank, max_norm):
    """Scales each embedding (the axes after the ids' axes) to an L2 norm <= max_norm."""
    m = _math()
    rank = values.shape.rank
    axes = list(range(ids_rank, rank))
    squares = values * values
    l2sum = _reduce().reduce_sum(squares, axes, keepdims=True) if axes else squares
    positive = greater(l2sum, 0)
    # sqrt only of positive sums, so the gradient at a zero embedding stays finite.
    l2norm = _where(positive, m.sqrt(_where(positive, l2sum, l2sum + 1)), l2sum)
    return values * max_norm / m.maximum(l2norm, max_norm)
