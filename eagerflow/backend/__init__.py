"""Array backends: one ``xp`` interface over numpy (CPU) and cupy (GPU).

A kernel factory receives a :class:`Backend` and uses it like the numpy module
(``xp.add``, ``xp.linalg.inv``); functions that live outside numpy's namespace are reached
through ``xp.special`` (scipy.special / cupyx.scipy.special) and ``xp.scipy_linalg``.
cupy and scipy are imported only when first needed, so ``import eagerflow`` stays fast.
"""

from eagerflow.backend.base import Backend, get_backend, numpy_backend

__all__ = ["Backend", "get_backend", "numpy_backend"]
