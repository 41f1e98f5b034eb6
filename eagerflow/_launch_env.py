"""Per-process settings an MPI launch needs before numpy loads (imported first by eagerflow).

Under ``mpirun -n N`` every rank is a full process with its own BLAS thread pool. With
OpenBLAS's default (one thread per core) N ranks on C cores run N x C threads that fight
for the cores: an MLP step took 64-190 ms instead of 12.6-31 ms with 2 ranks on 2 cores.
So when a launcher started several ranks on this host, and the user has not chosen, each
rank gets ``cores // local ranks`` (at least 1) BLAS threads. The variables only act if
they are set before numpy is first imported: import eagerflow first, or launch with
``mpirun -n 2 -genv OPENBLAS_NUM_THREADS 1 python train.py``.

This module imports nothing heavy: importing it (eagerflow's first import) applies the
setting, before numpy loads.
"""

import os
import sys

BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
_LOCAL_RANK_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE")


def local_ranks():
    """How many ranks the MPI launcher started on this host (1 without a launcher)."""
    for name in _LOCAL_RANK_VARS:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def limit_blas_threads():
    """Sets the BLAS thread variables the user left unset; returns the count or None."""
    ranks = local_ranks()
    if ranks <= 1 or any(name in os.environ for name in BLAS_THREAD_VARS[:3]):
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    threads = str(max(1, cores // ranks))
    for name in BLAS_THREAD_VARS:
        os.environ.setdefault(name, threads)
    if "numpy" in sys.modules:
        sys.stderr.write(
            "eagerflow: numpy was imported before eagerflow in an mpirun rank, so its BLAS "
            "may use one thread per core in each of %d ranks (slow); import eagerflow first "
            "or launch with `mpirun -genv OPENBLAS_NUM_THREADS %s ...`\n" % (ranks, threads))
    return int(threads)


limit_blas_threads()
