"""What models are fed: the MNIST-style loaders (from local files only), the data adapters,
utilities (to_categorical, packing), and batch-size handling of the traced steps."""

import gzip
import os
import struct

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras
from eagerflow.keras.datasets import _idx, fashion_mnist, mnist
from eagerflow.keras.models import data_adapter


def write_idx(path, array, code):
    header = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(
        ">" + "I" * array.ndim, *array.shape)
    data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(data)


def fake_mnist(directory, gz=True, n_train=6, n_test=4):
    rng = np.random.default_rng(0)
    arrays = {"train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), np.uint8),
              "train-labels-idx1-ubyte": rng.integers(0, 10, n_train, np.uint8),
              "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), np.uint8),
              "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test, np.uint8)}
    os.makedirs(directory, exist_ok=True)
    for name, array in arrays.items():
        write_idx(os.path.join(directory, name + (".gz" if gz else "")), array, 0x08)
    return arrays


def test_mnist_from_idx_files_and_npz(tmp_path, monkeypatch):
    arrays = fake_mnist(str(tmp_path / "idx"))
    (x_train, y_train), (x_test, y_test) = mnist.load_data(path=str(tmp_path / "idx"))
    np.testing.assert_array_equal(x_train, arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(y_test, arrays["t10k-labels-idx1-ubyte"])
    assert x_train.dtype == np.uint8 and x_train.shape == (6, 28, 28)

    npz = tmp_path / "mnist.npz"
    np.savez(str(npz), x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    (a, b), (c, d) = mnist.load_data(path=str(npz))
    np.testing.assert_array_equal(c, x_test)
    # The default location: $KERAS_HOME/datasets/mnist.npz
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    os.makedirs(tmp_path / "home" / "datasets")
    os.replace(str(npz), str(tmp_path / "home" / "datasets" / "mnist.npz"))
    (a, _), _ = mnist.load_data()
    np.testing.assert_array_equal(a, x_train)


def test_fashion_mnist_default_directory_and_plain_files(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    arrays = fake_mnist(str(tmp_path / "datasets" / "fashion-mnist"), gz=False)
    (x_train, y_train), _ = fashion_mnist.load_data()
    np.testing.assert_array_equal(y_train, arrays["train-labels-idx1-ubyte"])


def test_missing_and_corrupt_files_say_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError) as info:
        mnist.load_data()
    message = str(info.value)
    assert "does not download" in message and "mnist.npz" in message
    assert "train-images-idx3-ubyte" in message and str(tmp_path / "empty") in message
    with pytest.raises(FileNotFoundError, match="Fashion-MNIST"):
        fashion_mnist.load_data()
    bad = str(tmp_path / "labels-idx1-ubyte")
    write_idx(bad, np.arange(5, dtype=np.uint8), 0x08)
    with open(bad, "rb") as f:
        data = f.read()
    with open(bad, "wb") as f:
        f.write(data[:-2])
    with pytest.raises(ValueError, match="truncated"):
        _idx.read_idx(bad)
    np.savez(str(tmp_path / "partial.npz"), x_train=np.zeros(2))
    with pytest.raises(ValueError, match="lacks"):
        mnist.load_data(path=str(tmp_path / "partial.npz"))
    obj = str(tmp_path / "obj.npz")
    np.savez(obj, x_train=np.array([{"a": 1}], dtype=object), y_train=np.zeros(1),
             x_test=np.zeros(1), y_test=np.zeros(1))
    with pytest.raises(ValueError, match="pickle"):
        mnist.load_data(path=obj)  # never unpickled


def test_to_categorical_and_packing():
    np.testing.assert_array_equal(keras.utils.to_categorical([2, 0], 3),
                                  [[0, 0, 1], [1, 0, 0]])
    assert keras.utils.to_categorical(np.zeros((4, 1), int)).shape == (4, 1)
    assert keras.utils.to_categorical(np.zeros((2, 3), int), 5).shape == (2, 3, 5)
    with pytest.raises(ValueError, match="labels must lie"):
        keras.utils.to_categorical([3], num_classes=2)
    with pytest.raises(ValueError, match="integer"):
        keras.utils.to_categorical([0.5])
    assert keras.utils.unpack_x_y_sample_weight([1, 2]) == (1, 2, None)
    assert keras.utils.pack_x_y_sample_weight((1, 2)) == ((1, 2),)
    with pytest.raises(ValueError, match="format"):
        keras.utils.unpack_x_y_sample_weight((1, 2, 3, 4))


def test_array_adapter_batches_shuffles_and_casts():
    x = np.arange(20, dtype=np.float64).reshape(10, 2)
    adapter = data_adapter.get_adapter(x, np.arange(10), batch_size=4, shuffle=False)
    batches = list(adapter.epoch())
    assert [b[0].shape.as_list() for b in batches] == [[4, 2], [4, 2], [2, 2]]
    assert batches[0][0].dtype == ef.float32  # float64 arrays become floatx
    assert batches[0][1].dtype == ef.int64
    np.random.seed(0)
    shuffled = data_adapter.get_adapter(x, np.arange(10), batch_size=4, shuffle=True)
    labels = np.concatenate([b[1].numpy() for b in shuffled.epoch()])
    assert sorted(labels.tolist()) == list(range(10)) and labels.tolist() != list(range(10))
    by_batch = data_adapter.get_adapter(x, np.arange(10), batch_size=4, shuffle="batch")
    runs = [b[1].numpy().tolist() for b in by_batch.epoch()]
    assert sorted(map(tuple, runs)) == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9)]
    multi = data_adapter.get_adapter([x, x[:, :1]], {"out": np.ones(10)}, batch_size=5)
    (xa, xb), y = next(multi.epoch())
    assert xb.shape == (5, 1) and sorted(y) == ["out"]
    plain = data_adapter.get_adapter([[1.0, 2.0], [3.0, 4.0]], [0, 1])
    assert next(plain.epoch())[0].shape == (2, 2)  # a list of numbers is one array


def test_recurrent_models_trace_once_for_all_batch_sizes():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 4, 3)).astype(np.float32)
    y = rng.standard_normal((20, 1)).astype(np.float32)
    inputs = keras.Input((4, 3))
    model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.SimpleRNN(5)(inputs)))
    assert model.output_shape == (None, 1)
    model.compile("adam", "mse")
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)  # 8, 8, 4
    assert len(history.history["loss"]) == 3
    # RNN zero states broadcast over a run-time batch, so one trace serves 8 and 4.
    assert model.train_function.experimental_get_tracing_count() == 1


def test_categorical_crossentropy_on_partial_batches_is_traced_once():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((21, 4)).astype(np.float32)
    y = keras.utils.to_categorical(rng.integers(0, 3, 21), 3)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    model.compile(keras.optimizers.SGD(0.0), "categorical_crossentropy")
    history = model.fit(x, y, batch_size=8, verbose=0)
    w, b = model.get_weights()
    logits = x @ w + b
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(history.history["loss"][0],
                               np.mean(-np.sum(y * np.log(p), axis=1)), rtol=1e-5)
    assert model.train_function.experimental_get_tracing_count() == 1


def test_progbar_used_directly(capsys):
    bar = keras.utils.Progbar(target=4, verbose=2, stateful_metrics=["acc"])
    bar.update(2, [("loss", 2.0), ("acc", 0.5)])
    bar.update(3, [("loss", 4.0), ("acc", 0.75)], finalize=False)
    assert capsys.readouterr().out == ""  # verbose=2 prints at the end only
    bar.add(1, [("loss", 1.0), ("acc", 1.0)])
    out = capsys.readouterr().out
    assert out.startswith("4/4 - ") and out.endswith(" - loss: 1.0000 - acc: 1.0000\n")
    bar = keras.utils.Progbar(target=None, verbose=2)
    bar.update(3, [("x", 0.0001)], finalize=True)
    assert capsys.readouterr().out.startswith("3/Unknown - ")


@pytest.mark.parametrize("shuffle", [True, False, "batch"])
def test_array_batches_own_their_memory(shuffle):
    # A shuffled batch is gathered into a fresh array that becomes the tensor without a
    # second copy; sliced batches (views of the data) are copied. Either way a later write
    # to the user's arrays never reaches a batch.
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    y = np.arange(10, dtype=np.int32)
    adapter = data_adapter.ArrayAdapter(x, y, batch_size=4, shuffle=shuffle)
    batches = list(adapter.epoch())
    kept = [(bx.numpy().copy(), by.numpy().copy()) for bx, by in batches]
    x[...] = -1.0
    y[...] = -1
    for (bx, by), (wx, wy) in zip(batches, kept):
        assert not np.shares_memory(bx.numpy(), x)
        np.testing.assert_array_equal(bx.numpy(), wx)
        np.testing.assert_array_equal(by.numpy(), wy)
        assert bx.dtype == ef.float32 and by.dtype == ef.int32
    assert sorted(np.concatenate([wy for _, wy in kept]).tolist()) == list(range(10))
