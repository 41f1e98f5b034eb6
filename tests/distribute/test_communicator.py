"""LocalCommunicator: collectives between threads, deadlines, aborts (numpy references)."""

import threading
import time

import numpy as np
import pytest

from eagerflow import errors
from eagerflow.distribute.communicator import Communicator, LocalCommunicator


def run_ranks(size, work, timeout=10.0, default_timeout=5.0):
    """Runs ``work(comm)`` on ``size`` threads; returns (results, failures) by rank."""
    comms = LocalCommunicator.create_group(size, default_timeout)
    results, failures = [None] * size, [None] * size

    def body(r):
        try:
            results[r] = work(comms[r])
        except BaseException as exc:  # noqa: BLE001 - inspected by the test
            failures[r] = exc

    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a rank hung"
    return results, failures


def data(rank, dtype=np.float64, shape=(3, 4)):
    rng = np.random.default_rng(rank)
    return (rng.standard_normal(shape) * 10).astype(dtype)


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
def test_allreduce_matches_numpy_in_rank_order(size, op):
    ref_fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}
    results, failures = run_ranks(size, lambda c: c.allreduce(
        [data(c.rank), data(c.rank + 10, shape=(5,))], op))
    assert failures == [None] * size
    for i, shape in enumerate([(3, 4), (5,)]):
        stack = np.stack([data(r + 10 * i, shape=shape) for r in range(size)])
        expect = ref_fn[op](stack, axis=0)
        if op == "sum" and size == 3:
            expect = stack[0] + stack[1] + stack[2]  # exactly the rank order
        for r in range(size):
            np.testing.assert_allclose(results[r][i], expect, rtol=1e-12)
    # Every rank gets bit-identical results.
    for r in range(1, size):
        for a, b in zip(results[0], results[r]):
            assert np.array_equal(a, b)


def test_allreduce_in_place_into_writable_arrays_and_integers():
    arrays = {}

    def work(c):
        a = np.full(4, c.rank + 1, np.int32)
        arrays[c.rank] = a
        ro = np.arange(3.0)
        ro.flags.writeable = False
        out = c.allreduce([a, ro], "mean")
        return out

    results, failures = run_ranks(3, work)
    assert failures == [None] * 3
    for r in range(3):
        assert results[r][0] is arrays[r]  # reduced in place
        assert results[r][0].tolist() == [2, 2, 2, 2]  # (1+2+3)//3
        assert results[r][1].tolist() == [0.0, 1.0, 2.0]


def test_allgather_broadcast_barrier_send_recv():
    def work(c):
        g = c.allgather(np.arange(c.rank + 1, dtype=np.float32).reshape(-1, 1) + 10 * c.rank)
        b = c.broadcast([np.full(2, float(c.rank)), np.zeros(1)], root=1)
        c.barrier()
        c.send(np.array([c.rank, 7]), (c.rank + 1) % c.size, tag=5)
        got = c.recv((c.rank - 1) % c.size, tag=5)
        return g, b, got

    results, failures = run_ranks(3, work)
    assert failures == [None] * 3
    for r in range(3):
        g, b, got = results[r]
        assert g.ravel().tolist() == [0.0, 10.0, 11.0, 20.0, 21.0, 22.0]
        assert b[0].tolist() == [1.0, 1.0] and b[1].tolist() == [0.0]
        assert got.tolist() == [(r - 1) % 3, 7]


def test_split_groups_by_color_and_key():
    def work(c):
        sub = c.split(c.rank % 2, key=-c.rank)
        out = sub.allreduce([np.array([float(c.rank)])])[0]
        return sub.rank, sub.size, float(out[0])

    results, failures = run_ranks(4, work)
    assert failures == [None] * 4
    # Evens {0, 2} ordered by key -rank: 2 first; odds {1, 3}: 3 first.
    assert results == [(1, 2, 2.0), (1, 2, 4.0), (0, 2, 2.0), (0, 2, 4.0)]


def test_missing_rank_raises_deadline_naming_it():
    def work(c):
        if c.rank == 2:
            return "skipped"
        return c.allreduce([np.ones(2)], timeout=0.3, name="grads")

    start = time.monotonic()
    results, failures = run_ranks(3, work)
    assert time.monotonic() - start < 5
    assert results[2] == "skipped"
    for r in (0, 1):
        assert isinstance(failures[r], (errors.DeadlineExceededError, errors.CancelledError))
    deadline = [f for f in failures if isinstance(f, errors.DeadlineExceededError)]
    assert deadline, failures
    msg = str(deadline[0])
    assert "allreduce 'grads'" in msg and "replica 2 did not arrive" in msg
    assert "step 0" in msg


def test_abort_wakes_every_waiting_rank():
    def work(c):
        if c.rank == 0:
            time.sleep(0.2)
            c.abort("replica 0 hit bad data")
            return None
        return c.allreduce([np.ones(1)], timeout=30)

    start = time.monotonic()
    _, failures = run_ranks(3, work)
    assert time.monotonic() - start < 5
    for r in (1, 2):
        assert isinstance(failures[r], errors.AbortedError)
        assert "bad data" in str(failures[r])


def test_mismatched_shapes_and_collectives_fail_everywhere():
    _, failures = run_ranks(2, lambda c: c.allreduce([np.ones(2 + c.rank)]))
    assert all(isinstance(f, errors.InvalidArgumentError) for f in failures)
    assert "array 0 is float64 [2] on rank 0 but float64 [3] on rank 1" in str(failures[0])

    def work(c):
        return c.barrier() if c.rank == 0 else c.allgather(np.ones(1))

    _, failures = run_ranks(2, work)
    assert any(isinstance(f, errors.InternalError) and "Collective mismatch" in str(f)
               for f in failures)
    assert all(f is not None for f in failures)


def test_interface_and_argument_checks():
    assert issubclass(LocalCommunicator, Communicator)
    (c,) = LocalCommunicator.create_group(1, default_timeout=2.5)
    assert (c.rank, c.size, c.default_timeout) == (0, 1, 2.5)
    assert c.allreduce([np.array([3.0])], "sum")[0].tolist() == [3.0]
    with pytest.raises(errors.InvalidArgumentError, match="Unknown reduction"):
        c.allreduce([np.ones(1)], "median")
    with pytest.raises(errors.InvalidArgumentError, match="outside a group of 1"):
        c.send(np.ones(1), 3, tag=0)
    with pytest.raises(errors.DeadlineExceededError, match="tag 9"):
        c.recv(0, tag=9, timeout=0.05)
    with pytest.raises(errors.InvalidArgumentError, match="at least one rank"):
        LocalCommunicator.create_group(0)
