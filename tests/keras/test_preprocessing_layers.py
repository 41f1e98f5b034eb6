"""Keras preprocessing layers: values recorded with TF 2.21's Keras (tests/data/tf_reference,
scripts/record_tf_reference.py), training-only augmentation, Dataset.map, saving."""

import json
import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras
from eagerflow.keras import layers

REF = json.load(open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data",
                                  "tf_reference", "text_layers.json")))


@pytest.mark.parametrize("mode", ["int", "multi_hot", "count", "tf_idf", "int_bigrams"])
def test_text_vectorization_matches_tf(mode):
    kw = {"int": {"output_sequence_length": 6}, "int_bigrams": {"ngrams": 2}}.get(mode, {})
    layer = layers.TextVectorization(output_mode="int" if mode == "int_bigrams" else mode,
                                     **kw)
    layer.adapt(REF["corpus"])
    assert layer.get_vocabulary() == REF[mode]["vocabulary"]
    np.testing.assert_allclose(layer(REF["corpus"]).numpy(), REF[mode]["output"], rtol=1e-6)


def test_lookup_normalization_hashing_discretization_match_tf():
    sl = layers.StringLookup()
    sl.adapt(["b", "a", "b", "c", "b", "a"])
    assert sl.get_vocabulary() == REF["string_lookup"]["vocabulary"]
    assert sl(["a", "b", "z"]).numpy().tolist() == REF["string_lookup"]["output"]
    norm = layers.Normalization(axis=-1)
    data = np.array(REF["normalization"]["data"], np.float32)
    norm.adapt(data)
    np.testing.assert_allclose(norm.mean.numpy(), REF["normalization"]["mean"])
    np.testing.assert_allclose(norm.variance.numpy(), REF["normalization"]["variance"])
    np.testing.assert_allclose(norm(data).numpy(), REF["normalization"]["output"], rtol=1e-6)
    assert layers.Hashing(num_bins=5)([["A"], ["B"], ["hello"]]).numpy().tolist() == \
        REF["hashing"]
    assert layers.Discretization(bin_boundaries=[0.0, 1.0, 2.0])(
        [[-1.5, 1.0, 3.0, 0.5]]).numpy().tolist() == REF["discretization"]


def test_lookup_invert_integer_lookup_category_encoding():
    sl = layers.StringLookup(vocabulary=["x", "y"])
    inv = layers.StringLookup(vocabulary=["x", "y"], invert=True)
    assert inv(sl(["y", "q", "x"])).numpy().tolist() == [b"y", b"[UNK]", b"x"]
    il = layers.IntegerLookup()
    il.adapt(np.array([7, 7, 3, 9, 7, 3]))
    assert il.get_vocabulary() == [-1, 7, 3, 9]
    assert il([3, 100]).numpy().tolist() == [2, 0]
    enc = layers.CategoryEncoding(num_tokens=4, output_mode="multi_hot")
    assert enc([[0, 1], [3, 3]]).numpy().tolist() == [[1, 1, 0, 0], [0, 0, 0, 1]]
    assert layers.CategoryEncoding(4, "count")([[3, 3]]).numpy().tolist() == [[0, 0, 0, 2]]
    assert layers.CategoryEncoding(3, "one_hot")([2, 0]).numpy().tolist() == \
        [[0, 0, 1], [1, 0, 0]]
    with pytest.raises(ef.errors.InvalidArgumentError, match="ids must be"):
        enc([[4]])


def test_normalization_adapts_on_a_dataset_in_batches():
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=(1000, 3)).astype(np.float32)
    norm = layers.Normalization()
    norm.adapt(ef.data.Dataset.from_tensor_slices(data).batch(64))
    np.testing.assert_allclose(norm.mean.numpy()[0], data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(norm.variance.numpy()[0], data.var(0), rtol=1e-4)


def test_augmentation_only_in_training_and_in_dataset_map():
    x = np.random.default_rng(1).uniform(0, 255, (4, 8, 8, 3)).astype(np.float32)
    for layer in (layers.RandomFlip(seed=1), layers.RandomRotation(0.2, seed=1),
                  layers.RandomZoom(0.3, seed=1), layers.RandomTranslation(0.2, 0.2, seed=1),
                  layers.RandomContrast(0.5, seed=1), layers.RandomBrightness(0.3, seed=1)):
        np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
        out = layer(x, training=True).numpy()
        assert out.shape == x.shape and not np.array_equal(out, x), type(layer).__name__
    crop = layers.RandomCrop(5, 6, seed=2)
    assert crop(x, training=True).shape == (4, 5, 6, 3)
    np.testing.assert_array_equal(crop(x, training=False).numpy(), x[:, 1:6, 1:7])
    ds = ef.data.Dataset.from_tensor_slices(x).batch(2).map(
        lambda b: layers.RandomFlip("horizontal", seed=3)(b, training=True))
    assert [b.shape.as_list() for b in ds] == [[2, 8, 8, 3], [2, 8, 8, 3]]


def test_rotation_by_a_half_turn_is_exact():
    x = np.arange(2 * 3 * 4 * 1, dtype=np.float32).reshape(2, 3, 4, 1)
    half = layers.RandomRotation((0.5, 0.5))(x, training=True).numpy()
    np.testing.assert_allclose(half, x[:, ::-1, ::-1], atol=1e-4)
    zoom = layers.RandomZoom((0.0, 0.0))(x, training=True).numpy()
    np.testing.assert_allclose(zoom, x, atol=1e-5)
    shift = layers.RandomTranslation((0.0, 0.0), (0.25, 0.25), fill_mode="constant")(
        x, training=True).numpy()
    np.testing.assert_allclose(shift[:, :, 1:], x[:, :, :-1])
    assert (shift[:, :, 0] == 0).all()


def test_rescaling_resizing_center_crop():
    x = np.full((1, 6, 8, 3), 255, np.uint8)
    assert float(layers.Rescaling(1 / 255.0)(x).numpy().max()) == pytest.approx(1.0)
    assert layers.Resizing(3, 4)(x).shape == (1, 3, 4, 3)
    assert layers.Resizing(4, 4, crop_to_aspect_ratio=True)(x).shape == (1, 4, 4, 3)
    assert layers.CenterCrop(4, 4)(np.arange(48.0).reshape(1, 4, 4, 3) * 0 + 1).shape == \
        (1, 4, 4, 3)


def test_model_with_vocabulary_and_statistics_saves_and_loads(tmp_path):
    tv = layers.TextVectorization(output_sequence_length=5)
    tv.adapt(REF["corpus"])
    norm = layers.Normalization()
    norm.adapt(np.array([[1.0], [3.0]], np.float32))
    text_in = keras.Input(shape=(1,), dtype="string")
    num_in = keras.Input(shape=(1,))
    emb = layers.GlobalAveragePooling1D()(layers.Embedding(20, 4)(tv(text_in)))
    out = layers.Dense(1)(layers.Concatenate()([emb, norm(num_in)]))
    model = keras.Model([text_in, num_in], out)
    texts = np.array([["the cat sat"], ["dogs and cats"]], dtype=object)
    nums = np.array([[2.0], [5.0]], np.float32)
    want = model([texts, nums]).numpy()
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded([texts, nums]).numpy(), want, rtol=1e-6)
    inner = [la for la in loaded.layers if isinstance(la, layers.TextVectorization)][0]
    assert inner.get_vocabulary() == tv.get_vocabulary()


def test_string_model_as_saved_model_runs_without_its_code(tmp_path):
    tv = layers.TextVectorization(output_sequence_length=4)
    tv.adapt(["the cat", "the dog"])
    text_in = keras.Input(shape=(1,), dtype="string", name="text")
    model = keras.Model(text_in, layers.Embedding(10, 3)(tv(text_in)))
    x = np.array([["the dog"], ["a cat"]], dtype=object)
    want = model(x).numpy()
    ef.saved_model.save(model, str(tmp_path / "sm"))
    loaded = ef.saved_model.load(str(tmp_path / "sm"))
    out = loaded.signatures["serving_default"](text=ef.constant(x))
    np.testing.assert_allclose(out["output_0"].numpy(), want, rtol=1e-6)
