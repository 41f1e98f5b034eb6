"""Distribution benchmarks: ``strategy.run`` overhead and a mirrored MLP step.

They need logical CPU devices, which must be configured before a process's first op and
would move every other workload's graphs onto the multi-device path, so the benchmark
command runs this module in a child process of its own (``python -m
eagerflow.benchmarks.distribute_workloads [--filter S] [--quick]``) and prints its table.

Each row times a strategy's step against the same step on one device, interleaved:

* ``strategy.run`` of a tiny function (``tanh`` of 16 floats), 1 and 2 replicas, eager and
  inside ``@function``; the overhead column is the time beyond the single-device step
  (target: traced overhead under 50 us);
* one Adam step of the MLP 784-512-512-10 at global batch 1024 (a custom loop, traced) on
  2 logical CPUs against one device (a slowdown over 1.3x is a defect to explain; two
  logical CPUs share the same two cores as one device's BLAS threads).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from eagerflow.benchmarks.timing import time_interleaved

_SIZES = (784, 512, 512, 10)


def _setup_devices(n=2):
    import eagerflow as ef

    cpu = ef.config.list_physical_devices("CPU")[0]
    ef.config.set_logical_device_configuration(
        cpu, [ef.config.LogicalDeviceConfiguration() for _ in range(n)])


def _strategy(n):
    import eagerflow as ef

    return ef.distribute.MirroredStrategy(["/cpu:%d" % i for i in range(n)])


def tiny_run(replicas, traced):
    import eagerflow as ef

    x = ef.constant(np.linspace(-1, 1, 16).astype(np.float32))
    strategy = _strategy(replicas)

    def fn(x):
        return ef.tanh(x)

    if traced:
        step = ef.function(lambda x: strategy.run(fn, args=(x,)))
        single = ef.function(fn)
    else:
        step = lambda x: strategy.run(fn, args=(x,))  # noqa: E731
        single = fn
    step(x)
    single(x)
    return {"strategy": lambda: step(x), "one device": lambda: single(x)}


def _mlp(keras):
    return keras.Sequential([keras.Input((_SIZES[0],))] + [
        keras.layers.Dense(n, activation="relu") for n in _SIZES[1:-1]] + [
        keras.layers.Dense(_SIZES[-1])])


def mlp_adam_step(replicas, batch=1024):
    """(fn for the mirrored step, fn for the one-device step) of the same MLP and data."""
    import eagerflow as ef
    from eagerflow import keras

    rng = np.random.default_rng(0)
    xa = rng.standard_normal((batch, _SIZES[0])).astype(np.float32)
    ya = rng.integers(0, _SIZES[-1], batch).astype(np.int32)
    ef.random.set_seed(0)
    weights = _mlp(keras).get_weights()

    def make(strategy):
        with strategy.scope():
            model = _mlp(keras)
            model.set_weights(weights)
            opt = keras.optimizers.Adam(1e-3)

        def replica_step(x, y):
            with ef.GradientTape() as tape:
                logits = model(x, training=True)
                loss = ef.nn.compute_average_loss(
                    ef.nn.sparse_softmax_cross_entropy_with_logits(y, logits),
                    global_batch_size=batch)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        @ef.function
        def step(x, y):
            return strategy.reduce("SUM", strategy.run(replica_step, args=(x, y)), axis=None)

        x, y = strategy.experimental_split_global_batch((ef.constant(xa), ef.constant(ya)))
        step(x, y)
        return lambda: step(x, y)

    return {"strategy": make(_strategy(replicas)),
            "one device": make(ef.distribute.OneDeviceStrategy("/cpu:0"))}


WORKLOADS = [
    ("distribute strategy.run tiny fn, 1 replica, eager", lambda: tiny_run(1, False)),
    ("distribute strategy.run tiny fn, 2 replicas, eager", lambda: tiny_run(2, False)),
    ("distribute strategy.run tiny fn, 1 replica, traced", lambda: tiny_run(1, True)),
    ("distribute strategy.run tiny fn, 2 replicas, traced", lambda: tiny_run(2, True)),
    ("distribute MLP 784-512-512-10 Adam b1024, 2 CPUs", lambda: mlp_adam_step(2)),
]

NOTES = {
    "traced": "target: overhead < 50 us",
    "MLP": "ratio > 1.3x is a defect to explain",
}


def _fmt(us):
    return "%.2f ms" % (us / 1000) if us >= 1000 else "%.1f us" % us


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagerflow.benchmarks.distribute_workloads")
    parser.add_argument("--filter", default="")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    selected = [(n, s) for n, s in WORKLOADS if args.filter in n]
    if not selected:
        return 0
    _setup_devices(2)
    min_time = 0.05 if args.quick else 0.3
    header = "%-52s %12s %12s %8s %12s  %s" % ("workload", "strategy", "one device",
                                               "ratio", "overhead", "note")
    print(header)
    print("-" * len(header))
    for name, setup in selected:
        times = time_interleaved(setup(), min_time=min_time)
        s, one = times["strategy"], times["one device"]
        note = next((v for k, v in NOTES.items() if k in name), "")
        print("%-52s %12s %12s %7.2fx %12s  %s" % (name, _fmt(s), _fmt(one), s / one,
                                                   _fmt(s - one), note))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
