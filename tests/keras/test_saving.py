"""Weights files and .keras model files: round trips (also in a fresh process), verification
errors, atomic writes, custom objects."""

import json
import os
import struct
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

from eagerflow import errors, keras
from eagerflow.io import bundle
from eagerflow.keras.models import saving as saving_lib
from eagerflow.keras.models import weights_format as wf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def small_model(units=4, seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(units, activation="relu"),
                             keras.layers.Dense(2)])


def x_data(n=5):
    return np.random.default_rng(7).standard_normal((n, 3)).astype(np.float32)


def run_fresh(script, tmp_path):
    """Runs ``script`` in a new interpreter (the repository on the path, not this module)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, str(tmp_path)])
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


# -- the weights format --------------------------------------------------------------------------
def test_weights_file_layout_and_round_trip(tmp_path):
    path = tmp_path / "a.weights.h5"
    arrays = [("x/vars/0", np.arange(6, dtype=np.float32).reshape(2, 3)),
              ("y/vars/0", np.array([True, False])), ("z", np.array(3, np.int64))]
    wf.write_file(str(path), arrays, {"k": 1})
    raw = path.read_bytes()
    assert raw[:8] == b"EFWEIGHT"
    (length,) = struct.unpack("<Q", raw[8:16])
    header = json.loads(raw[16:16 + length])
    assert header["version"] == 1 and [t["name"] for t in header["tensors"]] == [
        "x/vars/0", "y/vars/0", "z"]
    assert header["tensors"][0]["shape"] == [2, 3] and header["tensors"][0]["dtype"] == "float32"
    start = 16 + length + (-(16 + length)) % 64
    assert start % 64 == 0
    np.testing.assert_array_equal(np.frombuffer(raw[start:start + 24], "<f4"), np.arange(6))
    tensors, meta = wf.read_file(str(path))
    assert meta == {"k": 1}
    for name, array in arrays:
        np.testing.assert_array_equal(tensors[name], array)
        assert tensors[name].dtype == array.dtype


def test_save_and_load_weights_round_trip(tmp_path):
    model = small_model()
    path = str(tmp_path / "m.weights.h5")
    model.save_weights(path)
    other = small_model(seed=1)
    assert not np.allclose(other.get_weights()[0], model.get_weights()[0])
    other.load_weights(path)
    for a, b in zip(model.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert [k for k, _ in saving_lib.weight_entries(model)] == [
        "dense/vars/0", "dense/vars/1", "dense_1/vars/0", "dense_1/vars/1"]
    with pytest.raises(FileExistsError):
        model.save_weights(path, overwrite=False)


def test_weight_names_follow_structure_not_variable_names(tmp_path):
    path = str(tmp_path / "w.bin")
    small_model().save_weights(path)
    keras.layers.Dense(3)  # shifts the automatic names of later layers
    later = small_model(seed=3)
    assert later.layers[0].name != "dense"
    later.load_weights(path)
    np.testing.assert_array_equal(later.get_weights()[0], small_model().get_weights()[0])


def test_load_weights_rejects_wrong_shapes_and_structures(tmp_path):
    path = str(tmp_path / "m.weights.h5")
    small_model().save_weights(path)
    wider = small_model(units=5)
    with pytest.raises(ValueError, match=r"dense/vars/0.*\(3, 5\).*\(3, 4\).*m\.weights\.h5"):
        wider.load_weights(path)
    deeper = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(2),
                               keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="missing from the file.*dense_2"):
        deeper.load_weights(path)
    with pytest.warns(UserWarning, match="Skipping"):
        wider.load_weights(path, skip_mismatch=True)
    unbuilt = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="no weights yet"):
        unbuilt.load_weights(path)


def test_weights_files_are_tensor_bundles(tmp_path):
    path = str(tmp_path / "m.weights.h5")
    model = small_model()
    model.save_weights(path)
    assert bundle.is_bundle(path)
    reader = bundle.BundleReader(path)
    assert reader.keys() == [k for k, _ in saving_lib.weight_entries(model)]
    assert reader.metadata == {"model": model.name, "class_name": "Sequential"}
    np.testing.assert_array_equal(reader.read("dense/vars/0", dtype="float32", shape=(3, 4)),
                                  model.get_weights()[0])


def test_legacy_weights_files_still_load(tmp_path):
    model = small_model()
    path = str(tmp_path / "old.weights.h5")
    wf.write_file(path, [(k, np.asarray(v.numpy()))
                         for k, v in saving_lib.weight_entries(model)])
    fresh = small_model(seed=4)
    fresh.load_weights(path)
    for a, b in zip(model.get_weights(), fresh.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_truncated_and_corrupt_files_name_file_and_tensor(tmp_path):
    path = tmp_path / "m.weights.h5"
    small_model().save_weights(str(path))
    raw = path.read_bytes()
    cut = tmp_path / "cut.weights.h5"
    cut.write_bytes(raw[:-100])
    with pytest.raises(errors.DataLossError, match=r"cut\.weights\.h5.*truncated"):
        small_model().load_weights(str(cut))
    head = tmp_path / "head.weights.h5"
    head.write_bytes(raw[:100])  # the header cut short
    with pytest.raises(errors.DataLossError, match=r"head\.weights\.h5.*header"):
        small_model().load_weights(str(head))
    flipped = bytearray(raw)
    flipped[-1] ^= 0xFF  # the last byte of the last tensor (no padding after it)
    bad = tmp_path / "bad.weights.h5"
    bad.write_bytes(bytes(flipped))
    with pytest.raises(errors.DataLossError,
                       match=r"bad\.weights\.h5: tensor 'dense_1/vars/1' fails its sha256"):
        small_model().load_weights(str(bad))
    other = tmp_path / "other.h5"
    other.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    with pytest.raises(errors.DataLossError, match=r"other\.h5.*bundle magic"):
        small_model().load_weights(str(other))
    model = small_model()
    keras_path = tmp_path / "m.keras"
    model.save(str(keras_path))
    with zipfile.ZipFile(keras_path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    weights = bytearray(members["model.weights"])
    weights[-1] ^= 0xFF
    members["model.weights"] = bytes(weights)
    with zipfile.ZipFile(keras_path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(errors.DataLossError,
                       match=r"m\.keras \(model\.weights\): tensor '.*' fails its sha256"):
        keras.models.load_model(str(keras_path))
    with pytest.raises(errors.DataLossError, match=r"m\.keras \(model\.weights\)"):
        small_model().load_weights(str(keras_path))


def test_a_crash_mid_write_keeps_the_previous_file(tmp_path, monkeypatch):
    path = str(tmp_path / "m.weights.h5")
    model = small_model()
    model.save_weights(path)
    before = open(path, "rb").read()
    real_replace = os.replace

    def failing(src, dst):
        with open(src, "rb") as f:
            assert f.read(8)[:4] in (bundle.MAGIC[:4], b"PK\x03\x04")  # the new file
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing)
    changed = small_model(seed=5)
    with pytest.raises(OSError, match="disk full"):
        changed.save_weights(path)
    with pytest.raises(OSError, match="disk full"):
        changed.save(str(tmp_path / "model.keras"))
    monkeypatch.setattr(os, "replace", real_replace)
    assert open(path, "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == ["m.weights.h5"]  # no temporary files left
    fresh = small_model(seed=9)
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.get_weights()[0], model.get_weights()[0])


# -- .keras files --------------------------------------------------------------------------------
def test_keras_file_contents_and_errors(tmp_path):
    model = small_model()
    model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    path = str(tmp_path / "m.keras")
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == ["config.json", "metadata.json", "model.weights"]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in archive.infolist())
        config = json.loads(archive.read("config.json"))
    assert config["class_name"] == "Sequential"
    assert [layer["class_name"] for layer in config["config"]["layers"]] == [
        "InputLayer", "Dense", "Dense"]
    assert config["compile_config"]["loss"] == "mse"
    with pytest.raises(ValueError, match=r"\.keras"):
        model.save(str(tmp_path / "m.h5"))
    with pytest.raises(ValueError, match="not a .keras model file"):
        model.save_weights(str(tmp_path / "w.bin"))
        keras.models.load_model(str(tmp_path / "w.bin"))
    # load_weights also reads the weights inside a .keras file
    other = small_model(seed=4)
    other.load_weights(path)
    np.testing.assert_array_equal(other.get_weights()[1], model.get_weights()[1])


def test_sequential_round_trip_in_a_fresh_process(tmp_path):
    model = small_model()
    model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    x = x_data()
    model.fit(x, np.ones((5, 2), np.float32), epochs=2, verbose=0)
    path = str(tmp_path / "seq.keras")
    model.save(path)
    np.save(str(tmp_path / "x.npy"), x)
    out = run_fresh("""
        import json, numpy as np
        from eagerflow import keras
        model = keras.models.load_model("seq.keras")
        x = np.load("x.npy")
        print(json.dumps({"pred": model.predict(x, verbose=0).tolist(),
                          "iterations": int(model.optimizer.iterations),
                          "optimizer": type(model.optimizer).__name__,
                          "lr": float(model.optimizer.learning_rate),
                          "metrics": model.metrics_names,
                          "names": [l.name for l in model.layers]}))
    """, tmp_path)
    result = json.loads(out)
    np.testing.assert_allclose(result["pred"], model.predict(x, verbose=0), rtol=1e-6)
    assert result["iterations"] == 2 and result["optimizer"] == "Adam"
    assert result["lr"] == pytest.approx(0.01)
    assert result["names"] == [layer.name for layer in model.layers]


def test_functional_multi_io_round_trip_in_a_fresh_process(tmp_path):
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    shared = keras.layers.Dense(4, activation="tanh", name="shared")
    merged = keras.layers.Concatenate()([shared(keras.layers.Dense(4, name="pa")(a)),
                                         shared(keras.layers.Dense(4, name="pb")(b))])
    out1 = keras.layers.Dense(1, name="out1")(merged)
    out2 = keras.layers.Dense(3, name="out2")(1.0 - merged[:, :4] * 2.0)
    model = keras.Model([a, b], [out1, out2])
    model.compile("adam", {"out1": "mse", "out2": "mae"}, loss_weights={"out1": 1.0, "out2": 2.0})
    xa, xb = x_data(), x_data()[:, :2]
    path = str(tmp_path / "func.keras")
    model.save(path)
    np.save(str(tmp_path / "xa.npy"), xa)
    np.save(str(tmp_path / "xb.npy"), xb)
    out = run_fresh("""
        import json, numpy as np
        from eagerflow import keras
        model = keras.models.load_model("func.keras")
        p1, p2 = model.predict([np.load("xa.npy"), np.load("xb.npy")], verbose=0)
        print(json.dumps({"p1": p1.tolist(), "p2": p2.tolist(),
                          "outputs": model.output_names,
                          "layers": [l.name for l in model.layers]}))
    """, tmp_path)
    result = json.loads(out)
    p1, p2 = model.predict([xa, xb], verbose=0)
    np.testing.assert_allclose(result["p1"], p1, rtol=1e-6)
    np.testing.assert_allclose(result["p2"], p2, rtol=1e-6)
    assert result["outputs"] == ["out1", "out2"]
    assert result["layers"] == [layer.name for layer in model.layers]


CUSTOM_MODULE = '''
import eagerflow as ef
from eagerflow import keras


@keras.saving.register_keras_serializable(package="Test")
class Scale(keras.layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight("w", (input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w * self.factor

    def get_config(self):
        config = super().get_config()
        config["factor"] = self.factor
        return config


@keras.saving.register_keras_serializable(package="Test")
class Net(keras.Model):
    def __init__(self, hidden=4, **kwargs):
        super().__init__(**kwargs)
        self.hidden = hidden
        self.scale = Scale(3.0)
        self.dense = keras.layers.Dense(hidden)

    def call(self, x):
        return self.dense(self.scale(x))

    def get_config(self):
        return {"hidden": self.hidden, "name": self.name}


@keras.saving.register_keras_serializable(package="Test")
def half_mse(y_true, y_pred):
    return 0.5 * ef.reduce_mean(ef.square(y_true - y_pred), axis=-1)
'''


def test_custom_objects_and_subclassed_round_trip_in_a_fresh_process(tmp_path):
    (tmp_path / "custom_defs.py").write_text(CUSTOM_MODULE)
    sys.path.insert(0, str(tmp_path))
    try:
        import custom_defs
    finally:
        sys.path.remove(str(tmp_path))
    try:
        inputs = keras.Input((3,))
        model = keras.Model(inputs, custom_defs.Scale(0.5)(keras.layers.Dense(3)(inputs)))
        model.compile("sgd", custom_defs.half_mse)
        net = custom_defs.Net(hidden=5)
        net(x_data())
        net.compile("sgd", "mse")
        model.save(str(tmp_path / "custom.keras"))
        net.save(str(tmp_path / "net.keras"))
        np.save(str(tmp_path / "x.npy"), x_data())
        out = run_fresh("""
            import json, numpy as np
            import custom_defs
            from eagerflow import keras
            x = np.load("x.npy")
            model = keras.models.load_model("custom.keras")
            net = keras.models.load_model("net.keras")
            print(json.dumps({"model": model.predict(x, verbose=0).tolist(),
                              "net": net.predict(x, verbose=0).tolist(),
                              "net_type": type(net).__name__, "hidden": net.hidden,
                              "loss": model.loss.__name__}))
        """, tmp_path)
        result = json.loads(out)
        np.testing.assert_allclose(result["model"], model.predict(x_data(), verbose=0),
                                   rtol=1e-6)
        np.testing.assert_allclose(result["net"], net.predict(x_data(), verbose=0), rtol=1e-6)
        assert result["net_type"] == "Net" and result["hidden"] == 5
        assert result["loss"] == "half_mse"
    finally:
        sys.modules.pop("custom_defs", None)


def test_unregistered_custom_layer_needs_custom_objects(tmp_path):
    class Plain(keras.layers.Layer):
        def call(self, x):
            return x + 1.0

    inputs = keras.Input((2,))
    model = keras.Model(inputs, Plain(name="plain")(inputs))
    path = str(tmp_path / "plain.keras")
    model.save(path)
    with pytest.raises(ValueError, match="Plain"):
        keras.models.load_model(path)
    loaded = keras.models.load_model(path, custom_objects={"Plain": Plain})
    np.testing.assert_allclose(loaded.predict(np.zeros((1, 2), np.float32), verbose=0), [[1, 1]])


def test_subclassed_model_without_config_saves_weights_only(tmp_path):
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = keras.layers.Dense(2)

        def call(self, x):
            return self.d(x)

    net = Net()
    net.build((None, 3))
    with pytest.raises(NotImplementedError, match="get_config"):
        net.save(str(tmp_path / "net.keras"))
    assert not os.path.exists(tmp_path / "net.keras")
    net.save_weights(str(tmp_path / "net.weights.h5"))
    other = Net()
    other.build((None, 3))
    other.load_weights(str(tmp_path / "net.weights.h5"))
    np.testing.assert_array_equal(other.get_weights()[0], net.get_weights()[0])


def test_lambda_layers_need_safe_mode_off(tmp_path):
    inputs = keras.Input((2,))
    model = keras.Model(inputs, keras.layers.Lambda(lambda t: t * 3.0)(inputs))
    path = str(tmp_path / "lam.keras")
    model.save(path)
    with pytest.raises(ValueError):
        keras.models.load_model(path)
    loaded = keras.models.load_model(path, safe_mode=False)
    np.testing.assert_allclose(loaded.predict(np.ones((1, 2), np.float32), verbose=0), [[3, 3]])


def test_to_json_and_model_from_json():
    model = small_model()
    clone = keras.models.model_from_json(model.to_json())
    assert [type(layer) for layer in clone.layers] == [type(layer) for layer in model.layers]
    assert clone.count_params() == model.count_params()
