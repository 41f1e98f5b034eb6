"""Host (CPU) memory policy: keep freed array memory in the process for reuse.

Training steps free and reallocate the same large temporaries (gradients, optimizer
intermediates) every step. glibc's malloc serves blocks above its dynamic ``mmap``
threshold with fresh ``mmap`` calls and trims freed memory at the top of the heap back to
the system, so such a loop page-faults on every step: measured here, about 500 faults and
2 ms of a 9 ms MLP training step. TF and PyTorch avoid this with their own caching
allocators (or recommend jemalloc/tcmalloc); numpy arrays come from malloc, so this module
sets malloc's thresholds instead (32 MiB for ``mmap``, 64 MiB for trimming): blocks below
32 MiB are then reused from the heap, and up to 64 MiB of free memory stays mapped.

It is applied once, lazily, when the first graph is compiled (pure eager programs and
``import eagerflow`` do not touch malloc), only where glibc's ``mallopt`` exists. Turn it off
with the environment variable ``EAGERFLOW_HOST_ALLOCATOR=system`` or
``eagerflow.config.experimental.set_host_memory_retention(False)`` before the first graph.

Example:
    >>> from eagerflow.framework import host_allocator
    >>> host_allocator.retention_enabled()
    True
"""

from __future__ import annotations

import os
import sys

__all__ = ["apply", "retention_enabled", "set_retention"]

# mallopt parameter numbers (glibc malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# The largest mmap threshold glibc accepts on 64-bit systems (HEAP_MAX_SIZE / 2).
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024

_enabled = os.environ.get("EAGERFLOW_HOST_ALLOCATOR", "retain").lower() != "system"
_applied = False


def retention_enabled():
    """Whether the retention policy is (or will be) applied."""
    return _enabled


def set_retention(enabled):
    """Chooses the policy; takes effect if no graph has been compiled yet.

    Returns:
        True if the choice can still take effect (the policy was not applied yet).
    """
    global _enabled
    _enabled = bool(enabled)
    return not _applied


def apply():
    """Applies the policy once (a no-op afterwards, when disabled, or without glibc)."""
    global _applied
    if _applied or not _enabled:
        return
    _applied = True
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl or another libc: leave malloc alone
        return
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
