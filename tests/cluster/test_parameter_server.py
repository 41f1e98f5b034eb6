"""ParameterServerStrategy and ClusterCoordinator on a local cluster of processes."""

import re

from tests.cluster.harness import run_cluster

JOBS = {"chief": 1, "ps": 2, "worker": 2}


def test_async_training_on_digits_reaches_the_quick_start_accuracy():
    # The quick start's model (64-128-10, Adam 3e-3) trained by two asynchronous workers.
    outputs = run_cluster("ps_digits.py", JOBS, "600", timeout=90)
    line = [s for s in outputs[("chief", 0)].splitlines() if s.startswith("chief OK")]
    assert line, outputs[("chief", 0)][-3000:]
    assert float(re.search(r"accuracy=([\d.]+)", line[0]).group(1)) >= 0.95


def test_killed_worker_closures_are_requeued_and_every_step_completes():
    outputs = run_cluster("ps_failures.py", JOBS, "worker", timeout=90)
    chief = outputs[("chief", 0)]
    assert "chief OK" in chief, chief[-3000:]
    assert "goes back in the queue" in chief and "is back" in chief


def test_closure_errors_name_the_worker_and_a_dead_ps_is_unavailable():
    outputs = run_cluster("ps_failures.py", JOBS, "errors", timeout=90)
    assert "chief OK" in outputs[("chief", 0)], outputs[("chief", 0)][-3000:]


def test_sharded_embedding_model_trained_synchronously_equals_one_process_sgd():
    outputs = run_cluster("ps_sharded.py", JOBS, timeout=60)
    assert "chief OK" in outputs[("chief", 0)], outputs[("chief", 0)][-3000:]


def test_partitioners_follow_tf():
    from eagerflow.distribute.experimental import partitioners as p

    assert p.FixedShardsPartitioner(4)([3, 2], "float32") == [3, 1]
    # 1000 x 100 float32 = 400,000 bytes: 256 KiB minimum per shard -> 1 shard
    assert p.MinSizePartitioner(max_shards=8)([1000, 100], "float32") == [1, 1]
    assert p.MinSizePartitioner(min_shard_bytes=100_000, max_shards=8)(
        [1000, 100], "float32") == [4, 1]
    assert p.MaxSizePartitioner(max_shard_bytes=100_000)([1000, 100], "float32") == [4, 1]
    assert p.MaxSizePartitioner(max_shard_bytes=100_000, max_shards=2)(
        [1000, 100], "float32") == [2, 1]


def test_sharded_variable_reads_assigns_and_gathers_like_one_variable():
    import numpy as np

    import eagerflow as ef
    from eagerflow.distribute.sharded_variable import ShardedVariable, shard_sizes

    assert shard_sizes(10, 3) == [4, 3, 3]
    full = np.arange(20.0).reshape(10, 2)
    parts = [ef.Variable(full[:4]), ef.Variable(full[4:7]), ef.Variable(full[7:])]
    sv = ShardedVariable(parts, name="table")
    assert list(sv.shape) == [10, 2] and sv.name == "table"
    np.testing.assert_array_equal(sv.numpy(), full)
    ids = np.array([[9, 0], [4, 6]])
    np.testing.assert_array_equal(ef.gather(sv, ids).numpy(), full[ids])
    np.testing.assert_array_equal(ef.nn.embedding_lookup(sv, ids).numpy(), full[ids])
    with ef.GradientTape() as tape:
        y = ef.reduce_sum(ef.gather(sv, ids) * 2.0)
    grads = tape.gradient(y, parts)
    want = np.zeros_like(full)
    np.add.at(want, ids.ravel(), 2.0)
    np.testing.assert_array_equal(np.concatenate([ef.convert_to_tensor(g).numpy()
                                                  for g in grads]), want)
    # An id that no shard holds raises, as a gather from one variable does (not zeros).
    for bad in ([0, 10], [-1]):
        with __import__("pytest").raises(ef.errors.InvalidArgumentError,
                                         match=r"not in \[0, 10\)"):
            ef.gather(sv, bad)
    traced = ef.function(lambda i: ef.gather(sv, i))
    np.testing.assert_array_equal(traced(ef.constant([9, 1])).numpy(), full[[9, 1]])
    with __import__("pytest").raises(ef.errors.InvalidArgumentError, match="must be in"):
        traced(ef.constant([3, 12]))
    sv.assign(full + 1)
    np.testing.assert_array_equal(parts[1].numpy(), full[4:7] + 1)
    with __import__("pytest").raises(ef.errors.InvalidArgumentError, match="shape"):
        sv.assign(np.zeros((3, 2)))


def test_keras_fit_schedules_steps_per_epoch_on_the_workers():
    outputs = run_cluster("ps_fit.py", JOBS, timeout=90)
    assert "chief OK" in outputs[("chief", 0)], outputs[("chief", 0)][-3000:]
