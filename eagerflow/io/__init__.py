"""``eagerflow.io``: files, TFRecords, Examples, CSV, images (``tf.io``), and the safe,
atomic on-disk storage shared by checkpoints and SavedModels.

``atomic`` writes files so a crash leaves the old or the new version, never a mix;
``bundle`` is the tensor file format (a checksummed JSON header plus raw little-endian
bytes; no pickle); ``tfrecord`` is TF's record format; ``gfile`` the file system functions.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> from eagerflow.io import bundle
    >>> p = bundle.write(os.path.join(tempfile.mkdtemp(), "b"), {"x": np.zeros(1)})
    >>> sorted(bundle.read(p))
    ['x']
"""

from eagerflow.io import atomic, bundle  # noqa: F401

# The tf.io functions load on first use: checkpoints import this package for atomic and
# bundle alone, and should not pay for protobuf messages, CSV or image codecs.
_LAZY = {
    "gfile": "eagerflow.io.gfile", "tfrecord": "eagerflow.io.tfrecord",
    "FixedLenFeature": "eagerflow.ops.io.example", "VarLenFeature": "eagerflow.ops.io.example",
    "parse_example": "eagerflow.ops.io.example", "parse_single_example": "eagerflow.ops.io.example",
    "parse_tensor": "eagerflow.ops.io.example", "serialize_tensor": "eagerflow.ops.io.example",
    "decode_image": "eagerflow.ops.io.image_codecs", "decode_jpeg": "eagerflow.ops.io.image_codecs",
    "decode_png": "eagerflow.ops.io.image_codecs", "encode_jpeg": "eagerflow.ops.io.image_codecs",
    "encode_png": "eagerflow.ops.io.image_codecs", "TFRecordOptions": "eagerflow.io.tfrecord",
    "TFRecordWriter": "eagerflow.io.tfrecord", "decode_csv": "eagerflow.ops.io.csv_ops",
    "matching_files": "eagerflow.ops.io.file_ops", "read_file": "eagerflow.ops.io.file_ops",
    "write_file": "eagerflow.ops.io.file_ops",
}

__all__ = ["atomic", "bundle"] + sorted(_LAZY)


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError("module 'eagerflow.io' has no attribute %r" % name)
    import importlib

    mod = importlib.import_module(module)
    value = mod if module.endswith("." + name) else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
