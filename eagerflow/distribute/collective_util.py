"""``tf.distribute.experimental.CommunicationOptions``: how collectives are carried out.

Example:
    >>> from eagerflow.distribute.collective_util import CommunicationOptions
    >>> opts = CommunicationOptions(bytes_per_pack=1 << 20, timeout_seconds=120)
    >>> opts.bytes_per_pack, opts.timeout_seconds
    (1048576, 120.0)
"""

from __future__ import annotations

import enum

from eagerflow import errors

__all__ = ["CommunicationImplementation", "CommunicationOptions", "CollectiveCommunication"]


class CommunicationImplementation(enum.Enum):
    """Which collective implementation to use (TF's names).

    ``AUTO`` and ``RING`` both mean MPI here (MPICH picks its algorithm by message size);
    ``NCCL`` is not available in this build and is refused when a strategy is made.
    """

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


CollectiveCommunication = CommunicationImplementation  # TF's deprecated alias


class CommunicationOptions:
    """Options for cross-worker collectives, as ``tf.distribute.experimental.CommunicationOptions``.

    Args:
        bytes_per_pack: Byte cap of one gradient bucket (tensors are packed into flat
            buffers up to this size; larger tensors are reduced in place on their own).
            0 means the default, 4 MiB (TF: 0 means "no splitting"; one huge pack is slower
            here because of the packing copy, see :mod:`eagerflow.distribute.bucketing`).
        timeout_seconds: Deadline of every collective; past it the job stops with a
            report naming the missing ranks. None: ``EAGERFLOW_COLLECTIVE_TIMEOUT`` or
            300 s (TF waits forever; a hang with no message is worse than a stop).
        implementation: A :class:`CommunicationImplementation` or its name.
        compression: eagerflow extension: None (default), "fp16" or "bf16" to send float
            gradient buckets in 16 bits (lossy; halves the bytes moved).
        shard_optimizer_updates: eagerflow extension: each worker runs the optimizer
            update on its own rows of every variable and keeps only their slots, then
            the rows are all-gathered (ZeRO stage 1; see
            :mod:`eagerflow.distribute.update_sharding`). None: the default (off);
            True or False to choose.

    Raises:
        InvalidArgumentError: a negative size or timeout, an unknown implementation or
            compression.
    """

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO, compression=None,
                 shard_optimizer_updates=None):
        if not isinstance(bytes_per_pack, int) or bytes_per_pack < 0:
            raise errors.InvalidArgumentError(
                None, "CommunicationOptions",
                "bytes_per_pack must be a non-negative integer, got %r" % (bytes_per_pack,))
        if timeout_seconds is not None:
            try:
                timeout_seconds = float(timeout_seconds)
            except (TypeError, ValueError):
                timeout_seconds = -1.0
            if not timeout_seconds > 0:
                raise errors.InvalidArgumentError(
                    None, "CommunicationOptions",
                    "timeout_seconds must be a positive number of seconds or None")
        if isinstance(implementation, str):
            try:
                implementation = CommunicationImplementation[implementation.upper()]
            except KeyError:
                implementation = None
        if not isinstance(implementation, CommunicationImplementation):
            raise errors.InvalidArgumentError(
                None, "CommunicationOptions", "implementation must be one of %s"
                % ", ".join(m.name for m in CommunicationImplementation))
        if compression not in (None, "none", "fp16", "bf16"):
            raise errors.InvalidArgumentError(
                None, "CommunicationOptions",
                "compression=%r is not None, 'fp16' or 'bf16'" % (compression,))
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation
        self.compression = None if compression == "none" else compression
        if shard_optimizer_updates not in (None, True, False):
            raise errors.InvalidArgumentError(
                None, "CommunicationOptions", "shard_optimizer_updates=%r is not None, "
                "True or False" % (shard_optimizer_updates,))
        self.shard_optimizer_updates = shard_optimizer_updates

    def merge(self, options):
        """A copy with the fields ``options`` sets (non-default) taking precedence."""
        if options is None:
            return self
        return CommunicationOptions(
            options.bytes_per_pack or self.bytes_per_pack,
            options.timeout_seconds if options.timeout_seconds is not None
            else self.timeout_seconds,
            options.implementation
            if options.implementation is not CommunicationImplementation.AUTO
            else self.implementation,
            options.compression or self.compression,
            options.shard_optimizer_updates if options.shard_optimizer_updates is not None
            else self.shard_optimizer_updates)

    def __repr__(self):
        return ("CommunicationOptions(bytes_per_pack=%d, timeout_seconds=%r, "
                "implementation=%s, compression=%r, shard_optimizer_updates=%r)"
                % (self.bytes_per_pack, self.timeout_seconds, self.implementation.name,
                   self.compression, self.shard_optimizer_updates))
