"""TFRecord framing with masked CRC32C checksums, as TensorBoard's event files use.

The framing and the checksum live in :mod:`eagerflow.io.tfrecord` (one implementation for
event files and TFRecord datasets); this module keeps the names the summary writer uses.

Example:
    >>> from eagerflow.summary.records import crc32c, frame
    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    >>> len(frame(b"abc"))
    19
"""

from __future__ import annotations

from eagerflow.io.tfrecord import crc32c, frame, masked_crc32c
from eagerflow.io.tfrecord import read_records as _read

__all__ = ["crc32c", "masked_crc32c", "frame", "read_records"]


def read_records(path):
    """Yields the payloads of an (uncompressed) TFRecord file, verifying both checksums.

    Raises:
        eagerflow.errors.DataLossError: A record is truncated or a checksum does not match.
    """
    return _read(path)
