"""A hypothesis sweep of bad arguments over the public API.

Every public callable of ``eagerflow`` (top level), ``math``, ``nn``, ``linalg`` and
``random`` is found by walking the namespaces, and every Keras layer class of
``keras.layers``; each is called many times with one or two arguments replaced by a bad
value drawn by hypothesis (None, objects, strings, inf and NaN, out-of-range and huge
integers, ragged and deeply nested lists, object arrays, tensors of the wrong dtype or
rank, seeds that are tensors or objects) and the others set to plausible values. A layer
is built with bad constructor arguments and then called, or built well and called with a
bad input.

A call may return, or raise an ``eagerflow.errors`` exception, ``TypeError`` or
``ValueError``; anything else (``OverflowError``, ``AttributeError``, ``IndexError``,
``KeyError``, ``RecursionError``, ``ZeroDivisionError``, ``MemoryError``, ...) or a call
running past its deadline is a failure. Run it as a module (in a fresh interpreter, under
a memory limit, which ``tests/test_bad_input_sweep.py`` does) to see the counts::

    python -m tests.bad_input_sweep [--examples N] [--filter SUBSTRING] [--show]
"""

from __future__ import annotations

import argparse
import inspect
import json
import signal
import sys
import time
import traceback
import types
import zlib

import numpy as np

ALLOWED = None  # set by _setup: (OpError, TypeError, ValueError)
NAMESPACES = ("", "math", "nn", "linalg", "random")
# Not called: they change the process (seeds, devices, the global generator) or are not
# operations on values (types and scopes whose constructors accept anything by design).
SKIP = frozenset((
    "random.set_seed", "random.set_global_generator", "set_seed",
    "name_scope", "device", "init_scope", "DType", "Tensor", "UnconnectedGradients",
    "VariableAggregation", "VariableSynchronization", "print", "random.Algorithm",
    "executing_eagerly", "no_gradient", "variable_creator_scope", "Module",
    "custom_gradient", "function", "recompute_grad",
))
CALL_DEADLINE_S = 10.0


class _Deadline(BaseException):
    """Raised by the alarm inside a call that runs past CALL_DEADLINE_S (not an Exception,
    so no ``except Exception`` in the library swallows it)."""


def _on_alarm(signum, frame):
    raise _Deadline()


# -- plausible values by parameter name ------------------------------------------------------
def _plausible(ef, name, owner):
    f = lambda *shape: ef.constant(np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32)  # noqa: E731
                                   .reshape(shape) / 10.0)
    stateless = "stateless" in owner
    table = {
        "matrix": f(3, 3), "rhs": f(3, 3), "chol": f(3, 3), "a": f(3, 3), "b": f(3, 3),
        "indices": ef.constant([0, 1]), "segment_ids": ef.constant([0, 1]),
        "ids": ef.constant([0, 1]), "sorted_sequence": f(2, 3),
        "num_segments": 2, "num": 2, "depth": 3, "k": 1, "num_samples": 2, "num_rows": 2,
        "size": 2, "num_lower": 1, "num_upper": 1, "repeats": 2, "shift": 1,
        "branch_index": 0, "axis": 0, "start": 0, "stop": 3, "limit": 3, "end": [1, 1],
        "begin": [0, 0], "strides": [1, 1, 1, 1], "stride": 1, "ksize": [1, 2, 2, 1],
        "padding": "VALID", "pooling_type": "AVG", "filters": f(2, 2, 3, 2),
        "filter": f(2, 2, 3, 2), "depthwise_filter": f(2, 2, 3, 1),
        "pointwise_filter": f(1, 1, 3, 2), "shape": [2, 3], "dims": [2, 3],
        "output_shape": [2, 3], "multiples": [1, 2], "shape_x": [2, 3], "shape_y": [3],
        "window_shape": [2], "filter_sizes": [2, 2, 3, 2], "input_sizes": [1, 4, 4, 3],
        "paddings": [[0, 1], [1, 0]], "seed": [1, 2] if stateless else 1,
        "dtype": ef.float32, "equation": "ij->ji", "t_list": [f(2, 3)], "clip_norm": 1.0,
        "clip_value_min": 0.0, "clip_value_max": 1.0, "rate": 0.5,
        "f": lambda *a, **k: a[0] if a else 0, "fn": lambda *a, **k: a[0] if a else 0,
        "cond": lambda *a: False, "body": lambda *a: a, "true_fn": lambda: 1,
        "false_fn": lambda: 0, "pred": ef.constant(True), "condition": ef.constant([True]),
        "loop_vars": [ef.constant(0)], "pred_fn_pairs": [(ef.constant(True), lambda: 1)],
        "branch_fns": [lambda: 1], "num_or_size_splits": 1, "mask": ef.constant([True]),
        "variance_epsilon": 1e-3, "alpha": f(2, 3), "equation_": "ij->ji",
        "elems": f(2, 3), "device_name": "/cpu:0", "labels": ef.constant([0, 1]),
        "logits": f(2, 3), "generator": None, "alg": "philox", "name": None,
    }
    if name in table:
        return table[name]
    return f(2, 3)


def _bad_pool(ef):
    """Fixed bad values (hypothesis draws among them and from open strategies)."""
    def deep(n, leaf=1):
        x = leaf
        for _ in range(n):
            x = [x]
        return x

    return [
        None, object(), "bad", b"bad", {}, {"a": 1}, set(), (lambda: None), 1 + 2j,
        float("inf"), -float("inf"), float("nan"), 1e308, -1, -(2**31), 2**31, 2**63,
        2**64, -(2**63) - 1, 10**30, True, 0, [], [[1], [2, 3]], [1, None], [object()],
        deep(70), deep(5000), np.array([object()], dtype=object), np.array(["a"]),
        np.float64("nan"), np.int64(2**62), [2**40, 2**40], [-1, 3], [float("nan")],
        [float("inf"), 1.0], (1, "a"), ef.constant(float("nan")), ef.constant(7),
        ef.constant([True, False]), ef.constant([[1, 2], [3, 4]], ef.int64),
        ef.constant(np.zeros((0,), np.float32)), ef.constant(np.ones((2, 3, 4, 5, 6),
                                                                     np.float32)),
        ef.constant([1 + 2j]), ef.constant(2**40, ef.int64), ef.Variable(1.0),
        np.ones((2, 2), np.float16), np.array(2**62, np.int64), range(3), iter([1, 2]),
        ef.float64, ef.int32, type, Ellipsis, slice(None),
    ]


def _bad_values(ef):
    from hypothesis import strategies as st

    pool = st.sampled_from(_bad_pool(ef))
    return st.one_of(
        pool, pool, pool, pool,  # the hand-picked values, most of the time
        st.integers(-(2**70), -1), st.integers(2**31, 2**70),
        st.floats(allow_nan=True, allow_infinity=True).map(
            lambda v: -v - 1.5 if 0 <= v < 2**31 else v),  # negative, huge, inf or NaN
        st.text(max_size=4),
        st.lists(st.one_of(st.none(), st.integers(-3, 3), st.floats(), st.text(max_size=2)),
                 min_size=1, max_size=4),
    )


# -- what is swept -------------------------------------------------------------------------------
def public_callables(ef):
    """``(qualified name, callable)`` for every public function and class, each once."""
    seen, out = set(), []
    for ns in NAMESPACES:
        module = ef if not ns else getattr(ef, ns)
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name)
            qual = (ns + "." + name) if ns else name
            if qual in SKIP or isinstance(obj, (types.ModuleType, ef.DType)):
                continue
            if not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            out.append((qual, obj))
    return out


def _parameters(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [p for p in sig.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]


_LAYER_ARGS = {
    "units": 2, "filters": 2, "kernel_size": 2, "pool_size": 2, "rate": 0.5,
    "activation": "relu", "target_shape": (3, 2), "dims": (2, 1), "n": 2, "cropping": 1,
    "size": 2, "input_dim": 5, "output_dim": 2, "num_heads": 2, "key_dim": 2,
    "equation": "ab,bc->ac", "output_shape": 2, "axes": 1, "groups": 1, "stddev": 0.1,
    "mask_value": 0.0, "depth_multiplier": 1, "function": lambda x: x,
}


def _layer_input(ef, cls_name):
    f = lambda *shape: ef.constant(np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32)  # noqa: E731
                                   .reshape(shape))
    if cls_name in ("Add", "Average", "Concatenate", "Dot", "Maximum", "Minimum",
                    "Multiply", "Subtract"):
        return [f(2, 3), f(2, 3)]
    if cls_name == "MultiHeadAttention":
        return f(2, 3, 4)
    if cls_name == "Embedding":
        return ef.constant([[0, 1], [2, 3]])
    if cls_name == "Reshape":
        return f(2, 6)
    if "3D" in cls_name:
        return f(1, 2, 4, 4, 3)
    if "2D" in cls_name:
        return f(1, 4, 4, 3)
    if "1D" in cls_name or "RNN" in cls_name or "LSTM" in cls_name or "GRU" in cls_name \
            or cls_name in ("TimeDistributed", "Bidirectional", "Permute", "Masking",
                            "EinsumDense"):
        return f(2, 4, 3)
    return f(2, 3)


def _layer_ctor_args(ef, cls_name, params):
    kwargs = {}
    for p in params:
        if p.default is not inspect.Parameter.empty:
            continue
        if p.name in ("cell",):
            kwargs[p.name] = ef.keras.layers.SimpleRNNCell(2)
        elif p.name in ("cells",):
            kwargs[p.name] = [ef.keras.layers.SimpleRNNCell(2)]
        elif p.name == "layer":
            kwargs[p.name] = (ef.keras.layers.SimpleRNN(2) if cls_name == "Bidirectional"
                              else ef.keras.layers.Dense(2))
        elif p.name == "equation" and cls_name == "EinsumDense":
            kwargs[p.name] = "abc,cd->abd"
        elif p.name == "output_shape" and cls_name == "EinsumDense":
            kwargs[p.name] = (None, 2)
        elif p.name in _LAYER_ARGS:
            kwargs[p.name] = _LAYER_ARGS[p.name]
        else:
            kwargs[p.name] = 1
    if cls_name == "Reshape":
        kwargs["target_shape"] = (3, 2)
    return kwargs


def layer_classes(ef):
    base = ef.keras.layers.Layer
    out, seen = [], set()
    for name in sorted(dir(ef.keras.layers)):
        obj = getattr(ef.keras.layers, name)
        if inspect.isclass(obj) and issubclass(obj, base) and obj is not base \
                and id(obj) not in seen and name not in ("InputLayer", "Lambda", "Layer"):
            seen.add(id(obj))
            out.append(("keras.layers." + name, obj))
    return out


# -- running ---------------------------------------------------------------------------------
class Stats:
    def __init__(self):
        self.calls = 0
        self.returned = 0
        self.raised = 0
        self.callables = 0
        self.failures = []
        self.returned_calls = []
        self.by_type = {}

    def record(self, qual, what, exc):
        self.calls += 1
        if exc is None:
            self.returned += 1
            self.returned_calls.append(what)
            return
        if isinstance(exc, ALLOWED):
            self.raised += 1
            self.by_type[type(exc).__name__] = self.by_type.get(type(exc).__name__, 0) + 1
            return
        kind = "deadline" if isinstance(exc, _Deadline) else type(exc).__name__
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        self.failures.append({"callable": qual, "call": what, "exception": kind,
                              "message": str(exc)[:300], "where": "".join(tb[-3:])[-800:]})


def _short(value):
    try:
        text = repr(value)
    except BaseException:  # noqa: BLE001 - deep nesting can break repr itself
        text = "<%s>" % type(value).__name__
    return text if len(text) < 60 else text[:57] + "..."


def _call(stats, qual, fn, args, kwargs, what):
    signal.setitimer(signal.ITIMER_REAL, CALL_DEADLINE_S)
    exc = None
    try:
        result = fn(*args, **kwargs)
        if hasattr(result, "numpy") and not isinstance(result, type):
            try:
                result.numpy()
            except AttributeError:
                pass
    except BaseException as e:  # noqa: BLE001 - every outcome is classified
        exc = e
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if isinstance(exc, KeyboardInterrupt):
        raise exc
    stats.record(qual, what, exc)


def sweep_function(ef, stats, qual, fn, examples):
    from hypothesis import HealthCheck, given, seed, settings
    from hypothesis import strategies as st

    params = _parameters(fn)
    if not params:
        return
    names = [p.name for p in params if p.name != "name"]
    if not names:
        return
    stats.callables += 1
    base = {}
    for p in params:
        if p.default is inspect.Parameter.empty:
            base[p.name] = _plausible(ef, p.name, qual)
    positional_only = [p.name for p in params if p.kind == p.POSITIONAL_ONLY]

    @seed(zlib.crc32(qual.encode()))  # reproducible, and different for each callable
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True),
           st.lists(_bad_values(ef), min_size=2, max_size=2))
    def run(targets, values):
        kwargs = dict(base)
        for target, value in zip(targets, values):
            kwargs[target] = value
        args = [kwargs.pop(n) for n in positional_only if n in kwargs]
        what = "%s(%s)" % (qual, ", ".join("%s=%s" % (t, _short(v))
                                           for t, v in zip(targets, values)))
        _call(stats, qual, fn, args, kwargs, what)

    run()


def sweep_layer(ef, stats, qual, cls, examples):
    from hypothesis import HealthCheck, given, seed, settings
    from hypothesis import strategies as st

    params = _parameters(cls.__init__)
    if params is None:
        return
    cls_name = qual.rsplit(".", 1)[1]
    stats.callables += 1
    names = [p.name for p in params if p.name not in ("name", "kwargs")]

    def build_and_call(kwargs, inputs, what):
        def go():
            layer = cls(**kwargs)
            return layer(inputs)
        _call(stats, qual, go, (), {}, what)

    @seed(zlib.crc32(qual.encode()))
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.booleans(), st.sampled_from(names or ["<input>"]), _bad_values(ef))
    def run(bad_input, target, value):
        kwargs = _layer_ctor_args(ef, cls_name, params)
        inputs = _layer_input(ef, cls_name)
        if bad_input or not names:
            build_and_call(kwargs, value, "%s(...)(%s)" % (qual, _short(value)))
        else:
            kwargs[target] = value
            build_and_call(kwargs, inputs, "%s(%s=%s)(x)" % (qual, target, _short(value)))

    run()


def _setup():
    global ALLOWED
    import eagerflow as ef

    ALLOWED = (ef.errors.OpError, TypeError, ValueError)
    signal.signal(signal.SIGALRM, _on_alarm)
    return ef


def run_sweep(examples=12, name_filter="", show=False):
    ef = _setup()
    import logging
    import warnings

    logging.getLogger("eagerflow").setLevel(logging.CRITICAL)
    warnings.simplefilter("ignore")
    stats = Stats()
    start = time.perf_counter()
    timings = []
    for qual, fn in public_callables(ef):
        if name_filter in qual:
            t0 = time.perf_counter()
            sweep_function(ef, stats, qual, fn, examples)
            timings.append((time.perf_counter() - t0, qual))
    for qual, cls in layer_classes(ef):
        if name_filter in qual:
            t0 = time.perf_counter()
            sweep_layer(ef, stats, qual, cls, examples)
            timings.append((time.perf_counter() - t0, qual))
    stats.seconds = time.perf_counter() - start
    if show:
        for seconds, qual in sorted(timings, reverse=True)[:15]:
            print("%.2f s  %s" % (seconds, qual), file=sys.stderr)
        for what in stats.returned_calls:
            print("returned: %s" % what, file=sys.stderr)
        for f in stats.failures:
            print("%s: %s: %s\n%s" % (f["exception"], f["call"], f["message"], f["where"]),
                  file=sys.stderr)
    return stats


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.bad_input_sweep")
    parser.add_argument("--examples", type=int, default=12, help="calls per callable")
    parser.add_argument("--filter", default="", help="only callables containing this")
    parser.add_argument("--show", action="store_true", help="print every failure")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(3000)
    stats = run_sweep(args.examples, args.filter, args.show)
    print(json.dumps({"calls": stats.calls, "callables": stats.callables,
                      "returned": stats.returned, "raised_allowed": stats.raised,
                      "raised_by_type": stats.by_type, "failures": stats.failures,
                      "seconds": round(stats.seconds, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
