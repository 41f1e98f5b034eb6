"""Runs every benchmark workload and prints times and ratios to the numpy floor, to
TensorFlow and torch (when installed, timed in the same interleaved run) and, for workloads
that declare their matrix-product FLOPs, to the FLOP floor at the sgemm rate measured first.

The GPU workloads (names starting with ``gpu``) follow in a table of their own, with ratios
to raw cupy and to torch on CUDA, when cupy sees a GPU; otherwise one line says why they
were skipped.

Usage: ``python -m eagerflow.benchmarks [--filter SUBSTRING] [--quick]`` (``--filter ps_``: the
parameter-server group alone)
"""

from __future__ import annotations

import argparse
import sys

from eagerflow.benchmarks.timing import import_time, time_interleaved
from eagerflow.benchmarks.training_workloads import WORKLOADS as TRAINING
from eagerflow.benchmarks.training_workloads import sgemm_gflops
from eagerflow.benchmarks.workloads import WORKLOADS as BASIC

WORKLOADS = BASIC + TRAINING

COLUMNS = ("eagerflow", "numpy", "eagerflow eager", "torch", "tensorflow")


def _fmt(us):
    if us is None:
        return "-"
    if us >= 1000:
        return "%.2f ms" % (us / 1000)
    return "%.2f us" % us


def _ratio(t, base):
    return "%.2fx" % (t / base) if t and base else "-"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagerflow.benchmarks")
    parser.add_argument("--filter", default="", help="run workloads whose name contains this")
    parser.add_argument("--quick", action="store_true", help="shorter timing runs")
    args = parser.parse_args(argv)
    min_time = 0.05 if args.quick else 0.3

    gflops = sgemm_gflops()
    print("sgemm 1024x1024 float32: %.0f GFLOP/s (the FLOP floors below use this rate)"
          % gflops)
    rows = []
    for workload in WORKLOADS:
        if args.filter and args.filter not in workload.name:
            continue
        fns = workload.setup()
        times = time_interleaved(fns, min_time=min_time)
        rows.append((workload, times))

    # "ef eager": the same Python run eagerly, for workloads that time a @function.
    header = "%-46s %11s %11s %8s %11s %11s %11s %8s %8s %10s %8s  %s" % (
        "workload", "eagerflow", "numpy floor", "ef/numpy", "ef eager", "torch", "tensorflow",
        "ef/torch", "ef/tf", "FLOP floor", "ef/floor", "note")
    if rows:
        print(header)
        print("-" * len(header))
    for workload, times in rows:
        ef_t = times["eagerflow"]
        floor = workload.flops / (gflops * 1e3) if workload.flops else None   # microseconds
        print("%-46s %11s %11s %8s %11s %11s %11s %8s %8s %10s %8s  %s" % (
            workload.name, _fmt(ef_t), _fmt(times.get("numpy")),
            _ratio(ef_t, times.get("numpy")), _fmt(times.get("eagerflow eager")),
            _fmt(times.get("torch")), _fmt(times.get("tensorflow")),
            _ratio(ef_t, times.get("torch")), _ratio(ef_t, times.get("tensorflow")),
            _fmt(floor), _ratio(ef_t, floor), workload.note))

    _run_gpu(args.filter, min_time)
    _run_distribute(args.filter, args.quick)
    _run_mpi(args.filter)
    _run_ps(args.filter)

    if not args.filter or "import" in args.filter:
        np_t = import_time("numpy")
        ef_t = import_time("eagerflow")
        extra = {m: import_time(m) for m in ("torch", "tensorflow")
                 if __import__("importlib.util").util.find_spec(m) is not None}
        print("%-46s %11s %11s %7.2fx %11s %11s %11s  %s" % (
            "import time (fresh interpreter)", "%.3f s" % ef_t, "%.3f s" % np_t, ef_t / np_t, "-",
            "%.3f s" % extra["torch"] if extra.get("torch") else "-",
            "%.3f s" % extra["tensorflow"] if extra.get("tensorflow") else "-",
            "eagerflow - numpy = %.3f s (target < 0.3 s)" % (ef_t - np_t)))
    return 0


def _run_distribute(name_filter, quick):
    """The distribution workloads, in a child process that configures logical CPUs."""
    import subprocess

    from eagerflow.benchmarks import distribute_workloads

    if not any(name_filter in name for name, _ in distribute_workloads.WORKLOADS):
        return
    print()
    sys.stdout.flush()
    command = [sys.executable, "-m", "eagerflow.benchmarks.distribute_workloads",
               "--filter", name_filter] + (["--quick"] if quick else [])
    subprocess.run(command, check=False, timeout=1800)


MPI_ROUNDS = 3  # mpirun jobs of 1 and 2 ranks, alternated, for the MLP step


def _run_mpi(name_filter):
    """The ``mpi`` group: each workload runs under ``mpirun``, started here."""
    import json

    from eagerflow.distribute import launch

    if name_filter and "mpi" not in name_filter:
        return
    print()
    if not launch.mpi_available():
        print("mpi workloads skipped: mpi4py or mpirun is missing (pip install "
              "'eagerflow[mpi]').")
        return

    def job(n, names, blas_threads=None, extra=()):
        env = {name: blas_threads for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                               "MKL_NUM_THREADS")} if blas_threads else None
        res = launch.run_mpirun(n, ["-m", "eagerflow.benchmarks.mpi_workloads"] + names
                                + list(extra),
                                timeout=900, env=env)
        if res.returncode != 0:
            print("mpirun -n %d %s failed (%s):\n%s" % (n, " ".join(names), res.returncode,
                                                     res.stderr[-2000:]))
            return []
        out = []
        for line in res.stdout.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    header = "%-52s %14s %14s %22s  %s" % ("mpi workload (2 ranks, mpirun)", "candidate",
                                           "baseline", "ratio median [range]", "target")
    print(header)
    print("-" * len(header))
    for row in job(2, ["fused_small", "bandwidth", "overlap"]):
        times = row["times"]
        print("%-52s %14s %14s %10.2fx [%.2f-%.2f]  %s (baseline: %s)" % (
            row["workload"] + " - " + row["candidate"],
            _fmt(times[row["candidate"]]["median_us"]),
            _fmt(times[row["baseline"]]["median_us"]), row["speedup_median"],
            row["speedup_min"], row["speedup_max"], row["target"], row["baseline"]))
    # The MLP step: 1-rank and 2-rank jobs in turn, so all see the same machine load. One
    # rank is timed with its default BLAS threads (all cores) and with one thread (what
    # each of two ranks gets); two ranks also with sharded optimizer updates.
    setups = [("2 ranks", 2, None, ()), ("1 rank", 1, None, ()),
              ("1 rank, 1 BLAS thread", 1, "1", ()),
              ("2 ranks, sharded updates", 2, None, ("sharded",))]
    medians = {label: [] for label, _, _, _ in setups}
    for _ in range(MPI_ROUNDS):
        for label, n, threads, extra in setups:
            for row in job(n, ["mlp"], threads, extra):
                medians[label].append(float(sorted(row["step_s"])[len(row["step_s"]) // 2]))
    for two_label, one_label, target in (
            ("2 ranks", "1 rank", "<= 0.6x"), ("2 ranks", "1 rank, 1 BLAS thread", "<= 0.6x"),
            ("2 ranks, sharded updates", "1 rank, 1 BLAS thread", "<= 0.6x"),
            ("2 ranks, sharded updates", "2 ranks", "< 1.0x to be the default")):
        two, one = medians[two_label], medians[one_label]
        if not two or len(one) != len(two):
            continue
        ratios = sorted(b / a for a, b in zip(one, two))
        print("%-52s %14s %14s %10.2fx [%.2f-%.2f]  %s (%s / %s, %d rounds)" % (
            "mpi MLP 784-512-512-10 Adam b1024 step", _fmt(_median(two) * 1e6),
            _fmt(_median(one) * 1e6), _median(ratios), ratios[0], ratios[-1], target,
            two_label, one_label, len(ratios)))


def _median(values):
    values = sorted(values)
    return values[len(values) // 2]


def _run_gpu(name_filter, min_time):
    """Times the GPU workloads when cupy sees a GPU; otherwise says why they are skipped."""
    from eagerflow.benchmarks import gpu_workloads

    selected = [w for w in gpu_workloads.WORKLOADS if name_filter in w.name]
    if not selected:
        return
    ok, why = gpu_workloads.available()
    if not ok:
        print("GPU workloads skipped: %s." % why)
        return
    rows = [(w, time_interleaved(w.setup(), min_time=min_time)) for w in selected]
    header = "%-46s %12s %12s %9s %12s %9s  %s" % (
        "workload (device-synchronized calls)", "eagerflow", "cupy floor", "ef/cupy", "torch",
        "ef/torch", "note")
    print()
    print(header)
    print("-" * len(header))
    for workload, times in rows:
        ef_t, cupy_t, torch_t = (times.get(k) for k in ("eagerflow", "cupy", "torch"))
        print("%-46s %12s %12s %9s %12s %9s  %s" % (
            workload.name, _fmt(ef_t), _fmt(cupy_t),
            "%.2fx" % (ef_t / cupy_t) if cupy_t else "-", _fmt(torch_t),
            "%.2fx" % (ef_t / torch_t) if torch_t else "-", workload.note))




PS_ROUNDS = 3  # 1-worker and 2-worker jobs, alternated, for asynchronous steps/s


def _run_ps(name_filter):
    """The ``ps`` group: each workload runs as a local cluster of processes, started here."""
    import importlib.util
    import json
    import tempfile

    selected = [n for n in ("ps_roundtrip_4mb", "ps_async_steps") if name_filter in n]
    if not selected:
        return
    print()
    if importlib.util.find_spec("grpc") is None:
        print("ps workloads skipped: grpcio is missing (pip install 'eagerflow[ps]').")
        return
    from eagerflow.distribute.cluster_launch import LocalCluster

    def job(mode, workers):
        with tempfile.TemporaryDirectory() as directory:
            cluster = LocalCluster(["-m", "eagerflow.benchmarks.ps_workloads", mode],
                                   {"chief": 1, "ps": 1, "worker": workers},
                                   env={"EF_BENCH_DIR": directory})
            code, outputs = cluster.wait_chief(600)
        rows = []
        for line in outputs[("chief", 0)].splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
        if code != 0 or not rows:
            print("ps %s job failed (%s):\n%s" % (mode, code, outputs[("chief", 0)][-2000:]))
        return rows

    header = "%-52s %14s %14s %22s" % ("ps workload (local cluster, gRPC)", "eagerflow",
                                       "baseline", "ratio median [range]")
    print(header)
    print("-" * len(header))
    for row in job("roundtrip", 1) if "ps_roundtrip_4mb" in selected else ():
        ef_s, raw_s, ratio = row["eagerflow_s"], row["raw_s"], row["ratio"]
        print("%-52s %14s %14s %10.2fx [%.2f-%.2f]  (raw gRPC echo; %.2f GB/s vs %.2f GB/s, "
              "%d runs)" % (
                  "ps_roundtrip_4mb: pull+push a 4 MB ps variable",
                  _fmt(ef_s["median"] * 1e6), _fmt(raw_s["median"] * 1e6), ratio["median"],
                  ratio["min"], ratio["max"],
                  2 * row["bytes"] / ef_s["median"] / 1e9,
                  2 * row["bytes"] / raw_s["median"] / 1e9, ratio["runs"]))
    rates = {1: [], 2: []}
    for _ in range(PS_ROUNDS if "ps_async_steps" in selected else 0):
        for workers in (2, 1):
            for row in job("async", workers):
                rates[workers].append(row["steps_per_s"]["median"])
    if rates[1] and len(rates[1]) == len(rates[2]):
        ratios = sorted(b / a for a, b in zip(rates[1], rates[2]))
        print("%-52s %11.1f/s %11.1f/s %10.2fx [%.2f-%.2f]  (2 workers / 1, %d rounds)" % (
            "ps_async_steps: MLP 64-128-10 Adam b32 steps/s", _median(rates[2]),
            _median(rates[1]), _median(ratios), ratios[0], ratios[-1], len(ratios)))

if __name__ == "__main__":
    sys.exit(main())
