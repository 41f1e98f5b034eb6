"""The ``ps`` benchmark group: parameter-server jobs started as local clusters by
``python -m eagerflow.benchmarks --filter ps``.

Every task of a job runs this module; the chief measures and prints one JSON line per
measurement, the other tasks serve.

* ``roundtrip``: pulling and pushing a 4 MB float32 variable held by a ps (one traced
  function: ``v.assign_add(delta)`` then ``v.read_value()``: 4 MB each way), against the raw
  transport: a bare gRPC echo of 4 MB from the same ps process (no eagerflow on the path).
* ``async``: steps per second of asynchronous training (the quick start's MLP on the
  digits, Adam, batch 32) scheduled by a ClusterCoordinator; run once with 1 worker and once
  with 2 by the benchmark command.

Usage (what the benchmark command runs, through LocalCluster):
``python -m eagerflow.benchmarks.ps_workloads roundtrip|async``
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import eagerflow as ef

ROUNDTRIP_BYTES = 4 << 20
REPEATS = 7
ECHO = "/eagerflow.bench.Echo/Echo"


def _serve_echo(directory):
    """A bare gRPC server that returns what it receives (the raw-transport baseline)."""
    from concurrent import futures

    import grpc

    from eagerflow.distribute.rpc.client import CHANNEL_OPTIONS

    handler = grpc.method_handlers_generic_handler("eagerflow.bench.Echo", {
        "Echo": grpc.unary_unary_rpc_method_handler(lambda request, context: request)})
    server = grpc.server(futures.ThreadPoolExecutor(4), options=CHANNEL_OPTIONS)
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    path = os.path.join(directory, "echo_port")
    with open(path + ".tmp", "w") as f:
        f.write(str(port))
    os.replace(path + ".tmp", path)
    return server


def _echo_port(directory, timeout=60):
    path = os.path.join(directory, "echo_port")
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > end:
            raise TimeoutError("the ps did not start its echo server")
        time.sleep(0.05)
    with open(path) as f:
        return int(f.read())


def _median_range(values):
    values = sorted(values)
    return {"median": values[len(values) // 2], "min": values[0], "max": values[-1],
            "runs": len(values)}


def _times(fn, number, repeats=REPEATS):
    fn()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        out.append((time.perf_counter() - start) / number)
    return out


def roundtrip(resolver):
    import grpc

    from eagerflow.distribute.rpc.client import CHANNEL_OPTIONS

    strategy = ef.distribute.experimental.ParameterServerStrategy(resolver)
    n = ROUNDTRIP_BYTES // 4
    with strategy.scope():
        v = ef.Variable(np.zeros(n, np.float32), name="table")
    delta = ef.constant(np.ones(n, np.float32))

    @ef.function
    def pull_push(d):
        v.assign_add(d)
        return v.read_value()

    channel = grpc.insecure_channel("127.0.0.1:%d" % _echo_port(os.environ["EF_BENCH_DIR"]),
                                    options=CHANNEL_OPTIONS)
    echo = channel.unary_unary(ECHO)
    payload = np.ones(n, np.float32).tobytes()
    ef_times, raw_times = [], []
    for _ in range(3):  # interleaved rounds
        ef_times += _times(lambda: pull_push(delta), 5, repeats=3)
        raw_times += _times(lambda: echo(payload, timeout=30), 5, repeats=3)
    ratios = [a / b for a, b in zip(ef_times, raw_times)]
    print(json.dumps({"workload": "roundtrip", "bytes": ROUNDTRIP_BYTES,
                      "eagerflow_s": _median_range(ef_times), "raw_s": _median_range(raw_times),
                      "ratio": _median_range(ratios)}), flush=True)


def async_steps(resolver, steps=300):
    from eagerflow import keras

    keras.utils.set_random_seed(0)
    (x_train, y_train), _ = keras.datasets.digits.load_data()
    x_train = (x_train / 16.0).astype("float32")
    strategy = ef.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = ef.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model = keras.Sequential([keras.Input(shape=(8, 8)), keras.layers.Flatten(),
                                  keras.layers.Dense(128, activation="relu"),
                                  keras.layers.Dense(10)])
        optimizer = keras.optimizers.Adam(learning_rate=3e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def dataset_fn():
        return ef.data.Dataset.from_tensor_slices((x_train, y_train)).repeat().batch(32)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @ef.function
    def step(it):
        x, y = next(it)
        with ef.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(2 * coordinator.num_workers):  # trace and register on every worker
        coordinator.schedule(step, args=(iterator,))
    coordinator.join()
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(steps // 3):
            coordinator.schedule(step, args=(iterator,))
        coordinator.join()
        rates.append((steps // 3) / (time.perf_counter() - start))
    print(json.dumps({"workload": "async", "workers": coordinator.num_workers,
                      "steps_per_s": _median_range(rates)}), flush=True)


def main(argv):
    resolver = ef.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("worker", "ps"):
        server = ef.distribute.Server(resolver)
        echo = None
        if resolver.task_type == "ps" and resolver.task_id == 0 and argv[0] == "roundtrip":
            echo = _serve_echo(os.environ["EF_BENCH_DIR"])
        server.join(timeout=600)
        if echo is not None:
            echo.stop(0)
        return 0
    {"roundtrip": roundtrip, "async": async_steps}[argv[0]](resolver)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
