"""Elementwise and window kernels on every CPU core: numpy calls on row blocks in threads.

numpy's ufuncs and copies run on one core, but they release the GIL while their inner loops
run, so the same calls on disjoint blocks of rows in a few threads use every core (BLAS
already does). ``run_blocks(fn, n)`` calls ``fn(lo, hi)`` for a fixed split of ``range(n)``;
a kernel that writes each block's result into its own slice of a preallocated output
computes exactly what one call over all rows computes: no reduction crosses blocks, so
results are the same bit for bit with any number of threads and from run to run.

The number of threads is ``config.threading.set_intra_op_parallelism_threads(n)`` when set
(1 turns the threads off), else the CPUs this process may run on, shared with the other
ranks an MPI launcher started on this host (as the BLAS threads are, see
``eagerflow._launch_env``): 2 ranks on 2 cores get 1 thread each, not 2 that fight. Work below
``MIN_ELEMENTS`` elements stays on the calling thread: handing a block to a thread costs
tens of microseconds.

Example:
    >>> import numpy as np
    >>> from eagerflow.backend import cpu_threads
    >>> x = np.arange(6.0)
    >>> out = np.empty_like(x)
    >>> def block(lo, hi):
    ...     np.multiply(x[lo:hi], 2.0, out=out[lo:hi])
    >>> cpu_threads.run_blocks(block, len(x), elements=len(x))
    >>> out.tolist()
    [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
"""

from __future__ import annotations

import os
import threading

from eagerflow._launch_env import local_ranks

__all__ = ["run_blocks", "threads", "set_threads", "is_numpy", "MIN_ELEMENTS",
           "FUSED_MIN_ELEMENTS", "FUSED_MIN_WORK", "fused_min_elements"]

# Below this many elements a kernel runs on the calling thread (measured: a 2-way split
# of a 64K-element float32 multiply-add is about break-even on 2 cores).
MIN_ELEMENTS = 1 << 16
# Fused elementwise regions (and so optimizer updates) split only from this size: on 2 cores
# the MLP b128 Adam step ran at 1.45x its numpy floor with 1 << 16, 0.99-1.18x with 1 << 20.
FUSED_MIN_ELEMENTS = 1 << 20
# ... or from this much work, elements times sub-ops: a region of many passes (13 over
# [1024, 512] were 2.1 ms) costs milliseconds on one core at half that size. Kernels of
# many passes (GELU, LayerNormGrad) split their blocks by the same rule. Every
# region of two or more sub-ops that FUSED_MIN_ELEMENTS splits, this splits too.
FUSED_MIN_WORK = 1 << 21


def fused_min_elements(sub_ops):
    """The size from which a fused region of ``sub_ops`` sub-ops splits over threads."""
    return max(MIN_ELEMENTS, min(FUSED_MIN_ELEMENTS, -(-FUSED_MIN_WORK // max(sub_ops, 1))))

_setting = 0           # 0: every CPU this process may use
_pool = None
_pool_size = 0
_lock = threading.Lock()


_cpu_count = None


def _cpus():
    # Read once: the affinity mask is a system call, and kernels ask on every large call.
    global _cpu_count
    if _cpu_count is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        _cpu_count = max(1, cores // local_ranks())
    return _cpu_count


def is_numpy(xp):
    """Whether a kernel's array module ``xp`` (numpy, or eagerflow's numpy backend) is numpy."""
    return getattr(xp, "__name__", None) == "numpy"


def set_threads(n):
    """Sets the number of threads kernels split their rows over (0: every CPU)."""
    global _setting
    _setting = max(int(n), 0)


def threads():
    """The number of threads a large kernel uses now."""
    return _setting or _cpus()


def _executor(workers):
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size != workers:
            from concurrent.futures import ThreadPoolExecutor

            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=workers,
                                       thread_name_prefix="eagerflow-cpu")
            _pool_size = workers
        return _pool


def blocks(n, parts):
    """``parts`` contiguous ``(lo, hi)`` ranges covering ``range(n)``, sizes within one."""
    parts = max(1, min(parts, n))
    step, extra = divmod(n, parts)
    out, lo = [], 0
    for k in range(parts):
        hi = lo + step + (k < extra)
        out.append((lo, hi))
        lo = hi
    return out


class _Chunks:
    """Fixed chunks of rows that the calling thread and the workers take in turn.

    Nobody owns a chunk in advance: whoever is running takes the next one. On a machine
    whose cores are busy with other processes a worker may not run for milliseconds; the
    caller then computes every chunk itself instead of waiting for that worker (a static
    split waits, measured 3-7x slower on a loaded 2-core machine). The chunk boundaries
    are fixed, so who computes a chunk never changes its result.
    """

    def __init__(self, fn, ranges):
        self.fn = fn
        self.ranges = ranges
        self.next = 0
        self.done = 0
        self.error = None
        self.lock = threading.Lock()
        self.finished = threading.Event()

    def work(self):
        lock, ranges, count = self.lock, self.ranges, len(self.ranges)
        while True:
            with lock:
                k = self.next
                if k >= count:
                    return
                self.next = k + 1
            try:
                self.fn(*ranges[k])
            except BaseException as exc:  # noqa: BLE001 - re-raised by the caller
                with lock:
                    self.error = self.error or exc
            with lock:
                self.done += 1
                if self.done == count:
                    self.finished.set()


def run_blocks(fn, n, elements, min_elements=MIN_ELEMENTS, xp=None):
    """Calls ``fn(lo, hi)`` over a fixed split of ``range(n)``, the blocks in threads.

    Args:
        fn: Writes the result of rows ``lo:hi`` (and nothing outside them).
        n: The number of rows.
        elements: The work's size in elements: below ``min_elements``, or with one thread
            or one row, ``fn(0, n)`` runs on the calling thread.
        min_elements: The threshold for splitting.
        xp: The array module of a kernel written against several (None: numpy). Other
            modules (cupy) run ``fn(0, n)``: their kernels are parallel already.

    Raises:
        Whatever ``fn`` raises (the first block's error when several fail).
    """
    workers = min(threads(), n)
    if workers <= 1 or elements < min_elements or (xp is not None and not is_numpy(xp)):
        fn(0, n)
        return
    # A few chunks per thread (each at least a quarter of the threshold) let the caller
    # take over a worker's share when that worker is not running.
    parts = min(n, 4 * workers, max(workers, 4 * elements // min_elements))
    chunks = _Chunks(fn, blocks(n, parts))
    pool = _executor(workers - 1)
    for _ in range(workers - 1):
        pool.submit(chunks.work)
    chunks.work()
    chunks.finished.wait()
    # A worker may still hold the chunks for a moment after the last one finished: drop
    # the kernel (and the arrays it closes over) now, so that a buffer's reference count
    # read by the next step does not depend on when that thread lets go.
    chunks.fn = None
    if chunks.error is not None:
        raise chunks.error
