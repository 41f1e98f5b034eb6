"""The execution context: devices of this process and per-thread execution state.

Per-thread state (device scopes, active tapes, the tracing hook) lives in one
``threading.local`` object. The eager fast path reads a single attribute, ``slow``, which is
False exactly when no device scope, tape or trace is active on the thread.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading

from eagerflow import errors
from eagerflow.backend import base as backend_base
from eagerflow.framework.device_spec import DeviceSpec

_log = logging.getLogger("eagerflow")

LOCAL_JOB = "localhost"


class Device:
    """A logical device of this process that tensors live on.

    Devices are interned: there is one object per name, so identity comparison is equality.

    Attributes:
        name: Full name, e.g. ``/job:localhost/replica:0/task:0/device:CPU:0``.
        device_type: ``"CPU"`` or ``"GPU"``.
        index: The logical device index within its type.
        physical_index: The physical device it runs on (the cupy device id on a GPU).
    """

    __slots__ = ("name", "device_type", "index", "physical_index", "backend_index", "_backend",
                 "memory_limit")

    def __init__(self, device_type, index, physical_index, memory_limit=None):
        self.device_type = device_type
        self.index = index
        self.physical_index = physical_index
        self.name = "/job:%s/replica:0/task:0/device:%s:%d" % (LOCAL_JOB, device_type, index)
        self.backend_index = backend_base.NUMPY if device_type == "CPU" else backend_base.CUPY
        self._backend = None
        self.memory_limit = memory_limit

    @property
    def backend(self):
        """The array Backend (numpy for CPU, cupy for GPU)."""
        if self._backend is None:
            backend = backend_base.get_backend(self.device_type)
            if backend.index:
                # A GPU's peak tracking and configured memory limit start with its first use,
                # so that cupy is imported only by programs that use a GPU.
                from eagerflow.framework import memory

                memory.prepare(self, backend.module)
            self._backend = backend
        return self._backend

    @property
    def spec(self):
        return DeviceSpec(LOCAL_JOB, 0, 0, self.device_type, self.index)

    def __repr__(self):
        return "<Device %s>" % self.name

    def __str__(self):
        return self.name


class _ThreadState(threading.local):
    # Class attributes are each thread's initial values.
    slow = False  # True inside a device scope or a trace: the eager fast path checks this
    device_spec = None  # merged DeviceSpec of the enclosing ``device`` scopes, or None
    device = None  # the local Device that spec resolves to (None when no scope)
    tapes = ()  # active GradientTapes, innermost last
    trace = None  # the tracing hook, called instead of kernels while a function is traced
    name_scope = ""
    profiling = False  # set by eagerflow.profiler: every op takes the slow path to be timed

    def refresh(self):
        # Tapes do not make the path slow: dispatch checks input ids after the kernel runs.
        self.slow = bool(self.device_spec is not None or self.trace is not None
                         or self.profiling)


state = _ThreadState()

# Ids that link tensors and variables to tape records; 0 means "never watched".
new_id = itertools.count(1).__next__

# Set by eagerflow.tape: called as hook(variable, tensor) when a variable is read while a
# tape is active (variables live below the tape, so the tape plugs itself in here).
variable_read_hook = None


class _Config:
    """Process-wide settings changed through ``eagerflow.config``."""

    def __init__(self):
        self.soft_device_placement = True
        self.log_device_placement = False
        self.run_functions_eagerly = False
        self.logical_cpu_count = 1
        self.logical_gpu_layout = None  # list of (physical index, memory limit) or None
        self.devices_initialized = {"CPU": False, "GPU": False}
        self.function_trace_cache_size = 128  # traces kept per @function (LRU beyond)
        # GPU @function calls replay a captured CUDA graph (function/capture.py).
        self.step_capture = os.environ.get("EAGERFLOW_STEP_CAPTURE", "1").strip().lower() \
            not in ("0", "false", "off", "no")


config = _Config()
_lock = threading.Lock()
_devices = {}  # (type, index) -> Device
_gpu_count = None


def physical_gpu_count():
    """Number of CUDA devices cupy sees; 0 when cupy or a GPU is missing (imports cupy)."""
    global _gpu_count
    if _gpu_count is None:
        try:
            import cupy

            _gpu_count = int(cupy.cuda.runtime.getDeviceCount())
        except Exception:  # noqa: BLE001 - any failure means no usable GPU
            _gpu_count = 0
    return _gpu_count


def logical_devices(device_type):
    """All logical devices of a type, in index order (marks that type as initialized)."""
    config.devices_initialized[device_type] = True
    if device_type == "CPU":
        return [get_device("CPU", i) for i in range(config.logical_cpu_count)]
    count = len(config.logical_gpu_layout) if config.logical_gpu_layout else physical_gpu_count()
    return [get_device("GPU", i) for i in range(count)]


def get_device(device_type, index):
    """Returns the interned Device, creating it on first use; raises if it does not exist."""
    key = (device_type, index)
    dev = _devices.get(key)
    if dev is not None:
        return dev
    with _lock:
        dev = _devices.get(key)
        if dev is None:
            dev = _make_device(device_type, index)
            _devices[key] = dev
            config.devices_initialized[device_type] = True
    return dev


def _make_device(device_type, index):
    if device_type == "CPU":
        if index >= config.logical_cpu_count:
            raise errors.InvalidArgumentError(
                None, None,
                "Device /device:CPU:%d does not exist: this process has %d logical CPU "
                "device(s). Split the CPU with config.set_logical_device_configuration before "
                "running any op." % (index, config.logical_cpu_count))
        return Device("CPU", index, 0)
    layout = config.logical_gpu_layout
    count = len(layout) if layout else physical_gpu_count()
    if index >= count:
        raise errors.InvalidArgumentError(
            None, None,
            "Device /device:GPU:%d does not exist: %d GPU(s) are visible%s."
            % (index, count, "" if count else " (cupy missing or no CUDA device)"))
    physical, limit = layout[index] if layout else (index, None)
    return Device("GPU", index, physical, limit)


CPU0 = get_device("CPU", 0)
config.devices_initialized["CPU"] = False  # creating CPU:0 itself does not freeze the layout


def resolve_device(spec, for_op=None):
    """Maps a (possibly partial) DeviceSpec to a local Device, applying soft placement.

    Args:
        spec: A DeviceSpec; fields left unset default to this task's CPU/GPU 0.
        for_op: The op name, for messages.

    Returns:
        The Device to run on.
    """
    dtype = spec.device_type or "CPU"
    index = spec.device_index or 0
    if spec.job not in (None, LOCAL_JOB) or spec.task not in (None, 0):
        # Remote devices are reached through graphs placed across tasks, not eagerly.
        if not config.soft_device_placement:
            raise errors.InvalidArgumentError(
                None, for_op,
                "Cannot run %s eagerly on remote device %s: eager ops run on this task's "
                "devices. Trace the computation with @function and place it, or use a "
                "distribution strategy." % (for_op or "an op", spec.to_string()))
        dtype, index = dtype, index
    try:
        return get_device(dtype, index)
    except errors.InvalidArgumentError:
        if dtype == "GPU" and config.soft_device_placement:
            _log.info("Soft placement: %s is not available, %s runs on CPU:0",
                      spec.to_string(), for_op or "the op")
            return CPU0
        raise


def current_device():
    """The Device selected by the innermost ``device`` scope, or None outside any scope."""
    return state.device


def push_device_scope(spec):
    """Enters a device scope; returns a token for ``pop_device_scope``."""
    token = (state.device_spec, state.device)
    if spec is None:  # ``with device(None)`` clears the scope, as in TF
        state.device_spec, state.device = None, None
    else:
        merged = spec if state.device_spec is None else state.device_spec.make_merged_spec(spec)
        state.device_spec = merged
        state.device = None if state.trace is not None and merged.device_type is None \
            else resolve_device(merged)
    state.refresh()
    return token


def pop_device_scope(token):
    state.device_spec, state.device = token
    state.refresh()


def push_tape(tape):
    # Tapes do not make dispatch take its slow path, so ``refresh`` is not needed here.
    state.tapes = state.tapes + (tape,)


def pop_tape(tape):
    tapes = state.tapes
    if tapes and tapes[-1] is tape:
        state.tapes = tapes[:-1]
    elif tape in tapes:
        index = len(tapes) - 1 - tapes[::-1].index(tape)
        state.tapes = tapes[:index] + tapes[index + 1:]


def set_trace_hook(hook):
    """Installs (or with None removes) the tracing hook; returns the previous one."""
    previous = state.trace
    state.trace = hook
    state.refresh()
    return previous
