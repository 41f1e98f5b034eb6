"""Matrix decompositions and solvers: inv, det, slogdet, cholesky, solve, qr, svd, eigh.

Each primitive works on batches ``[..., M, N]`` (numpy's batched ``linalg`` on the CPU,
cupy's on the GPU). Gradients are written with the ops of :mod:`eagerflow.ops.linalg_ops`
and of these modules:

* ``inv``: ``dA = -A^-H G A^-H``; ``det``: ``dA = g conj(det) A^-H``;
  ``slogdet``: ``dA = g A^-H``.
* ``cholesky`` (``A = L L^H``): ``dA = sym(L^-H Phi(L^H G) L^-1)`` where ``Phi`` takes the
  lower triangle with a halved diagonal and ``sym(X) = (X + X^H) / 2``, as TF does.
* ``solve``/``triangular_solve`` (``X = A^-1 B``): ``dB = A^-H G``, ``dA = -dB X^H``.
* ``qr``, ``svd`` and ``eigh`` follow the standard results (TF's formulas); the vectors'
  gradients assume distinct singular values / eigenvalues and a loss that does not depend
  on each vector's sign (or complex phase), which is the only well-defined case.

The family lives in one module per concept; this module re-exports their public names:

* :mod:`eagerflow.ops.linalg_solvers`: inv, det, slogdet, solve, triangular_solve.
* :mod:`eagerflow.ops.linalg_factorizations`: cholesky, cholesky_solve, logdet, lstsq, qr,
  svd, eigh, eigvalsh.
* :mod:`eagerflow.ops.decomp_common`: the checks, helpers and samples they share.

Example:
    >>> import eagerflow as ef
    >>> ef.linalg.det([[2.0, 0.0], [0.0, 3.0]]).numpy()
    np.float32(6.0)
"""

from __future__ import annotations

from eagerflow.ops.linalg_solvers import (  # noqa: F401
    inv, det, slogdet, solve, triangular_solve,
)
from eagerflow.ops.linalg_factorizations import (  # noqa: F401
    logdet, cholesky, cholesky_solve, lstsq, qr, svd, eigh, eigvalsh,
)

# The family's primitives and constants, and the helpers that other modules and tests
# reach through this module.
from eagerflow.ops.decomp_common import (  # noqa: F401
    DECOMP_DTYPES,
)
from eagerflow.ops.linalg_solvers import (  # noqa: F401
    DET, INV, SLOGDET, SOLVE, SlogdetResult, TRIANGULAR_SOLVE, _TRIANGULAR_MIN_N,
)
from eagerflow.ops.linalg_factorizations import (  # noqa: F401
    CHOLESKY, EIGH, QR, QrResult, SVD,
)

__all__ = [
    "inv", "det", "slogdet", "logdet", "cholesky", "cholesky_solve", "solve", "triangular_solve",
    "lstsq", "qr", "svd", "eigh", "eigvalsh",
]

# Each part lists its own names in its EXPORTS (scripts/gen_api.py takes every name from
# exactly one module).
EXPORTS = {}
