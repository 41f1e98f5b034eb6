"""Transformations that call user functions: map, filter, take_while, flat_map,
interleave and scan."""

from __future__ import annotations

import collections
from contextlib import closing

from eagerflow.data import arguments, functions, prefetching, structure
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
        apply = self._apply
        with closing(self._inputs[0]._elements()) as iterator:
            for element in iterator:
                yield apply(element)

    def _parallel(self, workers, ordered):
        from concurrent import futures

        pool = futures.ThreadPoolExecutor(workers, thread_name_prefix="eagerflow-data-map")
        # Twice the workers in flight keeps every worker busy while the consumer reads.
        window = 2 * workers
        pending = collections.deque()
        try:
            with closing(self._inputs[0]._elements()) as iterator:
                for element in iterator:
                    pending.append(pool.submit(self._apply, element))
                    if len(pending) >= window:
                        yield self._next_done(pending, ordered)
            while pending:
                yield self._next_done(pending, ordered)
        finally:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=False, cancel_futures=True)

    @staticmethod
    def _next_done(pending, ordered):
        if ordered:
            return pending.popleft().result()
        from concurrent import futures

        done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
        # The earliest finished one by input order, so a tie still favours the input order.
        for future in pending:
            if future in done:
                pending.remove(future)
                return future.result()
        raise AssertionError("wait returned no finished future")


class FilterDataset(Dataset):
    """``filter``: the elements for which the predicate is True."""

    def __init__(self, input_dataset, predicate):
        super().__init__((input_dataset,))
        functions.check_callable(predicate, "predicate", "filter")
        self._predicate = predicate

    def _compute_spec(self):
        return self._inputs[0].element_spec

    def _elements(self):
        predicate, call = self._predicate, structure.call_with_element
        with closing(self._inputs[0]._elements()) as iterator:
            for element in iterator:
                if functions.predicate_value(call(predicate, element), "filter"):
                    yield element


class TakeWhileDataset(Dataset):
    """``take_while``: elements up to the first for which the predicate is False."""

    def __init__(self, input_dataset, predicate):
        super().__init__((input_dataset,))
        functions.check_callable(predicate, "predicate", "take_while")
        self._predicate = predicate

    def _compute_spec(self):
        return self._inputs[0].element_spec

    def _elements(self):
        predicate, call = self._predicate, structure.call_with_element
        with closing(self._inputs[0]._elements()) as iterator:
            for element in iterator:
                if not functions.predicate_value(call(predicate, element), "take_while"):
                    return
                yield element


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
        with closing(self._inputs[0]._elements()) as iterator:
            for element in iterator:
                with closing(self._func(element)._elements()) as inner:
                    yield from inner


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
            return prefetching.background(dataset._elements, max(2, self._block),
                                          name="eagerflow-data-interleave")
        return dataset._elements()

    def _elements(self):
        cycle, block = self._cycle, self._block
        slots = [None] * cycle
        index = block_index = num_open = 0
        end_of_input = False
        try:
            with closing(self._inputs[0]._elements()) as inputs:
                while not end_of_input or num_open:
                    current = slots[index]
                    if current is not None:
                        item = next(current, _END)
                        if item is not _END:
                            yield item
                            block_index += 1
                            if block_index == block:
                                block_index, index = 0, (index + 1) % cycle
                            continue
                        current.close()
                        slots[index] = None
                        num_open -= 1
                        block_index, index = 0, (index + 1) % cycle
                    elif not end_of_input:
                        element = next(inputs, _END)
                        if element is _END:
                            end_of_input = True
                        else:
                            slots[index] = self._open(element)
                            num_open += 1
                    else:
                        block_index, index = 0, (index + 1) % cycle
        finally:
            for slot in slots:
                if slot is not None:
                    slot.close()


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
        state = self._initial
        with closing(self._inputs[0]._elements()) as iterator:
            for element in iterator:
                state, output = self._step(state, element)
                yield output

