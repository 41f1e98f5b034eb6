"""Primitives behind RaggedTensor: densifying one ragged level, and vocabulary lookup.

``RaggedToDense`` turns ``(values, row_splits)`` into a padded ``[rows, width, ...]``
tensor (width = the longest row, or a fixed ``width`` that truncates and pads); deeper
ragged tensors densify level by level, innermost first. ``TableLookup`` maps strings or
integers to their index in a static vocabulary (an attr), with hashed out-of-vocabulary
buckets, as Keras's lookup layers do. Both trace and serialize like any primitive.

Example:
    >>> import numpy as np, eagerflow as ef
    >>> from eagerflow.ops.ragged.ragged_ops import ragged_to_dense
    >>> ragged_to_dense(ef.constant([1, 2, 3]), ef.constant(np.array([0, 2, 3]))).numpy().tolist()
    [[1, 2], [3, 0]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, string_values
from eagerflow.ops.strings.fingerprint import fingerprint64
from eagerflow.ops.registry import AbstractValue

__all__ = ["ragged_to_dense", "table_lookup"]

EXPORTS = {}


def _check_splits(splits, nvals):
    s = np.asarray(splits)
    if s.ndim != 1 or s.size == 0 or s[0] != 0 or np.any(np.diff(s) < 0) or s[-1] != nvals:
        raise errors.InvalidArgumentError(
            None, None, "row_splits %s do not partition %d values" % (s.tolist()[:10], nvals))
    return s


def _positions(s, width):
    lengths = s[1:] - s[:-1]
    rows = np.repeat(np.arange(lengths.size), lengths)
    cols = np.arange(int(s[-1])) - np.repeat(s[:-1], lengths)
    keep = cols < width
    return rows, cols, keep


def _width(s, width):
    return int(width) if width >= 0 else (int((s[1:] - s[:-1]).max()) if s.size > 1 else 0)


def _to_dense_kernel(xp):
    def kernel(values, splits, default, *, width):
        s = _check_splits(splits, len(values))
        w = _width(s, width)
        out = np.empty((s.size - 1, w) + values.shape[1:], dtype=values.dtype)
        out[...] = default
        rows, cols, keep = _positions(s, w)
        out[rows[keep], cols[keep]] = values[keep]
        return out
    return kernel


def _to_dense_reference(values, splits, default, *, width):
    rows = [values[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]
    w = width if width >= 0 else max([len(r) for r in rows], default=0)
    out = []
    for r in rows:
        r = list(r[:w])
        out.append(r + [default[()]] * (w - len(r)))
    arr = np.empty((len(rows), w) + np.shape(values)[1:], dtype=np.asarray(values).dtype)
    for i, r in enumerate(out):
        for j, v in enumerate(r):
            arr[i, j] = v
    return arr


def _to_dense_samples(rng, dtype):
    from eagerflow.ops.family import _sample_values

    vals = _sample_values(rng, (6,), dtype, (-3, 3))
    splits = np.array([0, 2, 2, 5, 6], np.int64)
    zero = np.zeros((), dtype.np_dtype) if dtype is not d.string else np.array(b"", object)
    return [((vals, splits, zero), {"width": -1}), ((vals, splits, zero), {"width": 2}),
            ((vals, splits, zero), {"width": 4}),
            ((_sample_values(rng, (3, 2), dtype, (-3, 3)), np.array([0, 3], np.int64),
              zero), {"width": -1})]


def _to_dense_vjp(g, values, splits, default, out, *, width):
    from eagerflow.ops.reduce.reductions import reduce_sum

    grad_values = execute(RAGGED_DENSE_GRAD, (g, splits), {"width": width})
    # The padding cells are every cell not holding a kept value.
    return grad_values, None, reduce_sum(g) - reduce_sum(grad_values)


def _dense_grad_kernel(xp):
    def kernel(g, splits, *, width):
        s = np.asarray(splits)
        rows, cols, keep = _positions(s, g.shape[1])
        out = np.zeros((int(s[-1]),) + g.shape[2:], dtype=g.dtype)
        out[keep] = g[rows[keep], cols[keep]]
        return out
    return kernel


RAGGED_TO_DENSE = registry.primitive(
    "RaggedToDense", _to_dense_kernel, dtypes=ALL + (d.string,), dtype_group=(0, 2),
    reference=_to_dense_reference, samples=_to_dense_samples,
    sweep_dtypes=(d.float32, d.float64, d.int32, d.string), family="ragged",
    vjp=_to_dense_vjp, saves=(1,),
    shape_fn=lambda v, s, dflt, *, width: AbstractValue(
        (None if s.shape is None or s.shape[0] is None else s.shape[0] - 1,
         width if width >= 0 else None) + tuple(v.shape[1:] if v.shape else ()), v.dtype),
    grad_samples=lambda rng: [((rng.normal(size=(6, 2)), np.array([0, 2, 2, 5, 6], np.int64),
                                np.zeros((), np.float64)), {"width": -1}),
                              ((rng.normal(size=(6,)), np.array([0, 4, 6], np.int64),
                                np.zeros((), np.float64)), {"width": 3})],
    bad_samples=lambda rng: [((np.ones(3, np.float32), np.array([0, 5], np.int64),
                               np.zeros((), np.float32)), {"width": -1},
                              errors.InvalidArgumentError)])

def _dense_grad_reference(g, s):
    parts = []
    for i in range(len(s) - 1):
        n = int(s[i + 1] - s[i])
        kept = g[i, :min(n, g.shape[1])]
        parts.append(np.concatenate([kept, np.zeros((n - len(kept),) + g.shape[2:], g.dtype)]))
    return np.concatenate(parts + [np.zeros((0,) + g.shape[2:], g.dtype)])


RAGGED_DENSE_GRAD = registry.primitive(
    "RaggedToDenseGrad", _dense_grad_kernel, dtypes=ALL, dtype_group=(0,), family="ragged",
    reference=lambda g, s, *, width: _dense_grad_reference(g, s),
    samples=lambda rng, dtype: [((rng.normal(size=(4, 3)).astype(dtype.np_dtype),
                                  np.array([0, 2, 2, 5, 6], np.int64)), {"width": -1})],
    shape_fn=lambda g, s, *, width: AbstractValue((None,) + tuple(g.shape[2:]), g.dtype))


def ragged_to_dense(values, row_splits, default_value=None, width=-1):
    """A padded dense tensor of one ragged level (rows of ``values`` cut by ``row_splits``)."""
    from eagerflow.tensor import convert_to_tensor

    if default_value is None:
        default_value = b"" if getattr(values, "dtype", None) is d.string else 0
    return execute(RAGGED_TO_DENSE, (values, row_splits,
                                     convert_to_tensor(default_value, dtype=values.dtype)),
                   {"width": int(width)})


# -- vocabulary lookup -----------------------------------------------------------------------
def _lookup_kernel(xp):
    cache = {}

    def kernel(x, *, keys, offset, num_oov, oov_start, invalid):
        table = cache.get((keys, offset))
        if table is None:  # built once per vocabulary: a layer calls with the same attrs
            table = {k: i + offset for i, k in enumerate(keys)}
            if len(cache) > 8:
                cache.clear()
            cache[(keys, offset)] = table
        out = np.empty(x.shape, np.int64)
        flat, res = x.reshape(-1), out.reshape(-1)
        for i, v in enumerate(flat.tolist()):
            j = table.get(v)
            if j is None or v in invalid:
                if num_oov == 0:
                    raise errors.InvalidArgumentError(
                        None, None, "%r is not in the vocabulary and there are no "
                        "out-of-vocabulary indices" % (v,))
                key = v if isinstance(v, bytes) else str(v).encode()
                j = oov_start + (fingerprint64(key) % num_oov if num_oov > 1 else 0)
            res[i] = j
        return out
    return kernel


def _lookup_reference(x, *, keys, offset, num_oov, oov_start, invalid):
    keys = list(keys)
    return np.vectorize(lambda v: keys.index(v) + offset if v in keys and v not in invalid
                        else oov_start + (fingerprint64(v if isinstance(v, bytes) else
                                                        str(v).encode()) % num_oov
                                          if num_oov > 1 else 0),
                        otypes=[np.int64])(x) if np.size(x) else np.zeros(np.shape(x), np.int64)


def _lookup_samples(rng, dtype):
    if dtype is d.string:
        keys = (b"a", b"ab", b"hello world")
        return [((string_values(rng, (2, 5)),), {"keys": keys, "offset": 1, "num_oov": 1,
                                                 "oov_start": 0, "invalid": ()}),
                ((string_values(rng, (7,)),), {"keys": keys, "offset": 3, "num_oov": 2,
                                               "oov_start": 1, "invalid": (b"",)})]
    return [((rng.integers(0, 6, (3, 4)).astype(np.int64),),
             {"keys": (1, 3, 5), "offset": 1, "num_oov": 1, "oov_start": 0, "invalid": ()})]


TABLE_LOOKUP = registry.primitive(
    "TableLookup", _lookup_kernel, dtypes=(d.string, d.int64), family="ragged",
    reference=_lookup_reference, samples=_lookup_samples, sweep_dtypes=(d.string, d.int64),
    shape_fn=lambda x, **a: AbstractValue(x.shape, d.int64),
    bad_samples=lambda rng: [((np.array([b"zz"], object),),
                              {"keys": (b"a",), "offset": 0, "num_oov": 0, "oov_start": 0,
                               "invalid": ()}, errors.InvalidArgumentError)])


def table_lookup(x, keys, offset, num_oov, oov_start, invalid=()):
    """Index of each element of ``x`` in ``keys`` plus ``offset``; others hash to the
    ``num_oov`` indices from ``oov_start`` (``invalid`` values count as unknown)."""
    return execute(TABLE_LOOKUP, (x,), {"keys": tuple(keys), "offset": int(offset),
                                        "num_oov": int(num_oov), "oov_start": int(oov_start),
                                        "invalid": tuple(invalid)})
