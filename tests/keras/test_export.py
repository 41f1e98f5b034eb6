"""Model.export (Keras 3): a serving SavedModel with a ``serve`` endpoint."""

import os
import subprocess
import sys

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
X = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)


def _model():
    inputs = keras.Input((3,), name="features")
    h = keras.layers.Dense(4, activation="tanh")(inputs)
    h = keras.layers.BatchNormalization()(h)
    outputs = {"score": keras.layers.Dense(1)(h), "probs": keras.layers.Dense(2,
                                                                           "softmax")(h)}
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss={"score": "mse", "probs": "mse"})
    model.fit(X, {"score": X[:, :1], "probs": np.full((4, 2), 0.5, np.float32)}, epochs=2,
              verbose=0)  # moving statistics differ from their initial values
    return model


def test_export_serves_the_inference_call(tmp_path, capsys):
    model = _model()
    path = str(tmp_path / "export")
    model.export(path)
    printed = capsys.readouterr().out
    assert "Endpoint 'serve'" in printed and "args_0 (POSITIONAL_ONLY)" in printed
    loaded = ef.saved_model.load(path)
    want = model(X, training=False)
    got = loaded.serve(X)
    assert sorted(got) == ["probs", "score"]
    for key in got:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), rtol=1e-6)
    assert sorted(loaded.signatures) == ["serve", "serving_default"]
    sig = loaded.signatures["serving_default"]
    assert list(sig.structured_input_signature[1]) == ["features"]
    np.testing.assert_allclose(sig(X)["score"].numpy(), want["score"].numpy(), rtol=1e-6)
    np.testing.assert_allclose(sig(features=X)["probs"].numpy(), want["probs"].numpy(),
                               rtol=1e-6)
    assert len(loaded.variables) == len(model.variables)
    assert len(loaded.trainable_variables) == len(model.trainable_variables)
    assert len(loaded.non_trainable_variables) == len(model.non_trainable_variables)
    code = ("import sys, numpy as np, eagerflow as ef; m = ef.saved_model.load(sys.argv[1]); "
            "x = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3); "
            "print(repr(m.serve(x)['score'].numpy().ravel().tolist()))")
    proc = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(eval(proc.stdout), want["score"].numpy().ravel(), rtol=1e-6)


def test_export_with_an_input_signature_and_errors(tmp_path, capsys):
    class Sub(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2, kernel_initializer="ones")

        def call(self, x):
            return self.dense(x) * 2.0

    model = Sub()
    with pytest.raises(ValueError, match="input_signature|no known inputs"):
        model.export(str(tmp_path / "a"), verbose=False)
    model.export(str(tmp_path / "b"), verbose=False,
                 input_signature=[ef.TensorSpec([None, 3], ef.float32)])
    assert capsys.readouterr().out == ""
    loaded = ef.saved_model.load(str(tmp_path / "b"))
    np.testing.assert_allclose(loaded.serve(X).numpy(), np.repeat(X.sum(1, keepdims=True) * 2,
                                                                  2, axis=1), rtol=1e-6)
    with pytest.raises(ValueError, match="format='onnx'.*tf_saved_model"):
        model.export(str(tmp_path / "c"), format="onnx")
    with pytest.raises(ValueError, match="unexpected keyword"):
        model.export(str(tmp_path / "c"), bogus=1)
    assert not os.path.exists(tmp_path / "c")
