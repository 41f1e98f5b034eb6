"""GPU memory: statistics, the optional per-GPU limit, and out-of-memory reports.

GPU arrays come from cupy's default memory pool, which grows on demand: using a GPU reserves
nothing up front (TensorFlow by default maps nearly all of a GPU's memory when it starts), and
the memory of a deleted tensor stays cached in the pool for the next allocation instead of
going back to the driver. ``config.experimental.set_memory_growth`` is therefore accepted and
has nothing to change. On top of the pool this module adds, when a GPU device is first used
(cupy is never imported before):

* statistics: ``get_memory_info`` reports the bytes live in arrays now and their high-water
  mark. The mark is kept at allocation time by a thin allocator around the pool
  (``cupy.cuda.set_allocator``), so a peak between two queries is not missed;
* the limit: ``LogicalDeviceConfiguration(memory_limit=MiB)`` caps the GPU's pool
  (``MemoryPool.set_limit``); a request past it fails like a full device;
* out-of-memory reports: ``is_out_of_memory``, ``release_cached`` (which the dispatcher calls
  before retrying a failed kernel once) and ``out_of_memory_message``, which names what was
  asked for, what is live and cached on the device, its size, and whether the request could
  ever fit.

Statistics are per physical GPU: logical GPUs carved out of one GPU share its pool.
"""

from __future__ import annotations

import gc
import logging
import re
import traceback

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.framework.device_spec import DeviceSpec

__all__ = ["get_memory_info", "reset_memory_stats", "prepare", "is_out_of_memory",
           "requested_bytes", "release_cached", "device_memory", "out_of_memory_message"]

_log = logging.getLogger("eagerflow")
_MIB = 1 << 20

_peaks = {}  # physical GPU index -> _Peak
_prepared = set()  # physical GPU indices whose limit has been applied
_tracking = None  # the installed allocator; None until the first GPU use (or if not ours)


class _Peak:
    """The high-water mark of one GPU's live bytes, kept up to date at allocation time.

    Reading the pool's live bytes (``used_bytes``) walks every live block: too slow to do
    for each allocation. ``bound`` is a cheap upper bound of the live bytes instead: the
    live bytes at the last exact reading plus every allocation since (frees are not seen,
    so it can only over-count). While ``bound <= peak`` the mark cannot have moved; only
    when an allocation pushes ``bound`` past it is the pool read again, which brings
    ``bound`` back down to the truth. The updates take no lock (a lock would cost more than
    the rest): threads allocating on one GPU at the same instant may, rarely, lose one
    allocation from ``bound`` and so miss a peak reached right then.

    Attributes:
        peak: The most bytes live at once since the start or the last reset.
        bound: An upper bound of the bytes live now.
    """

    __slots__ = ("peak", "bound")

    def __init__(self, live=0):
        self.peak = live
        self.bound = live


def _reread(pool, mark):
    # Runs on the allocating thread, whose current device is the one allocated on, which
    # is the device that the pool's methods report on.
    held = pool.total_bytes()  # O(1); live <= held always
    if held < mark.bound:
        mark.bound = held
        if held <= mark.peak:
            return
    live = pool.used_bytes()
    mark.bound = live
    if live > mark.peak:
        mark.peak = live


def _tracking_allocator(pool):
    """An allocator with the pool's interface that also keeps each GPU's peak."""
    malloc = pool.malloc
    peaks = _peaks

    def allocate(size):
        memptr = malloc(size)
        mark = peaks.get(memptr.device_id)
        if mark is None:  # a GPU eagerflow has not used yet, allocated on by raw cupy
            mark = peaks[memptr.device_id] = _Peak(pool.used_bytes())
            return memptr
        # ``mem.size`` is the block's rounded size: what ``used_bytes`` counts for it.
        bound = mark.bound + memptr.mem.size
        mark.bound = bound
        if bound > mark.peak:
            _reread(pool, mark)
        return memptr

    allocate.pool = pool
    return allocate


def _install(cupy):
    """Puts the tracking allocator in front of cupy's default pool, once per process.

    An allocator someone else installed (another pool, managed memory) is left alone; peaks
    are then only sampled when ``get_memory_info`` runs.
    """
    global _tracking
    if _tracking is not None:
        return
    pool = cupy.get_default_memory_pool()
    current = cupy.cuda.get_allocator()
    if not (current == pool.malloc or getattr(current, "__self__", None) is pool):
        _log.info("GPU peak memory is sampled at query time only: cupy's allocator was "
                  "replaced (%r) before eagerflow first used a GPU.", current)
        _tracking = False
        return
    _tracking = _tracking_allocator(pool)
    cupy.cuda.set_allocator(_tracking)


def _configured_limit(physical_index):
    """Bytes the logical devices configured on a physical GPU may use, or None."""
    layout = context.config.logical_gpu_layout
    if not layout:
        return None
    limits = [limit for index, limit in layout if index == physical_index]
    if not limits or any(limit is None for limit in limits):
        return None
    return int(sum(limits) * _MIB)


def prepare(device, cupy):
    """Installs peak tracking and applies the configured memory limit for a GPU device.

    Called once per logical GPU, by ``Device.backend`` on its first use.

    Args:
        device: A GPU ``context.Device``.
        cupy: The cupy module (the device's backend module).
    """
    _install(cupy)
    index = device.physical_index
    if index in _prepared:
        return
    _prepared.add(index)
    pool = cupy.get_default_memory_pool()
    with cupy.cuda.Device(index):
        limit = _configured_limit(index)
        if limit is not None:
            pool.set_limit(size=limit)
        _peaks.setdefault(index, _Peak(int(pool.used_bytes())))


# -- statistics -----------------------------------------------------------------------------


def _gpu(device, what):
    name = device if isinstance(device, str) else getattr(device, "name", device)
    spec = DeviceSpec.from_string(name)
    if spec.device_type != "GPU":
        raise errors.InvalidArgumentError(
            None, what,
            "%s: memory statistics are tracked for GPU devices only, got %r (as in "
            "TensorFlow). Pass a GPU, e.g. 'GPU:0'." % (what, name))
    return context.get_device("GPU", spec.device_index or 0)


def _live(dev):
    cupy = dev.backend.module  # the first use of the device installs the tracking
    with cupy.cuda.Device(dev.physical_index):
        return int(cupy.get_default_memory_pool().used_bytes())


def get_memory_info(device):
    """Current and peak bytes live on a GPU, as ``tf.config.experimental.get_memory_info``.

    Args:
        device: A GPU device name, e.g. ``"GPU:0"`` or ``"/device:GPU:0"``.

    Returns:
        ``{"current": int, "peak": int}``: bytes held by live arrays now, and the most held
        at once since the program started or since ``reset_memory_stats``. Both count
        allocated blocks (cupy rounds each up to a multiple of 512 bytes); memory cached by
        the pool but free is not counted.

    Raises:
        InvalidArgumentError: For a CPU device, or a GPU that does not exist.
    """
    dev = _gpu(device, "get_memory_info")
    live = _live(dev)
    mark = _peaks.setdefault(dev.physical_index, _Peak(live))
    if live > mark.peak:
        mark.peak = live
    if live > mark.bound:
        mark.bound = live
    return {"current": live, "peak": mark.peak}


def reset_memory_stats(device):
    """Resets a GPU's peak to the bytes live now (``tf.config.experimental``'s semantics).

    Raises:
        InvalidArgumentError: For a CPU device, or a GPU that does not exist.
    """
    dev = _gpu(device, "reset_memory_stats")
    live = _live(dev)
    mark = _peaks.setdefault(dev.physical_index, _Peak(live))
    mark.peak = live
    mark.bound = live


# -- out of memory --------------------------------------------------------------------------

# Markers of an allocation failure in the messages of CUDA libraries' errors (the runtime's
# cudaErrorMemoryAllocation, the driver's CUDA_ERROR_OUT_OF_MEMORY, *_ALLOC_FAILED of cuBLAS,
# cuSOLVER, cuFFT, cuDNN), which are not MemoryError subclasses as cupy's pool error is.
_OOM_MARKERS = ("out of memory", "out_of_memory", "alloc_failed", "memoryallocation")
_REQUEST = r"allocat\w* ([\d,]+) bytes"  # compiled on first use, by re's cache


def is_out_of_memory(exc):
    """True when a kernel's exception is an allocation failure (host or device)."""
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    if name.startswith("CU") and name.endswith("Error"):
        text = str(exc).lower()
        return any(marker in text for marker in _OOM_MARKERS)
    return False


def requested_bytes(exc):
    """The size of the allocation that failed, when the exception tells it, else None.

    cupy's pool error states it in its message (``Out of memory allocating 1,024 bytes``);
    numpy's carries the array's shape and dtype.
    """
    match = re.search(_REQUEST, str(exc))
    if match:
        return int(match.group(1).replace(",", ""))
    shape = getattr(exc, "shape", None)
    dtype = getattr(exc, "dtype", None)
    if shape is not None and dtype is not None:
        count = 1
        for n in shape:
            count *= int(n)
        return count * int(getattr(dtype, "itemsize", 0) or 0) or None
    return None


def release_cached(device, exc=None):
    """Makes room on a GPU before a failed allocation is retried.

    Drops the arrays the failed kernel left in its traceback's frames, collects arrays held
    only by reference cycles, then frees every block the pool caches on the device.

    Args:
        device: The GPU ``context.Device`` the allocation failed on.
        exc: The allocation failure, whose traceback may hold partial results.
    """
    tb = getattr(exc, "__traceback__", None)
    if tb is not None and tb.tb_next is not None:
        traceback.clear_frames(tb.tb_next)  # the kernel's finished frames, not the caller's
    gc.collect()
    cupy = device.backend.module
    with cupy.cuda.Device(device.physical_index):
        cupy.get_default_memory_pool().free_all_blocks()


def retry_after_release(device, exc, run):
    """Returns ``run()``, retried once after the allocation failure ``exc`` on a GPU: the
    device's cached blocks are freed first (cupy's pool keeps freed blocks, and its memory
    limit counts them). Raises ``exc`` itself when it is not an allocation failure; a
    second failure propagates from ``run``.
    """
    if not is_out_of_memory(exc):
        raise exc
    release_cached(device, exc)
    return run()


def device_memory(device):
    """What a GPU's memory holds now, for reports; None if it cannot be read.

    Returns:
        ``{"live", "cached", "limit", "free", "total"}`` in bytes: live in arrays, cached by
        the pool but free, the pool's limit (0: none), and the driver's free and total.
    """
    try:
        cupy = device.backend.module
        index = device.physical_index
        pool = cupy.get_default_memory_pool()
        with cupy.cuda.Device(index):
            live = int(pool.used_bytes())
            cached = int(pool.free_bytes())
            limit = int(pool.get_limit())
        free, total = cupy.cuda.Device(index).mem_info
        return {"live": live, "cached": cached, "limit": limit, "free": int(free),
                "total": int(total)}
    except Exception:  # noqa: BLE001 - a report must not fail on a broken device context
        return None


def _size(n):
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", _MIB), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.2f %s" % (n / scale, unit)
    return "%d bytes" % n


def out_of_memory_message(where, device, exc):
    """The text of the ResourceExhaustedError for an allocation failure.

    Args:
        where: The call that failed, e.g. ``"MatMul(float32[8, 4], float32[4, 2]) on ..."``.
        device: The ``context.Device`` it ran on (None if unknown).
        exc: The allocation failure.

    Returns:
        A message naming the request, what is live and cached on the device, the limit and
        the device's size, and, for a request larger than the whole device (or its limit),
        that a shape is likely wrong.
    """
    requested = requested_bytes(exc)
    text = "Out of memory in %s" % where
    if requested:
        text += ": could not allocate %s (%s bytes)" % (_size(requested), format(requested, ","))
    else:
        detail = str(exc).strip().splitlines()
        text += ": %s" % (detail[0].rstrip(".") if detail else type(exc).__name__)
    stats = device_memory(device) if device is not None and device.device_type == "GPU" \
        else None
    if stats is not None:
        text += (". On GPU %d: %s live in arrays, %s cached by the memory pool (free for "
                 "reuse), %s" % (
                     device.physical_index, _size(stats["live"]), _size(stats["cached"]),
                     "memory limit %s, " % _size(stats["limit"]) if stats["limit"] else ""))
        text += "%s total on the device (%s free)" % (_size(stats["total"]),
                                                      _size(stats["free"]))
        if requested and requested > stats["total"]:
            return text + (". The request is larger than the whole device: this is likely a "
                           "shape bug (e.g. a wrong batch dimension); check the input shapes "
                           "above.")
        if requested and stats["limit"] and requested > stats["limit"]:
            return text + (". The request is larger than this GPU's memory limit "
                           "(LogicalDeviceConfiguration(memory_limit=...)): raise the limit, "
                           "or check the input shapes above for a wrong dimension.")
    return text + (". Reduce the batch or model size, or drop references to tensors you no "
                   "longer need.")
