"""MirroredStrategy training equals single-device training (custom loops and Keras fit),
on 2 and 3 logical CPUs, eager and traced, float64 so the comparison is tight."""

import numpy as np

from tests.distribute.cases import Cases

run = Cases(__name__, cpus=3, timeout=600)

RTOL = 1e-6


def _data(n=26, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 5)), rng.integers(0, 3, n)


def _strategies():
    import eagerflow as ef

    return [ef.distribute.MirroredStrategy(["/cpu:%d" % i for i in range(n)]) for n in (2, 3)]


def _close(a, b, what):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    err = np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)) if a.size else 0.0
    assert a.shape == b.shape and err <= RTOL, "%s differs: relative error %g" % (what, err)


def _model(keras, seed_weights=None):
    model = keras.Sequential([
        keras.Input((5,), dtype="float64", name="features"),
        keras.layers.Dense(4, activation="tanh", dtype="float64",
                           kernel_regularizer=keras.regularizers.L2(0.01)),
        keras.layers.Dense(3, dtype="float64")])
    if seed_weights is not None:
        model.set_weights(seed_weights)
    return model


def _custom_loop(strategy, opt_name, traced, w0):
    import eagerflow as ef
    from eagerflow import keras

    X, Y = _data()
    with strategy.scope():
        model = _model(keras, w0)
        opt = keras.optimizers.SGD(0.1, momentum=0.9) if opt_name == "sgd" else \
            keras.optimizers.Adam(0.01)
    def replica_step(x, y):
        with ef.GradientTape() as tape:
            per_example = ef.nn.sparse_softmax_cross_entropy_with_logits(
                y, model(x, training=True))
            loss = ef.nn.compute_average_loss(per_example) + \
                ef.nn.scale_regularization_loss(ef.add_n(model.losses))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))  # built lazily, here
        return loss

    def step(x, y):
        return strategy.reduce("SUM", strategy.run(replica_step, args=(x, y)), axis=None)

    if traced:
        step = ef.function(step)
    dataset = strategy.experimental_distribute_dataset(
        ef.data.Dataset.from_tensor_slices((X, Y)).batch(8))  # 8, 8, 8 and 2
    losses = [float(step(x, y)) for _ in range(3) for x, y in dataset]
    return np.array(losses), [v.numpy() for v in model.weights], model, opt, step


@run.case
def test_custom_loop_sgd_momentum_and_adam_equal_one_device():
    import eagerflow as ef
    from eagerflow import keras

    one = ef.distribute.OneDeviceStrategy("/cpu:0")
    with one.scope():
        w0 = _model(keras).get_weights()
    for opt_name in ("sgd", "adam"):
        for traced in (False, True):
            ref_losses, ref_weights, _, _, _ = _custom_loop(one, opt_name, traced, w0)
            for strategy in _strategies():
                losses, weights, model, opt, step = _custom_loop(strategy, opt_name, traced,
                                                                 w0)
                what = "%s %s %d replicas" % (opt_name, "traced" if traced else "eager",
                                              strategy.num_replicas_in_sync)
                _close(losses, ref_losses, what + " losses")
                for w, r in zip(weights, ref_weights):
                    _close(w, r, what + " weights")
                # Every copy of every variable (and slot) is identical.
                for v in list(model.weights) + list(opt.variables):
                    assert isinstance(v, ef.distribute.MirroredVariable), v
                    first = v.values[0].numpy()
                    assert all(np.array_equal(c.numpy(), first) for c in v.values), v.name
                assert int(opt.iterations) == 12
                if traced:
                    # One trace drives every replica (full batches, then the short last
                    # batch's shapes): the count does not grow with the replicas.
                    assert step.experimental_get_tracing_count() == 2


@run.case
def test_traced_step_places_replicas_and_collectives_on_their_devices():
    import eagerflow as ef

    s = _strategies()[1]
    with s.scope():
        v = ef.Variable([1.0, 2.0])

    @ef.function
    def step(x):
        def fn(x):
            ctx = ef.distribute.get_replica_context()
            return ctx.all_reduce("SUM", x * v)
        return s.run(fn, args=(x,))

    out = step(ef.constant(2.0))
    assert [o.numpy().tolist() for o in s.experimental_local_results(out)] == [[6.0, 12.0]] * 3
    graph = step.get_concrete_function(ef.constant(2.0)).graph
    nodes = [n for n in graph.nodes if n.op == "CollectiveReduce"]
    assert sorted(n.device[-5:] for n in nodes) == ["CPU:0", "CPU:1", "CPU:2"]
    assert len({n.attrs["instance_key"] for n in nodes}) == 1
    assert sorted(n.attrs["rank"] for n in nodes) == [0, 1, 2]
    assert step.experimental_get_tracing_count() == 1
    step(ef.constant(3.0))
    assert step.experimental_get_tracing_count() == 1


@run.case
def test_fit_evaluate_predict_equal_one_device_with_global_logs():
    import eagerflow as ef
    from eagerflow import keras

    X, Y = _data()

    class Logs(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.batches = []

        def on_train_batch_end(self, batch, logs=None):
            self.batches.append(dict(logs))

    def train(strategy, w0, eager):
        with strategy.scope():
            model = _model(keras, w0)
            model.compile(keras.optimizers.Adam(0.01),
                          keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          metrics=["accuracy"], run_eagerly=eager)
        logs = Logs()
        history = model.fit(X, Y, batch_size=8, epochs=3, verbose=0, shuffle=False,
                            callbacks=[logs])
        return (model, history.history, logs.batches,
                model.evaluate(X, Y, batch_size=8, verbose=0),
                model.predict(X, batch_size=8, verbose=0))

    one = ef.distribute.OneDeviceStrategy("/cpu:0")
    with one.scope():
        w0 = _model(keras).get_weights()
    ref = train(one, w0, False)
    for eager in (False, True):
        for strategy in _strategies():
            model, history, batches, ev, pred = train(strategy, w0, eager)
            what = "fit %d replicas%s" % (strategy.num_replicas_in_sync,
                                          " eager" if eager else "")
            for w, r in zip(model.get_weights(), ref[0].get_weights()):
                _close(w, r, what + " weights")
            for key in ("loss", "accuracy"):
                _close(history[key], ref[1][key], what + " history " + key)
            # Callbacks see the global values of every batch, not one replica's.
            assert len(batches) == len(ref[2]) == 12
            for got, want in zip(batches, ref[2]):
                _close([got["loss"], got["accuracy"]], [want["loss"], want["accuracy"]],
                       what + " batch logs")
            _close(ev, ref[3], what + " evaluate")
            _close(pred, ref[4], what + " predict")
            assert isinstance(model.weights[0], ef.distribute.MirroredVariable)
            assert model.distribute_strategy is strategy


@run.case
def test_checkpoint_and_saved_model_of_a_mirrored_model_load_elsewhere():
    import os
    import tempfile

    import eagerflow as ef
    from eagerflow import keras
    from tests.fresh_interpreter import run_python_ok

    X, Y = _data()
    s = _strategies()[0]
    with s.scope():
        model = _model(keras)
        model.compile(keras.optimizers.Adam(0.01), "mse")
    model.fit(X, np.eye(3)[Y], batch_size=8, verbose=0)
    pred = model.predict(X, verbose=0)
    d = tempfile.mkdtemp()
    path = ef.train.Checkpoint(model=model).save(os.path.join(d, "ckpt"))
    model.save(os.path.join(d, "m.keras"))
    ef.saved_model.save(model, os.path.join(d, "sm"))
    np.save(os.path.join(d, "x.npy"), X)
    np.save(os.path.join(d, "pred.npy"), pred)
    # One value per variable: the checkpoint holds no per-replica copies.
    reader = ef.train.load_checkpoint(path) if hasattr(ef.train, "load_checkpoint") else None
    if reader is not None:
        names = list(reader.get_variable_to_shape_map())
        assert not any("replica_" in n for n in names), names

    # Into a different strategy (3 replicas): every copy takes the saved value.
    s3 = _strategies()[1]
    with s3.scope():
        other = _model(keras)
    ef.train.Checkpoint(model=other).restore(path)
    for v, w in zip(other.weights, model.weights):
        assert all(np.array_equal(c.numpy(), w.numpy()) for c in v.values)
    _close(other.predict(X, verbose=0), pred, "restored into 3 replicas")

    # Into a plain process with one CPU.
    run_python_ok("""
        import numpy as np
        import eagerflow as ef
        from eagerflow import keras
        d = %r
        x, pred = np.load(d + "/x.npy"), np.load(d + "/pred.npy")
        m = keras.models.load_model(d + "/m.keras")
        assert type(m.weights[0]) is ef.Variable
        assert np.allclose(m.predict(x, verbose=0), pred, rtol=1e-12, atol=0)
        sm = ef.saved_model.load(d + "/sm")
        out = sm.signatures["serving_default"](features=ef.constant(x))
        assert np.allclose(list(out.values())[0].numpy(), pred, rtol=1e-12, atol=0)
        print("OK")
    """ % d, d)


@run.case
def test_skip_gradients_aggregation_and_optimizer_scope_errors():
    import eagerflow as ef
    from eagerflow import keras

    s = _strategies()[0]
    with s.scope():
        w = ef.Variable([1.0, 1.0])
        opt = keras.optimizers.SGD(1.0)

    def fn(skip, manual):
        i = ef.cast(ef.distribute.get_replica_context().replica_id_in_sync_group, ef.float32)
        g = ef.stack([i + 1.0, 2.0 * i])  # replica 0: [1, 0]; replica 1: [2, 2]
        if manual:
            g = ef.distribute.get_replica_context().all_reduce("SUM", g)
        opt.apply_gradients([(g, w)], skip_gradients_aggregation=skip)

    s.run(fn, args=(False, False))            # summed once: [3, 2]
    assert [c.numpy().tolist() for c in w.values] == [[-2.0, -1.0]] * 2
    s.run(fn, args=(True, True))              # the caller reduced: the same again
    assert [c.numpy().tolist() for c in w.values] == [[-5.0, -3.0]] * 2
    with s.scope():
        w2 = ef.Variable([0.0, 0.0])
    s.run(lambda: keras.optimizers.SGD(1.0) and None)  # making one in run is fine
    opt2 = keras.optimizers.SGD(1.0, name="outside")
    try:
        s.run(lambda: opt2.apply_gradients([(ef.constant([1.0, 1.0]), w2)]))
        raise AssertionError("an optimizer made outside the scope must be refused")
    except ValueError as e:
        assert "created outside the distribution strategy's scope" in str(e)
    # experimental_aggregate_gradients=False is tf.keras 2's spelling of the same.
    s.run(lambda: opt.apply_gradients(
        [(ef.distribute.get_replica_context().all_reduce("SUM", ef.constant([1.0, 1.0])), w)],
        experimental_aggregate_gradients=False))
    assert [c.numpy().tolist() for c in w.values] == [[-7.0, -5.0]] * 2


@run.case
def test_traced_replica_that_skips_a_collective_hits_the_deadline():
    import time

    import eagerflow as ef
    from eagerflow.function import rendezvous

    s = _strategies()[1]
    rendezvous.set_default_deadline(0.5)
    try:
        @ef.function
        def step(x):
            def fn(x):
                ctx = ef.distribute.get_replica_context()
                if ctx._replica_id == 2:  # Python control flow: replica 2 never reduces
                    return x
                return ctx.all_reduce("SUM", x)
            return s.run(fn, args=(x,))

        start = time.monotonic()
        try:
            step(ef.constant(1.0))
            raise AssertionError("must raise")
        except ef.errors.DeadlineExceededError as e:
            assert "collective" in str(e) and "CPU:2" in str(e), str(e)
        assert time.monotonic() - start < 10
    finally:
        rendezvous.set_default_deadline(60.0)


@run.case
def test_traced_replica_that_raises_stops_the_step():
    import eagerflow as ef

    s = _strategies()[1]

    @ef.function
    def step(x):
        def fn(x):
            ctx = ef.distribute.get_replica_context()
            if ctx._replica_id == 1:
                raise ValueError("replica 1 cannot trace")
            return ctx.all_reduce("SUM", x)
        return s.run(fn, args=(x,))

    try:
        step(ef.constant(1.0))
        raise AssertionError("must raise")
    except ValueError as e:
        assert "replica 1 cannot trace" in str(e)
    # Eager data errors inside a replica reach the caller too.
    with s.scope():
        v = ef.Variable(ef.zeros([2, 3]))
    try:
        s.run(lambda: ef.matmul(v, v))
        raise AssertionError("must raise")
    except ef.errors.InvalidArgumentError as e:
        assert "matmul" in str(e).lower() or "MatMul" in str(e)
