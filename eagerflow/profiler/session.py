"""A profiler session: times each eager op and each executor step, writes a Chrome trace.

Every event records its name, start and duration (nanoseconds from ``perf_counter_ns``),
device, thread and arguments (input shapes and dtypes; for executor steps also the graph
node). ``stop`` writes the Chrome trace format (``traceEvents`` of complete ``"X"`` events,
microseconds, one process per device with a ``process_name`` metadata event) that
chrome://tracing and Perfetto open, and returns the per-op summary.
"""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np

__all__ = ["Session", "write_atomic"]

_now = time.perf_counter_ns


def _describe(values):
    shapes, dtypes = [], []
    for v in values:
        value = getattr(v, "_value", v)
        shape = getattr(value, "shape", None)
        if shape is None:
            shapes.append([])
            dtypes.append(type(v).__name__)
        else:
            shapes.append([int(d) for d in shape])
            dtypes.append(str(getattr(value, "dtype", "")))
    return shapes, dtypes


def _device_of(result, default):
    first = result[0] if isinstance(result, tuple) and result else result
    device = getattr(first, "_device", None)
    return device.name if device is not None else default


class Session:
    """The events recorded between ``start`` and ``stop``."""

    def __init__(self, logdir):
        self.logdir = logdir
        self.events = []  # (name, cat, start_ns, dur_ns, device, thread_id, args)
        self.start_ns = _now()
        self.wall_start = time.time()
        self._lock = threading.Lock()

    def add(self, name, cat, start, dur, device, args):
        self.events.append((name, cat, start, dur, device, threading.get_ident(), args))

    def record_op(self, prim, args, attrs, run):
        """Runs one eager op through ``run`` and records its time (the dispatch hook)."""
        t0 = _now()
        result = run(prim, args, attrs)
        dur = _now() - t0
        shapes, dtypes = _describe(args)
        device = _device_of(result, "/job:localhost/replica:0/task:0/device:CPU:0")
        self.add(prim.name, "op", t0, dur, device,
                 {"shapes": shapes, "dtypes": dtypes, "device": device})
        return result

    def run_executor(self, executor, args, captures):
        """Runs a compiled graph through the executor's step interpreter, recording each step
        (the executor hook)."""
        t_call = _now()
        graph_name = executor.graph.name

        def on_step(node, inputs, call):
            t0 = _now()
            result = call()
            dur = _now() - t0
            shapes, dtypes = _describe(inputs)
            device = node.device or "/job:localhost/replica:0/task:0/device:CPU:0"
            self.add(node.op, "executor", t0, dur, device,
                     {"node": node.name, "graph": graph_name, "shapes": shapes,
                      "dtypes": dtypes, "device": device})
            return result

        out = executor.run_steps(args, captures, on_step)
        self.add("graph:" + graph_name, "function", t_call, _now() - t_call,
                 "/job:localhost/replica:0/task:0/device:CPU:0",
                 {"steps": len(executor.steps)})
        return out

    def chrome_trace(self):
        """The recorded events as a Chrome trace dict."""
        pids, tids, trace = {}, {}, []
        for name, cat, start, dur, device, thread, args in self.events:
            pid = pids.setdefault(device, len(pids) + 1)
            tid = tids.setdefault(thread, len(tids) + 1)
            trace.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid,
                          "ts": (start - self.start_ns) / 1000.0, "dur": dur / 1000.0,
                          "args": args})
        for device, pid in pids.items():
            trace.append({"name": "process_name", "ph": "M", "pid": pid,
                          "args": {"name": device}})
        return {"traceEvents": trace, "displayTimeUnit": "ms",
                "otherData": {"producer": "eagerflow.profiler",
                              "wall_start": self.wall_start}}

    def summary(self, top=20):
        """Rows ``(op, calls, total_ms, mean_us, percent)`` of the ops by total time."""
        totals = {}
        for name, cat, _, dur, _, _, _ in self.events:
            if cat == "function" or cat == "trace":
                continue  # enclosing spans would count their steps twice
            count, total = totals.get(name, (0, 0))
            totals[name] = (count + 1, total + dur)
        grand = sum(t for _, t in totals.values()) or 1
        rows = sorted(totals.items(), key=lambda kv: -kv[1][1])[:top]
        return [(name, count, total / 1e6, total / count / 1e3, 100.0 * total / grand)
                for name, (count, total) in rows]


def format_summary(rows):
    """The summary rows as a text table."""
    lines = ["%-28s %8s %12s %12s %7s" % ("op", "calls", "total ms", "mean us", "%")]
    for name, count, total_ms, mean_us, pct in rows:
        lines.append("%-28s %8d %12.3f %12.2f %6.1f%%" % (name[:28], count, total_ms, mean_us,
                                                          pct))
    return "\n".join(lines)


def write_atomic(path, data):
    """Writes bytes to ``path`` atomically: temp file, fsync, rename, fsync the directory."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def dumps(trace):
    def default(o):
        if isinstance(o, np.generic):
            return o.item()
        return str(o)

    return json.dumps(trace, default=default).encode("utf-8")
