"""``map_fn``, ``scan``, ``foldl``, ``foldr`` and ``vectorized_map``, as TF.

Each is one ``while_loop`` over the first dimension of ``elems`` that reads elements from
TensorArrays and writes results into TensorArrays, so the same code runs eagerly (a Python
loop), traced (one ``While`` node) and under a tape (gradients flow through the loop).

Example:
    >>> import eagerflow as ef
    >>> ef.map_fn(lambda x: x * x, ef.constant([1, 2, 3])).numpy().tolist()
    [1, 4, 9]
    >>> ef.scan(lambda a, x: a + x, ef.constant([1, 2, 3, 4])).numpy().tolist()
    [1, 3, 6, 10]
    >>> int(ef.foldl(lambda a, x: a * x, ef.constant([1, 2, 3, 4])))
    24
"""

from __future__ import annotations

from eagerflow import dtypes as d
from eagerflow import nest
from eagerflow.function.while_loop import while_loop
from eagerflow.ops.array.tensor_array_ops import TensorArray
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.tensor_shape import TensorSpec

__all__ = ["map_fn", "scan", "foldl", "foldr", "vectorized_map"]


def _elements(elems, api):
    flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("%s(): elems must contain at least one tensor." % api)
    for e in flat:
        if e.shape.rank == 0:
            raise ValueError("%s(): elements in elems must be at least 1-D (the function is "
                             "applied along the first dimension), got a scalar." % api)
    first = flat[0].shape.as_list()[0] if flat[0].shape.rank else None
    for e in flat[1:]:
        other = e.shape.as_list()[0] if e.shape.rank else None
        if first is not None and other is not None and other != first:
            raise ValueError("%s(): all tensors in elems must have the same first dimension, "
                             "got %d and %d." % (api, first, other))
    if first is None:
        from eagerflow.ops.array.shape_ops import shape

        n = shape(flat[0])[0]
    else:
        n = first
    tas = [TensorArray(e.dtype, size=n, element_shape=e.shape[1:]).unstack(e) for e in flat]
    return flat, tas, n


def _spec_dtype(spec):
    if isinstance(spec, TensorSpec) or _is_ragged_spec(spec):
        return spec.dtype
    return d.as_dtype(spec)


def _is_ragged_spec(spec):
    from eagerflow.ragged.ragged_tensor import RaggedTensorSpec

    return isinstance(spec, RaggedTensorSpec)


def _ragged_outputs(signature):
    """For each flat output, its RaggedTensorSpec (fn returns elements of different
    lengths, the result is ragged) or None."""
    if signature is None:
        return None
    specs = [s if _is_ragged_spec(s) else None for s in nest.flatten(signature)]
    for spec in specs:
        if spec is not None and spec.ragged_rank != 0:
            raise NotImplementedError(
                "map_fn(): fn_output_signature %r describes a ragged value per element; "
                "eagerflow's map_fn supports RaggedTensorSpecs with ragged_rank=0 (fn returns "
                "a dense tensor whose first dimension varies)." % (spec,))
    return specs if any(s is not None for s in specs) else None


def _output_dtypes(signature, elems):
    if signature is None:
        return nest.map_structure(lambda e: convert_to_tensor(e).dtype, elems)
    return nest.map_structure(_spec_dtype, signature)


def _check_result(api, result, dtypes):
    try:
        nest.assert_same_structure(result, dtypes, check_types=False)
    except (TypeError, ValueError):
        raise ValueError(
            "%s(): fn returned %r, whose structure differs from the expected output "
            "signature %r; pass fn_output_signature (TensorSpecs or dtypes) describing what "
            "fn returns." % (api, result, dtypes)) from None
    flat = []
    for value, dtype in zip(nest.flatten(result), nest.flatten(dtypes)):
        value = convert_to_tensor(value, dtype=dtype) if not isinstance(value, Tensor) else value
        if value.dtype is not dtype:
            raise TypeError("%s(): fn returned a %s tensor where the output signature says "
                            "%s; pass fn_output_signature to describe fn's output." % (
                                api, value.dtype.name, dtype.name))
        flat.append(value)
    return flat


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None, fn_output_signature=None):
    """Applies ``fn`` to each element of ``elems`` (unstacked on axis 0); stacks the results.

    Args:
        fn: Callable taking one element (the structure of ``elems``).
        elems: A tensor or nested structure of tensors with equal first dimensions.
        dtype: Deprecated alias of ``fn_output_signature``.
        parallel_iterations: Passed to ``while_loop``.
        back_prop: If False, no gradient flows through the loop.
        swap_memory: Accepted for compatibility.
        infer_shape: Accepted for compatibility.
        name: Accepted for compatibility.
        fn_output_signature: The structure of ``fn``'s output as dtypes or TensorSpecs;
            by default the structure and dtypes of ``elems`` (TF's rule).

    Returns:
        The stacked results, in the structure of ``fn``'s output.

    Example:
        >>> import eagerflow as ef
        >>> ef.map_fn(lambda x: ef.reduce_sum(x), ef.ones([3, 2]),
        ...           fn_output_signature=ef.float32).numpy().tolist()
        [2.0, 2.0, 2.0]
    """
    signature = fn_output_signature if fn_output_signature is not None else dtype
    dtypes = _output_dtypes(signature, elems)
    flat_in, in_tas, n = _elements(elems, "map_fn")
    flat_dtypes = nest.flatten(dtypes)
    ragged = _ragged_outputs(signature) or [None] * len(flat_dtypes)
    # A ragged output is an array of elements of different lengths, and one of the lengths.
    out_tas = [TensorArray(dt, size=n, infer_shape=r is None) for dt, r in
               zip(flat_dtypes, ragged)]
    out_tas += [TensorArray(r.row_splits_dtype, size=n) for r in ragged if r is not None]

    def body(i, *outs):
        from eagerflow.ops.array.shape_ops import shape

        element = nest.pack_sequence_as(elems, [ta.read(i) for ta in in_tas])
        values = _check_result("map_fn", fn(element), dtypes)
        written = [ta.write(i, v) for ta, v in zip(outs, values)]
        lengths = iter(outs[len(values):])
        written += [next(lengths).write(i, shape(v, out_type=r.row_splits_dtype)[0])
                    for v, r in zip(values, ragged) if r is not None]
        return (i + 1,) + tuple(written)

    result = while_loop(lambda i, *_: i < n, body, (convert_to_tensor(0),) + tuple(out_tas),
                        parallel_iterations=parallel_iterations or 10, back_prop=back_prop)
    lengths = iter(result[1 + len(flat_dtypes):])
    out = []
    for ta, r in zip(result[1:], ragged):
        if r is None:
            out.append(ta.stack())
        else:
            from eagerflow.ragged.ragged_tensor import RaggedTensor

            out.append(RaggedTensor.from_row_lengths(ta.concat(), next(lengths).stack()))
    return nest.pack_sequence_as(dtypes, out)


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """``fn`` applied to each element of ``elems``, results stacked (``tf.vectorized_map``).

    Runs as :func:`map_fn` (the same values TF's vectorized version computes); the output
    structure is learned from ``fn`` itself.

    Example:
        >>> import eagerflow as ef
        >>> ef.vectorized_map(lambda r: ef.reduce_max(r), ef.constant([[1, 5], [7, 2]])
        ...                   ).numpy().tolist()
        [5, 7]
    """
    flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
    first = nest.pack_sequence_as(elems, [e[0] for e in flat]) if flat and (
        flat[0].shape.rank and flat[0].shape.as_list()[0]) else None
    signature = None
    if first is not None:
        from eagerflow.function.autograph.operators import _probe
        from eagerflow.framework import context

        if context.state.trace is not None:
            probe = _probe(lambda: fn(first))
        else:
            from eagerflow.tape import stop_recording_all

            with stop_recording_all():
                probe = fn(first)
        signature = nest.map_structure(lambda t: convert_to_tensor(t).dtype, probe)
    return map_fn(fn, elems, fn_output_signature=signature)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """Running accumulation ``a = fn(a, x)`` over ``elems``; stacks every ``a`` (``tf.scan``).

    Args:
        fn: Callable ``(accumulator, element) -> accumulator``.
        elems: A tensor or nested structure of tensors, scanned along axis 0.
        initializer: The first accumulator (its structure is the output's); by default the
            first element, and the scan starts at the second.
        parallel_iterations: Passed to ``while_loop``.
        back_prop: If False, no gradient flows through the loop.
        swap_memory: Accepted for compatibility.
        infer_shape: Accepted for compatibility.
        reverse: Scan from the last element to the first.
        name: Accepted for compatibility.

    Returns:
        The stacked accumulators, in the structure of ``initializer`` (or ``elems``).

    Example:
        >>> import eagerflow as ef
        >>> ef.scan(lambda a, x: a * x, ef.constant([1, 2, 3]), reverse=True
        ...         ).numpy().tolist()
        [6, 6, 3]
    """
    _, in_tas, n = _elements(elems, "scan")
    return _accumulate("scan", fn, elems, in_tas, n, initializer, reverse, back_prop,
                       parallel_iterations, stacked=True)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """Folds ``fn`` over ``elems`` from the first element to the last (``tf.foldl``).

    Example:
        >>> import eagerflow as ef
        >>> int(ef.foldl(lambda a, x: a - x, ef.constant([1, 2, 3]), initializer=10))
        4
    """
    _, in_tas, n = _elements(elems, "foldl")
    return _accumulate("foldl", fn, elems, in_tas, n, initializer, False, back_prop,
                       parallel_iterations, stacked=False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """Folds ``fn`` over ``elems`` from the last element to the first (``tf.foldr``).

    Example:
        >>> import eagerflow as ef
        >>> int(ef.foldr(lambda a, x: a - x, ef.constant([1, 2, 3]), initializer=10))
        4
    """
    _, in_tas, n = _elements(elems, "foldr")
    return _accumulate("foldr", fn, elems, in_tas, n, initializer, True, back_prop,
                       parallel_iterations, stacked=False)


def _accumulate(api, fn, elems, in_tas, n, initializer, reverse, back_prop,
                parallel_iterations, stacked):
    def element(k):
        return nest.pack_sequence_as(elems, [ta.read(k) for ta in in_tas])

    if initializer is None:
        start = n - 1 if reverse else 0
        acc = element(start)
        first_done = True
    else:
        acc = nest.map_structure(convert_to_tensor, initializer)
        first_done = False
    structure = acc
    dtypes = nest.map_structure(lambda t: t.dtype, acc)
    flat_acc = nest.flatten(acc)
    out_tas = [TensorArray(t.dtype, size=n, element_shape=t.shape) for t in flat_acc]
    if first_done:
        k0 = n - 1 if reverse else 0
        out_tas = [ta.write(k0, t) for ta, t in zip(out_tas, flat_acc)]
        i0 = 1
    else:
        i0 = 0

    def index(i):
        return n - 1 - i if reverse else i

    def body(i, acc_flat, outs):
        k = index(i)
        new = _check_result(api, fn(nest.pack_sequence_as(structure, list(acc_flat)),
                                    element(k)), dtypes)
        if stacked:
            outs = [ta.write(k, v) for ta, v in zip(outs, new)]
        return i + 1, new, outs

    _, acc_flat, outs = while_loop(
        lambda i, *_: i < n, body, (convert_to_tensor(i0), flat_acc, out_tas if stacked else []),
        parallel_iterations=parallel_iterations or 10, back_prop=back_prop)
    if stacked:
        return nest.pack_sequence_as(structure, [ta.stack() for ta in outs])
    return nest.pack_sequence_as(structure, list(acc_flat))
