"""Failures of a ParameterServerStrategy job, seen from the chief.

Modes (argv[1]):
  worker: worker 1 is SIGKILLed mid-training and restarted; every closure completes.
  errors: a closure raising while traced, and an op failing on a worker, are reported with
          the worker named; then ps 1 is SIGKILLed and the chief gets UnavailableError
          naming it within seconds.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

import eagerflow as ef

resolver = ef.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    ef.distribute.Server(resolver).join(timeout=120)
    sys.exit(0)

MODE = sys.argv[1]
strategy = ef.distribute.experimental.ParameterServerStrategy(resolver)
coordinator = ef.distribute.experimental.coordinator.ClusterCoordinator(strategy)
runtime = ef.distribute.cluster.current_runtime()
rng = np.random.default_rng(0)
with strategy.scope():
    w = ef.Variable(rng.normal(size=(16, 1)).astype("float32"), name="w")
    b = ef.Variable(np.zeros(1, "float32"), name="b")
x_all = rng.normal(size=(256, 16)).astype("float32")
y_all = x_all @ np.linspace(-1, 1, 16, dtype="float32")[:, None] + 0.5


@ef.function
def step(i, x, y):
    with ef.GradientTape() as tape:
        loss = ef.reduce_mean(ef.square(ef.matmul(x, w) + b - y))
    gw, gb = tape.gradient(loss, [w, b])
    w.assign_sub(0.05 * gw)
    b.assign_sub(0.05 * gb)
    return i, loss


def schedule(n, start=0):
    out = []
    for k in range(start, start + n):
        rows = slice((k * 32) % 256, (k * 32) % 256 + 32)
        out.append(coordinator.schedule(step, args=(ef.constant(k), ef.constant(x_all[rows]),
                                                    ef.constant(y_all[rows]))))
    return out


def worker_pid(task):
    try:
        return int(runtime.client(task).status(timeout=2).pid)
    except ef.errors.UnavailableError:
        return None


if MODE == "worker":
    victim = "/job:worker/replica:0/task:1"
    pid = worker_pid(victim)
    values = schedule(60)
    while sum(v._done.is_set() for v in values) < 15:
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    values += schedule(140, start=60)
    # Bring the worker back: the same script, as the same task.
    env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": resolver.cluster_spec().as_dict(),
                                                 "task": {"type": "worker", "index": 1}}))
    time.sleep(1.0)
    back = subprocess.Popen([sys.executable, __file__, "serve"], env=env,
                            start_new_session=True)
    try:
        coordinator.join()
        done = sorted(int(v.fetch()[0]) for v in values)
        assert done == list(range(200)), done
        assert coordinator.requeued >= 1, coordinator.requeued
        # The new worker takes closures once the coordinator has seen it come back.
        deadline = time.monotonic() + 30
        while (worker_pid(victim) != back.pid or not coordinator._workers[1].alive) and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        more = []
        while time.monotonic() < deadline:
            batch = schedule(20, start=len(more))
            coordinator.join()
            more += batch
            if runtime.client(victim).status().graphs >= 1:
                break
        assert runtime.client(victim).status().graphs >= 1, "the restarted worker ran nothing"
        assert sorted(int(v.fetch()[0]) for v in more) == list(range(len(more)))
        losses = [float(v.fetch()[1]) for v in more]
        assert np.mean(losses[-10:]) < 0.05, losses[-10:]
        print("chief OK requeued=%d" % coordinator.requeued)
    finally:
        os.killpg(back.pid, signal.SIGKILL)

elif MODE == "errors":
    @ef.function
    def raises(x):
        raise ValueError("bad closure")

    rv = coordinator.schedule(raises, args=(ef.constant(1.0),))
    try:
        rv.fetch()
    except ValueError as exc:
        assert "bad closure" in str(exc) and "/job:worker/replica:0/task:" in str(exc), exc
    else:
        raise AssertionError("fetch did not raise")
    try:
        coordinator.join()
    except ValueError as exc:
        assert "bad closure" in str(exc), exc
    else:
        raise AssertionError("join did not raise")

    @ef.function
    def lookup(i):
        return ef.gather(w, i)

    rv = coordinator.schedule(lookup, args=(ef.constant([99]),))
    try:
        rv.fetch()
    except ef.errors.InvalidArgumentError as exc:
        assert "/job:" in str(exc), exc
    else:
        raise AssertionError("an out-of-range gather did not fail")
    try:
        coordinator.join()
    except ef.errors.InvalidArgumentError:
        pass
    values = schedule(10)
    coordinator.join()
    assert sorted(int(v.fetch()[0]) for v in values) == list(range(10))

    victim = "/job:ps/replica:0/task:1"
    pid = int(runtime.client(victim).status().pid)
    values = schedule(400)
    while sum(v._done.is_set() for v in values) < 10:
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    try:
        coordinator.join()
    except ef.errors.UnavailableError as exc:
        seconds = time.monotonic() - killed
        assert victim in str(exc), exc
        assert seconds < 10, seconds
    else:
        raise AssertionError("join did not raise after the ps died")
    # A checkpoint needing the dead ps fails as unavailable and writes nothing.
    import tempfile  # noqa: E402

    directory = tempfile.mkdtemp()
    try:
        ef.train.Checkpoint(w=w, b=b).save(os.path.join(directory, "ckpt"))
    except ef.errors.UnavailableError as exc:
        assert victim in str(exc), exc
    else:
        raise AssertionError("a checkpoint was saved without its ps")
    assert os.listdir(directory) == [], os.listdir(directory)
    print("chief OK ps failure seen after %.2fs" % seconds)
