"""GPU memory statistics over cupy's memory pool (which grows on demand)."""

from __future__ import annotations

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.framework.device_spec import DeviceSpec

_peak = {}


def _gpu(device):
    spec = DeviceSpec.from_string(device if isinstance(device, str) else device.name)
    if spec.device_type != "GPU":
        raise errors.InvalidArgumentError(
            None, "get_memory_info",
            "Memory info is tracked for GPU devices only, got %r." % (device,))
    return context.get_device("GPU", spec.device_index or 0)


def get_memory_info(device):
    dev = _gpu(device)
    pool = dev.backend.module.get_default_memory_pool()
    with dev.backend.module.cuda.Device(dev.physical_index):
        current = int(pool.used_bytes())
    peak = max(_peak.get(dev.name, 0), current)
    _peak[dev.name] = peak
    return {"current": current, "peak": peak}


def reset_memory_stats(device):
    dev = _gpu(device)
    _peak[dev.name] = get_memory_info(device)["current"]
