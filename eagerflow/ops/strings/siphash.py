"""SipHash-2-4: the keyed 64-bit hash behind ``tf.strings.to_hash_bucket_strong``.

TF hashes a string ``s`` with a 128-bit key given as two 64-bit words ``(k0, k1)`` and
takes ``SipHash24(k0, k1, s) % num_buckets``; ``keras.layers.Hashing(salt=...)`` does the
same with the salt as the key. This is the published algorithm (Aumasson and Bernstein,
2012): the key words and the message are read little-endian, two compression rounds per
8-byte block and four finalization rounds. Unlike FarmHash it is keyed, so buckets cannot
be predicted (or attacked) without the key.

Example:
    >>> from eagerflow.ops.strings.siphash import siphash24
    >>> hex(siphash24(0x0706050403020100, 0x0F0E0D0C0B0A0908, bytes(range(15))))
    '0xa129ca6149be45e5'
"""

from __future__ import annotations

import struct

__all__ = ["siphash24"]

_M = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & _M


def _rounds(v0, v1, v2, v3, n):
    for _ in range(n):
        v0 = (v0 + v1) & _M
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _M
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _M
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _M
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(k0, k1, data):
    """The SipHash-2-4 of ``data`` (bytes) under the key words ``k0``, ``k1`` (taken
    modulo 2**64, so negative int64 keys mean what TF's uint64 cast makes of them)."""
    k0 &= _M
    k1 &= _M
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(data)
    whole = n - n % 8
    for (m,) in struct.iter_unpack("<Q", data[:whole]):
        v3 ^= m
        v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    # The last block: the remaining bytes, zero-padded, with the length's low byte on top.
    last = int.from_bytes(data[whole:], "little") | ((n & 0xFF) << 56)
    v3 ^= last
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
    v0 ^= last
    v2 ^= 0xFF
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3
