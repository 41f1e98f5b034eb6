"""Graphs across processes: tasks started as local processes, talking gRPC."""

import numpy as np
import pytest

from eagerflow import errors
from tests.cluster.harness import run_cluster


def test_two_task_function_equals_one_process():
    outputs = run_cluster("two_task_function.py", {"chief": 1, "worker": 2}, timeout=60)
    assert "chief OK" in outputs[("chief", 0)]
    # The intruder's call was refused (and logged) by the worker it called.
    assert "without this job's secret" in outputs[("worker", 0)]


def test_wire_checks_sizes_before_allocating():
    from eagerflow.distribute.rpc import wire

    msg = wire.encode_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(wire.decode_tensor(msg), np.arange(6).reshape(2, 3))
    msg.shape[:] = [2 ** 40, 2 ** 40]
    with pytest.raises(errors.DataLossError, match="declared float32"):
        wire.decode_tensor(msg)
    msg.shape[:] = [-1]
    with pytest.raises(errors.DataLossError, match="invalid shape"):
        wire.decode_tensor(msg)
    msg.shape[:] = [6]
    msg.dtype = "object"
    with pytest.raises(errors.DataLossError, match="not a numeric"):
        wire.decode_tensor(msg)
    with pytest.raises(errors.InvalidArgumentError, match="only numeric"):
        wire.encode_tensor(np.array([b"a"], dtype=object))


def test_inbox_aborts_one_step_only():
    from eagerflow.distribute.rpc.rendezvous import StepInbox
    from eagerflow.function.rendezvous import RendezvousKey

    inbox = StepInbox()
    a = RendezvousKey("t:0", "/job:ps/replica:0/task:0/device:CPU:0",
                      "/job:worker/replica:0/task:0/device:CPU:0", 1)
    b = a._replace(step_id=2)
    inbox.send(b, 2.0)
    inbox.abort_step(1, errors.UnavailableError("worker gone"))
    with pytest.raises(errors.CancelledError, match="step 1 failed"):
        inbox.recv(a, deadline=5)
    inbox.send(a, 1.0)  # a late tensor of the aborted step is dropped
    assert inbox.pending() == [b]
    assert inbox.recv(b, deadline=1) == 2.0
    with pytest.raises(errors.DeadlineExceededError, match="task /job:ps/replica:0/task:0"):
        inbox.recv(b, deadline=0.05)


def test_server_refuses_to_start_without_a_secret(monkeypatch):
    import eagerflow as ef
    from eagerflow.distribute import cluster

    monkeypatch.delenv(cluster.SECRET_ENV, raising=False)
    with pytest.raises(errors.FailedPreconditionError, match="EAGERFLOW_CLUSTER_SECRET"):
        ef.distribute.Server({"ps": ["localhost:1"]}, job_name="ps", task_index=0)


def test_non_loopback_address_needs_an_explicit_bind_address():
    from eagerflow.distribute.rpc.server import loopback_bind_address

    assert loopback_bind_address("localhost:5") == "127.0.0.1:5"
    with pytest.raises(errors.InvalidArgumentError, match="bind_address"):
        loopback_bind_address("10.1.2.3:5")


def test_optimized_graph_keeps_each_task_s_nodes_apart():
    import eagerflow as ef
    from eagerflow.function import passes, task_partition

    def body(x):
        with ef.device("/job:worker/task:0"):
            h = ef.tanh(x)
        with ef.device("/job:worker/task:1"):
            g = ef.exp(h) * 2.0  # elementwise: fusion must not pull it off its task
        return g * h

    graph = ef.function(body).get_concrete_function(ef.TensorSpec([3])).graph
    parts = task_partition.partition_by_task(passes.optimize(graph),
                                             "/job:chief/replica:0/task:0")
    assert [p.task for p in parts.partitions] == [
        "/job:chief/replica:0/task:0", "/job:worker/replica:0/task:0",
        "/job:worker/replica:0/task:1"]
    assert all(not n.device for p in parts.partitions for n in p.graph.nodes)


def test_tensors_appended_in_one_copy_parse_as_the_ordinary_message():
    from eagerflow.distribute.rpc import wire

    pb = wire.pb()
    arrays = [np.arange(12, dtype=np.float32).reshape(3, 4), np.array(True),
              np.zeros((0, 2)), np.int64(7)]
    framed = wire.WithTensors(pb.RunGraphRequest(handle="h", step_id=9, deadline_s=2.0), 3,
                              arrays)
    plain = pb.RunGraphRequest(handle="h", step_id=9, deadline_s=2.0)
    for a in arrays:
        wire.encode_tensor(a, plain.arg.add())
    parsed = pb.RunGraphRequest.FromString(framed.SerializeToString())
    assert parsed == plain
    for got, want in zip(parsed.arg, arrays):
        out = wire.decode_tensor(got)
        assert out.dtype == np.asarray(want).dtype and out.shape == np.shape(want)
        np.testing.assert_array_equal(out, want)
