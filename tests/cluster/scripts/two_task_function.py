"""A traced function placed on two worker tasks equals the same function in one process."""

import sys

import numpy as np

import eagerflow as ef
from eagerflow.distribute import cluster

resolver = ef.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type != "chief":
    ef.distribute.Server(resolver).join(timeout=120)
    sys.exit(0)

ef.distribute.experimental_connect_to_cluster(resolver)
rng = np.random.default_rng(0)
w = ef.Variable(rng.normal(size=(4, 3)), name="w")  # lives on the chief


def body(x):
    with ef.device("/job:worker/task:0"):
        h = ef.tanh(ef.matmul(x, w))
    with ef.device("/job:worker/task:1"):
        g = ef.exp(h) * 2.0
    return ef.reduce_sum(g * h), h


x = ef.constant(rng.normal(size=(5, 4)))
traced = ef.function(body)
with ef.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y, h = traced(x)
gx, gw = tape.gradient(y, [x, w])
with ef.GradientTape() as tape:
    tape.watch(x)
    y_ref, h_ref = body(x)  # eagerly, in this process
gx_ref, gw_ref = tape.gradient(y_ref, [x, w])
for name, got, want in (("y", y, y_ref), ("h", h, h_ref), ("dx", gx, gx_ref),
                        ("dw", gw, gw_ref)):
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12,
                               err_msg=name)

# The forward partitions really ran on the workers: each holds registered graphs.
runtime = cluster.current_runtime()
for task in ("/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"):
    status = runtime.client(task).status()
    assert status.graphs >= 1, (task, status)
executor = traced.get_concrete_function(x).executor
assert sorted(executor.tasks) == ["/job:chief/replica:0/task:0",
                                  "/job:worker/replica:0/task:0",
                                  "/job:worker/replica:0/task:1"], executor.tasks

# A second call with new arguments sends only arguments and a step id.
x2 = ef.constant(rng.normal(size=(5, 4)))
np.testing.assert_allclose(traced(x2)[0].numpy(), body(x2)[0].numpy(), rtol=1e-12)

# An op failing on a worker is raised here, as its own error class, naming the task.
@ef.function
def lookup(i):
    with ef.device("/job:worker/task:1"):
        return ef.gather(ef.constant([1.0, 2.0]), i) * 3.0


np.testing.assert_allclose(lookup(ef.constant([1])).numpy(), [6.0])
try:
    lookup(ef.constant([5]))
except ef.errors.InvalidArgumentError as exc:
    assert "/job:worker/replica:0/task:1" in str(exc), exc
else:
    raise AssertionError("an out-of-range gather on a worker did not fail")

# A client without the job's secret is refused.
from eagerflow.distribute.rpc.client import WorkerClient  # noqa: E402

intruder = WorkerClient("/job:worker/replica:0/task:0", runtime.address_of(
    "/job:worker/replica:0/task:0"), "not-the-secret")
try:
    intruder.status(timeout=10)
except ef.errors.UnauthenticatedError as exc:
    assert "secret" in str(exc), exc
else:
    raise AssertionError("a client without the secret was served")
print("chief OK")
