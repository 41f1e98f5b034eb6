"""Fingerprint64: FarmHash's 64-bit fingerprint (the ``farmhashna`` variant), as TF uses it.

``tf.strings.to_hash_bucket_fast`` and ``keras.layers.Hashing`` map a string to
``Fingerprint64(s) % num_buckets``; the values here are bit-identical to TF's, so hashed
features agree between the two. A fingerprint is stable across platforms and versions (the
algorithm is frozen); it is not a cryptographic hash.

Example:
    >>> from eagerflow.ops.fingerprint import fingerprint64
    >>> hex(fingerprint64(b""))
    '0x9ae16a3b2f90404f'
"""

from __future__ import annotations

__all__ = ["fingerprint64"]

_M = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66BE98F6FC1
_K2 = 0x9AE16A3B2F90404F


def _fetch64(s, i):
    return int.from_bytes(s[i:i + 8], "little")


def _fetch32(s, i):
    return int.from_bytes(s[i:i + 4], "little")


def _rotate(v, shift):
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M


def _shift_mix(v):
    return v ^ (v >> 47)


def _hash_len16(u, v, mul):
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _hash_len0to16(s, n):
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _M
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & _M
        d = ((_rotate(a, 25) + b) * mul) & _M
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _fetch32(s, 0)
        return _hash_len16((n + (a << 3)) & _M, _fetch32(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M) * _K2) & _M
    return _K2


def _hash_len17to32(s, n):
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M
    d = (_fetch64(s, n - 16) * _K2) & _M
    return _hash_len16((_rotate((a + b) & _M, 43) + _rotate(c, 30) + d) & _M,
                       (a + _rotate((b + _K2) & _M, 18) + c) & _M, mul)


def _hash_len33to64(s, n):
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M
    d = (_fetch64(s, n - 16) * _K2) & _M
    y = (_rotate((a + b) & _M, 43) + _rotate(c, 30) + d) & _M
    z = _hash_len16(y, (a + _rotate((b + _K2) & _M, 18) + c) & _M, mul)
    e = (_fetch64(s, 16) * mul) & _M
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _M
    h = ((z + _fetch64(s, n - 24)) * mul) & _M
    return _hash_len16((_rotate((e + f) & _M, 43) + _rotate(g, 30) + h) & _M,
                       (e + _rotate((f + a) & _M, 18) + g) & _M, mul)


def _weak_hash32(s, i, a, b):
    w, x, y, z = (_fetch64(s, i), _fetch64(s, i + 8), _fetch64(s, i + 16),
                  _fetch64(s, i + 24))
    a = (a + w) & _M
    b = _rotate((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rotate(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def fingerprint64(s):
    """FarmHash Fingerprint64 of a byte string, as an unsigned Python int."""
    n = len(s)
    if n <= 16:
        return _hash_len0to16(s, n)
    if n <= 32:
        return _hash_len17to32(s, n)
    if n <= 64:
        return _hash_len33to64(s, n)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M
    z = (_shift_mix((y * _K2 + 113) & _M) * _K2) & _M
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _fetch64(s, 0)) & _M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rotate((x + y + v0 + _fetch64(s, i + 8)) & _M, 37) * _K1) & _M
        y = (_rotate((y + v1 + _fetch64(s, i + 48)) & _M, 42) * _K1) & _M
        x ^= w1
        y = (y + v0 + _fetch64(s, i + 40)) & _M
        z = (_rotate((z + w0) & _M, 33) * _K1) & _M
        v0, v1 = _weak_hash32(s, i, (v1 * _K1) & _M, (x + w0) & _M)
        w0, w1 = _weak_hash32(s, i + 32, (z + w1) & _M, (y + _fetch64(s, i + 16)) & _M)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w0 + ((n - 1) & 63)) & _M
    v0 = (v0 + w0) & _M
    w0 = (w0 + v0) & _M
    x = (_rotate((x + y + v0 + _fetch64(s, i + 8)) & _M, 37) * mul) & _M
    y = (_rotate((y + v1 + _fetch64(s, i + 48)) & _M, 42) * mul) & _M
    x ^= (w1 * 9) & _M
    y = (y + v0 * 9 + _fetch64(s, i + 40)) & _M
    z = (_rotate((z + w0) & _M, 33) * mul) & _M
    v0, v1 = _weak_hash32(s, i, (v1 * mul) & _M, (x + w0) & _M)
    w0, w1 = _weak_hash32(s, i + 32, (z + w1) & _M, (y + _fetch64(s, i + 16)) & _M)
    z, x = x, z
    return _hash_len16((_hash_len16(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _M,
                       (_hash_len16(v1, w1, mul) + x) & _M, mul)
