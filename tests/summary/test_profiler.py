"""The profiler's Chrome trace and summary table."""

import glob
import json
import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.framework import context
from eagerflow.function import executor as executor_lib
from eagerflow.ops import dispatch

experimental = ef.profiler.experimental


def _load(logdir):
    path, = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "trace.json"))
    assert path == experimental.last_trace_path
    with open(path) as f:
        return json.load(f)


def test_one_event_per_eager_op_and_executor_step(tmp_path, capsys):
    @ef.function
    def f(x):
        return ef.matmul(x, x) + 1.0

    x = ef.constant(np.eye(3, dtype=np.float32))
    f(x)  # trace outside the profile
    steps = f.get_concrete_function(x).executor.steps
    a = ef.constant([1.0, 2.0])
    with experimental.Profile(str(tmp_path)):
        b = ef.add(a, a)
        c = ef.multiply(b, 3.0)
        with experimental.Trace("train", step_num=7):
            y = f(x)
    np.testing.assert_allclose(c.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(y.numpy(), np.eye(3) + 1.0)
    trace = _load(str(tmp_path))
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    ops = [e for e in complete if e["cat"] == "op"]
    assert [e["name"] for e in ops] == ["AddV2", "Mul"]
    assert ops[0]["args"]["shapes"] == [[2], [2]]
    assert ops[0]["args"]["dtypes"] == ["float32", "float32"]
    assert ops[0]["args"]["device"].endswith("CPU:0")
    executed = [e for e in complete if e["cat"] == "executor"]
    assert [e["name"] for e in executed] == [s[5].op for s in steps] and executed
    assert all(e["args"]["graph"] == "f" for e in executed)
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in complete)
    (span,) = [e for e in complete if e["cat"] == "trace"]
    assert span["name"] == "train" and span["args"] == {"step_num": "7"}
    # Steps nest inside their function call, which nests inside the Trace span.
    (call,) = [e for e in complete if e["cat"] == "function"]
    for e in executed:
        assert call["ts"] <= e["ts"] and e["ts"] + e["dur"] <= call["ts"] + call["dur"] + 1e-3
    assert span["ts"] <= call["ts"] and call["ts"] + call["dur"] <= span["ts"] + span["dur"]
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert all(e["pid"] in names for e in complete)
    out = capsys.readouterr().out
    assert "total ms" in out and "AddV2" in out and "Mul" in out
    rows = experimental.last_summary
    assert sum(r[1] for r in rows) == len(ops) + len(executed)
    assert abs(sum(r[4] for r in rows) - 100.0) < 1e-6
    assert [r[2] for r in rows] == sorted((r[2] for r in rows), reverse=True)


def test_hooks_removed_after_stop(tmp_path):
    experimental.start(str(tmp_path), experimental.ProfilerOptions(verbose=0))
    assert context.state.slow and dispatch._profiler is not None
    assert executor_lib.observer is not None
    with pytest.raises(ef.errors.AlreadyExistsError):
        experimental.start(str(tmp_path))
    ef.square(ef.ones([2]))
    experimental.stop()
    assert not context.state.slow and dispatch._profiler is None
    assert executor_lib.observer is None
    with pytest.raises(ef.errors.UnavailableError, match="No profiler is running"):
        experimental.stop()


def test_profiled_gradients_and_errors(tmp_path):
    v = ef.Variable([1.0, 2.0])
    with experimental.Profile(str(tmp_path), experimental.ProfilerOptions(verbose=0)):
        with ef.GradientTape() as tape:
            loss = ef.reduce_sum(ef.square(v))
        grad = tape.gradient(loss, v)
        with pytest.raises(ef.errors.InvalidArgumentError):
            ef.add(ef.ones([2]), ef.ones([3]))
    np.testing.assert_allclose(grad.numpy(), [2.0, 4.0])
    names = [e["name"] for e in _load(str(tmp_path))["traceEvents"] if e.get("cat") == "op"]
    assert "Square" in names and "Sum" in names


def test_summary_trace_on_with_profiler(tmp_path):
    f = ef.function(lambda x: ef.exp(x) * 2.0)
    f(ef.ones([2]))
    ef.summary.trace_on(graph=True, profiler=True)
    f(ef.ones([2]))
    writer = ef.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=0):
        assert bool(ef.summary.trace_export("t"))
    writer.close()
    path, = glob.glob(os.path.join(str(tmp_path), "plugins", "profile", "*", "trace.json"))
    events = json.load(open(path))["traceEvents"]
    assert any(e.get("cat") == "executor" for e in events)
    assert dispatch._profiler is None and executor_lib.observer is None
