"""The Backend object: an array module plus the few extras kernels need."""

from __future__ import annotations

import importlib

import numpy as np

from eagerflow import errors

NUMPY = 0
CUPY = 1


class Backend:
    """An array module (numpy or cupy) seen through one interface.

    Attribute access falls through to the array module, so ``backend.add is numpy.add`` on
    the CPU. Kernels are resolved once per backend, so this indirection is never paid per op.

    Attributes:
        name: ``"numpy"`` or ``"cupy"``.
        index: A small integer used to index per-backend kernel caches.
        module: The array module itself.
    """

    def __init__(self, name, index, module, special_module, linalg_module):
        self.name = name
        self.index = index
        self.module = module
        self._special_name = special_module
        self._linalg_name = linalg_module
        self._special = None
        self._scipy_linalg = None

    def __getattr__(self, attr):
        # Only reached for names not set on the instance: delegate to the array module.
        return getattr(self.module, attr)

    @property
    def special(self):
        """scipy.special (CPU) or cupyx.scipy.special (GPU), imported on first use."""
        if self._special is None:
            self._special = importlib.import_module(self._special_name)
        return self._special

    @property
    def scipy_linalg(self):
        """scipy.linalg (CPU) or cupyx.scipy.linalg (GPU), imported on first use."""
        if self._scipy_linalg is None:
            self._scipy_linalg = importlib.import_module(self._linalg_name)
        return self._scipy_linalg

    @property
    def is_gpu(self):
        return self.index == CUPY

    def to_numpy(self, array):
        """Returns a numpy copy (or the array itself on the CPU)."""
        if self.index == NUMPY:
            return array
        return self.module.asnumpy(array)

    def __repr__(self):
        return "<Backend %s>" % self.name


numpy_backend = Backend("numpy", NUMPY, np, "scipy.special", "scipy.linalg")
_cupy_backend = None


def cupy_backend():
    """Returns the cupy Backend, importing cupy on first call.

    Raises:
        NotFoundError: If cupy is not installed or no GPU is visible.
    """
    global _cupy_backend
    if _cupy_backend is None:
        try:
            import cupy
        except ImportError as exc:
            raise errors.NotFoundError(
                None, None,
                "A GPU device was requested but cupy is not installed. Install the GPU extra: "
                "pip install 'eagerflow[gpu]' (or a cupy wheel matching your CUDA).",
            ) from exc
        _cupy_backend = Backend("cupy", CUPY, cupy, "cupyx.scipy.special", "cupyx.scipy.linalg")
    return _cupy_backend


def get_backend(kind):
    """Returns the backend for a device type (``"CPU"`` or ``"GPU"``)."""
    if kind == "CPU":
        return numpy_backend
    if kind == "GPU":
        return cupy_backend()
    raise errors.InvalidArgumentError(None, None, "Unknown device type %r" % (kind,))
