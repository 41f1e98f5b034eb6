"""Neural-network ops (``tf.nn``): activations, softmax, cross-entropy, normalization.

Primitives are the ops on hot paths or that need a fused, numerically stable kernel: the
elementwise activations (relu, relu6, leaky_relu, elu, selu, softplus, softsign), softmax,
log_softmax, sparse softmax cross-entropy and l2_loss. Everything else (gelu, silu, the
other losses, moments, batch_normalization, bias_add, dropout, embedding_lookup...) is a
composite of primitives and takes its gradient from theirs.

The family lives in one module per concept; this module re-exports their public names:

* :mod:`eagerflow.ops.activation_ops`: relu ... softsign, gelu, silu, swish, crelu,
  softmax, log_softmax.
* :mod:`eagerflow.ops.loss_ops`: the cross-entropies, log_poisson_loss and l2_loss.
* :mod:`eagerflow.ops.normalization_ops`: l2_normalize, moments, batch_normalization.
* :mod:`eagerflow.ops.nn_layer_ops`: bias_add, dropout, embedding_lookup.
* :mod:`eagerflow.ops.nn_common`: the helpers they share.

Example:
    >>> import eagerflow as ef
    >>> ef.nn.relu(ef.constant([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from eagerflow.ops.activation_ops import (  # noqa: F401
    relu, relu6, leaky_relu, elu, selu, gelu, silu, swish, softplus, softsign, softmax,
    log_softmax, crelu,
)
from eagerflow.ops.loss_ops import (  # noqa: F401
    sigmoid_cross_entropy_with_logits, weighted_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits, log_poisson_loss,
    l2_loss,
)
from eagerflow.ops.normalization_ops import (  # noqa: F401
    l2_normalize, moments, batch_normalization,
)
from eagerflow.ops.nn_layer_ops import (  # noqa: F401
    bias_add, dropout, embedding_lookup,
)

# The family's primitives and constants, and the helpers that other modules and tests
# reach through this module.
from eagerflow.ops.activation_ops import (  # noqa: F401
    ELU, LEAKY_RELU, LOG_SOFTMAX, RELU, RELU6, SELU, SELU_ALPHA, SELU_SCALE, SOFTMAX, SOFTPLUS,
    SOFTSIGN,
)
from eagerflow.ops.loss_ops import (  # noqa: F401
    L2_LOSS, SPARSE_SOFTMAX_XENT,
)

__all__ = [
    "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "softplus", "softsign",
    "softmax", "log_softmax", "sigmoid_cross_entropy_with_logits",
    "weighted_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits", "log_poisson_loss", "l2_normalize", "l2_loss",
    "moments", "batch_normalization", "bias_add", "dropout", "embedding_lookup", "crelu",
]

# Each part lists its own names in its EXPORTS (scripts/gen_api.py takes every name from
# exactly one module).
EXPORTS = {}
