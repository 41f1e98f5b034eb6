"""GPU memory: peak statistics, the memory limit, out-of-memory retry and reports, DLPack.

The first part runs anywhere: a small stand-in for cupy (a memory pool that counts live and
cached blocks per device, its allocator hooks and its out-of-memory error) is plugged in as
the backend of a logical GPU, and the real eagerflow code paths run against it. The second
part, marked ``gpu``, does the same with real cupy allocations and is skipped without cupy
and a CUDA GPU.
"""

import gc
import random
import types

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import config as config_mod
from eagerflow import errors
from eagerflow.backend import base as backend_base
from eagerflow.framework import context, memory
from eagerflow.function import executor as executor_mod
from eagerflow.ops.dispatch import copy_to_device, execute
from eagerflow.ops.registry import Primitive
from eagerflow.tensor import wrap
from tests.fresh_interpreter import ROOT, run_python, run_python_ok

MIB = 1 << 20
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


# -- a cupy stand-in --------------------------------------------------------------------------


class OutOfMemoryError(MemoryError):
    """cupy.cuda.memory.OutOfMemoryError's constructor and message."""

    def __init__(self, size, total, limit=0):
        if limit == 0:
            msg = "Out of memory allocating {:,} bytes (allocated so far: {:,} bytes).".format(
                size, total)
        else:
            msg = ("Out of memory allocating {:,} bytes (allocated so far: {:,} bytes, "
                   "limit set to: {:,} bytes).".format(size, total, limit))
        super().__init__(msg)


class _Memory:
    __slots__ = ("size",)

    def __init__(self, size):
        self.size = size


class _Pointer:
    """A pool block handed out; returns to the pool's cache when dropped, as cupy's does."""

    def __init__(self, pool, device_id, size):
        self.device_id = device_id
        self.mem = _Memory(size)
        self._pool = pool

    def __del__(self):
        self._pool._release(self.device_id, self.mem.size)


class FakePool:
    """cupy.cuda.MemoryPool's interface; every method acts on the current device.

    Freed blocks are cached and reused whole by a request they fit; new blocks count
    against the limit and the device's capacity together with the cached ones.
    """

    def __init__(self, cuda):
        self.cuda = cuda
        self.live = {}
        self.cached = {}  # device -> list of free block sizes
        self.limit = {}
        self.calls = []
        self.used_reads = 0

    def _dev(self):
        d = self.cuda.current
        self.live.setdefault(d, 0)
        self.cached.setdefault(d, [])
        self.limit.setdefault(d, 0)
        return d

    def malloc(self, size):
        d = self._dev()
        size = -(-size // 512) * 512
        fits = sorted(b for b in self.cached[d] if b >= size)
        if fits:
            self.cached[d].remove(fits[0])
            size = fits[0]
        else:
            held = self.live[d] + sum(self.cached[d])
            if self.limit[d] and held + size > self.limit[d]:
                raise OutOfMemoryError(size, held, self.limit[d])
            if held + size > self.cuda.capacity:
                raise OutOfMemoryError(size, held)
        self.live[d] += size
        return _Pointer(self, d, size)

    def _release(self, d, size):
        self.live[d] -= size
        self.cached[d].append(size)

    def used_bytes(self):
        self.used_reads += 1
        return self.live[self._dev()]

    def total_bytes(self):
        d = self._dev()
        return self.live[d] + sum(self.cached[d])

    def free_bytes(self):
        return sum(self.cached[self._dev()])

    def free_all_blocks(self, stream=None):
        d = self._dev()
        self.calls.append(("free_all_blocks", d))
        self.cached[d] = []

    def set_limit(self, size=None, fraction=None):
        d = self._dev()
        self.calls.append(("set_limit", d, size))
        self.limit[d] = int(size or 0)

    def get_limit(self):
        return self.limit[self._dev()]


class _CudaDevice:
    def __init__(self, cuda, index):
        self.cuda = cuda
        self.index = cuda.current if index is None else index

    def __enter__(self):
        self._previous = self.cuda.current
        self.cuda.current = self.index
        return self

    def __exit__(self, *exc):
        self.cuda.current = self._previous

    @property
    def mem_info(self):
        with self:
            return self.cuda.capacity - self.cuda.pool.total_bytes(), self.cuda.capacity


class FakeCuda:
    def __init__(self, capacity):
        self.capacity = capacity
        self.current = 0
        self.pool = FakePool(self)
        self.allocator = self.pool.malloc  # what importing cupy installs

    def Device(self, index=None):  # noqa: N802 - cupy's name
        return _CudaDevice(self, index)

    def set_allocator(self, allocator=None):
        self.allocator = allocator

    def get_allocator(self):
        return self.allocator

    def alloc(self, size):
        return self.allocator(size)


class FakeCupy(types.SimpleNamespace):
    """The cupy module as kernels and eagerflow see it; array functions are numpy's."""

    def __init__(self, capacity):
        super().__init__(cuda=FakeCuda(capacity))
        self.held = []  # blocks of the arrays "on the device"

    def get_default_memory_pool(self):
        return self.cuda.pool

    def asarray(self, value):
        value = np.asarray(value)
        self.held.append(self.cuda.alloc(value.nbytes))
        return value.copy()

    def asnumpy(self, value):
        return np.asarray(value)

    def __getattr__(self, name):
        return getattr(np, name)


@pytest.fixture
def fake_gpu(monkeypatch):
    """A logical GPU:0 backed by FakeCupy (1 GiB), and fresh memory bookkeeping."""
    cupy = FakeCupy(1 << 30)
    backend = backend_base.Backend("cupy", backend_base.CUPY, cupy, "scipy.special",
                                   "scipy.linalg")
    monkeypatch.setattr(backend_base, "_cupy_backend", backend)
    monkeypatch.setattr(context, "_devices", dict(context._devices))
    monkeypatch.setattr(context, "_gpu_count", 1)
    monkeypatch.setitem(context.config.devices_initialized, "GPU", False)
    monkeypatch.setattr(context.config, "logical_gpu_layout", None)
    monkeypatch.setattr(config_mod, "_gpu_configs", {})
    monkeypatch.setattr(memory, "_peaks", {})
    monkeypatch.setattr(memory, "_prepared", set())
    monkeypatch.setattr(memory, "_tracking", None)
    yield cupy
    cupy.held.clear()


def _device(cupy):
    dev = context.get_device("GPU", 0)
    assert dev.backend.module is cupy  # first use: installs tracking, applies the limit
    return dev


# -- peak bookkeeping -------------------------------------------------------------------------


def test_first_gpu_use_installs_the_tracking_allocator(fake_gpu):
    pool = fake_gpu.cuda.pool
    assert fake_gpu.cuda.get_allocator() == pool.malloc
    _device(fake_gpu)
    allocator = fake_gpu.cuda.get_allocator()
    assert allocator is memory._tracking and allocator.pool is pool
    _device(fake_gpu)  # once per process, not per use
    assert fake_gpu.cuda.get_allocator() is allocator
    assert not [c for c in pool.calls if c[0] == "set_limit"]  # no limit configured


def test_peak_is_the_high_water_mark_between_queries(fake_gpu):
    _device(fake_gpu)
    info = ef.config.experimental.get_memory_info
    assert info("GPU:0") == {"current": 0, "peak": 0}
    a = fake_gpu.cuda.alloc(1000)  # rounded to 1024 as cupy does
    b = fake_gpu.cuda.alloc(4096)
    del a, b  # both freed before anyone asked
    assert info("GPU:0") == {"current": 0, "peak": 5120}
    fake_gpu.cuda.pool.free_all_blocks()  # so that the next blocks are new, of their size
    c = fake_gpu.cuda.alloc(512)
    assert info("/device:GPU:0") == {"current": 512, "peak": 5120}
    ef.config.experimental.reset_memory_stats("GPU:0")
    assert info("GPU:0") == {"current": 512, "peak": 512}
    d = fake_gpu.cuda.alloc(2048)
    del d
    assert info("GPU:0") == {"current": 512, "peak": 2560}
    del c


def test_peak_matches_a_brute_force_count(fake_gpu):
    _device(fake_gpu)
    pool = fake_gpu.cuda.pool
    rng = random.Random(0)
    held, true_peak = [], 0
    for _ in range(3000):
        if held and rng.random() < 0.45:
            held.pop(rng.randrange(len(held)))
        else:
            held.append(fake_gpu.cuda.alloc(rng.choice((100, 512, 3000, 70000, 1 << 20))))
            true_peak = max(true_peak, pool.live[0])
        if rng.random() < 0.01:
            assert ef.config.experimental.get_memory_info("GPU:0")["peak"] == true_peak
    assert ef.config.experimental.get_memory_info("GPU:0") == {
        "current": pool.live[0], "peak": true_peak}


def test_steady_allocations_do_not_read_the_pool(fake_gpu):
    # used_bytes walks every live block: it must not run once per allocation.
    _device(fake_gpu)
    pool = fake_gpu.cuda.pool
    keep = [fake_gpu.cuda.alloc(1 << 16) for _ in range(8)]
    del keep
    reads = pool.used_reads
    for _ in range(1000):
        x = fake_gpu.cuda.alloc(1 << 16)
        y = fake_gpu.cuda.alloc(1 << 12)
        del x, y
    assert pool.used_reads - reads <= 2


def test_a_foreign_allocator_is_left_alone(fake_gpu):
    foreign = lambda size: fake_gpu.cuda.pool.malloc(size)  # e.g. another library's pool
    fake_gpu.cuda.set_allocator(foreign)
    _device(fake_gpu)
    assert fake_gpu.cuda.get_allocator() is foreign
    a = fake_gpu.cuda.alloc(4096)
    assert ef.config.experimental.get_memory_info("GPU:0") == {"current": 4096, "peak": 4096}
    del a


@pytest.mark.parametrize("name", ["CPU:0", "/cpu:0",
                                  "/job:localhost/replica:0/task:0/device:CPU:0"])
def test_cpu_devices_are_rejected(name):
    for fn in (ef.config.experimental.get_memory_info, ef.config.experimental.reset_memory_stats):
        with pytest.raises(errors.InvalidArgumentError, match="GPU devices only"):
            fn(name)


def test_a_missing_gpu_is_rejected(monkeypatch):
    monkeypatch.setattr(context, "_devices", {k: v for k, v in context._devices.items()
                                              if k[0] == "CPU"})
    monkeypatch.setattr(context, "_gpu_count", 0)
    monkeypatch.setattr(context.config, "logical_gpu_layout", None)
    with pytest.raises(errors.InvalidArgumentError, match="GPU:0 does not exist"):
        ef.config.experimental.get_memory_info("GPU:0")


def test_importing_eagerflow_does_not_import_cupy():
    code = ("import sys, eagerflow as ef\n"
            "ef.add(ef.constant([1.0]), 1.0)\n"
            "print('cupy' in sys.modules)\n")
    assert run_python(code, cwd=ROOT).strip() == "False"


# -- the memory limit -------------------------------------------------------------------------


def test_memory_limit_is_applied_to_the_pool_at_first_use(fake_gpu):
    gpu = ef.config.list_physical_devices("GPU")[0]
    ef.config.set_logical_device_configuration(
        gpu, [ef.config.LogicalDeviceConfiguration(memory_limit=64)])
    pool = fake_gpu.cuda.pool
    assert not pool.calls  # nothing is reserved or set before the GPU is used
    dev = _device(fake_gpu)
    assert dev.memory_limit == 64
    assert pool.calls == [("set_limit", 0, 64 * MIB)]
    with fake_gpu.cuda.Device(0):
        assert pool.get_limit() == 64 * MIB


def test_virtual_device_configuration_alias_sets_the_limit(fake_gpu):
    gpu = ef.config.list_physical_devices("GPU")[0]
    ef.config.experimental.set_virtual_device_configuration(
        gpu, [ef.config.LogicalDeviceConfiguration(memory_limit=32),
              ef.config.LogicalDeviceConfiguration(memory_limit=16)])
    assert [d.name for d in ef.config.list_logical_devices("GPU")] == [
        "/device:GPU:0", "/device:GPU:1"]
    _device(fake_gpu)
    # Two logical GPUs on one physical GPU share its pool: the cap is the sum.
    assert fake_gpu.cuda.pool.calls == [("set_limit", 0, 48 * MIB)]
    # The second logical GPU is on the same physical GPU: its limit is already applied.
    assert context.get_device("GPU", 1).backend.module is fake_gpu
    assert len(fake_gpu.cuda.pool.calls) == 1


def test_memory_growth_stays_accepted(fake_gpu):
    gpu = ef.config.list_physical_devices("GPU")[0]
    assert ef.config.experimental.set_memory_growth(gpu, True) is None
    assert ef.config.experimental.get_memory_growth(gpu) is True


def test_an_allocation_past_the_limit_fails_like_a_full_device(fake_gpu):
    context.config.logical_gpu_layout = [(0, 1)]  # 1 MiB
    _device(fake_gpu)
    fake_gpu.cuda.alloc(MIB // 2)
    with pytest.raises(OutOfMemoryError, match="limit set to: 1,048,576 bytes"):
        fake_gpu.cuda.alloc(MIB)


# -- out of memory ----------------------------------------------------------------------------


def _alloc_prim(calls, nbytes):
    """A float32 op whose kernel allocates ``nbytes(x)`` on the device, then returns x + 1."""

    def forward(xp):
        def kernel(x):
            calls.append(x.shape)
            xp.held.append(xp.cuda.alloc(nbytes(x)))  # the output's block, held while it lives
            return x + 1

        return kernel

    return Primitive("FakeAlloc", forward, dtypes=(ef.float32,))


def _gpu_tensor(dev, shape=(2, 3)):
    return wrap(np.zeros(shape, np.float32), dev)


def _cache_only(cupy, size):
    """Leaves the pool holding one free block of ``size`` and nothing live."""
    cupy.held.clear()
    cupy.cuda.pool.cached[0] = [size]


def test_oom_is_retried_once_after_freeing_cached_blocks(fake_gpu):
    context.config.logical_gpu_layout = [(0, 1)]  # 1 MiB
    dev = _device(fake_gpu)
    pool = fake_gpu.cuda.pool
    _cache_only(fake_gpu, 700 * 1024)  # counts against the limit but cannot hold 900 KiB
    calls = []
    prim = _alloc_prim(calls, lambda x: 900 * 1024)
    out = execute(prim, (_gpu_tensor(dev),))  # the general path (kernel built here)
    assert out.numpy().tolist() == [[1.0] * 3] * 2 and out._device is dev
    assert len(calls) == 2 and pool.calls.count(("free_all_blocks", 0)) == 1
    # The eager fast path (kernel already built) retries the same way.
    _cache_only(fake_gpu, 700 * 1024)
    calls.clear()
    assert prim.kernels[backend_base.CUPY] is not None
    execute(prim, (_gpu_tensor(dev),))
    assert len(calls) == 2 and pool.calls.count(("free_all_blocks", 0)) == 2


def test_fast_path_binary_op_retries(fake_gpu):
    context.config.logical_gpu_layout = [(0, 1)]
    dev = _device(fake_gpu)
    calls = []

    def forward(xp):
        def kernel(x, y):
            calls.append(1)
            xp.held.append(xp.cuda.alloc(900 * 1024))
            return x + y

        return kernel

    prim = Primitive("FakeAlloc2", forward, dtypes=(ef.float32,))
    prim.kernels[backend_base.CUPY] = forward(dev.backend)
    _cache_only(fake_gpu, 700 * 1024)
    out = execute(prim, (_gpu_tensor(dev), _gpu_tensor(dev)))
    assert out._device is dev and len(calls) == 2


def test_oom_report_names_everything(fake_gpu):
    dev = _device(fake_gpu)
    live = fake_gpu.cuda.alloc(300 * MIB)
    cached = fake_gpu.cuda.alloc(100 * MIB)
    del cached
    calls = []
    prim = _alloc_prim(calls, lambda x: 800 * MIB)  # fits the device, not next to `live`
    with pytest.raises(errors.ResourceExhaustedError) as info:
        execute(prim, (_gpu_tensor(dev, (4, 5)),))
    message = str(info.value)
    assert len(calls) == 2  # retried once, then reported
    assert info.value.op == "FakeAlloc"
    for part in ("Out of memory in FakeAlloc(float32[4, 5]) on " + GPU0,
                 "could not allocate 800.00 MiB (838,860,800 bytes)",
                 "On GPU 0: 300.00 MiB live in arrays",
                 "0 bytes cached by the memory pool",  # the retry released the 100 MiB
                 "1.00 GiB total on the device",
                 "Reduce the batch or model size"):
        assert part in message, (part, message)
    assert "shape bug" not in message
    del live


def test_oom_report_flags_a_request_larger_than_the_device(fake_gpu):
    dev = _device(fake_gpu)
    prim = _alloc_prim([], lambda x: 10 ** 15)
    with pytest.raises(errors.ResourceExhaustedError) as info:
        execute(prim, (_gpu_tensor(dev, (1024, 7)),))
    message = str(info.value)
    assert "FakeAlloc(float32[1024, 7]) on " + GPU0 in message
    assert "(1,000,000,000,000,000 bytes)" in message and "909.49 TiB" in message
    assert "larger than the whole device" in message
    assert "likely a shape bug (e.g. a wrong batch dimension)" in message


def test_oom_report_flags_a_request_larger_than_the_limit(fake_gpu):
    context.config.logical_gpu_layout = [(0, 64)]
    dev = _device(fake_gpu)
    prim = _alloc_prim([], lambda x: 128 * MIB)
    with pytest.raises(errors.ResourceExhaustedError) as info:
        execute(prim, (_gpu_tensor(dev),))
    message = str(info.value)
    assert "memory limit 64.00 MiB" in message
    assert "larger than this GPU's memory limit" in message


def test_host_to_gpu_copy_oom_is_retried_then_reported(fake_gpu):
    context.config.logical_gpu_layout = [(0, 1)]
    dev = _device(fake_gpu)
    _cache_only(fake_gpu, 700 * 1024)
    host = ef.constant(np.zeros(200 * 1024, np.float32))  # 800 KiB: fits once the cache is freed
    moved = copy_to_device(host, dev)
    assert moved._device is dev and fake_gpu.cuda.pool.calls[-1] == ("free_all_blocks", 0)
    with pytest.raises(errors.ResourceExhaustedError) as info:
        copy_to_device(ef.constant(np.zeros(1 << 20, np.float32)), dev)
    assert "copying float32[1048576] from /job:localhost/replica:0/task:0/device:CPU:0 to " \
        + GPU0 in str(info.value)
    assert "larger than this GPU's memory limit" in str(info.value)


def test_cpu_memory_error_is_not_retried():
    calls = []

    def forward(xp):
        def kernel(x):
            calls.append(1)
            raise MemoryError("Unable to allocate 8.00 GiB")

        return kernel

    prim = Primitive("FakeCpuAlloc", forward, dtypes=(ef.float32,))
    with pytest.raises(errors.ResourceExhaustedError, match="Out of memory in "
                       r"FakeCpuAlloc\(float32\[2\]\) on .*CPU:0: Unable to allocate 8.00 GiB"):
        execute(prim, (ef.constant([1.0, 2.0]),))
    assert calls == [1]


def test_numpy_memory_error_reports_the_request():
    with pytest.raises(MemoryError) as info:
        np.empty((10 ** 9, 10 ** 9), np.float64)
    assert memory.requested_bytes(info.value) == 8 * 10 ** 18


@pytest.mark.parametrize("text,oom", [
    ("cudaErrorMemoryAllocation: out of memory", True),
    ("CUDA_ERROR_OUT_OF_MEMORY: out of memory", True),
    ("CUBLAS_STATUS_ALLOC_FAILED", True),
    ("cudaErrorInvalidValue: invalid argument", False),
])
def test_cuda_library_errors_are_recognized(text, oom):
    cls = type("CUDARuntimeError", (RuntimeError,), {})
    assert memory.is_out_of_memory(cls(text)) is oom
    assert memory.is_out_of_memory(ValueError("out of memory")) is False


def test_graph_oom_names_the_node_and_the_device_state(fake_gpu):
    dev = _device(fake_gpu)
    live = fake_gpu.cuda.alloc(3 * MIB)
    f = ef.function(lambda x: ef.exp(x))
    graph = f.get_concrete_function(ef.TensorSpec([8, 16])).graph
    node = [n for n in graph.nodes if n.op == "Exp"][0]
    node.device = dev.name
    error = executor_mod._node_error(node, [], OutOfMemoryError(10 ** 15, 0))
    message = str(error)
    assert isinstance(error, errors.ResourceExhaustedError) and error.op == "Exp"
    assert message.startswith("Out of memory in Exp(float32[8, 16]) on " + GPU0)
    assert "3.00 MiB live in arrays" in message and "larger than the whole device" in message
    assert "(node %s)" % node.name in message and "test_gpu_memory.py" in message
    del live


def test_graph_oom_in_a_function_is_resource_exhausted():
    state = {"fail": False}

    def forward(xp):
        def kernel(x):
            if state["fail"]:
                raise OutOfMemoryError(10 ** 15, 0)
            return x + 1

        return kernel

    prim = Primitive("FakeGraphAlloc", forward, dtypes=(ef.float32,))

    @ef.function
    def f(x):
        return execute(prim, (x,)) * 2.0

    x = ef.constant(np.ones((3, 4), np.float32))
    assert f(x).numpy().tolist() == [[4.0] * 4] * 3
    state["fail"] = True
    with pytest.raises(errors.ResourceExhaustedError) as info:
        f(x)
    message = str(info.value)
    assert "Out of memory in FakeGraphAlloc(float32[3, 4])" in message
    assert "(1,000,000,000,000,000 bytes)" in message and "test_gpu_memory.py" in message


# -- on a real GPU ----------------------------------------------------------------------------


def _run(code, tmp_path, env=None):
    """Runs ``code`` in a fresh interpreter (device layouts freeze); it must print OK."""
    run_python_ok(code, tmp_path, env=env, timeout=300)


@pytest.mark.gpu
def test_gpu_peak_and_reset():
    info = ef.config.experimental.get_memory_info
    gc.collect()
    ef.config.experimental.reset_memory_stats("GPU:0")
    start = info("GPU:0")
    assert start["peak"] == start["current"]
    n = 4 * MIB  # float32: 16 MiB per tensor
    with ef.device("/gpu:0"):
        x = ef.constant(np.zeros(n, np.float32))
    total = ef.reduce_sum(x * 2.0)  # the 16 MiB product lives only inside this line
    assert float(total) == 0.0
    now = info("GPU:0")
    assert now["peak"] >= start["current"] + 32 * MIB, (start, now)
    assert now["current"] < now["peak"]
    del x, total
    gc.collect()
    after = info("GPU:0")
    assert after["peak"] == now["peak"] and after["current"] <= now["current"] - 16 * MIB
    ef.config.experimental.reset_memory_stats("GPU:0")
    assert info("GPU:0")["peak"] == info("GPU:0")["current"]


@pytest.mark.gpu
def test_gpu_absurd_allocation_is_resource_exhausted_with_the_shape_hint():
    with ef.device("/gpu:0"):
        column = ef.zeros([10 ** 7, 1])
        row = ef.zeros([1, 25 * 10 ** 6])
    with pytest.raises(errors.ResourceExhaustedError) as info:
        column * row  # 2.5e14 float32: 10**15 bytes
    message = str(info.value)
    assert "float32[10000000, 1], float32[1, 25000000]" in message, message
    assert "GPU:0" in message and "(1,000,000,000,000,000 bytes)" in message, message
    assert "live in arrays" in message and "total on the device" in message, message
    assert "likely a shape bug" in message, message


@pytest.mark.gpu
def test_gpu_absurd_allocation_in_a_function():
    @ef.function
    def outer(a, b):
        return a * b

    with ef.device("/gpu:0"):
        column = ef.zeros([10 ** 7, 1])
        row = ef.zeros([1, 25 * 10 ** 6])
    with pytest.raises(errors.ResourceExhaustedError) as info:
        outer(column, row)
    message = str(info.value)
    assert "likely a shape bug" in message and "(node " in message, message


@pytest.mark.gpu
def test_gpu_memory_limit_is_enforced_and_the_cache_is_released_for_a_retry(tmp_path):
    _run("""
        import numpy as np
        import cupy
        import eagerflow as ef

        gpu = ef.config.list_physical_devices("GPU")[0]
        ef.config.set_logical_device_configuration(
            gpu, [ef.config.LogicalDeviceConfiguration(memory_limit=64)])
        MIB = 1 << 20
        with ef.device("/gpu:0"):
            small = ef.constant(np.ones(MIB // 4, np.float32))  # 1 MiB
        with cupy.cuda.Device(0):
            assert cupy.get_default_memory_pool().get_limit() == 64 * MIB
        # 40 MiB computed and dropped: the pool caches the block, and the limit counts it.
        column = ef.reshape(small, [-1, 1])
        big = ef.tile(column, [1, 40])
        del big
        # 48 MiB does not fit next to the cached 40 MiB; it does once the cache is freed.
        again = ef.tile(column, [1, 48])
        assert again.shape == [MIB // 4, 48] and "GPU:0" in again.device
        del again
        try:
            ef.tile(column, [1, 80])  # 80 MiB: more than the limit
        except ef.errors.ResourceExhaustedError as e:
            text = str(e)
            assert "memory limit 64.00 MiB" in text, text
            assert "larger than this GPU's memory limit" in text, text
        else:
            raise AssertionError("no ResourceExhaustedError")
        print("OK")
    """, tmp_path)


@pytest.mark.gpu
def test_gpu_dlpack_with_cupy_shares_memory():
    cupy = pytest.importorskip("cupy")
    with ef.device("/gpu:0"):
        t = ef.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    c = cupy.from_dlpack(t)
    assert c.data.ptr == t._value.data.ptr and c.shape == (2, 3)
    source = cupy.arange(5, dtype=cupy.float64)
    back = ef.experimental.dlpack.from_dlpack(source)
    assert back._value.data.ptr == source.data.ptr and back.device == GPU0
    assert back.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    capsule = ef.experimental.dlpack.to_dlpack(t)
    assert ef.experimental.dlpack.from_dlpack(capsule)._value.data.ptr == t._value.data.ptr


@pytest.mark.gpu
def test_gpu_dlpack_with_torch_shares_memory():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    with ef.device("/gpu:0"):
        t = ef.constant(np.arange(6, dtype=np.float32))
    tt = torch.from_dlpack(t)
    assert tt.device.type == "cuda" and tt.data_ptr() == t._value.data.ptr
    source = torch.arange(4, dtype=torch.float32, device="cuda")
    back = ef.experimental.dlpack.from_dlpack(source)
    assert back._value.data.ptr == source.data_ptr() and back.device == GPU0
    torch.cuda.synchronize()
    assert back.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
