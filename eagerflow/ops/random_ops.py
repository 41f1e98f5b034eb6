"""Random numbers: ``tf.random`` with TF 2's seeds, streams and bit-exact algorithms.

Every random value comes from Philox4x32-10, a counter-based generator: 128 random bits are
a pure function ``philox(key, counter)`` of a 64-bit key and a 128-bit counter, so a stream
is a key with a counter that advances. The kernels follow TensorFlow's CPU kernels exactly
(which 32-bit words each output consumes, how Box-Muller pairs them, how a truncated normal
re-draws, how far each call advances its stream), so that ``import eagerflow as tf`` gives
the numbers TF gives (to the last bit for integers; within a unit in the last place for
floats, where TF's ``logf``/``sincosf`` and numpy's may round differently).

Bits are always made on the host with numpy, then copied to the op's device: a GPU gets the
same numbers as the CPU for the same seeds, which TF only promises for the stateless ops.

Seeds (``set_seed`` and each op's ``seed``) follow TF 2 (see :func:`set_seed`):

* stateful ops (``normal``, ``uniform``, ...) carry attrs ``seed``/``seed2`` picked by
  :func:`get_seed`; a kernel keeps one stream per (op, dtype, seed, seed2), so repeated
  eager calls with the same seeds continue the stream, and ``set_seed`` restarts them all.
  ``seed == seed2 == 0`` means "no seed": the stream starts from OS entropy.
* stateless ops (``stateless_normal``, ...) take a shape-[2] integer ``seed`` tensor; the
  seed is scrambled into a key and counter (``StatelessRandomGetKeyCounter``) and the same
  seed gives the same numbers on every call, in every program, on every device.

Example:
    >>> import eagerflow as ef
    >>> ef.random.stateless_uniform([3], seed=[1, 2], maxval=10, dtype=ef.int32).shape
    TensorShape([3])
"""

from __future__ import annotations

import collections
import itertools
import operator
import os
import random as _pyrandom
import threading
import weakref

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.framework import context
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT
from eagerflow.ops.registry import AbstractValue

__all__ = [
    "set_seed", "normal", "uniform", "truncated_normal", "categorical", "shuffle", "gamma",
    "stateless_normal", "stateless_uniform", "stateless_truncated_normal",
    "stateless_categorical", "stateless_split", "stateless_fold_in",
]

EXPORTS = {
    "random": ["set_seed", "normal", "uniform", "truncated_normal", "categorical", "shuffle",
               "gamma", "stateless_normal", "stateless_uniform", "stateless_truncated_normal",
               "stateless_categorical"],
    "random.experimental": ["stateless_split", "stateless_fold_in"],
}

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
    while todo.size:
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


def _gamma(alpha, n_samples, key, counter):
    """Gamma(alpha, 1) samples by Marsaglia-Tsang, per output exactly as TF's CPU kernel.

    Output ``(s, a)`` (flat index ``a * n_samples + s``) has its own sub-stream 256 blocks
    apart; each candidate uses one normal and one uniform, taken from the two-value results
    of double Box-Muller / uniform blocks, last value first. All outputs step together.
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

    ones = np.nonzero(a == 1.0)[0]
    if ones.size:  # exponential: -log(1 - u)
        out[ones] = -np.log(1.0 - take_uniform(ones))
    active = np.nonzero(a != 1.0)[0]
    small = a < 1
    dd = a + np.where(small, 2.0 / 3, -1.0 / 3)
    cc = 1.0 / 3 / np.sqrt(dd)
    with np.errstate(all="ignore"):
        while active.size:
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
    # Output layout is [samples..., alphas...]: sample s of alpha a sits at s * A + a.
    return out.reshape(alphas.size, n_samples).T


# ---------------------------------------------------------------------------------------
# Seeds and the per-kernel streams of stateful ops
# ---------------------------------------------------------------------------------------

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


class _SeedState:
    """The process-wide global seed and the op-seed sequence it starts."""

    def __init__(self):
        self.global_seed = None
        self.rng = None  # random.Random(global seed): eager op seeds, as TF draws them
        self.lock = threading.Lock()


_seeds = _SeedState()


class _Streams:
    """The state of every stateful kernel: (op, dtype, seed, seed2, stream) -> (key, counter).

    TF caches one kernel per op and attrs, and each kernel owns a Philox generator started
    at ``key = seed, counter = seed2 << 64``; this table plays that cache. Eager calls use
    ``stream = 0``; each traced graph node gets its own stream number, so two nodes with
    the same seeds draw the same values, as two TF graph kernels do.

    With a global seed set, every eager call gets a new operation seed and so a new entry;
    TF's kernel cache grows without bound in that case. This table forgets the least
    recently used streams beyond ``limit`` entries instead.
    """

    def __init__(self, limit=1 << 16):
        self.table = collections.OrderedDict()
        self.limit = limit
        self.lock = threading.Lock()

    def reserve(self, name, seed, seed2, stream, blocks):
        """Returns the (key, counter) to draw from and moves the stream ``blocks`` on."""
        table_key = (name, seed, seed2, stream)
        with self.lock:
            entry = self.table.get(table_key)
            if entry is None:
                if seed == 0 and seed2 == 0:
                    # "No seed": TF picks two random 64-bit seeds for the kernel.
                    seed = int.from_bytes(os.urandom(8), "little")
                    seed2 = int.from_bytes(os.urandom(8), "little")
                entry = [seed & _M64, (seed2 & _M64) << 64]
                self.table[table_key] = entry
                if len(self.table) > self.limit:
                    self.table.popitem(last=False)
            else:
                self.table.move_to_end(table_key)
            key, counter = entry
            entry[1] = (counter + blocks) & _M128
        return key, counter

    def clear(self):
        with self.lock:
            self.table.clear()


_streams = _Streams()
_stream_ids = itertools.count(1)
_trace_seed_counters = weakref.WeakKeyDictionary()
_trace_seed_counters_by_id = {}


def set_seed(seed):
    """Sets the global random seed.

    Random ops derive their seeds from two: this global seed and their own ``seed``
    argument (the operation seed):

    1. Neither set: a randomly picked seed is used, so every call and every run of the
       program gives different numbers.
    2. Global set, operation seed not: the operation seed is taken from a sequence that
       the global seed starts, so each call gets a different seed, yet a fresh program
       that calls ``set_seed`` with the same value repeats the same numbers.
    3. Operation seed set, global not: a default global seed (87654321) is used with it.
    4. Both set: the pair determines the numbers.

    An op with a given pair of seeds keeps an internal counter: calling it again with the
    same seeds continues its sequence (A1, then A2). Calling ``set_seed`` resets every such
    counter and restarts the operation-seed sequence. Inside a traced function the
    operation seeds come from a counter per trace (0, 1, ...), so two functions traced
    after the same ``set_seed`` draw the same numbers, and each graph op keeps its own
    counter across calls.

    Args:
        seed: An integer.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.set_seed(1234)
        >>> a = ef.random.uniform([2])
        >>> ef.random.set_seed(1234)
        >>> bool((ef.random.uniform([2]).numpy() == a.numpy()).all())
        True
    """
    try:
        seed_int = operator.index(seed)
    except TypeError:
        seed_int = int(np.asarray(getattr(seed, "numpy", lambda: seed)()))
    with _seeds.lock:
        _seeds.global_seed = seed_int
        _seeds.rng = _pyrandom.Random(seed_int)
    _streams.clear()


def get_global_seed():
    """The seed last passed to :func:`set_seed`, or None."""
    return _seeds.global_seed


def _trace_op_seed():
    """The next operation seed of the current trace: 0, 1, 2, ... per traced graph."""
    hook = context.state.trace
    try:
        n = _trace_seed_counters.get(hook, 0)
        _trace_seed_counters[hook] = n + 1
    except TypeError:  # a hook that cannot be weakly referenced
        n = _trace_seed_counters_by_id.get(id(hook), 0)
        _trace_seed_counters_by_id[id(hook)] = n + 1
    return n


def get_seed(op_seed):
    """The (seed, seed2) pair a random op should use given its own ``seed`` argument.

    Implements the four cases of :func:`set_seed`. Returns ``(None, None)`` when neither
    seed is set. ``(0, 0)`` (which kernels read as "no seed") becomes ``(0, 2**31 - 1)``.

    Args:
        op_seed: The operation's seed (an int) or None.

    Returns:
        A pair of ints in [0, 2**31 - 1), or ``(None, None)``.
    """
    global_seed = _seeds.global_seed
    if op_seed is not None:
        op_seed = operator.index(op_seed) if not hasattr(op_seed, "numpy") \
            else int(op_seed.numpy())
    if global_seed is not None:
        if op_seed is None:
            if context.state.trace is not None:
                op_seed = _trace_op_seed()
            else:
                with _seeds.lock:
                    op_seed = _seeds.rng.randint(0, _MAXINT32)
        seeds = (global_seed % _MAXINT32, op_seed % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed % _MAXINT32)
    else:
        return None, None
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


def _stateful_attrs(seed, **attrs):
    seed1, seed2 = get_seed(seed)
    attrs["seed"] = seed1 or 0
    attrs["seed2"] = seed2 or 0
    if context.state.trace is not None:
        attrs["stream"] = next(_stream_ids)
    return attrs


# ---------------------------------------------------------------------------------------
# Kernels: bits on the host, result copied to the device
# ---------------------------------------------------------------------------------------


def _host_kernel(fn):
    """A kernel factory running ``fn`` on numpy arrays whatever the device.

    On a GPU the inputs are copied to the host and the result back, so every device
    produces the numbers the CPU does.
    """

    def factory(xp):
        if not xp.is_gpu:
            return fn

        def kernel(*arrays, **attrs):
            out = fn(*[xp.to_numpy(a) for a in arrays], **attrs)
            if isinstance(out, tuple):
                return tuple(xp.asarray(o) for o in out)
            return xp.asarray(out)

        return kernel

    return factory


def _size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _invalid(message):
    return errors.InvalidArgumentError(None, None, message)


def _stateful_fill(kind, name):
    def kernel(*, shape, dtype, seed, seed2, stream=0):
        n = _size(shape)
        key, counter = _streams.reserve((name, dtype), seed, seed2, stream,
                                        n * _BLOCKS_PER_OUTPUT)
        return sample(kind, dtype, n, key, counter).reshape(shape)
    return kernel


def _check_int_bounds(lo, hi):
    if lo.ndim or hi.ndim:
        raise _invalid("minval and maxval must be scalars (0-D), got shapes %s and %s"
                       % (list(lo.shape), list(hi.shape)))
    if not lo < hi:
        raise _invalid("Need minval < maxval, got %s >= %s: integers are drawn from "
                       "[minval, maxval), which is empty." % (lo, hi))


def _uniform_int_kernel(lo, hi, *, shape, seed, seed2, stream=0):
    n = _size(shape)
    dtype = lo.dtype.name
    if lo.ndim or hi.ndim or n:
        _check_int_bounds(lo, hi)
    key, counter = _streams.reserve(("RandomUniformInt", dtype), seed, seed2, stream,
                                    n * _BLOCKS_PER_OUTPUT)
    return sample("uniform_int", dtype, n, key, counter, lo, hi).reshape(shape)


def _check_logits(logits, num_samples):
    if logits.ndim != 2:
        raise _invalid("logits must be a matrix [batch_size, num_classes], got shape %s"
                       % list(logits.shape))
    if logits.shape[1] == 0 and logits.shape[0] * num_samples:
        raise _invalid("logits has 0 classes; it needs at least one column")


def _multinomial_kernel(logits, *, num_samples, output_dtype, seed, seed2, stream=0):
    _check_logits(logits, num_samples)
    batch = logits.shape[0]
    reserve = 0
    if batch * num_samples:
        reserve = batch * (-(-num_samples // 4) * 4) * 2 * _BLOCKS_PER_OUTPUT
    key, counter = _streams.reserve(("Multinomial", logits.dtype.name, output_dtype), seed,
                                    seed2, stream, reserve)
    return _categorical(logits, num_samples, key, counter).astype(
        d.as_dtype(output_dtype).np_dtype)


def _shuffle_kernel(value, *, seed, seed2, stream=0):
    if value.size <= 1 or value.shape[0] <= 1:
        return value.copy()
    n = value.shape[0]
    key, counter = _streams.reserve(("RandomShuffle", value.dtype.name), seed, seed2, stream,
                                    -(-(n - 1) // 4))
    return value[np.asarray(_shuffle_order(n, key, counter), np.intp)]


def _gamma_kernel(alpha, *, shape, seed, seed2, stream=0):
    n = _size(shape)
    out_shape = tuple(shape) + alpha.shape
    if n == 0 or alpha.size == 0:
        return np.zeros(out_shape, alpha.dtype)
    key, counter = _streams.reserve(("RandomGamma", alpha.dtype.name), seed, seed2, stream,
                                    n * alpha.size * _BLOCKS_PER_OUTPUT)
    return _gamma(alpha, n, key, counter).reshape(out_shape).astype(alpha.dtype)


# Stateless kernels: the stream comes from the inputs.


def _key_counter_kernel(seed):
    if seed.dtype.kind not in "iu":
        raise _invalid("seed must be int32 or int64, got %s" % seed.dtype)
    if seed.shape != (2,):
        raise _invalid("seed must have shape [2], not %s. Pass two integers, e.g. "
                       "seed=[1, 2]." % list(seed.shape))
    s0, s1 = (int(v) for v in seed.astype(np.int64))
    return key_counter_arrays(*scramble_seed(s0, s1))


def _check_key_counter(key, counter):
    if key.size != 1 or counter.size != 2:
        raise _invalid("key must have 1 element and counter 2 (Philox), got shapes %s and %s"
                       % (list(key.shape), list(counter.shape)))
    return _ints_from_arrays(key, counter)


def _stateless_fill(kind):
    def kernel(key, counter, *, shape, dtype):
        k, c = _check_key_counter(key, counter)
        return sample(kind, dtype, _size(shape), k, c).reshape(shape)
    return kernel


def _stateless_int_kernel(key, counter, lo, hi, *, shape):
    k, c = _check_key_counter(key, counter)
    n = _size(shape)
    if lo.ndim or hi.ndim or n:
        _check_int_bounds(lo, hi)
    return sample("uniform_int", lo.dtype.name, n, k, c, lo, hi).reshape(shape)


def _stateless_multinomial_kernel(logits, seed, *, num_samples, output_dtype):
    _check_logits(logits, num_samples)
    key, counter = _ints_from_arrays(*_key_counter_kernel(seed))
    return _categorical(logits, num_samples, key, counter).astype(
        d.as_dtype(output_dtype).np_dtype)


# ---------------------------------------------------------------------------------------
# Scalar references: a plain per-element Philox that follows TF's loops one word at a time
# ---------------------------------------------------------------------------------------


class _ScalarPhilox:
    """TF's PhiloxRandom, one 128-bit block per call, written on Python ints."""

    def __init__(self, key, counter):
        self.key = key
        self.counter = counter
        self.words = []

    def block(self):
        c = [(self.counter >> (32 * i)) & _M32 for i in range(4)]
        k0, k1 = self.key & _M32, self.key >> 32
        for _ in range(10):
            p0, p1 = _MUL_A * c[0], _MUL_B * c[2]
            c = [(p1 >> 32) ^ c[1] ^ k0, p1 & _M32, (p0 >> 32) ^ c[3] ^ k1, p0 & _M32]
            k0, k1 = (k0 + _BUMP_A) & _M32, (k1 + _BUMP_B) & _M32
        self.counter = (self.counter + 1) & _M128
        return c

    def word(self):
        """One 32-bit word (TF's SingleSampleAdapter)."""
        if not self.words:
            self.words = self.block()[::-1]
        return self.words.pop()


def _scalar_values(kind, dtype_name, n, key, counter, lo=None, hi=None):
    """Reference for :func:`sample`: the words of each output drawn one at a time."""
    out = []
    if kind == "truncated_normal":
        wide = dtype_name == "float64"
        group = 2 if wide else 4
        g = 0
        while len(out) < n:
            gen = _ScalarPhilox(key, (counter + g * group * _BLOCKS_PER_OUTPUT // 4) & _M128)
            found = []
            while len(found) < group:
                if wide:
                    pair = _box_muller_double(*[_u32(gen.word()) for _ in range(4)])
                else:
                    pair = _box_muller_float(_u32(gen.word()), _u32(gen.word()))
                found += [float(v[0]) for v in pair if abs(float(v[0])) < 2.0]
            out += found[:group]
            g += 1
        return np.array(out[:n]).astype(d.as_dtype(dtype_name).np_dtype)
    gen = _ScalarPhilox(key, counter)
    wide = dtype_name in _WIDE
    per_block = 2 if wide else 4
    while len(out) < n:
        w = gen.block()
        if kind == "normal" and wide:
            out += list(_box_muller_double(*[_u32(x) for x in w]))
        elif kind == "normal":
            for i in (0, 2):
                out += list(_box_muller_float(_u32(w[i]), _u32(w[i + 1])))
        elif wide:
            for i in range(per_block):
                out.append(_u32(w[2 * i], w[2 * i + 1]))
        else:
            out += [_u32(x) for x in w]
    out = out[:n]
    np_dtype = d.as_dtype(dtype_name).np_dtype
    if kind == "normal":
        return np.array([float(v[0]) for v in out]).astype(np_dtype)
    words = np.concatenate(out) if out else np.empty((0,), np.uint32)
    if kind == "uniform":
        return _uniform_from_words(words, dtype_name)
    if kind == "full_int":
        return _full_int_from_words(words, dtype_name)
    return _int_from_words(words, dtype_name, lo, hi)


def _reference_fill(kind):
    def reference(key, counter, *, shape, dtype):
        k, c = _ints_from_arrays(key, counter)
        return _scalar_values(kind, dtype, _size(shape), k, c).reshape(shape)
    return reference


def _reference_int(key, counter, lo, hi, *, shape):
    k, c = _ints_from_arrays(key, counter)
    return _scalar_values("uniform_int", lo.dtype.name, _size(shape), k, c,
                          lo, hi).reshape(shape)


def _reference_key_counter(seed):
    s0, s1 = (int(v) & _M64 for v in np.asarray(seed).astype(np.int64))
    gen = _ScalarPhilox(_SCRAMBLE_KEY, s0 | s1 << 64)
    w = gen.block()
    return key_counter_arrays(w[0] | w[1] << 32, (w[2] | w[3] << 32) << 64)


def _reference_multinomial(logits, seed, *, num_samples, output_dtype):
    key, counter = _ints_from_arrays(*_reference_key_counter(seed))
    gen = _ScalarPhilox(key, counter)
    out = np.zeros((logits.shape[0], num_samples), np.int64)
    for b, row in enumerate(logits.astype(np.float64)):
        finite = np.isfinite(row)
        weights = np.where(finite, np.exp(row - row[finite].max()), 0.0) if finite.any() \
            else np.zeros_like(row)
        cdf = np.cumsum(weights)
        for j in range(num_samples):
            u = _unit_float64(_u32(gen.word()), _u32(gen.word()))[0]
            out[b, j] = int(np.sum(cdf <= u * cdf[-1]))
    return out.astype(d.as_dtype(output_dtype).np_dtype)


def _u32(*words):
    return np.array(words, np.uint32)


# ---------------------------------------------------------------------------------------
# Primitives
# ---------------------------------------------------------------------------------------

_UNIFORM_DTYPES = (d.float16, d.bfloat16, d.float32, d.float64)
_INT_DTYPES = (d.int32, d.int64)
_FULL_INT_DTYPES = (d.int32, d.int64, d.uint32, d.uint64)
_SAMPLE_SHAPES = [(), (0,), (1,), (5,), (2, 3), (3, 1, 2), (9,)]


def _creation_shape(*avals, shape, dtype, **attrs):
    return AbstractValue(shape, dtype)


def _bad_shape_samples(attrs):
    def bad(rng):
        return [((), dict(attrs, shape=(-1, 2)), errors.InvalidArgumentError)]
    return bad


def _stateful(name, kind, doc):
    return registry.primitive(
        name, _host_kernel(_validated_shape(_stateful_fill(kind, name))), dtypes=(),
        dtype_group=(), shape_fn=_creation_shape, family="random", stateful=True, doc=doc,
        bad_samples=_bad_shape_samples({"dtype": "float32", "seed": 1, "seed2": 2}))


def _validated_shape(kernel):
    """Wraps a kernel so a negative dimension in its ``shape`` attr is a clear error."""

    def checked(*arrays, shape, **attrs):
        if any(s < 0 for s in shape):
            raise _invalid("shape %s has a negative dimension; every dimension must be >= 0"
                           % list(shape))
        return kernel(*arrays, shape=shape, **attrs)

    return checked


RANDOM_STANDARD_NORMAL = _stateful("RandomStandardNormal", "normal",
                                   "Standard normal values (stateful stream).")
RANDOM_UNIFORM = _stateful("RandomUniform", "uniform", "Uniform [0, 1) values (stateful).")
TRUNCATED_NORMAL = _stateful("TruncatedNormal", "truncated_normal",
                             "Standard normals within 2 (stateful stream).")

def _multinomial_shape(logits, *seed, num_samples, output_dtype, **attrs):
    batch = None if logits.shape is None else logits.shape[0]
    return AbstractValue((batch, num_samples), output_dtype)


RANDOM_UNIFORM_INT = registry.primitive(
    "RandomUniformInt", _host_kernel(_validated_shape(_uniform_int_kernel)),
    dtypes=_INT_DTYPES, shape_fn=lambda lo, hi, *, shape, **a: AbstractValue(shape, lo.dtype),
    family="random", stateful=True,
    bad_samples=lambda rng: [
        ((np.int32(5), np.int32(3)), {"shape": (2,), "seed": 1, "seed2": 2},
         errors.InvalidArgumentError),
        ((np.int32(3), np.int32(3)), {"shape": (2,), "seed": 1, "seed2": 2},
         errors.InvalidArgumentError),
        ((np.zeros(2, np.int32), np.int32(3)), {"shape": (2,), "seed": 1, "seed2": 2},
         errors.InvalidArgumentError)])

MULTINOMIAL = registry.primitive(
    "Multinomial", _host_kernel(_multinomial_kernel), dtypes=FLOAT, dtype_group=(0,),
    shape_fn=_multinomial_shape, family="random", stateful=True,
    bad_samples=lambda rng: [
        ((np.zeros(3, np.float32),), {"num_samples": 2, "output_dtype": "int64", "seed": 1,
                                      "seed2": 2}, errors.InvalidArgumentError),
        ((np.zeros((2, 0), np.float32),), {"num_samples": 2, "output_dtype": "int64",
                                           "seed": 1, "seed2": 2},
         errors.InvalidArgumentError)])

RANDOM_SHUFFLE = registry.primitive(
    "RandomShuffle", _host_kernel(_shuffle_kernel), dtypes=None,
    shape_fn=lambda x, **a: AbstractValue(x.shape, x.dtype), family="random", stateful=True)

RANDOM_GAMMA = registry.primitive(
    "RandomGamma", _host_kernel(_validated_shape(_gamma_kernel)), dtypes=FLOAT,
    shape_fn=lambda alpha, *, shape, **a: AbstractValue(
        None if alpha.shape is None else tuple(shape) + tuple(alpha.shape), alpha.dtype),
    family="random", stateful=True)


def _seed_samples(rng, dtype):
    return [((np.array(s, dtype.np_dtype),), {}) for s in
            ([1, 2], [0, 0], [-5, 7], [2**31 - 1, -(2**31)], [123456, 987654])]


STATELESS_GET_KEY_COUNTER = registry.primitive(
    "StatelessRandomGetKeyCounter", _host_kernel(_key_counter_kernel), dtypes=_INT_DTYPES,
    num_outputs=2, family="random",
    shape_fn=lambda seed: (AbstractValue((1,), d.uint64), AbstractValue((2,), d.uint64)),
    reference=_reference_key_counter, samples=_seed_samples, sweep_dtypes=_INT_DTYPES,
    bad_samples=lambda rng: [((np.array([1, 2, 3], np.int32),), {},
                              errors.InvalidArgumentError),
                             ((np.array(1, np.int32),), {}, errors.InvalidArgumentError)])


def _key_counter_samples(seeds=((1, 2), (7, 11), (-3, 2**40))):
    return [key_counter_arrays(*scramble_seed(a, b)) for a, b in seeds] + \
        [key_counter_arrays(3, _M64)]  # a counter whose low half wraps into the high half


def _fill_samples(dtype_names):
    def samples(rng, dtype):
        out = []
        for i, (key, counter) in enumerate(_key_counter_samples()):
            for j, shape in enumerate(_SAMPLE_SHAPES):
                name = dtype_names[(i + j) % len(dtype_names)]
                out.append(((key, counter), {"shape": shape, "dtype": name}))
        return out
    return samples


def _bad_key_counter(attrs):
    def bad(rng):
        key, counter = key_counter_arrays(1, 2)
        return [((key, counter[:1]), attrs, errors.InvalidArgumentError),
                ((np.concatenate([key, key]), counter), attrs, errors.InvalidArgumentError),
                ((key, counter), dict(attrs, shape=(-2,)), errors.InvalidArgumentError)]
    return bad


def _stateless(name, kind, dtypes, doc):
    names = [t.name for t in dtypes]
    return registry.primitive(
        name, _host_kernel(_validated_shape(_stateless_fill(kind))), dtypes=(d.uint64,),
        shape_fn=_creation_shape, family="random", doc=doc, reference=_reference_fill(kind),
        samples=_fill_samples(names), sweep_dtypes=(d.uint64,),
        bad_samples=_bad_key_counter({"shape": (2,), "dtype": names[0]}))


STATELESS_NORMAL = _stateless("StatelessRandomNormalV2", "normal", _UNIFORM_DTYPES,
                              "Standard normal values of the stream (key, counter).")
STATELESS_UNIFORM = _stateless("StatelessRandomUniformV2", "uniform", _UNIFORM_DTYPES,
                               "Uniform [0, 1) values of the stream (key, counter).")
STATELESS_TRUNCATED_NORMAL = _stateless(
    "StatelessTruncatedNormalV2", "truncated_normal", _UNIFORM_DTYPES,
    "Standard normals within 2 of the stream (key, counter).")
STATELESS_FULL_INT = _stateless("StatelessRandomUniformFullIntV2", "full_int",
                                _FULL_INT_DTYPES, "Integers over the dtype's whole range.")


def _int_samples(rng, dtype):
    np_dtype = dtype.np_dtype
    bounds = [(0, 10), (-5, 5), (-(2**31), 2**31 - 1), (7, 8)]
    if dtype == d.int64:
        bounds.append((-(2**62), 2**62))
    out = []
    for i, (key, counter) in enumerate(_key_counter_samples()):
        for j, shape in enumerate(_SAMPLE_SHAPES):
            lo, hi = bounds[(i + j) % len(bounds)]
            out.append(((key, counter, np.array(lo, np_dtype), np.array(hi, np_dtype)),
                        {"shape": shape}))
    return out


STATELESS_UNIFORM_INT = registry.primitive(
    "StatelessRandomUniformIntV2", _host_kernel(_validated_shape(_stateless_int_kernel)),
    dtypes=_FULL_INT_DTYPES, dtype_group=(2, 3), family="random",
    shape_fn=lambda key, counter, lo, hi, *, shape: AbstractValue(shape, lo.dtype),
    reference=_reference_int, samples=_int_samples, sweep_dtypes=_INT_DTYPES,
    bad_samples=lambda rng: [
        (key_counter_arrays(1, 2) + (np.int32(4), np.int32(4)), {"shape": (3,)},
         errors.InvalidArgumentError),
        (key_counter_arrays(1, 2) + (np.int32(9), np.int32(-1)), {"shape": (3,)},
         errors.InvalidArgumentError)])


def _multinomial_samples(rng, dtype):
    out = []
    for shape, num_samples in (((1, 3), 5), ((2, 4), 3), ((3, 2), 0), ((0, 3), 2),
                               ((2, 1), 4)):
        logits = rng.uniform(-2, 2, size=shape).astype(dtype.np_dtype)
        for out_dtype, seed in (("int64", [1, 2]), ("int32", [-4, 9])):
            out.append(((logits, np.array(seed, np.int32)),
                        {"num_samples": num_samples, "output_dtype": out_dtype}))
    with np.errstate(divide="ignore"):
        masked = np.log(np.array([[0.5, 0.0, 0.5]])).astype(dtype.np_dtype)
    out.append(((masked, np.array([3, 4], np.int64)),
                {"num_samples": 6, "output_dtype": "int64"}))
    return out


STATELESS_MULTINOMIAL = registry.primitive(
    "StatelessMultinomial", _host_kernel(_stateless_multinomial_kernel), dtypes=FLOAT,
    dtype_group=(0,), family="random",
    shape_fn=_multinomial_shape, reference=_reference_multinomial, samples=_multinomial_samples,
    bad_samples=lambda rng: [
        ((np.zeros(3, np.float32), np.array([1, 2], np.int32)),
         {"num_samples": 2, "output_dtype": "int64"}, errors.InvalidArgumentError),
        ((np.zeros((1, 3), np.float32), np.array([1, 2, 3], np.int32)),
         {"num_samples": 2, "output_dtype": "int64"}, errors.InvalidArgumentError)])


# ---------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------


def _shape_attr(shape, op_name):
    """A shape argument as a tuple of non-negative ints (a bare int is refused, as in TF)."""
    from eagerflow.ops.broadcast import static_shape

    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        raise errors.InvalidArgumentError(
            None, op_name, "%s: shape must be a 1-D list of dimensions, got the scalar %d. "
            "Write [%d] for a vector." % (op_name, shape, shape))
    dims = static_shape(shape, op_name)
    if any(s < 0 for s in dims):
        raise errors.InvalidArgumentError(
            None, op_name, "%s: shape %s has a negative dimension; every dimension must be "
            ">= 0." % (op_name, list(dims)))
    return dims


def _dtype_in(dtype, allowed, op_name):
    dtype = d.as_dtype(dtype)
    if dtype not in allowed:
        raise errors.InvalidArgumentError(
            None, op_name, "%s: invalid dtype %s; supported: %s." % (
                op_name, dtype.name, ", ".join(t.name for t in allowed)))
    return dtype


def _is_python_value(x, value):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == value


def _scale_shift(rnd, stddev, mean, dtype):
    """``rnd * stddev + mean`` in ``dtype``, skipped when they are the plain defaults."""
    if _is_python_value(stddev, 1) and _is_python_value(mean, 0):
        return rnd
    from eagerflow.ops import arithmetic
    from eagerflow.tensor import convert_to_tensor

    stddev = convert_to_tensor(stddev, dtype=dtype)
    mean = convert_to_tensor(mean, dtype=dtype)
    return arithmetic.add(arithmetic.multiply(rnd, stddev), mean)


def _stretch(rnd, minval, maxval, dtype):
    """Maps [0, 1) values to [minval, maxval) the way TF's uniform does."""
    from eagerflow.ops import arithmetic
    from eagerflow.tensor import convert_to_tensor

    minval_is_zero = isinstance(minval, int) and minval == 0
    maxval_is_one = isinstance(maxval, int) and maxval == 1
    if minval_is_zero and maxval_is_one:
        return rnd
    maxval = convert_to_tensor(maxval, dtype=dtype)
    if minval_is_zero:
        return arithmetic.multiply(rnd, maxval)
    minval = convert_to_tensor(minval, dtype=dtype)
    return arithmetic.add(arithmetic.multiply(rnd, arithmetic.subtract(maxval, minval)), minval)


def normal(shape, mean=0.0, stddev=1.0, dtype=d.float32, seed=None, name=None):
    """Outputs random values from a normal distribution.

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        mean: A scalar or tensor broadcastable with ``shape``, of ``dtype``.
        stddev: A scalar or tensor broadcastable with ``shape``, of ``dtype``.
        dtype: A floating dtype (float16, bfloat16, float32, float64).
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``shape`` (broadcast with mean and stddev).

    Raises:
        InvalidArgumentError: For a non-floating dtype or a negative dimension.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.normal([2, 3], seed=1).shape
        TensorShape([2, 3])
    """
    dtype = _dtype_in(dtype, _UNIFORM_DTYPES, "random.normal")
    attrs = _stateful_attrs(seed, shape=_shape_attr(shape, "RandomStandardNormal"),
                            dtype=dtype.name)
    return _scale_shift(execute(RANDOM_STANDARD_NORMAL, (), attrs), stddev, mean, dtype)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=d.float32, seed=None, name=None):
    """Outputs random values from a truncated normal distribution.

    Values more than two standard deviations from the mean are dropped and re-drawn, so
    every value lies in ``(mean - 2 stddev, mean + 2 stddev)``.

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        mean: A scalar or tensor of ``dtype``: the mean before truncation.
        stddev: A scalar or tensor of ``dtype``: the standard deviation before truncation.
        dtype: A floating dtype.
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``shape``.

    Example:
        >>> import eagerflow as ef
        >>> bool((abs(ef.random.truncated_normal([100], seed=3).numpy()) < 2).all())
        True
    """
    dtype = _dtype_in(dtype, _UNIFORM_DTYPES, "random.truncated_normal")
    attrs = _stateful_attrs(seed, shape=_shape_attr(shape, "TruncatedNormal"),
                            dtype=dtype.name)
    return _scale_shift(execute(TRUNCATED_NORMAL, (), attrs), stddev, mean, dtype)


def uniform(shape, minval=0, maxval=None, dtype=d.float32, seed=None, name=None):
    """Outputs random values from a uniform distribution on ``[minval, maxval)``.

    For floats the default range is [0, 1). For integers (int32, int64) ``maxval`` is
    required; the values are ``minval + bits % (maxval - minval)``, slightly biased unless
    the range is a power of two, exactly as TF.

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        minval: The inclusive lower bound (scalar; a tensor broadcastable with ``shape`` for
            floats).
        maxval: The exclusive upper bound; defaults to 1 for floats.
        dtype: float16, bfloat16, float32, float64, int32 or int64.
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``shape``.

    Raises:
        InvalidArgumentError: For an integer dtype without ``maxval``, integer bounds with
            ``minval >= maxval``, another dtype, or a negative dimension.

    Example:
        >>> import eagerflow as ef
        >>> x = ef.random.uniform([1000], minval=-2, maxval=3, dtype=ef.int32, seed=7)
        >>> int(x.numpy().min()) >= -2 and int(x.numpy().max()) < 3
        True
    """
    dtype = _dtype_in(dtype, _UNIFORM_DTYPES + _INT_DTYPES, "random.uniform")
    if maxval is None:
        if dtype.is_integer:
            raise errors.InvalidArgumentError(
                None, "random.uniform", "random.uniform: must specify maxval for integer "
                "dtype %s (values are drawn from [minval, maxval))." % dtype.name)
        maxval = 1
    if dtype.is_integer:
        from eagerflow.tensor import convert_to_tensor

        bounds = (convert_to_tensor(minval, dtype=dtype), convert_to_tensor(maxval, dtype=dtype))
        attrs = _stateful_attrs(seed, shape=_shape_attr(shape, "RandomUniformInt"))
        return execute(RANDOM_UNIFORM_INT, bounds, attrs)
    attrs = _stateful_attrs(seed, shape=_shape_attr(shape, "RandomUniform"), dtype=dtype.name)
    return _stretch(execute(RANDOM_UNIFORM, (), attrs), minval, maxval, dtype)


def _num_samples(num_samples, op_name):
    if hasattr(num_samples, "numpy"):
        num_samples = num_samples.numpy()
    try:
        n = operator.index(num_samples)
    except TypeError:
        raise errors.InvalidArgumentError(
            None, op_name, "%s: num_samples must be an integer, got %r"
            % (op_name, num_samples)) from None
    if n < 0:
        raise errors.InvalidArgumentError(
            None, op_name, "%s: num_samples must be >= 0, got %d" % (op_name, n))
    return n


def _output_dtype(dtype, op_name):
    return _dtype_in(d.int64 if dtype is None else dtype, _INT_DTYPES, op_name).name


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """Draws samples from categorical distributions given by unnormalized log-probabilities.

    Row ``i`` of ``logits`` defines probabilities ``softmax(logits[i])``; each sample is a
    class index. Classes with ``-inf`` (or any non-finite) logit are never drawn.

    Args:
        logits: A 2-D floating tensor ``[batch_size, num_classes]``.
        num_samples: Number of samples per row (a non-negative int).
        dtype: int32 or int64 (default int64).
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A ``[batch_size, num_samples]`` tensor of class indices.

    Example:
        >>> import eagerflow as ef
        >>> s = ef.random.categorical([[float("-inf"), 0.0]], 4, seed=2)
        >>> s.numpy().tolist()
        [[1, 1, 1, 1]]
    """
    attrs = _stateful_attrs(seed, num_samples=_num_samples(num_samples, "Multinomial"),
                            output_dtype=_output_dtype(dtype, "Multinomial"))
    return execute(MULTINOMIAL, (logits,), attrs)


def shuffle(value, seed=None, name=None):
    """Randomly shuffles a tensor along its first dimension.

    Args:
        value: A tensor of rank >= 1 (a scalar is returned unchanged).
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``value``'s shape and dtype whose rows are a permutation of its rows.

    Example:
        >>> import eagerflow as ef
        >>> sorted(ef.random.shuffle([1, 2, 3, 4], seed=5).numpy().tolist())
        [1, 2, 3, 4]
    """
    return execute(RANDOM_SHUFFLE, (value,), _stateful_attrs(seed))


def gamma(shape, alpha, beta=None, dtype=d.float32, seed=None, name=None):
    """Draws samples from Gamma(alpha, beta) distributions (beta is the inverse scale).

    The output has shape ``shape + broadcast(alpha, beta).shape``: for each entry of the
    broadcast parameters, ``shape`` independent samples. Results below the dtype's smallest
    normal number are raised to it, as in TF.

    Args:
        shape: A 1-D list or tuple: the sample shape per distribution.
        alpha: Concentration (shape) parameter, a float tensor or scalar.
        beta: Inverse scale (rate), broadcastable with alpha; default 1.
        dtype: float16, float32 or float64.
        seed: An integer operation seed; see :func:`set_seed`.
        name: Unused.

    Returns:
        A tensor of ``dtype``.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.gamma([10], alpha=[0.5, 1.5], seed=4).shape
        TensorShape([10, 2])
    """
    from eagerflow.ops import arithmetic
    from eagerflow.ops.broadcast import broadcast_to
    from eagerflow.tensor import convert_to_tensor

    dtype = _dtype_in(dtype, (d.float16, d.float32, d.float64), "random.gamma")
    alpha = convert_to_tensor(alpha, dtype=dtype)
    beta = convert_to_tensor(1 if beta is None else beta, dtype=dtype)
    both = np.broadcast_shapes(tuple(alpha.shape.as_list()), tuple(beta.shape.as_list()))
    if tuple(alpha.shape.as_list()) != both:
        alpha = broadcast_to(alpha, both)
    attrs = _stateful_attrs(seed, shape=_shape_attr(shape, "RandomGamma"))
    samples = arithmetic.truediv(execute(RANDOM_GAMMA, (alpha,), attrs), beta)
    tiny = convert_to_tensor(np.finfo(dtype.np_dtype).tiny, dtype=dtype)
    return arithmetic.where(arithmetic.less(samples, tiny), tiny, samples)


# Stateless ops


def _alg(alg, op_name):
    """Only Philox exists here; TF's "auto_select" picks Philox on CPU and GPU too."""
    value = getattr(alg, "value", alg)
    if value in ("auto_select", "philox", 1, 3, None):
        return
    raise errors.UnimplementedError(
        None, op_name, "%s: RNG algorithm %r is not implemented; use 'philox' or "
        "'auto_select'." % (op_name, alg))


def _key_counter(seed, op_name):
    from eagerflow.tensor import Tensor, convert_to_tensor

    if seed.__class__ is not Tensor:
        try:
            seed = convert_to_tensor(seed)
        except (TypeError, ValueError) as exc:
            raise errors.InvalidArgumentError(
                None, op_name, "%s: seed must be a shape [2] integer tensor, got %r (%s)"
                % (op_name, seed, exc)) from None
    if seed.dtype not in _INT_DTYPES:
        raise errors.InvalidArgumentError(
            None, op_name, "%s: seed must be int32 or int64, got %s. Cast it first."
            % (op_name, seed.dtype.name))
    return execute(STATELESS_GET_KEY_COUNTER, (seed,))


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=d.float32, name=None,
                     alg="auto_select"):
    """Outputs deterministic pseudorandom values from a normal distribution.

    The same ``seed`` and ``shape`` give the same values on every call, in every program
    and on every device (the numbers TF gives for that seed).

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        seed: A shape [2] int32/int64 tensor or list.
        mean: A scalar or tensor of ``dtype``.
        stddev: A scalar or tensor of ``dtype``.
        dtype: A floating dtype.
        name: Unused.
        alg: ``"auto_select"`` or ``"philox"`` (the same here).

    Returns:
        A tensor of ``shape``.

    Raises:
        InvalidArgumentError: For a seed that is not two integers, or a bad shape/dtype.

    Example:
        >>> import eagerflow as ef
        >>> a = ef.random.stateless_normal([3], seed=[1, 2])
        >>> bool((a.numpy() == ef.random.stateless_normal([3], seed=[1, 2]).numpy()).all())
        True
    """
    dtype = _dtype_in(dtype, _UNIFORM_DTYPES, "random.stateless_normal")
    _alg(alg, "random.stateless_normal")
    attrs = {"shape": _shape_attr(shape, "StatelessRandomNormalV2"), "dtype": dtype.name}
    rnd = execute(STATELESS_NORMAL, _key_counter(seed, "StatelessRandomNormalV2"), attrs)
    return _scale_shift(rnd, stddev, mean, dtype)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=d.float32, name=None,
                               alg="auto_select"):
    """Deterministic truncated normal values: normals re-drawn until within 2 stddev.

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        seed: A shape [2] int32/int64 tensor or list.
        mean: A scalar or tensor of ``dtype``.
        stddev: A scalar or tensor of ``dtype`` (before truncation).
        dtype: A floating dtype.
        name: Unused.
        alg: ``"auto_select"`` or ``"philox"``.

    Returns:
        A tensor of ``shape``.

    Example:
        >>> import eagerflow as ef
        >>> x = ef.random.stateless_truncated_normal([50], seed=[3, 4], stddev=0.5)
        >>> bool((abs(x.numpy()) < 1.0).all())
        True
    """
    dtype = _dtype_in(dtype, _UNIFORM_DTYPES, "random.stateless_truncated_normal")
    _alg(alg, "random.stateless_truncated_normal")
    attrs = {"shape": _shape_attr(shape, "StatelessTruncatedNormalV2"), "dtype": dtype.name}
    rnd = execute(STATELESS_TRUNCATED_NORMAL, _key_counter(seed, "StatelessTruncatedNormalV2"),
                  attrs)
    return _scale_shift(rnd, stddev, mean, dtype)


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=d.float32, name=None,
                      alg="auto_select"):
    """Deterministic pseudorandom values from a uniform distribution on [minval, maxval).

    For floats the default range is [0, 1). For int32/int64 pass both bounds, or neither
    (``minval=None, maxval=None``) for integers over the whole range of the dtype, which
    also allows uint32/uint64.

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        seed: A shape [2] int32/int64 tensor or list.
        minval: Inclusive lower bound, or None for full-range integers.
        maxval: Exclusive upper bound (default 1 for floats), or None.
        dtype: float16, bfloat16, float32, float64, int32, int64, uint32 or uint64.
        name: Unused.
        alg: ``"auto_select"`` or ``"philox"``.

    Returns:
        A tensor of ``shape``.

    Raises:
        InvalidArgumentError: For an integer dtype with only one bound, bounded unsigned
            integers, integer bounds with ``minval >= maxval``, or an invalid seed.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.stateless_uniform([3, 2], seed=[1, 2], minval=None, maxval=None,
        ...                             dtype=ef.int32).numpy()[0].tolist()
        [1105988140, 1738052849]
    """
    op = "random.stateless_uniform"
    dtype = _dtype_in(dtype, _UNIFORM_DTYPES + _FULL_INT_DTYPES, op)
    _alg(alg, op)
    if dtype.is_integer:
        if (minval is None) != (maxval is None):
            raise errors.InvalidArgumentError(
                None, op, "%s: for integer dtype %s, minval and maxval must be both None "
                "(full range) or both set; got minval=%r, maxval=%r." % (
                    op, dtype.name, minval, maxval))
        if minval is not None and dtype.is_unsigned:
            raise errors.InvalidArgumentError(
                None, op, "%s: bounded integers support int32 and int64, not %s."
                % (op, dtype.name))
    elif maxval is None:
        maxval = 1
    shape = _shape_attr(shape, "StatelessRandomUniformV2")
    key_counter = _key_counter(seed, "StatelessRandomUniformV2")
    if dtype.is_integer and minval is None:
        return execute(STATELESS_FULL_INT, key_counter, {"shape": shape, "dtype": dtype.name})
    if dtype.is_integer:
        from eagerflow.tensor import convert_to_tensor

        bounds = (convert_to_tensor(minval, dtype=dtype), convert_to_tensor(maxval, dtype=dtype))
        return execute(STATELESS_UNIFORM_INT, key_counter + bounds, {"shape": shape})
    rnd = execute(STATELESS_UNIFORM, key_counter, {"shape": shape, "dtype": dtype.name})
    return _stretch(rnd, minval, maxval, dtype)


def stateless_categorical(logits, num_samples, seed, dtype=d.int64, name=None):
    """Deterministic samples from categorical distributions (see :func:`categorical`).

    Args:
        logits: A 2-D floating tensor ``[batch_size, num_classes]``.
        num_samples: Number of samples per row.
        seed: A shape [2] int32/int64 tensor or list.
        dtype: int32 or int64 (default int64).
        name: Unused.

    Returns:
        A ``[batch_size, num_samples]`` tensor of class indices.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.stateless_categorical([[0.0, 0.0]], 3, seed=[1, 1]).shape
        TensorShape([1, 3])
    """
    from eagerflow.tensor import convert_to_tensor

    op = "StatelessMultinomial"
    seed = convert_to_tensor(seed) if not hasattr(seed, "_value") else seed
    return execute(STATELESS_MULTINOMIAL, (logits, seed), {
        "num_samples": _num_samples(num_samples, op), "output_dtype": _output_dtype(dtype, op)})


def stateless_split(seed, num=2):
    """Splits a stateless seed into ``num`` new seeds (a leading axis of size ``num``).

    Args:
        seed: A shape [2] int32/int64 tensor or list.
        num: The number of new seeds.

    Returns:
        A ``[num, 2]`` tensor of seed's dtype.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.experimental.stateless_split([1, 2], num=3).numpy()[0].tolist()
        [1105988140, 1738052849]
    """
    from eagerflow.tensor import convert_to_tensor

    seed = convert_to_tensor(seed)
    return stateless_uniform([num, 2], seed=seed, dtype=seed.dtype, minval=None, maxval=None)


def stateless_fold_in(seed, data, alg="auto_select"):
    """Folds an integer (a replica id, a step) into a seed, giving a new seed.

    Args:
        seed: A shape [2] int32/int64 tensor or list.
        data: An int32/int64 scalar.
        alg: ``"auto_select"`` or ``"philox"``.

    Returns:
        A shape [2] seed of ``data``'s dtype: ``[random word of seed, data]``.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.experimental.stateless_fold_in([1, 2], 3).numpy().tolist()
        [1105988140, 3]
    """
    from eagerflow.tensor import convert_to_tensor

    from eagerflow.ops import array_ops

    data = convert_to_tensor(data)
    word = stateless_uniform([], seed=seed, dtype=data.dtype, minval=None, maxval=None,
                             alg=alg)
    return array_ops.stack([word, data])
