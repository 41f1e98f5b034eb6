"""``tf.data.experimental``: cardinality constants and helpers, AUTOTUNE, option enums.

Example:
    >>> from eagerflow.data import Dataset, experimental
    >>> int(experimental.cardinality(Dataset.range(4).repeat()))
    -1
"""

from __future__ import annotations

from eagerflow.data.arguments import AUTOTUNE
from eagerflow.data.file_sources import CsvDataset  # noqa: F401
from eagerflow.data.arguments import INFINITE as INFINITE_CARDINALITY
from eagerflow.data.arguments import UNKNOWN as UNKNOWN_CARDINALITY
from eagerflow.data.options import (  # noqa: F401
    AutoShardPolicy, AutotuneOptions, DistributeOptions, ExternalStatePolicy,
    OptimizationOptions, ThreadingOptions,
)

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "assert_cardinality", "Counter", "from_list", "AutoShardPolicy",
           "ExternalStatePolicy", "AutotuneOptions", "DistributeOptions",
           "OptimizationOptions", "ThreadingOptions", "CsvDataset", "make_csv_dataset",
           "sample_from_datasets", "choose_from_datasets", "dense_to_ragged_batch"]


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


def dense_to_ragged_batch(batch_size, drop_remainder=False, row_splits_dtype=None):
    """A transformation (for ``Dataset.apply``): ``dataset.ragged_batch(...)``.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.data import Dataset, experimental
        >>> ds = Dataset.range(3).map(lambda x: ef.range(x))
        >>> next(iter(ds.apply(experimental.dense_to_ragged_batch(3)))).to_list()
        [[], [0], [0, 1]]
    """
    return lambda dataset: dataset.ragged_batch(batch_size, drop_remainder, row_splits_dtype)


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


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False):
    """``Dataset.sample_from_datasets`` (TF's older name)."""
    from eagerflow.data.dataset import Dataset

    return Dataset.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset)


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
    """``Dataset.choose_from_datasets`` (TF's older name)."""
    from eagerflow.data.dataset import Dataset

    return Dataset.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)


def _infer_type(values):
    """TF's column type inference: int32, then int64, then float32, else string."""
    kind = "int32"
    for v in values:
        if v == "":
            continue
        try:
            n = int(v)
            if kind == "int32" and not -2**31 <= n < 2**31:
                kind = "int64"
            continue
        except ValueError:
            pass
        try:
            float(v)
            if kind in ("int32", "int64"):
                kind = "float32"
        except ValueError:
            return "string"
    return kind


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                     label_name=None, select_columns=None, field_delim=",",
                     use_quote_delim=True, na_value="", header=True, num_epochs=None,
                     shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False,
                     num_rows_for_inference=100, compression_type=None, ignore_errors=False):
    """Batches of ``(features dict, label)`` from CSV files, as TF's ``make_csv_dataset``.

    Column names come from the header (or ``column_names``); column types are inferred
    from the first ``num_rows_for_inference`` rows unless ``column_defaults`` gives them.
    As in TF, ``num_epochs=None`` repeats forever and rows are shuffled by default.

    Example:
        >>> import os, tempfile
        >>> from eagerflow.data import experimental
        >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
        >>> _ = open(p, "w").write("a,b,y\\n1,x,0\\n2,z,1\\n")
        >>> ds = experimental.make_csv_dataset(p, 2, label_name="y", num_epochs=1,
        ...                                    shuffle=False)
        >>> features, label = next(iter(ds))
        >>> features["a"].numpy().tolist(), label.numpy().tolist()
        ([1, 2], [0, 1])
    """
    import csv
    import io


    from eagerflow import dtypes, errors
    from eagerflow.io import gfile

    files = gfile.glob(file_pattern) if isinstance(file_pattern, str) else list(file_pattern)
    if not files:
        raise errors.InvalidArgumentError(
            None, "make_csv_dataset", "make_csv_dataset: no files match %r." % (file_pattern,))
    with open(files[0], "r", encoding="utf-8", newline="") as f:
        head = [row for _, row in zip(range(num_rows_for_inference + 1),
                                      csv.reader(io.StringIO(f.read(1 << 20)),
                                                 delimiter=field_delim))]
    if column_names is None:
        if not header:
            raise errors.InvalidArgumentError(
                None, "make_csv_dataset", "make_csv_dataset: give column_names when the files "
                "have no header.")
        column_names = head[0]
    rows = head[1:] if header else head
    names = list(column_names)
    if select_columns is not None:
        keep = [names.index(c) if isinstance(c, str) else int(c) for c in select_columns]
    else:
        keep = list(range(len(names)))
    if column_defaults is None:
        # Missing fields take 0 or "" (TF makes inferred columns required; a hole in one
        # row should not stop a pipeline).
        defaults = []
        for c in keep:
            kind = _infer_type([r[c] for r in rows if c < len(r)])
            defaults.append([""] if kind == "string" else
                            [dtypes.as_dtype(kind).as_numpy_dtype(0)])
    else:
        defaults = list(column_defaults)
    ds = CsvDataset(files, defaults, compression_type=compression_type, header=header,
                    field_delim=field_delim, use_quote_delim=use_quote_delim,
                    na_value=na_value, select_cols=keep if select_columns is not None else None)
    kept_names = [names[c] for c in keep]
    if label_name is not None and label_name not in kept_names:
        raise errors.InvalidArgumentError(
            None, "make_csv_dataset", "make_csv_dataset: label_name %r is not a column (%s)."
            % (label_name, ", ".join(kept_names)))

    def to_dict(*cols):
        features = dict(zip(kept_names, cols))
        if label_name is None:
            return features
        label = features.pop(label_name)
        return features, label

    ds = ds.map(to_dict)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    ds = ds.batch(batch_size)
    return ds.prefetch(prefetch_buffer_size or AUTOTUNE)
