"""``CheckNumerics``: passes a tensor through, failing if it holds NaN or infinity.

Its gradient checks the incoming gradient the same way, as TF's does.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import HOST_VALUE_CHECK

__all__ = ["CHECK_NUMERICS", "check_numerics"]

_FLOATS = (d.float16, d.bfloat16, d.float32, d.float64, d.complex64, d.complex128)


def _kernel(xp):
    def kernel(x, *, message):
        finite = xp.isfinite(x)
        if not bool(finite.all()):
            has_nan = bool(xp.isnan(x).any())
            has_inf = bool((~finite & ~xp.isnan(x)).any())
            what = "NaN and Inf" if has_nan and has_inf else ("NaN" if has_nan else "Inf")
            raise errors.InvalidArgumentError(
                None, "CheckNumerics", "%s : Tensor had %s values" % (message, what))
        return x
    return kernel


def _samples(rng, dtype):
    return [((rng.standard_normal((2, 3)).astype(dtype.np_dtype),), {"message": "checked"})]


CHECK_NUMERICS = registry.primitive(
    "CheckNumerics", _kernel, family="debug", dtypes=_FLOATS, stateful=True,
    host_sync=HOST_VALUE_CHECK,
    samples=_samples, reference=lambda x, message: np.array(x),
    sweep_dtypes=(d.float32, d.float64),
    shape_fn=lambda x, message: x)


@registry.defvjp(CHECK_NUMERICS, saves=())
def _check_numerics_vjp(g, x, out, message):
    return execute(CHECK_NUMERICS, (g,), {
        "message": "Not a number (NaN) or infinity (Inf) values detected in gradient. %s"
                   % message})


def check_numerics(tensor, message, name=None):
    """Returns ``tensor``, raising InvalidArgumentError if it has NaN or Inf values.

    Args:
        tensor: A floating-point tensor.
        message: The text the error starts with.
        name: Accepted for compatibility.

    Raises:
        InvalidArgumentError: When the tensor (eagerly, or when the graph runs) holds NaN or
            infinity; the message says which.

    Example:
        >>> import eagerflow as ef
        >>> ef.debugging.check_numerics(ef.constant([1.0, 2.0]), "ok").numpy().tolist()
        [1.0, 2.0]
    """
    return execute(CHECK_NUMERICS, (tensor,), {"message": str(message)})
