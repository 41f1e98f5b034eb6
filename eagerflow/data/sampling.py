"""``sample_from_datasets`` and ``choose_from_datasets``: elements drawn from several datasets.

Example:
    >>> from eagerflow.data import Dataset
    >>> a, b = Dataset.from_tensor_slices([0, 0]), Dataset.from_tensor_slices([1, 1])
    >>> [int(x) for x in Dataset.choose_from_datasets([a, b], Dataset.from_tensor_slices(
    ...     [1, 0, 1]))]
    [1, 0, 1]
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.data import iterator_state, structure
from eagerflow.data.dataset import Dataset
from eagerflow.data.iterator_state import StatefulIterator

__all__ = ["ChooseDataset", "SampleDataset"]


def _check_datasets(datasets, where):
    datasets = list(datasets)
    if not datasets or not all(isinstance(x, Dataset) for x in datasets):
        raise TypeError("%s needs a non-empty list of datasets." % where)
    first = datasets[0].element_spec
    for other in datasets[1:]:
        structure.relax_specs(first, other.element_spec, where)
    return datasets


class ChooseDataset(Dataset):
    """Element ``i`` comes from ``datasets[choice[i]]``."""

    def __init__(self, datasets, choice_dataset, stop_on_empty_dataset=True):
        self._datasets = _check_datasets(datasets, "choose_from_datasets")
        if not isinstance(choice_dataset, Dataset):
            raise TypeError("choose_from_datasets: choice_dataset must be a Dataset of int64 "
                            "scalars.")
        super().__init__(tuple(self._datasets) + (choice_dataset,))
        self._stop = bool(stop_on_empty_dataset)

    def _compute_spec(self):
        spec = self._datasets[0].element_spec
        for other in self._datasets[1:]:
            spec = structure.relax_specs(spec, other.element_spec, "choose_from_datasets")
        return spec

    def _elements(self):
        return _ChooseIterator(self)


class SampleDataset(Dataset):
    """Each element comes from a dataset drawn with the given probabilities."""

    def __init__(self, datasets, weights, seed, stop_on_empty_dataset):
        self._datasets = _check_datasets(datasets, "sample_from_datasets")
        super().__init__(tuple(self._datasets))
        n = len(self._datasets)
        w = np.full(n, 1.0 / n) if weights is None else np.asarray(
            weights.numpy() if hasattr(weights, "numpy") else weights, np.float64)
        if w.shape != (n,) or np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
            raise errors.InvalidArgumentError(
                None, "sample_from_datasets", "sample_from_datasets: weights must be %d "
                "non-negative numbers with a positive sum, got %s." % (n, w.tolist()))
        self._weights = w / w.sum()
        self._seed = seed
        self._stop = bool(stop_on_empty_dataset)

    _compute_spec = ChooseDataset._compute_spec

    def _elements(self):
        return _SampleIterator(self)


class _InputsIterator(StatefulIterator):
    """Reads several input passes; saves each, and which of them have ended."""

    __slots__ = ("_dataset", "_its", "_done", "_stopped")

    def __init__(self, dataset, inputs):
        self._dataset = dataset
        self._its = [d._elements() for d in inputs]
        self._done = [False] * len(inputs)
        self._stopped = False

    def close(self):
        for it in self._its:
            it.close()

    def _save_fields(self, writer):
        pass

    def _restore_fields(self, reader):
        pass

    def save(self, writer):
        writer.ints("done", self._done + [self._stopped])
        self._save_fields(writer)
        for i, (it, d) in enumerate(zip(self._its, self._dataset._inputs)):
            writer.save_input("[%d]" % i, it, d)

    def restore(self, reader):
        flags = [bool(v) for v in reader.ints("done", len(self._its) + 1).tolist()]
        self._done, self._stopped = flags[:-1], flags[-1]
        self._restore_fields(reader)
        for i, (it, d) in enumerate(zip(self._its, self._dataset._inputs)):
            reader.restore_input("[%d]" % i, it, d)


class _ChooseIterator(_InputsIterator):
    __slots__ = ()
    _op = "Choose"

    def __init__(self, dataset):
        super().__init__(dataset, dataset._inputs)

    def __next__(self):
        its, done = self._its, self._done
        n = len(its) - 1  # the last input is the choices
        while not self._stopped:
            choice = next(its[-1], None)
            if choice is None:
                self._stopped = True
                break
            k = int(choice)
            if not 0 <= k < n:
                raise errors.InvalidArgumentError(
                    None, "choose_from_datasets", "choose_from_datasets: choice %d is out "
                    "of range for %d datasets." % (k, n))
            if done[k]:
                continue
            item = next(its[k], None)
            if item is None:
                done[k] = True
                if self._dataset._stop or all(done[:n]):
                    self._stopped = True
                    break
                continue
            return item
        raise StopIteration


class _SampleIterator(_InputsIterator):
    __slots__ = ("_rng", "_weights")
    _op = "Sample"

    def __init__(self, dataset):
        super().__init__(dataset, dataset._inputs)
        self._rng = np.random.default_rng(dataset._seed)
        self._weights = dataset._weights.copy()

    def __next__(self):
        w = self._weights
        while not self._stopped and w.sum() > 0:
            k = int(self._rng.choice(len(w), p=w / w.sum()))
            item = next(self._its[k], None)
            if item is None:
                if self._dataset._stop:
                    self._stopped = True
                    break
                w[k] = 0.0
                continue
            return item
        raise StopIteration

    def _save_fields(self, writer):
        writer.rng("rng", self._rng)
        writer.array("weights", self._weights)

    def _restore_fields(self, reader):
        self._rng = reader.rng("rng")
        w = reader.array("weights")
        if w.shape != self._weights.shape or w.dtype != np.float64 or not np.all(
                np.isfinite(w) & (w >= 0)):
            raise iterator_state._not_found(reader.prefix, "bad saved weights")
        self._weights = np.array(w)
