"""The Philox4x32-10 bit generator (Salmon et al., "Parallel random numbers: as easy as 1, 2,
3", SC 2011).

128 random bits are a pure function ``philox(key, counter)`` of a 64-bit key and a 128-bit
counter, so a stream is a key with a counter that advances. ``philox`` runs vectorized over
an array of counters (with a Python-int path for a few counters, where numpy's per-call
overhead dominates); ``scramble_seed`` turns a seed pair into a key and counter as TF's
stateless ops do.
"""

from __future__ import annotations

import numpy as np

__all__ = []

EXPORTS = {}


# ---------------------------------------------------------------------------------------
# Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011)
# ---------------------------------------------------------------------------------------

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_M128 = (1 << 128) - 1
_MUL_A, _MUL_B = 0xD2511F53, 0xCD9E8D57  # round multipliers
_BUMP_A, _BUMP_B = 0x9E3779B9, 0xBB67AE85  # key schedule (golden ratio, sqrt(3) - 1)
_SCRAMBLE_KEY = 0x02461E293EC8F720  # TF's fixed key for turning a seed pair into a stream

# TF reserves this many 128-bit blocks per output element of a stateful call, so streams of
# consecutive calls never overlap, and gives each truncated-normal group this many per output.
_BLOCKS_PER_OUTPUT = 256


def philox(key, counters):
    """Philox4x32-10 of a 64-bit key over an array of 128-bit counters.

    Args:
        key: The key, a Python int below 2**64.
        counters: A pair ``(lo, hi)`` of uint64 arrays of one shape: each counter's low and
            high 64 bits.

    Returns:
        A uint32 array of shape ``lo.shape + (4,)``: the four output words of each counter,
        in TF's order.
    """
    lo, hi = counters
    if lo.size <= _SMALL:
        return _philox_small(key, lo, hi)
    c0, c1 = lo & _U32_MASK, lo >> _U32_SHIFT
    c2, c3 = hi & _U32_MASK, hi >> _U32_SHIFT
    k0, k1 = key & _M32, (key >> 32) & _M32
    for _ in range(10):
        p0 = c0 * _U_MUL_A  # exact: both factors are below 2**32
        p1 = c2 * _U_MUL_B
        c0, c1, c2, c3 = ((p1 >> _U32_SHIFT) ^ c1 ^ np.uint64(k0), p1 & _U32_MASK,
                          (p0 >> _U32_SHIFT) ^ c3 ^ np.uint64(k1), p0 & _U32_MASK)
        k0 = (k0 + _BUMP_A) & _M32
        k1 = (k1 + _BUMP_B) & _M32
    return np.stack([c0, c1, c2, c3], axis=-1).astype(np.uint32)


# Below this many counters, Python ints beat numpy's per-call overhead (the eager hot path
# draws a handful of blocks).
_SMALL = 12
_U32_MASK, _U32_SHIFT = np.uint64(_M32), np.uint64(32)
_U_MUL_A, _U_MUL_B = np.uint64(_MUL_A), np.uint64(_MUL_B)


def _philox_small(key, lo, hi):
    out = []
    for lo_c, hi_c in zip(lo.reshape(-1).tolist(), hi.reshape(-1).tolist()):
        c0, c1, c2, c3 = lo_c & _M32, lo_c >> 32, hi_c & _M32, hi_c >> 32
        k0, k1 = key & _M32, (key >> 32) & _M32
        for _ in range(10):
            p0, p1 = c0 * _MUL_A, c2 * _MUL_B
            c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _M32, (p0 >> 32) ^ c3 ^ k1, p0 & _M32
            k0, k1 = (k0 + _BUMP_A) & _M32, (k1 + _BUMP_B) & _M32
        out.append((c0, c1, c2, c3))
    return np.array(out, np.uint32).reshape(lo.shape + (4,))


def _offset_counters(counter, offsets):
    """128-bit ``counter + offsets`` (offsets a uint64 array) as (lo, hi) uint64 arrays."""
    base_lo = np.uint64(counter & _M64)
    lo = offsets + base_lo  # wraps modulo 2**64; the carry goes into the high half
    hi = np.uint64(counter >> 64) + (lo < base_lo).astype(np.uint64)
    return lo, hi


def philox_words(key, counter, count):
    """The first ``count`` 32-bit words of the stream (key, counter), in order."""
    blocks = -(-count // 4)
    offsets = np.arange(blocks, dtype=np.uint64)
    return philox(key, _offset_counters(counter, offsets)).reshape(-1)[:count]


def scramble_seed(seed0, seed1):
    """Maps a stateless seed pair to the (key, counter) of its stream, as TF does.

    The pair is itself hashed with Philox under a fixed key, so that neither half of the
    seed needs to be strong. Negative seeds are taken modulo 2**64 (two's complement).

    Returns:
        ``(key, counter)``: a 64-bit and a 128-bit Python int.
    """
    mix = philox(_SCRAMBLE_KEY, (np.array([seed0 & _M64], np.uint64),
                                 np.array([seed1 & _M64], np.uint64)))[0].tolist()
    key = mix[0] | mix[1] << 32
    counter = (mix[2] | mix[3] << 32) << 64
    return key, counter


def key_counter_arrays(key, counter):
    """(key, counter) ints as the uint64 arrays the V2 stateless ops take: [1] and [2]."""
    return (np.array([key], np.uint64),
            np.array([counter & _M64, counter >> 64], np.uint64))


def _ints_from_arrays(key, counter):
    key = np.asarray(key).reshape(-1)
    counter = np.asarray(counter).reshape(-1)
    return int(key[0]), int(counter[0]) | int(counter[1]) << 64
