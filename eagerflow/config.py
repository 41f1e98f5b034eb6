"""``eagerflow.config``: devices and execution settings, named as in ``tf.config``.

Splitting the CPU into several logical devices is how multi-device code is tested on a
machine with one CPU:

Example:
    >>> import eagerflow as ef
    >>> cpus = ef.config.list_physical_devices("CPU")
    >>> cpus[0].device_type
    'CPU'
"""

from __future__ import annotations

import collections
import operator

from eagerflow import errors
from eagerflow.framework import context

__all__ = [
    "PhysicalDevice", "LogicalDevice", "LogicalDeviceConfiguration", "list_physical_devices",
    "list_logical_devices", "set_logical_device_configuration",
    "get_logical_device_configuration", "set_soft_device_placement",
    "get_soft_device_placement", "set_log_device_placement", "get_log_device_placement",
    "run_functions_eagerly", "functions_run_eagerly", "experimental", "threading",
    "get_visible_devices", "set_visible_devices",
]

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])


class LogicalDeviceConfiguration:
    """The configuration of one logical device.

    Args:
        memory_limit: For a GPU, the most memory (in MiB) its arrays may use, enforced by
            the GPU's memory pool (``cupy.cuda.MemoryPool.set_limit``); None for no limit.
            Logical GPUs on one physical GPU share a pool, capped at the sum of their
            limits. Ignored for CPUs.
        experimental_priority: Accepted for compatibility.
        experimental_device_ordinal: Accepted for compatibility.

    Example:
        >>> import eagerflow as ef
        >>> ef.config.LogicalDeviceConfiguration(memory_limit=1024)
        LogicalDeviceConfiguration(memory_limit=1024)
    """

    def __init__(self, memory_limit=None, experimental_priority=None,
                 experimental_device_ordinal=None):
        self.memory_limit = memory_limit
        self.experimental_priority = experimental_priority
        self.experimental_device_ordinal = experimental_device_ordinal

    def __repr__(self):
        return "LogicalDeviceConfiguration(memory_limit=%r)" % (self.memory_limit,)

    def __eq__(self, other):
        return isinstance(other, LogicalDeviceConfiguration) and \
            self.memory_limit == other.memory_limit


_cpu_config = None
_gpu_configs = {}


def list_physical_devices(device_type=None):
    """Lists the physical devices: one CPU, and each CUDA GPU cupy can see.

    Args:
        device_type: ``"CPU"``, ``"GPU"`` or None for all.

    Returns:
        A list of PhysicalDevice(name, device_type).

    Example:
        >>> import eagerflow as ef
        >>> [d.name for d in ef.config.list_physical_devices("CPU")]
        ['/physical_device:CPU:0']
    """
    out = []
    kind = None if device_type is None else device_type.upper()
    if kind in (None, "CPU"):
        out.append(PhysicalDevice("/physical_device:CPU:0", "CPU"))
    if kind in (None, "GPU"):
        out += [PhysicalDevice("/physical_device:GPU:%d" % i, "GPU")
                for i in range(context.physical_gpu_count())]
    return out


def list_logical_devices(device_type=None):
    """Lists the logical devices that ops can run on (this freezes the configuration).

    Example:
        >>> import eagerflow as ef
        >>> ef.config.list_logical_devices("CPU")[0].name
        '/device:CPU:0'
    """
    kind = None if device_type is None else device_type.upper()
    out = []
    for t in ("CPU", "GPU"):
        if kind in (None, t):
            if t == "GPU" and kind is None and context.physical_gpu_count() == 0:
                continue
            out += [LogicalDevice("/device:%s:%d" % (t, d.index), t)
                    for d in context.logical_devices(t)]
    return out


def _physical(device):
    if isinstance(device, PhysicalDevice):
        return device
    if isinstance(device, str):
        for d in list_physical_devices():
            if d.name == device:
                return d
    raise errors.InvalidArgumentError(
        None, None, "Unrecognized physical device %r; use one from "
        "config.list_physical_devices()." % (device,))


def set_logical_device_configuration(device, logical_devices):
    """Splits a physical device into logical devices, or limits a GPU's memory.

    Must run before that device type is used by any op (as in TF). For a GPU, one
    configuration with ``memory_limit`` caps the memory its arrays may use (in MiB); the
    limit is applied to the GPU's memory pool when the GPU is first used. Without a limit
    nothing is reserved up front either: the pool grows on demand.

    Args:
        device: A PhysicalDevice from ``list_physical_devices``.
        logical_devices: A list of LogicalDeviceConfiguration, or None to reset.

    Raises:
        RuntimeError: If the devices were already initialized.

    Example:
        >>> import eagerflow as ef
        >>> cpu = ef.config.list_physical_devices("CPU")[0]
        >>> ef.config.get_logical_device_configuration(cpu) is None
        True
    """
    global _cpu_config
    device = _physical(device)
    if context.config.devices_initialized.get(device.device_type):
        raise RuntimeError(
            "Virtual devices cannot be modified after being initialized: set the logical "
            "device configuration at program start, before any op runs on a %s."
            % device.device_type)
    configs = None if logical_devices is None else list(logical_devices)
    if configs is not None and not configs:
        raise errors.InvalidArgumentError(None, None, "logical_devices must not be empty")
    if device.device_type == "CPU":
        _cpu_config = configs
        context.config.logical_cpu_count = 1 if configs is None else len(configs)
    else:
        index = int(device.name.rsplit(":", 1)[1])
        if configs is None:
            _gpu_configs.pop(index, None)
        else:
            _gpu_configs[index] = configs
        layout = []
        for i in range(context.physical_gpu_count()):
            for cfg in _gpu_configs.get(i, [LogicalDeviceConfiguration()]):
                layout.append((i, cfg.memory_limit))
        context.config.logical_gpu_layout = layout
    # CPU:0 exists from import; its identity must survive, so keep the interned object.


def get_logical_device_configuration(device):
    """Returns the logical configuration set for a physical device, or None."""
    device = _physical(device)
    if device.device_type == "CPU":
        return _cpu_config
    return _gpu_configs.get(int(device.name.rsplit(":", 1)[1]))


set_virtual_device_configuration = set_logical_device_configuration
get_virtual_device_configuration = get_logical_device_configuration


def get_visible_devices(device_type=None):
    return list_physical_devices(device_type)


def set_visible_devices(devices, device_type=None):
    """Accepted for compatibility; every listed device stays visible."""
    return None


def set_soft_device_placement(enabled):
    """When True (default), an op asked for a missing GPU runs on the CPU instead."""
    context.config.soft_device_placement = bool(enabled)


def get_soft_device_placement():
    return context.config.soft_device_placement


def set_log_device_placement(enabled):
    """Logs the device each op or graph node is placed on (logger ``eagerflow``)."""
    context.config.log_device_placement = bool(enabled)


def get_log_device_placement():
    return context.config.log_device_placement


def run_functions_eagerly(run_eagerly):
    """Makes every ``@function`` run its Python eagerly (for debugging)."""
    context.config.run_functions_eagerly = bool(run_eagerly)


def functions_run_eagerly():
    return context.config.run_functions_eagerly


class _Experimental:
    """``config.experimental``: memory information and aliases."""

    @staticmethod
    def set_host_memory_retention(enabled):
        """Keeps (True, the default) or returns (False) freed host memory between steps.

        See ``eagerflow.framework.host_allocator``: with retention, malloc reuses the
        blocks of big temporaries instead of mapping fresh pages every training step. It is
        applied when the first graph is compiled; call this before that to change it.

        Returns:
            True if the choice takes effect, False if the policy was already applied.

        Example:
            >>> import eagerflow as ef
            >>> isinstance(ef.config.experimental.set_host_memory_retention(True), bool)
            True
        """
        from eagerflow.framework import host_allocator

        return host_allocator.set_retention(enabled)

    @staticmethod
    def get_memory_info(device):
        """Current and peak bytes in use on a GPU: ``{"current": int, "peak": int}``.

        ``peak`` is the high-water mark since the program started or since
        ``reset_memory_stats``, kept at allocation time (a peak between two queries counts).
        Memory the pool caches but no array uses is not counted. Logical GPUs on one
        physical GPU report that GPU's totals.

        Args:
            device: A GPU device name, e.g. ``"GPU:0"``.

        Returns:
            A dict with the ``"current"`` and ``"peak"`` byte counts.

        Raises:
            InvalidArgumentError: For a CPU device (as TF, which tracks GPU memory only),
                or a GPU that does not exist.

        Example:
            >>> import eagerflow as ef
            >>> try:
            ...     ef.config.experimental.get_memory_info("CPU:0")
            ... except ef.errors.InvalidArgumentError:
            ...     print("GPU devices only")
            GPU devices only
        """
        from eagerflow.framework import memory

        return memory.get_memory_info(device)

    @staticmethod
    def reset_memory_stats(device):
        """Resets a GPU's peak (see ``get_memory_info``) to the bytes in use now.

        Raises:
            InvalidArgumentError: For a CPU device, or a GPU that does not exist.
        """
        from eagerflow.framework import memory

        return memory.reset_memory_stats(device)

    @staticmethod
    def set_memory_growth(device, enable):
        """Accepted for compatibility: GPU memory always grows on demand here.

        The GPU memory pool reserves nothing when a GPU is first used and takes memory from
        the driver as arrays need it; to cap it, give the GPU a ``memory_limit`` with
        ``set_logical_device_configuration``.
        """
        return None

    @staticmethod
    def get_memory_growth(device):
        return True

    @staticmethod
    def enable_op_determinism():
        """Accepted for compatibility (``tf.config.experimental.enable_op_determinism``).

        CPU kernels here are deterministic already and random ops follow their seeds; TF
        also requires a seed to be set, which this does not check.
        """
        return None

    @staticmethod
    def set_function_trace_cache_size(size):
        """Sets how many traces each ``@function`` keeps (128 by default).

        Past this many, the least recently used trace is dropped (one warning per
        function) and traced again if called again. TF keeps every trace; a bound keeps a
        function called with ever new Python values from growing memory without end.

        Args:
            size: A positive integer.

        Raises:
            ValueError: If ``size`` is not a positive integer.

        Example:
            >>> import eagerflow as ef
            >>> ef.config.experimental.set_function_trace_cache_size(64)
            >>> ef.config.experimental.get_function_trace_cache_size()
            64
            >>> ef.config.experimental.set_function_trace_cache_size(128)
        """
        try:
            n = operator.index(size)
        except TypeError:
            n = 0
        if isinstance(size, bool) or n < 1:
            raise ValueError("set_function_trace_cache_size: size must be a positive "
                             "integer, got %r." % (size,))
        context.config.function_trace_cache_size = n

    @staticmethod
    def get_function_trace_cache_size():
        """How many traces each ``@function`` keeps (see ``set_function_trace_cache_size``)."""
        return context.config.function_trace_cache_size

    @staticmethod
    def set_step_capture(enabled):
        """Turns captured steps on (True, the default) or off.

        With it on, a ``@function`` whose graph runs on one GPU with fixed shapes and
        reads nothing on the host records its second call as a CUDA graph and replays it
        on later calls (``eagerflow.function.capture``); off, every call launches its
        kernels one by one. The environment variable ``EAGERFLOW_STEP_CAPTURE=0`` sets
        the default. It takes effect on the next call, recorded graphs included.

        Args:
            enabled: A bool.

        Example:
            >>> import eagerflow as ef
            >>> ef.config.experimental.set_step_capture(False)
            >>> ef.config.experimental.get_step_capture()
            False
            >>> ef.config.experimental.set_step_capture(True)
        """
        context.config.step_capture = bool(enabled)

    @staticmethod
    def get_step_capture():
        """Whether captured steps are on (see ``set_step_capture``)."""
        return context.config.step_capture

    set_virtual_device_configuration = staticmethod(set_logical_device_configuration)
    list_physical_devices = staticmethod(list_physical_devices)
    list_logical_devices = staticmethod(list_logical_devices)


experimental = _Experimental()


class _Threading:
    """``config.threading``: the intra-op count sets the threads eagerflow's CPU kernels
    split large elementwise and window work over (``eagerflow.backend.cpu_threads``; 0,
    the default, means every CPU, 1 turns the splitting off). BLAS keeps its own threads;
    the inter-op count is recorded for compatibility (steps run in order).

    Example:
        >>> import eagerflow as ef
        >>> ef.config.threading.set_intra_op_parallelism_threads(1)
        >>> ef.config.threading.get_intra_op_parallelism_threads()
        1
        >>> ef.config.threading.set_intra_op_parallelism_threads(0)
    """

    _inter = 0
    _intra = 0

    def set_inter_op_parallelism_threads(self, n):
        self._inter = int(n)

    def get_inter_op_parallelism_threads(self):
        return self._inter

    def set_intra_op_parallelism_threads(self, n):
        from eagerflow.backend import cpu_threads

        self._intra = int(n)
        cpu_threads.set_threads(self._intra)

    def get_intra_op_parallelism_threads(self):
        return self._intra


threading = _Threading()


def __getattr__(name):
    # ``config.optimizer`` lives with the function machinery; imported on first use so that
    # ``import eagerflow`` stays fast.
    if name == "optimizer":
        from eagerflow.function import optimizer_config

        globals()["optimizer"] = optimizer_config
        return optimizer_config
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
