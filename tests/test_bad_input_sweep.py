"""The hypothesis bad-input sweep over the public API (see tests/bad_input_sweep.py).

It runs in a fresh interpreter under an address-space limit, so that a call that tries
to allocate a huge array fails there (and must fail cleanly) instead of taking this
machine's memory; every call has a deadline. The number of calls is reported in the
test summary ("eagerflow sweep counts").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import count
from tests.fresh_interpreter import ROOT

pytest.importorskip("hypothesis")

EXAMPLES = 16  # per callable: about 5,000 calls, 10-25 s of CPU
MEMORY_LIMIT = 4 << 30


def _limit_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_public_api_raises_only_clean_errors_on_bad_input():
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.bad_input_sweep", "--examples", str(EXAMPLES)],
        cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_limit_memory, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        pytest.fail("the bad-input sweep ran past 600 s")
    assert proc.returncode == 0, err[-3000:]
    report = json.loads(out.strip().splitlines()[-1])
    count("bad-input sweep (hypothesis): public API calls", report["calls"])
    count("bad-input sweep (hypothesis): public callables", report["callables"])
    failures = ["%s: %s: %s\n%s" % (f["exception"], f["call"], f["message"], f["where"])
                for f in report["failures"]]
    assert not failures, "%d of %d calls raised a raw exception:\n%s" % (
        len(failures), report["calls"], "\n".join(failures[:20]))
    # The sweep really ran: every namespace and the layers, most calls refused.
    assert report["callables"] >= 300
    assert report["calls"] >= report["callables"] * EXAMPLES * 0.9
    assert report["raised_allowed"] > report["calls"] // 2
