"""Run under mpirun -n N: sums through the shared-memory window against LocalCommunicator.

Every rank rebuilds every rank's inputs (seeded by rank), runs the same sums on a
LocalCommunicator group of N threads in this process and compares its own result bit
for bit: dtypes, empty arrays, buffers over one round (chunked), packed groups whose
pieces cross rounds, the window growing between calls, sum and mean. With 5 ranks the
segmented reduction runs (each rank adds one segment); on 2 and 3 ranks lone buffers of a
few MB take MPI_Allreduce (rank-ordered there), checked by the same references. Prints
"rank R OK <checks> <path>".
"""

import sys
import threading

import eagerflow  # noqa: F401  (first: it sizes the BLAS pool before numpy loads)
import ml_dtypes
import numpy as np

from eagerflow.distribute import mpi_shared
from eagerflow.distribute.communicator import LocalCommunicator
from eagerflow.distribute.mpi_communicator import MPICommunicator

np.seterr(all="ignore")
comm = MPICommunicator()
rank, size = comm.rank, comm.size
checks = 0
CHUNK = mpi_shared.CHUNK_BYTES


def inputs(case, r, n, dtype):
    rng = np.random.default_rng([case, r])
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 100, n).astype(dtype)
    x = rng.standard_normal(n) * 3
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(n)
    return x.astype(dtype)


def on_local(call, every):
    comms = LocalCommunicator.create_group(size, default_timeout=60)
    out = [None] * size

    def body(r):
        out[r] = call(comms[r], every[r])

    threads = [threading.Thread(target=body, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out[rank]


def same(a, b, what):
    global checks
    checks += 1
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype, a.shape, b.shape)
    raw_a = a.reshape(-1).view(np.uint8)
    raw_b = b.reshape(-1).view(np.uint8)
    assert np.array_equal(raw_a, raw_b), (what, rank, a.ravel()[:6], b.ravel()[:6])


QUICK = "--quick" in sys.argv  # (5 ranks on 2 cores: fewer cases)
DTYPES = [np.float32, np.float64] if QUICK else [
    np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64, np.uint8,
    np.bool_, np.complex64]
case = 0
for dtype in DTYPES:
    per = CHUNK // np.dtype(dtype).itemsize
    for n in [0, 1, 7, per + 3] if QUICK else [0, 1, 7, per, per + 3, 2 * per + 1]:
        for op in ["sum", "mean"]:
            if np.dtype(dtype).kind == "b" and op == "mean":
                continue
            case += 1
            every = [inputs(case, r, n, dtype) for r in range(size)]
            mine = every[rank].copy()
            got = comm.allreduce([mine], op)[0]
            assert got is mine  # in place
            want = on_local(lambda c, a, op=op: c.allreduce([a.copy()], op)[0], every)
            same(got, want, "allreduce %s n=%d %s" % (np.dtype(dtype).name, n, op))

# Packed groups: pieces of every size, some empty, crossing round boundaries.
per = CHUNK // 4
for sizes in [[3, 0, 5], [per - 2, 7, per + 9, 0, 1], [1] * 300, [2 * per + 5]]:
    for op in ["sum", "mean"]:
        case += 1
        every = [[inputs(case * 100 + i, r, s, np.float32) for i, s in enumerate(sizes)]
                 for r in range(size)]
        flat = np.full(sum(sizes), np.nan, np.float32)
        got = comm.allreduce_packed([every[rank]], [flat], op)[0]
        assert got is flat
        want = on_local(lambda c, a, op=op: c.allreduce([np.concatenate(a)], op)[0], every)
        same(got, want, "packed %s %s" % (sizes[:5], op))
        assert all(np.array_equal(a, b) for a, b in zip(every[rank], [
            inputs(case * 100 + i, rank, s, np.float32) for i, s in enumerate(sizes)]))

# Several buffers and dtypes in one call, the window already grown: small again after big.
case += 1
every = [[inputs(case, r, 5, np.float64), inputs(case + 1, r, 3 * per, np.float32),
          inputs(case + 2, r, 4, np.int64)] for r in range(size)]
got = comm.allreduce([a.copy() for a in every[rank]], "sum")
want = on_local(lambda c, a: c.allreduce([x.copy() for x in a], "sum"), every)
for g, w in zip(got, want):
    same(g, w, "mixed call")

path = "off" if comm._node is None else (
    "full" if size <= mpi_shared.FULL_SUM_RANKS else "segmented")
# A lone buffer of a few MB goes through MPI_Allreduce where MPICH adds in rank order (the
# float32/float64/int/complex cases over one round above took that route).
if comm._node is not None and comm._node.prefers_mpi(np.empty(2 * per, np.float32)):
    path += " mpi-for-few-MB"
print("rank %d OK %d %s" % (rank, checks, path), flush=True)
