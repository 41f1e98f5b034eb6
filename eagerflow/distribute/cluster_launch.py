"""Starting a whole cluster of tasks as local processes: for tests, benchmarks and tools.

Every task runs the same script with its own ``TF_CONFIG`` and the job's shared secret
(generated here, never written to disk). Each task starts in its own session; past the
timeout, or when the chief ends, every task's process group is killed, so a broken job
fails instead of hanging.

Example:
    >>> from eagerflow.distribute.cluster_launch import cluster_spec_for
    >>> spec = cluster_spec_for({"chief": 1, "ps": 1}, ports=[5000, 5001])
    >>> spec["ps"]
    ['localhost:5001']
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

__all__ = ["free_ports", "cluster_spec_for", "LocalCluster"]


def _ephemeral_range():
    """The kernel's range for outgoing connections' local ports (Linux), else IANA's."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 49152, 65535


def free_ports(n):
    """``n`` distinct TCP ports free on loopback right now.

    The ports are drawn at random below the kernel's ephemeral range: a port the kernel
    chose (``bind(0)``) is one it may hand to any process's next outgoing connection
    before the task that was given it binds it, which made clusters started under load
    fail with "connection refused". Outside that range only another explicit bind can
    take a port, and random draws make two launches unlikely to pick the same one.
    """
    low = 20000
    high = max(low + 4 * n + 1000, _ephemeral_range()[0] - 1)
    rng = random.SystemRandom()
    ports = []
    for _ in range(200 * max(n, 1)):
        if len(ports) == n:
            break
        port = rng.randint(low, high)
        if port in ports:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        ports.append(port)
    if len(ports) < n:
        raise OSError("found only %d of %d free TCP ports in %d-%d on loopback"
                      % (len(ports), n, low, high))
    return ports


def cluster_spec_for(jobs, ports=None):
    """``{"chief": ["localhost:P"], "ps": [...], "worker": [...]}`` for task counts
    ``jobs`` (ordered: chief, ps, worker, then the rest by name)."""
    order = [j for j in ("chief", "ps", "worker") if j in jobs] + sorted(
        j for j in jobs if j not in ("chief", "ps", "worker"))
    total = sum(jobs[j] for j in order)
    ports = list(ports) if ports is not None else free_ports(total)
    spec, k = {}, 0
    for job in order:
        spec[job] = ["localhost:%d" % p for p in ports[k:k + jobs[job]]]
        k += jobs[job]
    return spec


class LocalCluster:
    """The tasks of one job, started as processes of this machine.

    Args:
        argv: The script and its arguments, run by every task (``["train.py"]``).
        jobs: Task counts, e.g. ``{"chief": 1, "ps": 1, "worker": 2}``.
        env: Variables set on top of this process's environment for every task.
        python: The interpreter (default: this one).
        secret: The job's secret (default: a fresh random one).

    Attributes:
        spec: The cluster spec dict. procs: ``{(job, index): Popen}``.
    """

    def __init__(self, argv, jobs, env=None, python=None, secret=None, cwd=None):
        from eagerflow.distribute.cluster import SECRET_ENV, generate_secret

        self.spec = cluster_spec_for(jobs)
        self.secret = secret or generate_secret()
        self.procs = {}
        self.outputs = {}
        base = dict(os.environ, **(env or {}))
        base[SECRET_ENV] = self.secret
        base.setdefault("OPENBLAS_NUM_THREADS", "1")
        self._argv = [python or sys.executable] + list(argv)
        self._env = base
        self._cwd = cwd
        for job, addresses in self.spec.items():
            for index in range(len(addresses)):
                self.start_task(job, index)

    def start_task(self, job, index):
        """Starts (or restarts) one task."""
        env = dict(self._env)
        env["TF_CONFIG"] = json.dumps({"cluster": self.spec,
                                       "task": {"type": job, "index": index}})
        self.procs[(job, index)] = subprocess.Popen(
            self._argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            cwd=self._cwd, start_new_session=True)

    def kill_task(self, job, index, sig=signal.SIGKILL):
        """Sends ``sig`` to one task's process group."""
        _kill(self.procs[(job, index)].pid, sig)

    def wait_chief(self, timeout):
        """Waits for the chief (then the others, briefly); kills everything left.

        Returns:
            ``(chief return code or None on timeout, {(job, index): output text})``.
        """
        chief = self.procs[("chief", 0)]
        code = None
        try:
            chief.wait(timeout=timeout)
            code = chief.returncode
        except subprocess.TimeoutExpired:
            pass
        end = time.monotonic() + 5.0
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, end - time.monotonic()) if code is not None else 0.1)
            except subprocess.TimeoutExpired:
                pass
        self.close()
        return code, self.outputs

    def close(self):
        """Kills every task's process group and collects their output."""
        for key, proc in self.procs.items():
            _kill(proc.pid, signal.SIGKILL)
            try:
                out, _ = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                out = ""
            self.outputs[key] = (self.outputs.get(key, "") or "") + (out or "")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _kill(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
