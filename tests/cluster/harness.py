"""Starting a test script as a whole local cluster (own sessions, timeout, group kill)."""

import os
import pathlib
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = pathlib.Path(__file__).resolve().parent / "scripts"

pytest.importorskip("grpc", reason="needs grpcio: pip install 'eagerflow[ps]'")

# The tasks of a cluster import the same modules at once: compiled once into a shared
# cache, they start faster than if each compiled them (where bytecode writing is off).
_PYCACHE = tempfile.mkdtemp(prefix="eagerflow-cluster-pycache-")


def run_cluster(script, jobs, *args, timeout=60, env=None, during=None):
    """Runs tests/cluster/scripts/SCRIPT as every task of ``jobs``; returns the outputs.

    Args:
        during: ``during(cluster)`` is called once every task has started (to kill one).

    Fails the test when the chief times out or exits non-zero, showing every task's output.
    """
    from eagerflow.distribute.cluster_launch import LocalCluster

    full = {"PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    full.update({"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": _PYCACHE})
    full.update(env or {})
    cluster = LocalCluster([str(SCRIPTS / script), *args], jobs, env=full)
    try:
        if during is not None:
            during(cluster)
        code, outputs = cluster.wait_chief(timeout)
    finally:
        cluster.close()
    text = "\n".join("--- %s:%d ---\n%s" % (job, i, out[-3000:])
                     for (job, i), out in sorted(cluster.outputs.items()))
    if code is None:
        pytest.fail("cluster %s timed out after %ds (every task killed)\n%s"
                    % (script, timeout, text))
    assert code == 0, text
    return cluster.outputs
