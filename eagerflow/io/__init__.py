"""``eagerflow.io``: safe, atomic on-disk storage shared by checkpoints and SavedModels.

``atomic`` writes files so a crash leaves the old or the new version, never a mix;
``bundle`` is the tensor file format (a checksummed JSON header plus raw little-endian
bytes; no pickle).

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> from eagerflow.io import bundle
    >>> p = bundle.write(os.path.join(tempfile.mkdtemp(), "b"), {"x": np.zeros(1)})
    >>> sorted(bundle.read(p))
    ['x']
"""

from eagerflow.io import atomic, bundle

__all__ = ["atomic", "bundle"]
