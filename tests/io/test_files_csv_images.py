"""read_file/write_file, gfile, decode_csv, TextLineDataset, CsvDataset, make_csv_dataset,
sampling datasets, and PNG/JPEG codecs."""

import json
import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors

REF = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "tf_reference")


def test_read_write_file_and_gfile(tmp_path):
    p = str(tmp_path / "sub" / "f.bin")
    ef.io.write_file(p, b"\x00data")
    assert ef.io.read_file(p).numpy() == b"\x00data"
    g = ef.io.gfile
    assert g.exists(p) and g.isdir(str(tmp_path / "sub"))
    g.makedirs(str(tmp_path / "a" / "b"))
    with g.GFile(str(tmp_path / "a" / "t.txt"), "w") as f:
        f.write("hello\nworld\n")
    with g.GFile(str(tmp_path / "a" / "t.txt")) as f:
        assert f.read() == "hello\nworld\n"
    assert g.listdir(str(tmp_path / "a")) == ["b", "t.txt"]
    assert g.glob(str(tmp_path / "a" / "*.txt")) == [str(tmp_path / "a" / "t.txt")]
    g.rename(str(tmp_path / "a" / "t.txt"), str(tmp_path / "a" / "u.txt"))
    with pytest.raises(errors.AlreadyExistsError):
        g.rename(str(tmp_path / "a" / "u.txt"), p)
    g.remove(str(tmp_path / "a" / "u.txt"))
    with pytest.raises(errors.NotFoundError):
        g.remove(str(tmp_path / "a" / "u.txt"))
    with pytest.raises(errors.NotFoundError):
        ef.io.read_file(str(tmp_path / "missing"))


def test_read_file_traces_in_a_function(tmp_path):
    p = str(tmp_path / "f.txt")
    ef.io.write_file(p, "abc")

    @ef.function
    def size(path):
        return ef.strings.length(ef.io.read_file(path))

    assert int(size(ef.constant(p))) == 3


def test_decode_csv():
    a, b, c = ef.io.decode_csv(['1,2.5,"a,b"', '3,,"say ""hi"""'],
                               record_defaults=[[0], [7.0], ["?"]])
    assert a.numpy().tolist() == [1, 3]
    assert b.numpy().tolist() == [2.5, 7.0]
    assert c.numpy().tolist() == [b"a,b", b'say "hi"']
    x, = ef.io.decode_csv(["1,2,3"], [[0]], select_cols=[2])
    assert x.numpy().tolist() == [3]
    with pytest.raises(errors.InvalidArgumentError, match="expected 2 fields"):
        ef.io.decode_csv(["1"], [[0], [0]])
    with pytest.raises(errors.InvalidArgumentError, match="required"):
        ef.io.decode_csv([","], [ef.constant([], ef.int32), [0]])
    with pytest.raises(errors.InvalidArgumentError, match="not a valid"):
        ef.io.decode_csv(["x"], [[0]])


def test_text_line_and_csv_datasets(tmp_path):
    p = str(tmp_path / "d.csv")
    with open(p, "w") as f:
        f.write("a,b,label\n1,x,0\n2,\"y,z\",1\r\n3,w,0\n")
    assert [x.numpy() for x in ef.data.TextLineDataset(p)][1:] == \
        [b"1,x,0", b'2,"y,z",1', b"3,w,0"]
    rows = [tuple(t.numpy() for t in r) for r in ef.data.experimental.CsvDataset(
        p, [[0], [""], [0]], header=True)]
    assert rows == [(1, b"x", 0), (2, b"y,z", 1), (3, b"w", 0)]
    ds = ef.data.experimental.make_csv_dataset(p, 2, label_name="label", num_epochs=1,
                                               shuffle=False)
    (f1, l1), (f2, l2) = list(ds)
    assert f1["a"].numpy().tolist() == [1, 2] and f1["b"].numpy().tolist() == [b"x", b"y,z"]
    assert l1.numpy().tolist() == [0, 1] and l2.numpy().tolist() == [0]


def test_sample_and_choose_from_datasets():
    a = ef.data.Dataset.from_tensor_slices([0] * 50)
    b = ef.data.Dataset.from_tensor_slices([1] * 50)
    got = [int(x) for x in ef.data.Dataset.sample_from_datasets([a, b], [0.8, 0.2], seed=3)]
    assert sorted(got) == [0] * 50 + [1] * 50  # exhausted inputs drop out, nothing is lost
    first = got[:40]
    assert 24 <= first.count(0) <= 39  # mostly from the 0.8 input early on
    chosen = ef.data.Dataset.choose_from_datasets(
        [ef.data.Dataset.range(3), ef.data.Dataset.range(10, 13)],
        ef.data.Dataset.from_tensor_slices(ef.constant([1, 0, 1, 1], ef.int64)))
    assert [int(x) for x in chosen] == [10, 0, 11, 12]
    with pytest.raises(errors.InvalidArgumentError, match="weights"):
        ef.data.Dataset.sample_from_datasets([a, b], [1.0, -1.0])


def test_png_and_jpeg_round_trip():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    png = ef.io.encode_png(img)
    np.testing.assert_array_equal(ef.io.decode_png(png).numpy(), img)  # PNG is lossless
    assert ef.io.decode_png(png, channels=1).shape == (5, 7, 1)
    assert ef.io.decode_image(png, dtype=ef.float32).numpy().max() <= 1.0
    smooth = np.tile(np.linspace(0, 255, 16, dtype=np.uint8)[None, :, None], (16, 1, 3))
    jpg = ef.io.encode_jpeg(smooth, quality=95)
    back = ef.io.decode_jpeg(jpg).numpy()
    assert back.shape == (16, 16, 3) and np.abs(back.astype(int) - smooth).max() < 12
    np.testing.assert_array_equal(ef.io.decode_image(jpg).numpy(), back)
    gray = ef.io.encode_png(img[:, :, :1])
    assert ef.io.decode_png(gray).shape == (5, 7, 1)
    with pytest.raises(errors.InvalidArgumentError, match="not a valid"):
        ef.io.decode_png(b"\x89PNG\r\n\x1a\nnot really")


def test_string_ops_match_values_recorded_with_tf():
    ref = json.load(open(os.path.join(REF, "tf_values.json")))["strings"]
    assert ef.strings.to_hash_bucket_fast(ref["hash_words"], 2**62).numpy().tolist() == \
        ref["hash_buckets"]
    assert ef.strings.format("tensor: {}", ef.range(10)).numpy().decode() == \
        ref["format_range"]
    assert ef.strings.format("{}", ef.constant([1.5, 2.0])).numpy().decode() == \
        ref["format_float"]
    assert ef.strings.format("{}", ef.constant([[1, 2], [3, 4]])).numpy().decode() == \
        ref["format_2d"]
    assert ef.strings.format("{}", ef.constant(["a", "b"])).numpy().decode() == \
        ref["format_string"]
    assert ef.strings.format("{}", ef.constant("s")).numpy().decode() == \
        ref["format_scalar_string"]
    assert [s.decode() for s in ef.strings.as_string([1.5, -2.25]).numpy()] == \
        ref["as_string"]
    assert [s.decode() for s in ef.strings.as_string([-40, 3], width=5, fill="0").numpy()] \
        == ref["as_string_width"]
    assert [s.decode() for s in ef.strings.ngrams(["a", "b"], 3, pad_values=("<", ">"))
            .numpy()] == ref["ngrams_pad"]
    assert ef.strings.split(["  a  b ", ""]).to_list() == \
        [[w.encode() for w in row] for row in ref["split_ws"]]
    assert ef.strings.unicode_decode(b"a\xffb\xe2\x82", "UTF-8").numpy().tolist() == \
        ref["unicode_bad"]
