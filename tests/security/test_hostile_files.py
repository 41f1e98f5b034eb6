"""Hostile files for every loader: overflowing sizes, deep JSON, zip bombs, FIFOs, devices,
symlinks pointing out of a saved directory, and checkpoint state naming paths outside its
directory. Loads run in a child process under RLIMIT_AS with a timeout: each must raise a
clear eagerflow error (or a documented ValueError/OSError) quickly and without allocating
what the file declares."""

import hashlib
import json
import os
import shutil
import struct
import zipfile

import numpy as np

import eagerflow as ef
from eagerflow import keras
from eagerflow.function import serialize
from eagerflow.io import bundle
from eagerflow.keras.models import weights_format as wf
from tests.security.hostile import assert_safe, record, run_cases

MEMORY_MB = 1536  # far below what any declared size in these files would need


def _bundle_with_header(header, data=b""):
    raw = json.dumps(header).encode()
    prefix = struct.pack("<8sQ32s", bundle.MAGIC, len(raw), hashlib.sha256(raw).digest())
    head = prefix + raw
    return head + b"\0" * ((-len(head)) % 64) + data


def _bundle_cases(tmp):
    cases = {}
    entry = {"key": "w", "dtype": "float32", "shape": [2**62, 4], "offset": 0, "length": 0,
             "sha256": hashlib.sha256(b"").hexdigest()}
    header = {"format": "eagerflow.bundle", "version": 1, "data_length": 0, "metadata": {},
              "tensors": [entry]}
    cases["bundle: shape [2**62, 4], no bytes"] = _bundle_with_header(header)
    cases["bundle: a 2**70 dimension"] = _bundle_with_header(
        dict(header, tensors=[dict(entry, shape=[2**70])]))
    cases["bundle: length 2**62 beyond the data"] = _bundle_with_header(
        dict(header, tensors=[dict(entry, shape=[2**60], length=2**62)]))
    prefix = struct.pack("<8sQ32s", bundle.MAGIC, 2**40, b"\0" * 32)
    cases["bundle: header length 2**40"] = prefix + b"{}"
    cases["bundle: header length 2**64-1"] = struct.pack(
        "<8sQ32s", bundle.MAGIC, 2**64 - 1, b"\0" * 32)
    deep = b"[" * 200000 + b"]" * 200000
    cases["bundle: JSON nested 200000 deep"] = struct.pack(
        "<8sQ32s", bundle.MAGIC, len(deep), hashlib.sha256(deep).digest()) + deep
    cases["bundle: header is a list"] = _bundle_with_header([1, 2])
    cases["bundle: tensors is a dict"] = _bundle_with_header(dict(header, tensors={"a": 1}))
    cases["bundle: object dtype"] = _bundle_with_header(
        dict(header, tensors=[dict(entry, dtype="object", shape=[1])]))
    cases["bundle: shape with a float"] = _bundle_with_header(
        dict(header, tensors=[dict(entry, shape=[1.5])]))
    out = []
    for k, (name, data) in enumerate(cases.items()):
        path = tmp / ("b%d.efb" % k)
        path.write_bytes(data)
        out.append({"name": name, "path": str(path), "code": """
from eagerflow.io import bundle
bundle.read(PATH)
"""})
    return out


def _legacy_cases(tmp):
    def legacy(header, data=b"", length=None):
        raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
        head = wf.MAGIC + struct.pack("<Q", len(raw) if length is None else length) + raw
        return head + b"\0" * ((-len(head)) % 64) + data

    entry = {"name": "w", "dtype": "float32", "shape": [2**62, 4], "offset": 0, "nbytes": 0,
             "sha256": hashlib.sha256(b"").hexdigest()}
    header = {"format": "eagerflow.weights", "version": 1, "data_bytes": 0, "metadata": {},
              "tensors": [entry]}
    cases = {
        "legacy weights: shape [2**62, 4], no bytes": legacy(header),
        "legacy weights: header length 2**40": legacy(b"{}", length=2**40),
        "legacy weights: data_bytes 2**62": legacy(dict(header, data_bytes=2**62)),
        "legacy weights: JSON nested 200000 deep": legacy(b"[" * 200000 + b"]" * 200000),
        "legacy weights: header is a list": legacy([1]),
        "legacy weights: entry without fields": legacy(dict(header, tensors=[{}])),
        "legacy weights: string dtype": legacy(dict(header, tensors=[dict(
            entry, dtype="string", shape=[0])])),
        "legacy weights: a 2**70 dimension": legacy(dict(header, tensors=[dict(
            entry, shape=[2**70])])),
    }
    out = []
    for k, (name, data) in enumerate(cases.items()):
        path = tmp / ("l%d.bin" % k)
        path.write_bytes(data)
        out.append({"name": name, "path": str(path), "code": """
from eagerflow.keras.models import weights_format as wf
wf.read_file(PATH)
"""})
    return out


def _small_model():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="d")])


def _keras_cases(tmp):
    base = tmp / "base.keras"
    _small_model().save(str(base))
    with zipfile.ZipFile(base) as z:
        members = {n: z.read(n) for n in z.namelist()}
    out = []

    def add(name, path, code="ef.keras.models.load_model(PATH)"):
        out.append({"name": name, "path": str(path), "code": code})

    bomb = tmp / "bomb.keras"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("metadata.json", members["metadata.json"])
        with z.open("config.json", "w", force_zip64=True) as f:
            block = b" " * (1 << 20)
            for _ in range(1024):  # 1 GiB of whitespace: valid JSON around it
                f.write(block)
        z.writestr("model.weights", members["model.weights"])
    assert bomb.stat().st_size < 4 << 20
    add(".keras: config.json inflating to 1 GiB", bomb)
    add(".keras: zip bomb through load_weights", bomb,
        "m = ef.keras.Sequential([ef.keras.Input((3,)), ef.keras.layers.Dense(2)])\n"
        "m.load_weights(PATH)")
    weights_bomb = tmp / "wbomb.keras"
    with zipfile.ZipFile(weights_bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("config.json", members["config.json"])
        with z.open("model.weights", "w", force_zip64=True) as f:
            for _ in range(1024):
                f.write(b"\0" * (1 << 20))
    add(".keras: model.weights inflating to 1 GiB", weights_bomb)
    deep = tmp / "deep.keras"
    with zipfile.ZipFile(deep, "w") as z:
        z.writestr("config.json", b"[" * 100000 + b"]" * 100000)
        z.writestr("model.weights", members["model.weights"])
    add(".keras: config nested 100000 deep", deep)
    wide = tmp / "notdict.keras"
    with zipfile.ZipFile(wide, "w") as z:
        z.writestr("config.json", b"[1, 2, 3]")
        z.writestr("model.weights", members["model.weights"])
    add(".keras: config is a list", wide)
    lying = tmp / "lying.keras"
    data = bytearray(base.read_bytes())
    # Declare a huge uncompressed size in the central directory entry of config.json.
    at = data.rfind(b"PK\x01\x02", 0, data.rfind(b"config.json"))
    struct.pack_into("<I", data, at + 24, 0xFFFFFFF0)
    lying.write_bytes(bytes(data))
    add(".keras: member declaring 4 GiB", lying)
    garbage = tmp / "garbage.keras"
    garbage.write_bytes(b"PK\x03\x04" + os.urandom(200))
    add(".keras: garbage after a zip signature", garbage)
    return out


def _special_files(tmp):
    """FIFOs and /dev/zero symlinks for every loader that takes a path."""
    out = []
    loaders = {
        "bundle": "from eagerflow.io import bundle\nbundle.read(PATH)",
        "graph file": "from eagerflow.function import serialize\nserialize.load(PATH)",
        ".keras": "ef.keras.models.load_model(PATH)",
        "weights": "m = ef.keras.Sequential([ef.keras.Input((3,)), "
                   "ef.keras.layers.Dense(2)])\nm.load_weights(PATH)",
        "legacy weights": "from eagerflow.keras.models import weights_format as wf\n"
                          "wf.read_file(PATH)",
        "checkpoint": "ef.train.Checkpoint(v=ef.Variable(1.0)).restore(PATH)",
        "summary records": "from eagerflow.summary import records\n"
                           "list(records.read_records(PATH))",
    }
    for kind, code in loaders.items():
        suffix = ".efckpt" if kind == "checkpoint" else ".keras" if kind == ".keras" else ""
        fifo = tmp / ("fifo_%s%s" % (kind.replace(" ", "_").strip("."), suffix))
        os.mkfifo(fifo)
        out.append({"name": "%s: a FIFO" % kind, "path": str(fifo), "code": code})
        zero = tmp / ("zero_%s%s" % (kind.replace(" ", "_").strip("."), suffix))
        os.symlink("/dev/zero", zero)
        out.append({"name": "%s: a symlink to /dev/zero" % kind, "path": str(zero),
                    "code": code})
    return out


def _module():
    class M(ef.Module):
        def __init__(self):
            super().__init__()
            self.w = ef.Variable([1.0, 2.0])

        @ef.function(input_signature=[ef.TensorSpec([2])])
        def __call__(self, x):
            return x * self.w

    return M()


def _saved_model_cases(tmp):
    from eagerflow.saved_model import _format

    base = tmp / "sm_base"
    ef.saved_model.save(_module(), str(base))
    outside = tmp / "outside_secret.bin"
    outside.write_bytes(b"secret" * 100)
    out = []
    code = "ef.saved_model.load(PATH)"

    def variant(name, edit, manifest=True):
        target = tmp / ("sm%d" % len(out))
        shutil.copytree(base, target)
        edit(target)
        if manifest:
            _format.write_manifest(str(target))
        out.append({"name": "SavedModel: " + name, "path": str(target), "code": code})

    def link_out(t):
        bundle_path = t / "variables" / "variables.bundle"
        shutil.copy(bundle_path, outside.with_suffix(".bundle"))
        bundle_path.unlink()
        os.symlink(outside.with_suffix(".bundle"), bundle_path)

    variant("variables bundle is a symlink pointing outside", link_out)

    def pb_link_out(t):
        (t / "saved_model.pb").unlink()
        os.symlink(outside, t / "saved_model.pb")

    variant("saved_model.pb is a symlink pointing outside", pb_link_out, manifest=False)

    def pb_fifo(t):
        (t / "saved_model.pb").unlink()
        os.mkfifo(t / "saved_model.pb")

    variant("saved_model.pb is a FIFO", pb_fifo, manifest=False)

    def pb_zero(t):
        (t / "saved_model.pb").unlink()
        os.symlink("/dev/zero", t / "saved_model.pb")

    variant("saved_model.pb is /dev/zero", pb_zero, manifest=False)

    def manifest_escape(t):
        m = _format.pb().Manifest()
        m.ParseFromString((t / "fingerprint.pb").read_bytes())
        m.file.add(path="../outside_secret.bin", size=600, sha256="0" * 64)
        (t / "fingerprint.pb").write_bytes(m.SerializeToString())

    variant("manifest naming ../", manifest_escape, manifest=False)

    def manifest_huge(t):
        m = _format.pb().Manifest()
        m.ParseFromString((t / "fingerprint.pb").read_bytes())
        for entry in m.file:
            entry.size = 2**62
        (t / "fingerprint.pb").write_bytes(m.SerializeToString())

    variant("manifest declaring 2**62-byte files", manifest_huge, manifest=False)

    def manifest_partial(t):
        m = _format.pb().Manifest()
        m.ParseFromString((t / "fingerprint.pb").read_bytes())
        keep = [e for e in m.file if e.path != "saved_model.pb"]
        del m.file[:]
        m.file.extend(keep)
        (t / "fingerprint.pb").write_bytes(m.SerializeToString())

    variant("manifest omitting saved_model.pb", manifest_partial, manifest=False)

    def nested(t):
        model = _format.read_model(str(t))
        node = model.function[0].function.graph.node[-1]
        attr = node.attr["deep"]
        for _ in range(60):  # deeper than this, protobuf itself refuses the message
            attr = attr.list.value.add()
        attr.i = 1
        (t / "saved_model.pb").write_bytes(_format.model_to_bytes(model))

    variant("attribute nested 60 deep", nested)
    return out, outside


def _cache_cases(tmp):
    """A dataset file cache written by someone else: escaping chunk names, lying headers,
    a FIFO index."""
    base = tmp / "cache_base"
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    list(ef.data.Dataset.from_tensor_slices(data).cache(str(base)))
    index = json.loads((base / "index.json").read_text())
    index.pop("digest", None)
    chunk = index["chunks"][0]["components"][0]["file"]
    read = ("ds = ef.data.Dataset.from_tensor_slices(np.zeros((4, 3), np.float32))"
            ".cache(PATH)\nlist(ds)")
    out = []

    def variant(name, edit_index=None, edit_dir=None):
        target = tmp / ("cache%d" % len(out))
        shutil.copytree(base, target)
        if edit_index is not None:
            new = json.loads(json.dumps(index))
            edit_index(new)
            (target / "index.json").write_text(json.dumps(new))
        if edit_dir is not None:
            edit_dir(target)
        out.append({"name": "data cache: " + name, "path": str(target), "code": read})

    def escape(ix):
        ix["chunks"][0]["components"][0]["file"] = "../outside_secret.bin"

    variant("chunk file named ../", escape)
    variant("element shape of 2**62", lambda ix: ix["chunks"][0]["components"][0].update(
        shape=[2**62]))
    variant("count of 2**62", lambda ix: ix["chunks"][0].update(count=2**62))
    variant("index is a list", lambda ix: ix.clear() or ix.update(chunks=5))

    def huge_header(d):
        header = "{'descr': '|u1', 'fortran_order': False, 'shape': (%d,), }" % 2**60
        (d / chunk).write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header) + 1)
                                + header.encode() + b"\n")

    variant("chunk header declaring 2**60 bytes", edit_dir=huge_header)

    def fifo_index(d):
        (d / "index.json").unlink()
        os.mkfifo(d / "index.json")

    variant("index is a FIFO", edit_dir=fifo_index)

    def deep_index(d):
        (d / "index.json").write_text("[" * 100000 + "]" * 100000)

    variant("index nested 100000 deep", edit_dir=deep_index)
    return out


def test_hostile_sizes_and_headers(tmp_path):
    (tmp_path / "outside_secret.bin").write_bytes(b"secret")
    cases = (_bundle_cases(tmp_path) + _legacy_cases(tmp_path) + _keras_cases(tmp_path)
             + _cache_cases(tmp_path))
    results = run_cases(cases, tmp_path, memory_mb=MEMORY_MB, timeout=300)
    record("sizes and headers", results)
    # load_weights reads model.weights only: the bomb in config.json is never inflated.
    assert results.pop(".keras: zip bomb through load_weights")[0] == "loaded"
    assert_safe(results, allowed=("refused",))


def test_hostile_special_files(tmp_path):
    results = run_cases(_special_files(tmp_path), tmp_path, memory_mb=MEMORY_MB, timeout=120)
    record("FIFOs and devices", results)
    assert_safe(results, allowed=("refused",))
    assert all("regular file" in detail for _, detail in results.values()), results


def test_hostile_saved_model_directories(tmp_path):
    cases, outside = _saved_model_cases(tmp_path)
    results = run_cases(cases, tmp_path, memory_mb=MEMORY_MB, timeout=120)
    record("SavedModel directories", results)
    assert_safe(results, allowed=("refused",))
    assert outside.read_bytes() == b"secret" * 100


def test_checkpoint_state_cannot_reach_outside(tmp_path):
    """``../`` and absolute paths in the state file are errors, never reads or deletions."""
    directory = tmp_path / "ckpts"
    victim = tmp_path / "victim.efckpt"
    victim.write_bytes(b"must survive")
    absolute = tmp_path / "abs_victim.efckpt"
    absolute.write_bytes(b"must survive too")
    cases = []
    for k, (name, text) in enumerate({
            "../ in model_checkpoint_path":
                'model_checkpoint_path: "../victim"\nall_model_checkpoint_paths: "../victim"\n',
            "absolute path": 'model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n'
                             % (str(absolute)[:-7], str(absolute)[:-7]),
            "nested ../": 'model_checkpoint_path: "a/../../victim"\n',
            "state file 32 MiB": "#" * (32 << 20),
    }.items()):
        d = tmp_path / ("ckpt%d" % k)
        d.mkdir()
        (d / "checkpoint").write_text(text)
        cases.append({"name": "checkpoint state: " + name, "path": str(d), "code": """
v = ef.Variable(1.0)
m = ef.train.CheckpointManager(ef.train.Checkpoint(v=v), PATH, max_to_keep=1)
for _ in range(3):
    m.save()
"""})
        cases.append({"name": "latest_checkpoint: " + name, "path": str(d),
                      "code": "ef.train.latest_checkpoint(PATH)"})
    directory.mkdir()
    v = ef.Variable(3.0)
    manager = ef.train.CheckpointManager(ef.train.Checkpoint(v=v), str(directory))
    manager.save()
    outside_ckpt = tmp_path / "elsewhere.efckpt"
    shutil.move(str(directory / "ckpt-1.efckpt"), outside_ckpt)
    os.symlink(outside_ckpt, directory / "ckpt-1.efckpt")
    cases.append({"name": "checkpoint file is a symlink pointing outside",
                  "path": str(directory), "code": """
m = ef.train.CheckpointManager(ef.train.Checkpoint(v=ef.Variable(0.0)), PATH)
m.restore_or_initialize()
"""})
    results = run_cases(cases, tmp_path, memory_mb=MEMORY_MB, timeout=120)
    record("checkpoint state", results)
    assert_safe(results, allowed=("refused",))
    assert victim.read_bytes() == b"must survive"
    assert absolute.read_bytes() == b"must survive too"
    assert outside_ckpt.exists()


def test_saved_model_recovery_by_completeness(tmp_path):
    """After a save killed mid-swap, the complete export is loaded, whatever the mtimes;
    the next save removes the leftovers."""
    from eagerflow.saved_model import _format

    export = tmp_path / "model"
    m = _module()
    ef.saved_model.save(m, str(export))
    old = tmp_path / ".model.old-aaaa"
    os.rename(export, old)
    broken = tmp_path / ".model.tmp-bbbb"
    shutil.copytree(old, broken)
    (broken / "saved_model.pb").write_bytes(b"half written")
    os.utime(broken, (4e9, 4e9))  # the newest by far: mtime must not decide
    loaded = ef.saved_model.load(str(export))
    np.testing.assert_array_equal(loaded.w.numpy(), [1.0, 2.0])
    # A complete new export (killed after writing it, before the rename) wins over .old.
    m.w.assign([5.0, 6.0])
    done = tmp_path / "fresh"
    ef.saved_model.save(m, str(done))
    complete = tmp_path / ".model.tmp-cccc"
    os.rename(done, complete)
    os.utime(complete, (1e6, 1e6))  # the oldest
    _format.verify_manifest(str(complete))
    loaded = ef.saved_model.load(str(export))
    np.testing.assert_array_equal(loaded.w.numpy(), [5.0, 6.0])
    ef.saved_model.save(m, str(export))
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_graph_file_and_zip_limits_allow_real_files(tmp_path):
    """The limits refuse nothing real: a saved model with a compressed config and a graph
    file load and agree with the originals."""
    model = _small_model()
    path = tmp_path / "m.keras"
    model.save(str(path))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    again = keras.models.load_model(str(path))
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    f = ef.function(lambda t: ef.tanh(t) * 2.0)
    graph_path = tmp_path / "g.efg"
    serialize.save_graph(str(graph_path), f.get_concrete_function(ef.TensorSpec([3])))
    np.testing.assert_allclose(serialize.load(str(graph_path))(ef.constant([0.5, 1., 2.])),
                               np.tanh([0.5, 1.0, 2.0]) * 2.0, rtol=1e-6)
