"""The graph pass that merges independent all-reduces (function/passes/collectives.py), on
2 logical CPUs: what merges, what must not, and that results do not change."""

import numpy as np

from tests.distribute.cases import Cases

run = Cases(__name__, cpus=2)


def _reduces(graph):
    return [n for n in graph.nodes if n.op == "CollectiveReduce"]


def _run_both(strategy, fn, *args):
    """fn's per-replica results, replica 0 first, with the graph optimizer on and off."""
    import eagerflow as ef

    def results():
        out = ef.function(fn)(*args)  # a new trace each time
        return [np.asarray(r) for o in out for r in strategy.experimental_local_results(o)]

    on = results()
    ef.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        off = results()
    finally:
        ef.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})
    return on, off


@run.case
def test_gradient_and_loss_reduces_merge_into_one_node_per_replica():
    import eagerflow as ef
    from eagerflow.function import passes

    s = ef.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with s.scope():
        w = ef.Variable(np.arange(6.0).reshape(3, 2), dtype=ef.float32)
        opt = ef.keras.optimizers.SGD(0.1)

    def step(x):
        def replica(x):
            with ef.GradientTape() as tape:
                loss = ef.reduce_sum(ef.matmul(x, w) ** 2) / 8.0
            opt.apply_gradients([(tape.gradient(loss, w), w)])
            # The loss summed over replicas after the update, as a metric would be.
            return ef.distribute.get_replica_context().all_reduce("SUM", loss)
        return s.experimental_local_results(s.run(replica, args=(x,)))[0]

    x = ef.constant(np.linspace(-1, 1, 12).reshape(4, 3), ef.float32)
    traced = ef.function(step)
    graph = traced.get_concrete_function(x).graph
    optimized = passes.optimize(graph)
    assert len(_reduces(graph)) == 4  # per replica: the gradient, then the loss
    merged = _reduces(optimized)
    assert len(merged) == 2 and sorted(n.attrs["rank"] for n in merged) == [0, 1]
    assert all(len(n.inputs) == 2 for n in merged)  # the gradient and the loss
    # The merged node sits where the gradient all-reduce was: before the variable update.
    order = [n.op for n in optimized.nodes]
    assert max(i for i, op in enumerate(order) if op == "CollectiveReduce") < \
        max(i for i, op in enumerate(order) if op.startswith("Assign"))

    start = w.numpy()
    on = [float(traced(x)) for _ in range(3)]
    after_on = w.numpy()
    w.assign(start)
    ef.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        plain = ef.function(step)
        off = [float(plain(x)) for _ in range(3)]
    finally:
        ef.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})
    assert on == off and np.array_equal(after_on, w.numpy())  # bit for bit


@run.case
def test_dependent_integer_and_different_reduces_stay_apart():
    import eagerflow as ef
    from eagerflow.function import passes

    s = ef.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

    def step(x):
        def replica(x):
            ctx = ef.distribute.get_replica_context()
            shifted = x - 1.0  # computed before the first all-reduce
            first = ctx.all_reduce("SUM", x * 2.0)
            dependent = ctx.all_reduce("SUM", first + 1.0)  # reads the first's result
            mean = ctx.all_reduce("MEAN", x)  # another reduction
            count = ctx.all_reduce("SUM", ef.cast(x > 0, ef.int32))  # not a float
            independent = ctx.all_reduce("SUM", shifted)  # joins the first
            return first, dependent, mean, count, independent
        return s.run(replica, args=(x,))

    x = ef.constant([1.5, -2.0])
    graph = ef.function(step).get_concrete_function(x).graph
    before = _reduces(graph)
    after = _reduces(passes.optimize(graph))
    assert len(before) == 10 and len(after) == 8, (len(before), len(after))
    widths = sorted(len(n.inputs) for n in after if n.attrs["rank"] == 0)
    assert widths == [1, 1, 1, 2], widths
    on, off = _run_both(s, step, x)
    for a, b in zip(on, off):
        assert a.dtype == b.dtype and np.array_equal(a, b), (on, off)
    # Both replicas hold x, so a sum is 2x on each replica.
    expected = [[6.0, -8.0], [14.0, -14.0], [1.5, -2.0], [2, 0], [1.0, -6.0]]
    for k, want in enumerate(expected):
        for r in range(2):
            np.testing.assert_array_equal(on[2 * k + r], np.array(want, on[2 * k].dtype))
    assert on[6].dtype == np.int32
