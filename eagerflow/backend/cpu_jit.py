"""Compiled CPU kernels: loops that numpy cannot express in one pass, compiled by numba.

numpy runs a window kernel (a max pool, its gradient, a column scatter) as a dozen
calls, each a pass over memory, and its threads hand the GIL back and forth between
calls. A compiled loop does the same work in one pass and releases the GIL for the whole
call. numba is the optional ``jit`` extra: when it is absent, fails to import or fails to
compile a kernel, every caller runs its numpy kernel instead, with the same results.

A kernel is an ordinary Python function of arrays and integers, written for numba's
``nopython`` mode and declared with ``kernel(fn)``; nothing is imported or compiled until
the first call of ``compiled()``. Kernels take a ``(lo, hi)`` range of the batch and are
run over blocks by ``cpu_threads.run_blocks``: one thread pool for every CPU kernel, the
same fixed blocks (so the same bits) on any number of threads, and calls from any thread
(numba's own parallel layers refuse nested or concurrent launches on some platforms).
Compiled code is cached on disk (numba's ``cache=True``), so a process after the first
loads a kernel in milliseconds instead of compiling it for about a second.

``EAGERFLOW_CPU_KERNELS=numpy`` in the environment, or ``set_enabled(False)``, turns the
compiled kernels off. Inputs under ``MIN_ELEMENTS`` elements keep the numpy kernels (so
that small programs never import numba); the tests lower it to run the sweeps through
both forms.

Example:
    >>> import numpy as np
    >>> from eagerflow.backend import cpu_jit
    >>> def _double(x, out, lo, hi):
    ...     for i in range(lo, hi):
    ...         out[i] = 2.0 * x[i]
    >>> double = cpu_jit.kernel(_double)
    >>> x = np.arange(4.0)
    >>> out = np.empty_like(x)
    >>> fn = double.compiled()
    >>> (fn or _double)(x, out, 0, 4)
    >>> out.tolist()
    [0.0, 2.0, 4.0, 6.0]
"""

from __future__ import annotations

import logging
import os
import threading

__all__ = ["kernel", "enabled", "set_enabled", "wanted", "MIN_ELEMENTS", "Kernel"]

# Below this many elements the numpy kernels run: they cost a few microseconds more per
# call at most there, and a program of small tensors never pays numba's import (0.1-0.2 s).
MIN_ELEMENTS = 1 << 14

_log = logging.getLogger("eagerflow.backend.cpu_jit")
_lock = threading.Lock()
_setting = [os.environ.get("EAGERFLOW_CPU_KERNELS", "jit").strip().lower() != "numpy"]
_numba = []  # [module] once imported, [None] when numba is not usable here


def set_enabled(flag):
    """Turns the compiled kernels on (the default, when numba is installed) or off."""
    _setting[0] = bool(flag)


def _import_numba():
    if not _numba:
        with _lock:
            if not _numba:
                try:
                    import numba
                except Exception as exc:  # noqa: BLE001 - any failure means "not usable"
                    _log.debug("numba is not usable (%s); numpy kernels run.", exc)
                    numba = None
                _numba.append(numba)
    return _numba[0]


def enabled():
    """Whether compiled kernels run: they are on and numba imports."""
    return _setting[0] and _import_numba() is not None


def wanted(elements):
    """Whether a kernel over ``elements`` elements should use its compiled form."""
    return elements >= MIN_ELEMENTS and enabled()


class Kernel:
    """A Python loop compiled on first use (see the module docstring).

    Args:
        fn: The loop, in numba's nopython subset.
        signatures: Optional numba signature strings compiled at once on the first
            ``compiled()`` call (so that a failure to compile shows there, not midway
            through a kernel); without them numba compiles per argument types on call.
        **options: Further ``numba.njit`` options, over the defaults ``nogil=True`` and
            ``cache=True`` (generated source, which has no file, needs ``cache=False``;
            ``error_model="numpy"`` lets loops that divide run on vector units, since
            Python's model checks every division for a zero divisor).
    """

    def __init__(self, fn, signatures=None, **options):
        self.fn = fn
        self.signatures = signatures
        self.options = options
        self._dispatcher = []  # [dispatcher] once compiled, [None] when it failed

    @property
    def __name__(self):
        return self.fn.__name__

    def compiled(self):
        """The compiled function, or None when compiled kernels are off or unusable."""
        if not _setting[0]:
            return None
        if not self._dispatcher:
            numba = _import_numba()
            with _lock:
                if not self._dispatcher:
                    self._dispatcher.append(self._compile(numba))
        return self._dispatcher[0]

    def _compile(self, numba):
        if numba is None:
            return None
        try:
            options = {"nogil": True, "cache": True, **self.options}
            if self.signatures:
                return numba.njit(list(self.signatures), **options)(self.fn)
            return numba.njit(**options)(self.fn)
        except Exception as exc:  # noqa: BLE001 - a kernel that cannot compile falls back
            _log.warning("compiled kernel %s is not usable (%s); its numpy form runs.",
                         self.fn.__name__, exc)
            return None


def kernel(fn=None, *, signatures=None, **options):
    """Declares ``fn`` a compiled kernel (see ``Kernel``); usable as a decorator."""
    if fn is None:
        return lambda f: Kernel(f, signatures, **options)
    return Kernel(fn, signatures, **options)
