"""The MPI communicator under mpirun: results, buckets, deadlines and dead ranks."""

import os
import re
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


def _pids(out):
    # Not anchored to line starts: mpirun may forward two ranks' lines interleaved.
    return {int(r): int(p) for r, p in re.findall(r"pid (\d+) (\d+)", out)}


def _assert_all_gone(res):
    # No process of the job outlived mpirun (checked before the harness kills the group).
    assert res.survivors == [], (res.survivors, res.stderr[-2000:])


def test_rank_that_skips_a_collective_stops_every_rank_with_a_report():
    start = time.monotonic()
    res = mpirun(3, "faults.py", "skip", env=FAST_DEADLINE, timeout=60)
    took = time.monotonic() - start
    assert res.returncode != 0
    pids = _pids(res.stdout)
    assert len(pids) == 3, res.stdout
    err = res.stderr
    # The stall warning comes first, then the deadline report, on the waiting ranks.
    assert "stall warning: allreduce 'grads' (collective #4) at training step 3" in err, err
    assert "deadline exceeded: allreduce 'grads'" in err, err
    assert ("rank 1 (host %s, pid %d) is not in a collective" % (os.uname().nodename, pids[1])
            ) in err, err
    assert "in user_step_that_sleeps" in err, err  # where the missing rank is
    assert "faults.py" in err and "Waiting ranks:" in err
    for r in range(3):  # every rank, the missing one included, printed the message
        assert "[eagerflow rank %d] eagerflow MPI deadline exceeded" % r in err, err
    assert "finished" not in res.stdout
    # 4 s deadline + start-up (about 2 s here, more on a loaded machine) + a few seconds.
    assert took < 4 + 15, took
    _assert_all_gone(res)


def test_rank_killed_mid_epoch_ends_the_job_within_seconds():
    res = mpirun(3, "faults.py", "kill", timeout=60)
    assert res.returncode != 0
    pids = _pids(res.stdout)
    assert len(pids) == 3 and "finished" not in res.stdout, res.stdout
    assert res.seconds < 15, res.seconds  # the ranks do not wait for any deadline (300 s)
    _assert_all_gone(res)


def test_uncaught_exception_in_one_rank_stops_every_rank_with_its_message():
    res = mpirun(2, "faults.py", "raise", timeout=60)
    assert res.returncode != 0 and res.seconds < 15, res
    assert "RuntimeError: rank 1 cannot read its shard" in res.stderr  # the traceback
    assert ("[eagerflow rank 0] rank 1 (host %s, pid %d) stopped with an uncaught RuntimeError"
            % (os.uname().nodename, _pids(res.stdout)[1])) in res.stderr, res.stderr
    _assert_all_gone(res)
