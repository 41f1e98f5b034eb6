"""SimpleRNN, LSTM, GRU, RNN, Bidirectional and TimeDistributed against step-by-step numpy
loops."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.keras import layers
from tests.keras.layer_checks import check_layer_gradients, roundtrip

RNG = np.random.default_rng(3)


def randn(*shape):
    return RNG.standard_normal(shape)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def simple_step(x, states, w):
    kernel, recurrent, bias = w
    h = np.tanh(x @ kernel + bias + states[0] @ recurrent)
    return h, [h]


def lstm_step(x, states, w):
    kernel, recurrent, bias = w
    h, c = states
    z = x @ kernel + h @ recurrent + bias
    i, f, g, o = np.split(z, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    return h, [h, c]


def gru_step(x, states, w, reset_after=True):
    kernel, recurrent, bias = w
    h = states[0]
    u = h.shape[-1]
    if reset_after:
        xp = x @ kernel + bias[0]
        hp = h @ recurrent + bias[1]
        z = sigmoid(xp[:, :u] + hp[:, :u])
        r = sigmoid(xp[:, u:2 * u] + hp[:, u:2 * u])
        hh = np.tanh(xp[:, 2 * u:] + r * hp[:, 2 * u:])
    else:
        xp = x @ kernel + bias
        z = sigmoid(xp[:, :u] + h @ recurrent[:, :u])
        r = sigmoid(xp[:, u:2 * u] + h @ recurrent[:, u:2 * u])
        hh = np.tanh(xp[:, 2 * u:] + (r * h) @ recurrent[:, 2 * u:])
    h = z * h + (1 - z) * hh
    return h, [h]


def run_ref(step, x, states, w, go_backwards=False, mask=None, zero_output=False):
    """Keras' loop: masked steps keep the state and repeat the last output (or zeros)."""
    steps = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    outs, prev = [], None
    for t in steps:
        out, new = step(x[:, t], states, w)
        if mask is not None:
            m = mask[:, t][:, None]
            new = [np.where(m, n, s) for n, s in zip(new, states)]
            prev = np.zeros_like(out) if prev is None else prev
            out = np.where(m, out, np.zeros_like(out) if zero_output else prev)
            prev = out
        states = new
        outs.append(out)
    return np.stack(outs, axis=1), states


def _weights(layer):
    return [w.numpy() for w in layer.weights]


@pytest.mark.parametrize("go_backwards", [False, True])
def test_simple_rnn(go_backwards):
    layer = layers.SimpleRNN(4, return_sequences=True, return_state=True,
                             go_backwards=go_backwards, dtype="float64")
    x = randn(3, 5, 2)
    seq, h = layer(x)
    ref_seq, ref_states = run_ref(simple_step, x, [np.zeros((3, 4))], _weights(layer),
                                  go_backwards)
    np.testing.assert_allclose(seq.numpy(), ref_seq, rtol=1e-10)
    np.testing.assert_allclose(h.numpy(), ref_states[0], rtol=1e-10)


@pytest.mark.parametrize("go_backwards", [False, True])
def test_lstm(go_backwards):
    layer = layers.LSTM(3, return_sequences=True, return_state=True, go_backwards=go_backwards,
                        dtype="float64")
    x = randn(2, 6, 4)
    h0, c0 = randn(2, 3), randn(2, 3)
    seq, h, c = layer(x, initial_state=[h0, c0])
    ref_seq, (rh, rc) = run_ref(lstm_step, x, [h0, c0], _weights(layer), go_backwards)
    np.testing.assert_allclose(seq.numpy(), ref_seq, rtol=1e-10)
    np.testing.assert_allclose(h.numpy(), rh, rtol=1e-10)
    np.testing.assert_allclose(c.numpy(), rc, rtol=1e-10)
    last = layers.LSTM(3, dtype="float64")
    last.build(x.shape)
    last.set_weights(_weights(layer))
    np.testing.assert_allclose(last(x).numpy(),
                               run_ref(lstm_step, x, [np.zeros((2, 3))] * 2,
                                       _weights(layer))[0][:, -1], rtol=1e-10)


def test_lstm_initialization_and_names():
    layer = layers.LSTM(3, name="enc")
    layer(np.ones((1, 2, 4), np.float32))
    assert [w.name for w in layer.weights] == [
        "enc/lstm_cell/kernel:0", "enc/lstm_cell/recurrent_kernel:0", "enc/lstm_cell/bias:0"]
    bias = layer.cell.bias.numpy()
    np.testing.assert_array_equal(bias, np.r_[np.zeros(3), np.ones(3), np.zeros(6)])
    rec = layer.cell.recurrent_kernel.numpy()
    np.testing.assert_allclose(rec @ rec.T, np.eye(3), atol=1e-5)  # orthogonal
    assert layer.units == 3 and layer.recurrent_activation is layer.cell.recurrent_activation


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru(reset_after):
    layer = layers.GRU(4, return_sequences=True, reset_after=reset_after,
                       bias_initializer="random_normal", dtype="float64")
    x = randn(2, 5, 3)
    seq = layer(x)
    assert layer.cell.bias.shape.as_list() == ([2, 12] if reset_after else [12])
    ref, _ = run_ref(lambda a, s, w: gru_step(a, s, w, reset_after), x, [np.zeros((2, 4))],
                     _weights(layer))
    np.testing.assert_allclose(seq.numpy(), ref, rtol=1e-10)


def test_masked_lstm_with_embedding():
    emb = layers.Embedding(10, 3, mask_zero=True, dtype="float64")
    lstm = layers.LSTM(2, return_sequences=True, dtype="float64")
    ids = np.array([[3, 4, 0, 0], [1, 0, 2, 5]])
    seq = lstm(emb(ids))
    mask = ids != 0
    ref, _ = run_ref(lstm_step, emb(ids).numpy(), [np.zeros((2, 2))] * 2, _weights(lstm),
                     mask=mask)
    np.testing.assert_allclose(seq.numpy(), ref, rtol=1e-10)
    np.testing.assert_array_equal(layers.get_keras_mask(seq).numpy(), mask)
    zero = layers.GRU(2, return_sequences=True, zero_output_for_mask=True, dtype="float64")
    x = emb(ids)
    out = zero(x).numpy()
    assert (out[~mask] == 0).all()


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional(merge_mode):
    bi = layers.Bidirectional(layers.GRU(3, return_sequences=True, return_state=True,
                                         dtype="float64"), merge_mode=merge_mode)
    x = randn(2, 4, 5)
    out = bi(x)
    fw, bw = _weights(bi.forward_layer), _weights(bi.backward_layer)
    f_seq, (f_h,) = run_ref(gru_step, x, [np.zeros((2, 3))], fw)
    b_seq, (b_h,) = run_ref(gru_step, x, [np.zeros((2, 3))], bw, go_backwards=True)
    b_seq = b_seq[:, ::-1]
    merged = {"concat": np.concatenate([f_seq, b_seq], -1), "sum": f_seq + b_seq,
              "mul": f_seq * b_seq, "ave": (f_seq + b_seq) / 2}
    if merge_mode is None:
        np.testing.assert_allclose(out[0].numpy(), f_seq, rtol=1e-10)
        np.testing.assert_allclose(out[1].numpy(), b_seq, rtol=1e-10)
        states = out[2:]
    else:
        np.testing.assert_allclose(out[0].numpy(), merged[merge_mode], rtol=1e-10)
        states = out[1:]
    np.testing.assert_allclose(states[0].numpy(), f_h, rtol=1e-10)
    np.testing.assert_allclose(states[1].numpy(), b_h, rtol=1e-10)
    assert bi.weights[0].name.startswith(bi.name + "/forward_gru")


def test_bidirectional_last_output_names_and_errors():
    bi = layers.Bidirectional(layers.LSTM(2, name="l", dtype="float64"), name="bi")
    x = randn(2, 3, 4)
    y = bi(x).numpy()
    f, _ = run_ref(lstm_step, x, [np.zeros((2, 2))] * 2, _weights(bi.forward_layer))
    b, _ = run_ref(lstm_step, x, [np.zeros((2, 2))] * 2, _weights(bi.backward_layer),
                   go_backwards=True)
    np.testing.assert_allclose(y, np.concatenate([f[:, -1], b[:, -1]], -1), rtol=1e-10)
    assert [w.name for w in bi.weights][:1] == ["bi/forward_l/lstm_cell/kernel:0"]
    assert bi.compute_output_shape((None, 3, 4)).as_list() == [None, 4]
    with pytest.raises(ValueError, match="merge mode"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="recurrent layer"):
        layers.Bidirectional(layers.Dense(2))


def test_rnn_dropout_only_in_training():
    layer = layers.LSTM(3, dropout=0.5, recurrent_dropout=0.5, seed=1, dtype="float64")
    x = randn(4, 5, 3)
    inference = layer(x).numpy()
    ref, _ = run_ref(lstm_step, x, [np.zeros((4, 3))] * 2, _weights(layer))
    np.testing.assert_allclose(inference, ref[:, -1], rtol=1e-10)
    assert not np.allclose(layer(x, training=True).numpy(), inference)


def test_stateful_rnn_carries_state():
    layer = layers.SimpleRNN(2, stateful=True, dtype="float64")
    x1, x2 = randn(3, 4, 2), randn(3, 4, 2)
    layer(x1)
    y2 = layer(x2).numpy()
    _, states = run_ref(simple_step, x1, [np.zeros((3, 2))], _weights(layer))
    ref, _ = run_ref(simple_step, x2, states, _weights(layer))
    np.testing.assert_allclose(y2, ref[:, -1], rtol=1e-10)
    layer.reset_states()
    np.testing.assert_allclose(layer(x2).numpy(),
                               run_ref(simple_step, x2, [np.zeros((3, 2))],
                                       _weights(layer))[0][:, -1], rtol=1e-10)
    assert len(layer.weights) == 3  # states are not weights


def test_generic_rnn_and_stacked_cells():
    cells = [layers.SimpleRNNCell(3, dtype="float64"), layers.LSTMCell(2, dtype="float64")]
    rnn = layers.RNN(cells, return_state=True, dtype="float64")
    x = randn(2, 4, 5)
    out, h1, h2, c2 = rnn(x)
    w1, w2 = _weights(cells[0]), _weights(cells[1])

    def stacked(a, s, _):
        a, s1 = simple_step(a, [s[0]], w1)
        a, s2 = lstm_step(a, s[1:], w2)
        return a, s1 + s2

    ref, states = run_ref(stacked, x, [np.zeros((2, 3)), np.zeros((2, 2)), np.zeros((2, 2))],
                          None)
    np.testing.assert_allclose(out.numpy(), ref[:, -1], rtol=1e-10)
    np.testing.assert_allclose(c2.numpy(), states[2], rtol=1e-10)
    cell = layers.GRUCell(2, dtype="float64")
    y, new = cell(randn(3, 4), [np.zeros((3, 2))])
    assert y.shape.as_list() == [3, 2] and len(new) == 1


def test_time_distributed():
    td = layers.TimeDistributed(layers.Dense(2, dtype="float64"), dtype="float64")
    x = randn(3, 4, 5)
    y = td(x).numpy()
    kernel, bias = _weights(td.layer)
    np.testing.assert_allclose(y, x @ kernel + bias, rtol=1e-10)
    assert td.compute_output_shape((None, 4, 5)).as_list() == [None, 4, 2]
    conv = layers.TimeDistributed(layers.Conv2D(2, 3))
    assert conv(np.ones((2, 3, 5, 5, 1), np.float32)).shape.as_list() == [2, 3, 3, 3, 2]
    check_layer_gradients(layers.TimeDistributed(layers.Dense(2, dtype="float64"),
                                                 dtype="float64"), randn(2, 3, 4))


@pytest.mark.parametrize("make", [
    lambda: layers.SimpleRNN(3, return_sequences=True, dtype="float64"),
    lambda: layers.LSTM(2, go_backwards=True, dtype="float64"),
    lambda: layers.GRU(2, return_sequences=True, dtype="float64"),
    lambda: layers.GRU(2, reset_after=False, bias_initializer="ones", dtype="float64"),
    lambda: layers.Bidirectional(layers.LSTM(2, return_sequences=True, dtype="float64"),
                                 dtype="float64"),
])
def test_rnn_gradients(make):
    check_layer_gradients(make(), randn(2, 3, 3))


def test_rnn_errors():
    with pytest.raises(ValueError, match="units"):
        layers.LSTM(0)
    with pytest.raises(ValueError, match="initial_state"):
        layers.LSTM(2)(np.ones((1, 3, 2), np.float32), initial_state=[ef.zeros([1, 2])])
    with pytest.raises(ValueError, match="ndim=3"):
        lstm = layers.LSTM(2)
        lstm(np.ones((1, 3, 2), np.float32))
        lstm(np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match="dropout"):
        layers.GRU(2, dropout=1.0)
    with pytest.raises(ValueError, match="cell"):
        layers.RNN(layers.Dense(2))


def test_rnn_configs():
    for layer in (layers.SimpleRNN(3, return_sequences=True, activation="relu"),
                  layers.LSTM(4, go_backwards=True, unit_forget_bias=False, dropout=0.2),
                  layers.GRU(2, reset_after=False, return_state=True, stateful=True),
                  layers.Bidirectional(layers.LSTM(3, return_sequences=True), merge_mode="sum"),
                  layers.TimeDistributed(layers.Dense(4))):
        roundtrip(layer)
    rnn = layers.RNN([layers.LSTMCell(2), layers.GRUCell(3)], return_sequences=True)
    clone = layers.deserialize(layers.serialize(rnn))
    assert [type(c).__name__ for c in clone.cell.cells] == ["LSTMCell", "GRUCell"]
    clone = layers.RNN.from_config(layers.RNN(layers.SimpleRNNCell(2)).get_config())
    assert isinstance(clone.cell, layers.SimpleRNNCell)


# -- an unknown time dimension: the step runs inside one while_loop -----------------------------

def _has_while(fn, *specs):
    graph = fn.get_concrete_function(*specs).graph.as_graph_def()
    return any(node.op == "While" for node in graph.node)


@pytest.mark.parametrize("kind,reference", [
    ("SimpleRNN", simple_step), ("LSTM", lstm_step), ("GRU", gru_step)])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_unknown_time_dimension_runs_a_while_loop(kind, reference, go_backwards):
    layer = getattr(layers, kind)(3, return_sequences=True, return_state=True,
                                  go_backwards=go_backwards, dtype="float64")
    spec = ef.TensorSpec([None, None, 2], ef.float64)

    @ef.function(input_signature=[spec])
    def run(x):
        return layer(x)

    x = randn(4, 7, 2)
    eager = layer(x)  # builds the weights; a static time dimension is unrolled
    assert _has_while(run)
    for steps in (7, 3, 1):  # one trace serves every length
        got = run(ef.constant(x[:, :steps]))
        want = layer(x[:, :steps])
        zeros = [np.zeros((4, 3))] * (2 if kind == "LSTM" else 1)
        ref_seq, ref_states = run_ref(reference, x[:, :steps], zeros, _weights(layer),
                                      go_backwards)
        np.testing.assert_allclose(got[0].numpy(), ref_seq, rtol=1e-10, atol=1e-12)
        for g, w, r in zip(got[1:], want[1:], ref_states):
            np.testing.assert_allclose(g.numpy(), r, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-14)
    assert len(eager) == len(got)
    assert run.get_concrete_function().structured_outputs[0].shape.as_list() == [None, None, 3]


@pytest.mark.parametrize("zero_output", [False, True])
def test_unknown_time_dimension_with_a_mask(zero_output):
    layer = layers.LSTM(3, return_sequences=True, zero_output_for_mask=zero_output,
                        dtype="float64")
    x = randn(3, 5, 2)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [0, 1, 1, 0, 1]], bool)
    layer(x)

    @ef.function(input_signature=[ef.TensorSpec([None, None, 2], ef.float64),
                                  ef.TensorSpec([None, None], ef.bool)])
    def run(x, mask):
        return layer(x, mask=mask)

    ref, _ = run_ref(lstm_step, x, [np.zeros((3, 3))] * 2, _weights(layer), mask=mask,
                     zero_output=zero_output)
    np.testing.assert_allclose(run(x, mask).numpy(), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(run(x, mask).numpy(), layer(x, mask=mask).numpy(), rtol=1e-12)


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
def test_unknown_time_dimension_gradients_equal_eager(kind):
    layer = getattr(layers, kind)(3, dtype="float64")
    x = ef.constant(randn(2, 4, 2))
    layer(x)

    def loss_and_grads(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            loss = ef.reduce_sum(layer(x) ** 2)
        return tape.gradient(loss, [x] + layer.trainable_weights)

    traced = ef.function(loss_and_grads,
                         input_signature=[ef.TensorSpec([None, None, 2], ef.float64)])
    assert _has_while(traced)
    for got, want in zip(traced(x), loss_and_grads(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    check_layer_gradients(layer, randn(2, 3, 2))  # float64 finite differences, eagerly


def test_functional_model_over_variable_length_sequences():
    """``Input(shape=(None, features))`` (TF's text-classification pattern): the model is
    built symbolically with an unknown time dimension; a training step traced for any
    length (a while_loop) updates the weights exactly as the eager (unrolled) step."""
    def build():
        inputs = ef.keras.Input(shape=(None, 3))
        h = layers.Masking()(inputs)
        h = layers.GRU(5, return_sequences=True)(h)
        h = layers.LSTM(4)(h)
        return ef.keras.Model(inputs, layers.Dense(1)(h))

    model, twin = build(), build()
    twin.set_weights(model.get_weights())
    assert model.layers[2].output.shape.as_list() == [None, None, 5]
    assert model.output_shape == (None, 1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 6, 3)).astype(np.float32)
    x[1, 4:] = 0.0  # padded steps, masked
    y = rng.normal(size=(4, 1)).astype(np.float32)

    def train_step(m, x, y):
        with ef.GradientTape() as tape:
            loss = ef.reduce_mean((m(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, m.trainable_weights)
        for v, g in zip(m.trainable_weights, grads):
            v.assign_sub(0.1 * g)
        return loss

    traced = ef.function(lambda x, y: train_step(model, x, y), input_signature=[
        ef.TensorSpec([None, None, 3], ef.float32), ef.TensorSpec([None, 1], ef.float32)])
    for steps in (6, 4, 6):
        got, want = traced(x[:, :steps], y), train_step(twin, x[:, :steps], y)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    for a, b in zip(model.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert traced.experimental_get_tracing_count() == 1  # one graph for every length
    np.testing.assert_allclose(model.predict(x[:, :2], verbose=0), twin(x[:, :2]).numpy(),
                               rtol=1e-5, atol=1e-6)
    model.compile(optimizer=ef.keras.optimizers.Adam(0.01), loss="mse")
    history = model.fit(x, y, epochs=15, batch_size=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
