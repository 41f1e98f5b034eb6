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

from eagerflow.io import atomic, bundle, gfile, tfrecord  # noqa: F401
from eagerflow.io.example import (  # noqa: F401
    FixedLenFeature, VarLenFeature, parse_example, parse_single_example, parse_tensor,
    serialize_tensor,
)
from eagerflow.io.image_codecs import (  # noqa: F401
    decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png,
)
from eagerflow.io.tfrecord import TFRecordOptions, TFRecordWriter  # noqa: F401
from eagerflow.ops.csv_ops import decode_csv  # noqa: F401
from eagerflow.ops.file_ops import matching_files, read_file, write_file  # noqa: F401

__all__ = ["atomic", "bundle", "gfile", "tfrecord", "read_file", "write_file",
           "matching_files", "decode_csv", "TFRecordWriter", "TFRecordOptions",
           "FixedLenFeature", "VarLenFeature", "parse_single_example", "parse_example",
           "serialize_tensor", "parse_tensor", "decode_png", "encode_png", "decode_jpeg",
           "encode_jpeg", "decode_image"]
