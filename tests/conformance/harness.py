"""Shared collection and normalisation for the conformance suite.

Every program is a function ``p_<name>(tf)`` in a module of
``tests/conformance/programs``; it receives the framework module (real
TensorFlow when recording, eagerflow when testing) and returns a dict of named
results. ``normalize`` turns those results into JSON-able values the same way
for both frameworks, so recorded and observed values compare directly.
"""

import importlib
import pkgutil

import numpy as np

from tests.conformance import programs as _programs


def collect():
    """Returns ``{"category.name": function}`` for every program, sorted."""
    found = {}
    for info in pkgutil.iter_modules(_programs.__path__):
        mod = importlib.import_module(f"{_programs.__name__}.{info.name}")
        for attr in dir(mod):
            if attr.startswith("p_"):
                found[f"{info.name}.{attr[2:]}"] = getattr(mod, attr)
    return dict(sorted(found.items()))


def normalize(value):
    """Converts a program's result value to plain JSON data."""
    if isinstance(value, dict):
        return {str(k): normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if hasattr(value, "numpy") and callable(value.numpy):
        value = value.numpy()
    if isinstance(value, (bytes, np.bytes_)):
        return {"bytes": bytes(value).decode("utf-8", "replace")}
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype.kind in "SO":
            flat = [
                x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)
                for x in arr.reshape(-1)
            ]
            return {"strings": flat, "shape": list(arr.shape)}
        data = (
            arr.astype(np.float64) if arr.dtype.kind == "f" or arr.dtype.name == "bfloat16" else arr
        )
        return {
            "array": np.where(np.isnan(data), None, data).tolist()
            if data.dtype.kind == "f"
            else data.tolist(),
            "dtype": arr.dtype.name,
            "shape": list(arr.shape),
        }
    if isinstance(value, float) and value != value:
        return {"nan": True}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return {"repr_type": type(value).__name__}


def run_program(fn, tf):
    """Runs one program; an exception becomes ``{"raised": ClassName}``."""
    try:
        return normalize(fn(tf))
    except Exception as exc:  # recorded: which class a program raised
        return {"raised": type(exc).__name__, "message": str(exc)[:200]}


def compare(expected, actual, path="", rtol=1e-5, atol=1e-6):
    """Yields human-readable mismatch descriptions (empty when equal)."""
    if isinstance(expected, dict) and "array" in expected:
        if not (isinstance(actual, dict) and "array" in actual):
            yield f"{path}: expected array, got {actual!r}"[:300]
            return
        if expected["shape"] != actual["shape"]:
            yield f"{path}: shape {actual['shape']} != {expected['shape']}"
            return
        if expected["dtype"] != actual["dtype"]:
            yield f"{path}: dtype {actual['dtype']} != {expected['dtype']}"
        e = np.array(expected["array"], dtype=object)
        a = np.array(actual["array"], dtype=object)
        en = np.vectorize(lambda x: x is None)(e) if e.size else e
        an = np.vectorize(lambda x: x is None)(a) if a.size else a
        if e.size and (en != an).any():
            yield f"{path}: NaN positions differ: {actual['array']} vs {expected['array']}"[:300]
            return
        if e.size:
            ev = np.where(en, 0, e).astype(np.float64)
            av = np.where(an, 0, a).astype(np.float64)
            kind = np.dtype(expected["dtype"]).kind if expected["dtype"] != "bfloat16" else "f"
            ok = (
                np.allclose(av, ev, rtol=rtol, atol=atol, equal_nan=True)
                if kind in "fc"
                else np.array_equal(av, ev)
            )
            if not ok:
                yield f"{path}: {actual['array']} != {expected['array']}"[:300]
        return
    if isinstance(expected, dict) and "raised" in expected:
        if not (isinstance(actual, dict) and actual.get("raised") == expected["raised"]):
            yield f"{path}: expected raise {expected['raised']}, got {actual!r}"[:300]
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            yield f"{path}: keys/type {actual!r} != {expected!r}"[:300]
            return
        for k in expected:
            yield from compare(expected[k], actual[k], f"{path}.{k}", rtol, atol)
        return
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            yield f"{path}: {actual!r} != {expected!r}"[:300]
            return
        for i, (e, a) in enumerate(zip(expected, actual)):
            yield from compare(e, a, f"{path}[{i}]", rtol, atol)
        return
    if (
        isinstance(expected, float)
        and isinstance(actual, (int, float))
        and not isinstance(actual, bool)
    ):
        if not np.isclose(actual, expected, rtol=rtol, atol=atol):
            yield f"{path}: {actual!r} != {expected!r}"
        return
    if type(expected) is not type(actual) or expected != actual:
        yield f"{path}: {actual!r} != {expected!r}"[:300]
