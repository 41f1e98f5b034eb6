"""Reductions and scans: ``reduce_sum`` and friends, ``argmax``, ``cumsum``, ``cumprod``.

A reduction primitive takes two static attrs: ``axis``, a sorted tuple of non-negative axes
or None for "every axis", and ``keepdims``. The public functions turn TF's many axis forms
(None, an int, a list, a 1-D int tensor, negative values) into that tuple and reject
out-of-range or repeated axes with the op, the axis, the rank and the valid range.

The family lives in one module per concept; this module re-exports their public names:

* :mod:`eagerflow.ops.reductions`: the reduction primitives (reduce_sum, reduce_prod,
  reduce_mean, reduce_max, reduce_min, reduce_any, reduce_all) and argmax, argmin.
* :mod:`eagerflow.ops.reduction_composites`: reduce_logsumexp, reduce_variance, reduce_std,
  reduce_euclidean_norm, count_nonzero.
* :mod:`eagerflow.ops.scans`: cumsum, cumprod, cumulative_logsumexp.
* :mod:`eagerflow.ops.reduction_common`: the axis handling they share.

Example:
    >>> import eagerflow as ef
    >>> x = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> ef.reduce_sum(x, axis=-1).numpy().tolist()
    [3.0, 7.0]
"""

from __future__ import annotations

from eagerflow.ops.scans import (  # noqa: F401
    cumsum, cumprod, cumulative_logsumexp,
)
from eagerflow.ops.reductions import (  # noqa: F401
    reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, reduce_any, reduce_all, argmax,
    argmin,
)
from eagerflow.ops.reduction_composites import (  # noqa: F401
    reduce_logsumexp, reduce_variance, reduce_std, reduce_euclidean_norm, count_nonzero,
)

# The family's primitives and constants, and the helpers that other modules and tests
# reach through this module.
from eagerflow.ops.scans import (  # noqa: F401
    CUMPROD, CUMSUM, CUMULATIVE_LOGSUMEXP,
)
from eagerflow.ops.reductions import (  # noqa: F401
    ALL_, ANY, ARGMAX, ARGMIN, BROADCAST_REDUCED, MAX, MEAN, MIN, PROD, SUM, _ALL_AXES,
    _ATTR_CACHE,
)

__all__ = [
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
    "reduce_all", "reduce_logsumexp", "reduce_variance", "reduce_std", "reduce_euclidean_norm",
    "count_nonzero", "argmax", "argmin", "cumsum", "cumprod", "cumulative_logsumexp",
]

# Each part lists its own names in its EXPORTS (scripts/gen_api.py takes every name from
# exactly one module).
EXPORTS = {}
