"""tf.nn activations, softmax, losses, normalization, dropout and embeddings.

References are written here in numpy (in float64 where precision matters); gradients of
every primitive are checked by random-direction finite differences (``check_vjp``) and the
composites through the GradientTape against central differences.
"""

import math

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops.nn import activation_ops, loss_ops, nn_layer_ops
from eagerflow.ops.nn import normalization_ops
from eagerflow.ops.dispatch import execute
from eagerflow.ops.reduce.reductions import reduce_sum
from eagerflow.ops.registry import AbstractValue
from eagerflow.testing import check_vjp
from eagerflow.ops import nn as nn_family
from tests.ops.family_view import family_view

# The nn family as one namespace: its modules' names, __all__ and EXPORTS.
nn = family_view(nn_family, (activation_ops, loss_ops, normalization_ops, nn_layer_ops,))

RNG = np.random.default_rng(1234)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
FLOATS = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13),
       np.float16: dict(rtol=2e-3, atol=2e-3)}


def _check(got, expected, dtype=None):
    got_np = np.asarray(got.numpy())
    expected = np.asarray(expected)
    dtype = dtype or expected.dtype.type
    assert got_np.shape == expected.shape
    assert got_np.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got_np.astype(np.float64), expected.astype(np.float64),
                               equal_nan=True, **TOL.get(dtype, {}))


def _rand(shape, dtype=np.float64, low=-3.0, high=3.0):
    return RNG.uniform(low, high, size=shape).astype(dtype)


# numpy references, by hand ------------------------------------------------------------

def np_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    s = x - np.max(x, axis=axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_erf(x):
    return np.vectorize(math.erf)(x)


ACTIVATIONS = {
    "relu": (nn.relu, lambda x: np.where(x > 0, x, 0 * x)),
    "relu6": (nn.relu6, lambda x: np.where(x > 6, 6 + 0 * x, np.where(x > 0, x, 0 * x))),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.exp(np.minimum(x, 0)) - 1)),
    "selu": (nn.selu, lambda x: SELU_SCALE * np.where(
        x > 0, x, SELU_ALPHA * (np.exp(np.minimum(x, 0)) - 1))),
    "softplus": (nn.softplus, lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)),
    "softsign": (nn.softsign, lambda x: x / (1 + np.abs(x))),
}


# Activations ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3)])
def test_activation_matches_numpy(name, dtype, shape):
    fn, ref = ACTIVATIONS[name]
    x = _rand(shape, dtype, -8.0, 8.0)
    _check(fn(ef.constant(x)), ref(x.astype(np.float64)).astype(dtype), dtype)


def test_relu_family_keeps_integer_dtypes_and_leaky_relu_casts_to_float32():
    x = np.array([-3, 0, 4, 9], np.int32)
    assert nn.relu(x).numpy().tolist() == [0, 0, 4, 9]
    assert nn.relu(x).dtype == ef.int32
    assert nn.relu6(x).numpy().tolist() == [0, 0, 4, 6]
    assert nn.relu(np.array([1, 200], np.uint8)).dtype == ef.uint8
    out = nn.leaky_relu(ef.constant([-10, 5]))
    assert out.dtype == ef.float32 and out.numpy().tolist() == [-2.0, 5.0]
    assert nn.leaky_relu([-1.0, 1.0], alpha=0.5).numpy().tolist() == [-0.5, 1.0]
    assert nn.leaky_relu([-1.0], alpha=np.array(0.25)).numpy().tolist() == [-0.25]


def test_activation_edge_values():
    nan, inf = float("nan"), float("inf")
    x = ef.constant([nan, -inf, inf, -0.0])
    assert np.isnan(nn.relu(x).numpy()[0])  # NaN propagates
    assert nn.relu(x).numpy()[1:].tolist() == [0.0, inf, 0.0]
    big = ef.constant([-100.0, 100.0, 1e30])
    assert nn.softplus(big).numpy().tolist()[1:] == [100.0, float(np.float32(1e30))]
    assert 0 < nn.softplus(big).numpy()[0] < 1e-40
    assert nn.elu(ef.constant([-1e4])).numpy().tolist() == [-1.0]
    assert nn.elu(ef.constant([1e4])).numpy().tolist() == [1e4]  # no overflow in exp
    np.testing.assert_allclose(nn.selu(ef.constant([-1e4])).numpy(), [-SELU_SCALE * SELU_ALPHA],
                               rtol=1e-6)


def test_activation_dtype_errors():
    with pytest.raises(errors.InvalidArgumentError, match="Elu"):
        nn.elu(ef.constant([1, 2]))
    with pytest.raises(errors.InvalidArgumentError, match="Relu"):
        nn.relu(ef.constant([True]))
    with pytest.raises(errors.InvalidArgumentError, match="gelu"):
        nn.gelu(ef.constant([1, 2]))


def _grad_at(fn, values):
    x = ef.constant(np.asarray(values, np.float64))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x).numpy().tolist()


def test_kink_gradients_follow_tf():
    assert _grad_at(nn.relu, [-1.0, 0.0, 2.0]) == [0.0, 0.0, 1.0]
    assert _grad_at(nn.relu6, [0.0, 3.0, 6.0, 7.0]) == [0.0, 1.0, 0.0, 0.0]
    assert _grad_at(lambda x: nn.leaky_relu(x, 0.1), [-2.0, 0.0, 3.0]) == [0.1, 0.1, 1.0]
    assert _grad_at(nn.elu, [0.0, -1.0]) == pytest.approx([1.0, math.exp(-1.0)])
    # TF's EluGrad/SeluGrad test outputs < 0, so 0 takes the positive branch.
    assert _grad_at(nn.selu, [0.0, -1.0]) == pytest.approx(
        [SELU_SCALE, SELU_SCALE * SELU_ALPHA * math.exp(-1.0)])



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 0])
def test_relu_grad_compiled_loop_gives_the_masked_products_bits(dtype, threads, monkeypatch):
    # The compiled ReluGrad (large float arrays) against numpy's product with the mask:
    # NaN/infinite cotangents, NaN features, signed zeros; a transposed (non-contiguous)
    # input, mixed dtypes and a read-only input keep the numpy form.
    from eagerflow.backend import cpu_jit, cpu_threads

    pytest.importorskip("numba")
    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 1 << 8)
    monkeypatch.setattr(cpu_threads, "FUSED_MIN_ELEMENTS", 1 << 12)
    cpu_threads.set_threads(threads)
    try:
        rng = np.random.default_rng(3)
        g = rng.standard_normal((97, 130)).astype(dtype)
        f = rng.standard_normal((97, 130)).astype(dtype)
        g.reshape(-1)[:10] = [np.inf, -np.inf, np.nan, -0.0, 0.0, 1.0, -1.0, np.nan, -2.0, 3.0]
        f.reshape(-1)[:10] = [1.0, -1.0, 1.0, 1.0, -1.0, np.nan, 0.0, -0.0, -1.0, np.inf]
        ran = []
        loop = activation_ops._RELU_GRAD_LOOP
        monkeypatch.setattr(loop, "compiled", lambda real=loop.compiled: ran.append(1) or real())
        kernel = activation_ops._relu_grad_kernel(np)
        other = np.float64 if dtype == np.float32 else np.float32
        frozen = f.copy()
        frozen.flags.writeable = False
        for a, b in ((g, f), (g.T, f.T), (g, f.astype(other)), (g, frozen)):
            with np.errstate(invalid="ignore"):
                want = a * (b > 0)
                got = kernel(a, b)
            assert got.dtype == want.dtype
            same = (got == want) | (np.isnan(got) & np.isnan(want))
            assert same.all() and (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()
        assert len(ran) == 1  # the contiguous pair only
    finally:
        cpu_threads.set_threads(0)


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_gelu(approximate, dtype):
    x = _rand((3, 4), dtype, -5.0, 5.0)
    x64 = x.astype(np.float64)
    if approximate:
        ref = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3)))
    else:
        ref = 0.5 * x64 * (1 + np_erf(x64 / np.sqrt(2)))
    _check(nn.gelu(ef.constant(x), approximate=approximate), ref.astype(dtype), dtype)


def test_silu_swish_and_beta():
    x = _rand((5,))
    _check(nn.silu(ef.constant(x)), x * np_sigmoid(x))
    _check(nn.swish(ef.constant(x), beta=2.0), x * np_sigmoid(2.0 * x))
    _check(nn.silu(ef.constant(x.astype(np.float32)), beta=ef.constant(0.5, ef.float64)),
           (x * np_sigmoid(0.5 * x)).astype(np.float32), np.float32)
    assert nn.swish is nn.silu


def test_crelu():
    x = _rand((2, 3))
    _check(nn.crelu(ef.constant(x)), np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], -1))
    _check(nn.crelu(ef.constant(x), axis=0),
           np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], 0))


# softmax / log_softmax -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((5,), None), ((2, 3), 0), ((2, 3), -1),
                                        ((2, 3, 4), 1), ((3, 1), 1), ((0, 3), -1), ((2, 0), 0)])
def test_softmax_and_log_softmax(dtype, shape, axis):
    x = _rand(shape, dtype)
    a = -1 if axis is None else axis
    x64 = x.astype(np.float64)
    if x.size:
        _check(nn.softmax(ef.constant(x), axis=axis), np_softmax(x64, a).astype(dtype), dtype)
        _check(nn.log_softmax(ef.constant(x), axis=axis), np_log_softmax(x64, a).astype(dtype),
               dtype)
    else:
        assert nn.softmax(ef.constant(x), axis=axis).shape == shape
        assert nn.log_softmax(ef.constant(x), axis=axis).dtype == ef.as_dtype(dtype)


def test_softmax_is_stable_for_huge_logits():
    x = ef.constant([[1000.0, 0.0, -1000.0], [-1e30, -1e30, -1e30]])
    p = nn.softmax(x).numpy()
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(p[1], [1 / 3] * 3, rtol=1e-6)
    lp = nn.log_softmax(x).numpy()
    np.testing.assert_allclose(lp[0], [0.0, -1000.0, -2000.0])
    # -inf logits get probability 0 and log-probability -inf.
    q = nn.softmax(ef.constant([0.0, -np.inf])).numpy().tolist()
    assert q == [1.0, 0.0]
    assert nn.log_softmax(ef.constant([0.0, -np.inf])).numpy().tolist() == [0.0, -np.inf]


def test_softmax_half_precision_computed_in_float32():
    x = _rand((4, 50), np.float16, -8.0, 8.0)
    out = nn.softmax(ef.constant(x))
    assert out.dtype == ef.float16
    ref = np_softmax(x.astype(np.float64))
    np.testing.assert_allclose(out.numpy().astype(np.float64), ref, rtol=1e-3, atol=1e-4)
    assert nn.log_softmax(ef.constant(x)).dtype == ef.float16


def test_softmax_errors():
    with pytest.raises(errors.InvalidArgumentError, match=r"Softmax.*>= 1 dimension"):
        nn.softmax(ef.constant(1.0))
    with pytest.raises(errors.InvalidArgumentError, match=r"axis 2 is out of range.*rank 2"):
        nn.softmax(ef.constant([[1.0]]), axis=2)
    with pytest.raises(errors.InvalidArgumentError, match="LogSoftmax"):
        nn.log_softmax(ef.constant([1, 2]))
    with pytest.raises(errors.InvalidArgumentError, match="axis must be an int"):
        nn.softmax(ef.constant([1.0]), axis="last")


def test_softmax_shape_rules_accept_unknown_dims_and_reject_scalars():
    aval = AbstractValue((None, 3), ef.float32)
    assert nn.SOFTMAX.shape_fn(aval, axis=-1) == aval
    with pytest.raises(errors.InvalidArgumentError):
        nn.SOFTMAX.shape_fn(AbstractValue((), ef.float32), axis=-1)
    out = nn.SPARSE_SOFTMAX_XENT.shape_fn(AbstractValue((None, 5), ef.float32),
                                          AbstractValue((None,), ef.int64))
    assert out == AbstractValue((None,), ef.float32)
    with pytest.raises(errors.InvalidArgumentError, match="Shape mismatch"):
        nn.SPARSE_SOFTMAX_XENT.shape_fn(AbstractValue((2, 5), ef.float32),
                                        AbstractValue((3,), ef.int32))


# Cross-entropy -------------------------------------------------------------------------

def np_sparse_xent(logits, labels):
    lp = np_log_softmax(logits.astype(np.float64))
    return -np.take_along_axis(lp, labels[..., None].astype(np.int64), -1)[..., 0]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("batch,classes", [((6,), 4), ((2, 3), 5), ((), 3), ((0,), 2)])
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_sparse_softmax_cross_entropy(dtype, batch, classes, label_dtype):
    logits = _rand(batch + (classes,), dtype)
    labels = RNG.integers(0, classes, size=batch).astype(label_dtype)
    out = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    _check(out, np_sparse_xent(logits, labels).astype(dtype), dtype)


def test_sparse_softmax_cross_entropy_stable_and_half():
    logits = np.array([[1000.0, -1000.0], [-1000.0, 1000.0]], np.float32)
    out = nn.sparse_softmax_cross_entropy_with_logits([0, 0], logits).numpy()
    np.testing.assert_allclose(out, [0.0, 2000.0])
    half = _rand((3, 10), np.float16)
    labels = np.array([1, 9, 0], np.int32)
    got = nn.sparse_softmax_cross_entropy_with_logits(labels, half)
    assert got.dtype == ef.float16
    np.testing.assert_allclose(got.numpy().astype(np.float64), np_sparse_xent(half, labels),
                               rtol=2e-3)


@pytest.mark.parametrize("labels,pattern", [
    ([0, 3], r"label value of 3 .*\[0, 3\)"),
    ([-1, 0], r"label value of -1 .*\[0, 3\)"),
    ([0, 1, 2], "Shape mismatch"),
    ([[0], [1]], "Rank mismatch"),
    (np.array([0.0, 1.0], np.float32), "int32 or int64"),
    (np.array([0, 1], np.int16), "int32 or int64"),
])
def test_sparse_softmax_cross_entropy_bad_labels(labels, pattern):
    logits = np.zeros((2, 3), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match=pattern) as info:
        nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    assert "SparseSoftmaxCrossEntropyWithLogits" in str(info.value)


def test_sparse_softmax_cross_entropy_other_errors():
    with pytest.raises(errors.InvalidArgumentError, match="scalars"):
        nn.sparse_softmax_cross_entropy_with_logits(0, 1.0)
    with pytest.raises(errors.InvalidArgumentError, match="at least one class"):
        nn.sparse_softmax_cross_entropy_with_logits([0, 0], np.zeros((2, 0), np.float32))
    with pytest.raises(errors.InvalidArgumentError, match="does not support dtype int32"):
        nn.sparse_softmax_cross_entropy_with_logits([0], [[1, 2]])


def test_sparse_softmax_cross_entropy_gradient_is_softmax_minus_onehot():
    logits = ef.constant(_rand((3, 4)))
    labels = ef.constant([3, 0, 1])
    with ef.GradientTape() as tape:
        tape.watch(logits)
        loss = nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    grad = tape.gradient(loss, logits).numpy()
    expected = np_softmax(logits.numpy()) - np.eye(4)[[3, 0, 1]]
    np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_cross_entropy(axis):
    logits = _rand((3, 4))
    labels = np_softmax(_rand((3, 4)), axis)
    ref = -np.sum(labels * np_log_softmax(logits, axis), axis=axis)
    _check(nn.softmax_cross_entropy_with_logits(labels, logits, axis=axis), ref)
    # labels broadcast along the batch
    one = labels[:1] if axis == -1 else labels[:, :1]
    ref = -np.sum(one * np_log_softmax(logits, axis), axis=axis)
    _check(nn.softmax_cross_entropy_with_logits(one, logits, axis=axis), ref)


def test_softmax_cross_entropy_errors():
    f = nn.softmax_cross_entropy_with_logits
    with pytest.raises(errors.InvalidArgumentError, match=r"logits' shape.*\(2, 4\)"):
        f(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(errors.InvalidArgumentError, match="logits' shape"):
        f(np.ones((4, 3)), np.ones((1, 3)))
    with pytest.raises(errors.InvalidArgumentError, match="same dtype"):
        f(ef.constant(np.ones((2, 3), np.float32)), np.ones((2, 3), np.float64))
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        f(np.ones((2, 3)), np.ones((2, 3)), axis=2)


def test_sigmoid_cross_entropy():
    x = _rand((4, 3), low=-6, high=6)
    z = RNG.uniform(0, 1, size=(4, 3))
    naive = -z * np.log(np_sigmoid(x)) - (1 - z) * np.log(1 - np_sigmoid(x))
    _check(nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x), naive)
    # Stable where the naive form overflows.
    big = nn.sigmoid_cross_entropy_with_logits(labels=[0.0, 1.0, 1.0],
                                               logits=[200.0, -200.0, 200.0]).numpy()
    np.testing.assert_allclose(big, [200.0, 200.0, 0.0], atol=1e-30)
    # Python labels take the logits' dtype.
    out = nn.sigmoid_cross_entropy_with_logits(labels=[1, 0], logits=ef.constant([0.0, 0.0]))
    assert out.dtype == ef.float32
    with pytest.raises(errors.InvalidArgumentError, match="same shape"):
        nn.sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[0.0, 0.0, 1.0])
    with pytest.raises(errors.InvalidArgumentError, match="Both labels and logits"):
        nn.sigmoid_cross_entropy_with_logits(logits=[0.0])


def test_weighted_cross_entropy():
    x = _rand((5,), low=-6, high=6)
    z = RNG.uniform(0, 1, size=5)
    q = 3.0
    naive = -q * z * np.log(np_sigmoid(x)) - (1 - z) * np.log(1 - np_sigmoid(x))
    _check(nn.weighted_cross_entropy_with_logits(z, x, q), naive)
    _check(nn.weighted_cross_entropy_with_logits(z, x, ef.constant(q, ef.float64)), naive)
    with pytest.raises(errors.InvalidArgumentError, match="same shape"):
        nn.weighted_cross_entropy_with_logits([1.0], [0.0, 1.0], 2.0)


def test_log_poisson_loss():
    t = np.array([0.0, 0.5, 1.0, 2.0, 7.0])
    c = _rand((5,))
    base = np.exp(c) - c * t
    _check(nn.log_poisson_loss(t, c), base)
    stirling = np.where(t > 1, t * np.log(np.where(t > 1, t, 1)) - t +
                        0.5 * np.log(2 * np.pi * np.where(t > 1, t, 1)), 0)
    _check(nn.log_poisson_loss(t, c, compute_full_loss=True), base + stirling)
    with pytest.raises(errors.InvalidArgumentError, match="same shape"):
        nn.log_poisson_loss([1.0], [0.0, 1.0])


# Norms and normalization ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3)])
def test_l2_loss(dtype, shape):
    x = _rand(shape, dtype)
    out = nn.l2_loss(ef.constant(x))
    assert out.shape == ()
    _check(out, np.asarray(np.sum(x.astype(np.float64) ** 2) / 2).astype(dtype), dtype)


@pytest.mark.parametrize("axis", [None, 0, 1, [0, 1], -1])
def test_l2_normalize(axis):
    x = _rand((3, 4))
    ax = tuple(axis) if isinstance(axis, list) else axis
    ref = x / np.sqrt(np.maximum(np.sum(x * x, axis=ax, keepdims=True), 1e-12))
    _check(nn.l2_normalize(ef.constant(x), axis=axis), ref)


def test_l2_normalize_zero_vector_dim_alias_and_complex():
    assert nn.l2_normalize(ef.constant([0.0, 0.0])).numpy().tolist() == [0.0, 0.0]
    x = _rand((2, 3))
    _check(nn.l2_normalize(ef.constant(x), dim=1),
           x / np.sqrt(np.sum(x * x, axis=1, keepdims=True)))
    with pytest.raises(errors.InvalidArgumentError, match="both"):
        nn.l2_normalize(ef.constant(x), axis=0, dim=1)
    z = _rand((4,)) + 1j * _rand((4,))
    out = nn.l2_normalize(ef.constant(z))
    assert out.dtype == ef.complex128
    np.testing.assert_allclose(out.numpy(), z / np.sqrt(np.sum(np.abs(z) ** 2)), rtol=1e-12)


@pytest.mark.parametrize("axes,keepdims", [([0], False), ([0, 1], False), ([1], True),
                                           ([0, 2], True), ([-1], False)])
def test_moments(axes, keepdims):
    x = _rand((3, 4, 2))
    ax = tuple(axes)
    mean, var = nn.moments(ef.constant(x), axes, keepdims=keepdims)
    m = np.mean(x, axis=ax, keepdims=True)
    v = np.mean((x - m) ** 2, axis=ax, keepdims=keepdims)
    _check(mean, m if keepdims else np.squeeze(m, ax))
    _check(var, v)


def test_moments_half_precision():
    x = _rand((64, 3), np.float16, 100.0, 101.0)
    mean, var = nn.moments(ef.constant(x), axes=[0])
    assert mean.dtype == ef.float16 and var.dtype == ef.float16
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(mean.numpy(), x64.mean(0), rtol=1e-3)
    np.testing.assert_allclose(var.numpy(), x64.var(0), rtol=2e-2)


@pytest.mark.parametrize("with_offset,with_scale", [(True, True), (False, True),
                                                    (True, False), (False, False)])
def test_batch_normalization(with_offset, with_scale):
    x = _rand((4, 3))
    mean, var = x.mean(0), x.var(0)
    offset, scale = _rand((3,)), _rand((3,))
    ref = (x - mean) / np.sqrt(var + 1e-3)
    if with_scale:
        ref = ref * scale
    if with_offset:
        ref = ref + offset
    got = nn.batch_normalization(ef.constant(x), ef.constant(mean), ef.constant(var),
                                 ef.constant(offset) if with_offset else None,
                                 ef.constant(scale) if with_scale else None, 1e-3)
    _check(got, ref)


@pytest.mark.parametrize("fmt,shape,axis", [(None, (2, 3), -1), ("NHWC", (2, 4, 5, 3), -1),
                                            ("NCHW", (2, 3, 4, 5), 1), ("NCHW", (2, 3), 1),
                                            ("NWC", (2, 5, 3), -1), ("NCW", (2, 3, 5), 1),
                                            ("NCDHW", (1, 3, 2, 2, 2), 1)])
def test_bias_add(fmt, shape, axis):
    value = _rand(shape)
    bias = _rand((3,))
    bshape = [1] * len(shape)
    bshape[axis] = 3
    _check(nn.bias_add(ef.constant(value), ef.constant(bias), data_format=fmt),
           value + bias.reshape(bshape))


def test_bias_add_gradient_sums_over_other_dims():
    value = ef.constant(_rand((2, 3, 4, 5)))
    bias = ef.constant(_rand((3,)))
    with ef.GradientTape() as tape:
        tape.watch([value, bias])
        y = nn.bias_add(value, bias, data_format="NCHW")
    g_value, g_bias = tape.gradient(y, [value, bias])
    assert g_bias.numpy().tolist() == [40.0, 40.0, 40.0]
    assert g_value.shape == (2, 3, 4, 5)


def test_bias_add_errors():
    v = ef.constant(np.ones((2, 3)))
    with pytest.raises(errors.InvalidArgumentError, match=r"as many biases.*\(4,\)"):
        nn.bias_add(v, np.ones(4))
    with pytest.raises(errors.InvalidArgumentError, match="1-D"):
        nn.bias_add(v, np.ones((1, 3)))
    with pytest.raises(errors.InvalidArgumentError, match="at least 2-D"):
        nn.bias_add(ef.constant(np.ones(3)), np.ones(3))
    with pytest.raises(errors.InvalidArgumentError, match="data_format"):
        nn.bias_add(v, np.ones(3), data_format="HWCN")
    with pytest.raises(errors.InvalidArgumentError, match="same dtype"):
        nn.bias_add(v, ef.constant(np.ones(3, np.float32)))
    with pytest.raises(errors.InvalidArgumentError, match="as many biases"):
        nn.bias_add(ef.constant(np.ones((2, 4, 3))), np.ones(3), data_format="NCW")


# Dropout -------------------------------------------------------------------------------

@pytest.mark.parametrize("rate", [0.1, 0.3, 0.75])
def test_dropout_statistics_and_scaling(rate):
    x = ef.constant(RNG.uniform(1.0, 2.0, size=(200, 100)).astype(np.float32))
    y = nn.dropout(x, rate, seed=3).numpy()
    assert y.dtype == np.float32 and y.shape == (200, 100)
    kept = y != 0
    zero_fraction = 1.0 - kept.mean()
    # 20000 Bernoulli draws: the standard deviation of the fraction is < 0.0035.
    assert abs(zero_fraction - rate) < 0.02
    np.testing.assert_allclose(y[kept], x.numpy()[kept] / np.float32(1 - rate), rtol=1e-6)


def test_dropout_rate_zero_tensor_rate_and_noise_shape():
    x = ef.constant(np.ones((300, 40), np.float32))
    assert nn.dropout(x, 0.0) is x
    y = nn.dropout(x, ef.constant(0.5), seed=1).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, 2.0}
    rows = nn.dropout(x, 0.5, noise_shape=[300, 1], seed=2).numpy()
    # Whole rows are kept or dropped together.
    assert np.all((rows == 0).all(axis=1) | (rows == 2).all(axis=1))
    assert 0.35 < (rows[:, 0] == 0).mean() < 0.65
    cols = nn.dropout(x, 0.5, noise_shape=[None, 1], seed=2).numpy()
    assert np.all((cols == 0).all(axis=1) | (cols == 2).all(axis=1))


def test_dropout_gradient_is_the_scaled_mask():
    x = ef.constant(np.ones((50, 20)))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = nn.dropout(x, 0.25, seed=5)
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, y.numpy())  # d y / d x is mask / (1 - rate) = y for x = 1


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5, np.float32(2.0)])
def test_dropout_rejects_rates_outside_unit_interval(rate):
    with pytest.raises(errors.InvalidArgumentError, match=r"rate must be .*\[0, 1\)"):
        nn.dropout(ef.constant([1.0, 2.0]), rate)


def test_dropout_other_errors():
    with pytest.raises(errors.InvalidArgumentError, match=r"\[0, 1\)"):
        nn.dropout(ef.constant([1.0]), ef.constant(1.0))
    with pytest.raises(errors.InvalidArgumentError, match="scalar"):
        nn.dropout(ef.constant([1.0]), ef.constant([0.5]))
    with pytest.raises(errors.InvalidArgumentError, match="floating point"):
        nn.dropout(ef.constant([1, 2]), 0.5)
    with pytest.raises(errors.InvalidArgumentError, match="noise_shape"):
        nn.dropout(ef.constant(np.ones((3, 4))), 0.5, noise_shape=[3, 2])


# Embeddings ----------------------------------------------------------------------------

def test_embedding_lookup_single_tensor():
    table = _rand((6, 3))
    ids = np.array([[5, 0], [2, 2]], np.int32)
    _check(nn.embedding_lookup(ef.constant(table), ids), table[ids])
    _check(nn.embedding_lookup([ef.constant(table)], ef.constant(ids, ef.int64)), table[ids])
    _check(nn.embedding_lookup(ef.constant(table), 4), table[4])


@pytest.mark.parametrize("vocab,parts", [(7, 3), (6, 2), (5, 5)])
def test_embedding_lookup_mod_partitions(vocab, parts):
    table = _rand((vocab, 2))
    # 'mod' strategy: partition k holds ids k, k + p, k + 2p, ...
    partitions = [ef.constant(table[k::parts]) for k in range(parts)]
    ids = RNG.integers(0, vocab, size=(4, 3)).astype(np.int64)
    _check(nn.embedding_lookup(partitions, ids), table[ids])


def test_embedding_lookup_out_of_range_ids():
    table = ef.constant(_rand((4, 2)))
    with pytest.raises(errors.InvalidArgumentError, match="4"):
        nn.embedding_lookup(table, [0, 4])
    parts = [ef.constant(_rand((2, 2))), ef.constant(_rand((2, 2)))]
    with pytest.raises(errors.InvalidArgumentError, match=r"id 4 is out of range"):
        nn.embedding_lookup(parts, [4, 1])
    with pytest.raises(errors.InvalidArgumentError, match=r"id -1 is out of range"):
        nn.embedding_lookup(parts, [-1])
    with pytest.raises(errors.InvalidArgumentError, match="non-empty"):
        nn.embedding_lookup([], [0])


def test_embedding_lookup_max_norm():
    table = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    out = nn.embedding_lookup(ef.constant(table), [0, 1, 2], max_norm=1.0).numpy()
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])
    x = ef.constant(table)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = nn.embedding_lookup(x, [2, 2], max_norm=1.0)
    assert np.all(np.isfinite(tape.gradient(y, x).numpy()))


def test_embedding_lookup_gradient_accumulates_repeated_ids():
    x = ef.constant(_rand((4, 2)))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = nn.embedding_lookup(x, [1, 3, 1])
    g = ef.convert_to_tensor(tape.gradient(y, x)).numpy()
    np.testing.assert_allclose(g, [[0, 0], [2, 2], [0, 0], [1, 1]])


# Gradients -----------------------------------------------------------------------------

def _grad_cases(prim):
    rng = np.random.default_rng(5)
    return [(args, attrs) for args, attrs in prim.samples(rng, ef.float64)
            if all(np.asarray(a).size for a in args)]


PRIMITIVES = [nn.RELU, nn.RELU6, nn.LEAKY_RELU, nn.ELU, nn.SELU, nn.SOFTPLUS, nn.SOFTSIGN,
              nn.SOFTMAX, nn.LOG_SOFTMAX, nn.SPARSE_SOFTMAX_XENT, nn.L2_LOSS]


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
def test_primitive_vjp_matches_finite_differences(prim):
    cases = _grad_cases(prim)
    assert cases
    for i, (args, attrs) in enumerate(cases):
        check_vjp(prim, args, attrs, seed=i)


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
def test_primitive_declarations_match_numpy_reference(prim):
    rng = np.random.default_rng(9)
    for args, attrs in prim.samples(rng, ef.float64):
        got = execute(prim, tuple(ef.constant(a) for a in args), attrs)
        _check(got, prim.reference(*args, **attrs))
    for args, attrs, exc in (prim.bad_samples(rng) if prim.bad_samples else []):
        with pytest.raises(exc, match=prim.name):
            execute(prim, tuple(ef.constant(a) for a in args), attrs)


def _tape_check(fn, *args, seed=0, eps=1e-6):
    """<tape VJP(u), v> against the central difference of <u, fn> along v (float64)."""
    rng = np.random.default_rng(seed)
    xs = [np.asarray(a, np.float64) for a in args]
    ts = [ef.constant(x) for x in xs]
    with ef.GradientTape() as tape:
        tape.watch(ts)
        out = fn(*ts)
    u = rng.standard_normal(np.shape(out.numpy()))
    grads = tape.gradient(out, ts, output_gradients=ef.constant(u))
    vs = [rng.standard_normal(x.shape) for x in xs]
    analytic = sum(float(np.sum(np.asarray(ef.convert_to_tensor(g).numpy()) * v))
                   for g, v in zip(grads, vs) if g is not None)

    def phi(sign):
        shifted = [ef.constant(x + sign * eps * v) for x, v in zip(xs, vs)]
        return float(np.sum(fn(*shifted).numpy() * u))

    numeric = (phi(1.0) - phi(-1.0)) / (2 * eps)
    assert abs(analytic - numeric) <= 1e-7 + 1e-5 * abs(numeric), (analytic, numeric)


COMPOSITES = {
    "gelu": (lambda x: nn.gelu(x), [(3, 4)]),
    "gelu_tanh": (lambda x: nn.gelu(x, approximate=True), [(3, 4)]),
    "silu": (lambda x: nn.silu(x), [(5,)]),
    "swish_beta": (lambda x: nn.swish(x, beta=1.7), [(5,)]),
    "crelu": (lambda x: nn.crelu(x), [(2, 3)]),
    "sigmoid_xent": (lambda z, x: nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
                     [(3, 4), (3, 4)]),
    "weighted_xent": (lambda z, x: nn.weighted_cross_entropy_with_logits(z, x, 2.5),
                      [(6,), (6,)]),
    "softmax_xent": (lambda z, x: nn.softmax_cross_entropy_with_logits(z, x), [(3, 4), (3, 4)]),
    "softmax_xent_axis0": (lambda z, x: nn.softmax_cross_entropy_with_logits(z, x, axis=0),
                           [(3, 4), (3, 4)]),
    "log_poisson_full": (lambda t, c: nn.log_poisson_loss(t + 3.5, c, compute_full_loss=True),
                         [(5,), (5,)]),
    "log_poisson_unit": (lambda t, c: nn.log_poisson_loss(t * 0.2 + 0.5, c,
                                                          compute_full_loss=True), [(5,), (5,)]),
    "l2_normalize": (lambda x: nn.l2_normalize(x, axis=1), [(3, 4)]),
    "moments_mean": (lambda x: nn.moments(x, [0])[0], [(4, 3)]),
    "moments_var": (lambda x: nn.moments(x, [0, 1])[1], [(4, 3)]),
    "batch_norm": (lambda x, m, v, o, s: nn.batch_normalization(x, m, v * v + 0.5, o, s, 1e-3),
                   [(4, 3), (3,), (3,), (3,), (3,)]),
    "bias_add_nchw": (lambda v, b: nn.bias_add(v, b, data_format="NCHW"),
                      [(2, 3, 2, 2), (3,)]),
    "embedding_max_norm": (lambda p: nn.embedding_lookup(p, [[0, 2], [2, 1]], max_norm=1.0),
                           [(3, 4)]),
    "embedding_mod": (lambda a, b: nn.embedding_lookup([a, b], [3, 0, 1, 2]), [(2, 2), (2, 2)]),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_gradients(name):
    fn, shapes = COMPOSITES[name]
    args = [RNG.uniform(-2.0, 2.0, size=s) for s in shapes]
    _tape_check(fn, *args)


def test_second_order_gradients_through_softmax_and_sparse_xent():
    x = ef.constant(_rand((2, 3)))
    labels = ef.constant([2, 0])
    with ef.GradientTape() as outer:
        outer.watch(x)
        with ef.GradientTape() as inner:
            inner.watch(x)
            loss = reduce_sum(nn.sparse_softmax_cross_entropy_with_logits(labels, x))
        g = inner.gradient(loss, x)
        gsum = reduce_sum(g * g)
    hess_v = outer.gradient(gsum, x).numpy()
    # g = p - onehot; d/dx sum(g^2) = 2 * J_softmax^T g, J = diag(p) - p p^T per row.
    p = np_softmax(x.numpy())
    gv = p - np.eye(3)[[2, 0]]
    expected = 2 * (p * gv - p * np.sum(p * gv, axis=-1, keepdims=True))
    np.testing.assert_allclose(hess_v, expected, rtol=1e-10, atol=1e-12)


# Namespaces ----------------------------------------------------------------------------

NN_MODULES = (nn_family, activation_ops, loss_ops, normalization_ops, nn_layer_ops)


def _exported(space):
    return [n for module in NN_MODULES for n in module.EXPORTS.get(space, ())]


def test_exports_name_public_functions():
    for module in NN_MODULES:
        for names in module.EXPORTS.values():
            for fname in names:
                assert fname in module.__all__ and callable(getattr(module, fname))
                assert fname in nn.__all__ and getattr(nn, fname) is getattr(module, fname)
    assert set(_exported("math")) == {"softplus", "softsign", "softmax", "log_softmax",
                                      "l2_normalize"}


def test_docstring_examples(monkeypatch):
    import doctest
    import types

    # The tf.nn / tf.math namespace modules are generated from EXPORTS; stand in for them
    # where they are not there yet.
    for space in ("nn", "math"):
        existing = getattr(ef, space, None)
        proxy = types.SimpleNamespace(**{n: getattr(nn, n) for n in _exported(space)})
        if existing is not None:
            for n in dir(existing):
                if not n.startswith("_"):
                    setattr(proxy, n, getattr(existing, n))
        monkeypatch.setattr(ef, space, proxy, raising=False)
    attempted = 0
    for module in NN_MODULES:
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
        attempted += result.attempted
    assert attempted > 20


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 26, 26, 3), (7, 900), (5000,), (5,), (0, 4),
                                   (3, 0, 2), ()])
def test_relu_rows_equal_maximum_with_zero_bit_for_bit(dtype, shape):
    # The row form of relu on numpy gives numpy's maximum(x, 0) bits: signed zeros, NaN,
    # infinities; in place, into ``out`` and on non-contiguous views (the scalar form).
    from eagerflow.ops.nn.activation_ops import relu_numpy

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    specials = np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf], dtype)
    flat[:len(specials)] = specials[:flat.size]
    expected = np.asarray(np.maximum(x, 0)).reshape(-1)
    for got in (relu_numpy(x), relu_numpy(x, out=np.empty_like(x)),
                relu_numpy(x.copy(), out=None)):
        assert got.dtype == expected.dtype and np.shape(got) == shape
        got = np.asarray(got).reshape(-1)
        np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    if x.ndim >= 2:
        view = x[..., ::2]
        np.testing.assert_array_equal(relu_numpy(view).view(np.uint8),
                                      np.maximum(view, 0).view(np.uint8))
    inplace = x.copy()
    relu_numpy(inplace, out=inplace)
    np.testing.assert_array_equal(inplace.reshape(-1).view(np.uint8), expected.view(np.uint8))
