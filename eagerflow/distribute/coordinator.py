"""ClusterCoordinator: scheduling step functions on the workers of a parameter-server job
(TF 2's ``tf.distribute.experimental.coordinator.ClusterCoordinator``).

``schedule(fn, args)`` queues a closure and returns a :class:`RemoteValue` at once; one
thread per worker takes closures from the queue and runs each as one step of the traced
``fn`` across the cluster: its ops on that worker, its variable reads and updates on the ps
tasks. Workers never wait for each other (asynchronous training).

Failures follow TF's model:

* A worker that dies (its calls fail as unavailable) gets its running closure put back at
  the front of the queue for another worker: a closure may run more than once, and every
  scheduled closure still completes. The dead worker's thread polls it and, when a task
  answers at its address again, registers its graphs anew and takes closures again.
* A ps task that dies fails the closures that needed it with ``UnavailableError`` naming
  the task; ``join``/``schedule``/``fetch`` raise it. Restart the job from a checkpoint.
* A closure whose function raises (while tracing here, or an op on a task) fails; the
  error, naming the worker, is raised by ``fetch`` of its RemoteValue and by the next
  ``join`` or ``schedule``, and the closures still queued are cancelled.

Data: ``create_per_worker_dataset`` builds one dataset per worker here, in the coordinator;
each step's batch is taken from the iterator of the worker that runs it and sent with the
step's arguments.

Example:
    >>> from eagerflow.distribute import coordinator
    >>> rv = coordinator.RemoteValue()
    >>> rv._set(3)
    >>> rv.fetch()
    3
"""

from __future__ import annotations

import collections
import logging
import threading
import time



from eagerflow import errors, nest
from eagerflow.function import task_partition

__all__ = ["ClusterCoordinator", "RemoteValue", "PerWorkerValues"]

_log = logging.getLogger("eagerflow")
# How often a dead worker is asked whether it is back.
WORKER_POLL_S = 0.5


class RemoteValue:
    """The result of a scheduled closure, available once it has run."""

    def __init__(self):
        self._done = threading.Event()
        self._value = None
        self._error = None

    def _set(self, value):
        self._value = value
        self._done.set()

    def _set_error(self, error):
        self._error = error
        self._done.set()

    def _wait(self, timeout=None):
        if not self._done.wait(timeout):
            raise errors.DeadlineExceededError(
                None, "RemoteValue", "The closure did not finish within %gs." % timeout)
        if self._error is not None:
            raise self._error

    def get(self):
        """Waits for the closure; returns its result (tensors), or raises its error."""
        self._wait()
        return self._value

    def fetch(self):
        """Waits for the closure; returns its result as numpy values, or raises its error."""
        self._wait()
        return nest.map_structure(
            lambda v: v.numpy() if hasattr(v, "numpy") else v, self._value)


class PerWorkerValues:
    """One value per worker; a closure given it as an argument receives its worker's."""

    def __init__(self, values):
        self._values = tuple(values)

    def __repr__(self):
        return "PerWorkerValues(%r)" % (self._values,)


class PerWorkerIterator(PerWorkerValues):
    """One iterator per worker (``iter`` of a per-worker dataset): pass it to a scheduled
    function, which calls ``next`` on it to take its worker's next batch."""

    def __iter__(self):
        return self

    def __next__(self):
        raise errors.FailedPreconditionError(
            None, "PerWorkerIterator", "A per-worker iterator is read inside a scheduled "
            "function: pass it to coordinator.schedule(fn, args=(iterator,)) and call "
            "next(iterator) in fn.")


class _OneBatch:
    """An iterator standing for a worker's iterator inside one step: ``next`` returns the
    batch taken for this step (its tensors are the traced function's inputs)."""

    _nest_composite = True

    def __init__(self, batch):
        self._batch = batch

    def _composite_components(self):
        return nest.flatten(self._batch)

    def _from_components(self, components):
        return _OneBatch(nest.pack_sequence_as(self._batch, list(components)))

    def __iter__(self):
        return self

    def __next__(self):
        return self._batch

    def get_next(self):
        return self._batch


class _WorkerIterator:
    """A worker's iterator over its dataset (kept in the coordinator)."""

    def __init__(self, dataset, worker):
        self._iterator = iter(dataset)
        self._worker = worker
        self._lock = threading.Lock()

    def take(self):
        with self._lock:
            try:
                return next(self._iterator)
            except StopIteration:
                raise errors.OutOfRangeError(
                    None, "IteratorGetNext", "The dataset of worker %d is exhausted: repeat "
                    "it (dataset.repeat()) or schedule fewer steps." % self._worker) from None


class PerWorkerDataset:
    """One dataset per worker (``create_per_worker_dataset``); ``iter`` gives one iterator
    per worker."""

    def __init__(self, datasets):
        self._datasets = list(datasets)

    def __iter__(self):
        return PerWorkerIterator([_WorkerIterator(d, k) for k, d in enumerate(self._datasets)])


class _Closure:
    def __init__(self, fn, args, kwargs, number):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.number = number
        self.value = RemoteValue()
        self.attempts = 0


class _WorkerFailed(Exception):
    """The worker running a closure is gone (the closure goes back in the queue)."""


class _Worker:
    def __init__(self, coordinator, index):
        self.coordinator = coordinator
        self.index = index
        self.task = task_partition.task_name("worker", index)
        self.alive = True
        self._executors = {}  # id(concrete) -> (concrete, ClusterExecutor)
        self.thread = threading.Thread(target=self._loop, daemon=True,
                                       name="eagerflow-coordinator-worker-%d" % index)
        self.thread.start()

    def executor(self, concrete):
        from eagerflow.distribute.cluster import ClusterExecutor
        from eagerflow.function import passes

        found = self._executors.get(id(concrete))
        if found is None or found[0] is not concrete:
            executor = ClusterExecutor(passes.optimize(concrete.graph), self.task,
                                       runtime=self.coordinator._runtime)
            found = self._executors[id(concrete)] = (concrete, executor)
        return found[1]

    def _loop(self):
        coordinator = self.coordinator
        while True:
            closure = coordinator._take(self)
            if closure is None:
                return
            try:
                closure.value._set(self._run(closure))
            except _WorkerFailed as gone:
                _log.warning("Worker %s failed while running closure %d (%s); the closure "
                             "goes back in the queue.", self.task, closure.number, gone)
                coordinator._requeue(closure)
                self._wait_until_back()
                continue
            except Exception as exc:  # noqa: BLE001 - reported through fetch/join
                coordinator._failed(closure, _named(exc, self.task, closure.number))
                continue
            coordinator._finished(closure)

    def _run(self, closure):
        coordinator = self.coordinator
        closure.attempts += 1
        args = _resolve(closure.args, self.index)
        kwargs = _resolve(closure.kwargs, self.index)
        with coordinator.strategy.scope():
            concrete, flat = closure.fn._concrete_for_call(args, kwargs)
        executor = self.executor(concrete)
        try:
            arrays = executor.run([t._value for t in flat],
                                  [c._value for _, c in concrete.graph.captures])
        except errors.UnavailableError as exc:
            if getattr(exc, "task", None) == self.task:
                raise _WorkerFailed(str(exc)) from None
            raise
        return concrete._pack(concrete._wrap(arrays, flat, executor))

    def _wait_until_back(self):
        self.alive = False
        client = self.coordinator._runtime.client(self.task)
        while not self.coordinator._closed:
            try:
                client.status(timeout=WORKER_POLL_S * 2)
                break
            except errors.OpError:
                time.sleep(WORKER_POLL_S)
        # A task that answers again is a new process: its graphs are registered anew.
        self._executors.clear()
        self.alive = True
        _log.warning("Worker %s is back; it takes closures again.", self.task)


def _resolve(structure, worker):
    """A closure's arguments as worker ``worker`` runs them."""
    if isinstance(structure, PerWorkerValues):
        return _resolve(structure._values[worker], worker)
    if isinstance(structure, _WorkerIterator):
        return _OneBatch(structure.take())
    if isinstance(structure, RemoteValue):
        return structure.get()
    if isinstance(structure, tuple) and not hasattr(structure, "_fields"):
        return tuple(_resolve(s, worker) for s in structure)
    if isinstance(structure, list):
        return [_resolve(s, worker) for s in structure]
    if isinstance(structure, dict):
        return {k: _resolve(v, worker) for k, v in structure.items()}
    return structure


def _named(exc, task, number):
    """``exc`` with the worker and the closure named in its message (same class)."""
    message = "Closure %d failed on %s: %s: %s" % (number, task, type(exc).__name__, exc)
    if isinstance(exc, errors.OpError):
        error = type(exc)(None, exc.op, message)
    else:
        try:
            error = type(exc)(message)
        except Exception:  # noqa: BLE001 - an exception class with another signature
            error = errors.UnknownError(None, None, message)
    error.task = getattr(exc, "task", task)
    error.worker = task
    error.__cause__ = exc
    return error


class ClusterCoordinator:
    """Schedules functions on the workers of a ParameterServerStrategy.

    Args:
        strategy: The ParameterServerStrategy.

    Example:
        >>> import eagerflow as ef
        >>> ef.distribute.experimental.coordinator.ClusterCoordinator.__name__
        'ClusterCoordinator'
    """

    def __init__(self, strategy):
        from eagerflow.distribute.parameter_server_strategy import ParameterServerStrategy

        if not isinstance(strategy, ParameterServerStrategy):
            raise errors.InvalidArgumentError(
                None, "ClusterCoordinator", "ClusterCoordinator needs a "
                "ParameterServerStrategy, got %s." % type(strategy).__name__)
        self.strategy = strategy
        strategy._coordinator = self
        self._runtime = strategy.extended._runtime
        self._cond = threading.Condition()
        self._queue = collections.deque()
        self._running = 0
        self._error = None
        self._closed = False
        self._numbers = 0
        self.requeued = 0  # closures put back in the queue after their worker failed
        self._workers = [_Worker(self, i) for i in
                         range(len(strategy.extended._worker_tasks))]

    @property
    def num_workers(self):
        return len(self._workers)

    # -- scheduling -----------------------------------------------------------------------
    def schedule(self, fn, args=None, kwargs=None):
        """Queues ``fn(*args, **kwargs)`` to run on some worker; returns a RemoteValue.

        ``fn`` should be an ``ef.function`` (a plain callable is traced as one).
        ``PerWorkerValues`` arguments (and per-worker iterators) give each worker its own.

        Raises:
            The error of an earlier closure that failed (raised once, then cleared).
        """
        from eagerflow.function.function import Function, function

        if not isinstance(fn, Function):
            fn = function(fn)
        with self._cond:
            self._raise_error()
            self._numbers += 1
            closure = _Closure(fn, tuple(args or ()), dict(kwargs or {}), self._numbers)
            self._queue.append(closure)
            self._cond.notify_all()
        return closure.value

    def join(self):
        """Waits until every scheduled closure has finished.

        Raises:
            The first error of a closure since the last join (the remaining closures were
            cancelled), naming the worker.
        """
        with self._cond:
            while self._queue or self._running:
                self._cond.wait(0.5)
            self._raise_error()

    def done(self):
        """True when no closure is queued or running (raises a pending error)."""
        with self._cond:
            self._raise_error()
            return not self._queue and not self._running

    def fetch(self, val):
        """Waits for RemoteValues (any structure of them) and returns their numpy values."""
        return nest.map_structure(
            lambda v: v.fetch() if isinstance(v, RemoteValue) else v, val)

    def create_per_worker_dataset(self, dataset_fn):
        """One dataset per worker: ``dataset_fn()`` called once per worker (or the same
        dataset for every worker when a Dataset is given); ``iter()`` of the result gives
        each worker its own iterator."""
        if hasattr(dataset_fn, "__iter__") and not callable(dataset_fn):
            return PerWorkerDataset([dataset_fn] * self.num_workers)
        fn = getattr(dataset_fn, "python_function", dataset_fn)
        return PerWorkerDataset([fn() for _ in range(self.num_workers)])

    # -- the queue ------------------------------------------------------------------------
    def _raise_error(self):
        error = self._error
        if error is not None:
            self._error = None
            raise error

    def _take(self, worker):
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            self._running += 1
            return self._queue.popleft()

    def _requeue(self, closure):
        with self._cond:
            self.requeued += 1
            self._running -= 1
            self._queue.appendleft(closure)
            self._cond.notify_all()

    def _finished(self, closure):
        with self._cond:
            self._running -= 1
            self._cond.notify_all()

    def _failed(self, closure, error):
        closure.value._set_error(error)
        with self._cond:
            self._running -= 1
            if self._error is None:
                self._error = error
            cancelled = list(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        for other in cancelled:
            other.value._set_error(errors.CancelledError(
                None, None, "Closure %d was cancelled because closure %d failed: %s" % (
                    other.number, closure.number, error)))

    def close(self):
        """Stops the worker threads (queued closures are dropped)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()


