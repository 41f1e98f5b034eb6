"""The ways a Dataset starts (``Dataset.from_tensor_slices``, ``range``, ``zip``, ...):
static methods of :class:`eagerflow.data.Dataset`, which inherits them from this class.

The methods import their implementation modules locally (why: see
:mod:`eagerflow.data.dataset`).

Example:
    >>> from eagerflow.data import Dataset
    >>> [int(x) for x in Dataset.range(3)]
    [0, 1, 2]
"""

from __future__ import annotations

__all__ = ["SourceMethods"]


class SourceMethods:
    """The source constructors of :class:`eagerflow.data.Dataset` (see the module docstring)."""

    __slots__ = ()

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """A dataset of the slices of ``tensors`` along their first dimension.

        Args:
            tensors: A tensor, array or (nested) tuple/dict of them; a Python list is one
                tensor. Every component must have the same first dimension.
            name: Unused (TF compatibility).

        Returns:
            A Dataset with one element per row.

        Raises:
            InvalidArgumentError: If the first dimensions differ or a component is a scalar.

        Example:
            >>> import numpy as np
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.from_tensor_slices({"x": np.arange(6.0).reshape(3, 2),
            ...                                  "y": [0, 1, 2]})
            >>> [int(e["y"]) for e in ds]
            [0, 1, 2]
        """
        from eagerflow.data import sources

        return sources.TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors, name=None):
        """A dataset with a single element, ``tensors``.

        Example:
            >>> from eagerflow.data import Dataset
            >>> Dataset.from_tensors(([1, 2], 3)).element_spec[0].shape
            TensorShape([2])
        """
        from eagerflow.data import sources

        return sources.TensorDataset(tensors)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None):
        """A dataset whose elements a Python generator yields.

        ``generator`` is called (with ``args``, converted to numpy) at the start of every
        pass. Each yielded value is converted to ``output_signature``'s dtypes and checked
        against its structure and shapes.

        Args:
            generator: A callable returning an iterable.
            output_types: (Deprecated in TF) nested dtypes, used with ``output_shapes``.
            output_shapes: (Deprecated in TF) nested shapes; unknown if omitted.
            args: A tuple of arguments for ``generator``.
            output_signature: A nested structure of ``TensorSpec``.
            name: Unused (TF compatibility).

        Returns:
            A Dataset of unknown cardinality.

        Raises:
            TypeError: If ``generator`` is not callable or no signature is given; while
                iterating, if a yielded value does not match the signature.

        Example:
            >>> import eagerflow as ef
            >>> from eagerflow.data import Dataset
            >>> def gen():
            ...     for i in range(3):
            ...         yield i, [1.0] * i
            >>> ds = Dataset.from_generator(gen, output_signature=(
            ...     ef.TensorSpec([], ef.int32), ef.TensorSpec([None], ef.float32)))
            >>> [y.shape.as_list() for x, y in ds]
            [[0], [1], [2]]
        """
        from eagerflow.data import sources

        return sources.GeneratorDataset(generator, output_types, output_shapes, args,
                                        output_signature)

    @staticmethod
    def range(*args, output_type=None, name=None, dtype=None):
        """Integers from ``start`` to ``stop`` by ``step``: ``range(stop)``,
        ``range(start, stop)`` or ``range(start, stop, step)``, as Python's range.

        Args:
            *args: One to three integers.
            output_type: The element dtype (default int64); TF's name for it.
            name: Unused (TF compatibility).
            dtype: Another name for ``output_type``.

        Raises:
            InvalidArgumentError: If ``step`` is 0.
            TypeError: If both ``output_type`` and ``dtype`` are given.

        Example:
            >>> from eagerflow.data import Dataset
            >>> [int(x) for x in Dataset.range(5, 1, -2)]
            [5, 3]
        """
        from eagerflow.data import sources

        if output_type is not None and dtype is not None:
            raise TypeError("Dataset.range: give the element type as `output_type` or "
                            "`dtype`, not both.")
        return sources.RangeDataset(args, dtype if output_type is None else output_type)

    @staticmethod
    def zip(*args, datasets=None, name=None):
        """Zips datasets: element ``i`` is the structure of every dataset's element ``i``.

        Takes the datasets as arguments (``zip(a, b)``) or as one nested structure
        (``zip((a, b))``, ``zip({"x": a, "y": b})``). It stops at the shortest dataset.
        Unlike TF, a list of datasets is accepted and treated as a tuple.

        Example:
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.zip(Dataset.range(3), Dataset.range(10, 20))
            >>> [(int(a), int(b)) for a, b in ds]
            [(0, 10), (1, 11), (2, 12)]
        """
        from eagerflow.data import sources

        if datasets is not None and args:
            raise TypeError("Dataset.zip: pass the datasets either positionally or as "
                            "`datasets=`, not both.")
        if datasets is None:
            if not args:
                raise TypeError("Dataset.zip needs at least one dataset.")
            datasets = args[0] if len(args) == 1 else tuple(args)
        return sources.ZipDataset(datasets)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """Elements drawn at random from ``datasets`` with probabilities ``weights``.

        With ``stop_on_empty_dataset=False`` an exhausted dataset is dropped and sampling
        goes on among the rest (TF's default).

        Example:
            >>> from eagerflow.data import Dataset
            >>> ds = Dataset.sample_from_datasets(
            ...     [Dataset.range(3), Dataset.range(10, 13)], seed=1)
            >>> sorted(int(x) for x in ds)
            [0, 1, 2, 10, 11, 12]
        """
        from eagerflow.data import sampling

        return sampling.SampleDataset(datasets, weights, seed, stop_on_empty_dataset)

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        """Element ``i`` taken from ``datasets[choice_dataset[i]]``.

        Example:
            >>> from eagerflow.data import Dataset
            >>> a, b = Dataset.range(0, 3), Dataset.range(10, 13)
            >>> [int(x) for x in Dataset.choose_from_datasets(
            ...     [a, b], Dataset.from_tensor_slices([0, 1, 1, 0]))]
            [0, 10, 11, 1]
        """
        from eagerflow.data import sampling

        return sampling.ChooseDataset(datasets, choice_dataset, stop_on_empty_dataset)
