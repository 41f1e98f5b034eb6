"""Device names in TensorFlow's grammar.

Full form: ``/job:worker/replica:0/task:1/device:GPU:0``. Short forms: ``/cpu:0``, ``/GPU:1``,
``cpu``, ``GPU:0``, ``/device:CPU:0``. Any field may be missing (a partial name) and the index
may be ``*``. Parsing is cached, since the same few strings are parsed over and over.

Example:
    >>> from eagerflow.framework.device_spec import DeviceSpec
    >>> DeviceSpec.from_string("/job:worker/task:1/gpu:0").to_string()
    '/job:worker/task:1/device:GPU:0'
"""

from __future__ import annotations

import functools
import operator

from eagerflow import errors

__all__ = ["DeviceSpec"]


def _index_or_none(value, what):
    """None, or a non-negative int from an int or a digit string (TF's ``int(value)`` would
    also turn 1.5 into 1; a fraction, inf or NaN is an error here)."""
    if value is None:
        return None
    index = -1
    if isinstance(value, str) and value.isdigit():
        index = int(value)
    elif not isinstance(value, bool):
        try:
            index = operator.index(value)
        except TypeError:
            pass
    if index < 0:
        raise ValueError("DeviceSpec: %s must be a non-negative integer or None, got %s."
                         % (what, errors.short_repr(value)))
    return index


class DeviceSpec:
    """An immutable, possibly partial device name.

    Args:
        job: Job name, e.g. ``"worker"``.
        replica: Replica index.
        task: Task index.
        device_type: ``"CPU"`` or ``"GPU"`` (case-insensitive on input).
        device_index: Device index, or None for any.

    Raises:
        ValueError: If replica, task or device_index is not a non-negative integer or None.
    """

    __slots__ = ("job", "replica", "task", "device_type", "device_index", "_str")

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job = None if job is None else str(job)  # as TF, any job value is named by str
        self.replica = _index_or_none(replica, "replica")
        self.task = _index_or_none(task, "task")
        self.device_type = None if device_type is None else str(device_type).upper()
        self.device_index = _index_or_none(device_index, "device_index")
        self._str = None

    @staticmethod
    def from_string(spec):
        """Parses a device name; raises InvalidArgumentError naming the bad part."""
        return _parse(spec)

    def to_string(self):
        if self._str is None:
            parts = []
            if self.job is not None:
                parts.append("/job:" + self.job)
            if self.replica is not None:
                parts.append("/replica:%d" % self.replica)
            if self.task is not None:
                parts.append("/task:%d" % self.task)
            if self.device_type is not None:
                index = "*" if self.device_index is None else str(self.device_index)
                parts.append("/device:%s:%s" % (self.device_type, index))
            self._str = "".join(parts)
        return self._str

    def replace(self, **kwargs):
        fields = dict(job=self.job, replica=self.replica, task=self.task,
                      device_type=self.device_type, device_index=self.device_index)
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def make_merged_spec(self, other):
        """Fields of ``other`` override this spec's (the inner scope wins)."""
        return DeviceSpec(
            other.job if other.job is not None else self.job,
            other.replica if other.replica is not None else self.replica,
            other.task if other.task is not None else self.task,
            other.device_type if other.device_type is not None else self.device_type,
            other.device_index if other.device_index is not None else
            (self.device_index if other.device_type in (None, self.device_type) else None),
        )

    def is_compatible(self, other):
        """True when no field set in both specs disagrees."""
        for a, b in ((self.job, other.job), (self.replica, other.replica),
                     (self.task, other.task), (self.device_type, other.device_type),
                     (self.device_index, other.device_index)):
            if a is not None and b is not None and a != b:
                return False
        return True

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return "DeviceSpec(%r)" % self.to_string()

    __str__ = to_string


def _bad(spec, why):
    return errors.InvalidArgumentError(
        None, None,
        "Malformed device name %r: %s. Use TensorFlow's grammar, e.g. '/cpu:0', '/GPU:1' or "
        "'/job:worker/replica:0/task:1/device:GPU:0'." % (spec, why),
    )


def _index(spec, text):
    if text == "*":
        return None
    if not text.isdigit():
        raise _bad(spec, "device index %r is not a number" % text)
    return int(text)


@functools.lru_cache(maxsize=1024)
def _parse(spec):
    if isinstance(spec, DeviceSpec):
        return spec
    if spec is None:
        return DeviceSpec()
    if not isinstance(spec, str):
        raise errors.InvalidArgumentError(
            None, None, "A device name must be a string, got %r" % (spec,))
    fields = {}
    for part in (p for p in spec.strip().split("/") if p):
        pieces = part.split(":")
        key = pieces[0].lower()
        if key == "job" and len(pieces) == 2:
            fields["job"] = pieces[1]
        elif key == "replica" and len(pieces) == 2:
            fields["replica"] = _index(spec, pieces[1])
        elif key == "task" and len(pieces) == 2:
            fields["task"] = _index(spec, pieces[1])
        elif key == "device" and len(pieces) in (2, 3):
            fields["device_type"] = pieces[1].upper()
            if len(pieces) == 3:
                fields["device_index"] = _index(spec, pieces[2])
        elif key in ("cpu", "gpu") and len(pieces) in (1, 2):
            fields["device_type"] = key.upper()
            if len(pieces) == 2:
                fields["device_index"] = _index(spec, pieces[1])
        else:
            raise _bad(spec, "cannot read %r" % part)
    if fields.get("device_type") not in (None, "CPU", "GPU"):
        raise _bad(spec, "unknown device type %r (CPU and GPU are supported)"
                   % fields["device_type"])
    return DeviceSpec(**fields)
