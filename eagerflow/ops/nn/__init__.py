"""Neural-network ops (``tf.nn``): activations, softmax, cross-entropy, normalization.

Primitives are the ops on hot paths or that need a fused, numerically stable kernel: the
elementwise activations (relu, relu6, leaky_relu, elu, selu, softplus, softsign, gelu),
softmax, log_softmax, sparse softmax cross-entropy and l2_loss. Everything else (silu, the
other losses, moments, batch_normalization, bias_add, dropout, embedding_lookup...) is a
composite of primitives and takes its gradient from theirs.

The family is one module per concept in this package:

* :mod:`eagerflow.ops.nn.activation_ops`: relu ... softsign, gelu, silu, swish, crelu,
  softmax, log_softmax (kernels in ``softmax_kernels`` and ``gelu_kernels``).
* :mod:`eagerflow.ops.nn.loss_ops`: the cross-entropies, log_poisson_loss and l2_loss.
* :mod:`eagerflow.ops.nn.normalization_ops`: l2_normalize, moments, batch_normalization.
* :mod:`eagerflow.ops.nn.nn_layer_ops`: bias_add, dropout, embedding_lookup.
* this package's ``__init__``: the helpers they share.

Example:
    >>> import eagerflow as ef
    >>> ef.nn.relu(ef.constant([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]

Convolutions: ``tf.nn.conv1d/conv2d/conv3d``, ``convolution``, transposed and depthwise.

One N-D primitive (1 to 3 spatial dimensions) computes every convolution::

    out[n, p, o] = sum_{k, c} pad(x)[n, p * stride + k * dilation, g(o) * Cg + c] * w[k, c, o]

where ``p`` runs over output positions, ``k`` over kernel taps, ``g(o) = o // (O / groups)``
is the group of output channel ``o`` and ``Cg = C / groups`` (``groups = 1`` for a plain
convolution, ``groups = C`` for a depthwise one).

The family is one module per concept in this package:

* :mod:`eagerflow.ops.nn.window_geometry`: data formats, attribute checks, output sizes, SAME
  padding and window views, shared with pooling.
* :mod:`eagerflow.ops.nn.conv_kernels`: the ``Conv``, ``ConvBackpropInput`` and
  ``ConvBackpropFilter`` primitives (plain and depthwise).
* :mod:`eagerflow.ops.nn.conv_public`: the ``tf.nn`` functions.

Example:
    >>> import eagerflow as ef
    >>> x = ef.ones([1, 4, 4, 1])
    >>> w = ef.ones([3, 3, 1, 1])
    >>> ef.nn.conv2d(x, w, strides=1, padding="SAME")[0, :, :, 0].numpy().tolist()[0]
    [4.0, 6.0, 6.0, 4.0]

The helpers here are shared by the nn modules: conversions, errors and upcasting.
"""

from __future__ import annotations

from eagerflow import errors
from eagerflow.ops.math.arithmetic import SELECT
from eagerflow.ops.dispatch import execute
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = []

EXPORTS = {}


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
