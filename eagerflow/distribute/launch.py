"""Starting ``mpirun`` from Python, safely: for tests, benchmarks and tools.

``pip install 'eagerflow[mpi]'`` installs the mpich wheel, which puts ``mpirun`` in the
environment's ``bin/`` next to ``python``; :func:`find_mpirun` looks there first, then on
``PATH``. :func:`run_mpirun` starts the job in a new session (its own process group) and,
past its timeout, kills the whole group: a rank blocked in MPI can ignore signals sent to
``mpirun`` alone and spin forever.

Example:
    >>> from eagerflow.distribute.launch import find_mpirun
    >>> path = find_mpirun()      # None where MPI is not installed
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

__all__ = ["find_mpirun", "mpi_available", "run_mpirun", "MPIRunResult"]


def find_mpirun():
    """The ``mpirun`` beside this Python (a venv's bin/), else on PATH, else None."""
    here = os.path.dirname(os.path.abspath(sys.executable))
    for name in ("mpirun", "mpiexec"):
        candidate = os.path.join(here, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("mpirun") or shutil.which("mpiexec")


def mpi_available():
    """True when mpi4py imports and an ``mpirun`` is found (without initializing MPI)."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None and find_mpirun() is not None


class MPIRunResult:
    """What a finished (or killed) ``mpirun`` left.

    Attributes: returncode, stdout, stderr, seconds, timed_out, and survivors: pids of the
    job's processes still running after ``mpirun`` returned (before they were killed).
    """

    def __init__(self, returncode, stdout, stderr, seconds, timed_out, survivors=()):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.timed_out = timed_out
        self.survivors = list(survivors)

    def __repr__(self):
        return "MPIRunResult(returncode=%r, seconds=%.1f, timed_out=%r)" % (
            self.returncode, self.seconds, self.timed_out)


def run_mpirun(n, argv, *, timeout=120, env=None, cwd=None, python=None):
    """Runs ``mpirun -n N python ARGV...`` and waits, at most ``timeout`` seconds.

    Args:
        n: Number of ranks.
        argv: The script and its arguments (``["train.py", "--epochs", "2"]``), or
            ``["-m", "module"]``.
        timeout: Seconds; past it the whole process group is killed (SIGKILL).
        env: Variables set on top of this process's environment.
        cwd: Working directory.
        python: The interpreter the ranks run (default: this one).

    Returns:
        An :class:`MPIRunResult` (``timed_out`` True when it had to be killed).

    Raises:
        FileNotFoundError: no mpirun was found.
    """
    mpirun = find_mpirun()
    if mpirun is None:
        raise FileNotFoundError(
            "mpirun not found beside %s or on PATH; pip install 'eagerflow[mpi]'"
            % sys.executable)
    full_env = dict(os.environ, **(env or {}))
    cmd = [mpirun, "-n", str(int(n)), python or sys.executable] + list(argv)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=full_env, cwd=cwd, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException as e:
        timed_out = isinstance(e, subprocess.TimeoutExpired)
        _kill_group(proc.pid)
        out, err = proc.communicate()
        if not timed_out:
            raise
    seconds = time.monotonic() - start
    survivors = [] if timed_out else _group_members(proc.pid, grace=2.0)
    # Ranks that outlived mpirun (they should not) go with the group.
    _kill_group(proc.pid)
    return MPIRunResult(proc.returncode, out, err, seconds, timed_out, survivors)


def _group_members(pgid, grace):
    """Live (not zombie) processes of group ``pgid``, after up to ``grace`` s to exit."""
    end = time.monotonic() + grace
    while True:
        members = []
        try:
            names = os.listdir("/proc")
        except OSError:
            return []
        for name in names:
            if not name.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(name))
        if not members or time.monotonic() >= end:
            return members
        time.sleep(0.05)


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
