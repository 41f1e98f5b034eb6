"""Every Keras model family through SavedModel and ``.keras``, loaded in a fresh process
that never imports this module, and SavedModel exports killed at random points."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

ROOT = pathlib.Path(__file__).resolve().parents[2]
L = keras.layers

# The subclassed family lives in its own module, written next to the exports: the fresh
# process loads its SavedModel without it and needs it only for the ``.keras`` file (Keras
# rebuilds a subclassed model from its class).
DEFS = '''
from eagerflow import keras


@keras.saving.register_keras_serializable(package="Families")
class TwoTower(keras.Model):
    def __init__(self, hidden=5, **kwargs):
        super().__init__(**kwargs)
        self.hidden = hidden
        self.left = keras.layers.Dense(hidden, activation="relu")
        self.right = keras.layers.Dense(hidden, activation="tanh")
        self.head = keras.layers.Dense(2)

    def call(self, x):
        return self.head(self.left(x) * self.right(x))

    def get_config(self):
        return {"hidden": self.hidden, "name": self.name}
'''


def _sequential(rng):
    model = keras.Sequential([keras.Input((6,)), L.Dense(8, activation="relu"), L.Dropout(0.3),
                              L.Dense(3)])
    return model, [rng.standard_normal((4, 6)).astype(np.float32)]


def _conv(rng):
    model = keras.Sequential([keras.Input((8, 8, 2)), L.Conv2D(3, 3, padding="same",
                                                               activation="relu"),
                              L.BatchNormalization(), L.MaxPooling2D(2), L.Conv2D(4, 3),
                              L.AveragePooling2D(2), L.Flatten(), L.Dense(2)])
    bn = model.layers[1]
    # Non-trivial moving statistics, so inference-mode normalization is really exercised.
    bn.moving_mean.assign(rng.standard_normal(3).astype(np.float32))
    bn.moving_variance.assign(rng.uniform(0.5, 2.0, 3).astype(np.float32))
    return model, [rng.standard_normal((3, 8, 8, 2)).astype(np.float32)]


def _functional(rng):
    a, b = keras.Input((5,), name="a"), keras.Input((3,), name="b")
    shared = L.Dense(4, activation="tanh", name="shared")
    merged = L.Concatenate()([shared(L.Dense(4, name="pa")(a)), shared(L.Dense(4, name="pb")(b))])
    model = keras.Model([a, b], [L.Dense(1, name="o1")(merged),
                                 L.Dense(2, activation="softmax", name="o2")(merged)])
    return model, [rng.standard_normal((4, 5)).astype(np.float32),
                   rng.standard_normal((4, 3)).astype(np.float32)]


def _recurrent(rng):
    model = keras.Sequential([keras.Input((5, 3)), L.LSTM(4, return_sequences=True), L.GRU(3),
                              L.Dense(2)])
    return model, [rng.standard_normal((2, 5, 3)).astype(np.float32)]


def _attention(rng):
    tokens = keras.Input((6,), dtype="int32")
    embedded = L.Embedding(10, 8)(tokens)
    attended = L.MultiHeadAttention(num_heads=2, key_dim=4)(embedded, embedded)
    pooled = L.GlobalAveragePooling1D()(L.LayerNormalization()(embedded + attended))
    return keras.Model(tokens, L.Dense(3)(pooled)), [rng.integers(0, 10, (3, 6)).astype(np.int32)]


def _subclassed(rng, defs):
    model = defs.TwoTower(hidden=5)
    xs = [rng.standard_normal((4, 3)).astype(np.float32)]
    model(xs[0])
    return model, xs


BUILDERS = {"sequential": _sequential, "conv": _conv, "functional": _functional,
            "recurrent": _recurrent, "attention": _attention}

CHILD = """
import json, sys
import numpy as np
import eagerflow as ef
from eagerflow import keras

families = json.loads(open("families.json").read())

def run(name, n_inputs):
    xs = [np.load("%s_x%d.npy" % (name, i)) for i in range(n_inputs)]
    sig = ef.saved_model.load(name + "_sm").signatures["serving_default"]
    names = list(sig.structured_input_signature[1])
    out = sig(**{n: ef.constant(x) for n, x in zip(names, xs)})
    for key in sorted(out):
        np.save("%s_sm_%s.npy" % (name, key), out[key].numpy())
    if name == "subclassed":
        # Everything else was loaded without the module that defines the model class.
        assert "family_defs" not in sys.modules and "test_saved_model_families" not in \\
            sys.modules, sorted(sys.modules)
        import family_defs  # noqa: F401 - registers TwoTower for the .keras file
    model = keras.models.load_model(name + ".keras")
    preds = model.predict(xs if n_inputs > 1 else xs[0], verbose=0)
    for i, p in enumerate(preds if isinstance(preds, list) else [preds]):
        np.save("%s_keras_%d.npy" % (name, i), p)

for name, n_inputs in families:
    run(name, n_inputs)
print("ok")
"""


def _load_defs(tmp_path):
    (tmp_path / "family_defs.py").write_text(DEFS)
    spec = importlib.util.spec_from_file_location("family_defs", tmp_path / "family_defs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_family_reloads_identically_in_a_fresh_process(tmp_path):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    defs = _load_defs(tmp_path)
    models = {name: build(rng) for name, build in BUILDERS.items()}
    models["subclassed"] = _subclassed(rng, defs)
    expected = {}
    for name, (model, xs) in models.items():
        preds = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
        expected[name] = preds if isinstance(preds, list) else [preds]
        signatures = None
        if name == "subclassed":
            # A subclassed model has no Input layers to derive a signature from.
            spec = ef.TensorSpec([None, 3], ef.float32, name="x")
            signatures = ef.function(lambda x, m=model: m(x, training=False),
                                     input_signature=[spec])
        ef.saved_model.save(model, str(tmp_path / (name + "_sm")), signatures=signatures)
        model.save(str(tmp_path / (name + ".keras")))
        for i, x in enumerate(xs):
            np.save(str(tmp_path / ("%s_x%d.npy" % (name, i))), x)
    (tmp_path / "families.json").write_text(json.dumps([[n, len(m[1])]
                                                        for n, m in models.items()]))
    # The child sees the repository and the exports' folder, never tests/.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    for name, preds in expected.items():
        for i, want in enumerate(preds):
            # Same float32 kernels on the same CPU, in the same order: bit-identical.
            got_sm = np.load(str(tmp_path / ("%s_sm_output_%d.npy" % (name, i))))
            got_keras = np.load(str(tmp_path / ("%s_keras_%d.npy" % (name, i))))
            assert got_sm.dtype == want.dtype == np.float32
            np.testing.assert_array_equal(got_sm, want, err_msg="%s SavedModel" % name)
            np.testing.assert_array_equal(got_keras, want, err_msg="%s .keras" % name)
        assert not (tmp_path / ("%s_sm_output_%d.npy" % (name, len(preds)))).exists()


# -- crash safety ---------------------------------------------------------------------------
TRIALS_PER_MODE = 15
TEMP_NAME = re.compile(r"^\.(export|\d+)\.(tmp|old)-[0-9a-f]{32}$")


class Counter(ef.Module):
    """Every value derives from one step number, so a mixed export is detectable."""

    def __init__(self, step):
        super().__init__()
        self.w = ef.Variable(np.full((256,), step, np.float32))
        self.b = ef.Variable(float(2 * step))
        self.step = ef.Variable(step, trainable=False)

    @ef.function(input_signature=[ef.TensorSpec([None], ef.float32)])
    def __call__(self, x):
        return x * 0.0 + ef.reduce_sum(self.w) + self.b


def _save_forever(root, mode, write_fd, start):
    """Child side: exports steps start, start+1... and reports each completed one."""
    step = start
    while True:
        target = os.path.join(root, "export" if mode == "overwrite" else str(step))
        ef.saved_model.save(Counter(step), target)
        os.write(write_fd, b"%d\n" % step)
        step += 1


def _check_export(path):
    loaded = ef.saved_model.load(path)
    step = int(loaded.step.numpy())
    np.testing.assert_array_equal(loaded.w.numpy(), np.full((256,), step, np.float32))
    assert float(loaded.b.numpy()) == 2.0 * step
    out = loaded(ef.constant([1.0])).numpy()
    assert out.tolist() == [256.0 * step + 2.0 * step]
    return step


@pytest.mark.parametrize("mode", ["overwrite", "versions"])
def test_killed_saves_leave_the_last_complete_export(tmp_path, mode):
    rng = np.random.default_rng(1234 if mode == "overwrite" else 4321)
    root = str(tmp_path)
    last_done = -1
    for trial in range(TRIALS_PER_MODE):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the saving process: never returns into pytest
            try:
                os.close(read_fd)
                _save_forever(root, mode, write_fd, last_done + 1)
            finally:
                os._exit(1)
        os.close(write_fd)
        time.sleep(rng.uniform(0.02, 0.3))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(read_fd, "rb") as pipe:
            reported = [int(line) for line in pipe.read().split()]
        if reported:
            last_done = reported[-1]
        names = sorted(os.listdir(root))
        stray = [n for n in names if n.startswith(".") and not TEMP_NAME.match(n)]
        assert not stray, "trial %d: unexpected entries %s" % (trial, stray)
        finals = [n for n in names if not n.startswith(".")]
        if mode == "overwrite":
            if last_done < 0:
                assert finals in ([], ["export"])
                continue
            if "export" in finals:
                # The save after the last report may have finished just before the kill.
                assert _check_export(os.path.join(root, "export")) in (last_done,
                                                                       last_done + 1)
            else:
                # Killed between moving the old export aside and moving the new one in:
                # the previous export is intact under its documented ``.old`` name.
                olds = [n for n in names if n.startswith(".export.old-")]
                assert len(olds) == 1, names
                assert _check_export(os.path.join(root, olds[0])) == last_done
        else:
            versions = sorted(int(n) for n in finals)
            assert versions == list(range(len(versions)))
            assert versions[-1:] in ([last_done], [last_done + 1]) or (
                last_done < 0 and not versions)
            for v in versions:  # every version directory present is complete
                assert _check_export(os.path.join(root, str(v))) == v
    assert last_done >= 1, "the kills came too early to interrupt any save"
    print("%s: %d kill trials, %d exports completed" % (mode, TRIALS_PER_MODE, last_done + 1))
