"""The tensor bundle format: round trips and every kind of bad file."""

import hashlib
import json
import os
import pickle
import struct

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.io import atomic, bundle


def _write(tmp_path, tensors, name="b.efb"):
    return bundle.write(str(tmp_path / name), tensors, metadata={"note": "x"})


def test_round_trip_dtypes_and_shapes(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "f32": rng.normal(size=(3, 4)).astype("float32"),
        "f64/scalar": np.float64(3.5),
        "i8": np.arange(-5, 5, dtype="int8"),
        "u16": np.arange(7, dtype="uint16").reshape(7, 1),
        "b": np.array([True, False]),
        "c128": np.array([1 + 2j]),
        "empty": np.zeros((0, 3), "float32"),
        "bf16": ef.constant([1.5, -2.0], dtype=ef.bfloat16).numpy(),
        "var": ef.Variable([[1.0, 2.0]]),
    }
    path = _write(tmp_path, tensors)
    reader = bundle.BundleReader(path)
    assert reader.keys() == list(tensors) and reader.metadata == {"note": "x"}
    for key, value in tensors.items():
        expected = np.asarray(value)
        got = reader.read(key)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()
    # The data section is aligned and the file has exactly the described size.
    assert os.path.getsize(path) % 64 in range(64)
    assert not [n for n in os.listdir(tmp_path) if atomic.is_temporary(n)]


def test_rejects_object_and_string_arrays(tmp_path):
    with pytest.raises(ef.errors.InvalidArgumentError, match="'o'.*not storable"):
        _write(tmp_path, {"o": np.array([{"a": 1}], dtype=object)})
    with pytest.raises(ef.errors.InvalidArgumentError, match="Duplicate"):
        _write(tmp_path, [("a", np.zeros(1)), ("a", np.zeros(1))])
    assert not os.path.exists(tmp_path / "b.efb")


def test_expected_dtype_and_shape_mismatch(tmp_path):
    reader = bundle.BundleReader(_write(tmp_path, {"w": np.zeros((2, 3), "float32")}))
    with pytest.raises(ef.errors.InvalidArgumentError, match=r"'w'.*b\.efb.*shape \[2, 3\]"):
        reader.read("w", shape=(3, 2))
    with pytest.raises(ef.errors.InvalidArgumentError, match="'w'.*float32.*float64"):
        reader.read("w", dtype="float64")
    with pytest.raises(ef.errors.NotFoundError, match="'nope'.*b.efb"):
        reader.read("nope")
    with pytest.raises(ef.errors.NotFoundError, match="missing.efb"):
        bundle.BundleReader(str(tmp_path / "missing.efb"))


def test_truncated_file_at_every_region(tmp_path):
    path = _write(tmp_path, {"a": np.arange(100.0), "b": np.ones(7, "int32")})
    data = open(path, "rb").read()
    for cut in (0, 5, 20, 60, len(data) // 2, len(data) - 1):
        bad = str(tmp_path / ("cut%d.efb" % cut))
        open(bad, "wb").write(data[:cut])
        with pytest.raises(ef.errors.DataLossError, match="cut%d.efb" % cut):
            bundle.read(bad)


def _header_end(data):
    _, length, _ = struct.unpack("<8sQ32s", data[:48])
    return 48 + length


def test_bit_flips_are_detected_everywhere(tmp_path):
    path = _write(tmp_path, {"a": np.arange(64.0), "b": np.arange(9, dtype="int16")})
    data = bytearray(open(path, "rb").read())
    end = _header_end(data)
    # Every byte of the header and of the tensors, one bit at a time (padding excluded).
    positions = list(range(0, end)) + list(range(len(data) - 600, len(data)))
    flipped = 0
    for i in positions[::7]:
        bad = bytearray(data)
        bad[i] ^= 1 << (i % 8)
        p = str(tmp_path / "flip.efb")
        open(p, "wb").write(bytes(bad))
        try:
            values = bundle.read(p)
        except ef.errors.DataLossError as exc:
            assert "flip.efb" in str(exc)
            flipped += 1
            continue
        # A flip in alignment padding is harmless: the tensors must still be intact.
        assert values["a"].tolist() == list(np.arange(64.0))
        assert values["b"].tolist() == list(range(9))
    assert flipped > 0.9 * len(positions[::7])
    bad = bytearray(data)
    bad[-1] ^= 0x10
    open(p, "wb").write(bytes(bad))
    with pytest.raises(ef.errors.DataLossError, match="'b' fails its sha256"):
        bundle.read(p)


def _rewrite_header(path, out, edit):
    data = open(path, "rb").read()
    end = _header_end(data)
    header = json.loads(data[48:end])
    edit(header)
    raw = json.dumps(header, sort_keys=True).encode()
    start = (48 + len(raw) + 63) // 64 * 64
    old_start = (end + 63) // 64 * 64
    blob = (struct.pack("<8sQ32s", b"EFBUNDLE", len(raw), hashlib.sha256(raw).digest()) + raw
            + b"\0" * (start - 48 - len(raw)) + data[old_start:])
    open(out, "wb").write(blob)
    return out


def test_wrong_version_and_wrong_shape(tmp_path):
    path = _write(tmp_path, {"w": np.zeros((2, 3), "float32")})
    v2 = _rewrite_header(path, str(tmp_path / "v2.efb"), lambda h: h.update(version=2))
    with pytest.raises(ef.errors.FailedPreconditionError, match="v2.efb.*version 2"):
        bundle.read(v2)

    def reshape(h):
        h["tensors"][0]["shape"] = [3, 3]

    bad = _rewrite_header(path, str(tmp_path / "shape.efb"), reshape)
    with pytest.raises(ef.errors.DataLossError, match="'w' is 24 bytes.*need 36"):
        bundle.read(bad)
    # A consistent file whose shape differs from the variable: a clear restore error.
    m = ef.Module()
    m.w = ef.Variable(np.zeros((3, 2), "float32"))
    ckpt = ef.train.Checkpoint(m=m)
    prefix = ckpt.write(str(tmp_path / "ck"))
    m2 = ef.Module()
    m2.w = ef.Variable(np.ones((2, 3), "float32"))
    with pytest.raises(ef.errors.InvalidArgumentError,
                       match=r"ck.*'m/w/\.ATTRIBUTES/VARIABLE_VALUE'.*\[3, 2\].*\[2, 3\]"):
        ef.train.Checkpoint(m=m2).read(prefix)
    assert m2.w.numpy().tolist() == [[1.0] * 3] * 2


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_pickle_payload_is_never_unpickled(tmp_path, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("pickle must never be called while loading")

    payload = pickle.dumps(_Boom())
    path = _write(tmp_path, {"w": np.zeros(len(payload), "uint8")})
    for name in ("loads", "load", "Unpickler"):
        monkeypatch.setattr(pickle, name, forbidden)
    monkeypatch.setattr(np, "load", forbidden)

    # 1. The pickle bytes stored where the tensor was: checksum mismatch.
    data = bytearray(open(path, "rb").read())
    data[len(data) - len(payload):] = payload
    evil = str(tmp_path / "evil1.efb")
    open(evil, "wb").write(bytes(data))
    with pytest.raises(ef.errors.DataLossError, match="'w' fails its sha256"):
        bundle.read(evil)

    # 2. A crafted header that declares an object dtype with a matching checksum.
    def objectify(h):
        h["tensors"][0]["dtype"] = "object"
        h["tensors"][0]["sha256"] = hashlib.sha256(payload).hexdigest()

    open(path, "wb").write(bytes(data))
    evil2 = _rewrite_header(path, str(tmp_path / "evil2.efb"), objectify)
    with pytest.raises(ef.errors.DataLossError, match="'w' has dtype 'object'.*no pickle"):
        bundle.read(evil2)

    # 3. A bare pickle file, or a .npy holding objects, handed to the reader.
    evil3 = str(tmp_path / "evil3.efckpt")
    open(evil3, "wb").write(payload)
    with pytest.raises(ef.errors.DataLossError, match="magic"):
        ef.train.Checkpoint(v=ef.Variable(0.0)).restore(str(tmp_path / "evil3"))


def test_atomic_open_leaves_old_file_on_error(tmp_path):
    path = str(tmp_path / "f")
    atomic.write_bytes(path, b"old")
    with pytest.raises(RuntimeError):
        with atomic.atomic_open(path) as f:
            f.write(b"half")
            raise RuntimeError("crash")
    assert open(path, "rb").read() == b"old"
    assert os.listdir(tmp_path) == ["f"]
    open(tmp_path / ".f.tmp-1-ab", "wb").close()
    assert atomic.remove_temporaries(str(tmp_path)) == [".f.tmp-1-ab"]
