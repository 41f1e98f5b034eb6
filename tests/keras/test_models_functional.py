"""The functional API: KerasTensors, shared layers, several inputs/outputs, nested models,
operators, configs, and training with per-output losses."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


def two_tower():
    a = keras.Input((3,), name="a")
    b = keras.Input((3,), name="b")
    shared = keras.layers.Dense(2, name="shared")
    ha, hb = shared(a), shared(b)
    sum_out = keras.layers.Add(name="sum")([ha, hb])
    diff_out = keras.layers.Subtract(name="diff")([ha, hb])
    return keras.Model([a, b], [sum_out, diff_out]), shared


def test_keras_tensors_have_shapes_dtypes_and_no_values():
    x = keras.Input((5,), batch_size=4, dtype="int32", name="ids")
    assert x.shape == (4, 5) and x.dtype == ef.int32
    y = keras.layers.Dense(3)(keras.Input((2, 7)))
    assert y.shape == (None, 2, 3) and y.dtype == ef.float32
    assert keras.backend.is_keras_tensor(y)
    with pytest.raises(TypeError, match="Python bool"):
        bool(y)
    with pytest.raises(TypeError, match="no value"):
        y.numpy()
    with pytest.raises(ValueError, match="shape"):
        keras.Input()


def test_shared_layer_two_inputs_two_outputs():
    model, shared = two_tower()
    assert [layer.name for layer in model.layers] == ["a", "b", "shared", "sum", "diff"]
    assert model.output_names == ["sum", "diff"] and model.count_params() == 8
    xa = np.arange(6, dtype=np.float32).reshape(2, 3)
    xb = -xa[::-1]
    w, bias = shared.get_weights()
    s, d = model([xa, xb])
    np.testing.assert_allclose(s.numpy(), (xa @ w + bias) + (xb @ w + bias), rtol=1e-5)
    np.testing.assert_allclose(d.numpy(), (xa - xb) @ w, rtol=1e-5, atol=1e-5)
    s2, d2 = model({"a": xa, "b": xb})
    np.testing.assert_allclose(s2.numpy(), s.numpy())
    with pytest.raises(ValueError, match="expects 2 input"):
        model([xa])


def test_losses_dict_and_loss_weights_give_the_weighted_total():
    model, shared = two_tower()
    model.compile(keras.optimizers.SGD(0.0), loss={"sum": "mse", "diff": "mae"},
                  loss_weights={"sum": 2.0, "diff": 0.5}, metrics={"diff": ["mse"]})
    rng = np.random.default_rng(0)
    xa, xb = rng.standard_normal((8, 3)), rng.standard_normal((8, 3))
    ys, yd = rng.standard_normal((8, 2)), rng.standard_normal((8, 2))
    w, bias = shared.get_weights()
    ps, pd = (xa @ w + bias) + (xb @ w + bias), (xa - xb) @ w
    mse, mae = np.mean((ps - ys) ** 2), np.mean(np.abs(pd - yd))
    logs = model.evaluate([xa, xb], {"sum": ys, "diff": yd}, return_dict=True, verbose=0)
    assert sorted(logs) == ["diff_loss", "diff_mse", "loss", "sum_loss"]
    np.testing.assert_allclose(logs["sum_loss"], mse, rtol=1e-5)
    np.testing.assert_allclose(logs["diff_loss"], mae, rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], 2.0 * mse + 0.5 * mae, rtol=1e-5)
    np.testing.assert_allclose(logs["diff_mse"], np.mean((pd - yd) ** 2), rtol=1e-5)
    assert model.metrics_names == ["loss", "sum_loss", "diff_loss", "diff_mse"]
    as_list = model.evaluate([xa, xb], [ys, yd], verbose=0)
    np.testing.assert_allclose(as_list, [logs["loss"], logs["sum_loss"], logs["diff_loss"],
                                         logs["diff_mse"]], rtol=1e-6)
    history = model.fit([xa, xb], [ys, yd], epochs=1, batch_size=8, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], 2.0 * mse + 0.5 * mae, rtol=1e-5)
    with pytest.raises(ValueError, match="Unknown output name"):
        model.compile("sgd", loss={"nope": "mse"})
        model.evaluate([xa, xb], [ys, yd], verbose=0)


def test_training_moves_only_the_shared_weights_used():
    model, shared = two_tower()
    model.compile(keras.optimizers.Adam(0.05), ["mse", "mse"])
    rng = np.random.default_rng(1)
    xa, xb = rng.standard_normal((64, 3)), rng.standard_normal((64, 3))
    target = rng.standard_normal((3, 2))
    ys, yd = (xa + xb) @ target, (xa - xb) @ target
    history = model.fit([xa, xb], [ys, yd], epochs=40, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.05 * history.history["loss"][0]
    np.testing.assert_allclose(shared.get_weights()[0], target, atol=0.1)


def test_nested_models_are_layers_and_share_weights():
    inner = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu")],
                             name="inner")
    x1, x2 = keras.Input((4,)), keras.Input((4,))
    merged = keras.layers.Concatenate()([inner(x1), inner(x2)])
    middle = keras.Model([x1, x2], merged, name="middle")
    a, b = keras.Input((4,)), keras.Input((4,))
    outer = keras.Model([a, b], keras.layers.Dense(1)(middle([a, b])))
    assert outer.count_params() == (4 * 3 + 3) + (6 + 1)
    xa, xb = np.ones((2, 4), np.float32), np.zeros((2, 4), np.float32)
    w, bias = inner.get_weights()
    h = np.concatenate([np.maximum(xa @ w + bias, 0), np.maximum(xb @ w + bias, 0)], axis=1)
    w2, b2 = outer.layers[-1].get_weights()
    np.testing.assert_allclose(outer([xa, xb]).numpy(), h @ w2 + b2, rtol=1e-5)
    clone = keras.Model.from_config(outer.get_config())
    assert clone.count_params() == outer.count_params()


def test_graph_disconnected_names_the_missing_input():
    a, b = keras.Input((2,), name="first"), keras.Input((2,), name="second")
    out = keras.layers.Add()([a, b])
    with pytest.raises(ValueError, match="Graph disconnected.*second"):
        keras.Model(a, out)
    with pytest.raises(ValueError, match="KerasTensors"):
        keras.Model(a, ef.ones([2]))
    twin = keras.layers.Dense(1, name="first")(a)
    with pytest.raises(ValueError, match="more than one layer"):
        keras.Model(a, twin)


def test_operators_and_slicing_on_keras_tensors():
    x = keras.Input((4,))
    y = 1.0 - (x * 2.0 + x) / 3.0
    z = -abs(y[:, 1:3]) ** 2.0
    model = keras.Model(x, [y, z])
    data = np.array([[1.0, -2.0, 3.0, 0.5]], np.float32)
    y_val, z_val = model(data)
    np.testing.assert_allclose(y_val.numpy(), 1.0 - data)
    np.testing.assert_allclose(z_val.numpy(), -np.abs(1.0 - data[:, 1:3]) ** 2)
    clone = keras.Model.from_config(model.get_config())
    np.testing.assert_allclose(clone(data)[1].numpy(), z_val.numpy())


def test_config_round_trip_preserves_the_graph():
    model, _ = two_tower()
    config = model.get_config()
    assert config["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert config["output_layers"] == [["sum", 0, 0], ["diff", 0, 0]]
    shared = [entry for entry in config["layers"] if entry["name"] == "shared"][0]
    assert len(shared["inbound_nodes"]) == 2
    clone = keras.Model.from_config(config)
    clone.set_weights(model.get_weights())
    xa, xb = np.ones((1, 3), np.float32), np.full((1, 3), 2.0, np.float32)
    for got, want in zip(clone([xa, xb]), model([xa, xb])):
        np.testing.assert_allclose(got.numpy(), want.numpy())


def test_dict_inputs_and_outputs_and_dtype_conversion():
    ids = keras.Input((3,), dtype="int32", name="ids")
    dense = keras.Input((2,), name="dense")
    emb = keras.layers.Flatten()(keras.layers.Embedding(5, 2)(ids))
    out = keras.layers.Concatenate()([emb, dense])
    model = keras.Model({"ids": ids, "dense": dense}, {"joined": out, "dense": dense})
    result = model({"ids": np.array([[1, 2, 3]]), "dense": np.ones((1, 2))})
    assert sorted(result) == ["dense", "joined"] and result["joined"].shape == (1, 8)
    assert result["dense"].dtype == ef.float32  # float64 numpy cast to the Input's dtype


def test_functional_summary_has_a_connected_to_column():
    model, _ = two_tower()
    lines = []
    model.summary(print_fn=lines.append)
    assert "Connected to" in lines[2]
    rows = {ln.split("│")[1].strip(): ln for ln in lines if ln.startswith("│")}
    assert "a[0][0], b[0][0]" in rows["shared (Dense)"]
    assert "shared[0][0]" in rows["sum (Add)"]
    assert lines[-3] == " Total params: 8 (32.00 B)"


def test_training_flag_reaches_inner_layers():
    seen = []

    class Probe(keras.layers.Layer):
        def call(self, x, training=None):
            seen.append(training)
            return x

    x = keras.Input((2,))
    model = keras.Model(x, keras.layers.Dense(1)(Probe()(x)))
    model.compile("sgd", "mse", run_eagerly=True)
    model.fit(np.ones((2, 2)), np.ones((2, 1)), verbose=0)  # builds (a symbolic call), trains
    seen.clear()
    model.fit(np.ones((2, 2)), np.ones((2, 1)), verbose=0)
    model.predict(np.ones((2, 2)), verbose=0)
    model.evaluate(np.ones((2, 2)), np.ones((2, 1)), verbose=0)
    assert seen == [True, False, False]
