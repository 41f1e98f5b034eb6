"""Launching test scripts under mpirun (new session, timeout, process-group kill)."""

import os
import pathlib

import pytest

from eagerflow.distribute.launch import run_mpirun

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = pathlib.Path(__file__).resolve().parent / "scripts"


def mpirun(n, script, *args, timeout=90, env=None, cwd=None):
    """Runs tests/mpi/scripts/SCRIPT under ``mpirun -n N`` with this tree importable."""
    full = {"PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    full.update(env or {})
    path = script if os.path.isabs(str(script)) else str(SCRIPTS / script)
    result = run_mpirun(n, [path, *args], timeout=timeout, env=full, cwd=cwd)
    if result.timed_out:
        pytest.fail("mpirun -n %d %s timed out after %ds (process group killed)\n%s\n%s"
                    % (n, script, timeout, result.stdout[-3000:], result.stderr[-3000:]))
    return result


def ok(result, n):
    """Asserts the job exited 0 and every rank printed its "rank R OK" line."""
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    for r in range(n):
        assert ("rank %d OK" % r) in result.stdout, result.stdout[-4000:] + result.stderr[-4000:]
