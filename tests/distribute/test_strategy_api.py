"""The Strategy API on 3 logical CPUs: contexts, run, reductions, merge_call, variables,
failures (numpy references)."""

import threading
import time

import numpy as np

from tests.distribute.cases import Cases

run = Cases(__name__, cpus=3)

DEVICES = ["/cpu:0", "/cpu:1", "/cpu:2"]


def _strategy(n=3, **kw):
    import eagerflow as ef

    return ef.distribute.MirroredStrategy(DEVICES[:n], **kw)


@run.case
def test_default_strategy_and_contexts():
    import eagerflow as ef
    from eagerflow import distribute as ds

    default = ds.get_strategy()
    assert default.num_replicas_in_sync == 1 and not ds.has_strategy()
    assert not ds.in_cross_replica_context()
    ctx = ds.get_replica_context()
    assert ctx is not None and int(ctx.replica_id_in_sync_group) == 0
    assert float(ctx.all_reduce(ds.ReduceOp.SUM, ef.constant(2.0))) == 2.0
    assert float(default.reduce("MEAN", ef.constant([1.0, 3.0]), axis=0)) == 2.0
    assert ds.get_cross_replica_context() is default

    s = _strategy()
    with s.scope():
        assert ds.get_strategy() is s and ds.has_strategy()
        assert ds.in_cross_replica_context() and ds.get_replica_context() is None
        try:
            with _strategy(2).scope():
                pass
            raise AssertionError("mixing strategies must fail")
        except RuntimeError as e:
            assert "Mixing different tf.distribute.Strategy objects" in str(e)
    assert ds.get_strategy() is default

    seen = []

    def fn():
        c = ds.get_replica_context()
        seen.append((int(c.replica_id_in_sync_group), c.num_replicas_in_sync,
                     ds.get_strategy() is s, ds.in_cross_replica_context(),
                     threading.current_thread().name, ef.constant(1.0).device))
        return c.replica_id_in_sync_group

    ids = s.run(fn)
    assert [int(v) for v in s.experimental_local_results(ids)] == [0, 1, 2]
    assert sorted(x[:4] for x in seen) == [(i, 3, True, False) for i in range(3)]
    assert len({x[4] for x in seen}) == 3  # one thread per replica
    assert sorted(x[5] for x in seen) == [
        "/job:localhost/replica:0/task:0/device:CPU:%d" % i for i in range(3)]
    assert ef.distribute.ReduceOp.from_variable_aggregation(
        ef.VariableAggregation.MEAN) is ds.ReduceOp.MEAN


@run.case
def test_reduce_sum_mean_axis_none_and_zero():
    import eagerflow as ef

    for n in (2, 3):
        s = _strategy(n)
        rows = [np.arange(6, dtype=np.float64).reshape(3, 2) * (i + 1) + i for i in range(n)]

        def fn(rows=rows):
            i = int(ef.distribute.get_replica_context().replica_id_in_sync_group)
            return ef.constant(rows[i])

        per = s.run(fn)
        np.testing.assert_allclose(s.reduce("SUM", per, axis=None).numpy(), sum(rows))
        np.testing.assert_allclose(s.reduce(ef.distribute.ReduceOp.MEAN, per, axis=None)
                                   .numpy(), sum(rows) / n)
        np.testing.assert_allclose(s.reduce("SUM", per, axis=0).numpy(),
                                   np.concatenate(rows).sum(0))
        np.testing.assert_allclose(s.reduce("MEAN", per, axis=0).numpy(),
                                   np.concatenate(rows).mean(0))
        np.testing.assert_allclose(s.gather(per, axis=0).numpy(), np.concatenate(rows))
        np.testing.assert_allclose(s.gather(per, axis=1).numpy(), np.concatenate(rows, 1))
        # A plain tensor: MEAN is itself, SUM across replicas is ambiguous (TF's error).
        assert float(s.reduce("MEAN", ef.constant(4.0), axis=None)) == 4.0
        try:
            s.reduce("SUM", ef.constant(4.0), axis=None)
            raise AssertionError("SUM of a non-distributed value must fail")
        except ValueError as e:
            assert "cannot be reduced with the given reduce op" in str(e)


@run.case
def test_all_reduce_all_gather_and_merge_call():
    import eagerflow as ef

    s = _strategy()

    def fn():
        ctx = ef.distribute.get_replica_context()
        i = ef.cast(ctx.replica_id_in_sync_group, ef.float64)
        total = ctx.all_reduce("SUM", {"a": i + 1.0, "b": [i * 2.0]})
        mean = ctx.all_reduce("MEAN", i)
        gathered = ctx.all_gather(ef.reshape(i, [1, 1]) + ef.zeros([1, 2], ef.float64), axis=1)

        def merge_fn(strategy, value, tag):
            assert ef.distribute.in_cross_replica_context()
            assert ef.distribute.get_replica_context() is None
            assert tag == "same"  # identical arguments are passed as they are
            return strategy.reduce("SUM", value, axis=None) * 10.0

        merged = ctx.merge_call(merge_fn, args=(i, "same"))
        return total, mean, gathered, merged

    total, mean, gathered, merged = s.run(fn)
    for k in range(3):
        assert float(s.experimental_local_results(total["a"])[k]) == 6.0
        assert float(s.experimental_local_results(total["b"][0])[k]) == 6.0
        assert float(s.experimental_local_results(mean)[k]) == 1.0
        assert s.experimental_local_results(gathered)[k].numpy().tolist() == [
            [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]]
    # The merge result is one tensor every replica returned: run gives it back as it is.
    assert float(merged) == 30.0


@run.case
def test_variables_mirrored_aggregation_and_tf_error():
    import eagerflow as ef

    s = _strategy()
    V = ef.VariableAggregation
    with s.scope():
        plain = ef.Variable(1.0, name="plain")
        summed = ef.Variable(1.0, aggregation=V.SUM)
        mean = ef.Variable(1.0, aggregation=V.MEAN)
        first = ef.Variable(1.0, aggregation=V.ONLY_FIRST_REPLICA)
        counter = ef.Variable(0, dtype=ef.int64, aggregation=V.ONLY_FIRST_REPLICA)
    assert isinstance(plain, ef.Variable) and isinstance(plain, ef.distribute.MirroredVariable)
    assert [c.device[-5:] for c in plain.values] == ["CPU:0", "CPU:1", "CPU:2"]
    assert plain.name == "plain:0" and plain.values[1].name.startswith("plain/replica_1")

    def fn():
        i = ef.cast(ef.distribute.get_replica_context().replica_id_in_sync_group, ef.float32)
        summed.assign_add(i + 1.0)      # deltas 1, 2, 3 summed: +6
        mean.assign(i * 3.0)            # mean of 0, 3, 6: 3
        first.assign(i + 5.0)           # replica 0's value: 5
        counter.assign_add(1)
        return plain * (i + 1.0)

    out = s.run(fn)
    for var, expect in ((summed, 7.0), (mean, 3.0), (first, 5.0), (counter, 1)):
        assert [float(c.numpy()) for c in var.values] == [expect] * 3, (var, expect)
    assert [float(x) for x in s.experimental_local_results(out)] == [1.0, 2.0, 3.0]

    try:
        s.run(lambda: plain.assign(2.0))
        raise AssertionError("assigning without an aggregation must fail")
    except ValueError as e:
        assert str(e).startswith("You must specify an aggregation method to update a "
                                 "MirroredVariable in Replica Context.")
    # Cross-replica writes reach every copy; a later step still works.
    plain.assign(4.0)
    assert [float(c.numpy()) for c in plain.values] == [4.0] * 3
    assert float(s.reduce("SUM", s.run(lambda: plain * 1.0), axis=None)) == 12.0
    # Variables made inside run are made once (cross-replica) and mirrored.
    made = s.run(lambda: ef.Variable(2.0, name="inside"))
    assert isinstance(made, ef.distribute.MirroredVariable)
    try:
        with s.scope():
            ef.Variable(1.0, synchronization=ef.VariableSynchronization.NONE, name="nosync")
        raise AssertionError("NONE synchronization must fail")
    except ValueError as e:
        assert "`NONE` variable synchronization mode is not supported" in str(e)


@run.case
def test_sync_on_read_variables():
    import eagerflow as ef

    s = _strategy()
    with s.scope():
        total = ef.Variable(0.0, synchronization=ef.VariableSynchronization.ON_READ,
                            aggregation=ef.VariableAggregation.SUM)
        avg = ef.Variable(0.0, synchronization=ef.VariableSynchronization.ON_READ,
                          aggregation=ef.VariableAggregation.MEAN)
    assert isinstance(total, ef.distribute.SyncOnReadVariable) and not total.trainable

    def fn():
        i = ef.cast(ef.distribute.get_replica_context().replica_id_in_sync_group, ef.float32)
        total.assign_add(i + 1.0)
        avg.assign(i * 2.0)
        return total.read_value()  # replica context: this replica's own copy

    local = s.run(fn)
    assert [float(x) for x in s.experimental_local_results(local)] == [1.0, 2.0, 3.0]
    assert float(total.read_value()) == 6.0 and float(avg) == 2.0
    assert float(s.reduce("SUM", total, axis=None)) == 6.0
    total.assign(9.0)  # cross-replica: the copies hold 3 each so the sum reads 9
    assert [float(c.numpy()) for c in total.values] == [3.0] * 3 and float(total) == 9.0
    try:
        total.assign_add(1.0)
        raise AssertionError("assign_add of a SUM on-read variable across replicas")
    except ValueError as e:
        assert "does not support `assign_add` in cross-replica context" in str(e)


@run.case
def test_replica_failure_stops_every_replica():
    import eagerflow as ef

    s = _strategy(timeout=30)

    class Boom(Exception):
        pass

    def fn():
        ctx = ef.distribute.get_replica_context()
        if int(ctx.replica_id_in_sync_group) == 1:
            raise Boom("replica 1 failed")
        return ctx.all_reduce("SUM", ef.constant(1.0))

    start = time.monotonic()
    try:
        s.run(fn)
        raise AssertionError("must raise")
    except Boom as e:
        assert str(e) == "replica 1 failed"
    assert time.monotonic() - start < 10  # the waiting replicas were woken, not timed out
    # The strategy recovers: the next step runs normally.
    out = s.run(lambda: ef.distribute.get_replica_context().all_reduce("SUM", 1.0))
    assert [float(x) for x in s.experimental_local_results(out)] == [3.0] * 3


@run.case
def test_replica_that_never_arrives_hits_the_deadline():
    import eagerflow as ef

    s = _strategy(timeout=0.5)

    def fn():
        ctx = ef.distribute.get_replica_context()
        if int(ctx.replica_id_in_sync_group) == 2:
            return ef.constant(0.0)  # skips the collective
        return ctx.all_reduce("SUM", ef.constant(1.0))

    start = time.monotonic()
    try:
        s.run(fn)
        raise AssertionError("must raise")
    except ef.errors.DeadlineExceededError as e:
        assert "replica 2 did not arrive" in str(e), str(e)
    assert time.monotonic() - start < 10


@run.case
def test_one_device_strategy():
    import eagerflow as ef

    s = ef.distribute.OneDeviceStrategy("/cpu:1")
    with s.scope():
        v = ef.Variable([1.0, 2.0])
    assert type(v) is ef.Variable and v.device.endswith("CPU:1")
    out = s.run(lambda x: v * x, args=(ef.constant(2.0),))
    assert out.numpy().tolist() == [2.0, 4.0] and out.device.endswith("CPU:1")
    assert float(s.reduce("SUM", out, axis=0)) == 6.0
    assert s.experimental_local_results(out)[0] is out


@run.case
def test_dataset_splits_and_values_from_function():
    import eagerflow as ef

    s = _strategy()
    # TF's example: range(8).batch(4) over 3 replicas gives [0, 1], [2, 3], [].
    got = [[v.numpy().tolist() for v in s.experimental_local_results(b)]
           for b in s.experimental_distribute_dataset(ef.data.Dataset.range(8).batch(4))]
    assert got == [[[0, 1], [2, 3], []], [[4, 5], [6, 7], []]]
    # A short last batch fills replicas in order; structures are split leaf by leaf.
    ds = ef.data.Dataset.from_tensor_slices(({"a": np.arange(7.0)}, np.arange(7))).batch(6)
    batches = list(s.experimental_distribute_dataset(ds))
    sizes = [[int(t.shape[0]) for t in s.experimental_local_results(b[1])] for b in batches]
    assert sizes == [[2, 2, 2], [1, 0, 0]]
    assert [t.device[-5:] for t in batches[0][0]["a"].values] == ["CPU:0", "CPU:1", "CPU:2"]
    # distribute_datasets_from_function: one pipeline, one batch per replica per step.
    contexts = []

    def dataset_fn(ctx):
        contexts.append(ctx)
        return ef.data.Dataset.range(7).batch(ctx.get_per_replica_batch_size(6))

    steps = [[v.numpy().tolist() for v in s.experimental_local_results(b)]
             for b in s.distribute_datasets_from_function(dataset_fn)]
    assert steps == [[[0, 1], [2, 3], [4, 5]], [[6], [], []]]
    assert (contexts[0].num_input_pipelines, contexts[0].input_pipeline_id,
            contexts[0].num_replicas_in_sync) == (1, 0, 3)
    try:
        contexts[0].get_per_replica_batch_size(7)
        raise AssertionError("7 does not split over 3 replicas")
    except ValueError as e:
        assert "is not divisible by `num_replicas_in_sync`" in str(e)
    values = s.experimental_distribute_values_from_function(
        lambda ctx: ef.constant(float(ctx.replica_id_in_sync_group)))
    assert [float(v) for v in values.values] == [0.0, 1.0, 2.0]
    assert [v.device[-5:] for v in values.values] == ["CPU:0", "CPU:1", "CPU:2"]
    assert float(s.reduce("SUM", values, axis=None)) == 3.0


@run.case
def test_traced_merge_call_all_gather_and_reduce():
    import eagerflow as ef

    s = _strategy()
    with s.scope():
        total = ef.Variable(0.0)

    @ef.function
    def step(x):
        def fn(x):
            ctx = ef.distribute.get_replica_context()
            i = ef.cast(ctx.replica_id_in_sync_group, ef.float32)
            gathered = ctx.all_gather(ef.reshape(x + i, [1]), axis=0)

            def merge_fn(strategy, value):
                summed = strategy.reduce("SUM", value, axis=None)
                strategy.extended.update(total, lambda v, d: v.assign_add(d), args=(summed,))
                return summed

            merged = ctx.merge_call(merge_fn, args=(i,))
            mean = ctx.all_reduce("MEAN", x * (i + 1.0))
            return gathered, merged, mean
        gathered, merged, mean = s.run(fn, args=(x,))
        return gathered, merged, s.reduce("MEAN", mean, axis=None), s.gather(gathered, axis=0)

    for call in range(2):
        gathered, merged, mean, everything = step(ef.constant(1.0))
        for g in s.experimental_local_results(gathered):
            assert g.numpy().tolist() == [1.0, 2.0, 3.0]
        assert float(merged) == 3.0 and float(mean) == 2.0
        assert everything.numpy().tolist() == [1.0, 2.0, 3.0] * 3
        assert [float(c.numpy()) for c in total.values] == [3.0 * (call + 1)] * 3
    assert step.experimental_get_tracing_count() == 1


@run.case
def test_compute_average_loss_and_scale_regularization_loss():
    import eagerflow as ef

    s = _strategy()
    per_example = [np.array([1.0, 2.0, 3.0]), np.array([4.0, 6.0]), np.zeros(0)]

    def fn():
        i = int(ef.distribute.get_replica_context().replica_id_in_sync_group)
        x = ef.constant(per_example[i])
        return (ef.nn.compute_average_loss(x),
                ef.nn.compute_average_loss(x, sample_weight=2.0, global_batch_size=10),
                ef.nn.scale_regularization_loss(ef.constant([3.0, 6.0])))

    avg, weighted, reg = s.run(fn)
    # Summed over replicas: the mean over the 5 examples actually there, (16 / 5).
    assert abs(float(s.reduce("SUM", avg, axis=None)) - 16.0 / 5) < 1e-12
    assert abs(float(s.reduce("SUM", weighted, axis=None)) - 32.0 / 10) < 1e-12
    assert [float(r) for r in s.experimental_local_results(reg)] == [3.0] * 3
    with s.scope():
        try:
            ef.nn.compute_average_loss(ef.constant([1.0]))
            raise AssertionError("cross-replica context must be refused")
        except RuntimeError as e:
            assert "in cross replica context" in str(e)
    try:
        ef.nn.compute_average_loss(ef.constant(1.0))
        raise AssertionError("a scalar loss must be refused")
    except ValueError as e:
        assert "at least rank 1" in str(e)
    try:
        ef.nn.compute_average_loss(ef.constant([1.0]), global_batch_size=0)
        raise AssertionError("a zero batch must be refused")
    except ValueError as e:
        assert "positive integer" in str(e)


@run.case
def test_optimizer_refuses_variables_made_outside_the_scope():
    import eagerflow as ef
    from eagerflow import keras

    s = _strategy(2)
    outside = ef.Variable([1.0])
    with s.scope():
        opt = keras.optimizers.SGD(0.5)
    try:
        s.run(lambda: opt.apply_gradients([(ef.constant([1.0]), outside)]))
        raise AssertionError("must raise")
    except ValueError as e:
        assert "created outside the distribution strategy's scope" in str(e)
    assert outside.numpy().tolist() == [1.0]
