"""Summaries read back with TensorBoard's own event reader."""

import glob
import os
import struct
import zlib

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.summary import records

tb = pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import event_file_loader  # noqa: E402
from tensorboard.backend.event_processing import (  # noqa: E402
    plugin_event_accumulator as pea,
)
from tensorboard.util import tensor_util  # noqa: E402


def _accumulate(logdir):
    acc = pea.EventAccumulator(logdir, size_guidance={"tensors": 0})
    acc.Reload()
    return acc


def _tensors(acc, tag):
    return [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]


def _crc32c_reference(data):
    # Bitwise CRC32C, independent of the table-driven implementation.
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_crc32c_known_values():
    assert records.crc32c(b"123456789") == 0xE3069283  # the standard check value
    assert records.crc32c(b"") == 0
    data = bytes(range(256)) * 3
    assert records.crc32c(data) == _crc32c_reference(data)
    assert records.crc32c(data[100:], records.crc32c(data[:100])) == records.crc32c(data)


def test_scalars_read_by_tensorboard(tmp_path):
    writer = ef.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        for step in range(5):
            assert bool(ef.summary.scalar("loss", 1.0 / (step + 1), step=step))
        ef.summary.scalar("acc", ef.constant(0.75), step=ef.constant(9, ef.int64))
    writer.close()
    acc = _accumulate(str(tmp_path))
    assert set(acc.PluginTagToContent("scalars")) == {"loss", "acc"}
    got = _tensors(acc, "loss")
    assert [s for s, _ in got] == list(range(5))
    np.testing.assert_allclose([float(v) for _, v in got], [1.0 / (s + 1) for s in range(5)],
                               rtol=1e-6)
    assert _tensors(acc, "acc")[0][0] == 9


def test_histogram_image_text_graph(tmp_path):
    data = np.random.default_rng(0).normal(size=1000)
    images = np.random.default_rng(1).uniform(size=(4, 5, 6, 3)).astype(np.float32)
    f = ef.function(lambda x: ef.tanh(x) * 2.0)
    concrete = f.get_concrete_function(ef.TensorSpec([3]))
    writer = ef.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=3):
        ef.summary.histogram("w", ef.constant(data), buckets=12)
        ef.summary.image("img", ef.constant(images), max_outputs=2)
        ef.summary.text("note", "hello **world**")
        ef.summary.graph(concrete)
    writer.close()
    acc = _accumulate(str(tmp_path))
    (step, hist), = _tensors(acc, "w")
    assert step == 3 and hist.shape == (12, 3)
    counts, edges = np.histogram(data, bins=12, range=(data.min(), data.max()))
    np.testing.assert_allclose(hist[:, 0], edges[:-1])
    np.testing.assert_allclose(hist[:, 1], edges[1:])
    np.testing.assert_array_equal(hist[:, 2], counts)
    assert "w" in acc.PluginTagToContent("histograms")

    (step, content), = _tensors(acc, "img")
    assert step == 3 and content.shape == (4,)  # width, height, two PNGs
    assert (content[0], content[1]) == (b"6", b"5")
    expected = np.clip(images[:2] * 255.5, 0, 255).astype(np.uint8)
    for k in range(2):
        np.testing.assert_array_equal(_decode_png(content[2 + k]), expected[k])
    assert "img" in acc.PluginTagToContent("images")

    (step, note), = _tensors(acc, "note")
    assert note.item() == b"hello **world**"
    assert "note" in acc.PluginTagToContent("text")

    graph_def = acc.Graph()
    nodes = {n.name: n for n in graph_def.node}
    assert {"x", "tanh", "mul"} <= set(nodes)
    assert nodes["tanh"].op == "Tanh" and list(nodes["tanh"].input) == ["x"]
    assert nodes["mul"].attr["_output_shapes"].list.shape[0].dim[0].size == 3


def _decode_png(blob):
    # Minimal decoder for the unfiltered 8-bit PNGs the encoder writes.
    assert blob[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(blob):
        (length,) = struct.unpack(">I", blob[pos:pos + 4])
        kind = blob[pos + 4:pos + 8]
        body = blob[pos + 8:pos + 8 + length]
        assert struct.unpack(">I", blob[pos + 8 + length:pos + 12 + length])[0] == \
            zlib.crc32(kind + body)
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, _, color, *_ = header
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, channels)


def test_event_file_crc_verified_by_tensorboard(tmp_path):
    writer = ef.summary.create_file_writer(str(tmp_path), filename_suffix=".v2")
    with writer.as_default(step=1):
        ef.summary.scalar("x", 2.0)
    writer.close()
    path, = glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*.v2"))
    events = list(event_file_loader.EventFileLoader(path).Load())
    assert events[0].file_version == "brain.Event:2"
    assert events[1].summary.value[0].tag == "x"
    raw = list(event_file_loader.RawEventFileLoader(path).Load())
    assert list(records.read_records(path)) == raw and len(raw) == 2
    # Flip one byte of the last record's data: both readers must refuse it.
    blob = bytearray(open(path, "rb").read())
    blob[-6] ^= 0xFF
    bad = os.path.join(str(tmp_path), "bad", os.path.basename(path))
    os.makedirs(os.path.dirname(bad))
    open(bad, "wb").write(bytes(blob))
    with pytest.raises(ef.errors.DataLossError, match="corrupted record data"):
        list(records.read_records(bad))
    # TensorBoard's loader stops at (and logs) a record whose checksum fails.
    assert len(list(event_file_loader.EventFileLoader(bad).Load())) == 1


def test_step_semantics(tmp_path):
    writer = ef.summary.create_file_writer(str(tmp_path))
    assert ef.summary.experimental.get_step() is None
    with writer.as_default():
        with pytest.raises(ValueError, match="no step set"):
            ef.summary.scalar("x", 1.0)
        ef.summary.experimental.set_step(4)
        ef.summary.scalar("x", 1.0)
        step = ef.Variable(10, dtype=ef.int64)
        with writer.as_default(step=step):
            ef.summary.scalar("x", 2.0)
            step.assign_add(1)
            ef.summary.scalar("x", 3.0)
        assert ef.summary.experimental.get_step() == 4
        with pytest.raises(ValueError, match="scalar integer"):
            ef.summary.scalar("x", 1.0, step=1.5)
        with pytest.raises(ValueError, match="must be a scalar"):
            ef.summary.scalar("x", [1.0, 2.0], step=1)
    ef.summary.experimental.set_step(None)
    writer.close()
    acc = _accumulate(str(tmp_path))
    assert [(s, float(v)) for s, v in _tensors(acc, "x")] == [(4, 1.0), (10, 2.0), (11, 3.0)]


def test_no_writer_and_record_if(tmp_path):
    assert not bool(ef.summary.scalar("x", 1.0))  # no default writer: no error, nothing
    writer = ef.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=0):
        with ef.summary.record_if(False):
            assert not ef.summary.should_record_summaries()
            assert not bool(ef.summary.scalar("x", 1.0))
        with ef.summary.record_if(lambda: True):
            assert bool(ef.summary.scalar("y", 1.0))
    writer.close()
    acc = _accumulate(str(tmp_path))
    assert set(acc.PluginTagToContent("scalars")) == {"y"}
    with pytest.raises(ValueError, match="closed"):
        with writer.as_default(step=0):
            ef.summary.scalar("z", 1.0)


def test_flush_and_queue(tmp_path):
    writer = ef.summary.create_file_writer(str(tmp_path), max_queue=100, flush_millis=10 ** 6)
    with writer.as_default(step=0):
        ef.summary.scalar("a", 1.0)
        assert len(list(records.read_records(writer.path))) == 1  # only the version event
        ef.summary.flush()
        assert len(list(records.read_records(writer.path))) == 2
    writer.close()


def test_trace_on_export_records_function_graphs(tmp_path):
    @ef.function
    def f(x):
        return ef.square(x) + 1.0

    ef.summary.trace_on(graph=True)
    f(ef.ones([2]))
    writer = ef.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        assert bool(ef.summary.trace_export("f_trace", step=2))
    writer.close()
    acc = _accumulate(str(tmp_path))
    ops = {n.op for n in acc.Graph().node}
    assert "Placeholder" in ops and len(ops) >= 2
    with pytest.raises(ValueError, match="no trace is on"):
        ef.summary.trace_export("again", step=0)


def test_summary_inside_function_warns_and_writes_nothing(tmp_path):
    writer = ef.summary.create_file_writer(str(tmp_path))

    @ef.function
    def f(x):
        ef.summary.scalar("inside", ef.reduce_sum(x), step=0)
        return x * 2.0

    with writer.as_default(step=0):
        with pytest.warns(UserWarning, match="traced function"):
            f(ef.ones([2]))
    writer.close()


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="logdir"):
        ef.summary.create_file_writer("")
    with pytest.raises(ValueError, match="max_queue"):
        ef.summary.create_file_writer(str(tmp_path), max_queue=0)
    with ef.summary.create_file_writer(str(tmp_path)).as_default(step=0):
        with pytest.raises(ValueError, match="channels|c in"):
            ef.summary.image("img", np.zeros((2, 3, 3, 2), np.float32))
        with pytest.raises(ValueError, match="buckets"):
            ef.summary.histogram("h", [1.0], buckets=0)
        with pytest.raises(ValueError, match="get_concrete_function"):
            ef.summary.graph(ef.function(lambda x: x))


def test_keras_tensorboard_callback(tmp_path):
    from eagerflow.keras.callbacks.tensorboard import TensorBoard

    ef.random.set_seed(0)
    model = ef.keras.Sequential([ef.keras.layers.Dense(1, name="dense")])
    model.compile("sgd", "mse", metrics=["mae"])
    x = np.random.default_rng(0).normal(size=(8, 2)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    cb = TensorBoard(str(tmp_path), histogram_freq=1, update_freq=2)
    assert isinstance(cb, ef.keras.callbacks.Callback)
    history = model.fit(x, y, batch_size=2, epochs=2, verbose=0, callbacks=[cb],
                        validation_data=(x[:4], y[:4]))
    train = _accumulate(str(tmp_path / "train"))
    val = _accumulate(str(tmp_path / "validation"))
    epoch_loss = _tensors(train, "epoch_loss")
    assert [s for s, _ in epoch_loss] == [0, 1]
    np.testing.assert_allclose([float(v) for _, v in epoch_loss], history.history["loss"],
                               rtol=1e-6)
    np.testing.assert_allclose([float(v) for _, v in _tensors(val, "epoch_mae")],
                               history.history["val_mae"], rtol=1e-6)
    assert [s for s, _ in _tensors(train, "batch_loss")] == [2, 4, 6, 8]
    # Tags are the weights' names with ":" made "_" (dense/kernel_0, as tf.keras writes).
    tags = {w.name.replace(":", "_") for w in model.weights}
    assert len(tags) == 2 and all(t.startswith("dense/") for t in tags)
    assert tags == set(train.PluginTagToContent("histograms"))
    assert len(train.Graph().node) > 0
    assert [s for s, _ in _tensors(val, "evaluation_loss_vs_iterations")] == [4, 8]
    with pytest.raises(ValueError, match="update_freq"):
        TensorBoard(str(tmp_path), update_freq="sometimes")
