"""Losses: the softmax, sparse softmax, sigmoid and weighted cross-entropies with logits,
log_poisson_loss and l2_loss.

The sparse softmax cross-entropy is a fused, stable primitive, per row with
``m = max(x)``::

    sparse_xent(x, label) = log(sum(exp(x - m))) - (x[label] - m)

(float16 and bfloat16 computed in float32); the other cross-entropies are composites of
stable primitives, and l2_loss (``sum(x ** 2) / 2``) is a primitive.
"""

from __future__ import annotations

import math

import numpy as np

from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.nn.activation_ops import LOG_SOFTMAX, RELU, SOFTMAX, _axis_attr
from eagerflow.ops.math.arithmetic import ONES_LIKE_fn, greater, greater_equal, less, zeros_like_t
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT, HOST_VALUE_CHECK, UNARY_SHAPES, _sample_values
from eagerflow.ops.array import reshape_ops, shape_ops
from eagerflow.ops.indexing import mask_ops
from eagerflow.ops.math import complex_math, unary_math
from eagerflow.ops.reduce import reductions
from eagerflow.ops.nn import _fail, _tensor, _upcast, _where
from eagerflow.ops.registry import AbstractValue

__all__ = [
    "sigmoid_cross_entropy_with_logits", "weighted_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
    "log_poisson_loss", "l2_loss",
]

EXPORTS = {
    "nn": ["sigmoid_cross_entropy_with_logits", "weighted_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
           "log_poisson_loss", "l2_loss"],
}


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


def _sparse_xent_kernel(xp, checked=True):
    """The kernel; ``checked=False`` (a captured step's, ``capture_forward``) reads nothing
    on the host: a label outside [0, classes) gives a NaN loss, as TF's GPU kernel does,
    and valid labels give exactly the checked kernel's values."""
    exp, logf, take = xp.exp, xp.log, xp.take_along_axis

    def kernel(logits, labels):
        _check_sparse(logits.shape, labels.shape, np.dtype(labels.dtype).name)
        classes = logits.shape[-1]
        if not checked and labels.size and classes:
            valid = (labels >= 0) & (labels < classes)
            work = _upcast(xp, logits)
            shifted = work - work.max(axis=-1, keepdims=True)
            lse = logf(exp(shifted).sum(axis=-1))
            picked = take(shifted, xp.where(valid, labels, 0)[..., None], axis=-1)[..., 0]
            loss = (lse - picked).astype(logits.dtype, copy=False)
            return xp.where(valid, loss, xp.asarray(np.nan, loss.dtype))
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
        depth = shape_ops.shape(logits)[-1]
    probs = execute(SOFTMAX, (logits,), {"axis": -1})
    onehot = mask_ops.one_hot(labels, depth, dtype=logits.dtype)
    return reshape_ops.expand_dims(g, -1) * (probs - onehot), None


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
    hint="labels must be class indices in [0, logits.shape[-1]).",
    host_sync=HOST_VALUE_CHECK,
    capture_forward=lambda xp: _sparse_xent_kernel(xp, checked=False))


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
    return -reductions.reduce_sum(labels * log_probs, axis=axis)


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
    zeros = zeros_like_t(logits)
    positive = greater_equal(logits, zeros)
    relu_logits = _where(positive, logits, zeros)
    neg_abs_logits = _where(positive, -logits, logits)
    return (relu_logits - logits * labels) + unary_math.log1p(unary_math.exp(neg_abs_logits))


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
    log_weight = 1 + (pos_weight - 1) * labels
    return (1 - labels) * logits + log_weight * (
        unary_math.log1p(unary_math.exp(-complex_math.abs(logits))) + execute(RELU, (-logits,)))


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
    result = unary_math.exp(log_input) - log_input * targets
    if compute_full_loss:
        def outside_unit(value, inside):
            # value where targets > 1 or targets < 0 (NaN there, as in TF), else inside.
            return _where(greater(targets, 1.0), value, _where(less(targets, 0.0), value, inside))

        # Evaluate the term at 1 inside [0, 1], so log(0) never reaches a gradient.
        safe = outside_unit(targets, ONES_LIKE_fn(targets))
        stirling = safe * unary_math.log(safe) - safe + 0.5 * unary_math.log((2.0 * math.pi) * safe)
        result = result + outside_unit(stirling, zeros_like_t(targets))
    return result


# ---------------------------------------------------------------------------------------
# l2_loss.
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
