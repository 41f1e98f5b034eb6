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
import sys
import threading

__all__ = ["kernel", "source_kernel", "cache_directory", "enabled", "enabled_setting",
           "set_enabled", "wanted", "MIN_ELEMENTS", "Kernel"]

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


def enabled_setting():
    """The switch ``set_enabled`` sets (whether or not numba imports)."""
    return _setting[0]


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


def cache_directory():
    """Where generated kernels' source files (and numba's compiled code beside them) live:
    ``EAGERFLOW_KERNEL_CACHE``, else ``$XDG_CACHE_HOME/eagerflow/kernels`` (``~/.cache``
    when unset); None when it cannot be made private to this user."""
    path = os.environ.get("EAGERFLOW_KERNEL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "eagerflow", "kernels")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError:
        return None
    # Files here are imported: a directory someone else may write into is not used.
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return path


def _source_function(source, name):
    """``name`` from ``source`` loaded from a file in ``cache_directory()`` (written once,
    atomically, and read back before use), or None when no file can be used."""
    import hashlib
    import importlib.util
    import tempfile

    directory = cache_directory()
    if directory is None:
        return None
    digest = hashlib.sha1(source.encode()).hexdigest()[:24]
    path = os.path.join(directory, "k_%s.py" % digest)
    try:
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != source:
            fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(source)
            os.replace(tmp, path)
            with open(path, encoding="utf-8") as f:
                if f.read() != source:
                    return None
        module_name = "eagerflow_kernel_" + digest
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            # numba finds a cached function's globals through its module's name.
            sys.modules[module_name] = module
        return getattr(module, name)
    except (OSError, ImportError, SyntaxError, AttributeError) as exc:
        _log.debug("generated kernel not cached on disk (%s)", exc)
        return None


def source_kernel(source, name, signatures=None, **options):
    """A kernel from generated source defining ``name`` (a module's text, its own
    imports included), cached on disk like a declared kernel: the text goes once into a
    file named by its digest under ``cache_directory()``, whose compiled code numba keeps
    beside it, so a later process loads it instead of compiling it again. Without a usable
    directory the source is compiled in memory, every process anew.
    """
    fn = _source_function(source, name)
    if fn is None:
        env = {}
        exec(compile(source, "<generated kernel>", "exec"), env)  # noqa: S102
        fn = env[name]
        options = dict(options, cache=False)
    return Kernel(fn, signatures, **options)


def kernel(fn=None, *, signatures=None, **options):
    """Declares ``fn`` a compiled kernel (see ``Kernel``); usable as a decorator."""
    if fn is None:
        return lambda f: Kernel(f, signatures, **options)
    return Kernel(fn, signatures, **options)
