"""Running loads of hostile files in a child process with bounded memory and time.

A test builds its corpus in a temporary directory, then hands a list of cases to
:func:`run_cases`: each case is Python source that loads (and, when it loads, uses) one
file. The child runs every case under ``RLIMIT_AS`` and reports, per case, whether it was
refused with an eagerflow error (or a documented ``ValueError``/``TypeError``/``OSError``),
loaded, or raised anything else (a raw exception: a failure). The child's process group is
killed on timeout, so a hang fails the test instead of stalling the suite.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


_CHILD = r'''
import json, os, resource, sys, traceback
limit = int(sys.argv[2]) << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import numpy as np
import eagerflow as ef
from eagerflow import errors
cases = json.load(open(sys.argv[1]))
results = []
for case in cases:
    env = {"ef": ef, "np": np, "errors": errors, "os": os, "PATH": case["path"]}
    try:
        exec(compile(case["code"], "<case %s>" % case["name"], "exec"), env)
        outcome = "loaded"
        detail = ""
    except errors.OpError as exc:
        outcome, detail = "refused", "%s: %s" % (type(exc).__name__, str(exc)[:1000])
    except (ValueError, TypeError, OSError) as exc:
        outcome, detail = "refused-builtin", "%s: %s" % (type(exc).__name__, str(exc)[:1000])
    except BaseException as exc:  # noqa: BLE001 - what the test is looking for
        outcome = "raw"
        detail = "%s: %s\n%s" % (type(exc).__name__, str(exc)[:300],
                                 traceback.format_exc()[-1500:])
    results.append({"name": case["name"], "outcome": outcome, "detail": detail})
print("RESULTS " + json.dumps(results))
'''


def run_cases(cases, workdir, memory_mb=3072, timeout=240):
    """Runs ``cases`` (dicts with ``name``, ``path`` and ``code``) in one child process.

    Returns:
        ``{name: (outcome, detail)}``.
    """
    workdir = pathlib.Path(workdir)
    spec = workdir / "cases.json"
    spec.write_text(json.dumps([dict(c, code=textwrap.dedent(c["code"])) for c in cases]))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(spec), str(memory_mb)],
                            cwd=str(workdir), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("the hostile loads did not finish within %ds" % timeout) from None
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULTS ")]
    assert proc.returncode == 0 and lines, "child failed (rc %s):\n%s\n%s" % (
        proc.returncode, out[-3000:], err[-3000:])
    return {r["name"]: (r["outcome"], r["detail"]) for r in json.loads(lines[-1][8:])}


def record(suite, results):
    """Counts the cases and their outcomes (printed in the terminal summary)."""
    from tests.conftest import count

    for outcome, _ in results.values():
        count("hostile %s: %s" % (suite, outcome))
        count("hostile cases (all suites)")


def assert_safe(results, sentinels=(), allowed=("refused", "loaded")):
    """No raw exception, every outcome allowed, and no sentinel file exists."""
    bad = {k: v for k, v in results.items() if v[0] not in allowed}
    assert not bad, "\n".join("%s: %s %s" % (k, *v) for k, v in bad.items())
    for path in sentinels:
        assert not os.path.exists(path), "a payload ran: %s exists" % path
