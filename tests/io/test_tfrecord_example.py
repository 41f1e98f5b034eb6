"""TFRecord framing and Examples: byte-for-byte framing, files written by real TensorFlow
(tests/data/tf_reference, recorded by scripts/record_tf_reference.py), compression, and
bounded validated reads of damaged files."""

import json
import os
import struct

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.io import tfrecord

REF = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "tf_reference")
VALUES = json.load(open(os.path.join(REF, "tf_values.json")))


def _crc32c_bitwise(data):
    """CRC32C one bit at a time, straight from the polynomial (independent of the tables)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _masked(data):
    c = _crc32c_bitwise(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c_matches_the_definition_on_every_path():
    rng = np.random.default_rng(0)
    assert tfrecord.crc32c(b"123456789") == 0xE3069283
    for n in (0, 1, 63, 64, 255, 256, 257, 1000, 4097):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert tfrecord.crc32c(data) == _crc32c_bitwise(data), n


def test_written_file_is_tf_framing_byte_for_byte(tmp_path):
    path = str(tmp_path / "x.tfrecord")
    payloads = [b"", b"a", b"hello world" * 50]
    with ef.io.TFRecordWriter(path) as w:
        for p in payloads:
            w.write(p)
    want = b"".join(struct.pack("<Q", len(p)) + struct.pack("<I", _masked(struct.pack(
        "<Q", len(p)))) + p + struct.pack("<I", _masked(p)) for p in payloads)
    got = open(path, "rb").read()
    assert got == want
    # ... and identical to the file TensorFlow wrote for the same payloads.
    assert got == open(os.path.join(REF, "raw.tfrecord"), "rb").read()


@pytest.mark.parametrize("name,compression", [("examples.tfrecord", None),
                                              ("examples.tfrecord.gz", "GZIP")])
def test_reads_examples_written_by_tensorflow(name, compression):
    ds = ef.data.TFRecordDataset(os.path.join(REF, name), compression_type=compression)
    records = [r.numpy() for r in ds]
    assert len(records) == 4
    spec = {"id": ef.io.FixedLenFeature([2], ef.int64),
            "score": ef.io.FixedLenFeature([], ef.float32),
            "name": ef.io.FixedLenFeature([2], ef.string),
            "tags": ef.io.VarLenFeature(ef.int64)}
    one = ef.io.parse_single_example(records[2], spec)
    assert one["id"].numpy().tolist() == [2, -2000]
    assert one["name"].numpy().tolist() == [b"ex2", "\u00e9".encode()]
    assert one["tags"].values.numpy().tolist() == [0, 1]
    batch = ef.io.parse_example(np.array(records, dtype=object), spec)
    ref = VALUES["records"]
    assert batch["id"].numpy().tolist() == ref["id"]
    assert batch["score"].numpy().tolist() == ref["score"]
    assert batch["tags"].indices.numpy().tolist() == ref["tags_indices"]
    assert batch["tags"].values.numpy().tolist() == ref["tags_values"]
    assert batch["tags"].dense_shape.numpy().tolist() == ref["tags_shape"]


def test_examples_written_here_parse_back_and_compress(tmp_path):
    for compression in (None, "GZIP", "ZLIB"):
        path = str(tmp_path / ("e-%s" % compression))
        with ef.io.TFRecordWriter(path, compression) as w:
            for i in range(3):
                ex = ef.train.Example(features=ef.train.Features(feature={
                    "x": ef.train.Feature(float_list=ef.train.FloatList(value=[i, i + 0.5])),
                    "s": ef.train.Feature(bytes_list=ef.train.BytesList(value=[b"v%d" % i]))}))
                w.write(ex.SerializeToString())
        ds = ef.data.TFRecordDataset(path, compression_type=compression).map(
            lambda r: ef.io.parse_single_example(r, {
                "x": ef.io.FixedLenFeature([2], ef.float32),
                "s": ef.io.FixedLenFeature([], ef.string),
                "missing": ef.io.FixedLenFeature([], ef.int64, default_value=-1)}))
        got = [(e["x"].numpy().tolist(), e["s"].numpy(), int(e["missing"])) for e in ds]
        assert got == [([i, i + 0.5], b"v%d" % i, -1) for i in range(3)]


def test_serialize_tensor_is_tf_wire_format():
    ref = VALUES["records"]
    assert ef.io.serialize_tensor(ef.constant([[1, 2], [3, 4]])).numpy().hex() == \
        ref["serialized_tensor_int32"]
    assert ef.io.serialize_tensor(ef.constant(["a", "bc"])).numpy().hex() == \
        ref["serialized_tensor_string"]
    back = ef.io.parse_tensor(bytes.fromhex(ref["serialized_tensor_int32"]), ef.int32)
    assert back.numpy().tolist() == [[1, 2], [3, 4]]
    for t in (ef.constant([1.5, -2.0], ef.float64), ef.constant([[True, False]]),
              ef.constant(np.arange(6, dtype=np.uint8).reshape(2, 3))):
        np.testing.assert_array_equal(
            ef.io.parse_tensor(ef.io.serialize_tensor(t), t.dtype).numpy(), t.numpy())
    with pytest.raises(errors.InvalidArgumentError, match="dtype"):
        ef.io.parse_tensor(ef.io.serialize_tensor(ef.constant([1])), ef.float32)


def test_parse_errors_are_clear():
    ex = ef.train.Example(features=ef.train.Features(feature={
        "x": ef.train.Feature(int64_list=ef.train.Int64List(value=[1, 2, 3]))}))
    data = ex.SerializeToString()
    with pytest.raises(errors.InvalidArgumentError, match="needs 2"):
        ef.io.parse_single_example(data, {"x": ef.io.FixedLenFeature([2], ef.int64)})
    with pytest.raises(errors.InvalidArgumentError, match="float32"):
        ef.io.parse_single_example(data, {"x": ef.io.FixedLenFeature([3], ef.float32)})
    with pytest.raises(errors.InvalidArgumentError, match="required"):
        ef.io.parse_single_example(data, {"y": ef.io.FixedLenFeature([], ef.int64)})
    with pytest.raises(errors.DataLossError):
        ef.io.parse_single_example(b"\xff\xff\xff", {"x": ef.io.VarLenFeature(ef.int64)})


def _write(tmp_path, payloads):
    path = str(tmp_path / "f.tfrecord")
    with ef.io.TFRecordWriter(path) as w:
        for p in payloads:
            w.write(p)
    return path


def test_damaged_files_raise_data_loss(tmp_path):
    path = _write(tmp_path, [b"abc" * 10, b"def"])
    blob = open(path, "rb").read()
    cases = {
        "truncated data": blob[:-6],
        "truncated header": blob + b"\x01\x02",
        "flipped data byte": blob[:14] + bytes([blob[14] ^ 1]) + blob[15:],
        "flipped length": bytes([blob[0] ^ 4]) + blob[1:],
    }
    # A length whose checksum is valid but that claims more bytes than the file holds is
    # refused before anything is allocated.
    huge = struct.pack("<Q", 1 << 40)
    cases["huge length"] = huge + struct.pack("<I", _masked(huge)) + b"x" * 8
    for what, data in cases.items():
        bad = str(tmp_path / "bad.tfrecord")
        open(bad, "wb").write(data)
        with pytest.raises(errors.DataLossError):
            list(ef.data.TFRecordDataset(bad))
        assert what
    with pytest.raises(errors.NotFoundError):
        list(ef.data.TFRecordDataset(str(tmp_path / "nope")))


def test_failed_write_leaves_no_file(tmp_path):
    path = str(tmp_path / "never.tfrecord")
    with pytest.raises(RuntimeError):
        with ef.io.TFRecordWriter(path) as w:
            w.write(b"x")
            raise RuntimeError("stop")
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_not_blocked_on(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    with pytest.raises(errors.InvalidArgumentError, match="FIFO"):
        list(ef.data.TFRecordDataset(fifo))
    with pytest.raises(errors.InvalidArgumentError, match="FIFO"):
        ef.io.read_file(fifo)
    with pytest.raises(errors.InvalidArgumentError, match="FIFO"):
        list(ef.data.TextLineDataset(fifo))
