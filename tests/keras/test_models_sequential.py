"""Sequential models: construction, building, summary and parameter counts (checked by hand)."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras


def test_layers_shapes_and_parameter_counts():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3)])
    assert [type(layer).__name__ for layer in model.layers] == ["Dense", "Dense"]
    assert model.input_shape == (None, 4) and model.output_shape == (None, 3)
    # (4*8 + 8) + (8*3 + 3)
    assert model.count_params() == 40 + 27
    x = np.ones((2, 4), np.float32)
    w1, b1, w2, b2 = model.get_weights()
    np.testing.assert_allclose(model(x).numpy(), np.maximum(x @ w1 + b1, 0) @ w2 + b2,
                               rtol=1e-6)
    assert model.get_layer(index=1) is model.layers[1]
    assert model.get_layer(model.layers[0].name) is model.layers[0]
    with pytest.raises(ValueError, match="No such layer"):
        model.get_layer("nope")


def test_input_shape_on_first_layer_add_pop_and_errors():
    model = keras.Sequential()
    model.add(keras.layers.Dense(5, input_shape=(2,)))
    assert model.built and model.output_shape == (None, 5)
    model.add(keras.layers.Dense(1))
    assert model.output_shape == (None, 1) and model.count_params() == 15 + 6
    popped = model.pop()
    assert isinstance(popped, keras.layers.Dense) and model.output_shape == (None, 5)
    with pytest.raises(TypeError, match="instance of class Layer"):
        model.add("dense")
    dup = keras.layers.Dense(2, name="same")
    with pytest.raises(ValueError, match="unique names"):
        keras.Sequential([dup, keras.layers.Dense(2, name="same")])
    with pytest.raises(TypeError, match="no layers"):
        keras.Sequential().pop()


def test_deferred_build_on_first_call_keeps_the_input_dtype():
    model = keras.Sequential([keras.layers.Embedding(10, 3), keras.layers.Flatten()])
    assert not model.built and model.layers[0].built is False
    out = model(ef.constant([[1, 2], [3, 4]]))
    assert out.shape == (2, 6)
    assert model.inputs[0].dtype == ef.int32 and model.input_shape == (None, 2)
    table = model.layers[0].embeddings.numpy()
    np.testing.assert_allclose(out.numpy()[0], np.concatenate([table[1], table[2]]))


def test_explicit_build_and_unbuilt_errors():
    model = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(AttributeError, match="not been built"):
        _ = model.output_shape
    model.build((None, 7))
    assert model.count_params() == 16 and model.input_shape == (None, 7)


def summary_lines(model, **kwargs):
    lines = []
    model.summary(print_fn=lines.append, **kwargs)
    return lines


def test_summary_table_and_totals():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, name="hidden"),
                              keras.layers.BatchNormalization(name="bn"),
                              keras.layers.Dense(3, name="out")], name="demo")
    lines = summary_lines(model)
    assert lines[0] == 'Model: "demo"'
    assert "Layer (type)" in lines[2] and "Output Shape" in lines[2] and "Param #" in lines[2]
    rows = [ln for ln in lines if ln.startswith("│")]
    assert [r.split("│")[1].strip() for r in rows] == [
        "hidden (Dense)", "bn (BatchNormalization)", "out (Dense)"]
    assert [r.split("│")[2].strip() for r in rows] == ["(None, 8)", "(None, 8)", "(None, 3)"]
    # Dense 4*8+8 = 40; BN 4*8 = 32 (gamma, beta trainable; moving mean/var not); 8*3+3 = 27
    assert [r.split("│")[3].strip() for r in rows] == ["40", "32", "27"]
    assert lines[-3:] == [" Total params: 99 (396.00 B)",
                          " Trainable params: 83 (332.00 B)",
                          " Non-trainable params: 16 (64.00 B)"]
    assert len({len(ln) for ln in lines[1:-3]}) == 1  # every table line has the same width


def test_summary_of_unbuilt_model_and_optimizer_line(capsys):
    model = keras.Sequential([keras.layers.Dense(2, name="d")])
    lines = summary_lines(model)
    assert "0 (unbuilt)" in lines[4] and lines[-3] == " Total params: 0 (0.00 B)"
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(np.ones((2, 1)), np.ones((2, 1)), verbose=0)
    model.summary()
    out = capsys.readouterr().out
    assert " Optimizer params: 2 " in out  # iterations and learning rate (plain SGD)


def test_summary_line_length_and_trainable_column():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.layers[0].trainable = False
    lines = summary_lines(model, line_length=60, show_trainable=True)
    assert max(len(ln) for ln in lines[1:-3]) <= 62
    assert lines[-2] == " Trainable params: 0 (0.00 B)"
    assert "Trainable" in lines[2] and "N" in lines[4].split("│")[-2]


def test_config_round_trip():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="tanh"),
                              keras.layers.Dropout(0.5)], name="cfg")
    config = model.get_config()
    assert config["name"] == "cfg" and config["build_input_shape"] == [None, 3]
    clone = keras.Sequential.from_config(config)
    assert clone.output_shape == (None, 2) and clone.count_params() == 8
    assert clone.layers[1].rate == 0.5 and clone.layers[0].activation.__name__ == "tanh"
