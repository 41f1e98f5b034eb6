"""The pieces of multi-worker training that run without mpirun: options, resolvers, buckets."""

import json
import threading

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.distribute import cluster_resolver as cr
from eagerflow.distribute.bucketing import BucketPlan
from eagerflow.distribute.collective_util import (CommunicationImplementation,
                                                   CommunicationOptions)
from eagerflow.distribute.communicator import LocalCommunicator
from tests.fresh_interpreter import run_python


# -- CommunicationOptions -------------------------------------------------------------------
def test_communication_options_defaults_and_merge():
    o = CommunicationOptions()
    assert (o.bytes_per_pack, o.timeout_seconds, o.implementation, o.compression) == (
        0, None, CommunicationImplementation.AUTO, None)
    m = o.merge(CommunicationOptions(bytes_per_pack=1024, timeout_seconds=5,
                                     implementation="ring", compression="fp16"))
    assert (m.bytes_per_pack, m.timeout_seconds, m.implementation, m.compression) == (
        1024, 5.0, CommunicationImplementation.RING, "fp16")
    assert CommunicationOptions(timeout_seconds=7).merge(CommunicationOptions()).timeout_seconds \
        == 7.0


def test_shard_optimizer_updates_option_defaults_off_and_merges():
    assert CommunicationOptions().shard_optimizer_updates is None
    on = CommunicationOptions().merge(CommunicationOptions(shard_optimizer_updates=True))
    assert on.shard_optimizer_updates is True
    assert on.merge(CommunicationOptions()).shard_optimizer_updates is True
    assert on.merge(CommunicationOptions(shard_optimizer_updates=False)) \
        .shard_optimizer_updates is False
    # One worker has nothing to share the update with.
    strategy = ef.distribute.MultiWorkerMirroredStrategy(communication_options=on)
    assert strategy.extended._sharded_updates is None


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_row_split_gives_every_row_to_one_rank_and_evens_the_elements(size):
    from eagerflow.distribute.update_sharding import row_split

    shapes = [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,), (), (3, 2, 2)]
    split = row_split(shapes, size)
    owned = [0] * size
    for shape, ranges in zip(shapes, split):
        rows = shape[0] if shape else 1
        row = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        # Contiguous, in rank order, covering every row once.
        assert ranges[0][0] == 0 and ranges[-1][1] == rows, ranges
        for (lo, hi), (lo2, _) in zip(ranges, ranges[1:]):
            assert lo <= hi == lo2, ranges
        for r, (lo, hi) in enumerate(ranges):
            owned[r] += (hi - lo) * row
    total = sum(int(np.prod(s)) for s in shapes)
    assert sum(owned) == total
    # Each rank's share is within one (widest) row of an even split.
    assert max(abs(o - total / size) for o in owned) <= 512, owned
    assert row_split([(4, 2), (2,)], 2) == [[(0, 3), (3, 4)], [(0, 0), (0, 2)]]


@pytest.mark.parametrize("kwargs", [{"bytes_per_pack": -1}, {"bytes_per_pack": 1.5},
                                    {"timeout_seconds": 0}, {"timeout_seconds": "soon"},
                                    {"implementation": "carrier-pigeon"},
                                    {"compression": "int8"},
                                    {"shard_optimizer_updates": "yes"}])
def test_communication_options_reject_bad_values(kwargs):
    with pytest.raises(errors.InvalidArgumentError, match="CommunicationOptions|must|not"):
        CommunicationOptions(**kwargs)


# -- cluster resolvers ----------------------------------------------------------------------
def _tf_config(monkeypatch, config):
    monkeypatch.setenv("TF_CONFIG", config if isinstance(config, str) else json.dumps(config))


def test_tf_config_resolver_reads_tf_config_as_tf(monkeypatch):
    _tf_config(monkeypatch, {"cluster": {"chief": ["c:1"], "worker": ["a:2", "b:3"]},
                             "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"})
    r = cr.TFConfigClusterResolver()
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 1, "grpc")
    spec = r.cluster_spec()
    assert spec.as_dict() == {"chief": ["c:1"], "worker": ["a:2", "b:3"]}
    assert spec.num_tasks("worker") == 2 and spec.task_address("worker", 1) == "b:3"
    assert r.master() == "grpc://b:3" and r.master("chief", 0, rpc_layer="") == "c:1"
    assert (r.num_workers, r.worker_index) == (3, 2)  # the chief is worker 0
    assert cr.TFConfigClusterResolver(task_type="chief", task_id=0).worker_index == 0


def test_tf_config_resolver_without_tf_config_is_empty(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    r = cr.TFConfigClusterResolver()
    assert (r.task_type, r.task_id, r.master(), r.num_workers) == (None, None, "", 1)
    assert not r.cluster_spec()


@pytest.mark.parametrize("config,match", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}, "out of range"),
    ({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps", "index": 0}}, "not a job"),
    ({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}}, "integer"),
    ({"cluster": {"worker": [1]}, "task": {}}, "host:port"),
    ({"cluster": ["a:1"]}, "dict of job"),
])
def test_tf_config_resolver_rejects_bad_tf_config(monkeypatch, config, match):
    _tf_config(monkeypatch, config)
    with pytest.raises(errors.InvalidArgumentError, match=match):
        cr.TFConfigClusterResolver()


def test_launcher_detection(monkeypatch):
    for name in cr._LAUNCHER_SIZE_VARS:
        monkeypatch.delenv(name, raising=False)
    assert not cr.launched_by_mpi()
    monkeypatch.setenv("PMI_SIZE", "1")
    assert not cr.launched_by_mpi()
    monkeypatch.setenv("PMI_SIZE", "2")
    assert cr.launched_by_mpi()


def test_plain_python_is_a_one_worker_cluster_and_never_imports_mpi4py():
    out = run_python("""
        import sys, os
        for v in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"):
            os.environ.pop(v, None)
        import eagerflow
        import eagerflow.distribute
        from eagerflow.distribute.cluster_resolver import MPIClusterResolver
        r = MPIClusterResolver()
        print(r.num_workers, r.worker_index, r.cluster_spec().num_tasks("worker"),
              "mpi4py" in sys.modules)
    """)
    assert out.split() == ["1", "0", "1", "False"]


def test_blas_threads_are_shared_between_local_ranks():
    out = run_python("""
        import os
        for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.pop(v, None)
        os.environ["MPI_LOCALNRANKS"] = "64"
        import eagerflow
        from eagerflow.backend import cpu_threads
        print(os.environ["OPENBLAS_NUM_THREADS"], os.environ["OMP_NUM_THREADS"],
              cpu_threads.threads())
    """)
    assert out.split() == ["1", "1", "1"]  # BLAS and eagerflow's own kernel threads
    # The user's own choice wins.
    out = run_python("""
        import os
        os.environ["MPI_LOCALNRANKS"] = "2"
        os.environ["OPENBLAS_NUM_THREADS"] = "3"
        import eagerflow
        print(os.environ["OPENBLAS_NUM_THREADS"])
    """)
    assert out.split() == ["3"]


# -- buckets --------------------------------------------------------------------------------
def test_bucket_plan_reverse_order_one_dtype_per_bucket_cap_and_lone_tensors():
    shapes = [(4,), (8,), (2, 2), (100,), (3,), (3,)]
    dtypes = [np.float32, np.float32, np.float64, np.float32, np.float64, np.float32]
    plan = BucketPlan(shapes, dtypes, bytes_per_pack=56)
    # Reverse creation order: 5, 4, 3 (400 B > cap: in place), 2, 1, 0.
    members = [[m[0] for m in b.members] for b in plan.buckets]
    assert members == [[5, 1], [4, 2]], members  # f32: 12 + 32 B, then 0 (16 B) overflows 56
    assert [b.dtype for b in plan.buckets] == [np.float32, np.float64]
    assert plan.in_place == [3, 0]  # over the cap; alone in its bucket
    assert all(b.nbytes <= 56 for b in plan.buckets)
    assert BucketPlan(shapes, dtypes).cap == 4 << 20


def test_bucket_plan_single_process_returns_views_and_checks_shapes():
    grads = [np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)]
    plan = BucketPlan.for_arrays(grads)
    comm = LocalCommunicator.create_group(1)[0]
    out = plan.all_reduce(comm, grads, "mean")
    assert [o.tolist() for o in out] == [[0, 1, 2], [[1, 1], [1, 1]]]
    assert all(o.base is plan.buckets[0].flat for o in out)  # views into the flat buffer
    with pytest.raises(errors.InvalidArgumentError, match=r"gradient 1 .* float32 \[3\].*"
                       r"built for float32 \[2, 2\]"):
        plan.all_reduce(comm, [grads[0], np.ones(3, np.float32)])
    with pytest.raises(errors.InvalidArgumentError, match="not 'sum' or 'mean'"):
        plan.all_reduce(comm, grads, "max")


def _on_threads(n, fn):
    comms = LocalCommunicator.create_group(n, default_timeout=20)
    results, failures = [None] * n, [None] * n

    def body(r):
        try:
            results[r] = fn(comms[r])
        except Exception as e:  # noqa: BLE001 - collected for the assertions
            failures[r] = e

    threads = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results, failures


def test_bucketed_equals_per_tensor_on_local_communicator():
    shapes = [(3, 4), (5,), (50, 50), (0,), (7,)]

    def grads(r):
        rng = np.random.default_rng(r)
        return [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def work(comm):
        want = comm.allreduce(grads(comm.rank), "mean")
        plan = BucketPlan(shapes, [np.float32] * 5, bytes_per_pack=256)
        return want, plan.all_reduce(comm, grads(comm.rank), "mean")

    results, failures = _on_threads(3, work)
    assert failures == [None] * 3, failures
    for want, got in results:
        for w, g in zip(want, got):
            assert w.dtype == g.dtype and np.array_equal(w, g)


def test_plan_mismatch_names_the_first_differing_variable_on_every_rank():
    def work(comm):
        shapes = [(3,), (4, 4), (5,)] if comm.rank != 1 else [(3,), (4, 5), (5,)]
        plan = BucketPlan(shapes, [np.float32] * 3, names=["bias", "dense/kernel", "out"])
        return plan.all_reduce(comm, [np.ones(s, np.float32) for s in shapes])

    _, failures = _on_threads(3, work)
    for e in failures:
        assert isinstance(e, errors.InvalidArgumentError), failures
        assert "differ between ranks 0 and 1 at variable 1 (dense/kernel" in str(e)
        assert "float32 [4, 4] on rank 0, float32 [4, 5] on rank 1" in str(e)

    def fewer(comm):
        shapes = [(3,), (4,)] if comm.rank == 0 else [(3,)]
        plan = BucketPlan(shapes, [np.float32] * len(shapes))
        return plan.all_reduce(comm, [np.ones(s, np.float32) for s in shapes])

    _, failures = _on_threads(2, fewer)
    assert all("rank 0 has 2 and rank 1 has 1" in str(e) for e in failures), failures


@pytest.mark.parametrize("compression,tol", [("fp16", 1e-3), ("bf16", 1e-2)])
def test_compressed_buckets_are_close_and_off_by_default(compression, tol):
    shapes = [(64,), (32,)]

    def grads(r):
        rng = np.random.default_rng(10 + r)
        return [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def work(comm):
        plan = BucketPlan(shapes, [np.float32] * 2, compression=compression)
        exact = BucketPlan(shapes, [np.float32] * 2)
        return ([g.copy() for g in exact.all_reduce(comm, grads(comm.rank))],
                plan.all_reduce(comm, grads(comm.rank)))

    results, failures = _on_threads(2, work)
    assert failures == [None, None], failures
    exact, lossy = results[0]
    for e, g in zip(exact, lossy):
        assert g.dtype == np.float32
        assert not np.array_equal(e, g)  # it is lossy
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


def test_bucket_buffers_are_reused_only_when_no_gradient_is_kept():
    grads = [np.full(3, 1.0, np.float32), np.full(2, 2.0, np.float32)]
    plan = BucketPlan.for_arrays(grads)
    comm = LocalCommunicator.create_group(1)[0]
    plan.all_reduce(comm, grads)
    flat_id = id(plan.buckets[0].flat)
    plan.all_reduce(comm, grads)
    assert id(plan.buckets[0].flat) == flat_id  # nothing kept: the same buffer
    kept = plan.all_reduce(comm, grads)
    again = plan.all_reduce(comm, [np.full(3, 5.0, np.float32), np.full(2, 6.0, np.float32)])
    assert kept[0].tolist() == [1, 1, 1] and kept[1].tolist() == [2, 2]  # unchanged
    assert again[0].tolist() == [5, 5, 5] and again[0].base is not kept[0].base
    part = again[1][:1]  # a view of a gradient also keeps its buffer
    del again
    plan.all_reduce(comm, grads)
    assert part.tolist() == [6]


def test_multi_worker_strategy_single_process_and_bad_resolvers(monkeypatch):
    import eagerflow as ef

    for name in cr._LAUNCHER_SIZE_VARS:
        monkeypatch.delenv(name, raising=False)
    s = ef.distribute.MultiWorkerMirroredStrategy()
    assert s.num_replicas_in_sync == 1 and s.extended.should_checkpoint
    with s.scope():
        v = ef.Variable([1.0, 2.0])
    assert s.run(lambda: v * 2.0).numpy().tolist() == [2.0, 4.0]
    _tf_config(monkeypatch, {"cluster": {"worker": ["a:1", "b:1"]},
                             "task": {"type": "worker", "index": 1}})
    with pytest.raises(errors.InvalidArgumentError, match=r"worker 1 of 2 but MPI started "
                       r"this process as rank 0 of 1; launch with `mpirun -n 2"):
        ef.distribute.MultiWorkerMirroredStrategy(cr.TFConfigClusterResolver())
    _tf_config(monkeypatch, {"cluster": {"worker": ["a:1"]},
                             "task": {"type": "worker", "index": 0}})
    one = ef.distribute.MultiWorkerMirroredStrategy(cr.TFConfigClusterResolver())
    assert one.cluster_resolver.task_type == "worker"
    with pytest.raises(errors.InvalidArgumentError, match="NCCL is not available"):
        ef.distribute.MultiWorkerMirroredStrategy(
            communication_options=CommunicationOptions(implementation="NCCL"))


@pytest.mark.parametrize("op", ["max", "min", "prod"])
def test_local_communicator_reduces_0d_arrays_on_three_ranks(op):
    # (Found by the MPI-versus-local comparison: a 0-d max of two arrays is a numpy scalar.)
    results, failures = _on_threads(3, lambda c: c.allreduce([np.array(c.rank + 2.0)], op)[0])
    assert failures == [None] * 3, failures
    want = {"max": 4.0, "min": 2.0, "prod": 24.0}[op]
    assert all(r.shape == () and float(r) == want for r in results), results


def test_gradient_reducer_never_writes_the_given_arrays():
    # Bucketed gradients are only read; one over the cap (reduced in place) is copied.
    from eagerflow.distribute.multi_worker_mirrored_strategy import GradientReducer

    def grads(r):
        return [np.full(100, r + 1.0, np.float32), np.full(3, 10.0 * r, np.float32),
                np.full(2, r - 5.0, np.float32)]

    def work(comm):
        reducer = GradientReducer(comm, CommunicationOptions(bytes_per_pack=64))
        given = grads(comm.rank)
        outs = [[o.copy() for o in reducer.reduce(given, op)] for op in ("sum", "mean")]
        return given, outs

    results, failures = _on_threads(2, work)
    assert failures == [None, None], failures
    for r, (given, (summed, mean)) in enumerate(results):
        for g, want in zip(given, grads(r)):
            np.testing.assert_array_equal(g, want)  # untouched
        for s, m, a, b in zip(summed, mean, grads(0), grads(1)):
            np.testing.assert_array_equal(s, a + b)
            np.testing.assert_array_equal(m, (a + b) / 2)


def test_node_sum_routes_lone_few_mb_buffers_to_mpi_only_where_mpich_is_rank_ordered():
    # The window sums everything on 4 or more ranks (MPICH's tree associates differently
    # there), and below 2 MiB, above 16 MiB, or for 8/16-bit dtypes on any rank count.
    from eagerflow.distribute.mpi_shared import MPI_FASTER_BYTES, NodeSum

    class FakeComm:
        def __init__(self, size):
            self.size = size

        def Get_rank(self):
            return 0

        def Get_size(self):
            return self.size

    lo, hi = MPI_FASTER_BYTES
    cases = [(2, np.float32, 4 << 20, True), (3, np.float64, hi, True),
             (3, np.int32, lo + 4, True), (2, np.complex64, 8 << 20, True),
             (2, np.float32, lo, False), (2, np.float32, hi + 4, False),
             (4, np.float32, 4 << 20, False), (5, np.float64, 4 << 20, False),
             (2, np.float16, 4 << 20, False), (2, np.uint8, 4 << 20, False),
             (2, np.bool_, 4 << 20, False)]
    for size, dtype, nbytes, want in cases:
        node = NodeSum(None, FakeComm(size))
        buf = np.empty(nbytes // np.dtype(dtype).itemsize, dtype)
        assert node.prefers_mpi(buf) is want, (size, dtype, nbytes)
