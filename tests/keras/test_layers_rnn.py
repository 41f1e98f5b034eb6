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
