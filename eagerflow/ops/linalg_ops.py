"""Linear algebra on batches of matrices: matmul, einsum, transposes, diagonals, bands, norms.

Every primitive works on the two innermost axes of ``[..., M, N]`` inputs; leading axes are
batch axes, broadcast between operands the numpy way (as TF 2's ``BatchMatMulV2`` does).
Decompositions and solvers (inv, det, cholesky, qr, svd, eigh...) live in
:mod:`eagerflow.ops.linalg_decomp`.

Gradients use the usual matrix calculus with TF's complex convention (``g * conj(df/dx)``).

The family lives in one module per concept; this module re-exports their public names:

* :mod:`eagerflow.ops.matmul_ops`: matmul, matrix_transpose, adjoint, cross.
* :mod:`eagerflow.ops.diag_ops`: diag, diag_part, set_diag, band_part.
* :mod:`eagerflow.ops.einsum_ops`: einsum and its composites tensordot, matvec, trace,
  norm.

Example:
    >>> import eagerflow as ef
    >>> a = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> (a @ a).numpy().tolist()
    [[7.0, 10.0], [15.0, 22.0]]
"""

from __future__ import annotations

from eagerflow.ops.matmul_ops import (  # noqa: F401
    matmul, matrix_transpose, adjoint, cross,
)
from eagerflow.ops.diag_ops import (  # noqa: F401
    diag, diag_part, set_diag, band_part,
)
from eagerflow.ops.einsum_ops import (  # noqa: F401
    einsum, tensordot, matvec, trace, norm,
)

# The family's primitives and constants, and the helpers that other modules and tests
# reach through this module.
from eagerflow.ops.matmul_ops import (  # noqa: F401
    CROSS, MATMUL, MATRIX_TRANSPOSE,
)
from eagerflow.ops.diag_ops import (  # noqa: F401
    MATRIX_BAND_PART, MATRIX_DIAG, MATRIX_DIAG_PART, MATRIX_SET_DIAG,
)
from eagerflow.ops.einsum_ops import (  # noqa: F401
    EINSUM, _canonical_equation,
)

__all__ = [
    "matmul", "matrix_transpose", "adjoint", "einsum", "tensordot", "matvec", "trace", "diag",
    "diag_part", "set_diag", "band_part", "cross", "norm",
]

# Each part lists its own names in its EXPORTS (scripts/gen_api.py takes every name from
# exactly one module).
EXPORTS = {}
