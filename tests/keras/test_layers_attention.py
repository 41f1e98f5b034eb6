"""MultiHeadAttention against a numpy reference."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import layers
from tests.keras.layer_checks import check_layer_gradients, roundtrip

RNG = np.random.default_rng(11)


def randn(*shape):
    return RNG.standard_normal(shape)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def mha_ref(q, v, k, weights, key_dim, mask=None):
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    qp = np.einsum("btd,dhk->bthk", q, wq) + bq
    kp = np.einsum("bsd,dhk->bshk", k, wk) + bk
    vp = np.einsum("bsd,dhk->bshk", v, wv) + bv
    scores = np.einsum("bthk,bshk->bhts", qp, kp) / np.sqrt(key_dim)
    if mask is not None:
        scores = scores + (1.0 - mask[:, None].astype(np.float64)) * -1e9
    probs = softmax(scores)
    out = np.einsum("bhts,bshk->bthk", probs, vp)
    return np.einsum("bthk,hko->bto", out, wo) + bo, probs


def _weights(layer):
    return [w.numpy() for w in layer.weights]


def test_self_and_cross_attention_match_numpy():
    mha = layers.MultiHeadAttention(num_heads=3, key_dim=4, bias_initializer="random_normal",
                                    dtype="float64")
    q, v, k = randn(2, 5, 6), randn(2, 7, 8), randn(2, 7, 9)
    out, scores = mha(q, v, key=k, return_attention_scores=True)
    assert [w.shape.as_list() for w in mha.weights] == [
        [6, 3, 4], [3, 4], [9, 3, 4], [3, 4], [8, 3, 4], [3, 4], [3, 4, 6], [6]]
    ref, probs = mha_ref(q, v, k, _weights(mha), 4)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    np.testing.assert_allclose(scores.numpy(), probs, rtol=1e-10)
    names = [w.name for w in mha.weights]
    assert names[0].endswith("/query/kernel:0") and names[-1].endswith(
        "/attention_output/bias:0")


def test_masks_causal_and_attention_mask():
    mha = layers.MultiHeadAttention(2, 3, dtype="float64")
    x = randn(2, 4, 5)
    attention_mask = RNG.random((2, 4, 4)) > 0.3
    attention_mask[:, :, 0] = True
    out = mha(x, x, attention_mask=attention_mask)
    ref, _ = mha_ref(x, x, x, _weights(mha), 3, attention_mask)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    causal = np.tril(np.ones((4, 4), bool))[None]
    out, scores = mha(x, x, use_causal_mask=True, return_attention_scores=True)
    ref, probs = mha_ref(x, x, x, _weights(mha), 3, np.broadcast_to(causal, (2, 4, 4)))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    assert np.all(scores.numpy()[:, :, 0, 1:] < 1e-12)
    both = mha(x, x, use_causal_mask=True, attention_mask=attention_mask)
    ref, _ = mha_ref(x, x, x, _weights(mha), 3, attention_mask & causal)
    np.testing.assert_allclose(both.numpy(), ref, rtol=1e-10)


def test_keras_masks_from_embedding():
    emb = layers.Embedding(9, 4, mask_zero=True, dtype="float64")
    mha = layers.MultiHeadAttention(2, 2, dtype="float64")
    ids = np.array([[1, 2, 0], [3, 0, 0]])
    x = emb(ids)
    out = mha(x, x)
    m = ids != 0
    mask = m[:, :, None] & m[:, None, :]
    ref, _ = mha_ref(x.numpy(), x.numpy(), x.numpy(), _weights(mha), 2, mask)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    np.testing.assert_array_equal(layers.get_keras_mask(out).numpy(), m)
    explicit = mha(x.numpy(), x.numpy(), query_mask=m, value_mask=m)
    np.testing.assert_allclose(explicit.numpy(), ref, rtol=1e-10)


def test_value_dim_and_output_shape():
    mha = layers.MultiHeadAttention(2, 3, value_dim=5, output_shape=(4, 2), use_bias=False,
                                    dtype="float64")
    q, v = randn(2, 3, 6), randn(2, 4, 6)
    out = mha(q, v)
    assert out.shape.as_list() == [2, 3, 4, 2]
    wq, wk, wv, wo = _weights(mha)
    assert wv.shape == (6, 2, 5) and wo.shape == (2, 5, 4, 2)
    qp = np.einsum("btd,dhk->bthk", q, wq)
    kp = np.einsum("bsd,dhk->bshk", v, wk)
    vp = np.einsum("bsd,dhk->bshk", v, wv)
    probs = softmax(np.einsum("bthk,bshk->bhts", qp, kp) / np.sqrt(3))
    ref = np.einsum("bthk,hkxy->btxy", np.einsum("bhts,bshk->bthk", probs, vp), wo)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    assert mha.compute_output_shape((None, 3, 6)).as_list() == [None, 3, 4, 2]


def test_attention_over_two_axes_equals_flattened_sequence():
    mha = layers.MultiHeadAttention(2, 3, attention_axes=(1, 2), dtype="float64")
    x = randn(2, 2, 3, 4)
    out = mha(x, x).numpy()
    flat = x.reshape(2, 6, 4)
    ref, _ = mha_ref(flat, flat, flat, _weights(mha), 3)
    np.testing.assert_allclose(out, ref.reshape(2, 2, 3, 4), rtol=1e-10)
    rows = layers.MultiHeadAttention(1, 2, attention_axes=2, dtype="float64")
    y = rows(x, x).numpy()
    w = _weights(rows)
    per_row = np.stack([mha_ref(x[:, i], x[:, i], x[:, i], w, 2)[0] for i in range(2)], 1)
    np.testing.assert_allclose(y, per_row, rtol=1e-10)


def test_attention_dropout_and_gradients():
    mha = layers.MultiHeadAttention(2, 2, dropout=0.5, seed=3, dtype="float64")
    x = randn(2, 3, 4)
    inference = mha(x, x).numpy()
    ref, _ = mha_ref(x, x, x, _weights(mha), 2)
    np.testing.assert_allclose(inference, ref, rtol=1e-10)
    assert not np.allclose(mha(x, x, training=True).numpy(), inference)
    check_layer_gradients(layers.MultiHeadAttention(2, 2, dtype="float64"),
                          [randn(2, 3, 4), randn(2, 2, 4)])
    check_layer_gradients(layers.MultiHeadAttention(1, 3, dtype="float64"),
                          [randn(1, 3, 2), randn(1, 3, 2)], use_causal_mask=True)


def test_attention_errors_and_config():
    with pytest.raises(ValueError, match="num_heads"):
        layers.MultiHeadAttention(0, 2)
    with pytest.raises(ValueError, match="dropout"):
        layers.MultiHeadAttention(2, 2, dropout=1.0)
    with pytest.raises(ValueError, match="attention_axes"):
        layers.MultiHeadAttention(2, 2, attention_axes=(3,))(ef.ones([1, 2, 4]), ef.ones(
            [1, 2, 4]))
    clone = roundtrip(layers.MultiHeadAttention(4, 8, value_dim=6, dropout=0.1,
                                                output_shape=12, attention_axes=(1,),
                                                kernel_regularizer="l2"))
    assert clone.value_dim == 6 and clone.get_config()["output_shape"] == (12,)
