"""Records the conformance suite's expected results with real TensorFlow.

Run with an interpreter that has TensorFlow installed (not eagerflow's venv)
from the repository root::

    TF_CPP_MIN_LOG_LEVEL=3 PYTHONPATH=$PWD /path/to/tf-venv/bin/python \
        scripts/record_conformance.py

All programs run in one process (importing TensorFlow is slow) and the results
are written atomically to ``tests/conformance/expected.json``.
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.conformance import harness  # noqa: E402

# Programs whose TensorFlow result depends on Keras-2-only or TF-internal
# behaviour; they are left out of the comparison, with the reason.
EXCLUDED = {}


def main():
    import tensorflow as tf

    results = {}
    raised_top = []
    for name, fn in harness.collect().items():
        if name in EXCLUDED:
            continue
        result = harness.run_program(fn, tf)
        if isinstance(result, dict) and "message" in result:
            # Only the class is compared; TF's message carries local file paths.
            raised_top.append(name)
            del result["message"]
        results[name] = result
    payload = {
        "recorded_with": {
            "tensorflow": tf.__version__,
            "keras": getattr(tf.keras, "__version__", "unknown"),
        },
        "excluded": EXCLUDED,
        "programs": results,
    }
    out = os.path.join(os.path.dirname(os.path.abspath(harness.__file__)), "expected.json")
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(out), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(payload, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, out)
    print(f"recorded {len(results)} programs; {len(raised_top)} raised at top level: {raised_top}")


if __name__ == "__main__":
    main()
