"""Layers traced by eagerflow.function give the eager numbers (build included in the trace)."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import layers

pytestmark = pytest.mark.skipif(not hasattr(ef, "function"), reason="needs eagerflow.function")

RNG = np.random.default_rng(2)
SEQ = RNG.standard_normal((2, 4, 3)).astype(np.float32)
IMG = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)


@pytest.mark.parametrize("make,x", [
    (lambda: layers.Dense(3, activation="relu"), SEQ),
    (lambda: layers.LayerNormalization(), SEQ),
    (lambda: layers.LSTM(3, return_sequences=True, go_backwards=True), SEQ),
    (lambda: layers.Bidirectional(layers.GRU(2)), SEQ),
    (lambda: layers.Conv2D(2, 3, strides=2, padding="same"), IMG),
    (lambda: layers.Conv2DTranspose(2, 3, strides=2), IMG),
    (lambda: layers.UpSampling2D(interpolation="bilinear"), IMG),
    (lambda: layers.Flatten(), IMG),
])
def test_traced_equals_eager(make, x):
    layer = make()
    traced = ef.function(lambda t: layer(t))
    first = np.asarray(traced(ef.constant(x)))  # builds the weights inside the trace
    np.testing.assert_allclose(first, layer(x).numpy(), rtol=1e-5, atol=1e-6)


def test_traced_attention_and_batchnorm_training_step():
    mha = layers.MultiHeadAttention(2, 2)
    f = ef.function(lambda q: mha(q, q, use_causal_mask=True))
    np.testing.assert_allclose(np.asarray(f(ef.constant(SEQ))),
                               mha(SEQ, SEQ, use_causal_mask=True).numpy(), rtol=1e-5,
                               atol=1e-6)
    bn, dense = layers.BatchNormalization(momentum=0.5), layers.Dense(1)

    @ef.function
    def step(x):
        with ef.GradientTape() as tape:
            loss = ef.reduce_sum(dense(bn(x, training=True)))
        return tape.gradient(loss, dense.trainable_weights + bn.trainable_weights)

    x = SEQ[:, 0]
    grads = step(ef.constant(x))
    assert [g.shape.as_list() for g in grads] == [[3, 1], [1], [3], [3]]
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.5 * x.mean(0), rtol=1e-5)
    step(ef.constant(x))
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.75 * x.mean(0), rtol=1e-5)
