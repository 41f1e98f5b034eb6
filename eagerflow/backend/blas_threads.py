"""The BLAS thread budget while several CPU partitions compute at once.

numpy's OpenBLAS runs each matmul on all cores. When a multi-device graph runs two logical
CPU partitions concurrently (MirroredStrategy's replicas, or any graph placed on several
logical CPUs), each partition's matmuls start their own full set of BLAS threads, and on a
2-core machine four spinning threads share two cores: a mirrored MLP step measured 1.7-3.4x
slower than one device, against 0.8-1.0x with one BLAS thread per partition.

``share(n)`` is a context manager for ``n`` partitions computing concurrently: it divides
the BLAS threads between them (at least one each) and restores the setting when the last
concurrent user leaves. Only numpy's bundled OpenBLAS is controlled (found among the
process's loaded libraries on Linux); elsewhere ``share`` does nothing.

Example:
    >>> from eagerflow.backend import blas_threads
    >>> with blas_threads.share(2):
    ...     pass
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

__all__ = ["share", "get_num_threads"]

_NAMES = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
          ("openblas_get_num_threads", "openblas_set_num_threads"))

_lock = threading.Lock()
_api = []  # [(get, set)] once found, [None] when there is none
_active = [0, None]  # partitions sharing now, the setting before the first came


def _find():
    if _api:
        return _api[0]
    found = None
    try:
        import numpy  # noqa: F401 - its BLAS must be loaded to be found

        paths = set()
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if "openblas" in path.lower() and ".so" in path:
                    paths.add(path)
        for path in sorted(paths):
            lib = ctypes.CDLL(path)
            for get_name, set_name in _NAMES:
                if hasattr(lib, get_name) and hasattr(lib, set_name):
                    get_fn, set_fn = getattr(lib, get_name), getattr(lib, set_name)
                    get_fn.restype = ctypes.c_int
                    set_fn.argtypes = (ctypes.c_int,)
                    found = (get_fn, set_fn)
                    break
            if found:
                break
    except (OSError, AttributeError, ValueError):
        found = None
    _api.append(found)
    return found


def get_num_threads():
    """OpenBLAS's thread count now, or None when it cannot be controlled here."""
    api = _find()
    return None if api is None else int(api[0]())


@contextlib.contextmanager
def share(n):
    """Divides the BLAS threads among ``n`` more concurrent partitions for the block."""
    api = _find() if n > 1 else None
    if api is None:
        yield
        return
    with _lock:
        if _active[0] == 0:
            _active[1] = int(api[0]())
        _active[0] += n
        api[1](max(1, _active[1] // _active[0]))
    try:
        yield
    finally:
        with _lock:
            _active[0] -= n
            api[1](_active[1] if _active[0] == 0 else max(1, _active[1] // _active[0]))
