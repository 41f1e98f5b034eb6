"""Runs every benchmark workload and prints times and ratios to the numpy floor.

The GPU workloads (names starting with ``gpu``) follow in a table of their own, with ratios
to raw cupy and to torch on CUDA, when cupy sees a GPU; otherwise one line says why they
were skipped.

Usage: ``python -m eagerflow.benchmarks [--filter SUBSTRING] [--quick]``
"""

from __future__ import annotations

import argparse
import sys

from eagerflow.benchmarks.timing import import_time, time_interleaved
from eagerflow.benchmarks.workloads import WORKLOADS

COLUMNS = ("eagerflow", "numpy", "eagerflow eager", "torch", "tensorflow")


def _fmt(us):
    if us is None:
        return "-"
    if us >= 1000:
        return "%.2f ms" % (us / 1000)
    return "%.2f us" % us


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagerflow.benchmarks")
    parser.add_argument("--filter", default="", help="run workloads whose name contains this")
    parser.add_argument("--quick", action="store_true", help="shorter timing runs")
    args = parser.parse_args(argv)
    min_time = 0.05 if args.quick else 0.3

    rows = []
    for workload in WORKLOADS:
        if args.filter and args.filter not in workload.name:
            continue
        fns = workload.setup()
        times = time_interleaved(fns, min_time=min_time)
        rows.append((workload, times))

    # "ef eager": the same Python run eagerly, for workloads that time a @function.
    header = "%-46s %12s %12s %9s %12s %12s %12s  %s" % (
        "workload", "eagerflow", "numpy floor", "ef/numpy", "ef eager", "torch", "tensorflow",
        "note")
    if rows:
        print(header)
        print("-" * len(header))
    for workload, times in rows:
        base = times.get("numpy")
        ratio = times["eagerflow"] / base if base else float("nan")
        print("%-46s %12s %12s %8.2fx %12s %12s %12s  %s" % (
            workload.name, _fmt(times.get("eagerflow")), _fmt(base), ratio,
            _fmt(times.get("eagerflow eager")), _fmt(times.get("torch")),
            _fmt(times.get("tensorflow")), workload.note))

    _run_gpu(args.filter, min_time)
    _run_distribute(args.filter, args.quick)
    _run_mpi(args.filter)

    if not args.filter or "import" in args.filter:
        np_t = import_time("numpy")
        ef_t = import_time("eagerflow")
        extra = {m: import_time(m) for m in ("torch", "tensorflow")
                 if __import__("importlib.util").util.find_spec(m) is not None}
        print("%-46s %12s %12s %8.2fx %12s %12s %12s  %s" % (
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

    def job(n, names, blas_threads=None):
        env = {name: blas_threads for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                               "MKL_NUM_THREADS")} if blas_threads else None
        res = launch.run_mpirun(n, ["-m", "eagerflow.benchmarks.mpi_workloads"] + names,
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
    # each of two ranks gets).
    setups = [("2 ranks", 2, None), ("1 rank", 1, None), ("1 rank, 1 BLAS thread", 1, "1")]
    medians = {label: [] for label, _, _ in setups}
    for _ in range(MPI_ROUNDS):
        for label, n, threads in setups:
            for row in job(n, ["mlp"], threads):
                medians[label].append(float(sorted(row["step_s"])[len(row["step_s"]) // 2]))
    two = medians["2 ranks"]
    for label in ("1 rank", "1 rank, 1 BLAS thread"):
        one = medians[label]
        if not two or len(one) != len(two):
            continue
        ratios = sorted(b / a for a, b in zip(one, two))
        print("%-52s %14s %14s %10.2fx [%.2f-%.2f]  <= 0.6x (2 ranks / %s, %d rounds)" % (
            "mpi MLP 784-512-512-10 Adam b1024 step", _fmt(_median(two) * 1e6),
            _fmt(_median(one) * 1e6), _median(ratios), ratios[0], ratios[-1], label,
            len(ratios)))


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


if __name__ == "__main__":
    sys.exit(main())
