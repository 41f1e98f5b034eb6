"""Distributions: 32-bit Philox words to values, each as TF's random_distributions.h does it.

Uniform floats take the mantissa bits of one word (two for 64-bit outputs), normals pair
uniforms with Box-Muller, truncated normals re-draw outside two standard deviations and
integers take ``lo + bits % (hi - lo)``; categorical, shuffle and gamma are drawn here too.
``sample`` draws n values of a kind from a key and a counter.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.random.philox import (
    _BLOCKS_PER_OUTPUT, _M32, _M64, _offset_counters, philox, philox_words,
)

__all__ = []

EXPORTS = {}


# ---------------------------------------------------------------------------------------
# Distributions: 32-bit words -> values, each as TF's random_distributions.h does it
# ---------------------------------------------------------------------------------------

_WIDE = frozenset(["float64", "int64", "uint64"])  # two words per output, not one


def _unit_float32(words):
    """[0, 1) floats: 23 random mantissa bits under exponent 0, minus one."""
    bits = (words & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)
    return bits.view(np.float32) - np.float32(1.0)


def _unit_float64(hi_words, lo_words):
    """[0, 1) doubles: 20 mantissa bits from the first word, 32 from the second."""
    bits = ((hi_words.astype(np.uint64) & np.uint64(0xFFFFF)) << np.uint64(32)) | \
        lo_words.astype(np.uint64) | np.uint64(0x3FF0000000000000)
    return bits.view(np.float64) - 1.0


def _unit_float16(words):
    bits = ((words & np.uint32(0x3FF)) | np.uint32(15 << 10)).astype(np.uint16)
    return bits.view(np.float16) - np.float16(1.0)


def _unit_bfloat16(words):
    bf16 = d.bfloat16.np_dtype
    bits = ((words & np.uint32(0x7F)) | np.uint32(127 << 7)).astype(np.uint16)
    return bits.view(bf16) - np.asarray(1.0, bf16)


def _box_muller_float(x0, x1):
    """Two float32 normals per word pair (TF's BoxMullerFloat, float32 rounding kept)."""
    u1 = np.maximum(_unit_float32(x0), np.float32(1e-7))  # keep log() finite
    # 2 * M_PI is a double in C, so the angle is formed in double and rounded once.
    angle = (2.0 * np.pi * _unit_float32(x1).astype(np.float64)).astype(np.float32)
    log_u1 = np.log(u1.astype(np.float64)).astype(np.float32)
    radius = np.sqrt(np.float32(-2.0) * log_u1)
    angle = angle.astype(np.float64)
    return (np.sin(angle).astype(np.float32) * radius,
            np.cos(angle).astype(np.float32) * radius)


def _box_muller_double(x0, x1, x2, x3):
    """Two float64 normals per four words (TF's BoxMullerDouble)."""
    u1 = np.maximum(_unit_float64(x0, x1), 1e-7)
    angle = 2 * np.pi * _unit_float64(x2, x3)
    radius = np.sqrt(-2.0 * np.log(u1))
    return np.sin(angle) * radius, np.cos(angle) * radius


def _interleave(a, b):
    out = np.empty(a.shape + (2,), a.dtype)
    out[..., 0] = a
    out[..., 1] = b
    return out.reshape(-1)


def _normal_from_words(words, dtype_name):
    if dtype_name == "float64":
        q = words.reshape(-1, 4)
        return _interleave(*_box_muller_double(q[:, 0], q[:, 1], q[:, 2], q[:, 3]))
    pairs = words.reshape(-1, 2)
    values = _interleave(*_box_muller_float(pairs[:, 0], pairs[:, 1]))
    return values.astype(d.as_dtype(dtype_name).np_dtype)


def _uniform_from_words(words, dtype_name):
    if dtype_name == "float32":
        return _unit_float32(words)
    if dtype_name == "float64":
        return _unit_float64(words[0::2], words[1::2])
    if dtype_name == "float16":
        return _unit_float16(words)
    return _unit_bfloat16(words)


def _full_int_from_words(words, dtype_name):
    np_dtype = d.as_dtype(dtype_name).np_dtype
    if dtype_name in _WIDE:
        bits = words[0::2].astype(np.uint64) | (words[1::2].astype(np.uint64) << np.uint64(32))
        return bits.view(np_dtype)
    return words.view(np_dtype)


def _int_from_words(words, dtype_name, lo, hi):
    """Integers in [lo, hi): ``lo + bits % (hi - lo)`` in unsigned arithmetic, as TF does."""
    lo, hi = int(lo), int(hi)
    np_dtype = d.as_dtype(dtype_name).np_dtype
    if dtype_name in _WIDE:
        bits = words[0::2].astype(np.uint64) | (words[1::2].astype(np.uint64) << np.uint64(32))
        span = np.uint64((hi - lo) & _M64)
        return (bits % span + np.uint64(lo & _M64)).view(np_dtype)
    span = np.uint32((hi - lo) & _M32)
    return ((words % span).astype(np.uint32) + np.uint32(lo & _M32)).view(np_dtype)


_TRUNCATED_MAX_ROUNDS = 20


def _truncated_normal(key, counter, n, dtype_name):
    """Normals within two standard deviations, re-drawn until they fall inside.

    As in TF, outputs come in groups (4 floats or 2 doubles), each group with its own
    sub-stream 256 blocks per output apart; inside a group, Box-Muller pairs are drawn in
    order and values of magnitude >= 2 are skipped. Draws enough pairs for every group at
    once and widens the rare groups that run short.
    """
    wide = dtype_name == "float64"
    group = 2 if wide else 4
    groups = -(-n // group)
    stride = group * _BLOCKS_PER_OUTPUT // 4
    out = np.empty((groups, group), np.float64 if wide else np.float32)
    todo = np.arange(groups, dtype=np.uint64)
    blocks = 2  # 8 candidates per float group of 4: about 1 group in 10**5 needs more
    # Each round doubles the candidates of the groups still short, and a candidate is kept
    # with probability 0.95: past the cap (2**21 candidates for one group) something is
    # broken, and saying so beats looping.
    for _ in range(_TRUNCATED_MAX_ROUNDS):
        if not todo.size:
            break
        offsets = todo[:, None] * np.uint64(stride) + np.arange(blocks, dtype=np.uint64)
        words = philox(key, _offset_counters(counter, offsets)).reshape(todo.size, -1)
        if wide:
            q = words.reshape(todo.size, -1, 4)
            f0, f1 = _box_muller_double(q[..., 0], q[..., 1], q[..., 2], q[..., 3])
        else:
            f0, f1 = _box_muller_float(words[:, 0::2], words[:, 1::2])
        values = np.stack([f0, f1], axis=-1).reshape(todo.size, -1)
        keep = np.abs(values) < 2.0
        rank = np.cumsum(keep, axis=1)
        done = rank[:, -1] >= group
        rows, cols = np.nonzero(keep & (rank <= group) & done[:, None])
        out[todo[done].astype(np.intp)] = values[rows, cols].reshape(-1, group)
        todo = todo[~done]
        blocks *= 2
    if todo.size:
        raise errors.InternalError(
            None, "TruncatedNormal", "truncated normal: %d output groups found no value "
            "within two standard deviations after %d rounds; the random stream is broken."
            % (todo.size, _TRUNCATED_MAX_ROUNDS))
    return out.reshape(-1)[:n].astype(d.as_dtype(dtype_name).np_dtype)


def sample(kind, dtype_name, n, key, counter, lo=None, hi=None):
    """``n`` values of a distribution from the stream (key, counter): a flat numpy array.

    Args:
        kind: ``"normal"``, ``"uniform"``, ``"uniform_int"``, ``"full_int"`` or
            ``"truncated_normal"``.
        dtype_name: The output dtype's name.
        n: Number of values.
        key: 64-bit key.
        counter: 128-bit counter of the first block.
        lo: Inclusive lower bound (``uniform_int``).
        hi: Exclusive upper bound (``uniform_int``).
    """
    if n == 0:
        return np.empty((0,), d.as_dtype(dtype_name).np_dtype)
    if kind == "truncated_normal":
        return _truncated_normal(key, counter, n, dtype_name)
    per_output = 2 if dtype_name in _WIDE else 1
    count = n * per_output
    if kind == "normal":
        count += count % 2 if dtype_name != "float64" else (-count) % 4
    words = philox_words(key, counter, count)
    if kind == "normal":
        return _normal_from_words(words, dtype_name)[:n]
    if kind == "uniform":
        return _uniform_from_words(words, dtype_name)
    if kind == "full_int":
        return _full_int_from_words(words, dtype_name)
    return _int_from_words(words, dtype_name, lo, hi)


def _unit_doubles(key, counter, count):
    """``count`` doubles in [0, 1), two words each, in stream order (SimplePhilox)."""
    words = philox_words(key, counter, 2 * count)
    return _unit_float64(words[0::2], words[1::2])


def _categorical(logits, num_samples, key, counter):
    """Class indices drawn from softmax(logits) rows, by TF's inverse-CDF search.

    Non-finite logits get probability zero. All rows draw from one stream in row order
    (TF's single-shard order, which is what it uses for every but very large inputs).
    """
    batch, classes = logits.shape
    if batch * num_samples == 0:
        return np.zeros((batch, num_samples), np.int64)
    logits = logits.astype(np.float64)  # exact for every floating dtype, as TF's cast
    finite = np.isfinite(logits)
    row_max = np.where(finite, logits, -np.inf).max(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        weights = np.where(finite, np.exp(logits - row_max), 0.0)
    cdf = np.cumsum(weights, axis=1)  # sequential sums, as TF's running total
    targets = _unit_doubles(key, counter, batch * num_samples).reshape(batch, num_samples)
    targets = targets * cdf[:, -1:]
    out = np.empty((batch, num_samples), np.int64)
    for b in range(batch):
        out[b] = np.searchsorted(cdf[b], targets[b], side="right")
    return out


def _shuffle_order(n, key, counter):
    """TF's Fisher-Yates order for n rows: row i swaps with i + word_i % (n - i)."""
    order = list(range(n))
    if n <= 1:
        return order
    words = philox_words(key, counter, n - 1).astype(np.int64)
    targets = (np.arange(n - 1) + words % np.arange(n, 1, -1)).tolist()
    for i, j in enumerate(targets):
        order[i], order[j] = order[j], order[i]
    return order


# Rounds of the gamma rejection loop before giving up on an output (see _gamma).
_GAMMA_MAX_ROUNDS = 1000


def _gamma(alpha, n_samples, key, counter):
    """Gamma(alpha, 1) samples by Marsaglia-Tsang, per output exactly as TF's CPU kernel.

    Output ``(s, a)`` (flat index ``a * n_samples + s``) has its own sub-stream 256 blocks
    apart; each candidate uses one normal and one uniform, taken from the two-value results
    of double Box-Muller / uniform blocks, last value first. All outputs step together.

    ``alpha <= 0`` or NaN has no Gamma distribution: those outputs are NaN. (TF's kernel
    returns NaN for alpha <= -2/3 and NaN, and finite garbage for -2/3 < alpha <= 0; NaN
    for every invalid alpha says plainly that the parameter was wrong.) A valid alpha
    accepts a candidate with probability above 0.95, so the loop ends in a handful of
    rounds; it is still capped at ``_GAMMA_MAX_ROUNDS``, and an output that has not
    accepted by then (never seen: about 0.05**1000) is NaN rather than a hang.
    """
    alphas = alpha.astype(np.float64).reshape(-1)
    total = alphas.size * n_samples
    out = np.empty(total, np.float64)
    a = np.repeat(alphas, n_samples)
    pos = np.arange(total, dtype=np.uint64) * np.uint64(_BLOCKS_PER_OUTPUT)
    norm, norm_left = np.zeros((total, 2)), np.zeros(total, np.int64)
    unif, unif_left = np.zeros((total, 2)), np.zeros(total, np.int64)

    def draw(idx, normal):
        words = philox(key, _offset_counters(counter, pos[idx]))
        pos[idx] += np.uint64(1)
        if normal:
            return np.stack(_box_muller_double(*words.T), axis=-1)
        return np.stack([_unit_float64(words[:, 0], words[:, 1]),
                         _unit_float64(words[:, 2], words[:, 3])], axis=-1)

    def take_uniform(idx):
        empty = idx[unif_left[idx] == 0]
        if empty.size:
            unif[empty] = draw(empty, False)
            unif_left[empty] = 2
        unif_left[idx] -= 1
        return unif[idx, unif_left[idx]]

    invalid = ~(a > 0)  # also catches NaN
    out[invalid] = np.nan
    ones = np.nonzero(a == 1.0)[0]
    if ones.size:  # exponential: -log(1 - u)
        out[ones] = -np.log(1.0 - take_uniform(ones))
    active = np.nonzero((a != 1.0) & ~invalid)[0]
    small = a < 1
    with np.errstate(all="ignore"):
        dd = a + np.where(small, 2.0 / 3, -1.0 / 3)
        cc = 1.0 / 3 / np.sqrt(dd)
        for _ in range(_GAMMA_MAX_ROUNDS):
            if not active.size:
                break
            empty = active[norm_left[active] == 0]
            if empty.size:
                norm[empty] = draw(empty, True)
                norm_left[empty] = 2
            norm_left[active] -= 1
            x = norm[active, norm_left[active]]
            v = 1 + cc[active] * x
            positive = v > 0
            retry = active[~positive]  # v <= 0: draw the next normal, no uniform
            active, x, v = active[positive], x[positive], v[positive]
            v = v * v * v
            u = take_uniform(active)
            dv = dd[active]
            accept = (u < 1 - 0.0331 * (x * x) * (x * x)) | \
                (np.log(u) < 0.5 * x * x + dv * (1 - v + np.log(v)))
            done = active[accept]
            res = dv[accept] * v[accept]
            boost = small[done]
            if boost.any():
                res[boost] *= np.power(take_uniform(done[boost]), 1 / a[done[boost]])
            out[done] = res
            active = np.concatenate([retry, active[~accept]])
        out[active] = np.nan  # did not accept within the cap (see the docstring)
    # Output layout is [samples..., alphas...]: sample s of alpha a sits at s * A + a.
    return out.reshape(alphas.size, n_samples).T
