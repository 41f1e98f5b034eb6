"""Partitioning with Send/Recv, the rendezvous, and running one graph on several devices.

Multi-device tests run in a fresh interpreter that splits the CPU into 3 logical devices.
"""

from __future__ import annotations

import threading
import time

import pytest

from eagerflow import errors
from eagerflow.function import rendezvous
from tests.function.test_placement import run_split

SAME_AS_SINGLE = """
def single_device(graph):
    from eagerflow.function.passes.common import copy_graph
    copy = copy_graph(graph)
    for node in copy.nodes:
        node.device = ""
    return Executor(copy)

def check_same(f, *args):
    cf = f.get_concrete_function(*args)
    ex = cf.executor
    assert isinstance(ex, multi_device.MultiDeviceExecutor), type(ex)
    flat = [a._value for a in args]
    caps = [c._value for _, c in ex.graph.captures]
    got = ex.run(flat, caps)
    want = single_device(ex.graph).run(flat, caps)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w), (g, w)
    return ex
"""


def test_send_recv_counts_are_distinct_cross_device_tensors_per_destination():
    run_split("""
    @ef.function
    def f(x):
        with ef.device("/cpu:0"):
            a = ef.tanh(x)
            b = ef.sin(x)
        with ef.device("/cpu:1"):
            c = a * 2.0 + a * 3.0      # a used twice on CPU:1: one transfer
            d = b + c
        with ef.device("/cpu:2"):
            e = a - d                  # a again, now to CPU:2; d from CPU:1
        with ef.device("/cpu:0"):
            g = e + c                  # e and c come back to CPU:0
        return g
    graph = f.get_concrete_function(ef.TensorSpec([3])).graph
    where = placement.place(graph)
    expected = {}
    for node in graph.nodes:
        for src, idx in node.inputs:
            if src.op in ("Placeholder", "Const") or where[src.id] is where[node.id]:
                continue
            expected.setdefault(where[node.id].name, set()).add(src.ref(idx))
    parts = partition.partition(graph, where)
    assert parts.recvs_per_device() == {k: len(v) for k, v in expected.items()}
    total = sum(len(v) for v in expected.values())
    assert parts.num_sends == parts.num_recvs == total == 6, parts.summary()
    keys = {(t, s, d) for t, s, d in parts.transfers}
    assert len(keys) == total
    x = ef.constant([0.5, -1.0, 2.0])
    xs = x.numpy()
    a, b = np.tanh(xs), np.sin(xs)
    c = a * 2 + a * 3
    np.testing.assert_allclose(f(x).numpy(), (a - (b + c)) + c, rtol=1e-6)
    print("OK")
    """)


def test_multi_device_results_equal_single_device_results():
    run_split(helpers=SAME_AS_SINGLE, code="""
    @ef.function
    def f1(x, y):
        with ef.device("/cpu:1"):
            h = ef.nn.relu(ef.matmul(x, y))
        with ef.device("/cpu:2"):
            s = ef.nn.softmax(ef.matmul(y, x, transpose_a=True, transpose_b=True))
        return ef.reduce_sum(h) + ef.reduce_mean(s), h, s
    rng = np.random.default_rng(0)
    x = ef.constant(rng.normal(size=(6, 5)).astype("float32"))
    y = ef.constant(rng.normal(size=(5, 6)).astype("float32"))
    check_same(f1, x, y)

    @ef.function
    def f2(x):
        parts = []
        for i in range(3):
            with ef.device("/cpu:%d" % i):
                parts.append(ef.cumsum(x * float(i + 1), axis=0))
        with ef.device("/cpu:1"):
            return ef.concat(parts, axis=0), ef.cast(parts[2] > 1.0, ef.int32)
    check_same(f2, ef.constant(rng.normal(size=(4, 3)).astype("float32")))

    big = ef.TensorSpec([384, 384])
    def chains(a, b):
        u, v = a, b
        for _ in range(3):
            u = ef.tanh(ef.matmul(u, a))
            v = ef.tanh(ef.matmul(v, b))
        return u - v, u
    f3 = ef.function(chains)
    m = ef.constant(rng.normal(size=(384, 384)).astype("float32") / 20)
    ex = check_same(f3, m, m * 0.5)
    assert len(ex.devices) == 2
    print("OK")
    """)


def test_training_step_with_variables_on_different_devices_matches_one_device():
    run_split("""
    rng = np.random.default_rng(1)
    w0 = rng.normal(size=(4, 8)).astype("float32")
    w1 = rng.normal(size=(8, 1)).astype("float32")
    xs = ef.constant(rng.normal(size=(16, 4)).astype("float32"))
    ys = ef.constant(rng.normal(size=(16, 1)).astype("float32"))

    def make(dev_a, dev_b):
        with ef.device(dev_a):
            a = ef.Variable(w0)
        with ef.device(dev_b):
            b = ef.Variable(w1)

        @ef.function
        def step(x, y):
            with ef.GradientTape() as tape:
                h = ef.tanh(ef.matmul(x, a))
                loss = ef.reduce_mean(ef.square(ef.matmul(h, b) - y))
            ga, gb = tape.gradient(loss, [a, b])
            a.assign_sub(0.1 * ga)
            b.assign_sub(0.1 * gb)
            return loss
        return a, b, step

    a1, b1, split = make("/cpu:1", "/cpu:2")
    a0, b0, single = make("/cpu:0", "/cpu:0")
    for _ in range(3):
        l1 = split(xs, ys)
        l0 = single(xs, ys)
        assert np.array_equal(l1.numpy(), l0.numpy())
    assert np.array_equal(a1.numpy(), a0.numpy()) and np.array_equal(b1.numpy(), b0.numpy())
    assert a1.device == CPU % 1 and b1.device == CPU % 2
    ex = split.get_concrete_function(xs, ys).executor
    assert isinstance(ex, multi_device.MultiDeviceExecutor)
    assert ex.partitioned.num_sends > 0
    assert type(single.get_concrete_function(xs, ys).executor) is Executor
    print("OK")
    """)


def test_gradient_through_a_two_device_function():
    run_split("""
    @ef.function
    def f(x, y):
        with ef.device("/cpu:1"):
            a = ef.tanh(x) * y
        with ef.device("/cpu:2"):
            b = ef.sin(a) * x
        return ef.reduce_sum(a * b)

    def eager(x, y):
        a = ef.tanh(x) * y
        b = ef.sin(a) * x
        return ef.reduce_sum(a * b)

    x = ef.constant([0.3, -0.7, 1.1])
    y = ef.constant([1.5, 0.2, -0.4])
    with ef.GradientTape() as tape:
        tape.watch([x, y])
        out = f(x, y)
    gx, gy = tape.gradient(out, [x, y])
    with ef.GradientTape() as tape:
        tape.watch([x, y])
        ref = eager(x, y)
    rx, ry = tape.gradient(ref, [x, y])
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), rx.numpy(), rtol=1e-5)
    np.testing.assert_allclose(gy.numpy(), ry.numpy(), rtol=1e-5)
    pair = f.get_concrete_function(x, y)._gradient_pair
    assert isinstance(pair.forward, multi_device.MultiDeviceExecutor)
    backward = pair.backward.executor
    # The backward graph is placed and partitioned too: its transfers run the other way.
    if isinstance(backward, multi_device.MultiDeviceExecutor):
        assert backward.partitioned.num_recvs == backward.partitioned.num_sends
    print("OK")
    """)


def test_errors_on_a_device_thread_reach_the_caller_with_the_node():
    run_split("""
    @ef.function(input_signature=[ef.TensorSpec([None, None]), ef.TensorSpec([None, None])])
    def f(x, y):
        with ef.device("/cpu:1"):
            a = ef.tanh(x)
        with ef.device("/cpu:2"):
            b = ef.matmul(a, y)        # fails at run time on CPU:2
        with ef.device("/cpu:0"):
            return b + 1.0
    try:
        f(ef.ones([2, 3]), ef.ones([2, 3]))
    except ef.errors.InvalidArgumentError as exc:
        assert "matmul" in str(exc).lower(), str(exc)
    else:
        raise AssertionError("no error")
    print("OK")
    """)


def test_recv_deadline_raises_naming_the_key_and_device():
    r = rendezvous.LocalRendezvous()
    key = rendezvous.RendezvousKey("tanh:0", "/device:CPU:0", "/device:CPU:1", 7)
    start = time.monotonic()
    with pytest.raises(errors.DeadlineExceededError, match=r"tanh:0.*CPU:0") as info:
        r.recv(key, deadline=0.05, waiter="/device:CPU:1")
    assert "/device:CPU:1" in str(info.value) and str(key) in str(info.value)
    assert time.monotonic() - start < 5


def test_rendezvous_hands_values_across_threads_and_aborts():
    r = rendezvous.LocalRendezvous()
    key = rendezvous.RendezvousKey("a:0", "src", "dst", 1)
    got = []
    t = threading.Thread(target=lambda: got.append(r.recv(key, deadline=10)))
    t.start()
    r.send(key, 42)
    t.join()
    assert got == [42] and r.pending() == []
    with pytest.raises(errors.InternalError):
        r.send(key, 1)
        r.send(key, 2)
    r2 = rendezvous.LocalRendezvous()
    r2.abort(ValueError("boom"))
    with pytest.raises(errors.CancelledError, match="boom"):
        r2.recv(key, deadline=10)
    with pytest.raises(errors.InvalidArgumentError):
        rendezvous.set_default_deadline(0)
    assert rendezvous.get_default_deadline() == 60.0


def test_a_lost_send_times_out_instead_of_hanging():
    run_split("""
    from eagerflow.function import rendezvous

    class Lossy(rendezvous.LocalRendezvous):
        def send(self, key, value):
            pass  # a broken transport: nothing arrives

    @ef.function
    def f(x):
        with ef.device("/cpu:1"):
            a = ef.tanh(x)
        with ef.device("/cpu:2"):
            return a * 2.0
    cf = f.get_concrete_function(ef.TensorSpec([2]))
    ex = multi_device.MultiDeviceExecutor(cf.graph, deadline=0.2, rendezvous_factory=Lossy)
    try:
        ex.run([np.ones(2, np.float32)], [])
    except ef.errors.DeadlineExceededError as exc:
        text = str(exc)
        assert "tanh:0" in text and CPU % 2 in text and "recv_tanh" in text, text
    else:
        raise AssertionError("no error")
    print("OK")
    """)


def test_speedup_of_two_matmul_chains_on_two_logical_devices():
    # One BLAS thread per call, so that the gain measured is that of the two device threads.
    single_thread = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                      "MKL_NUM_THREADS")}
    out = run_split(env=single_thread, code="""
    import time
    def chains(a, b):
        x, y = a, b
        for _ in range(4):
            x = ef.tanh(ef.matmul(x, a))
            y = ef.tanh(ef.matmul(y, b))
        return x, y
    f = ef.function(chains)
    rng = np.random.default_rng(0)
    a = ef.constant(rng.normal(size=(512, 512)).astype("float32") / 30)
    b = ef.constant(rng.normal(size=(512, 512)).astype("float32") / 30)
    cf = f.get_concrete_function(a, b)
    multi = cf.executor
    assert isinstance(multi, multi_device.MultiDeviceExecutor)
    single = Executor(multi.graph)
    args = [a._value, b._value]
    def best(ex):
        times = []
        for _ in range(3):
            t = time.perf_counter(); ex.run(args, []); times.append(time.perf_counter() - t)
        return min(times)
    best(single); best(multi)
    t1, t2 = best(single), best(multi)
    print("speedup two chains on two logical CPUs: %.2fx (single %.1f ms, split %.1f ms)"
          % (t1 / t2, t1 * 1e3, t2 * 1e3))
    print("OK")
    """)
    print(out.strip().splitlines()[-2])


@pytest.mark.gpu
def test_mixed_cpu_gpu_function_matches_eager_with_gradients():
    """A traced function split between the CPU and the GPU: Send/Recv across the two, the
    same values and gradients as the eager CPU computation, and a fused GPU kernel."""
    import numpy as np

    import eagerflow as ef
    from eagerflow.function import multi_device

    def body(x, w):
        with ef.device("/cpu:0"):
            a = ef.tanh(ef.matmul(x, w))
        with ef.device("/gpu:0"):
            b = ef.nn.relu(a * 2.0 - 0.5) * a + 1.0  # an elementwise chain: one GPU kernel
        with ef.device("/cpu:0"):
            return ef.reduce_sum(b * a)

    rng = np.random.default_rng(0)
    x = ef.constant(rng.standard_normal((16, 8)))
    w = ef.constant(rng.standard_normal((8, 4)))
    traced = ef.function(body)
    with ef.GradientTape() as tape:
        tape.watch([x, w])
        out = traced(x, w)
    gx, gw = tape.gradient(out, [x, w])
    with ef.GradientTape() as tape:
        tape.watch([x, w])
        ref = body(x, w)
    rx, rw = tape.gradient(ref, [x, w])
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gx.numpy(), rx.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gw.numpy(), rw.numpy(), rtol=1e-10)
    executor = traced.get_concrete_function(x, w).executor
    assert isinstance(executor, multi_device.MultiDeviceExecutor)
    assert executor.partitioned.num_sends == executor.partitioned.num_recvs >= 2
    fused_on = {executor.placement[n.id].name for n in executor.graph.nodes
                if n.op == "FusedElementwise"}
    assert any("GPU" in name for name in fused_on), fused_on
