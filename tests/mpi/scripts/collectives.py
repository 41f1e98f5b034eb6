"""Run under mpirun -n N: the MPI communicator against the local (threads) communicator.

Every rank can rebuild every rank's inputs (seeded by rank), so each rank also runs the
same collective on a LocalCommunicator group of N threads in this process and compares
its own result bit for bit (dtype, shape, NaN positions). Prints "rank R OK <checks>".
"""

import sys
import weakref


import eagerflow  # noqa: F401  (first: it sizes the BLAS pool before numpy loads)
import ml_dtypes
import numpy as np
import threading

from eagerflow.distribute.bucketing import BucketPlan
from eagerflow.distribute.communicator import LocalCommunicator
from eagerflow.distribute.mpi_communicator import MPICommunicator

np.seterr(all="ignore")  # float16 products overflow to inf, as they should
comm = MPICommunicator()
rank, size = comm.rank, comm.size
checks = 0

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64,
          np.uint8, np.int8, np.bool_, np.complex64]


def inputs(case, r, shape, dtype):
    rng = np.random.default_rng([case, r])
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 5, shape).astype(dtype)
    x = rng.standard_normal(shape) * 3
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def on_local(call, every):
    """This rank's result of ``call(comm, every[r])`` run by a LocalCommunicator group."""
    comms = LocalCommunicator.create_group(size, default_timeout=30)
    out = [None] * size

    def body(r):
        out[r] = call(comms[r], every[r])

    threads = [threading.Thread(target=body, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out[rank]


def reference(every, op):
    return on_local(lambda c, a: c.allreduce([a.copy()], op)[0], every)


def same(a, b, what):
    global checks
    checks += 1
    assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    ok = np.array_equal(a.reshape(-1).view(np.uint8) if a.dtype.kind == "V" else a,
                        b.reshape(-1).view(np.uint8) if b.dtype.kind == "V" else b,
                        equal_nan=a.dtype.kind in "fc")
    assert ok, (what, rank, a.ravel()[:8], b.ravel()[:8])


case = 0
for dtype in DTYPES:
    for op in ["sum", "mean", "max", "min", "prod"]:
        if np.dtype(dtype).kind == "c" and op in ("max", "min"):
            continue
        if np.dtype(dtype).kind == "b" and op == "mean":
            continue  # (no mean of booleans: numpy cannot divide them in place)
        for shape in [(7,), (3, 4), (0,), ()]:
            case += 1
            every = [inputs(case, r, shape, dtype) for r in range(size)]
            got = comm.allreduce([every[rank].copy()], op)[0]
            same(got, reference(every, op), "allreduce %s %s %s" % (np.dtype(dtype), op, shape))

# NaN and inf travel as numpy's ufuncs do (NaN wins max/min, inf - inf is NaN).
for op in ["sum", "max", "min", "mean"]:
    every = [np.array([np.nan if r == 1 else 1.0, np.inf if r == 0 else -np.inf, 2.0 * r],
                      np.float32) for r in range(size)]
    same(comm.allreduce([every[rank].copy()], op)[0], reference(every, op), "nan " + op)

# In place for writable C-contiguous arrays, a copy for others; the returned list is the result.
a = np.ones(5, np.float32)
out = comm.allreduce([a, np.ones(4)[::2], np.ones(3).view()])
assert out[0] is a and np.all(a == size) and np.all(out[1] == size), out
ro = np.ones(3)
ro.flags.writeable = False
assert np.all(comm.allreduce([ro])[0] == size) and np.all(ro == 1)

# Large buffers (16 MB float32, and 64 MB with --large): random values, rank-order bits.
for n in [4 << 20] + ([16 << 20] if "--large" in sys.argv else []):
    every = [inputs(1000 + n % 7, r, (n,), np.float32) for r in range(size)]
    same(comm.allreduce([every[rank].copy()])[0], reference(every, "sum"), "large %d" % n)

# allgather: first dims differ per rank, rank order; broadcast from every root.
for dtype in [np.float32, np.int64, ml_dtypes.bfloat16, np.bool_]:
    every = [inputs(2000, r, (r + 1, 3), dtype) for r in range(size)]
    same(comm.allgather(every[rank]), on_local(lambda c, a: c.allgather(a), every),
         "allgather %s" % np.dtype(dtype))
same(comm.allgather(np.zeros((0, 2), np.float32)), np.zeros((0, 2), np.float32), "gather0")
for root in range(size):
    every = [inputs(3000 + root, r, (4, 2), np.float64) for r in range(size)]
    got = comm.broadcast([every[rank].copy(), np.full(3, rank, np.int8)], root=root)
    want = on_local(lambda c, a, root=root: c.broadcast([a.copy()], root=root)[0], every)
    same(got[0], want, "broadcast")
    same(got[1], np.full(3, root, np.int8), "broadcast int8")

# send/recv around a ring: dtype and shape travel with the data.
x = inputs(4000, rank, (2, rank + 1), np.float16)
if rank % 2 == 0:
    comm.send(x, (rank + 1) % size, tag=5)
    got = comm.recv((rank - 1) % size, tag=5)
else:
    got = comm.recv((rank - 1) % size, tag=5)
    comm.send(x, (rank + 1) % size, tag=5)
same(got, inputs(4000, (rank - 1) % size, (2, (rank - 1) % size + 1), np.float16), "ring")

# split: even and odd ranks; barrier on both.
sub = comm.split(rank % 2)
members = [r for r in range(size) if r % 2 == rank % 2]
assert sub.size == len(members) and sub.rank == members.index(rank)
same(sub.allreduce([np.array([rank], np.int64)])[0], np.array([sum(members)], np.int64), "split")
sub.barrier()
sub.close()
comm.barrier()

# Buckets: bit-for-bit equal to one call per tensor, for sum and mean, several caps,
# mixed dtypes, a tensor over the cap reduced in place (no copy), empty tensors.
shapes = [(3, 4), (4,), (300, 300), (7,), (0,), (2, 2), (1000,)]
dtypes = [np.float32, np.float32, np.float32, np.float64, np.float32, np.float16, np.int64]
for cap in [64, 4096, 1 << 20, 0]:
    for op in ["sum", "mean"]:
        every = [[inputs(5000 + i, r, s, d) for i, (s, d) in enumerate(zip(shapes, dtypes))]
                 for r in range(size)]
        want = comm.allreduce([g.copy() for g in every[rank]], op)
        plan = BucketPlan(shapes, dtypes, bytes_per_pack=cap)
        for step in range(2):  # the plan's buffers are reused on the second step
            mine = [g.copy() for g in every[rank]]
            got = plan.all_reduce(comm, mine, op)
            for i, (g, w) in enumerate(zip(got, want)):
                same(g, w, "bucket cap=%d %s #%d step %d" % (cap, op, i, step))
        if cap == 4096:  # tensors over the cap are reduced in their own arrays, no copy
            assert {2, 6} <= set(plan.in_place), plan
            assert all(got[i] is mine[i] for i in plan.in_place), plan
        if cap == 0:  # the default cap packs the float32 tensors; lone dtypes go in place
            assert plan.num_buckets == 1 and sorted(plan.in_place) == [3, 5, 6], plan
# A bucket's buffer is reused step after step while nobody keeps its gradients, even
# though the watchdog thread wakes every 50 ms during the calls (it once held the armed
# call's frame, and so the bucket, while it slept: a new buffer about one step in ten).
grads = [np.full(1 << 14, rank + 1.0, np.float32) for _ in range(64)]  # 4 MiB, one bucket
plan = BucketPlan.for_arrays(grads)
first = weakref.ref(plan.buckets[0].flat)  # a strong reference would itself block reuse
for _ in range(300):
    out = plan.all_reduce(comm, grads, "sum")
    assert out[0][0] == size * (size + 1) / 2
    del out
    checks += 1
assert plan.buckets[0].flat is first(), "the bucket buffer was replaced while unused"
if rank == 0 and "--large" in sys.argv:
    print("plan", plan)
print("rank %d OK %d" % (rank, checks), flush=True)
