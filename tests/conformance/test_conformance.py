"""Compares eagerflow with TensorFlow's recorded results on the conformance programs.

The expected values in ``expected.json`` were recorded with real TensorFlow by
``scripts/record_conformance.py``; this test needs no TensorFlow.
"""

import json
import os
import warnings

import pytest

import eagerflow as tf
from tests.conformance import harness

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, "expected.json")) as _f:
    _EXPECTED = json.load(_f)

_PROGRAMS = harness.collect()

# Known eagerflow divergences from TensorFlow, each with the reason. The
# recorded values are not tuned; these programs run and must still fail
# (strict), so a fix shows up as an XPASS to be removed from this list.
XFAIL = {}


def test_every_program_is_recorded():
    recorded = set(_EXPECTED["programs"]) | set(_EXPECTED["excluded"])
    assert set(_PROGRAMS) == recorded, "re-run scripts/record_conformance.py"


@pytest.mark.parametrize("name", sorted(_EXPECTED["programs"]))
def test_program(name):
    expected = _EXPECTED["programs"][name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        actual = harness.run_program(_PROGRAMS[name], tf)
    mismatches = list(harness.compare(expected, actual, name))
    if name in XFAIL:
        if mismatches:
            pytest.xfail(XFAIL[name])
        pytest.fail(f"{name} now matches TensorFlow; remove it from XFAIL")
    assert not mismatches, "\n".join(mismatches[:10]) + (
        f"\nraised: {actual.get('message')}"
        if isinstance(actual, dict) and "message" in actual
        else ""
    )


def test_compare_detects_differences():
    """The comparison itself can fail: values, dtypes, shapes, NaNs and raised classes."""
    import numpy as np

    base = harness.normalize({"x": np.array([1.0, 2.0], np.float32), "n": 3})
    assert not list(harness.compare(base, base))
    for changed in (
        {"x": np.array([1.0, 2.001], np.float32), "n": 3},
        {"x": np.array([1.0, 2.0], np.float64), "n": 3},
        {"x": np.array([[1.0, 2.0]], np.float32), "n": 3},
        {"x": np.array([1.0, np.nan], np.float32), "n": 3},
        {"x": np.array([1.0, 2.0], np.float32), "n": 4},
        {"x": np.array([1.0, 2.0], np.float32)},
    ):
        assert list(harness.compare(base, harness.normalize(changed))), changed
    assert list(harness.compare({"raised": "ValueError"}, {"raised": "TypeError"}))
