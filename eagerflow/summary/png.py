"""A minimal PNG encoder (8-bit grayscale, gray+alpha, RGB or RGBA; zlib; no filtering).

Example:
    >>> import numpy as np
    >>> from eagerflow.summary.png import encode_png
    >>> encode_png(np.zeros((2, 3, 3), np.uint8))[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["encode_png"]

_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG color type


def _chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def encode_png(image):
    """Encodes a ``uint8`` array of shape ``[height, width, channels]`` as PNG bytes.

    Args:
        image: uint8 array with 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA) channels.

    Returns:
        The PNG file as bytes.

    Raises:
        ValueError: The array is not uint8 ``[h, w, c]`` with c in 1..4.
    """
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in _COLOR_TYPE:
        raise ValueError("encode_png: image must be uint8 [height, width, channels] with 1-4 "
                         "channels, got %s%s." % (image.dtype, list(image.shape)))
    height, width, channels = image.shape
    # Each scanline starts with filter type 0 (none).
    rows = np.concatenate([np.zeros((height, 1), np.uint8),
                           np.ascontiguousarray(image).reshape(height, width * channels)], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPE[channels], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b""))
