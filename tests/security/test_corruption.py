"""Random corruption of every file kind: truncation, bit flips, zeroed ranges.

A seeded, bounded loop per kind, in a child process under RLIMIT_AS. Each corrupted file
must either be refused with an eagerflow error or load values equal to the original's
(a flip in a timestamp or padding may be harmless): 0 raw exceptions, 0 silent wrong loads.
The one exception is a summary record stream cut exactly between two records: that is a valid
shorter file (TFRecord has no footer), reported apart.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys

from tests.conftest import count

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
TRIALS = 150  # per kind; 11 kinds (a run with 600 per kind takes about 30 s)

_CHILD = r'''
import json, os, resource, shutil, sys, tempfile
limit = 2048 << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import numpy as np
import eagerflow as ef
from eagerflow import errors, keras
from eagerflow.function import serialize
from eagerflow.io import bundle
from eagerflow.keras.models import weights_format as wf

trials = int(sys.argv[1])
tmp = tempfile.mkdtemp()
rng = np.random.default_rng(20261201)
x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)


def model():
    ef.random.set_seed(1)
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"),
                          keras.layers.Dense(2)])
    m.compile("adam", "mse")
    m.fit(x, np.ones((2, 2), np.float32), epochs=1, verbose=0)
    return m


base_model = model()
want_pred = base_model.predict(x, verbose=0)
want_weights = [w.copy() for w in base_model.get_weights()]
kinds = {}

# 1. a tensor bundle
tensors = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.int64(7),
           "c": np.linspace(0, 1, 5)}
p = os.path.join(tmp, "t.efb"); bundle.write(p, tensors)
def check_bundle(path):
    got = bundle.read(path)
    return set(got) == set(tensors) and all(
        np.array_equal(got[k], tensors[k]) and got[k].dtype == np.asarray(tensors[k]).dtype
        for k in tensors)
kinds["bundle"] = (p, check_bundle)

# 2. legacy weights file, read directly
named = [("d/vars/0", want_weights[0]), ("d/vars/1", want_weights[1])]
p = os.path.join(tmp, "legacy.bin"); wf.write_file(p, named, {"note": "x"})
def check_legacy(path):
    got, _ = wf.read_file(path)
    return list(got) == [n for n, _ in named] and all(
        np.array_equal(got[n], a) and got[n].dtype == a.dtype for n, a in named)
kinds["legacy weights"] = (p, check_legacy)

# 3. a graph file
w = ef.Variable([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]])
f = ef.function(lambda t: ef.reduce_sum(ef.tanh(ef.matmul(t, w)) * 2.0 + 1.0, axis=1))
cf = f.get_concrete_function(ef.TensorSpec([None, 3]))
want_graph = cf(ef.constant(x)).numpy()
p = os.path.join(tmp, "g.efg"); serialize.save_graph(p, cf, embed_variables=True)
def check_graph(path):
    got = serialize.load(path)(ef.constant(x)).numpy()
    return got.shape == want_graph.shape and np.array_equal(got, want_graph)
kinds["graph file"] = (p, check_graph)

# 4. a .keras model
p = os.path.join(tmp, "m.keras"); base_model.save(p)
def check_keras(path):
    m = keras.models.load_model(path)
    return np.array_equal(m.predict(x, verbose=0), want_pred) and all(
        np.array_equal(a, b) for a, b in zip(m.get_weights(), want_weights))
kinds[".keras"] = (p, check_keras)

# 5. a weights file through load_weights
p = os.path.join(tmp, "m.weights.h5"); base_model.save_weights(p)
def check_weights(path):
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"),
                          keras.layers.Dense(2)])
    m.load_weights(path)
    return all(np.array_equal(a, b) for a, b in zip(m.get_weights(), want_weights))
kinds["weights"] = (p, check_weights)

# 6. a checkpoint
v1, v2 = ef.Variable([1.0, 2.0, 3.0]), ef.Variable(5, dtype=ef.int64)
p = ef.train.Checkpoint(a=v1, b=v2).write(os.path.join(tmp, "ck"))
p_file = p + ".efckpt" if not p.endswith(".efckpt") else p
def check_ckpt(path):
    a, b = ef.Variable([0.0, 0.0, 0.0]), ef.Variable(0, dtype=ef.int64)
    ef.train.Checkpoint(a=a, b=b).restore(path[:-len(".efckpt")]).assert_consumed()
    return a.numpy().tolist() == [1.0, 2.0, 3.0] and int(b.numpy()) == 5
kinds["checkpoint"] = (p_file, check_ckpt)

# 7./8. SavedModel: its graph file and its variables (the manifest checks both)
class M(ef.Module):
    def __init__(self):
        super().__init__()
        self.w = ef.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    @ef.function(input_signature=[ef.TensorSpec([None, 3])])
    def __call__(self, t):
        return ef.tanh(ef.matmul(t, self.w))
sm = os.path.join(tmp, "sm"); mod = M(); ef.saved_model.save(mod, sm)
want_sm = mod(ef.constant(x)).numpy()
def sm_checker(rel):
    def check(path):
        d = os.path.join(tmp, "sm_trial")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(sm, d)
        shutil.copy(path, os.path.join(d, rel))
        got = ef.saved_model.load(d)(ef.constant(x)).numpy()
        return np.array_equal(got, want_sm)
    return check
kinds["SavedModel saved_model.pb"] = (os.path.join(sm, "saved_model.pb"),
                                     sm_checker("saved_model.pb"))
kinds["SavedModel variables"] = (os.path.join(sm, "variables", "variables.bundle"),
                                 sm_checker(os.path.join("variables", "variables.bundle")))

# 9./10. a dataset file cache: its index and a chunk file
cache = os.path.join(tmp, "cache")
elements = [np.arange(k, k + 3, dtype=np.float32) for k in range(5)]
ds = ef.data.Dataset.from_tensor_slices(np.stack(elements)).cache(cache)
assert [e.numpy().tolist() for e in ds] == [e.tolist() for e in elements]
def cache_checker(rel):
    def check(path):
        d = os.path.join(tmp, "cache_trial")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(cache, d)
        shutil.copy(path, os.path.join(d, rel))
        got = [e.numpy() for e in ef.data.Dataset.from_tensor_slices(
            np.stack(elements)).cache(d)]
        return len(got) == len(elements) and all(
            g.dtype == e.dtype and np.array_equal(g, e) for g, e in zip(got, elements))
    return check
chunk = sorted(n for n in os.listdir(cache) if n.endswith(".npy"))[0]
kinds["data cache index"] = (os.path.join(cache, "index.json"), cache_checker("index.json"))
kinds["data cache chunk"] = (os.path.join(cache, chunk), cache_checker(chunk))

# 11. summary records (TFRecord framing with CRCs)
from eagerflow.summary import records
payloads = [b"first record", b"", b"x" * 300]
p = os.path.join(tmp, "events.rec")
with open(p, "wb") as out:
    for payload in payloads:
        out.write(records.frame(payload))
def check_records(path):
    got = list(records.read_records(path))
    if got != payloads and got == payloads[:len(got)]:
        # A stream cut exactly between records is a valid, shorter file (as in TF's
        # TFRecord format, which has no footer): counted apart, allowed for this kind only.
        return "prefix"
    return got == payloads
kinds["summary records"] = (p, check_records)

report = {}
for kind, (path, check) in kinds.items():
    original = open(path, "rb").read()
    assert check(path), kind  # the uncorrupted file loads equal
    counts = {"refused": 0, "equal": 0, "prefix": 0, "unchanged": 0, "raw": [],
              "wrong": []}
    for t in range(trials):
        data = bytearray(original)
        how = t % 3
        if how == 0:
            data = data[:int(rng.integers(0, len(data)))]
        elif how == 1:
            for _ in range(int(rng.integers(1, 9))):
                bit = int(rng.integers(0, len(data) * 8))
                data[bit // 8] ^= 1 << (bit % 8)
        else:
            start = int(rng.integers(0, len(data)))
            n = int(rng.integers(1, 65))
            data[start:start + n] = bytes(len(data[start:start + n]))
        if bytes(data) == original:
            counts["unchanged"] += 1
            continue
        trial = os.path.join(tmp, "trial_" + os.path.basename(path))
        with open(trial, "wb") as out:
            out.write(bytes(data))
        try:
            ok = check(trial)
        except errors.OpError:
            counts["refused"] += 1
            continue
        except BaseException as exc:  # noqa: BLE001 - what the test counts
            counts["raw"].append("%s %d: %s: %s" % (["trunc", "flip", "zero"][how], t,
                                                      type(exc).__name__, str(exc)[:200]))
            continue
        if ok == "prefix" and kind == "summary records":
            counts["prefix"] += 1
        elif ok is True:
            counts["equal"] += 1
        else:
            counts["wrong"].append("%s %d" % (["trunc", "flip", "zero"][how], t))
    report[kind] = counts
print("REPORT " + json.dumps(report))
'''


def test_random_corruption_never_loads_wrong_values(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(TRIALS)], cwd=str(tmp_path),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=500)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("the corruption loop did not finish in time") from None
    lines = [ln for ln in out.splitlines() if ln.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, out[-3000:] + err[-3000:]
    report = json.loads(lines[-1][7:])
    problems = []
    for kind, c in report.items():
        count("corruption %s: refused" % kind, c["refused"])
        count("corruption %s: loaded equal" % kind, c["equal"])
        if c["prefix"]:
            count("corruption %s: cut between records (a valid shorter file)" % kind,
                  c["prefix"])
        count("corruption: trials", c["refused"] + c["equal"] + c["prefix"] +
              len(c["raw"]) + len(c["wrong"]))
        count("corruption: raw exceptions", len(c["raw"]))
        count("corruption: silent wrong loads", len(c["wrong"]))
        problems += ["%s raw: %s" % (kind, r) for r in c["raw"]]
        problems += ["%s WRONG: %s" % (kind, r) for r in c["wrong"]]
    assert len(report) == 11
    assert not problems, "\n".join(problems)
