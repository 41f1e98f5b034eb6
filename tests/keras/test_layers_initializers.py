"""Initializers, regularizers, constraints and activations against closed forms and numpy."""

import math

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import activations, constraints, initializers, regularizers

RNG = np.random.default_rng(7)


# -- initializers --------------------------------------------------------------------------------

def test_compute_fans():
    assert initializers.compute_fans(()) == (1, 1)
    assert initializers.compute_fans((5,)) == (5, 5)
    assert initializers.compute_fans((3, 4)) == (3, 4)
    assert initializers.compute_fans((2, 3, 4, 5)) == (24, 30)


@pytest.mark.parametrize("name,limit", [
    ("glorot_uniform", math.sqrt(6.0 / (40 + 60))),
    ("he_uniform", math.sqrt(6.0 / 40)),
    ("lecun_uniform", math.sqrt(3.0 / 40)),
])
def test_uniform_variance_scaling_bounds_and_variance(name, limit):
    w = initializers.get(name)((40, 60), dtype="float64").numpy()
    assert np.abs(w).max() <= limit
    np.testing.assert_allclose(w.var(), limit ** 2 / 3.0, rtol=0.1)


@pytest.mark.parametrize("name,std", [
    ("glorot_normal", math.sqrt(2.0 / (50 + 70))),
    ("he_normal", math.sqrt(2.0 / 50)),
    ("lecun_normal", math.sqrt(1.0 / 50)),
])
def test_truncated_variance_scaling_keeps_target_variance(name, std):
    w = initializers.get(name)((50, 70), dtype="float64").numpy()
    np.testing.assert_allclose(w.std(), std, rtol=0.06)
    assert np.abs(w).max() <= 2 * std / 0.87962566103423978 + 1e-12


def test_variance_scaling_untruncated_and_errors():
    w = initializers.VarianceScaling(4.0, "fan_out", "untruncated_normal", seed=1)(
        (100, 50), dtype="float64").numpy()
    np.testing.assert_allclose(w.std(), math.sqrt(4.0 / 50), rtol=0.05)
    for kwargs in ({"scale": 0.0}, {"mode": "fan"}, {"distribution": "cauchy"}):
        with pytest.raises(ValueError):
            initializers.VarianceScaling(**kwargs)


def test_random_initializers_statistics_and_seeds():
    n = initializers.RandomNormal(mean=1.0, stddev=2.0, seed=3)((200, 100), dtype="float64")
    n = n.numpy()
    np.testing.assert_allclose([n.mean(), n.std()], [1.0, 2.0], atol=0.05)
    u = initializers.RandomUniform(-2.0, 3.0, seed=4)((20000,)).numpy()
    assert u.min() >= -2.0 and u.max() < 3.0
    np.testing.assert_allclose(u.mean(), 0.5, atol=0.05)
    t = initializers.TruncatedNormal(stddev=1.0, seed=5)((20000,), dtype="float64").numpy()
    assert np.abs(t).max() <= 2.0
    # seeded: same values every call; unseeded: fresh values
    init = initializers.GlorotUniform(seed=11)
    np.testing.assert_array_equal(init((3, 3)).numpy(), init((3, 3)).numpy())
    unseeded = initializers.GlorotUniform()
    assert not np.array_equal(unseeded((3, 3)).numpy(), unseeded((3, 3)).numpy())
    with pytest.raises(ValueError, match="floating"):
        initializers.RandomNormal()((2,), dtype="int32")
    with pytest.raises(ValueError, match="seed"):
        initializers.RandomNormal(seed=1.5)


def test_constant_zeros_ones_identity():
    np.testing.assert_array_equal(initializers.Zeros()((2, 3)).numpy(), np.zeros((2, 3)))
    assert initializers.Ones()((2,), dtype="int64").dtype == ef.int64
    np.testing.assert_array_equal(initializers.Constant(2.5)((2,)).numpy(), [2.5, 2.5])
    np.testing.assert_array_equal(initializers.Constant([[1, 2]])((2, 2)).numpy(),
                                  [[1, 2], [1, 2]])
    np.testing.assert_array_equal(initializers.Identity(2.0)((2, 3)).numpy(),
                                  2.0 * np.eye(2, 3))
    with pytest.raises(ValueError, match="2D"):
        initializers.Identity()((2, 2, 2))
    with pytest.raises(ValueError, match="cannot fill"):
        initializers.Constant([1, 2, 3])((2, 2))


@pytest.mark.parametrize("shape", [(4, 4), (3, 7), (8, 2), (2, 3, 5)])
def test_orthogonal(shape):
    q = initializers.Orthogonal(gain=1.5, seed=2)(shape, dtype="float64").numpy()
    flat = q.reshape(-1, shape[-1])
    if flat.shape[0] >= flat.shape[1]:
        np.testing.assert_allclose(flat.T @ flat, 2.25 * np.eye(flat.shape[1]), atol=1e-10)
    else:
        np.testing.assert_allclose(flat @ flat.T, 2.25 * np.eye(flat.shape[0]), atol=1e-10)
    with pytest.raises(ValueError, match="two-dimensional"):
        initializers.Orthogonal()((3,))


def test_initializer_get_and_serialization():
    for name in ("zeros", "ones", "glorot_uniform", "GlorotNormal", "he_normal", "orthogonal",
                 "truncated_normal", "random_uniform", "uniform", "identity",
                 "variance_scaling", "lecun_normal"):
        init = initializers.get(name)
        clone = initializers.deserialize(initializers.serialize(init))
        assert type(clone) is type(init) and clone.get_config() == init.get_config()
    assert isinstance(initializers.get("uniform"), initializers.RandomUniform)
    assert isinstance(initializers.get(initializers.HeUniform), initializers.HeUniform)
    fn = lambda shape, dtype=None: ef.zeros(shape)  # noqa: E731
    assert initializers.get(fn) is fn
    assert initializers.get(None) is None
    with pytest.raises(ValueError, match="Could not interpret initializer"):
        initializers.get("bogus")
    with pytest.raises(ValueError, match="Unknown initializer"):
        initializers.deserialize({"class_name": "Bogus", "config": {}})


# -- regularizers --------------------------------------------------------------------------------

def test_regularizers_closed_forms():
    x = RNG.standard_normal((3, 4))
    t = ef.constant(x)
    np.testing.assert_allclose(float(regularizers.L1(0.3)(t)), 0.3 * np.abs(x).sum())
    np.testing.assert_allclose(float(regularizers.L2(0.2)(t)), 0.2 * (x ** 2).sum())
    np.testing.assert_allclose(float(regularizers.L1L2(0.1, 0.4)(t)),
                               0.1 * np.abs(x).sum() + 0.4 * (x ** 2).sum())
    assert float(regularizers.L1L2()(t)) == 0.0
    assert regularizers.l2().l2 == 0.01 and regularizers.l1_l2().l1 == 0.01
    n = x / np.linalg.norm(x, axis=1, keepdims=True)
    p = n @ n.T
    off = np.abs(p - np.diag(np.diag(p))).sum()
    np.testing.assert_allclose(float(regularizers.OrthogonalRegularizer(0.5)(t)),
                               0.5 * 0.5 * off / 3.0, rtol=1e-10)


def test_regularizer_get_serialize_and_errors():
    for r in (regularizers.L1(0.2), regularizers.L2(0.3), regularizers.L1L2(0.1, 0.2),
              regularizers.OrthogonalRegularizer(0.1, "columns")):
        clone = regularizers.deserialize(regularizers.serialize(r))
        assert type(clone) is type(r) and clone.get_config() == r.get_config()
    assert isinstance(regularizers.get("l1_l2"), regularizers.L1L2)
    with pytest.raises(ValueError, match="non-negative"):
        regularizers.L2(-1.0)
    with pytest.raises(ValueError, match="Could not interpret regularizer"):
        regularizers.get("l3")


# -- constraints ---------------------------------------------------------------------------------

def test_constraints_closed_forms():
    w = RNG.standard_normal((4, 3)) * 3.0
    norms = np.sqrt((w ** 2).sum(axis=0, keepdims=True))
    got = constraints.MaxNorm(2.0)(ef.constant(w)).numpy()
    np.testing.assert_allclose(got, w * np.clip(norms, 0, 2.0) / (1e-7 + norms))
    got = constraints.UnitNorm(axis=0)(ef.constant(w)).numpy()
    np.testing.assert_allclose(got, w / (1e-7 + norms))
    got = constraints.MinMaxNorm(1.0, 2.0, rate=0.5)(ef.constant(w)).numpy()
    desired = 0.5 * np.clip(norms, 1.0, 2.0) + 0.5 * norms
    np.testing.assert_allclose(got, w * desired / (1e-7 + norms))
    np.testing.assert_allclose(constraints.NonNeg()(ef.constant(w)).numpy(),
                               w * (w >= 0))
    for c in (constraints.MaxNorm(3, axis=[0, 1]), constraints.NonNeg(),
              constraints.UnitNorm(1), constraints.MinMaxNorm(0.5, 2.0, 0.3)):
        clone = constraints.deserialize(constraints.serialize(c))
        assert type(clone) is type(c) and clone.get_config() == c.get_config()
    assert isinstance(constraints.get("max_norm"), constraints.MaxNorm)
    with pytest.raises(ValueError, match="Could not interpret constraint"):
        constraints.get("bogus")


# -- activations ---------------------------------------------------------------------------------

def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _gelu(x):
    from math import erf

    return x * 0.5 * (1 + np.vectorize(erf)(x / np.sqrt(2)))


_REFS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "softmax": lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(
        x - x.max(-1, keepdims=True)).sum(-1, keepdims=True),
    "log_softmax": lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)),
    "gelu": _gelu,
    "elu": lambda x: np.where(x > 0, x, np.exp(x) - 1),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (
        np.exp(x) - 1)),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "swish": lambda x: x * _sigmoid(x),
    "silu": lambda x: x * _sigmoid(x),
    "linear": lambda x: x,
    "exponential": np.exp,
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.2 * x),
    "relu6": lambda x: np.clip(x, 0, 6),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
}


@pytest.mark.parametrize("name", sorted(_REFS))
def test_activation_against_numpy(name):
    x = RNG.standard_normal((3, 5)) * 4
    got = activations.get(name)(ef.constant(x)).numpy()
    np.testing.assert_allclose(got, _REFS[name](x), rtol=1e-7, atol=1e-10)
    assert activations.deserialize(activations.serialize(activations.get(name))) is \
        activations.get(name)


def test_relu_variants_and_gradient():
    x = np.array([-3.0, -1.0, 0.5, 2.0, 8.0])
    got = activations.relu(ef.constant(x), negative_slope=0.1, max_value=6.0,
                           threshold=1.0).numpy()
    expected = np.where(x >= 6.0, 6.0, np.where(x > 1.0, x, 0.1 * (x - 1.0)))
    np.testing.assert_allclose(got, expected)
    t = ef.constant(np.array([0.3, -0.7, 1.2]))
    with ef.GradientTape() as tape:
        tape.watch(t)
        y = ef.reduce_sum(activations.gelu(t) * activations.softmax(t))
    g = tape.gradient(y, t).numpy()
    eps = 1e-6
    num = []
    for i in range(3):
        d = np.zeros(3)
        d[i] = eps

        def f(v):
            return float(ef.reduce_sum(activations.gelu(ef.constant(v))
                                       * activations.softmax(ef.constant(v))))

        num.append((f(t.numpy() + d) - f(t.numpy() - d)) / (2 * eps))
    np.testing.assert_allclose(g, num, rtol=1e-6)


def test_activation_get_errors():
    assert activations.get(None) is activations.linear
    with pytest.raises(ValueError, match="Could not interpret activation"):
        activations.get("bogus")
    with pytest.raises(ValueError, match="Could not interpret activation"):
        activations.get(3)
    f = lambda x: x  # noqa: E731
    assert activations.get(f) is f
