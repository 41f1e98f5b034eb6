"""Devices: DeviceSpec names, device scopes, logical CPU devices, soft placement, and GPUs.

The logical device layout of a process freezes once devices are used, so every test that
configures devices runs its own interpreter (``run_python_ok``); the rest only touch CPU:0.
"""

import logging

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.framework import context
from tests.fresh_interpreter import run_python_ok

CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"
GPU = "/job:localhost/replica:0/task:0/device:GPU:%d"
D = ef.DeviceSpec


def _has_gpu():
    return context.physical_gpu_count() > 0


# -- DeviceSpec -------------------------------------------------------------------------------

PARSED = [
    ("/job:worker/replica:0/task:1/device:GPU:0", ("worker", 0, 1, "GPU", 0)),
    ("/job:worker/task:1/gpu:0", ("worker", None, 1, "GPU", 0)),
    ("/cpu:0", (None, None, None, "CPU", 0)),
    ("/GPU:1", (None, None, None, "GPU", 1)),
    ("/device:CPU:0", (None, None, None, "CPU", 0)),
    ("/device:gpu:3", (None, None, None, "GPU", 3)),
    ("cpu", (None, None, None, "CPU", None)),
    ("GPU:2", (None, None, None, "GPU", 2)),
    ("/cpu:*", (None, None, None, "CPU", None)),
    ("/job:ps", ("ps", None, None, None, None)),
    ("", (None, None, None, None, None)),
]


@pytest.mark.parametrize("name,fields", PARSED, ids=[p[0] or "empty" for p in PARSED])
def test_device_spec_parsing(name, fields):
    spec = D.from_string(name)
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == fields
    # to_string gives the canonical form, which parses back to the same spec.
    assert D.from_string(spec.to_string()) == spec
    assert str(spec) == spec.to_string()


def test_device_spec_canonical_strings():
    assert D.from_string("/job:worker/task:1/gpu:0").to_string() == \
        "/job:worker/task:1/device:GPU:0"
    assert D.from_string("cpu").to_string() == "/device:CPU:*"
    assert D("w", 0, 1, "gpu", 0).to_string() == "/job:w/replica:0/task:1/device:GPU:0"
    assert repr(D.from_string("/cpu:1")) == "DeviceSpec('/device:CPU:1')"


@pytest.mark.parametrize("bad,why", [
    ("/tpu:0", "cannot read 'tpu:0'"),
    ("/device:TPU:0", "unknown device type 'TPU'"),
    ("/cpu:x", "'x' is not a number"),
    ("/job", "cannot read 'job'"),
    ("garbage:1:2", "cannot read"),
    ("/device:CPU:0:1", "cannot read"),
    ("/task:one", "'one' is not a number"),
])
def test_device_spec_bad_names(bad, why):
    with pytest.raises(errors.InvalidArgumentError) as info:
        D.from_string(bad)
    message = str(info.value)
    assert repr(bad) in message and why in message and "/cpu:0" in message, message


def test_device_spec_non_string():
    with pytest.raises(errors.InvalidArgumentError, match="must be a string"):
        D.from_string(5)
    with pytest.raises(errors.InvalidArgumentError, match="Malformed"):
        ef.device("/xpu:0")


def test_device_spec_merging():
    outer = D.from_string("/job:worker/task:1")
    merged = outer.make_merged_spec(D.from_string("/device:CPU:0"))
    assert merged.to_string() == "/job:worker/task:1/device:CPU:0"
    # The inner scope wins field by field; an index survives only for the same device type.
    assert D.from_string("/gpu:1").make_merged_spec(D.from_string("/gpu")).to_string() == \
        "/device:GPU:1"
    assert D.from_string("/gpu:1").make_merged_spec(D.from_string("/cpu")).to_string() == \
        "/device:CPU:*"
    assert D.from_string("/job:a/cpu:0").make_merged_spec(D.from_string("/job:b")).job == "b"


def test_device_spec_replace_compatible_equality():
    spec = D(device_type="cpu")
    assert spec.device_type == "CPU" and spec.replace(device_index=2).to_string() == \
        "/device:CPU:2"
    assert spec.to_string() == "/device:CPU:*"  # replace made a new spec
    assert D.from_string("/cpu:0").is_compatible(D.from_string("/job:w/cpu:0"))
    assert not D.from_string("/cpu:0").is_compatible(D.from_string("/gpu:0"))
    assert not D.from_string("/cpu:0").is_compatible(D.from_string("/cpu:1"))
    assert D.from_string("/CPU:0") == D.from_string("/device:cpu:0")
    assert len({D.from_string("/CPU:0"), D.from_string("/device:cpu:0")}) == 1


# -- device scopes on CPU:0 -------------------------------------------------------------------


def test_tensors_default_to_cpu0():
    assert ef.constant(1.0).device == CPU % 0
    assert (ef.constant([1.0]) * 2.0).device == CPU % 0


def test_device_scope_returns_name_and_nests():
    with ef.device("/cpu:0") as name:
        assert name == "/cpu:0"
        assert context.current_device().name == CPU % 0
        with ef.device(None):
            assert context.current_device() is None
            x = ef.constant(1.0)
        assert context.current_device().name == CPU % 0
        with ef.device("/job:localhost"):  # a partial name merges with the outer scope
            assert context.state.device_spec.to_string() == "/job:localhost/device:CPU:0"
    assert context.current_device() is None and context.state.device_spec is None
    assert x.device == CPU % 0


def test_device_scope_accepts_a_device_spec_and_rejects_functions():
    with ef.device(D.from_string("/cpu:0")):
        assert ef.add(1.0, 2.0).device == CPU % 0
    with pytest.raises(errors.InvalidArgumentError, match="device functions"):
        ef.device(lambda op: "/cpu:0")


def test_device_scope_is_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with ef.device("/cpu:0"):
            1 / 0  # noqa: B018
    assert context.current_device() is None


def test_missing_cpu_device_names_the_fix():
    with pytest.raises(errors.InvalidArgumentError,
                       match="CPU:5 does not exist.*set_logical_device_configuration"):
        with ef.device("/cpu:5"):
            pass


def test_physical_devices():
    cpus = ef.config.list_physical_devices("CPU")
    assert cpus == [ef.config.PhysicalDevice("/physical_device:CPU:0", "CPU")]
    assert cpus[0].device_type == "CPU"
    assert ef.config.list_physical_devices("cpu") == cpus  # case-insensitive
    gpus = ef.config.list_physical_devices("GPU")
    assert len(gpus) == context.physical_gpu_count()
    assert ef.config.list_physical_devices() == cpus + gpus
    assert ef.config.get_visible_devices("CPU") == cpus


def test_bad_physical_device_is_refused():
    with pytest.raises(errors.InvalidArgumentError, match="Unrecognized physical device"):
        ef.config.get_logical_device_configuration("/physical_device:CPU:9")


# -- soft placement ---------------------------------------------------------------------------


@pytest.fixture
def restore_soft_placement():
    previous = ef.config.get_soft_device_placement()
    yield
    ef.config.set_soft_device_placement(previous)


def test_soft_placement_runs_gpu_ops_on_cpu(caplog, restore_soft_placement):
    if _has_gpu():
        pytest.skip("a GPU is present: nothing to fall back from")
    assert ef.config.get_soft_device_placement() is True  # TF's default
    with caplog.at_level(logging.INFO, logger="eagerflow"):
        with ef.device("/gpu:0"):
            y = ef.constant([1.0, 2.0]) * 3.0
    assert y.device == CPU % 0 and y.numpy().tolist() == [3.0, 6.0]
    assert any("Soft placement" in r.getMessage() for r in caplog.records)


def test_hard_placement_raises_without_a_gpu(restore_soft_placement):
    if _has_gpu():
        pytest.skip("a GPU is present")
    ef.config.set_soft_device_placement(False)
    assert ef.config.get_soft_device_placement() is False
    with pytest.raises(errors.InvalidArgumentError, match="GPU:0 does not exist.*0 GPU"):
        with ef.device("/gpu:0"):
            ef.constant(1.0)
    assert context.current_device() is None


def test_remote_device_soft_and_hard(restore_soft_placement):
    with ef.device("/job:worker/task:1/cpu:0"):
        assert ef.constant(1.0).device == CPU % 0  # soft: runs on this task
    ef.config.set_soft_device_placement(False)
    with pytest.raises(errors.InvalidArgumentError, match="remote device"):
        with ef.device("/job:worker/task:1/cpu:0"):
            pass


# -- logical CPU devices (each in a fresh process) --------------------------------------------


def test_logical_cpu_devices(tmp_path):
    run_python_ok("""
        import eagerflow as ef
        from eagerflow import errors

        CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"
        cpu = ef.config.list_physical_devices("CPU")[0]
        assert ef.config.get_logical_device_configuration(cpu) is None
        configs = [ef.config.LogicalDeviceConfiguration() for _ in range(3)]
        ef.config.set_logical_device_configuration(cpu, configs)
        assert ef.config.get_logical_device_configuration(cpu) == configs

        logical = ef.config.list_logical_devices("CPU")
        assert [d.name for d in logical] == ["/device:CPU:%d" % i for i in range(3)]
        assert all(d.device_type == "CPU" for d in logical)
        assert [d for d in ef.config.list_logical_devices() if d.device_type == "CPU"] \
            == logical

        # Tensors created in a scope live on its device.
        made = []
        for i in range(3):
            with ef.device("/cpu:%d" % i):
                made.append(ef.constant([float(i), 1.0]))
        assert [t.device for t in made] == [CPU % i for i in range(3)]

        # Outside scopes, ops run where their inputs are.
        a = made[1]
        for out in (a * 2.0, a + a, ef.reduce_sum(a), a[0], ef.cast(a, ef.int32),
                    ef.reshape(a, [2, 1]), ef.identity(a), ef.exp(a), ef.zeros_like(a)):
            assert out.device == CPU % 1, out.device
        assert ef.zeros([2]).device == CPU % 0

        # Inside a scope, inputs from other devices are copied to the scope's device.
        with ef.device("/cpu:2"):
            s = made[0] + made[1]
            z = ef.zeros([2])
            r = ef.random.uniform([2])
            with ef.device(None):
                back = made[1] * 1.0
        assert s.device == z.device == r.device == CPU % 2
        assert s.numpy().tolist() == [1.0, 2.0]
        assert back.device == CPU % 1
        assert made[0].device == CPU % 0 and made[1].device == CPU % 1

        # A partial inner name keeps the outer scope's fields.
        with ef.device("/job:localhost"):
            with ef.device("/cpu:1"):
                assert ef.constant(1.0).device == CPU % 1

        try:
            with ef.device("/cpu:3"):
                pass
            raise AssertionError("only 3 logical CPUs")
        except errors.InvalidArgumentError as e:
            assert "3 logical CPU device(s)" in str(e)

        # The layout is now frozen.
        for layout in (configs[:2], None):
            try:
                ef.config.set_logical_device_configuration(cpu, layout)
                raise AssertionError("set after initialization must fail")
            except RuntimeError as e:
                assert "cannot be modified after being initialized" in str(e)
        assert len(ef.config.list_logical_devices("CPU")) == 3
        print("OK")
    """, tmp_path)


def test_logical_devices_freeze_when_listed(tmp_path):
    run_python_ok("""
        import eagerflow as ef

        cpu = ef.config.list_physical_devices("CPU")[0]
        two = [ef.config.LogicalDeviceConfiguration()] * 2
        ef.config.set_logical_device_configuration(cpu, two)
        ef.config.set_logical_device_configuration(cpu, None)   # reset before use: fine
        assert ef.config.get_logical_device_configuration(cpu) is None
        assert len(ef.config.list_logical_devices("CPU")) == 1
        try:
            ef.config.set_logical_device_configuration(cpu, two)
            raise AssertionError("listing the devices initializes them")
        except RuntimeError:
            pass
        print("OK")
    """, tmp_path)


def test_logical_device_configuration_validation(tmp_path):
    run_python_ok("""
        import eagerflow as ef
        from eagerflow import errors

        cpu = ef.config.list_physical_devices("CPU")[0]
        try:
            ef.config.set_logical_device_configuration(cpu, [])
            raise AssertionError("an empty layout must fail")
        except errors.InvalidArgumentError as e:
            assert "must not be empty" in str(e)
        try:
            ef.config.set_logical_device_configuration("/physical_device:CPU:3", [])
            raise AssertionError("an unknown device must fail")
        except errors.InvalidArgumentError as e:
            assert "Unrecognized physical device" in str(e)
        # By name works too, as in TF.
        ef.config.set_logical_device_configuration(
            "/physical_device:CPU:0", [ef.config.LogicalDeviceConfiguration()] * 2)
        with ef.device("/cpu:1"):
            assert ef.constant(1.0).device.endswith("CPU:1")
        print("OK")
    """, tmp_path)


# -- GPU (skipped without cupy and a CUDA device) ---------------------------------------------


@pytest.mark.gpu
def test_gpu_devices_listed():
    gpus = ef.config.list_physical_devices("GPU")
    assert gpus and gpus[0].name == "/physical_device:GPU:0"
    assert "/device:GPU:0" in [d.name for d in ef.config.list_logical_devices("GPU")]


@pytest.mark.gpu
def test_gpu_ops_match_cpu():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((16, 4)).astype(np.float32)

    def compute(x, y):
        h = ef.nn.relu(ef.matmul(x, y))
        return ef.reduce_sum(h * 2.0 + 1.0, axis=0), ef.exp(-ef.abs(x))[:, 1:5]

    cpu_out = compute(ef.constant(a), ef.constant(b))
    with ef.device("/gpu:0"):
        ga, gb = ef.constant(a), ef.constant(b)
        assert ga.device == GPU % 0
        gpu_out = compute(ga, gb)
    for c, g in zip(cpu_out, gpu_out):
        assert g.device == GPU % 0 and g.dtype == c.dtype and g.shape == c.shape
        np.testing.assert_allclose(g.numpy(), c.numpy(), rtol=1e-5, atol=1e-5)
    # Outside scopes, ops on GPU inputs stay on the GPU.
    assert (gpu_out[0] + 1.0).device == GPU % 0


@pytest.mark.gpu
def test_gpu_cpu_copies_and_mixed_inputs():
    with ef.device("/gpu:0"):
        g = ef.constant([1.0, 2.0])
    c = ef.constant([10.0, 20.0])
    mixed = g + c  # inputs disagree: the GPU wins
    assert mixed.device == GPU % 0 and mixed.numpy().tolist() == [11.0, 22.0]
    with ef.device("/cpu:0"):
        back = g * 1.0
    assert back.device == CPU % 0 and back.numpy().tolist() == [1.0, 2.0]
    assert np.asarray(g).tolist() == [1.0, 2.0] and float(g[1]) == 2.0


@pytest.mark.gpu
def test_gpu_gradients_match_cpu():
    x_np = np.linspace(-1.0, 1.0, 5)
    grads = []
    for dev in ("/cpu:0", "/gpu:0"):
        with ef.device(dev):
            x = ef.constant(x_np)
            with ef.GradientTape() as tape:
                tape.watch(x)
                y = ef.reduce_sum(ef.tanh(x) * x)
            grads.append(tape.gradient(y, x))
    assert grads[1].device == GPU % 0
    np.testing.assert_allclose(grads[1].numpy(), grads[0].numpy(), rtol=1e-12)
