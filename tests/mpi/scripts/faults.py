"""Run under mpirun: a rank that misbehaves. Usage: faults.py skip|kill|raise [DIR].

skip:  rank 1 never joins the 4th all-reduce (it sleeps in user code).
kill:  rank 1 SIGKILLs itself in the middle of step 5 of a training-like loop.
raise: rank 1 raises in user code before step 3.

With DIR, each rank also writes DIR/rank-R ("PID TIME": its pid and the wall-clock time
it was ready, after MPI start-up) and rank 1 writes DIR/killed (the time just before its
SIGKILL), each file written whole and renamed into place: the test measures from these
moments, not from the job's start, which takes much longer on a loaded machine.
"""

import os
import signal
import sys
import time

import eagerflow  # noqa: F401  (first: it sizes the BLAS pool before numpy loads)
import numpy as np
from eagerflow.distribute.mpi_communicator import MPICommunicator

mode = sys.argv[1]
times_dir = sys.argv[2] if len(sys.argv) > 2 else None


def note(name, text):
    if times_dir is not None:
        tmp = os.path.join(times_dir, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(times_dir, name))


comm = MPICommunicator()
note("rank-%d" % comm.rank, "%d %r" % (os.getpid(), time.time()))
w = np.ones((64, 64), np.float32)


def user_step_that_sleeps():
    time.sleep(600)


for step in range(1000):
    comm.step = step
    g = w @ w  # a little compute between collectives, as a training step has
    if comm.rank == 1 and step == 3 and mode == "skip":
        user_step_that_sleeps()
    if comm.rank == 1 and step == 5 and mode == "kill":
        note("killed", repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)
    if comm.rank == 1 and step == 3 and mode == "raise":
        raise RuntimeError("rank 1 cannot read its shard")
    comm.allreduce([g], name="grads")
    time.sleep(0.01)
print("finished %d" % comm.rank, flush=True)
