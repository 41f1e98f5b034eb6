"""``C += A @ B`` in place on numpy's own BLAS (one GEMM call with beta = 1).

numpy's ``matmul`` always writes a fresh product (beta = 0), so accumulating GEMMs would
need a temporary and an add pass. This module calls the ``cblas_?gemm`` of the BLAS that
numpy itself is linked to (the OpenBLAS in numpy's wheels), so the accumulation runs in the
same thread pool as every other matmul: a second BLAS library (scipy's) has its own worker
threads, which keep spinning after a call and take the core the next numpy GEMM needs.

When numpy's BLAS cannot be found (another build of numpy), ``gemm_accumulate`` computes
the product and adds it, with the same result up to rounding.

Example:
    >>> import numpy as np
    >>> from eagerflow.backend.cpu_blas import gemm_accumulate
    >>> c = np.ones((2, 2), np.float32)
    >>> gemm_accumulate(c, np.eye(2, dtype=np.float32), np.full((2, 2), 2.0, np.float32))
    >>> c.tolist()
    [[3.0, 3.0], [3.0, 3.0]]
"""

from __future__ import annotations

import glob
import os

import numpy as np

__all__ = ["gemm_accumulate", "available"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_GEMMS = None          # {np.dtype: ctypes function} once looked up; {} when not found


def _lookup():
    """numpy's bundled ILP64 OpenBLAS ``cblas_sgemm``/``cblas_dgemm``, or {}."""
    import ctypes  # on first use: import eagerflow stays light

    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        found = {}
        for dtype, name, real in ((np.dtype(np.float32), "sgemm", ctypes.c_float),
                                  (np.dtype(np.float64), "dgemm", ctypes.c_double)):
            # Only the 64-bit-integer interface (symbol suffix 64_) has a known int width.
            fn = getattr(lib, "scipy_cblas_%s64_" % name, None) or getattr(
                lib, "cblas_%s64_" % name, None)
            if fn is None:
                continue
            i64, ptr = ctypes.c_int64, ctypes.c_void_p
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, i64, i64, i64, real,
                           ptr, i64, ptr, i64, real, ptr, i64]
            fn.restype = None
            found[dtype] = fn
        if found:
            return found
    return {}


def available(dtype):
    """Whether ``gemm_accumulate`` runs in place on numpy's BLAS for ``dtype``."""
    global _GEMMS
    if _GEMMS is None:
        _GEMMS = _lookup()
    return np.dtype(dtype) in _GEMMS


def _rows(a):
    """(transposed flag, leading dimension) of a matrix with one unit-stride axis, or None."""
    item = a.itemsize
    if a.strides[1] == item and a.strides[0] % item == 0 and a.strides[0] >= item * a.shape[1]:
        return _NO_TRANS, max(a.strides[0] // item, 1)
    if a.strides[0] == item and a.strides[1] % item == 0 and a.strides[1] >= item * a.shape[0]:
        return _TRANS, max(a.strides[1] // item, 1)
    return None


def gemm_accumulate(c, a, b):
    """``c += a @ b`` in place for 2-D numpy arrays ``c [M, N]``, ``a [M, K]``, ``b [K, N]``.

    ``c`` needs unit-stride rows (a row block of a C-contiguous array is fine); ``a`` and
    ``b`` may be row- or column-major views (a transpose costs nothing). Other layouts and
    dtypes take the product-and-add form.
    """
    m, n = c.shape
    k = a.shape[1]
    if not (m and n and k):
        return
    dtype = c.dtype
    if (available(dtype) and a.dtype == dtype and b.dtype == dtype
            and c.strides[1] == c.itemsize and c.strides[0] % c.itemsize == 0):
        la, lb = _rows(a), _rows(b)
        if la is not None and lb is not None:
            ldc = max(c.strides[0] // c.itemsize, 1)
            _GEMMS[dtype](_ROW_MAJOR, la[0], lb[0], m, n, k, 1.0, a.ctypes.data, la[1],
                          b.ctypes.data, lb[1], 1.0, c.ctypes.data, ldc)
            return
    c += np.matmul(a, b)
