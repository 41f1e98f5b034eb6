"""SavedModel: save, load in a fresh process without the classes, signatures, the CLI,
atomic writes and bad directories."""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.saved_model import _format

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Net(ef.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w = ef.Variable(rng.standard_normal((3, 2)).astype(np.float32))
        self.b = ef.Variable(np.array([0.5, -1.0], np.float32))
        self.steps = ef.Variable(0, trainable=False)
        self.head = ef.Module()
        self.head.scale = ef.Variable(2.0)

    @ef.function(input_signature=[ef.TensorSpec([None, 3], ef.float32, name="features")])
    def __call__(self, x):
        return ef.tanh(ef.matmul(x, self.w) + self.b) * self.head.scale

    @ef.function(input_signature=[ef.TensorSpec([None], ef.float32)])
    def stats(self, v):
        self.steps.assign_add(1)
        return {"mean": ef.reduce_mean(v), "top": ef.reduce_max(v) * self.head.scale}


X = np.linspace(-1.0, 1.0, 15, dtype=np.float32).reshape(5, 3)
V = np.array([1.0, 4.0, -2.0], np.float32)


def _run(code, *args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, *args] if not code else
                          [sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def saved(tmp_path):
    net = Net()
    path = tmp_path / "model" / "1"
    ef.saved_model.save(net, str(path), signatures={"serving_default": net.__call__,
                                                   "stats": net.stats})
    return net, path


def test_fresh_process_matches_exactly(saved, tmp_path):
    net, path = saved
    np.save(tmp_path / "x.npy", X)
    code = """
import json, sys, numpy as np, eagerflow as ef
m = ef.saved_model.load(sys.argv[1])
x = np.load(sys.argv[2])
out = {
  "call": m(ef.constant(x)).numpy().tolist(),
  "call2": m(ef.constant(x[:2])).numpy().tolist(),
  "sig": m.signatures["serving_default"](features=ef.constant(x))["output_0"].numpy().tolist(),
  "stats": {k: float(t) for k, t in m.stats(ef.constant([1.0, 4.0, -2.0])).items()},
  "sigstats": sorted(m.signatures["stats"](v=ef.constant([1.0, 4.0, -2.0]))),
  "steps": int(m.steps.numpy()),
  "vars": sorted(v.name for v in m.variables),
  "trainable": len(m.trainable_variables),
  "scale": float(m.head.scale.numpy()),
  "w": m.w.numpy().tolist(),
  "classes": [c for c in sys.modules if c.startswith("tests")],
}
print(json.dumps(out))
"""
    out = json.loads(_run(code, str(path), str(tmp_path / "x.npy"), cwd=str(tmp_path)))
    expected = net(ef.constant(X)).numpy()
    np.testing.assert_array_equal(np.array(out["call"], np.float32), expected)
    np.testing.assert_array_equal(np.array(out["call2"], np.float32), expected[:2])
    np.testing.assert_array_equal(np.array(out["sig"], np.float32), expected)
    stats = net.stats(ef.constant(V))
    assert out["stats"] == {k: float(t) for k, t in stats.items()}
    assert out["sigstats"] == ["mean", "top"]
    assert out["steps"] == 2  # the restored variable is shared by the function and signature
    assert len(out["vars"]) == 4 and out["trainable"] == 3
    assert out["scale"] == 2.0
    np.testing.assert_array_equal(np.array(out["w"], np.float32), net.w.numpy())
    assert out["classes"] == []


def test_in_process_load_signatures_and_errors(saved):
    net, path = saved
    m = ef.saved_model.load(str(path))
    sig = m.signatures["serving_default"]
    assert list(sig.structured_input_signature[1]) == ["features"]
    assert sig.structured_outputs["output_0"].shape.as_list() == [None, 2]
    np.testing.assert_array_equal(sig(features=X)["output_0"].numpy(),
                                  net(ef.constant(X)).numpy())
    with pytest.raises(ValueError, match=r"stats\(v: float32\[None\]\)"):
        m.stats(ef.constant([[1.0]]))
    # One positional argument binds to the only input, as TF (the old refusal was wrong).
    np.testing.assert_array_equal(sig(X)["output_0"].numpy(), sig(features=X)["output_0"])
    for bad in ((X, X), (X,)):
        with pytest.raises(TypeError, match=r"features=\.\.\."):
            sig(*bad, features=X) if len(bad) == 1 else sig(*bad)
    assert "MatMul" in m.__call__.graph.pretty()
    assert m.__call__.get_concrete_function(ef.TensorSpec([None, 3])).graph is m.__call__.graph
    m.w.assign(np.zeros((3, 2), np.float32))  # the functions read the restored variables
    np.testing.assert_allclose(m(ef.constant(X)).numpy(),
                               np.tanh(np.broadcast_to([0.5, -1.0], (5, 2))) * 2.0, rtol=1e-6)


def test_default_signature_and_version_directories(tmp_path):
    class One(ef.Module):
        def __init__(self, k):
            super().__init__()
            self.k = ef.Variable(float(k))

        @ef.function(input_signature=[ef.TensorSpec([None], ef.float32)])
        def predict(self, x):
            return x * self.k

    base = tmp_path / "serving"
    ef.saved_model.save(One(1), str(base / "1"))
    ef.saved_model.save(One(2), str(base / "2"))
    assert sorted(os.listdir(base)) == ["1", "2"]
    latest = max(base.iterdir(), key=lambda p: int(p.name))
    m = ef.saved_model.load(str(latest))
    assert list(m.signatures) == ["serving_default"]
    assert m.signatures["serving_default"](x=[1.0, 2.0])["output_0"].numpy().tolist() == [
        2.0, 4.0]
    assert ef.saved_model.contains_saved_model(str(base / "1"))
    assert not ef.saved_model.contains_saved_model(str(base))
    ef.saved_model.save(One(5), str(base / "1"))  # overwrite an export
    assert float(ef.saved_model.load(str(base / "1")).k.numpy()) == 5.0
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="non-empty directory"):
        ef.saved_model.save(One(1), str(tmp_path / "other"))


def test_concrete_function_attribute_and_nested_containers(tmp_path):
    m = ef.Module()
    m.layers = [ef.Variable([1.0, 2.0]), {"bias": ef.Variable(3.0)}]
    m.f = ef.function(lambda x: x * m.layers[0] + m.layers[1]["bias"]).get_concrete_function(
        ef.TensorSpec([2], ef.float32))
    ef.saved_model.save(m, str(tmp_path / "m"))
    r = ef.saved_model.load(str(tmp_path / "m"))
    assert r.f(ef.constant([1.0, 1.0])).numpy().tolist() == [4.0, 5.0]
    assert float(r.layers[1]["bias"].numpy()) == 3.0
    assert len(r.variables) == 2
    assert list(r.signatures) == []


def test_cli_show_and_run(saved, tmp_path):
    net, path = saved
    out = _run(None, "-m", "eagerflow.saved_model_cli", "show", "--dir", str(path))
    assert "'serve'" in out
    out = _run(None, "-m", "eagerflow.saved_model_cli", "show", "--dir", str(path),
               "--tag_set", "serve")
    assert 'SignatureDef key: "serving_default"' in out and 'SignatureDef key: "stats"' in out
    out = _run(None, "-m", "eagerflow.saved_model_cli", "show", "--dir", str(path),
               "--tag_set", "serve", "--signature_def", "serving_default")
    assert "inputs['features'] tensor_info:" in out
    assert "dtype: DT_FLOAT" in out and "shape: (-1, 3)" in out
    assert "outputs['output_0'] tensor_info:" in out and "shape: (-1, 2)" in out
    out = _run(None, "-m", "eagerflow.saved_model_cli", "show", "--dir", str(path), "--all")
    assert "signature_def['stats']" in out and "outputs['top']" in out
    np.save(tmp_path / "x.npy", X)
    outdir = tmp_path / "out"
    _run(None, "-m", "eagerflow.saved_model_cli", "run", "--dir", str(path), "--tag_set",
         "serve", "--signature_def", "serving_default", "--inputs",
         "features=%s" % (tmp_path / "x.npy"), "--outdir", str(outdir))
    np.testing.assert_array_equal(np.load(outdir / "output_0.npy"),
                                  net(ef.constant(X)).numpy())
    out = _run(None, "-m", "eagerflow.saved_model_cli", "run", "--dir", str(path),
               "--signature_def", "stats", "--input_exprs", "v=[1.0, 4.0, -2.0]")
    assert "Result for output key mean:" in out and "Result for output key top:" in out


def test_failed_save_leaves_nothing_partial(saved, monkeypatch):
    net, path = saved
    before = {p: (path / p).read_bytes() for p in ("saved_model.pb", "fingerprint.pb")}

    def boom(directory, values):
        raise OSError("disk full")

    monkeypatch.setattr(_format, "_write_variables", boom)
    net.head.scale.assign(7.0)
    with pytest.raises(OSError, match="disk full"):
        ef.saved_model.save(net, str(path))
    new = path.parent / "2"
    with pytest.raises(OSError, match="disk full"):
        ef.saved_model.save(net, str(new))
    assert sorted(os.listdir(path.parent)) == ["1"]  # no temporary or partial directory
    assert {p: (path / p).read_bytes() for p in before} == before
    monkeypatch.undo()
    assert float(ef.saved_model.load(str(path)).head.scale.numpy()) == 2.0


def _corrupt(path, name, how):
    f = path / name
    data = bytearray(f.read_bytes())
    if how == "truncate":
        f.write_bytes(bytes(data[: len(data) // 2]))
    elif how == "flip":
        data[len(data) // 2] ^= 0x40
        f.write_bytes(bytes(data))
    elif how == "flip_last":
        data[-1] ^= 0x40
        f.write_bytes(bytes(data))
    else:
        f.unlink()


@pytest.mark.parametrize("name,how,error,pattern", [
    ("saved_model.pb", "truncate", errors.DataLossError, "saved_model.pb.*truncated"),
    ("saved_model.pb", "flip", errors.DataLossError, "saved_model.pb.*checksum"),
    ("variables/variables.bundle", "delete", errors.NotFoundError, "variables.bundle.*missing"),
    ("variables/variables.bundle", "flip", errors.DataLossError, "variables.bundle.*checksum"),
    ("variables/variables.bundle", "truncate", errors.DataLossError, "variables.bundle"),
    ("fingerprint.pb", "delete", errors.NotFoundError, "fingerprint.pb.*missing"),
])
def test_corrupted_files_raise_clear_errors(saved, name, how, error, pattern):
    _, path = saved
    _corrupt(path, name, how)
    with pytest.raises(error, match=pattern):
        ef.saved_model.load(str(path))


def test_variable_reader_names_the_tensor(saved):
    """Past the manifest (rewritten to match), the reader's own checks name the tensor."""
    _, path = saved
    _corrupt(path, "variables/variables.bundle", "flip_last")  # the last tensor's last byte
    _format.write_manifest(str(path))
    with pytest.raises(errors.DataLossError,
                       match=r"variables\.bundle: tensor '\w+' fails its sha256 checksum"):
        ef.saved_model.load(str(path))


def test_unknown_format_version(saved):
    _, path = saved
    model = _format.read_model(str(path))
    model.versions.producer = model.versions.min_consumer = _format.FORMAT_VERSION + 1
    (path / "saved_model.pb").write_bytes(_format.model_to_bytes(model))
    _format.write_manifest(str(path))
    with pytest.raises(errors.UnimplementedError, match="saved_model.pb.*format version 2"):
        ef.saved_model.load(str(path))


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch %s" % os.environ.get("EF_PICKLE_MARKER", "/nonexistent"),))


@pytest.mark.parametrize("name", ["saved_model.pb", "variables/variables.bundle",
                                  "fingerprint.pb"])
def test_pickle_payload_is_never_unpickled(saved, tmp_path, monkeypatch, name):
    _, path = saved
    marker = tmp_path / "pwned"
    monkeypatch.setenv("EF_PICKLE_MARKER", str(marker))
    (path / name).write_bytes(pickle.dumps(_Boom()))
    if name != "fingerprint.pb":
        _format.write_manifest(str(path))  # so the payload reaches the file's own parser
    with pytest.raises(errors.OpError):
        ef.saved_model.load(str(path))
    assert not marker.exists()


def test_keras_sequential_serving_default(tmp_path):
    keras = pytest.importorskip("eagerflow.keras")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"),
                              keras.layers.Dense(2)])
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    expected = model.predict(x, verbose=0)
    ef.saved_model.save(model, str(tmp_path / "k" / "1"))
    code = """
import sys, json, numpy as np, eagerflow as ef
m = ef.saved_model.load(sys.argv[1])
sig = m.signatures["serving_default"]
(name,) = sig.structured_input_signature[1]
x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
(out,) = sig(**{name: ef.constant(x)}).values()
print(json.dumps(out.numpy().tolist()))
"""
    got = np.array(json.loads(_run(code, str(tmp_path / "k" / "1"))), np.float32)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_signature_without_outputs_runs_its_effects(tmp_path):
    """A signature returning {} (as TF) or None (TF refuses to save it) has no outputs;
    calling the restored one runs its assignments and returns {}."""
    class Setter(ef.Module):
        def __init__(self):
            super().__init__()
            self.v = ef.Variable(1.0)

        @ef.function(input_signature=[ef.TensorSpec([], ef.float32)])
        def set_none(self, x):
            self.v.assign(x)

        @ef.function(input_signature=[ef.TensorSpec([], ef.float32)])
        def set_empty(self, x):
            self.v.assign(x * 2.0)
            return {}

    m = Setter()
    ef.saved_model.save(m, str(tmp_path), signatures={"set_none": m.set_none,
                                                      "set_empty": m.set_empty})
    loaded = ef.saved_model.load(str(tmp_path))
    assert loaded.signatures["set_none"].structured_outputs == {}
    assert loaded.signatures["set_none"](ef.constant(7.0)) == {}
    assert float(loaded.v) == 7.0
    assert loaded.signatures["set_empty"](x=ef.constant(3.0)) == {}
    assert float(loaded.v) == 6.0
    out = _run("import eagerflow as ef, sys; m = ef.saved_model.load(sys.argv[1]); "
               "print(m.signatures['set_none'](ef.constant(4.0)), float(m.v))", str(tmp_path))
    assert out.split() == ["{}", "4.0"]
