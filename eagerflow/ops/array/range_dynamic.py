"""``range`` whose bounds are known only when the graph runs (tensor start/limit/delta).

``eagerflow.range`` with Python numbers or known tensors is the static ``Range`` op (its
size is part of the graph). Inside a traced function a bound may be a symbolic tensor (the
``n`` of ``for i in eagerflow.range(n)``); then this op computes the sequence at run time
with the same size rule, and its static shape is ``[None]``.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow.ops import registry
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.family import HOST_VALUE_SHAPE

__all__ = ["DYNAMIC_RANGE"]


def _kernel(xp):
    from eagerflow.ops.array.creation_ops import range_size

    def kernel(start, limit, delta, *, dtype):
        np_dtype = d.as_dtype(dtype).np_dtype
        values = [np.asarray(v).item() for v in (start, limit, delta)]
        n = range_size(values[0], values[1], values[2], np_dtype)
        return xp.arange(n, dtype=np_dtype) * np_dtype.type(values[2]) + np_dtype.type(
            values[0])
    return kernel


def _shape(start, limit, delta, *, dtype):
    for aval in (start, limit, delta):
        if aval.shape not in ((), None):
            raise ValueError("range: start, limit and delta must be scalars, got shape %s"
                             % (list(aval.shape),))
    return AbstractValue((None,), d.as_dtype(dtype))


def _reference(start, limit, delta, *, dtype):
    return np.arange(start, limit, delta).astype(d.as_dtype(dtype).np_dtype)


def _samples(rng, dtype):
    np_dtype = dtype.np_dtype
    return [((np.array(0, np_dtype), np.array(5, np_dtype), np.array(1, np_dtype)),
             {"dtype": dtype.name}),
            ((np.array(2, np_dtype), np.array(11, np_dtype), np.array(3, np_dtype)),
             {"dtype": dtype.name})]


DYNAMIC_RANGE = registry.primitive(
    "DynamicRange", _kernel, family="array", shape_fn=_shape, reference=_reference,
    host_sync=HOST_VALUE_SHAPE,
    samples=_samples, sweep_dtypes=(d.int32, d.int64, d.float32, d.float64),
    dtypes=(d.int32, d.int64, d.float16, d.bfloat16, d.float32, d.float64))
