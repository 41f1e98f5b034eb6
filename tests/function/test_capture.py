"""Captured steps (``function/capture.py``): eligibility, introspection, the state machine.

The CPU tests drive the real Capture and the real capture-compiled executor with a
recorder that accepts CPU devices (``HostRecorder``): numpy cannot defer work, so what it
records runs while recording and it puts the variables' contents back afterwards (as if
nothing had run, which is what stream capture does), and a launch runs the recorded
schedule again on the same argument buffers. The GPU tests use cupy's CUDA graphs.
"""

import time

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.benchmarks.workloads import _mlp_adam_step
from eagerflow.function import capture


class HostRecorder:
    name = "host recording"

    def __init__(self, variables=(), fail=None):
        self.variables = list(variables)
        self.fail = fail
        self.records = 0
        self.launches = 0

    def accepts(self, device):
        return device.device_type == "CPU"

    def record(self, fn, device):
        self.records += 1
        if self.fail:
            raise RuntimeError(self.fail)
        saved = [(v._value, v._value.copy()) for v in self.variables]
        fn()
        for array, values in saved:
            np.copyto(array, values)
        recorder = self

        class Recorded:
            def launch(self):
                recorder.launches += 1
                return fn()

        return Recorded()


@pytest.fixture
def host_recorder():
    installed = []

    def install(variables=(), fail=None):
        recorder = HostRecorder(variables, fail)
        installed.append(capture.set_recorder(recorder))
        return recorder

    yield install
    while installed:
        capture.set_recorder(installed.pop())


def _step(batch=16):
    step, x, labels = _mlp_adam_step(ef, batch=batch)
    variables = _closure_variables(step)
    return step, x, labels, variables


def _closure_variables(step):
    out = []
    for cell in step.__closure__:
        value = cell.cell_contents
        items = value if isinstance(value, list) else [value]
        out.extend(v for v in items if isinstance(v, ef.Variable))
    return out


def _refusals(fn, *args):
    concrete = ef.function(fn).get_concrete_function(*args)
    return capture.refusals(concrete.executor, HostRecorder())


# -- eligibility ----------------------------------------------------------------------------

def test_mlp_adam_step_is_eligible():
    step, x, labels, _ = _step()
    concrete = ef.function(step).get_concrete_function(x, labels)
    ops = {n.op for n in concrete.executor.graph.nodes}
    assert "SparseSoftmaxCrossEntropyWithLogits" in ops  # checks labels: capture_forward
    assert capture.refusals(concrete.executor, HostRecorder()) == []


@pytest.mark.parametrize("make, op, why", [
    (lambda: ((lambda x: ef.where(x > 0.0)), (ef.constant([1.0, -1.0]),)),
     "Where", "shape depends on the input values"),
    (lambda: ((lambda x: ef.py_function(lambda a: a * 2.0, [x], ef.float32)),
              (ef.constant([1.0]),)), "PyFunction", "runs Python code on the host"),
    (lambda: ((lambda x: ef.random.uniform([3]) + x), (ef.constant(1.0),)),
     "RandomUniform", "runs on numpy"),
    (lambda: ((lambda x, i: ef.gather(x, i)), (ef.constant([1.0, 2.0]), ef.constant([1]))),
     "GatherV2", "indices on the host"),
    (lambda: ((lambda x: x // ef.constant([2, 0])), (ef.constant([4, 5]),)),
     "FloorDiv", "integer divisors on the host"),
    (lambda: ((lambda x: ef.cond(ef.reduce_sum(x) > 0.0, lambda: x + 1.0, lambda: x - 1.0)),
              (ef.constant([1.0]),)), "If", "predicate is read on the host"),
    (lambda: ((lambda x: ef.while_loop(lambda i: i < x, lambda i: (i + 1.0,),
                                       [ef.constant(0.0)])), (ef.constant(3.0),)),
     "While", "loop condition is read on the host"),
    (lambda: ((lambda n: ef.zeros(n) + 1.0), (ef.constant(3),)),
     "Zeros", "computed at run time"),
])
def test_each_refusal_names_node_op_and_why(make, op, why):
    fn, args = make()
    reasons = _refusals(fn, *args)
    hits = [r for r in reasons if "(op %s)" % op in r]
    assert hits, reasons
    assert why in hits[0]
    assert hits[0].startswith("node '")


def test_print_is_refused():
    def f(x):
        ef.print("x is", x)
        return x * 2.0

    reasons = _refusals(f, ef.constant([1.0]))
    assert any("(op Print)" in r and "console" in r for r in reasons), reasons


def test_float_division_is_not_refused_but_integer_division_is():
    assert _refusals(lambda x: x // 2.0, ef.constant([3.0])) == []
    assert _refusals(lambda x: x / 2.0, ef.constant([3.0])) == []
    assert any("FloorDiv" in r for r in _refusals(lambda x: x // 2, ef.constant([3])))


def test_unknown_dims_are_refused():
    f = ef.function(lambda x: x * 2.0)
    concrete = f.get_concrete_function(ef.TensorSpec([None, 3], ef.float32))
    reasons = capture.refusals(concrete.executor, HostRecorder())
    assert any("argument x has shape [None, 3]" in r and "fixed shapes" in r for r in reasons)


def test_cpu_graphs_are_refused_by_the_cuda_recorder():
    f = ef.function(lambda x: x * 2.0 + 1.0)
    _ = f(ef.constant([1.0, 2.0]))
    state, reasons = f.get_concrete_function(ef.constant([1.0, 2.0])) \
        .experimental_capture_status()
    assert state == "refused"
    assert len(reasons) == 1 and "CPU:0, not a GPU" in reasons[0]
    assert "a CUDA graph holds GPU work only" in reasons[0]
    # A CPU graph keeps the plain executor: no per-call cost.
    assert type(f.get_concrete_function(ef.constant([1.0, 2.0])).executor).__name__ == \
        "Executor"


def test_reason_list_is_bounded():
    def f(x):
        for _ in range(12):
            x = ef.where(x > 0.0)[:, 0]
            x = ef.cast(x, ef.float32)
        return x

    reasons = _refusals(f, ef.constant([1.0, 2.0]))
    assert len(reasons) == capture._MAX_REASONS + 1
    assert reasons[-1].startswith("and ") and reasons[-1].endswith(" more")


def test_declarations_carry_the_knowledge():
    from eagerflow.function import builtins
    from eagerflow.ops import registry

    assert registry.get("Where").host_sync
    assert registry.get("AddV2").host_sync is None
    assert registry.get("SparseSoftmaxCrossEntropyWithLogits").capture_forward is not None
    assert builtins.BUILTINS["Send"].host_sync and builtins.BUILTINS["If"].host_sync
    assert builtins.BUILTINS["AssignVariableOp"].host_sync is None


# -- the state machine, on a host recorder --------------------------------------------------

def test_states_and_introspection(host_recorder):
    step, x, labels, variables = _step()
    recorder = host_recorder(variables)
    f = ef.function(step)
    concrete = f.get_concrete_function(x, labels)
    assert concrete.experimental_capture_status() == ("warming up", [])
    f(x, labels)
    assert concrete.experimental_capture_status().state == "recording next"
    assert recorder.records == 0
    f(x, labels)
    assert concrete.experimental_capture_status() == ("captured", [])
    assert (recorder.records, recorder.launches) == (1, 1)
    f(x, labels)
    assert (recorder.records, recorder.launches) == (1, 2)
    lines = f.experimental_capture_reasons()
    assert len(lines) == 1 and lines[0].startswith("step(x: float32[16, 784]")
    assert lines[0].endswith(": captured")


def test_replays_equal_plain_calls_bit_for_bit(host_recorder):
    np.random.seed(0)
    plain_step, x, labels, plain_vars = _step()
    step, _, _, variables = _step()
    for a, b in zip(plain_vars, variables):
        b.assign(a.numpy())
    recorder = host_recorder(variables)
    f = ef.function(step)
    ef.config.experimental.set_step_capture(False)
    try:
        g = ef.function(plain_step)
        plain_losses = [g(x, labels).numpy() for _ in range(5)]
    finally:
        ef.config.experimental.set_step_capture(True)
    losses = [f(x, labels).numpy() for _ in range(5)]
    assert recorder.launches == 4  # calls 2..5: recorded once, launched each time
    for a, b in zip(plain_losses, losses):
        assert a.tobytes() == b.tobytes()
    for a, b in zip(plain_vars, variables):
        assert a.numpy().tobytes() == b.numpy().tobytes()
    assert not np.array_equal(plain_losses[0], plain_losses[-1])  # it trained


def test_variables_stay_the_users(host_recorder):
    step, x, labels, variables = _step()
    host_recorder(variables)
    f = ef.function(step)
    f(x, labels)
    f(x, labels)  # recorded
    # Addresses, not the arrays: holding them here would be an outside reader.
    pointers = [v._value.__array_interface__["data"][0] for v in variables]
    for _ in range(3):
        f(x, labels)
    concrete = f.get_concrete_function(x, labels)
    assert all(any(v is w for w in concrete.graph.variables) for v in variables)
    assert [v._value.__array_interface__["data"][0] for v in variables] == pointers
    t = [v for v in variables if v.shape.rank == 0][0]  # the step counter
    assert float(t.numpy()) == 5.0


def test_outputs_are_not_overwritten_by_later_replays(host_recorder):
    step, x, labels, variables = _step()
    host_recorder(variables)
    f = ef.function(step)
    outs = [f(x, labels) for _ in range(4)]
    values = [o.numpy().copy() for o in outs]
    f(x, labels)
    assert [o.numpy().tobytes() for o in outs] == [v.tobytes() for v in values]
    assert len({v.tobytes() for v in values}) == 4


def test_a_read_held_outside_keeps_its_value(host_recorder):
    step, x, labels, variables = _step()
    recorder = host_recorder(variables)
    f = ef.function(step)
    f(x, labels)
    f(x, labels)  # recorded
    w = variables[0]
    held = w.read_value()
    before = held.numpy().copy()
    f(x, labels)  # the graph would write w in place: runs plainly instead
    assert np.array_equal(held.numpy(), before)
    assert not np.array_equal(w.numpy(), before)
    del held
    f(x, labels)  # w has a new array now: recorded again
    assert recorder.records == 2
    f(x, labels)
    assert recorder.records == 2 and f.get_concrete_function(
        x, labels).experimental_capture_status().state == "captured"


def test_a_read_held_before_the_first_call_keeps_its_value(host_recorder):
    step, x, labels, variables = _step()
    host_recorder(variables)
    f = ef.function(step)
    held = [v.read_value() for v in variables]
    before = [h.numpy().copy() for h in held]
    for _ in range(3):  # warm-up, recording, replay: all write in place
        f(x, labels)
    assert all(np.array_equal(h.numpy(), b) for h, b in zip(held, before))
    assert f.get_concrete_function(x, labels).experimental_capture_status().state == \
        "captured"


def test_reassigned_variable_invalidates_and_records_again(host_recorder):
    step, x, labels, variables = _step()
    recorder = host_recorder(variables)
    f = ef.function(step)
    for _ in range(3):
        f(x, labels)
    assert recorder.records == 1
    w = variables[0]
    w._write(np.zeros_like(w._value))  # a new array, as a non-private assignment gives
    loss = f(x, labels)
    assert recorder.records == 2
    assert np.isfinite(loss.numpy())
    assert not np.array_equal(w.numpy(), np.zeros_like(w.numpy()))  # the step updated it


def test_recording_again_is_bounded(host_recorder):
    step, x, labels, variables = _step()
    recorder = host_recorder(variables)
    f = ef.function(step)
    f(x, labels)
    for _ in range(capture.MAX_RECORDINGS + 2):
        f(x, labels)
        variables[0]._write(variables[0]._value.copy())
    status = f.get_concrete_function(x, labels).experimental_capture_status()
    assert status.state == "fell back"
    assert "recorded %d times" % capture.MAX_RECORDINGS in status.reasons[0]
    assert recorder.records == capture.MAX_RECORDINGS


def test_failed_recording_falls_back_once_with_the_reason(host_recorder):
    step, x, labels, variables = _step()
    recorder = host_recorder(variables, fail="operation not permitted when stream is capturing")
    f = ef.function(step)
    ef.config.experimental.set_step_capture(False)
    try:
        plain_step, _, _, plain_vars = _step()
        for a, b in zip(plain_vars, variables):
            b.assign(a.numpy())
        g = ef.function(plain_step)
        expected = [g(x, labels).numpy() for _ in range(4)]
    finally:
        ef.config.experimental.set_step_capture(True)
    got = [f(x, labels).numpy() for _ in range(4)]
    assert [a.tobytes() for a in expected] == [b.tobytes() for b in got]
    assert recorder.records == 1  # once: never tried again
    state, reasons = f.get_concrete_function(x, labels).experimental_capture_status()
    assert state == "fell back"
    assert reasons == ["recording failed: RuntimeError: operation not permitted when stream "
                       "is capturing"]
    assert "fell back; recording failed" in f.experimental_capture_reasons()[0]


def test_switch_off_runs_plainly(host_recorder):
    step, x, labels, variables = _step()
    recorder = host_recorder(variables)
    f = ef.function(step)
    ef.config.experimental.set_step_capture(False)
    try:
        for _ in range(3):
            f(x, labels)
        state, reasons = f.get_concrete_function(x, labels).experimental_capture_status()
        assert state == "off" and "set_step_capture" in reasons[0]
    finally:
        ef.config.experimental.set_step_capture(True)
    assert recorder.records == 0
    f(x, labels)  # the first call with the switch on warms up
    f(x, labels)
    assert recorder.records == 1


def test_shape_change_gets_its_own_capture(host_recorder):
    step, x, labels, variables = _step(batch=16)
    recorder = host_recorder(variables)
    f = ef.function(step)
    for _ in range(3):
        f(x, labels)
    x8, labels8 = ef.constant(x.numpy()[:8]), ef.constant(labels.numpy()[:8])
    f(x8, labels8)
    lines = f.experimental_capture_reasons()
    assert len(lines) == 2
    assert lines[0].endswith(": captured") and lines[1].endswith(": recording next")
    for _ in range(3):
        f(x8, labels8)
        f(x, labels)
    records = recorder.records
    for _ in range(3):  # both traces replay; sharing variables records nothing more
        f(x8, labels8)
        f(x, labels)
    assert recorder.records == records
    assert all(line.endswith(": captured") for line in f.experimental_capture_reasons())


def test_calls_under_a_tape_run_plainly(host_recorder):
    recorder = host_recorder()
    w = ef.Variable([1.0, 2.0])
    f = ef.function(lambda x: ef.reduce_sum(w * x))
    x = ef.constant([3.0, 4.0])
    for _ in range(3):
        f(x)
    assert recorder.launches == 2  # recorded on the second call, replayed on the third
    with ef.GradientTape() as tape:
        y = f(x)
    assert tape.gradient(y, w).numpy().tolist() == [3.0, 4.0]
    assert recorder.launches == 2


def test_capture_executor_writes_variables_in_place():
    from eagerflow.function.executor import Executor

    v = ef.Variable([1.0, 2.0])
    f = ef.function(lambda x: v.assign(x * 2.0))
    concrete = f.get_concrete_function(ef.constant([1.0, 1.0]))
    plain = concrete.executor
    array = v._value
    plain.run([np.array([3.0, 4.0], np.float32)], [])
    assert v._value is not array  # the plain step takes over the computed buffer
    array = v._value
    Executor(plain.graph, capture=True).run([np.array([5.0, 6.0], np.float32)], [])
    assert v._value is array and v.numpy().tolist() == [10.0, 12.0]


def test_unchecked_sparse_xent_matches_and_gives_nan_for_bad_labels():
    from eagerflow.backend import numpy_backend
    from eagerflow.ops import registry

    prim = registry.get("SparseSoftmaxCrossEntropyWithLogits")
    logits = np.random.RandomState(0).randn(6, 5).astype(np.float32)
    labels = np.array([0, 4, 2, 1, 3, 3], np.int32)
    checked = prim.kernel(numpy_backend)(logits, labels)
    unchecked = prim.capture_forward(numpy_backend)(logits, labels)
    assert checked.tobytes() == unchecked.tobytes()
    bad = prim.capture_forward(numpy_backend)(logits, np.array([0, 5, 2, -1, 3, 3], np.int32))
    assert np.isnan(bad[[1, 3]]).all() and np.array_equal(bad[[0, 2, 4, 5]],
                                                          checked[[0, 2, 4, 5]])
    with pytest.raises(ef.errors.InvalidArgumentError):
        prim.kernel(numpy_backend)(logits, np.array([0, 5, 2, 1, 3, 3], np.int32))


# -- on a GPU ------------------------------------------------------------------------------

def _gpu_step(batch=1024):
    with ef.device("/gpu:0"):
        step, x, labels = _mlp_adam_step(ef, batch=batch)
    assert "GPU" in x.device
    return step, x, labels, _closure_variables(step)


def _sync():
    import cupy

    cupy.cuda.Device(0).synchronize()


@pytest.mark.gpu
def test_gpu_mlp_step_is_captured_and_equal_bit_for_bit():
    np.random.seed(0)
    plain_step, x, labels, plain_vars = _gpu_step()
    step, _, _, variables = _gpu_step()
    for a, b in zip(plain_vars, variables):
        b.assign(a.numpy())
    ef.config.experimental.set_step_capture(False)
    try:
        g = ef.function(plain_step)
        expected = [g(x, labels).numpy() for _ in range(6)]
    finally:
        ef.config.experimental.set_step_capture(True)
    f = ef.function(step)
    got = [f(x, labels).numpy() for _ in range(6)]
    status = f.get_concrete_function(x, labels).experimental_capture_status()
    assert status == ("captured", []), status
    assert [a.tobytes() for a in expected] == [b.tobytes() for b in got]
    for a, b in zip(plain_vars, variables):
        assert a.numpy().tobytes() == b.numpy().tobytes()


@pytest.mark.gpu
def test_gpu_variables_stay_the_users_and_reassignment_records_again():
    step, x, labels, variables = _gpu_step(batch=256)
    f = ef.function(step)
    for _ in range(3):
        f(x, labels)
    pointers = [v._value.data.ptr for v in variables]
    for _ in range(3):
        f(x, labels)
    assert [v._value.data.ptr for v in variables] == pointers
    w = variables[0]
    held = w.read_value()
    before = held.numpy().copy()
    f(x, labels)  # held outside: this call runs plainly, w gets a new array
    assert np.array_equal(held.numpy(), before)
    del held
    f(x, labels)
    f(x, labels)
    assert f.get_concrete_function(x, labels).experimental_capture_status().state == "captured"
    assert float([v for v in variables if v.shape.rank == 0][0].numpy()) == 9.0


@pytest.mark.gpu
def test_gpu_shape_change_and_first_call_time():
    # What a process pays once (cupy's handles, kernels compiled for these dtypes, the
    # tracer's modules) is not this function's: pay it on another function first.
    warm, wx, wlabels, _ = _gpu_step(batch=32)
    ef.function(warm)(wx, wlabels)
    step, x, labels, _ = _gpu_step()
    f = ef.function(step)
    _sync()
    start = time.perf_counter()
    f(x, labels)
    _sync()
    first = time.perf_counter() - start
    assert first < 0.5, "first call took %.3f s" % first
    f(x, labels)
    with ef.device("/gpu:0"):
        x2, labels2 = ef.constant(x.numpy()[:512]), ef.constant(labels.numpy()[:512])
    for _ in range(3):
        loss = f(x2, labels2)
    assert np.isfinite(loss.numpy())
    lines = f.experimental_capture_reasons()
    assert len(lines) == 2 and all(line.endswith(": captured") for line in lines), lines
