"""Cluster resolvers: who the workers are and which one this process is.

``TFConfigClusterResolver`` reads the ``TF_CONFIG`` environment variable exactly as
TensorFlow does::

    TF_CONFIG='{"cluster": {"worker": ["host1:2222", "host2:2222"]},
                "task": {"type": "worker", "index": 0}}'

``MPIClusterResolver`` takes the answer from MPI: under ``mpirun -n N`` this process is
worker ``rank`` of ``N``; under a plain ``python`` it is the only worker. It is what
``MultiWorkerMirroredStrategy()`` uses when no resolver is given.

Example:
    >>> import json, os
    >>> from eagerflow.distribute.cluster_resolver import TFConfigClusterResolver
    >>> os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["a:1", "b:1"]},
    ...                                       "task": {"type": "worker", "index": 1}})
    >>> r = TFConfigClusterResolver()
    >>> r.task_type, r.task_id, r.cluster_spec().num_tasks("worker")
    ('worker', 1, 2)
    >>> del os.environ["TF_CONFIG"]
"""

from __future__ import annotations

import json
import os

from eagerflow import errors

__all__ = ["ClusterSpec", "ClusterResolver", "TFConfigClusterResolver", "MPIClusterResolver",
           "SimpleClusterResolver", "launched_by_mpi"]

_MAX_TF_CONFIG = 1 << 20  # bytes: a cluster description, not a data file
_LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")


def launched_by_mpi():
    """True when an MPI launcher (mpirun/mpiexec) started this process with > 1 rank."""
    for name in _LAUNCHER_SIZE_VARS:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 1:
            return True
    return False


class ClusterSpec:
    """Jobs and their task addresses (``tf.train.ClusterSpec``).

    Args:
        cluster: ``{"worker": ["host:port", ...], ...}``; a job may also map task
            indices to addresses (``{"ps": {0: "h:1"}}``); or another ClusterSpec.
    """

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, dict):
            raise errors.InvalidArgumentError(
                None, "ClusterSpec", "cluster must be a dict of job name to addresses, got "
                "%s" % type(cluster).__name__)
        self._jobs = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str) or not job:
                raise errors.InvalidArgumentError(
                    None, "ClusterSpec", "job names must be non-empty strings, got %r" % (job,))
            if isinstance(tasks, (list, tuple)):
                tasks = dict(enumerate(tasks))
            if not isinstance(tasks, dict):
                raise errors.InvalidArgumentError(
                    None, "ClusterSpec", "job %r: tasks must be a list of addresses or a dict "
                    "of index to address" % job)
            clean = {}
            for index, address in tasks.items():
                try:
                    index = int(index)
                except (TypeError, ValueError):
                    index = -1
                if index < 0 or not isinstance(address, str):
                    raise errors.InvalidArgumentError(
                        None, "ClusterSpec", "job %r: task %r -> %r is not index -> 'host:port'"
                        % (job, index, address))
                clean[index] = address
            self._jobs[job] = dict(sorted(clean.items()))

    @property
    def jobs(self):
        return list(self._jobs)

    def num_tasks(self, job_name):
        return len(self._job(job_name))

    def task_indices(self, job_name):
        return list(self._job(job_name))

    def task_address(self, job_name, task_index):
        tasks = self._job(job_name)
        if task_index not in tasks:
            raise errors.InvalidArgumentError(
                None, "ClusterSpec", "job %r has no task %r (tasks: %s)"
                % (job_name, task_index, list(tasks)))
        return tasks[task_index]

    def job_tasks(self, job_name):
        tasks = self._job(job_name)
        return [tasks.get(i) for i in range(max(tasks) + 1)] if tasks else []

    def as_dict(self):
        return {job: (list(t.values()) if list(t) == list(range(len(t))) else dict(t))
                for job, t in self._jobs.items()}

    def _job(self, job_name):
        if job_name not in self._jobs:
            raise errors.InvalidArgumentError(
                None, "ClusterSpec", "no job %r in the cluster (jobs: %s)"
                % (job_name, self.jobs))
        return self._jobs[job_name]

    def __bool__(self):
        return bool(self._jobs)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    __hash__ = None

    def __repr__(self):
        return "ClusterSpec(%r)" % (self.as_dict(),)


class ClusterResolver:
    """Base class: ``cluster_spec()``, ``master()``, ``task_type``, ``task_id``."""

    task_type = None
    task_id = None
    rpc_layer = None
    environment = ""

    def cluster_spec(self):
        raise NotImplementedError

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        if task_type is None or task_id is None:
            return ""
        address = self.cluster_spec().task_address(task_type, task_id)
        rpc_layer = self.rpc_layer if rpc_layer is None else rpc_layer
        return "%s://%s" % (rpc_layer, address) if rpc_layer else address

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return {}

    @property
    def num_workers(self):
        spec = self.cluster_spec()
        n = sum(spec.num_tasks(j) for j in ("chief", "worker") if j in spec.jobs)
        return max(n, 1)

    @property
    def worker_index(self):
        """This task's index among chief + workers (the chief, if any, is 0)."""
        spec = self.cluster_spec()
        if self.task_type == "chief" or self.task_type is None:
            return 0
        offset = spec.num_tasks("chief") if "chief" in spec.jobs else 0
        return offset + int(self.task_id or 0)


class SimpleClusterResolver(ClusterResolver):
    """A resolver from explicit values (TF's ``SimpleClusterResolver``)."""

    def __init__(self, cluster_spec, master="", task_type=None, task_id=None, environment="",
                 num_accelerators=None, rpc_layer=None):
        self._spec = ClusterSpec(cluster_spec)
        self._master = master
        self.task_type, self.task_id, self.rpc_layer = task_type, task_id, rpc_layer
        self.environment = environment
        self._accelerators = dict(num_accelerators or {})

    def cluster_spec(self):
        return self._spec

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        if task_type is None and task_id is None and self._master:
            return self._master
        return super().master(task_type, task_id, rpc_layer)

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return dict(self._accelerators)


class TFConfigClusterResolver(ClusterResolver):
    """Reads the cluster from the ``TF_CONFIG`` environment variable, as TensorFlow does.

    Args:
        task_type: Overrides ``TF_CONFIG["task"]["type"]``.
        task_id: Overrides ``TF_CONFIG["task"]["index"]``.
        rpc_layer: Overrides ``TF_CONFIG["rpc_layer"]`` (prefix of ``master()``).
        environment: Overrides ``TF_CONFIG["environment"]``.

    Raises:
        InvalidArgumentError: TF_CONFIG is not valid JSON of TF's form.
    """

    def __init__(self, task_type=None, task_id=None, rpc_layer=None, environment=None):
        config = self._load()
        task = config.get("task", {}) or {}
        if not isinstance(task, dict):
            raise self._bad("'task' must be an object like {\"type\": \"worker\", \"index\": 0}")
        self.task_type = task_type if task_type is not None else task.get("type")
        raw_id = task_id if task_id is not None else task.get("index")
        if raw_id is not None and (not isinstance(raw_id, int) or isinstance(raw_id, bool)
                                   or raw_id < 0):
            raise self._bad("task index %r must be a non-negative integer" % (raw_id,))
        self.task_id = raw_id
        self.rpc_layer = rpc_layer if rpc_layer is not None else config.get("rpc_layer")
        self.environment = environment if environment is not None else \
            config.get("environment", "")
        self._spec = ClusterSpec(config.get("cluster", {}) or {})
        if self.task_type is not None and self._spec and self.task_type not in self._spec.jobs:
            raise self._bad("task type %r is not a job of the cluster (jobs: %s)"
                            % (self.task_type, self._spec.jobs))
        if self.task_type is not None and self.task_id is not None and self._spec and \
                self.task_id >= self._spec.num_tasks(self.task_type):
            raise self._bad("task index %d is out of range: job %r has %d tasks"
                            % (self.task_id, self.task_type, self._spec.num_tasks(self.task_type)))

    @staticmethod
    def _bad(why):
        return errors.InvalidArgumentError(None, "TF_CONFIG", "TF_CONFIG: %s" % why)

    def _load(self):
        text = os.environ.get("TF_CONFIG", "")
        if not text:
            return {}
        if len(text) > _MAX_TF_CONFIG:
            raise self._bad("%d bytes is too large for a cluster description" % len(text))
        try:
            config = json.loads(text)
        except ValueError as e:
            raise self._bad("not valid JSON (%s)" % e) from None
        if not isinstance(config, dict):
            raise self._bad("must be a JSON object with 'cluster' and 'task'")
        return config

    def cluster_spec(self):
        return self._spec


class MPIClusterResolver(ClusterResolver):
    """The cluster as MPI sees it: ``N`` workers under ``mpirun -n N``, rank = task index.

    Without ``mpirun`` this is a one-worker cluster and MPI is not touched (so a plain
    ``python train.py`` runs without mpi4py). mpi4py is imported only for a multi-process
    job.

    Args:
        comm: An mpi4py communicator (default ``MPI.COMM_WORLD`` under a launcher).

    Raises:
        FailedPreconditionError: started by an MPI launcher but mpi4py is missing.
    """

    task_type = "worker"

    def __init__(self, comm=None):
        if comm is None and launched_by_mpi():
            from eagerflow.distribute.mpi_communicator import mpi_module

            comm = mpi_module().COMM_WORLD
        self.comm = comm
        if comm is None:
            self.task_id, self._size, hosts = 0, 1, ["localhost"]
        else:
            self.task_id, self._size = comm.Get_rank(), comm.Get_size()
            hosts = self._gather_hosts(comm)
        self._spec = ClusterSpec({"worker": ["%s:%d" % (h, i) for i, h in enumerate(hosts)]})
        self.environment = "mpi"

    @staticmethod
    def _gather_hosts(comm):
        import socket

        import numpy as np

        name = socket.gethostname().encode("utf-8")[:255]
        mine = np.zeros(256, np.uint8)
        mine[:len(name)] = np.frombuffer(name, np.uint8)
        everyone = np.empty((comm.Get_size(), 256), np.uint8)
        comm.Allgather(mine, everyone)
        return [bytes(row).rstrip(b"\0").decode("utf-8", "replace") for row in everyone]

    def cluster_spec(self):
        return self._spec

    @property
    def num_workers(self):
        return self._size

    @property
    def worker_index(self):
        return self.task_id
