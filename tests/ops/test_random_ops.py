"""tf.random: TF's numbers for TF's seeds, the four seed cases, distributions, Generator."""

import math
import random
import subprocess
import sys

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops.dispatch import execute
from eagerflow.ops.random.random_generator import Generator, create_rng_state
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops import random as random_family
from eagerflow.ops.random import philox
from eagerflow.ops.random import random_distributions
from eagerflow.ops.random import random_stateful
from eagerflow.ops.random import random_stateless
from tests.ops.family_view import family_view

# The random family as one namespace: its modules' names, __all__ and EXPORTS.
r = family_view(random_family, (random_stateful, random_stateless, philox, random_distributions,))

RNG = np.random.default_rng(5)
STATELESS = [r.STATELESS_GET_KEY_COUNTER, r.STATELESS_NORMAL, r.STATELESS_UNIFORM,
             r.STATELESS_TRUNCATED_NORMAL, r.STATELESS_FULL_INT, r.STATELESS_UNIFORM_INT,
             r.STATELESS_MULTINOMIAL]
STATEFUL = [r.RANDOM_STANDARD_NORMAL, r.RANDOM_UNIFORM, r.TRUNCATED_NORMAL,
            r.RANDOM_UNIFORM_INT, r.MULTINOMIAL, r.RANDOM_SHUFFLE, r.RANDOM_GAMMA]


@pytest.fixture(autouse=True)
def fresh_seeds():
    """Each test starts with no global seed and fresh streams, and leaves it that way."""

    def unset():
        r._seeds.global_seed = None
        r._seeds.rng = None
        r._streams.clear()

    unset()
    yield
    unset()


def _np(t):
    return np.asarray(t.numpy())


# --- Philox and TF's documented outputs ---------------------------------------------------


def test_philox_known_answers():
    # Random123's published test vectors for Philox4x32-10.
    cases = [([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
             ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2,
              [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
             ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
              [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1])]
    for c, k, expected in cases:
        lo = np.array([c[0] | c[1] << 32], np.uint64)
        hi = np.array([c[2] | c[3] << 32], np.uint64)
        assert r.philox(k[0] | k[1] << 32, (lo, hi))[0].tolist() == expected


def test_stateless_matches_tf_documentation():
    # Outputs printed in TF's docstrings of stateless_split / stateless_fold_in.
    seeds = r.stateless_split([1, 2], num=3)
    assert seeds.dtype == ef.int32
    np.testing.assert_array_equal(_np(seeds), [[1105988140, 1738052849],
                                               [-335576002, 370444179],
                                               [10670227, -246211131]])
    x = r.stateless_normal([3], seed=seeds[0])
    np.testing.assert_allclose(_np(x), [-0.59835213, -0.9578608, 0.9002807], rtol=1e-6)
    folded = r.stateless_fold_in([1, 2], 3)
    np.testing.assert_array_equal(_np(folded), [1105988140, 3])
    np.testing.assert_allclose(_np(r.stateless_normal([3], seed=folded)),
                               [0.03197195, 0.8979765, 0.13253039], rtol=1e-6)


def test_stateful_matches_tf_documentation():
    # tf.random.normal and tf.random.uniform docstrings (global and op seed both set).
    r.set_seed(5)
    np.testing.assert_allclose(_np(r.normal([2, 2], 0, 1, ef.float32, seed=1)),
                               [[-1.3768897, -0.01258316], [-0.169515, 1.0824056]], rtol=1e-6)
    for _ in range(2):
        r.set_seed(5)
        first = r.uniform([], maxval=3, dtype=ef.int32, seed=10)
        second = r.uniform([], maxval=3, dtype=ef.int32, seed=10)
        assert (int(first.numpy()), int(second.numpy())) == (2, 0)


def test_generator_matches_tf_documentation():
    g = Generator.from_seed(1234)
    assert _np(g.state).tolist() == [1234, 0, 0]
    np.testing.assert_allclose(_np(g.normal(shape=(2, 3))),
                               [[0.9356609, 1.0854305, -0.93788373],
                                [-0.5061547, 1.3169702, 0.7137579]], rtol=1e-6)
    assert _np(g.state).tolist() == [2770, 0, 0]  # 256 counter steps per value
    g = Generator.from_seed(123, alg="philox")
    np.testing.assert_allclose(_np(g.normal(shape=(2, 3))),
                               [[0.8673864, -0.29899067, -0.9310337],
                                [-1.5828488, 1.2481191, -0.6770643]], rtol=1e-6)
    assert _np(create_rng_state(1234, "philox")).tolist() == [1234, 0, 0]
    assert _np(create_rng_state([12, 34], "philox")).tolist() == [0, 12, 34]


# --- registry: samples against the one-word-at-a-time references --------------------------


def _dtypes(prim):
    return list(prim.sweep_dtypes) if prim.sweep_dtypes else [ef.float32, ef.float64]


@pytest.mark.parametrize("prim", STATELESS, ids=lambda p: p.name)
def test_stateless_samples_match_reference(prim):
    cases = 0
    for dtype in _dtypes(prim):
        for args, attrs in prim.samples(RNG, dtype):
            got = execute(prim, tuple(ef.constant(a) for a in args), attrs)
            expected = prim.reference(*args, **attrs)
            got, expected = (got, expected) if not prim.single else ((got,), (expected,))
            avals = prim.shape_fn(*(AbstractValue(np.shape(a), ef.as_dtype(np.asarray(a).dtype))
                                    for a in args), **attrs)
            avals = avals if isinstance(avals, tuple) else (avals,)
            for g, e, aval in zip(got, expected, avals):
                g = np.asarray(g.numpy())
                assert g.shape == np.shape(e) and g.dtype == np.asarray(e).dtype
                np.testing.assert_array_equal(g, e)
                assert aval.shape == g.shape and aval.dtype == ef.as_dtype(g.dtype)
            cases += 1
    assert cases >= 8


def test_primitive_flags():
    for prim in STATEFUL:
        assert prim.stateful and prim.vjp is None, prim
    for prim in STATELESS:
        assert not prim.stateful and prim.vjp is None, prim


@pytest.mark.parametrize("prim", [p for p in STATELESS + STATEFUL if p.bad_samples],
                         ids=lambda p: p.name)
def test_declared_bad_inputs(prim):
    for args, attrs, exc in prim.bad_samples(RNG):
        with pytest.raises(exc) as info:
            execute(prim, tuple(ef.constant(a) for a in args), attrs)
        assert prim.name in str(info.value)


# --- seeds ----------------------------------------------------------------------------------


def test_neither_seed_set_differs_every_call():
    a, b = _np(r.uniform([8])), _np(r.uniform([8]))
    assert not np.array_equal(a, b)
    assert r.get_seed(None) == (None, None)


def test_global_seed_only_repeats_the_sequence():
    r.set_seed(7)
    a1, a2 = _np(r.uniform([4])), _np(r.normal([4]))
    r.set_seed(7)
    b1, b2 = _np(r.uniform([4])), _np(r.normal([4]))
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    r.set_seed(7)
    assert not np.array_equal(_np(r.uniform([4])), _np(r.uniform([4])))
    # The op seeds are TF's: Python's random.Random(global seed), one draw per op.
    r.set_seed(1234)
    expected = random.Random(1234)
    for _ in range(3):
        assert r.get_seed(None) == (1234, expected.randint(0, 2**31 - 1))


def test_op_seed_only_uses_the_default_global_seed():
    a1, a2 = _np(r.uniform([4], seed=9)), _np(r.uniform([4], seed=9))
    assert not np.array_equal(a1, a2)  # the kernel's counter moves on
    r.set_seed(r.DEFAULT_GRAPH_SEED)  # 87654321, TF's default graph seed
    np.testing.assert_array_equal(_np(r.uniform([4], seed=9)), a1)
    np.testing.assert_array_equal(_np(r.uniform([4], seed=9)), a2)
    assert r.get_seed(9) == (87654321, 9)


def test_both_seeds_set_and_set_seed_resets_counters():
    r.set_seed(1)
    a = [_np(r.normal([3], seed=2)) for _ in range(3)]
    r.set_seed(1)
    b = [_np(r.normal([3], seed=2)) for _ in range(3)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], a[1]) and not np.array_equal(a[1], a[2])
    # Different ops and dtypes keep different counters (different kernels in TF).
    r.set_seed(1)
    u = _np(r.uniform([3], seed=2))
    n64 = _np(r.normal([3], seed=2, dtype=ef.float64))
    np.testing.assert_array_equal(_np(r.normal([3], seed=2)), a[0])
    assert not np.allclose(n64, a[0]) and not np.allclose(u, a[0])


def test_traced_ops_take_per_trace_op_seeds_and_own_streams():
    from eagerflow.framework import context

    r.set_seed(1234)
    traces = []
    for _ in range(2):
        calls = []

        def hook(prim, args, attrs, calls=calls):
            calls.append(dict(attrs))
            return "symbolic"

        previous = context.set_trace_hook(hook)
        try:
            r.uniform([2])
            r.uniform([2])
            r.normal([1], seed=7)
            r.normal([1], seed=7)
        finally:
            context.set_trace_hook(previous)
        traces.append(calls)
    for calls in traces:
        # TF: inside a graph, unseeded ops take op seeds 0, 1, ... of that graph.
        assert [(c["seed"], c["seed2"]) for c in calls] == [(1234, 0), (1234, 1), (1234, 7),
                                                             (1234, 7)]
    streams = [c["stream"] for calls in traces for c in calls]
    assert len(set(streams)) == len(streams) and 0 not in streams  # one stream per node
    # The eager sequence of op seeds was not consumed by the traces.
    assert r.get_seed(None) == (1234, random.Random(1234).randint(0, 2**31 - 1))


def test_stream_table_forgets_least_recently_used():
    table = r._Streams(limit=2)
    assert table.reserve("op", 1, 1, 0, 5) == (1, 1 << 64)
    table.reserve("op", 2, 2, 0, 5)
    assert table.reserve("op", 1, 1, 0, 5) == (1, (1 << 64) + 5)  # continues, now recent
    table.reserve("op", 3, 3, 0, 5)  # evicts seed 2, the least recently used
    assert table.reserve("op", 1, 1, 0, 5) == (1, (1 << 64) + 10)
    assert table.reserve("op", 2, 2, 0, 5) == (2, 2 << 64)  # starts over


def test_seed_edge_cases():
    r.set_seed(0)
    assert r.get_seed(0) == (0, 2**31 - 1)  # (0, 0) would mean "no seed" to a kernel
    r.set_seed(2**31 + 5)
    assert r.get_seed(3) == ((2**31 + 5) % (2**31 - 1), 3)
    r.set_seed(np.int64(11))
    assert r.get_seed(np.int32(4)) == (11, 4)


_SCRIPT = (
    "import eagerflow.ops.random.random_stateful as r\n"
    "import eagerflow.ops.random.random_stateless as s\n"
    "r.set_seed(42)\n"
    "print(r.normal([3]).numpy().tolist(), r.uniform([2], seed=3).numpy().tolist(),"
    " r.shuffle(list(range(6))).numpy().tolist(),"
    " s.stateless_uniform([2], seed=[4, 5]).numpy().tolist())\n"
    "r._seeds.global_seed = None\n"
    "print(r.normal([3]).numpy().tolist())\n")


def test_fresh_programs_repeat_seeded_sequences():
    runs = [subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                           check=True, timeout=120).stdout.splitlines() for _ in range(2)]
    assert runs[0][0] == runs[1][0]  # seeded: the same numbers in a new process
    assert runs[0][1] != runs[1][1]  # unseeded: different every run
    # ... and the same as in this process.
    r.set_seed(42)
    here = [_np(r.normal([3])).tolist(), _np(r.uniform([2], seed=3)).tolist(),
            _np(r.shuffle(list(range(6)))).tolist(),
            _np(r.stateless_uniform([2], seed=[4, 5])).tolist()]
    assert runs[0][0] == " ".join(str(x) for x in here)


# --- distributions --------------------------------------------------------------------------

N = 100_000


def test_normal_statistics():
    r.set_seed(3)
    x = _np(r.normal([N]))
    assert x.dtype == np.float32 and abs(x.mean()) < 0.015 and abs(x.std() - 1) < 0.015
    y = _np(r.normal([N], mean=3.0, stddev=0.5, dtype=ef.float64))
    assert y.dtype == np.float64 and abs(y.mean() - 3) < 0.008 and abs(y.std() - 0.5) < 0.008
    z = _np(r.stateless_normal([N], seed=[7, 8]))
    assert abs(z.mean()) < 0.015 and abs(z.std() - 1) < 0.015
    # A tail fraction checks the shape, not just two moments: P(|x| > 2) = 4.55%.
    assert abs(np.mean(np.abs(z) > 2) - 0.0455) < 0.003


def test_truncated_normal_bounds_and_statistics():
    r.set_seed(3)
    # Standard normal truncated to (-2, 2): variance 1 - 2*2*pdf(2)/(2*cdf(2) - 1).
    pdf2 = math.exp(-2) / math.sqrt(2 * math.pi)
    mass = math.erf(2 / math.sqrt(2))
    expected_std = math.sqrt(1 - 4 * pdf2 / mass)
    for x in (_np(r.truncated_normal([N])),
              _np(r.stateless_truncated_normal([N], seed=[1, 1], dtype=ef.float64))):
        assert np.abs(x).max() < 2
        assert abs(x.mean()) < 0.01 and abs(x.std() - expected_std) < 0.01
    y = _np(r.truncated_normal([N], mean=10.0, stddev=0.1))
    assert y.min() > 9.8 and y.max() < 10.2


def test_uniform_float_statistics():
    r.set_seed(3)
    x = _np(r.uniform([N]))
    assert x.min() >= 0 and x.max() < 1 and abs(x.mean() - 0.5) < 0.005
    assert abs(x.var() - 1 / 12) < 0.002
    y = _np(r.uniform([N], minval=-3.0, maxval=-1.0, dtype=ef.float64))
    assert y.min() >= -3 and y.max() < -1 and abs(y.mean() + 2) < 0.01
    z = _np(r.stateless_uniform([N], seed=[2, 3], minval=5, maxval=7))
    assert z.min() >= 5 and z.max() < 7
    counts = np.histogram(x, bins=10, range=(0, 1))[0]
    assert np.abs(counts / N - 0.1).max() < 0.006


@pytest.mark.parametrize("dtype", [ef.int32, ef.int64])
def test_uniform_int_range_and_frequencies(dtype):
    r.set_seed(3)
    x = _np(r.uniform([N], minval=-3, maxval=4, dtype=dtype))
    assert x.dtype == dtype.np_dtype and x.min() == -3 and x.max() == 3
    np.testing.assert_allclose(np.bincount(x + 3) / N, np.full(7, 1 / 7), atol=0.006)
    y = _np(r.stateless_uniform([N], seed=[5, 6], minval=10, maxval=12, dtype=dtype))
    assert set(np.unique(y).tolist()) == {10, 11}
    wide = _np(r.uniform([1000], minval=dtype.min, maxval=dtype.max, dtype=dtype))
    assert wide.min() < dtype.min // 2 and wide.max() > dtype.max // 2


def test_full_range_integers():
    for dtype in (ef.int32, ef.int64, ef.uint32, ef.uint64):
        x = _np(r.stateless_uniform([4000], seed=[1, 9], minval=None, maxval=None, dtype=dtype))
        assert x.dtype == dtype.np_dtype
        assert x.min() < dtype.min / 2 + dtype.max / 4 and x.max() > dtype.max / 2


def test_categorical_frequencies_match_softmax():
    r.set_seed(3)
    logits = np.array([[0.0, 1.0, 2.0, -1.0], [3.0, 3.0, -np.inf, 0.0]], np.float32)
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    for s in (r.categorical(logits, N), r.stateless_categorical(logits, N, seed=[3, 4])):
        assert s.dtype == ef.int64 and s.shape == (2, N)
        for row, p in zip(_np(s), probs):
            np.testing.assert_allclose(np.bincount(row, minlength=4) / N, p, atol=0.006)
    assert not (_np(s)[1] == 2).any()  # -inf is never drawn
    small = r.categorical(logits, 3, dtype=ef.int32)
    assert small.dtype == ef.int32 and small.shape == (2, 3)
    assert r.categorical(logits, 0).shape == (2, 0)


def test_shuffle_permutes_rows():
    r.set_seed(3)
    x = np.arange(40).reshape(20, 2)
    y = _np(r.shuffle(x))
    assert y.shape == (20, 2) and not np.array_equal(x, y)
    assert sorted(map(tuple, y.tolist())) == sorted(map(tuple, x.tolist()))  # rows move whole
    assert _np(r.shuffle(ef.constant(3.0))) == 3.0
    assert _np(r.shuffle(np.zeros((0, 3)))).shape == (0, 3)
    # Every position is equally likely to receive each element.
    first = [int(_np(r.shuffle([0, 1, 2, 3]))[0]) for _ in range(2000)]
    np.testing.assert_allclose(np.bincount(first) / 2000, [0.25] * 4, atol=0.04)


def test_gamma_statistics_and_shape():
    r.set_seed(3)
    alpha = np.array([0.5, 1.0, 4.0], np.float32)
    x = _np(r.gamma([N], alpha))
    assert x.shape == (N, 3) and x.dtype == np.float32 and (x > 0).all()
    np.testing.assert_allclose(x.mean(0), alpha, rtol=0.02)
    np.testing.assert_allclose(x.var(0), alpha, rtol=0.05)
    y = _np(r.gamma([N // 10, 2], [[2.0]], beta=[4.0, 0.5], dtype=ef.float64))
    assert y.shape == (N // 10, 2, 1, 2)
    np.testing.assert_allclose(y.mean((0, 1, 2)), [0.5, 4.0], rtol=0.04)


def test_shapes_and_dtypes():
    r.set_seed(3)
    for dtype in (ef.float16, ef.bfloat16, ef.float32, ef.float64):
        for fn in (r.normal, r.truncated_normal, r.uniform):
            for shape in ([], [0], [2, 3], (1, 0, 2)):
                t = fn(shape, dtype=dtype)
                assert t.dtype == dtype and t.shape == tuple(shape), (fn, dtype, shape)
        t = r.stateless_normal(ef.constant([2, 2]), seed=[1, 2], dtype=dtype)
        assert t.dtype == dtype and t.shape == (2, 2)
    assert r.uniform(ef.TensorShape([3, 1]), maxval=5, dtype=ef.int64).dtype == ef.int64
    assert r.normal([2], mean=[0.0, 10.0]).shape == (2,)
    assert r.normal([2, 3], stddev=ef.constant([[1.0], [2.0]])).shape == (2, 3)
    half = _np(r.uniform([1000], dtype=ef.float16))
    assert half.min() >= 0 and half.max() < 1


def test_low_precision_values_round_the_float32_ones():
    seed = [6, 7]
    f32 = _np(r.stateless_normal([64], seed=seed))
    np.testing.assert_array_equal(_np(r.stateless_normal([64], seed=seed, dtype=ef.float16)),
                                  f32.astype(np.float16))


# --- stateless ------------------------------------------------------------------------------


def test_stateless_reproducible_and_seed_sensitive():
    a = _np(r.stateless_normal([1000], seed=[1, 2]))
    np.testing.assert_array_equal(a, _np(r.stateless_normal([1000], seed=[1, 2])))
    np.testing.assert_array_equal(
        a, _np(r.stateless_normal([1000], seed=ef.constant([1, 2], ef.int64))))
    r.set_seed(99)  # the global seed has no effect on stateless ops
    np.testing.assert_array_equal(a, _np(r.stateless_normal([1000], seed=[1, 2])))
    for other in ([2, 1], [1, 3], [0, 2], [-1, 2]):
        b = _np(r.stateless_normal([1000], seed=other))
        assert abs(np.corrcoef(a, b)[0, 1]) < 0.1, other
    # A prefix of a longer draw is the shorter draw: outputs depend on position only.
    np.testing.assert_array_equal(_np(r.stateless_uniform([10], seed=[4, 4])),
                                  _np(r.stateless_uniform([20], seed=[4, 4]))[:10])


def test_stateless_bad_inputs():
    with pytest.raises(errors.InvalidArgumentError, match=r"shape \[2\]"):
        r.stateless_normal([2], seed=[1, 2, 3])
    with pytest.raises(errors.InvalidArgumentError, match="shape \\[2\\]"):
        r.stateless_uniform([2], seed=5)
    with pytest.raises(errors.InvalidArgumentError, match="int32 or int64"):
        r.stateless_normal([2], seed=[1.0, 2.0])
    with pytest.raises(errors.InvalidArgumentError, match="both None"):
        r.stateless_uniform([2], seed=[1, 2], maxval=4, minval=None, dtype=ef.int32)
    with pytest.raises(errors.InvalidArgumentError, match="minval < maxval"):
        r.stateless_uniform([2], seed=[1, 2], minval=4, maxval=4, dtype=ef.int64)
    with pytest.raises(errors.InvalidArgumentError, match="int32 and int64"):
        r.stateless_uniform([2], seed=[1, 2], minval=0, maxval=4, dtype=ef.uint32)
    with pytest.raises(errors.UnimplementedError, match="threefry"):
        r.stateless_normal([2], seed=[1, 2], alg="threefry")
    with pytest.raises(errors.InvalidArgumentError, match="matrix"):
        r.stateless_categorical([0.0, 1.0], 2, seed=[1, 2])
    with pytest.raises(errors.InvalidArgumentError, match="int32 or int64"):
        r.stateless_categorical([[0.0, 1.0]], 2, seed=[1.5, 2.0])


# --- bad inputs of the stateful ops ---------------------------------------------------------


def test_stateful_bad_inputs():
    with pytest.raises(errors.InvalidArgumentError, match="maxval for integer"):
        r.uniform([2], dtype=ef.int32)
    with pytest.raises(errors.InvalidArgumentError, match="minval < maxval, got 5 >= 3"):
        r.uniform([2], minval=5, maxval=3, dtype=ef.int32)
    with pytest.raises(errors.InvalidArgumentError, match="negative dimension"):
        r.normal([2, -1])
    with pytest.raises(errors.InvalidArgumentError, match="Write \\[3\\]"):
        r.uniform(3)
    with pytest.raises(errors.InvalidArgumentError, match="invalid dtype int32"):
        r.normal([2], dtype=ef.int32)
    with pytest.raises(errors.InvalidArgumentError, match="invalid dtype"):
        r.uniform([2], maxval=3, dtype=ef.uint8)
    with pytest.raises(errors.InvalidArgumentError, match="matrix"):
        r.categorical([[[0.0]]], 2)
    with pytest.raises(errors.InvalidArgumentError, match="0 classes"):
        r.categorical(np.zeros((2, 0), np.float32), 2)
    with pytest.raises(errors.InvalidArgumentError, match=">= 0"):
        r.categorical([[0.0, 1.0]], -1)
    with pytest.raises(errors.InvalidArgumentError, match="Multinomial does not support"):
        r.categorical([[0, 1]], 2)
    with pytest.raises(errors.InvalidArgumentError, match="invalid dtype"):
        r.categorical([[0.0, 1.0]], 2, dtype=ef.float32)
    # A ValueError too, as TF raises for these in Python.
    with pytest.raises(ValueError):
        r.uniform([2], dtype=ef.int64)


# --- Generator ------------------------------------------------------------------------------


def test_generator_reproducible_and_advancing():
    a, b = Generator.from_seed(77), Generator.from_seed(77)
    x1, x2 = _np(a.normal([5])), _np(a.normal([5]))
    assert not np.array_equal(x1, x2)
    np.testing.assert_array_equal(x1, _np(b.normal([5])))
    np.testing.assert_array_equal(x2, _np(b.normal([5])))
    a.reset_from_seed(77)
    np.testing.assert_array_equal(x1, _np(a.normal([5])))
    c = Generator(copy_from=a)
    np.testing.assert_array_equal(_np(c.uniform([3])), _np(a.uniform([3])))
    d = Generator.from_seed(77)
    d.skip(5)  # the state after skip(n) is the state after drawing n values
    np.testing.assert_array_equal(x2, _np(d.normal([5])))
    e = Generator.from_key_counter(key=77, counter=[0, 0], alg="philox")
    np.testing.assert_array_equal(_np(e.state), [0, 0, 77])
    f = Generator.from_state([0, 0, 77], alg=1)
    np.testing.assert_array_equal(_np(e.truncated_normal([6])), _np(f.truncated_normal([6])))
    assert int(f.key.numpy()) == 77 and f.algorithm == 1


def test_generator_counter_carries_into_high_word():
    g = Generator.from_state([-1, 0, 5], alg="philox")  # counter_lo = 2**64 - 1
    g.skip(1)
    np.testing.assert_array_equal(_np(g.state), [255, 1, 5])


def test_generator_split_is_independent():
    parent = Generator.from_seed(5)
    before = _np(parent.state)
    kids = parent.split(3)
    assert not np.array_equal(before, _np(parent.state))  # splitting advances the parent
    draws = [_np(k.normal([2000])) for k in kids] + [_np(parent.normal([2000]))]
    for i in range(len(draws)):
        for j in range(i + 1, len(draws)):
            assert abs(np.corrcoef(draws[i], draws[j])[0, 1]) < 0.1
    again = Generator.from_seed(5).split(3)
    np.testing.assert_array_equal(_np(again[1].normal([2000])), draws[1])
    seeds = Generator.from_seed(5).make_seeds(4)
    assert seeds.shape == (2, 4) and seeds.dtype == ef.int64
    assert (_np(seeds)[1] == 0).all() and len(set(_np(seeds)[0].tolist())) == 4


def test_generator_distributions():
    g = Generator.from_seed(8)
    x = _np(g.uniform([N], minval=2, maxval=9, dtype=ef.int32))
    assert x.min() == 2 and x.max() == 8
    np.testing.assert_allclose(np.bincount(x - 2) / N, np.full(7, 1 / 7), atol=0.006)
    y = _np(g.uniform([N], minval=-1.0, maxval=1.0))
    assert y.min() >= -1 and y.max() < 1 and abs(y.mean()) < 0.01
    z = _np(g.truncated_normal([N], stddev=2.0, dtype=ef.float64))
    assert z.dtype == np.float64 and np.abs(z).max() < 4
    assert g.uniform_full_int([3]).dtype == ef.uint64
    assert g.uniform([2], minval=None, maxval=None, dtype=ef.int64).dtype == ef.int64


def test_generator_unsigned_bounds():
    g = Generator.from_seed(2)
    x = _np(g.uniform([5000], minval=5, maxval=9, dtype=ef.uint32))
    assert x.dtype == np.uint32 and set(x.tolist()) == {5, 6, 7, 8}
    y = _np(g.uniform([5000], minval=np.uint64(2**63), maxval=np.uint64(2**64 - 1),
                      dtype=ef.uint64))
    assert y.dtype == np.uint64 and y.min() >= 2**63 and y.max() > 2**64 - 2**62


def test_generator_bad_inputs():
    with pytest.raises(errors.UnimplementedError, match="ThreeFry"):
        Generator.from_seed(1, alg="threefry")
    with pytest.raises(errors.InvalidArgumentError, match="3 int64 words"):
        Generator.from_state([1, 2], alg="philox")
    with pytest.raises(errors.InvalidArgumentError, match="both None"):
        Generator.from_seed(1).uniform([2], maxval=5, minval=None, dtype=ef.int32)
    with pytest.raises(errors.InvalidArgumentError, match="minval < maxval"):
        Generator.from_seed(1).uniform([2], minval=5, maxval=5, dtype=ef.int32)
    with pytest.raises(errors.InvalidArgumentError, match="negative dimension"):
        Generator.from_seed(1).normal([-3])
    with pytest.raises(errors.InvalidArgumentError, match="copy_from, or both"):
        Generator()


def test_global_generator():
    from eagerflow.ops.random import random_generator as rg

    g = rg.get_global_generator()
    assert g is rg.get_global_generator()
    mine = Generator.from_seed(3)
    rg.set_global_generator(mine)
    try:
        assert rg.get_global_generator() is mine
    finally:
        rg.set_global_generator(g)
    with pytest.raises(errors.InvalidArgumentError):
        rg.set_global_generator(42)


def test_gradients_flow_through_mean_and_stddev():
    mean, stddev = ef.Variable(1.0), ef.Variable(2.0)
    with ef.GradientTape() as tape:
        x = r.normal([4], mean=mean, stddev=stddev, seed=1)
    d_mean, d_stddev = tape.gradient(x, [mean, stddev])
    z = (_np(x) - 1.0) / 2.0  # the standard normals drawn
    np.testing.assert_allclose([float(d_mean.numpy()), float(d_stddev.numpy())],
                               [4.0, z.sum()], rtol=1e-5)


# --- devices --------------------------------------------------------------------------------


def test_creation_ops_take_the_scope_device():
    with ef.device("/CPU:0"):
        t = r.normal([2], seed=1)
    assert t.device.endswith("CPU:0")


def test_gpu_kernels_generate_on_the_host_and_copy():
    class FakeGpu:  # the two Backend methods the wrapper uses, recording the copies
        is_gpu = True

        def to_numpy(self, a):
            return np.asarray(a)

        def asarray(self, a):
            return ("on-gpu", np.asarray(a))

    key, counter = r.key_counter_arrays(*r.scramble_seed(1, 2))
    kernel = r.STATELESS_NORMAL.forward(FakeGpu())
    where, values = kernel(key, counter, shape=(5,), dtype="float32")
    assert where == "on-gpu"
    np.testing.assert_array_equal(values, _np(r.stateless_normal([5], seed=[1, 2])))
    outs = r.STATELESS_GET_KEY_COUNTER.forward(FakeGpu())(np.array([1, 2], np.int32))
    assert [o[0] for o in outs] == ["on-gpu", "on-gpu"]


def _gpu_available():
    try:
        from eagerflow.framework import context

        return context.physical_gpu_count() > 0
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs cupy and a GPU")
def test_gpu_gives_the_cpu_numbers():
    with ef.device("/GPU:0"):
        gpu = r.stateless_normal([257], seed=[1, 2])
        r.set_seed(4)
        gpu_stateful = r.truncated_normal([33], seed=5)
        gpu_cat = r.stateless_categorical([[0.0, 1.0, 2.0]], 50, seed=[1, 2])
    assert gpu.device.endswith("GPU:0")
    np.testing.assert_array_equal(_np(gpu), _np(r.stateless_normal([257], seed=[1, 2])))
    r.set_seed(4)
    np.testing.assert_array_equal(_np(gpu_stateful), _np(r.truncated_normal([33], seed=5)))
    np.testing.assert_array_equal(
        _np(gpu_cat), _np(r.stateless_categorical([[0.0, 1.0, 2.0]], 50, seed=[1, 2])))


# -- invalid parameters: NaN, never a hang --------------------------------------------------------
@pytest.mark.parametrize("dtype", [ef.float16, ef.float32, ef.float64])
def test_gamma_invalid_alpha_gives_nan_without_hanging(dtype):
    bad = [-1.0, -0.5, 0.0, float("nan"), -float("inf")]
    alpha = bad + [0.5, 2.0]
    x = _np(r.gamma([50], alpha, seed=3, dtype=dtype))
    assert x.shape == (50, len(alpha))
    assert np.isnan(x[:, :len(bad)]).all()
    assert np.isfinite(x[:, len(bad):]).all() and (x[:, len(bad):] > 0).all()
    y = _np(ef.random.stateless_gamma([50, len(alpha)], seed=[1, 2], alpha=alpha, dtype=dtype))
    assert np.isnan(y[:, :len(bad)]).all()
    assert np.isfinite(y[:, len(bad):]).all()
    traced = ef.function(lambda a: ef.random.stateless_gamma([4, 2], [5, 6], a, dtype=dtype))
    z = _np(traced(ef.constant([-2.0, 3.0], dtype)))
    assert np.isnan(z[:, 0]).all() and np.isfinite(z[:, 1]).all()


def test_gamma_valid_outputs_unchanged_by_invalid_neighbours():
    # Each output has its own sub-stream: a NaN alpha next to a valid one changes nothing.
    alone = _np(ef.random.stateless_gamma([20, 2], seed=[7, 8], alpha=[0.7, 3.0],
                                          dtype=ef.float64))
    mixed = _np(ef.random.stateless_gamma([20, 2], seed=[7, 8], alpha=[0.7, float("nan")],
                                          dtype=ef.float64))
    np.testing.assert_array_equal(mixed[:, 0], alone[:, 0])


def test_gamma_infinite_alpha_is_inf():
    x = _np(ef.random.stateless_gamma([8], seed=[1, 2], alpha=float("inf")))
    assert np.isposinf(x).all()


def test_rejection_loops_are_bounded(monkeypatch):
    # With the caps forced to one round, the loops end at once: NaN for gamma outputs that
    # did not accept in time, a clear error for truncated normal groups still short.
    from eagerflow.ops.random import random_distributions as dist

    monkeypatch.setattr(dist, "_GAMMA_MAX_ROUNDS", 0)
    x = _np(ef.random.stateless_gamma([6], seed=[1, 2], alpha=2.0))
    assert np.isnan(x).all()
    monkeypatch.setattr(dist, "_TRUNCATED_MAX_ROUNDS", 0)
    with pytest.raises(errors.InternalError, match="truncated normal"):
        ef.random.stateless_truncated_normal([8], seed=[1, 2])
