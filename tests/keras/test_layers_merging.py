"""Merge layers against numpy: elementwise merges, Concatenate, Dot, masks and errors."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import layers
from tests.keras.layer_checks import check_layer_gradients, roundtrip

RNG = np.random.default_rng(8)


def randn(*shape):
    return RNG.standard_normal(shape)


@pytest.mark.parametrize("cls,fn", [
    (layers.Add, lambda a, b, c: a + b + c),
    (layers.Multiply, lambda a, b, c: a * b * c),
    (layers.Average, lambda a, b, c: (a + b + c) / 3),
    (layers.Maximum, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    (layers.Minimum, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
])
def test_elementwise_merges(cls, fn):
    a, b, c = randn(2, 3), randn(2, 3), randn(1, 3)
    layer = cls(dtype="float64")
    np.testing.assert_allclose(layer([a, b, c]).numpy(), fn(a, b, c), rtol=1e-12)
    assert layer.compute_output_shape([(None, 3), (None, 3), (1, 3)]).as_list() == [None, 3]
    check_layer_gradients(cls(dtype="float64"), [randn(2, 3), randn(2, 3)], list_input=True)
    roundtrip(cls())


def test_subtract_and_functional_forms():
    a, b = randn(2, 4), randn(2, 4)
    np.testing.assert_allclose(layers.Subtract(dtype="float64")([a, b]).numpy(), a - b)
    with pytest.raises(ValueError, match="exactly 2"):
        layers.Subtract()([a, b, a])
    af, bf = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_allclose(layers.add([af, bf]).numpy(), af + bf, rtol=1e-6)
    np.testing.assert_allclose(layers.subtract([af, bf]).numpy(), af - bf, rtol=1e-6)
    np.testing.assert_allclose(layers.multiply([af, bf]).numpy(), af * bf, rtol=1e-6)
    np.testing.assert_allclose(layers.average([af, bf]).numpy(), (af + bf) / 2, rtol=1e-6)
    np.testing.assert_allclose(layers.maximum([af, bf]).numpy(), np.maximum(af, bf))
    np.testing.assert_allclose(layers.minimum([af, bf]).numpy(), np.minimum(af, bf))
    np.testing.assert_allclose(layers.concatenate([af, bf], axis=0).numpy(),
                               np.concatenate([af, bf], 0))


def test_merge_errors():
    with pytest.raises(ValueError, match="list of inputs"):
        layers.Add()(ef.ones([2, 3]))
    with pytest.raises(ValueError, match="incompatible shapes"):
        layers.Add()([ef.ones([2, 3]), ef.ones([2, 4])])
    with pytest.raises(ValueError, match="matching shapes"):
        layers.Concatenate(axis=1)([ef.ones([2, 3]), ef.ones([3, 3])])


def test_concatenate_and_masks():
    a, b = randn(2, 3, 4), randn(2, 3, 2)
    layer = layers.Concatenate(dtype="float64")
    np.testing.assert_allclose(layer([a, b]).numpy(), np.concatenate([a, b], -1))
    assert layer.compute_output_shape([(None, 3, 4), (None, 3, 2)]).as_list() == [None, 3, 6]
    emb = layers.Embedding(5, 2, mask_zero=True)
    x1, x2 = emb(ef.constant([[1, 0, 2]])), emb(ef.constant([[0, 0, 3]]))
    time_concat = layers.Concatenate(axis=1)([x1, x2])
    np.testing.assert_array_equal(layers.get_keras_mask(time_concat).numpy(),
                                  [[True, False, True, False, False, True]])
    summed = layers.Add()([x1, x2])
    np.testing.assert_array_equal(layers.get_keras_mask(summed).numpy(),
                                  [[False, False, True]])
    check_layer_gradients(layers.Concatenate(axis=1, dtype="float64"),
                          [randn(2, 1, 3), randn(2, 2, 3)], list_input=True)
    roundtrip(layers.Concatenate(axis=1))


def test_dot():
    a, b = randn(3, 4), randn(3, 4)
    np.testing.assert_allclose(layers.Dot(axes=1, dtype="float64")([a, b]).numpy(),
                               (a * b).sum(1, keepdims=True))
    na = a / np.linalg.norm(a, axis=1, keepdims=True)
    nb = b / np.linalg.norm(b, axis=1, keepdims=True)
    np.testing.assert_allclose(layers.Dot(1, normalize=True, dtype="float64")([a, b]).numpy(),
                               (na * nb).sum(1, keepdims=True))
    x, y = randn(2, 3, 5), randn(2, 4, 5)
    layer = layers.Dot(axes=(2, 2), dtype="float64")
    np.testing.assert_allclose(layer([x, y]).numpy(), np.einsum("bik,bjk->bij", x, y))
    assert layer.compute_output_shape([(None, 3, 5), (None, 4, 5)]).as_list() == [None, 3, 4]
    z = randn(2, 5, 4)
    np.testing.assert_allclose(layers.Dot(axes=(2, 1), dtype="float64")([x, z]).numpy(),
                               x @ z)
    check_layer_gradients(layers.Dot(axes=-1, dtype="float64"), [x, y], list_input=True)
    with pytest.raises(ValueError, match="batch axis"):
        layers.Dot(axes=0)([ef.ones([2, 3]), ef.ones([2, 3])])
    with pytest.raises(ValueError, match="exactly 2"):
        layers.Dot(axes=1)([ef.ones([2, 3])] * 3)
    clone = roundtrip(layers.Dot(axes=(1, 2), normalize=True))
    assert clone.axes == (1, 2)
