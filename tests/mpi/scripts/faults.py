"""Run under mpirun: a rank that misbehaves. Usage: faults.py skip|kill|raise.

skip:  rank 1 never joins the 4th all-reduce (it sleeps in user code).
kill:  rank 1 SIGKILLs itself in the middle of step 5 of a training-like loop.
raise: rank 1 raises in user code before step 3.
"""

import os
import signal
import sys
import time

import eagerflow  # noqa: F401  (first: it sizes the BLAS pool before numpy loads)
import numpy as np
from eagerflow.distribute.mpi_communicator import MPICommunicator

mode = sys.argv[1]
comm = MPICommunicator()
# One write per line: mpirun forwards each rank's output as it arrives, and a line written
# in two pieces (text, then newline) can be interleaved with another rank's line.
os.write(1, b"pid %d %d\n" % (comm.rank, os.getpid()))
w = np.ones((64, 64), np.float32)


def user_step_that_sleeps():
    time.sleep(600)


for step in range(1000):
    comm.step = step
    g = w @ w  # a little compute between collectives, as a training step has
    if comm.rank == 1 and step == 3 and mode == "skip":
        user_step_that_sleeps()
    if comm.rank == 1 and step == 5 and mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if comm.rank == 1 and step == 3 and mode == "raise":
        raise RuntimeError("rank 1 cannot read its shard")
    comm.allreduce([g], name="grads")
    time.sleep(0.01)
print("finished %d" % comm.rank, flush=True)
