"""Transformations that call user functions: map, filter, take_while, flat_map,
interleave and scan."""

from __future__ import annotations

import collections

from eagerflow.data import arguments, functions, iterator_state, prefetching, structure
from eagerflow.data.dataset import Dataset

__all__ = ["MapDataset", "FilterDataset", "TakeWhileDataset", "FlatMapDataset",
           "InterleaveDataset", "ScanDataset"]

_END = object()


class MapDataset(Dataset):
    """``map``: one function call per element, optionally on a thread pool."""

    def __init__(self, input_dataset, map_func, num_parallel_calls, deterministic):
        super().__init__((input_dataset,))
        functions.check_callable(map_func, "map_func", "map")
        self._func = map_func
        self._workers = arguments.parallelism(num_parallel_calls, "num_parallel_calls", "map")
        self._deterministic = None if deterministic is None else arguments.as_bool(
            deterministic, "deterministic", "map")

    def _apply(self, element):
        return structure.normalize_output(structure.call_with_element(self._func, element))

    def _compute_spec(self):
        return functions.infer_spec(self._apply, self._inputs[0], structure.spec_of, "map",
                                    traceable=True)

    def _cardinality(self):
        return self._inputs[0]._cardinality()

    def _elements(self):
        if self._workers is None:
            return self._sequential()
        ordered = self._deterministic
        if ordered is None:
            ordered = self.options().deterministic is not False
        return self._parallel(self._workers, ordered)

    def _sequential(self):
        return _MapIterator(self)

    def _parallel(self, workers, ordered):
        return _ParallelMapIterator(self, workers, ordered)


def _check_function(writer, dataset, func, method):
    """Refuses to save a pass through a stateful user function (see ``iterator_state``)."""
    iterator_state.check_external_state(writer, dataset, func,
                                        dataset._inputs[0].element_spec, method)


class _MapIterator(iterator_state.UnaryIterator):
    __slots__ = ("_apply",)
    _op = "Map"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._apply = dataset._apply

    def __next__(self):
        return self._apply(next(self._input))

    def _save(self, writer):
        _check_function(writer, self._dataset, self._dataset._func, "map")


class _ParallelMapIterator(iterator_state.UnaryIterator):
    """``map`` on a thread pool: calls run ahead of the consumer, results come in order
    (or, when not deterministic, the earliest finished first).

    Saving waits for the calls in flight and stores their results, as TF does.
    """

    __slots__ = ("_workers", "_ordered", "_pool", "_pending", "_ready", "_end")
    _op = "ParallelMap"

    def __init__(self, dataset, workers, ordered):
        super().__init__(dataset)
        self._workers, self._ordered = workers, ordered
        self._pool = None
        self._pending = collections.deque()
        self._ready = collections.deque()  # results restored from a checkpoint come first
        self._end = False

    def __next__(self):
        if self._ready:
            return self._ready.popleft()
        if self._pool is None:
            from concurrent import futures

            self._pool = futures.ThreadPoolExecutor(self._workers,
                                                    thread_name_prefix="eagerflow-data-map")
        # Twice the workers in flight keeps every worker busy while the consumer reads.
        window = 2 * self._workers
        while not self._end and len(self._pending) < window:
            try:
                element = next(self._input)
            except StopIteration:
                self._end = True
                break
            self._pending.append(self._pool.submit(self._dataset._apply, element))
        if not self._pending:
            raise StopIteration
        return self._next_done()

    def _next_done(self):
        pending = self._pending
        if self._ordered:
            return pending.popleft().result()
        from concurrent import futures

        done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
        # The earliest finished one by input order, so a tie still favours the input order.
        for future in pending:
            if future in done:
                pending.remove(future)
                return future.result()
        raise AssertionError("wait returned no finished future")

    def close(self):
        for future in self._pending:
            future.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._input.close()

    def __del__(self):
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _save(self, writer):
        _check_function(writer, self._dataset, self._dataset._func, "map")
        results = list(self._ready)
        # The calls in flight finish first; an error in one is raised here, as it would be
        # when its result is read.
        results += [future.result() for future in self._pending]
        self._ready = collections.deque(results)
        self._pending.clear()
        writer.elements("results", results, "map")
        writer.int("end", self._end)

    def _restore(self, reader):
        self._ready = collections.deque(reader.elements("results", self._dataset.element_spec))
        self._end = bool(reader.int("end"))


class FilterDataset(Dataset):
    """``filter``: the elements for which the predicate is True."""

    def __init__(self, input_dataset, predicate):
        super().__init__((input_dataset,))
        functions.check_callable(predicate, "predicate", "filter")
        self._predicate = predicate

    def _compute_spec(self):
        return self._inputs[0].element_spec

    def _elements(self):
        return _FilterIterator(self)


class _FilterIterator(iterator_state.UnaryIterator):
    __slots__ = ()
    _op = "Filter"

    def __next__(self):
        predicate, call = self._dataset._predicate, structure.call_with_element
        value = functions.predicate_value
        for element in self._input:
            if value(call(predicate, element), "filter"):
                return element
        raise StopIteration

    def _save(self, writer):
        _check_function(writer, self._dataset, self._dataset._predicate, "filter")


class TakeWhileDataset(Dataset):
    """``take_while``: elements up to the first for which the predicate is False."""

    def __init__(self, input_dataset, predicate):
        super().__init__((input_dataset,))
        functions.check_callable(predicate, "predicate", "take_while")
        self._predicate = predicate

    def _compute_spec(self):
        return self._inputs[0].element_spec

    def _elements(self):
        return _TakeWhileIterator(self)


class _TakeWhileIterator(iterator_state.UnaryIterator):
    __slots__ = ("_done",)
    _op = "TakeWhile"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._done = False

    def __next__(self):
        if self._done:
            raise StopIteration
        element = next(self._input)
        if not functions.predicate_value(
                structure.call_with_element(self._dataset._predicate, element), "take_while"):
            self._done = True
            self._input.close()
            raise StopIteration
        return element

    def _save(self, writer):
        _check_function(writer, self._dataset, self._dataset._predicate, "take_while")
        writer.int("done", self._done)

    def _restore(self, reader):
        self._done = bool(reader.int("done"))


class _DatasetFunction:
    """A user function that maps an element to a Dataset (flat_map, interleave)."""

    def __init__(self, func, method):
        functions.check_callable(func, "map_func", method)
        self.func = func
        self.method = method

    def __call__(self, element):
        result = structure.call_with_element(self.func, element)
        if not isinstance(result, Dataset):
            raise TypeError("Dataset.%s: `map_func` must return a Dataset, got %s. Wrap "
                            "tensors with Dataset.from_tensors or from_tensor_slices."
                            % (self.method, type(result).__name__))
        return result


class FlatMapDataset(Dataset):
    """``flat_map``: the concatenation of the datasets ``map_func`` returns."""

    def __init__(self, input_dataset, map_func):
        super().__init__((input_dataset,))
        self._func = _DatasetFunction(map_func, "flat_map")

    def _compute_spec(self):
        return functions.infer_spec(self._func, self._inputs[0], lambda d: d.element_spec,
                                    "flat_map")

    def _elements(self):
        return _FlatMapIterator(self)


class _FlatMapIterator(iterator_state.UnaryIterator):
    """Saves the input element whose dataset is open and that dataset's iterator; restoring
    calls ``map_func`` on the element again to rebuild it (as TF does)."""

    __slots__ = ("_element", "_inner", "_inner_dataset")
    _op = "FlatMap"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._element = self._inner = self._inner_dataset = None

    def __next__(self):
        while True:
            if self._inner is None:
                self._element = next(self._input)
                self._inner_dataset = self._dataset._func(self._element)
                self._inner = self._inner_dataset._elements()
            for item in self._inner:
                return item
            self._inner.close()
            self._element = self._inner = self._inner_dataset = None

    def close(self):
        if self._inner is not None:
            self._inner.close()
        self._input.close()

    def _save(self, writer):
        writer.int("open", self._inner is not None)
        if self._inner is not None:
            writer.elements("element", [self._element], "flat_map")
            writer.save_input("[inner]", self._inner, self._inner_dataset)

    def _restore(self, reader):
        if self._inner is not None:
            self._inner.close()
        self._element = self._inner = self._inner_dataset = None
        if reader.int("open"):
            (self._element,) = reader.elements("element", self._dataset._inputs[0].element_spec)
            self._inner_dataset = self._dataset._func(self._element)
            self._inner = self._inner_dataset._elements()
            reader.restore_input("[inner]", self._inner, self._inner_dataset)


class InterleaveDataset(Dataset):
    """``interleave``: ``block_length`` elements in turn from ``cycle_length`` datasets.

    The order is TF's: a slot that is empty opens the dataset of the next input element
    and is read at once; a dataset that ends frees its slot and the cycle moves on.
    """

    def __init__(self, input_dataset, map_func, cycle_length, block_length,
                 num_parallel_calls):
        super().__init__((input_dataset,))
        self._func = _DatasetFunction(map_func, "interleave")
        self._cycle = arguments.parallelism(
            arguments.AUTOTUNE if cycle_length is None else cycle_length, "cycle_length",
            "interleave")
        self._block = 1 if block_length is None else arguments.positive_int(
            block_length, "block_length", "interleave")
        self._parallel = arguments.parallelism(num_parallel_calls, "num_parallel_calls",
                                               "interleave") is not None

    def _compute_spec(self):
        return functions.infer_spec(self._func, self._inputs[0], lambda d: d.element_spec,
                                    "interleave")

    def _open(self, element):
        dataset = self._func(element)
        if self._parallel:
            # Each open dataset is read ahead by its own thread; the order is unchanged.
            return dataset, prefetching.background(dataset._elements, max(2, self._block),
                                                   name="eagerflow-data-interleave",
                                                   dataset=dataset)
        return dataset, dataset._elements()

    def _elements(self):
        return _InterleaveIterator(self)


class _InterleaveIterator(iterator_state.UnaryIterator):
    """TF's interleave order. Saves, per slot, the input element and its open dataset's
    iterator; restoring calls ``map_func`` on the elements again (as TF does)."""

    __slots__ = ("_slots", "_index", "_block_index", "_num_open", "_end_of_input")
    _op = "Interleave"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._slots = [None] * dataset._cycle  # (element, dataset, iterator) or None
        self._index = self._block_index = self._num_open = 0
        self._end_of_input = False

    def __next__(self):
        cycle, block = self._dataset._cycle, self._dataset._block
        slots = self._slots
        while not self._end_of_input or self._num_open:
            current = slots[self._index]
            if current is not None:
                item = next(current[2], _END)
                if item is not _END:
                    self._block_index += 1
                    if self._block_index == block:
                        self._block_index, self._index = 0, (self._index + 1) % cycle
                    return item
                current[2].close()
                slots[self._index] = None
                self._num_open -= 1
                self._block_index, self._index = 0, (self._index + 1) % cycle
            elif not self._end_of_input:
                element = next(self._input, _END)
                if element is _END:
                    self._end_of_input = True
                else:
                    slots[self._index] = (element,) + self._dataset._open(element)
                    self._num_open += 1
            else:
                self._block_index, self._index = 0, (self._index + 1) % cycle
        raise StopIteration

    def close(self):
        for slot in self._slots:
            if slot is not None:
                slot[2].close()
        self._input.close()

    def _save(self, writer):
        writer.ints("position", (self._index, self._block_index, self._num_open,
                                 self._end_of_input))
        opened = [i for i, slot in enumerate(self._slots) if slot is not None]
        writer.ints("open", opened)
        writer.elements("elements", [self._slots[i][0] for i in opened], "interleave")
        for i in opened:
            writer.save_input("[%d]" % i, self._slots[i][2], self._slots[i][1])

    def _restore(self, reader):
        cycle = self._dataset._cycle
        index, block_index, num_open, end = reader.ints("position", 4).tolist()
        opened = reader.ints("open").tolist()
        if not 0 <= index < cycle or not 0 <= block_index < self._dataset._block or \
                num_open != len(opened) or any(not 0 <= i < cycle for i in opened) or \
                len(set(opened)) != len(opened):
            raise iterator_state._not_found(
                reader.prefix, "the saved cycle does not fit cycle_length %d and "
                "block_length %d" % (cycle, self._dataset._block))
        self._index, self._block_index, self._num_open = index, block_index, num_open
        self._end_of_input = bool(end)
        elements = reader.elements("elements", self._dataset._inputs[0].element_spec)
        for i, element in zip(opened, elements):
            self._slots[i] = (element,) + self._dataset._open(element)
            reader.restore_input("[%d]" % i, self._slots[i][2], self._slots[i][1])


class ScanDataset(Dataset):
    """``scan``: ``(state, output) = scan_func(state, element)``, yielding the outputs."""

    def __init__(self, input_dataset, initial_state, scan_func):
        super().__init__((input_dataset,))
        functions.check_callable(scan_func, "scan_func", "scan")
        self._func = scan_func
        self._initial = structure.to_tensors(initial_state, "initial_state")
        self._state_spec = structure.spec_of(self._initial)

    def _step(self, state, element):
        result = self._func(state, element)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TypeError("Dataset.scan: `scan_func` must return a pair (new_state, "
                            "output_element), got %s." % type(result).__name__)
        new_state = structure.check_state(structure.to_tensors(result[0], "state"),
                                          self._state_spec, "scan")
        return new_state, structure.normalize_output(result[1])

    def _compute_spec(self):
        return functions.infer_spec(lambda e: self._step(self._initial, e)[1], self._inputs[0],
                                    structure.spec_of, "scan", traceable=True)

    def _cardinality(self):
        return self._inputs[0]._cardinality()

    def _elements(self):
        return _ScanIterator(self)


class _ScanIterator(iterator_state.UnaryIterator):
    __slots__ = ("_state",)
    _op = "Scan"

    def __init__(self, dataset):
        super().__init__(dataset)
        self._state = dataset._initial

    def __next__(self):
        self._state, output = self._dataset._step(self._state, next(self._input))
        return output

    def _save(self, writer):
        dataset = self._dataset
        _check_function(writer, dataset, lambda e: dataset._step(dataset._initial, e), "scan")
        writer.elements("state", [self._state], "scan")

    def _restore(self, reader):
        (self._state,) = reader.elements("state", self._dataset._state_spec)

