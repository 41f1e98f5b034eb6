"""Stateless random ops: stateless_normal, stateless_uniform, stateless_truncated_normal,
stateless_categorical, stateless_gamma, stateless_split and stateless_fold_in.

A shape-[2] integer ``seed`` tensor is scrambled into a Philox key and counter
(``StatelessRandomGetKeyCounter``), so the same seed gives the same numbers on every call,
in every program, on every device. The sweeps check each kernel against a scalar reference
that follows TF's loops one 32-bit word at a time.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT
from eagerflow.ops.random.philox import (
    _BLOCKS_PER_OUTPUT, _BUMP_A, _BUMP_B, _M128, _M32, _M64, _MUL_A, _MUL_B, _SCRAMBLE_KEY,
    _ints_from_arrays, key_counter_arrays, scramble_seed,
)
from eagerflow.ops.random import (
    _FULL_INT_DTYPES, _INT_DTYPES, _SAMPLE_SHAPES, _UNIFORM_DTYPES, _check_int_bounds,
    _check_logits, _creation_shape, _dtype_in, _host_kernel, _invalid, _multinomial_shape,
    _num_samples, _output_dtype, _scale_shift, _shape_attr, _size, _stretch, _validated_shape,
)
from eagerflow.ops.random.random_distributions import (
    _GAMMA_MAX_ROUNDS, _WIDE, _box_muller_double, _box_muller_float, _categorical,
    _full_int_from_words, _gamma, _int_from_words, _uniform_from_words, _unit_float64, sample,
)
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import HOST_NUMPY

__all__ = [
    "stateless_normal", "stateless_uniform", "stateless_truncated_normal", "stateless_categorical",
    "stateless_gamma", "stateless_split", "stateless_fold_in",
]

EXPORTS = {
    "random": ["stateless_normal", "stateless_uniform", "stateless_truncated_normal",
               "stateless_categorical", "stateless_gamma"],
    "random.experimental": ["stateless_split", "stateless_fold_in"],
}


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


def _stateless_gamma_kernel(key, counter, alpha, *, shape):
    k, c = _check_key_counter(key, counter)
    shape = tuple(shape)
    if shape[len(shape) - alpha.ndim:] != alpha.shape or len(shape) < alpha.ndim:
        raise _invalid("shape %s must end with alpha's shape %s (TF's stateless_gamma draws "
                       "shape[:-alpha.ndim] samples per distribution)."
                       % (list(shape), list(alpha.shape)))
    if _size(shape) == 0:
        return np.zeros(shape, alpha.dtype)
    per_alpha = _size(shape) // alpha.size
    # The same Marsaglia-Tsang sampler (and output sub-streams) as the stateful kernel.
    return _gamma(alpha, per_alpha, k, c).reshape(shape).astype(alpha.dtype)


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


class _ScalarGammaStream:
    """One output's generator: double uniforms and normals in pairs, last value first."""

    def __init__(self, key, counter):
        self.gen = _ScalarPhilox(key, counter)
        self.normals, self.uniforms = [], []

    def uniform(self):
        if not self.uniforms:
            w = _u32(*self.gen.block())
            self.uniforms = [_unit_float64(w[0:1], w[1:2])[0], _unit_float64(w[2:3], w[3:4])[0]]
        return self.uniforms.pop()

    def normal(self):
        if not self.normals:
            words = (w[None] for w in _u32(*self.gen.block()))
            self.normals = [float(v[0]) for v in _box_muller_double(*words)]
        return self.normals.pop()


def _reference_gamma_one(stream, a):
    """Marsaglia-Tsang for one Gamma(a, 1) sample (NaN for a <= 0 or NaN, as _gamma)."""
    if not a > 0:
        return np.nan
    if a == 1.0:
        return -np.log(1.0 - stream.uniform())
    dd = a + (2.0 / 3 if a < 1 else -1.0 / 3)
    cc = 1.0 / 3 / np.sqrt(dd)
    for _ in range(_GAMMA_MAX_ROUNDS):
        x = stream.normal()
        v = 1 + cc * x
        if v <= 0:
            continue
        v = v ** 3
        u = stream.uniform()
        if u < 1 - 0.0331 * x ** 4 or np.log(u) < 0.5 * x * x + dd * (1 - v + np.log(v)):
            res = dd * v
            return res * stream.uniform() ** (1 / a) if a < 1 else res
    return np.nan


def _reference_gamma(key, counter, alpha, *, shape):
    """One output at a time, each on its own generator 256 blocks apart (TF's layout)."""
    k, c = _ints_from_arrays(key, counter)
    alphas = alpha.astype(np.float64).reshape(-1)
    n = _size(shape) // alphas.size if alphas.size else 0
    out = np.zeros((n, alphas.size))
    for a_idx, a in enumerate(alphas):
        for s in range(n):
            stream = _ScalarGammaStream(k, (c + (a_idx * n + s) * _BLOCKS_PER_OUTPUT) & _M128)
            out[s, a_idx] = _reference_gamma_one(stream, a)
    return out.reshape(shape).astype(alpha.dtype)


def _gamma_samples(rng, dtype):
    out = []
    params = [(np.array(2.5), (4,)), (np.array([0.5, 1.0, 3.0]), (2, 3)),
              (np.array([[0.1], [7.0]]), (3, 2, 1)), (np.array(1.0), ()),
              (np.array([0.3, 2.0]), (0, 2))]
    for i, (key, counter) in enumerate(_key_counter_samples()):
        alpha, shape = params[i % len(params)]
        out.append(((key, counter, alpha.astype(dtype.np_dtype)), {"shape": shape}))
    out.append((_key_counter_samples()[0] + (params[-1][0].astype(dtype.np_dtype),),
                {"shape": params[-1][1]}))
    return out


def _u32(*words):
    return np.array(words, np.uint32)


# ---------------------------------------------------------------------------------------
# Primitives
# ---------------------------------------------------------------------------------------

def _seed_samples(rng, dtype):
    return [((np.array(s, dtype.np_dtype),), {}) for s in
            ([1, 2], [0, 0], [-5, 7], [2**31 - 1, -(2**31)], [123456, 987654])]


STATELESS_GET_KEY_COUNTER = registry.primitive(
    "StatelessRandomGetKeyCounter", _host_kernel(_key_counter_kernel), dtypes=_INT_DTYPES,
    host_sync=HOST_NUMPY,
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
        host_sync=HOST_NUMPY,
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
    host_sync=HOST_NUMPY,
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
    host_sync=HOST_NUMPY,
    dtype_group=(0,), family="random",
    shape_fn=_multinomial_shape, reference=_reference_multinomial, samples=_multinomial_samples,
    bad_samples=lambda rng: [
        ((np.zeros(3, np.float32), np.array([1, 2], np.int32)),
         {"num_samples": 2, "output_dtype": "int64"}, errors.InvalidArgumentError),
        ((np.zeros((1, 3), np.float32), np.array([1, 2, 3], np.int32)),
         {"num_samples": 2, "output_dtype": "int64"}, errors.InvalidArgumentError)])


STATELESS_GAMMA = registry.primitive(
    "StatelessRandomGammaV3", _host_kernel(_validated_shape(_stateless_gamma_kernel)),
    host_sync=HOST_NUMPY,
    dtypes=(d.float16, d.float32, d.float64), dtype_group=(2,), family="random",
    shape_fn=lambda key, counter, alpha, *, shape: AbstractValue(shape, alpha.dtype),
    reference=_reference_gamma, samples=_gamma_samples,
    bad_samples=lambda rng: [
        (key_counter_arrays(1, 2) + (np.ones(3, np.float32),), {"shape": (4, 2)},
         errors.InvalidArgumentError),
        ((key_counter_arrays(1, 2)[0][:0], key_counter_arrays(1, 2)[1], np.float32(1.0)),
         {"shape": (2,)}, errors.InvalidArgumentError)])


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


def stateless_gamma(shape, seed, alpha, beta=None, dtype=d.float32, name=None):
    """Deterministic samples from Gamma(alpha, beta) distributions (beta: inverse scale).

    Unlike :func:`gamma`, ``shape`` is the whole output shape and must end with the
    broadcast shape of ``alpha`` and ``beta``: ``shape[:-k]`` samples are drawn for each of
    their entries. Results below the dtype's smallest normal number are raised to it, as in
    TF. No gradient flows to ``alpha`` (TF differentiates it implicitly; not done here).

    Args:
        shape: A 1-D list, tuple, TensorShape or integer tensor: the output shape.
        seed: A shape [2] int32/int64 tensor or list.
        alpha: Concentration, a float tensor or scalar.
        beta: Inverse scale (rate), broadcastable with alpha; default 1.
        dtype: float16, float32 or float64.
        name: Unused.

    Returns:
        A tensor of ``shape`` and ``dtype``.

    Raises:
        InvalidArgumentError: If ``shape`` does not end with the parameters' shape, or the
            seed is not a shape [2] integer tensor.

    Example:
        >>> import eagerflow as ef
        >>> ef.random.stateless_gamma([10, 2], seed=[1, 2], alpha=[0.5, 1.5]).shape
        TensorShape([10, 2])
    """
    from eagerflow.ops.math import arithmetic
    from eagerflow.ops.math.broadcast import broadcast_to
    from eagerflow.tensor import convert_to_tensor

    op = "StatelessRandomGammaV3"
    dtype = _dtype_in(dtype, (d.float16, d.float32, d.float64), "random.stateless_gamma")
    alpha = convert_to_tensor(alpha, dtype=dtype)
    beta = convert_to_tensor(1 if beta is None else beta, dtype=dtype)
    both = np.broadcast_shapes(tuple(alpha.shape.as_list()), tuple(beta.shape.as_list()))
    if tuple(alpha.shape.as_list()) != both:
        alpha = broadcast_to(alpha, both)
    samples = execute(STATELESS_GAMMA, _key_counter(seed, op) + (alpha,),
                      {"shape": _shape_attr(shape, op)})
    samples = arithmetic.truediv(samples, beta)
    tiny = convert_to_tensor(np.finfo(dtype.np_dtype).tiny, dtype=dtype)
    return arithmetic.where(arithmetic.less(samples, tiny), tiny, samples)


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

    from eagerflow.ops.array import join_ops

    data = convert_to_tensor(data)
    word = stateless_uniform([], seed=seed, dtype=data.dtype, minval=None, maxval=None,
                             alg=alg)
    return join_ops.stack([word, data])
