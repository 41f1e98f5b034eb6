"""``tf.data.experimental``: cardinality constants and helpers, AUTOTUNE, option enums.

Example:
    >>> from eagerflow.data import Dataset, experimental
    >>> int(experimental.cardinality(Dataset.range(4).repeat()))
    -1
"""

from __future__ import annotations

from eagerflow.data.arguments import AUTOTUNE
from eagerflow.data.arguments import INFINITE as INFINITE_CARDINALITY
from eagerflow.data.arguments import UNKNOWN as UNKNOWN_CARDINALITY
from eagerflow.data.options import (  # noqa: F401
    AutoShardPolicy, AutotuneOptions, DistributeOptions, ExternalStatePolicy,
    OptimizationOptions, ThreadingOptions,
)

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "assert_cardinality", "Counter", "from_list", "AutoShardPolicy",
           "ExternalStatePolicy", "AutotuneOptions", "DistributeOptions",
           "OptimizationOptions", "ThreadingOptions"]


def cardinality(dataset):
    """``dataset.cardinality()``: a scalar int64 tensor (-1 infinite, -2 unknown).

    Example:
        >>> from eagerflow.data import Dataset, experimental
        >>> int(experimental.cardinality(Dataset.range(4)))
        4
    """
    return dataset.cardinality()


def assert_cardinality(expected_cardinality):
    """A transformation (for ``Dataset.apply``) that declares and checks the cardinality.

    The result reports ``expected_cardinality``; iterating raises FailedPreconditionError
    if the input turns out to have another number of elements.

    Example:
        >>> from eagerflow.data import Dataset, experimental
        >>> ds = Dataset.range(6).filter(lambda x: x < 3)
        >>> len(ds.apply(experimental.assert_cardinality(3)))
        3
    """
    from eagerflow.data.selection import AssertCardinalityDataset

    return lambda dataset: AssertCardinalityDataset(dataset, expected_cardinality)


def Counter(start=0, step=1, dtype=None):  # noqa: N802 - TF's name
    """An infinite dataset counting ``start, start + step, ...`` (int64 by default).

    Example:
        >>> from eagerflow.data import experimental
        >>> [int(x) for x in experimental.Counter(5, 2).take(3)]
        [5, 7, 9]
    """
    from eagerflow import dtypes
    from eagerflow.data.sources import CounterDataset

    return CounterDataset(start, step, dtypes.int64 if dtype is None else dtype)


def from_list(elements, name=None):
    """A dataset of the given elements (each a tensor or nested structure of them).

    Unlike ``from_tensor_slices``, the elements need not have the same shape, only the
    same structure and dtypes.

    Example:
        >>> from eagerflow.data import experimental
        >>> [x.numpy().tolist() for x in experimental.from_list([[1], [2, 3]])]
        [[1], [2, 3]]
    """
    from eagerflow.data.sources import ListDataset

    return ListDataset(elements)
