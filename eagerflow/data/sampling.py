"""``sample_from_datasets`` and ``choose_from_datasets``: elements drawn from several datasets.

Example:
    >>> from eagerflow.data import Dataset
    >>> a, b = Dataset.from_tensor_slices([0, 0]), Dataset.from_tensor_slices([1, 1])
    >>> [int(x) for x in Dataset.choose_from_datasets([a, b], Dataset.from_tensor_slices(
    ...     [1, 0, 1]))]
    [1, 0, 1]
"""

from __future__ import annotations

from contextlib import ExitStack, closing

import numpy as np

from eagerflow import errors
from eagerflow.data import structure
from eagerflow.data.dataset import Dataset

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
        n = len(self._datasets)
        with ExitStack() as stack:
            its = [stack.enter_context(closing(x._elements())) for x in self._datasets]
            done = [False] * n
            for choice in self._inputs[-1]._elements():
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
                    if self._stop or all(done):
                        return
                    continue
                yield item


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
        rng = np.random.default_rng(self._seed)
        w = self._weights.copy()
        with ExitStack() as stack:
            its = [stack.enter_context(closing(x._elements())) for x in self._datasets]
            while w.sum() > 0:
                k = int(rng.choice(len(w), p=w / w.sum()))
                item = next(its[k], None)
                if item is None:
                    if self._stop:
                        return
                    w[k] = 0.0
                    continue
                yield item
