"""TFRecord framing with masked CRC32C checksums, as TensorBoard's event files use.

Each record is ``uint64 length | uint32 masked_crc(length) | data | uint32 masked_crc(data)``,
little-endian. CRC32C (Castagnoli) is computed with a table-driven loop in pure Python, so no
compiled checksum package is needed. It costs about 0.25 µs per byte: nothing for scalars,
a few milliseconds for an image or a graph, which summaries write rarely.

Example:
    >>> from eagerflow.summary.records import crc32c, frame
    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    >>> len(frame(b"abc"))
    19
"""

from __future__ import annotations

import struct

__all__ = ["crc32c", "masked_crc32c", "frame", "read_records"]

_POLY = 0x82F63B78  # reflected Castagnoli polynomial


def _make_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_TABLE = _make_table()


def crc32c(data, crc=0):
    """The CRC32C checksum of ``data`` (bytes), optionally continuing from ``crc``.

    Args:
        data: bytes-like.
        crc: A previous checksum to extend (0 to start).

    Returns:
        The checksum as an unsigned 32-bit int.

    Example:
        >>> from eagerflow.summary.records import crc32c
        >>> crc32c(b"")
        0
    """
    table = _TABLE
    c = crc ^ 0xFFFFFFFF
    for byte in bytes(data):
        c = table[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc32c(data):
    """TFRecord's masked checksum: rotate right by 15 and add a constant (mod 2**32)."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data):
    """One TFRecord: the length, its masked CRC, the data and the data's masked CRC."""
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + bytes(data)
            + struct.pack("<I", masked_crc32c(data)))


def read_records(path):
    """Yields the payloads of a TFRecord file, verifying both checksums of each record.

    Args:
        path: The file to read.

    Yields:
        Each record's data as bytes.

    Raises:
        eagerflow.errors.DataLossError: A record is truncated or a checksum does not match.
    """
    from eagerflow import errors
    from eagerflow.io import untrusted

    blob = untrusted.read_regular(path)  # a FIFO or device is refused, never blocked on
    pos = 0
    while pos < len(blob):
        if pos + 12 > len(blob):
            raise errors.DataLossError(None, None, "%s: truncated record header at byte %d."
                                       % (path, pos))
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if hcrc != masked_crc32c(header):
            raise errors.DataLossError(None, None, "%s: corrupted record length at byte %d."
                                       % (path, pos))
        start = pos + 12
        end = start + length
        if end + 4 > len(blob):
            raise errors.DataLossError(None, None, "%s: truncated record at byte %d."
                                       % (path, pos))
        data = blob[start:end]
        (dcrc,) = struct.unpack("<I", blob[end:end + 4])
        if dcrc != masked_crc32c(data):
            raise errors.DataLossError(None, None, "%s: corrupted record data at byte %d."
                                       % (path, pos))
        yield data
        pos = end + 4
