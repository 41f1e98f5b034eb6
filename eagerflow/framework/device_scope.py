"""``eagerflow.device``: the device scope context manager.

Example:
    >>> import eagerflow as ef
    >>> with ef.device("/cpu:0"):
    ...     x = ef.constant(1.0)
    >>> x.device
    '/job:localhost/replica:0/task:0/device:CPU:0'
"""

from __future__ import annotations

from eagerflow.framework import context
from eagerflow.framework.device_spec import DeviceSpec


class _DeviceScope:
    __slots__ = ("_spec", "_token", "_name")

    def __init__(self, spec, name):
        self._spec = spec
        self._name = name
        self._token = None

    def __enter__(self):
        self._token = context.push_device_scope(self._spec)
        return self._name

    def __exit__(self, *exc):
        context.pop_device_scope(self._token)
        return False


def device(device_name):
    """Places the ops and tensors created in the ``with`` block on a device.

    Names follow TF's grammar (``"/cpu:0"``, ``"/GPU:1"``,
    ``"/job:worker/replica:0/task:1/device:GPU:0"``); partial names merge with enclosing
    scopes, and ``None`` clears them. Inputs on another device are copied to the scope's
    device. A GPU that is absent falls back to the CPU with a log line (soft placement)
    unless ``config.set_soft_device_placement(False)``, in which case it raises.

    Args:
        device_name: A device name string, a DeviceSpec, or None.

    Returns:
        A context manager.

    Raises:
        InvalidArgumentError: For a malformed name or (hard placement) a missing device.

    Example:
        >>> import eagerflow as ef
        >>> with ef.device("/device:CPU:0"):
        ...     y = ef.add(1.0, 2.0)
        >>> y.numpy()
        np.float32(3.0)
    """
    if callable(device_name) and not isinstance(device_name, (str, DeviceSpec)):
        from eagerflow import errors

        raise errors.InvalidArgumentError(
            None, "device", "eagerflow.device does not accept device functions; pass a name.")
    spec = None if device_name is None else DeviceSpec.from_string(device_name)
    return _DeviceScope(spec, device_name)
