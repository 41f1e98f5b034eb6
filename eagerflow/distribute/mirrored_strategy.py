"""MirroredStrategy and OneDeviceStrategy: replicas of one process.

``MirroredStrategy`` runs one replica per device (all GPUs when present, else the CPU;
pass logical CPUs from ``config.set_logical_device_configuration`` to use several CPU
replicas), concurrently, one thread each; its replicas meet in a ``LocalCommunicator``
group. ``OneDeviceStrategy`` runs the one replica on one named device.

Example:
    >>> import eagerflow as ef
    >>> s = ef.distribute.MirroredStrategy(["/cpu:0"])
    >>> with s.scope():
    ...     v = ef.Variable(1.0)
    >>> float(s.run(lambda: v * 2.0))
    2.0
"""

from __future__ import annotations

from eagerflow import errors
from eagerflow.distribute.distribute_lib import Strategy, StrategyExtended
from eagerflow.framework import context
from eagerflow.framework.device_spec import DeviceSpec

__all__ = ["MirroredStrategy", "OneDeviceStrategy"]


def resolve_devices(devices):
    """Local Devices from names (``"/cpu:1"``, ``"/gpu:0"``), rejecting duplicates."""
    out = []
    for name in devices:
        spec = DeviceSpec.from_string(name) if not isinstance(name, DeviceSpec) else name
        if spec.job not in (None, context.LOCAL_JOB) or spec.task not in (None, 0):
            raise errors.InvalidArgumentError(
                None, None, "Device %r is not on this worker: MirroredStrategy uses this "
                "process's devices; use MultiWorkerMirroredStrategy across processes."
                % (name,))
        device = context.get_device(spec.device_type or "CPU", spec.device_index or 0)
        if device in out:
            raise ValueError("No duplicates allowed in `devices` argument: %s" % (devices,))
        out.append(device)
    if not out:
        raise ValueError("Must specify at least one device.")
    return out


def default_devices():
    """All GPUs when there are any, else CPU:0 (as TF)."""
    gpus = context.logical_devices("GPU") if context.physical_gpu_count() else []
    return gpus or [context.CPU0]


class MirroredExtended(StrategyExtended):
    """StrategyExtended over local devices and a LocalCommunicator group."""


class MirroredStrategy(Strategy):
    """Synchronous training on several devices of one machine, one replica per device.

    Variables made in ``scope()`` are MirroredVariables (one identical copy per device);
    ``run`` runs the step on every replica concurrently; gradients applied by an
    optimizer are all-reduced across replicas, once.

    Args:
        devices: Device names (default: all GPUs, else ``"/cpu:0"``).
        cross_device_ops: Accepted for TF compatibility; replicas in one process always
            reduce through the in-process communicator (deterministic, in replica order).
        timeout: Seconds a replica waits for the others at a collective before
            ``DeadlineExceededError`` (default 60).

    Example:
        >>> import eagerflow as ef
        >>> s = ef.distribute.MirroredStrategy(["/cpu:0"])
        >>> s.num_replicas_in_sync
        1
    """

    def __init__(self, devices=None, cross_device_ops=None, timeout=None):
        devices = default_devices() if devices is None else resolve_devices(devices)
        super().__init__(MirroredExtended(self, devices, timeout=timeout))
        self._cross_device_ops = cross_device_ops


class OneDeviceExtended(StrategyExtended):
    """One replica on one device: variables are plain Variables placed on it."""

    def _make_variable(self, next_creator, kwargs, sync, aggregation):
        from eagerflow.distribute.distribute_lib import _device_scope

        with _device_scope(self._devices[0]):
            return next_creator(**kwargs)


class OneDeviceStrategy(Strategy):
    """Runs everything on one device: variables and computation placed there.

    Args:
        device: The device name, e.g. ``"/cpu:0"`` or ``"/gpu:0"``.

    Example:
        >>> import eagerflow as ef
        >>> s = ef.distribute.OneDeviceStrategy("/cpu:0")
        >>> with s.scope():
        ...     v = ef.Variable([1.0])
        >>> v.device
        '/job:localhost/replica:0/task:0/device:CPU:0'
    """

    def __init__(self, device):
        super().__init__(OneDeviceExtended(self, resolve_devices([device])))
