"""Zero-copy exchange with numpy, cupy and torch through DLPack.

Example:
    >>> import numpy as np, eagerflow as ef
    >>> t = ef.experimental.dlpack.from_dlpack(np.arange(3.0))
    >>> np.from_dlpack(t).tolist()
    [0.0, 1.0, 2.0]
"""

from eagerflow.tensor import from_dlpack, to_dlpack  # noqa: F401

__all__ = ["from_dlpack", "to_dlpack"]
