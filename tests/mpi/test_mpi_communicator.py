"""The MPI communicator under mpirun: results, buckets, deadlines and dead ranks."""

import os
import time

import pytest

from tests.mpi.harness import mpirun, ok

pytestmark = pytest.mark.mpi

FAST_DEADLINE = {"EAGERFLOW_COLLECTIVE_TIMEOUT": "4", "EAGERFLOW_STALL_WARNING": "2"}


@pytest.mark.parametrize("n", [2, 3])
def test_mpi_matches_rank_order_reference_and_buckets_match_per_tensor(n):
    # Every dtype and op, NaN/inf, empty and 0-d arrays, 16 MB buffers, allgather,
    # broadcast from each root, send/recv, split; bucketed equals per-tensor bit for bit.
    ok(mpirun(n, "collectives.py"), n)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_shared_memory_sums_match_local_reference(n):
    # Sums between ranks of one machine go through the shared window: every dtype, empty
    # arrays, buffers over one round, packed pieces across rounds; 5 ranks: segmented.
    res = mpirun(n, "shared_sums.py", *(["--quick"] if n == 5 else []), timeout=240)
    ok(res, n)
    assert ("full" if n <= 4 else "segmented") in res.stdout
    # Lone buffers of a few MB go through MPICH where it adds in rank order (2, 3 ranks).
    assert ("mpi-for-few-MB" in res.stdout) == (n <= 3)


def test_sums_without_shared_memory_use_mpi_allreduce_and_match():
    # The path across machines (or with EAGERFLOW_MPI_SHARED_MEMORY=0): MPI_Allreduce,
    # still equal to the rank-order reference and buckets equal per-tensor.
    env = {"EAGERFLOW_MPI_SHARED_MEMORY": "0"}
    res = mpirun(3, "shared_sums.py", env=env)
    ok(res, 3)
    assert "off" in res.stdout
    ok(mpirun(2, "collectives.py", env=env), 2)


def _run_fault(n, mode, tmp_path, env=None):
    """Runs faults.py MODE; returns the result, {rank: (pid, ready time)} and the end time.

    Times are wall-clock seconds, so the checks measure from the moment the ranks were
    ready (or the rank was killed), not from the job's start: MPI start-up and importing
    eagerflow take a few seconds on a quiet machine and much longer on a loaded one.
    """
    start = time.time()
    res = mpirun(n, "faults.py", mode, str(tmp_path), env=env, timeout=180)
    end = start + res.seconds
    ready = {}
    for r in range(n):
        path = tmp_path / ("rank-%d" % r)
        assert path.exists(), (r, res.stdout[-2000:], res.stderr[-2000:])
        pid, when = path.read_text().split()
        ready[r] = (int(pid), float(when))
    return res, ready, end


def _assert_all_gone(res):
    # No process of the job outlived mpirun (checked before the harness kills the group).
    assert res.survivors == [], (res.survivors, res.stderr[-2000:])


def test_rank_that_skips_a_collective_stops_every_rank_with_a_report(tmp_path):
    res, ready, end = _run_fault(3, "skip", tmp_path, env=FAST_DEADLINE)
    assert res.returncode != 0
    err = res.stderr
    # The stall warning comes first, then the deadline report, on the waiting ranks.
    assert "stall warning: allreduce 'grads' (collective #4) at training step 3" in err, err
    assert "deadline exceeded: allreduce 'grads'" in err, err
    assert ("rank 1 (host %s, pid %d) is not in a collective"
            % (os.uname().nodename, ready[1][0])) in err, err
    assert "in user_step_that_sleeps" in err, err  # where the missing rank is
    assert "faults.py" in err and "Waiting ranks:" in err
    for r in range(3):  # every rank, the missing one included, printed the message
        assert "[eagerflow rank %d] eagerflow MPI deadline exceeded" % r in err, err
    assert "finished" not in res.stdout
    # From the last rank ready: three short steps, the 4 s deadline, then the report and
    # MPI_Abort (well under a second on a quiet machine); the margin is for load.
    took = end - max(t for _, t in ready.values())
    assert took < 4 + 10, took
    _assert_all_gone(res)


def test_rank_killed_mid_epoch_ends_the_job_within_seconds(tmp_path):
    res, ready, end = _run_fault(3, "kill", tmp_path)
    assert res.returncode != 0
    assert "finished" not in res.stdout, res.stdout
    killed = float((tmp_path / "killed").read_text())
    # mpirun ends the job about 35 ms after the SIGKILL on a quiet machine; no rank waits
    # for a collective deadline (300 s here). The margin is for a loaded machine.
    assert end - killed < 10, end - killed
    _assert_all_gone(res)


def test_uncaught_exception_in_one_rank_stops_every_rank_with_its_message(tmp_path):
    res, ready, end = _run_fault(2, "raise", tmp_path)
    assert res.returncode != 0, res
    assert end - max(t for _, t in ready.values()) < 10  # no deadline (300 s) is waited
    assert "RuntimeError: rank 1 cannot read its shard" in res.stderr  # the traceback
    assert ("[eagerflow rank 0] rank 1 (host %s, pid %d) stopped with an uncaught RuntimeError"
            % (os.uname().nodename, ready[1][0])) in res.stderr, res.stderr
    _assert_all_gone(res)
