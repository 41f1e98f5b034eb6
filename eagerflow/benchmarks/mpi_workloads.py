"""The ``mpi`` benchmark group: run under ``mpirun`` by ``python -m eagerflow.benchmarks``.

Each workload is a function run by every rank of one ``mpirun`` job; rank 0 prints one
JSON line per measurement: the candidates' median and range of per-call times over
interleaved repeats (each repeat starts at a barrier, so both ranks time the same calls).

Usage (what the benchmark command runs): ``mpirun -n 2 python -m
eagerflow.benchmarks.mpi_workloads NAME [NAME...]``
"""

from __future__ import annotations

import eagerflow  # noqa: F401  (first: it sizes each rank's BLAS pool before numpy loads)

import json
import sys
import time

import numpy as np

REPEATS = 9


def _timed(comm, fns, min_time=0.2, repeats=REPEATS):
    """{name: [seconds per call, one per repeat]}, candidates interleaved, rank-synchronous."""
    numbers = {}
    for name, fn in fns.items():
        for _ in range(3):
            fn()
        number = 1
        while True:
            comm.barrier()
            start = time.perf_counter()
            for _ in range(number):
                fn()
            elapsed = comm.allreduce([np.array([time.perf_counter() - start])], "max")[0][0]
            if elapsed >= min_time / repeats or number >= 1 << 16:
                break
            number *= 4
        numbers[name] = number
    times = {name: [] for name in fns}
    order = list(fns.items())
    for r in range(repeats):
        k = r % len(order)
        for name, fn in order[k:] + order[:k]:
            number = numbers[name]
            comm.barrier()
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - start) / number)
    # Every rank's view: the slowest rank sets the pace of a collective.
    for name in times:
        times[name] = comm.allreduce([np.array(times[name])], "max")[0].tolist()
    return times


def _emit(comm, workload, times, baseline, target):
    if comm.rank != 0:
        return
    stats = {name: {"median_us": float(np.median(t)) * 1e6, "min_us": min(t) * 1e6,
                    "max_us": max(t) * 1e6} for name, t in times.items()}
    candidate = next(n for n in times if n != baseline)
    ratio = [b / c for b, c in zip(times[baseline], times[candidate])]
    print(json.dumps({"workload": workload, "ranks": comm.size, "times": stats,
                      "speedup_median": float(np.median(ratio)), "speedup_min": min(ratio),
                      "speedup_max": max(ratio), "candidate": candidate,
                      "baseline": baseline, "target": target}), flush=True)


def fused_small(comm):
    """200 gradients of 1 KB: one bucket versus one all-reduce call per tensor."""
    from eagerflow.distribute.bucketing import BucketPlan

    grads = [np.ones(256, np.float32) for _ in range(200)]
    plan = BucketPlan.for_arrays(grads)

    def bucketed():
        plan.all_reduce(comm, grads, "sum")

    def per_tensor():
        for g in grads:
            comm.allreduce([g], "sum")

    times = _timed(comm, {"one call per tensor": per_tensor, "bucketed": bucketed})
    _emit(comm, "mpi all-reduce 200 x 1 KB", times, "one call per tensor", ">= 10x")


def bandwidth(comm):
    """Bucketed all-reduce of 4 MB and 64 MB against raw mpi4py Allreduce of the same bytes."""
    from mpi4py import MPI

    from eagerflow.distribute.bucketing import BucketPlan

    raw_comm = MPI.COMM_WORLD.Dup()
    for mb in (4, 64):
        _bandwidth_at(comm, raw_comm, MPI, BucketPlan, mb)
    raw_comm.Free()


def _bandwidth_at(comm, raw_comm, MPI, BucketPlan, mb):
    n = mb * (1 << 20) // 4
    raw = np.ones(n, np.float32)
    one = [np.ones(n, np.float32)]
    one_plan = BucketPlan.for_arrays(one)
    # The same bytes as 64 gradients: packed into buckets of up to 4 MiB.
    many = [np.ones(n // 64, np.float32) for _ in range(64)]
    many_plan = BucketPlan.for_arrays(many)
    # Packing, then MPI: numpy copies the 64 arrays into preallocated 4 MiB buffers and
    # mpi4py reduces each in place. Between ranks of one machine the bucketed path packs
    # straight into the shared memory its sum reads from, so it can beat this; across
    # machines (MPI_Allreduce) this is its floor.
    per = (4 << 20) // (4 * (n // 64))
    groups = [many[k:k + per] for k in range(0, 64, per)]
    flats = [np.empty(sum(a.size for a in g), np.float32) for g in groups]

    def raw_allreduce():
        raw_comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM)

    def packed_floor():
        for g, flat in zip(groups, flats):
            np.concatenate(g, axis=None, out=flat)
            raw_comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)

    # fp16 transfer of the same 64 tensors (lossy; half the bytes, two casts).
    fp16_plan = BucketPlan.for_arrays(many, compression="fp16")
    times = _timed(comm, {
        "raw mpi4py Allreduce": raw_allreduce,
        "numpy pack + raw Allreduce": packed_floor,
        "bucketed, one tensor": lambda: one_plan.all_reduce(comm, one, "sum"),
        "bucketed, 64 tensors": lambda: many_plan.all_reduce(comm, many, "sum"),
        "bucketed, 64 tensors fp16": lambda: fp16_plan.all_reduce(comm, many, "sum"),
    }, min_time=0.5 if mb == 4 else 1.0, repeats=7)
    for candidate in ("bucketed, one tensor", "bucketed, 64 tensors",
                      "bucketed, 64 tensors fp16"):
        _emit(comm, "mpi all-reduce bandwidth %d MB (%s)" % (mb, candidate.split(", ")[1]),
              {"raw mpi4py Allreduce": times["raw mpi4py Allreduce"],
               candidate: times[candidate]}, "raw mpi4py Allreduce", ">= 0.9x")
    _emit(comm, "mpi all-reduce %d MB (64 tensors, against packing + Allreduce)" % mb,
          {"numpy pack + raw Allreduce": times["numpy pack + raw Allreduce"],
           "bucketed, 64 tensors": times["bucketed, 64 tensors"]},
          "numpy pack + raw Allreduce", ">= 1.0x (its floor across machines)")


def overlap(comm):
    """Does overlapping an all-reduce with compute pay on this MPI build?

    The backward pass of a layer stack, as compute chunks (matmuls of a 512-wide MLP
    backward), and the gradients of the layers done so far, as 4 MB buckets. Sequential:
    compute everything, then all-reduce every bucket. Overlapped: start each bucket's
    ``Iallreduce`` as soon as its chunk is done and call ``Test`` between later chunks
    (MPI progresses only inside MPI calls here), then wait for all.
    """
    from mpi4py import MPI

    raw = MPI.COMM_WORLD.Dup()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512)).astype(np.float32)
    h = rng.standard_normal((512, 512)).astype(np.float32)
    buckets = [np.ones(1 << 20, np.float32) for _ in range(4)]

    def chunk():
        return (h @ a) @ a

    def sequential():
        for _ in buckets:
            chunk()
        for b in buckets:
            raw.Allreduce(MPI.IN_PLACE, b, op=MPI.SUM)

    def overlapped():
        pending = []
        for b in buckets:
            chunk()
            for r in pending:
                r.Test()
            pending.append(raw.Iallreduce(MPI.IN_PLACE, b, op=MPI.SUM))
        MPI.Request.Waitall(pending)

    times = _timed(comm, {"sequential": sequential, "overlapped": overlapped},
                   min_time=0.5, repeats=7)
    _emit(comm, "mpi overlap 4 x (compute chunk + 4 MB all-reduce)", times, "sequential",
          "> 1.0x to be worth a second path")
    raw.Free()


_SIZES = (784, 512, 512, 10)


def mlp_step(steps=25, batch=1024, shard=None):
    """Per-step seconds of a traced MultiWorkerMirroredStrategy Adam step of the MLP
    784-512-512-10 at global batch ``batch`` (each rank computes batch / ranks rows).

    Rank 0 prints {"workload": "mlp", "ranks": N, "step_s": [...]}; the benchmark command
    runs it under ``mpirun -n 1`` and ``-n 2`` in turn and reports the ratio.
    ``shard``: the strategy's ``shard_optimizer_updates`` (None: its default).
    """
    import eagerflow as ef
    from eagerflow import keras

    strategy = ef.distribute.MultiWorkerMirroredStrategy(
        communication_options=ef.distribute.experimental.CommunicationOptions(
            shard_optimizer_updates=shard))
    comm = strategy.extended.communicator
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((batch, _SIZES[0])).astype(np.float32)
    ya = rng.integers(0, _SIZES[-1], batch).astype(np.int32)
    with strategy.scope():
        ef.random.set_seed(0)
        model = keras.Sequential([keras.Input((_SIZES[0],))] + [
            keras.layers.Dense(n, activation="relu") for n in _SIZES[1:-1]] + [
            keras.layers.Dense(_SIZES[-1])])
        opt = keras.optimizers.Adam(1e-3)

    def replica_step(x, y):
        with ef.GradientTape() as tape:
            loss = ef.nn.compute_average_loss(
                ef.nn.sparse_softmax_cross_entropy_with_logits(y, model(x, training=True)),
                global_batch_size=batch)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @ef.function
    def step(x, y):
        return strategy.reduce("SUM", strategy.run(replica_step, args=(x, y)), axis=None)

    ds = ef.data.Dataset.from_tensor_slices((xa, ya)).batch(batch).repeat()
    x, y = next(iter(strategy.experimental_distribute_dataset(ds)))
    for _ in range(3):
        step(x, y)
    times = []
    for _ in range(steps):
        comm.barrier()
        start = time.perf_counter()
        float(step(x, y))
        times.append(time.perf_counter() - start)
    times = comm.allreduce([np.array(times)], "max")[0].tolist()
    if comm.rank == 0:
        print(json.dumps({"workload": "mlp", "ranks": comm.size, "step_s": times}), flush=True)


WORKLOADS = {"fused_small": fused_small, "bandwidth": bandwidth, "overlap": overlap}


def main(argv):
    if argv and argv[0] == "mlp":
        # "mlp" (the strategy's default), "mlp sharded" or "mlp unsharded".
        mlp_step(shard={"sharded": True, "unsharded": False}.get(argv[1]) if argv[1:]
                 else None)
        return 0
    from eagerflow.distribute.mpi_communicator import MPICommunicator

    comm = MPICommunicator()
    for name in argv or list(WORKLOADS):
        WORKLOADS[name](comm)
    comm.barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
