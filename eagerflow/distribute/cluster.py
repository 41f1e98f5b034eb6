"""A cluster of tasks: each process serves its task, and graphs run across them.

``Server(cluster_spec, job_name, task_index)`` (TF's ``tf.distribute.Server``) starts this
process's task: its worker service on the task's address, and the hook that makes a traced
function placed on ``/job:NAME/task:I`` devices run partitioned across tasks
(:class:`ClusterExecutor`). Every process of a job runs the same script; a worker or
parameter server just serves until the chief ends the job::

    resolver = ef.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("worker", "ps"):
        ef.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                             task_index=resolver.task_id).join()
        sys.exit(0)
    ef.distribute.experimental_connect_to_cluster(resolver)   # the chief

The job's shared secret comes from ``EAGERFLOW_CLUSTER_SECRET`` (``secret=`` overrides it);
a task refuses every call that does not present it, and refuses to start without one.

Example:
    >>> from eagerflow.distribute import cluster
    >>> cluster.SECRET_ENV
    'EAGERFLOW_CLUSTER_SECRET'
"""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import secrets as secrets_lib
import threading

from eagerflow import errors
from eagerflow.distribute.cluster_resolver import ClusterResolver, ClusterSpec
from eagerflow.distribute.rpc import wire
from eagerflow.distribute.rpc.rendezvous import StepInbox, StepRendezvous
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.function import rendezvous as rendezvous_lib
from eagerflow.function import task_partition

__all__ = ["Server", "experimental_connect_to_cluster", "ClusterExecutor", "current_runtime",
           "generate_secret", "SECRET_ENV"]

SECRET_ENV = "EAGERFLOW_CLUSTER_SECRET"
_runtime = None
_runtime_lock = threading.Lock()


def generate_secret():
    """A fresh random secret for a job (put it in ``EAGERFLOW_CLUSTER_SECRET`` of every
    task)."""
    return secrets_lib.token_hex(24)


def current_runtime():
    """This process's cluster runtime, or None before a Server started."""
    return _runtime


class _Runtime:
    """This process's task: its service, its inbox, and clients to the other tasks."""

    def __init__(self, spec, job_name, task_index, secret, bind_address):
        from eagerflow.distribute.rpc import server as server_lib

        if not secret:
            raise errors.FailedPreconditionError(
                None, "Server", "A cluster task needs the job's shared secret: set %s to the "
                "same value in every task's environment (generate one with "
                "eagerflow.distribute.cluster.generate_secret()), or pass secret=." % SECRET_ENV)
        self.spec = spec
        self.job = job_name
        self.index = task_index
        self.task = task_partition.task_name(job_name, task_index)
        self.address = spec.task_address(job_name, task_index)
        self.secret = secret
        self.inbox = StepInbox()
        self.service = server_lib.WorkerService(self.task, self.inbox, self.send_remote)
        bind = bind_address or server_lib.loopback_bind_address(self.address)
        self.grpc_server, self.port = server_lib.start_grpc_server(self.service, bind, secret)
        self._clients = {}
        self._clients_lock = threading.Lock()
        # Step ids of this process: random high bits keep tasks that start steps apart.
        base = int.from_bytes(os.urandom(4), "little") << 31
        self._steps = itertools.count(base)
        self.stopped = False

    def tasks(self):
        """Every task of the cluster, by name."""
        return [task_partition.task_name(job, i) for job in self.spec.jobs
                for i in self.spec.task_indices(job)]

    def address_of(self, task):
        from eagerflow.framework.device_spec import DeviceSpec

        spec = DeviceSpec.from_string(task)
        if spec.job not in self.spec.jobs or spec.task not in self.spec.task_indices(spec.job):
            raise errors.InvalidArgumentError(
                None, None, "Task %s is not part of the cluster (tasks: %s)." % (
                    task, ", ".join(self.tasks())))
        return self.spec.task_address(spec.job, spec.task)

    def client(self, task):
        found = self._clients.get(task)
        if found is None:
            from eagerflow.distribute.rpc.client import WorkerClient

            with self._clients_lock:
                found = self._clients.get(task)
                if found is None:
                    found = WorkerClient(task, self.address_of(task), self.secret)
                    self._clients[task] = found
        return found

    def new_step_id(self):
        return next(self._steps)

    def send_remote(self, task, key, value, deadline):
        timeout = deadline if deadline else rendezvous_lib.get_default_deadline()
        self.client(task).send_tensor(key, value, timeout)

    def executor_for(self, graph):
        """The cluster executor of a graph that uses other tasks (None when it does not)."""
        if not task_partition.names_other_task(graph, self.task):
            return None
        return ClusterExecutor(graph, self.task, runtime=self)

    def wait_for_tasks(self, timeout=60.0):
        """Waits until every other task answers (they start at about the same time).

        Raises:
            UnavailableError: Naming the tasks that did not answer within ``timeout`` s.
        """
        import time

        end = time.monotonic() + timeout
        waiting = [t for t in self.tasks() if t != self.task]
        while waiting:
            still = []
            for task in waiting:
                try:
                    self.client(task).status(timeout=1.0)
                except errors.UnauthenticatedError:
                    raise
                except errors.OpError:
                    still.append(task)
            waiting = still
            if waiting:
                if time.monotonic() > end:
                    raise errors.UnavailableError(
                        None, "connect_to_cluster", "Tasks %s did not answer within %gs: "
                        "start them (each runs the same script and serves with "
                        "ef.distribute.Server(...).join())." % (", ".join(waiting), timeout))
                time.sleep(0.1)

    def shutdown_cluster(self):
        """Asks every other task to stop serving (the chief ending the job)."""
        for task in self.tasks():
            if task != self.task:
                self.client(task).shutdown()

    def stop(self):
        if not self.stopped:
            self.stopped = True
            self.grpc_server.stop(grace=0.5)


def _start_runtime(spec, job_name, task_index, secret, bind_address):
    global _runtime
    from eagerflow.function import multi_device

    with _runtime_lock:
        if _runtime is not None:
            if (_runtime.job, _runtime.index) == (job_name, task_index) and \
                    _runtime.spec == spec and not _runtime.stopped:
                return _runtime
            raise errors.FailedPreconditionError(
                None, "Server", "This process already serves task %s; one process serves "
                "one task." % _runtime.task)
        _runtime = _Runtime(spec, job_name, task_index, secret, bind_address)
        multi_device.set_cluster_executor_factory(_runtime.executor_for)
        return _runtime


class Server:
    """This process's task of a cluster (TF's ``tf.distribute.Server``).

    Args:
        server_or_cluster_def: A ClusterSpec, a dict ``{"job": ["host:port", ...]}``, or a
            ClusterResolver.
        job_name: This task's job (default: the resolver's ``task_type``).
        task_index: This task's index in the job (default: the resolver's ``task_id``, else
            0).
        protocol: ``"grpc"`` (the only transport).
        config: Unused (TF compatibility).
        start: Start serving now.
        secret: The job's shared secret (default: ``EAGERFLOW_CLUSTER_SECRET``).
        bind_address: Where to listen (default: loopback, on the task's port).

    Raises:
        FailedPreconditionError: No secret is set.
        InvalidArgumentError: The task is not in the cluster, or its address is not
            loopback and no ``bind_address`` was given.
        UnavailableError: The address cannot be bound.

    Example:
        >>> import eagerflow as ef
        >>> spec = ef.distribute.cluster_resolver.ClusterSpec({"ps": ["localhost:0"]})
        >>> spec.num_tasks("ps")
        1
    """

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                 config=None, start=True, secret=None, bind_address=None):
        if protocol not in (None, "grpc"):
            raise errors.InvalidArgumentError(
                None, "Server", "protocol %r is not supported: tasks talk 'grpc'." % (protocol,))
        spec, job_name, task_index = _resolve(server_or_cluster_def, job_name, task_index)
        self._args = (spec, job_name, task_index,
                      secret if secret is not None else os.environ.get(SECRET_ENV, ""),
                      bind_address)
        self._runtime = None
        if start:
            self.start()

    def start(self):
        if self._runtime is None:
            self._runtime = _start_runtime(*self._args)

    @property
    def target(self):
        """``grpc://host:port`` of this task."""
        spec, job, index = self._args[:3]
        return "grpc://" + spec.task_address(job, index)

    @property
    def task(self):
        return task_partition.task_name(self._args[1], self._args[2])

    def join(self, timeout=None):
        """Serves until another task (the chief) shuts the job down, or ``timeout`` seconds.

        Returns:
            True when shut down, False when the timeout ran out first.
        """
        self.start()
        done = self._runtime.service.stopped.wait(timeout)
        if done:
            self._runtime.stop()
        return done

    def stop(self):
        if self._runtime is not None:
            self._runtime.stop()


def _resolve(definition, job_name, task_index):
    if isinstance(definition, ClusterResolver):
        spec = definition.cluster_spec()
        job_name = job_name if job_name is not None else getattr(definition, "task_type", None)
        if task_index is None:
            task_index = getattr(definition, "task_id", None)
    else:
        spec = ClusterSpec(definition)
    if job_name is None:
        raise errors.InvalidArgumentError(
            None, "Server", "job_name is required (the job of this task, e.g. 'worker').")
    task_index = 0 if task_index is None else int(task_index)
    spec.task_address(job_name, task_index)  # raises naming the job's tasks
    return spec, job_name, task_index


def experimental_connect_to_cluster(cluster_spec_or_resolver, job_name=None, task_index=None,
                                    protocol=None, secret=None, bind_address=None,
                                    startup_timeout=60.0):
    """Makes this process a task of the cluster that starts and shuts down the job.

    TF's ``tf.config.experimental_connect_to_cluster``: after it, functions whose ops are
    placed on other tasks (``with ef.device("/job:ps/task:0")``) run there. This process's
    own task (default job ``"chief"``, task 0) must be in the cluster: other tasks send it
    tensors. When this process exits, it asks every other task to stop serving.

    Args:
        cluster_spec_or_resolver: A ClusterSpec, a dict, or a ClusterResolver.
        job_name: This process's job (default: the resolver's task type, else "chief").
        task_index: Its index (default: the resolver's task id, else 0).
        protocol: ``"grpc"``.
        secret: The job's secret (default: ``EAGERFLOW_CLUSTER_SECRET``).
        bind_address: Where to listen (default: loopback).
        startup_timeout: Seconds to wait for every other task to answer.

    Returns:
        The Server of this process's task.

    Raises:
        UnavailableError: Naming the tasks that did not start in time.
    """
    if job_name is None and not isinstance(cluster_spec_or_resolver, ClusterResolver):
        job_name = "chief"
    if job_name is None and getattr(cluster_spec_or_resolver, "task_type", None) is None:
        job_name = "chief"
    server = Server(cluster_spec_or_resolver, job_name=job_name, task_index=task_index,
                    protocol=protocol, secret=secret, bind_address=bind_address)
    atexit.register(_end_job, server._runtime)
    server._runtime.wait_for_tasks(startup_timeout)
    return server


def _end_job(runtime):
    if not runtime.stopped:
        runtime.shutdown_cluster()
        runtime.stop()


class ClusterExecutor:
    """Runs a graph partitioned across the tasks of a cluster.

    Each task's subgraph is registered with its task once (serialized ``graph.proto``); a
    call then sends each remote partition only its arguments and the step id, runs this
    task's partition here, and gathers the outputs. When any partition fails, the step is
    aborted on every task (their waiting Recvs stop) and the first cause is raised, naming
    the task it came from.

    Args:
        graph: The whole (optimized) Graph.
        default_task: The task of every node that names none.
        runtime: This process's runtime (default: the current one).
        deadline: Seconds each Recv and RPC of a step may take (default: the rendezvous
            default at call time).

    Attributes:
        partitioned: The TaskPartitionedGraph.
        output_devices: The device of each output here (None for a passed-through argument).
    """

    def __init__(self, graph, default_task, runtime=None, deadline=None):
        from eagerflow.function.executor import Executor

        self.graph = graph
        self.runtime = runtime or _runtime
        if self.runtime is None:
            raise errors.FailedPreconditionError(
                None, graph.name, "Graph %s places nodes on other tasks, but this process "
                "is not part of a cluster: start its task with "
                "ef.distribute.experimental_connect_to_cluster(...)." % graph.name)
        self.default_task = default_task
        self.deadline = deadline
        self.partitioned = task_partition.partition_by_task(graph, default_task,
                                                            self.runtime.task)
        for part in self.partitioned.partitions:
            self.runtime.address_of(part.task)  # every task must exist: fail at build time
        self._local = {}
        self._handles = {}
        self._lock = threading.Lock()
        for k, part in enumerate(self.partitioned.partitions):
            if part.task == self.runtime.task:
                self._local[k] = Executor(part.graph)
        self.output_devices = [None if node.op == builtins.PLACEHOLDER else context.CPU0
                               for node, _ in graph.outputs]

    @property
    def tasks(self):
        return [p.task for p in self.partitioned.partitions]

    def _handle(self, k):
        handle = self._handles.get(k)
        if handle is None:
            from eagerflow.function import serialize

            with self._lock:
                handle = self._handles.get(k)
                if handle is None:
                    part = self.partitioned.partitions[k]
                    data = serialize.proto_to_bytes(serialize.graph_to_proto(
                        part.graph, embed_captures=True, embed_variables=False))
                    handle = self.runtime.client(part.task).register_graph(
                        "%s@%s" % (self.graph.name, part.task), data)
                    self._handles[k] = handle
        return handle

    def register(self):
        """Registers every remote partition now (otherwise done by the first call)."""
        for k in range(len(self.partitioned.partitions)):
            if k not in self._local:
                self._handle(k)

    def run(self, args, captures):
        """Runs one step across the tasks; returns the whole graph's output arrays.

        Raises:
            The first failure of any task (its eagerflow error, naming the task), or
            UnavailableError naming a task that cannot be reached.
        """
        runtime = self.runtime
        parts = self.partitioned.partitions
        deadline = self.deadline or rendezvous_lib.get_default_deadline()
        step_id = runtime.new_step_id()
        results = [None] * len(parts)
        failures = []
        pending = []
        pb = wire.pb()
        for k, part in enumerate(parts):
            if k in self._local:
                continue
            client = runtime.client(part.task)
            try:
                request = wire.WithTensors(pb.RunGraphRequest(
                    handle=self._handle(k), step_id=step_id, deadline_s=deadline), 3,
                    [args[i] for i in part.input_positions])  # RunGraphRequest.arg
                pending.append((k, client, client.call_future("RunGraph", request,
                                                              deadline + 5.0)))
            except Exception as exc:  # noqa: BLE001 - raised after the step is aborted
                failures.append(exc)
                # The partitions already started would wait for this one's tensors.
                self._abort(step_id, exc, pending)
                break
        if not failures:
            for k, executor in self._local.items():
                part = parts[k]
                rendezvous = StepRendezvous(runtime.task, runtime.inbox, step_id,
                                            runtime.send_remote, deadline)
                from eagerflow.function.multi_device import step_frame

                try:
                    with step_frame(rendezvous, step_id, deadline):
                        results[k] = executor.run([args[i] for i in part.input_positions],
                                                  [captures[i] for i in part.capture_positions])
                except Exception as exc:  # noqa: BLE001 - raised after the step is aborted
                    failures.append(exc)
                    self._abort(step_id, exc, pending)
        # Replies are handled as they arrive: a task that fails at once (a dead ps) must
        # abort the step before anyone waits out a deadline on a Recv from it.
        arrivals = queue.SimpleQueue()
        for entry in pending:
            entry[2].add_done_callback(lambda _f, e=entry: arrivals.put(e))
        for _ in range(len(pending)):
            k, client, future = arrivals.get()
            try:
                reply = future.result()
            except Exception as exc:  # noqa: BLE001
                error = client.translate(exc, "RunGraph", deadline + 5.0,
                                         "running %s (step %d)" % (self.graph.name, step_id)) \
                    if hasattr(exc, "code") else exc
                failures.append(error)
                self._abort(step_id, error, pending)
                continue
            if reply.HasField("error"):
                error = wire.decode_error(reply.error, "%s failed: " % self.graph.name)
                failures.append(error)
                self._abort(step_id, error, pending)
                continue
            results[k] = [wire.decode_tensor(t, "an output of %s" % self.graph.name)
                          for t in reply.output]
        if failures:
            self._abort(step_id, failures[0], pending)
            raise _first_cause(failures)
        return [results[k][i] for k, i in self.partitioned.outputs]

    def _abort(self, step_id, error, pending):
        """Stops the step everywhere: here, and on every task still running it."""
        runtime = self.runtime
        runtime.inbox.abort_step(step_id, error)
        reason = "%s: %s" % (type(error).__name__, error)
        for _, client, future in pending:
            if not future.done():
                client.abort_step(step_id, reason)


def _first_cause(failures):
    """The failure that caused the others (cancelled or aborted Recvs come last)."""
    for f in failures:
        if not isinstance(f, (errors.CancelledError, errors.AbortedError)) and \
                "was cancelled" not in str(f) and "was aborted" not in str(f):
            return f
    return failures[0]
