"""User functions in pipelines: calling them, checking predicates, inferring output specs.

TF traces a ``map`` function once, on symbolic inputs, to learn its output structure,
dtypes and shapes. eagerflow runs the function eagerly on every element and learns the
output spec only when someone asks for ``element_spec``, in the first of these ways that
works:

1. ``map``/``scan`` functions are traced on symbolic inputs by ``eagerflow.function``'s
   tracer, as TF does (dims that depend on values come out unknown);
2. otherwise the function is called on two sets of example inputs built from the input
   spec: zeros with every unknown dimension 1, then ones with every unknown dimension 2;
   output dimensions that differ between the two are unknown (``None``);
3. if that fails too (a function that needs real values), the spec is taken from the first
   real element, with every dimension marked unknown.

Like TF's tracing, this runs the function's Python code a few times beyond the element
count.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.data import ragged_elements, sparse_elements, structure
from eagerflow.ragged import RaggedTensorSpec
from eagerflow.sparse.sparse_tensor import SparseTensorSpec
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape, TensorSpec

__all__ = ["check_callable", "infer_spec", "predicate_value"]


def check_callable(fn, name, method):
    """Raises TypeError unless ``fn`` is callable (naming the argument and method)."""
    if not callable(fn):
        raise TypeError("Dataset.%s: `%s` must be callable, got %r (%s)."
                        % (method, name, fn, type(fn).__name__))


def predicate_value(result, method):
    """The Python bool of a predicate's result; it must be a scalar boolean (as in TF)."""
    if isinstance(result, Tensor):
        if result.dtype is not dtypes_lib.bool or result.shape.rank != 0:
            raise errors.InvalidArgumentError(
                None, method, "Dataset.%s: `predicate` must return a scalar tf.bool tensor, "
                "got %s with shape %s. Reduce it with tf.reduce_all/reduce_any or compare "
                "to get a scalar bool." % (method, result.dtype.name, result.shape))
        return bool(result)
    if isinstance(result, (bool, np.bool_)):
        return bool(result)
    raise errors.InvalidArgumentError(
        None, method, "Dataset.%s: `predicate` must return a scalar tf.bool tensor, got %r "
        "(%s)." % (method, result, type(result).__name__))


def _probe(spec, unknown_size, fill):
    """Example inputs for ``spec``: filled tensors; a dataset component gets a dataset of
    ``unknown_size`` example elements."""
    def leaf(s):
        if isinstance(s, structure.DatasetSpec):
            from eagerflow.data.windowing import ElementsDataset

            inner = [_probe(s.element_spec, unknown_size, fill)] * unknown_size
            return ElementsDataset(inner, s.element_spec)
        if isinstance(s, RaggedTensorSpec):
            return ragged_elements.probe(s, unknown_size, fill)
        if isinstance(s, SparseTensorSpec):
            return sparse_elements.probe(s, unknown_size, fill)
        dims = [unknown_size if d is None else d for d in s.shape.as_list()]
        if s.dtype is dtypes_lib.string:  # strings, not the numbers 0 and 1 in an object array
            array = np.empty(dims, object)
            array[...] = b"1" * fill
            return structure.wrap_array(array)
        return structure.wrap_array(np.full(dims, fill, s.dtype.np_dtype))

    return structure.map_structure(leaf, spec)


def _probeable(spec):
    """True when every tensor in ``spec`` (datasets' elements included) has a known rank."""
    for s in structure.flatten(spec):
        if isinstance(s, structure.DatasetSpec):
            if not _probeable(s.element_spec):
                return False
        elif s.shape.rank is None:
            return False
    return True


def _traced_spec(apply, in_spec):
    """The output spec from tracing ``apply`` on symbolic inputs, or None if that fails."""
    try:
        from eagerflow.function.graph import Graph
        from eagerflow.function.symbolic import SymbolicTensor
        from eagerflow.function.tracer import Tracer, tracing
        from eagerflow.ops.registry import AbstractValue
    except ImportError:
        return None
    try:
        graph = Graph("dataset_function")
        leaves = []
        for i, s in enumerate(structure.flatten(in_spec)):
            node = graph.add_placeholder(AbstractValue(s.shape.as_list(), s.dtype), "arg%d" % i)
            leaves.append(SymbolicTensor(graph, node, 0))
        with tracing(Tracer(graph)):
            result = apply(structure.pack(in_spec, leaves))
        return structure.spec_of(result)
    except Exception:  # noqa: BLE001 - not traceable (yet): fall back to example inputs
        return None


def _all_unknown(spec):
    def leaf(s):
        if isinstance(s, structure.DatasetSpec):
            return structure.DatasetSpec(_all_unknown(s.element_spec))
        if isinstance(s, RaggedTensorSpec):
            return RaggedTensorSpec(TensorShape(None) if s.shape.rank is None
                                    else [None] * s.shape.rank, s.dtype, s.ragged_rank)
        if isinstance(s, SparseTensorSpec):
            return SparseTensorSpec(TensorShape(None) if s.shape.rank is None
                                    else [None] * s.shape.rank, s.dtype)
        return TensorSpec(TensorShape(None) if s.shape.rank is None
                          else [None] * s.shape.rank, s.dtype)

    return structure.map_structure(leaf, spec)


def infer_spec(apply, input_dataset, spec_of_result, method, traceable=False):
    """The element spec of ``apply(element)`` for the elements of ``input_dataset``.

    Args:
        apply: element structure -> the function's (normalized) result.
        input_dataset: The dataset whose elements feed ``apply``.
        spec_of_result: result -> its spec structure (``structure.spec_of`` for ``map``, the
            returned dataset's ``element_spec`` for ``flat_map``).
        method: The Dataset method name, for error messages.
        traceable: Whether the result is made of tensors, so tracing can find its spec.

    Returns:
        A nested TensorSpec structure.

    Raises:
        ValueError: If no spec can be inferred (the function fails on example inputs and
            the input is empty).
    """
    in_spec = input_dataset.element_spec
    probe_error = None
    if _probeable(in_spec):
        if traceable and all(isinstance(s, TensorSpec) for s in structure.flatten(in_spec)):
            spec = _traced_spec(apply, in_spec)
            if spec is not None:
                return spec
        try:
            first = spec_of_result(apply(_probe(in_spec, 1, 0)))
            second = spec_of_result(apply(_probe(in_spec, 2, 1)))
            return structure.relax_specs(first, second, "Dataset.%s" % method)
        except Exception as exc:  # noqa: BLE001 - any failure on examples: try a real element
            probe_error = exc
    iterator = input_dataset._elements()
    try:
        element = next(iterator, None)
    finally:
        iterator.close()
    if element is None:
        raise ValueError(
            "Dataset.%s: cannot infer the element_spec: the function failed on example "
            "inputs (%s: %s) and the input dataset is empty."
            % (method, type(probe_error).__name__, probe_error)) from probe_error
    return _all_unknown(spec_of_result(apply(element)))
