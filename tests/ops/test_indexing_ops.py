"""Tests of gather/scatter/segment/mask/one_hot/unique/searchsorted against numpy."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops.indexing import gather_ops, index_nd_ops, mask_ops, search_ops, segment_ops
from eagerflow.ops import indexing as indexing_common
from eagerflow.testing import check_vjp
from eagerflow.ops import indexing as indexing_family
from tests.ops.family_view import family_view

# The indexing family as one namespace: its modules' names, __all__ and EXPORTS.
ix = family_view(indexing_family, (gather_ops, index_nd_ops, segment_ops, mask_ops, search_ops,))

RNG = np.random.default_rng(0)


def _x(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _batched_take(params, indices, axis, batch_dims):
    """tf.gather by its definition: one np.take per batch element."""
    out = [np.take(params[b], indices[b], axis=axis - batch_dims)
           for b in np.ndindex(*params.shape[:batch_dims])]
    shape = params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1:]
    return np.array(out, params.dtype).reshape(shape)


# --------------------------------------------------------------------------- gather

@pytest.mark.parametrize("pshape,ishape,axis,batch_dims", [
    ((5,), (3,), None, 0), ((5, 3), (2, 4), 0, 0), ((5, 3), (), 1, 0), ((4, 3), (2,), -1, 0),
    ((2, 3, 4), (2, 5), 2, 1), ((2, 3, 4), (2, 5), None, 1), ((2, 3, 4), (2, 3, 2), 2, 2),
    ((2, 3, 4), (2, 2), -2, -1), ((2, 3, 4, 2), (2, 3), 2, 1), ((3, 0), (4,), 0, 0),
    ((5,), (0,), 0, 0), ((0, 2), (0, 3), 1, 1), ((2, 3, 0), (2, 4), 1, 1),
])
def test_gather_matches_definition(pshape, ishape, axis, batch_dims):
    params = _x(*pshape)
    a = (batch_dims if axis is None else axis) % len(pshape)
    b = batch_dims + len(ishape) if batch_dims < 0 else batch_dims
    indices = RNG.integers(0, max(pshape[a], 1), size=ishape).astype(np.int32)
    got = ix.gather(ef.constant(params), ef.constant(indices), axis=axis, batch_dims=batch_dims)
    if b == 0:
        expected = np.take(params, indices, axis=a)
    else:
        expected = _batched_take(params, indices, a, b)
    assert got.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(got.numpy(), expected)


def test_gather_python_values_and_dtypes():
    got = ix.gather([[1, 2], [3, 4]], [1, 0], axis=ef.constant(1))
    assert got.numpy().tolist() == [[2, 1], [4, 3]]
    assert got.dtype == ef.int32
    got = ix.gather(ef.constant([True, False]), np.array([1, 1], np.int64))
    assert got.numpy().tolist() == [False, False]


@pytest.mark.parametrize("indices,match", [
    ([0, 5], r"indices\[1\] = 5 is not in \[0, 5\)"),
    ([[0, 1], [-1, 2]], r"indices\[1,0\] = -1 is not in \[0, 5\)"),
])
def test_gather_rejects_out_of_range_indices(indices, match):
    # numpy would wrap -1 silently; TF raises on the CPU.
    with pytest.raises(errors.InvalidArgumentError, match=match) as info:
        ix.gather(ef.constant(np.arange(5.0)), ef.constant(indices))
    assert "GatherV2" in str(info.value) and "float64[5]" in str(info.value)


@pytest.mark.parametrize("kwargs,match", [
    ({"axis": 2}, "axis = 2 is out of range"),
    ({"axis": 0, "batch_dims": 1}, r"batch_dims \(1\) must be less than or equal to axis"),
    ({"batch_dims": 3}, "batch_dims = 3 is out of range"),
    ({"axis": 1.5}, "static integer"),
])
def test_gather_bad_axes(kwargs, match):
    with pytest.raises(errors.InvalidArgumentError, match=match):
        ix.gather(ef.constant(_x(4, 3)), ef.constant(np.zeros((4, 2), np.int32)), **kwargs)


def test_gather_bad_inputs():
    with pytest.raises(errors.InvalidArgumentError, match="must equal indices.shape"):
        ix.gather(ef.constant(_x(4, 3)), ef.constant(np.zeros((3, 2), np.int32)), axis=1,
                  batch_dims=1)
    with pytest.raises(errors.InvalidArgumentError, match="integer tensor"):
        ix.gather(ef.constant(_x(4)), ef.constant([0.0, 1.0]))
    with pytest.raises(errors.InvalidArgumentError, match="at least 1-D"):
        ix.gather(ef.constant(1.0), 0)


@pytest.mark.parametrize("pshape,ishape,axis,batch_dims", [
    ((5,), (7,), 0, 0), ((5, 3), (2, 4), 1, 0), ((5, 3), (), 0, 0), ((2, 3, 4), (2, 5), 2, 1),
    ((2, 3, 4), (2, 3, 2), 2, 2), ((2, 3, 4, 2), (2, 3), 2, 1),
])
def test_gather_vjp(pshape, ishape, axis, batch_dims):
    params = RNG.standard_normal(pshape)
    indices = RNG.integers(0, pshape[axis], size=ishape).astype(np.int32)
    attrs = {"axis": axis, "batch_dims": batch_dims}
    assert check_vjp(ix.GATHER, (params, indices), attrs)
    g = np.asarray(ix.GATHER.reference(params, indices, **attrs))
    assert check_vjp(ix.GATHER_GRAD, (g, indices),
                     dict(attrs, dim_size=pshape[axis]))


def test_gather_gradient_is_dense_and_counts_repeats():
    params = ef.constant([1.0, 2.0, 3.0, 4.0])
    with ef.GradientTape() as tape:
        tape.watch(params)
        y = ix.gather(params, [0, 2, 0, 0])
    grad = tape.gradient(y, params)
    assert isinstance(grad, ef.Tensor)  # TF gives IndexedSlices with the same values
    assert grad.numpy().tolist() == [3.0, 0.0, 1.0, 0.0]


def test_gather_second_order():
    x = ef.constant(np.array([1.0, 2.0, 3.0]))
    with ef.GradientTape() as outer:
        outer.watch(x)
        with ef.GradientTape() as inner:
            inner.watch(x)
            y = ix.gather(x, [2, 2, 0]) ** 3
        g = inner.gradient(y, x)  # [3 x0^2, 0, 2 * 3 x2^2]
        z = ix.gather(g, [0, 2]) * 1.0
    np.testing.assert_allclose(g.numpy(), [3.0, 0.0, 54.0])
    np.testing.assert_allclose(outer.gradient(z, x).numpy(), [6.0, 0.0, 36.0])


# --------------------------------------------------------------------------- gather_nd

def _gather_nd_loop(params, indices, b):
    out = [params[pos[:b] + tuple(indices[pos])] for pos in np.ndindex(*indices.shape[:-1])]
    k = indices.shape[-1]
    return np.array(out, params.dtype).reshape(indices.shape[:-1] + params.shape[b + k:])


@pytest.mark.parametrize("pshape,ishape,b", [
    ((4, 3), (5, 2), 0), ((4, 3), (2, 1), 0), ((4, 3, 2), (2, 2, 2), 0), ((2, 3, 4), (2, 1), 1),
    ((2, 3, 4), (2, 5, 2), 1), ((2, 3, 4), (2, 3, 1), 2), ((3, 4), (0, 2), 0),
    ((3, 4), (2, 0), 0), ((5,), (1,), 0), ((3, 0), (2, 1), 0), ((2, 3, 0), (2, 4, 1), 1),
])
def test_gather_nd_matches_loop(pshape, ishape, b):
    params = _x(*pshape)
    k = ishape[-1]
    dims = pshape[b:b + k]
    indices = np.stack([RNG.integers(0, n, size=ishape[:-1]) for n in dims], axis=-1) \
        if k else np.zeros(ishape, np.int64)
    indices = indices.astype(np.int64).reshape(ishape)
    got = ix.gather_nd(ef.constant(params), ef.constant(indices), batch_dims=b)
    np.testing.assert_array_equal(got.numpy(), _gather_nd_loop(params, indices, b))


def test_gather_nd_errors():
    p = ef.constant(_x(3, 4))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"indices\[1\] = \[1, 4\] does not index into params shape \[3, 4\]"):
        ix.gather_nd(p, [[0, 0], [1, 4]])
    with pytest.raises(errors.InvalidArgumentError, match="must be <= rank"):
        ix.gather_nd(p, [[0, 0, 0]])
    with pytest.raises(errors.InvalidArgumentError, match="at least 1-D"):
        ix.gather_nd(p, 0)


@pytest.mark.parametrize("pshape,ishape,b", [((4, 3), (5, 2), 0), ((4, 3), (6, 1), 0),
                                             ((2, 3, 4), (2, 5, 2), 1)])
def test_gather_nd_and_scatter_nd_vjp(pshape, ishape, b):
    params = RNG.standard_normal(pshape)
    dims = pshape[b:b + ishape[-1]]
    indices = np.stack([RNG.integers(0, n, size=ishape[:-1]) for n in dims], -1).astype(np.int32)
    assert check_vjp(ix.GATHER_ND, (params, indices), {"batch_dims": b})
    updates = RNG.standard_normal(ishape[:-1] + pshape[b + ishape[-1]:])
    assert check_vjp(ix.SCATTER_ND, (indices, updates), {"shape": pshape, "batch_dims": b})


# --------------------------------------------------------------------------- scatter_nd

def test_scatter_nd_sums_duplicates():
    indices = np.array([[1], [3], [1], [1]])
    updates = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    got = ix.scatter_nd(ef.constant(indices), ef.constant(updates), [5])
    expected = np.zeros(5, np.float32)
    np.add.at(expected, indices[:, 0], updates)
    np.testing.assert_array_equal(got.numpy(), expected)
    rows = ix.scatter_nd([[0], [0]], ef.constant(_x(2, 3)), ef.constant([2, 3]))
    assert rows.shape.as_list() == [2, 3]


def test_scatter_nd_errors():
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = \[4\]"):
        ix.scatter_nd([[1], [4]], [1.0, 2.0], [4])
    with pytest.raises(errors.InvalidArgumentError, match="updates must have shape"):
        ix.scatter_nd([[1], [2]], [1.0, 2.0, 3.0], [4])


# --------------------------------------------------------------------------- tensor_scatter_*

@pytest.mark.parametrize("fn,combine", [
    (ix.tensor_scatter_nd_update, lambda a, b: b), (ix.tensor_scatter_nd_add, np.add),
    (ix.tensor_scatter_nd_sub, np.subtract), (ix.tensor_scatter_nd_max, np.maximum),
    (ix.tensor_scatter_nd_min, np.minimum),
])
def test_tensor_scatter_ops_match_loop(fn, combine):
    tensor = _x(4, 3)
    indices = np.array([[2], [0], [3]]) if fn is ix.tensor_scatter_nd_update else \
        np.array([[2], [0], [2]])
    updates = _x(3, 3)
    expected = tensor.copy()
    for i, row in enumerate(indices[:, 0]):
        expected[row] = combine(expected[row], updates[i])
    got = fn(ef.constant(tensor), ef.constant(indices), ef.constant(updates))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    elements = fn(ef.constant(tensor), [[0, 1], [3, 2]], ef.constant(updates[0, :2]))
    expected = tensor.copy()
    expected[0, 1] = combine(expected[0, 1], updates[0, 0])
    expected[3, 2] = combine(expected[3, 2], updates[0, 1])
    np.testing.assert_allclose(elements.numpy(), expected, rtol=1e-6)


def test_tensor_scatter_does_not_mutate_input():
    t = ef.constant([1.0, 2.0, 3.0])
    ix.tensor_scatter_nd_update(t, [[0]], [9.0])
    assert t.numpy().tolist() == [1.0, 2.0, 3.0]


def test_tensor_scatter_errors():
    with pytest.raises(errors.InvalidArgumentError, match="does not index into tensor"):
        ix.tensor_scatter_nd_add([1.0, 2.0], [[2]], [1.0])
    with pytest.raises(errors.InvalidArgumentError, match="same dtype"):
        ix.tensor_scatter_nd_add(ef.constant([1.0, 2.0]), [[1]], ef.constant([1.0], ef.float64))


@pytest.mark.parametrize("prim", [ix.TENSOR_SCATTER_UPDATE, ix.TENSOR_SCATTER_ADD,
                                  ix.TENSOR_SCATTER_SUB, ix.TENSOR_SCATTER_MAX,
                                  ix.TENSOR_SCATTER_MIN])
def test_tensor_scatter_vjp(prim):
    tensor = RNG.standard_normal((4, 3))
    indices = np.array([[2], [0]], np.int32)
    updates = RNG.standard_normal((2, 3))
    assert check_vjp(prim, (tensor, indices, updates), {})


def test_tensor_scatter_update_gradient_zeroes_overwritten_entries():
    t = ef.constant([1.0, 2.0, 3.0])
    u = ef.constant([5.0])
    with ef.GradientTape(persistent=True) as tape:
        tape.watch([t, u])
        y = ix.tensor_scatter_nd_update(t, [[1]], u) * ef.constant([1.0, 10.0, 100.0])
    assert tape.gradient(y, t).numpy().tolist() == [1.0, 0.0, 100.0]
    assert tape.gradient(y, u).numpy().tolist() == [10.0]


def test_tensor_scatter_max_gradient_splits_ties():
    t = ef.constant([1.0, 5.0])
    u = ef.constant([1.0, 3.0])
    with ef.GradientTape(persistent=True) as tape:
        tape.watch([t, u])
        y = ix.tensor_scatter_nd_max(t, [[0], [1]], u)
    assert tape.gradient(y, t).numpy().tolist() == [0.5, 1.0]
    assert tape.gradient(y, u).numpy().tolist() == [0.5, 0.0]


# --------------------------------------------------------------------------- segments

def _segment_loop(data, ids, n, op, init):
    out = np.full((n,) + data.shape[ids.ndim:], init, data.dtype)
    for pos in np.ndindex(*ids.shape):
        if ids[pos] >= 0:
            out[ids[pos]] = op(out[ids[pos]], data[pos])
    return out


@pytest.mark.parametrize("dshape,ids", [
    ((6,), [0, 2, 0, 3, 2, 0]), ((4, 3), [1, 1, 0, -1]), ((2, 3, 2), [[0, 1, 4], [4, 1, -2]]),
    ((3,), 1), ((0, 2), np.zeros(0, np.int32)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_unsorted_segment_ops_match_loop(dshape, ids, dtype):
    data = (_x(*dshape) * 10).astype(dtype)
    ids = np.asarray(ids, np.int32)
    n = 5
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    for fn, op, init in ((ix.unsorted_segment_sum, np.add, 0),
                         (ix.unsorted_segment_max, np.maximum, -info.max if
                          np.dtype(dtype).kind == "f" else info.min),
                         (ix.unsorted_segment_min, np.minimum, info.max)):
        got = fn(ef.constant(data), ef.constant(ids), n)
        assert got.numpy().dtype == dtype
        np.testing.assert_allclose(got.numpy(), _segment_loop(data, ids, n, op, init),
                                   rtol=1e-6)


def test_unsorted_segment_mean():
    data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], np.float32)
    got = ix.unsorted_segment_mean(ef.constant(data), ef.constant([2, 0, 2]),
                                   ef.constant(4))
    np.testing.assert_allclose(got.numpy(), [[3.0, 4.0], [0.0, 0.0], [3.0, 4.5], [0.0, 0.0]])
    x = ef.constant(data)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ix.unsorted_segment_mean(x, [2, 0, 2], 4)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [[0.5, 0.5], [1, 1], [0.5, 0.5]])


def test_segment_errors():
    data = ef.constant([1.0, 2.0, 3.0])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"segment_ids\[1\] = 7 is out of range \[0, 3\)"):
        ix.unsorted_segment_sum(data, [0, 7, 1], 3)
    with pytest.raises(errors.InvalidArgumentError, match="must start with segment_ids.shape"):
        ix.unsorted_segment_max(data, [0, 1], 3)
    with pytest.raises(errors.InvalidArgumentError, match="num_segments must be an integer"):
        ix.unsorted_segment_min(data, [0, 1, 0], 2.0)


def test_segment_sum():
    data = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.int64)
    got = ix.segment_sum(ef.constant(data), [0, 0, 3, 3])
    assert got.numpy().tolist() == [[4, 6], [0, 0], [0, 0], [12, 14]]
    with pytest.raises(errors.InvalidArgumentError, match="not increasing"):
        ix.segment_sum(ef.constant(data), [0, 2, 1, 3])
    with pytest.raises(errors.InvalidArgumentError, match=">= 0"):
        ix.segment_sum(ef.constant(data), [-1, 0, 1, 1])
    with pytest.raises(errors.InvalidArgumentError, match="first dimension"):
        ix.segment_sum(ef.constant(data), [0, 1])


@pytest.mark.parametrize("prim", [ix.UNSORTED_SEGMENT_SUM, ix.UNSORTED_SEGMENT_MAX,
                                  ix.UNSORTED_SEGMENT_MIN, ix.SEGMENT_SUM])
def test_segment_vjp(prim):
    for args, attrs in (prim.grad_samples(RNG) if prim.grad_samples else
                        prim.samples(RNG, ef.float64)):
        assert check_vjp(prim, args, attrs)


def test_segment_max_gradient_shares_ties():
    x = ef.constant([2.0, 2.0, 1.0, 5.0])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ix.unsorted_segment_max(x, [0, 0, 0, -1], 2)
    assert tape.gradient(y, x).numpy().tolist() == [0.5, 0.5, 0.0, 0.0]


# --------------------------------------------------------------------------- boolean_mask

@pytest.mark.parametrize("tshape,mshape,axis", [
    ((5,), (5,), None), ((4, 3), (4,), 0), ((4, 3), (4, 3), None), ((2, 4, 3), (4,), 1),
    ((2, 4, 3), (4, 3), 1), ((2, 4, 3), (4, 3), -2), ((3,), (3,), 0), ((0, 2), (0,), 0),
])
def test_boolean_mask_matches_numpy(tshape, mshape, axis):
    tensor = _x(*tshape)
    mask = RNG.random(mshape) > 0.4
    a = 0 if axis is None else axis % len(tshape)
    got = ix.boolean_mask(ef.constant(tensor), ef.constant(mask), axis=axis)
    np.testing.assert_array_equal(got.numpy(), tensor[(slice(None),) * a + (mask,)])


def test_boolean_mask_errors():
    t = ef.constant(_x(3, 4))
    with pytest.raises(errors.InvalidArgumentError, match="mask shape"):
        ix.boolean_mask(t, [True, False, True, False])
    with pytest.raises(errors.InvalidArgumentError, match="scalar"):
        ix.boolean_mask(t, True)
    with pytest.raises(errors.InvalidArgumentError, match="bool"):
        ix.boolean_mask(t, [1, 0, 1])
    with pytest.raises(errors.InvalidArgumentError, match="does not fit"):
        ix.boolean_mask(t, np.ones((4, 1), bool), axis=1)


def test_boolean_mask_vjp():
    for (t, m), attrs in ix.BOOLEAN_MASK.samples(RNG, ef.float64):
        if np.size(t):
            assert check_vjp(ix.BOOLEAN_MASK, (t, m), attrs)
    t = RNG.standard_normal((2, 4, 3))
    m = RNG.random((4, 3)) > 0.5
    g = np.asarray(ix.BOOLEAN_MASK.reference(t, m, axis=1))
    assert check_vjp(ix.BOOLEAN_MASK_GRAD, (g, m), {"axis": 1, "shape": (2, 4, 3)})


# --------------------------------------------------------------------------- one_hot

def _one_hot_loop(indices, depth, on, off, axis, dtype):
    indices = np.asarray(indices)
    out = np.full(indices.shape + (depth,), off, dtype)
    for pos in np.ndindex(*indices.shape):
        if 0 <= indices[pos] < depth:
            out[pos + (indices[pos],)] = on
    return np.moveaxis(out, -1, indices.ndim if axis in (None, -1) else axis)


@pytest.mark.parametrize("indices", [[0, 2, -1, 5], [[1, 0], [3, 3]], 2, np.zeros((0,), int)])
@pytest.mark.parametrize("axis", [None, -1, 0])
def test_one_hot_matches_loop(indices, axis):
    got = ix.one_hot(ef.constant(np.asarray(indices, np.int64)), 4, axis=axis)
    assert got.dtype == ef.float32
    np.testing.assert_array_equal(got.numpy(), _one_hot_loop(indices, 4, 1, 0, axis,
                                                             np.float32))


def test_one_hot_values_and_dtypes():
    got = ix.one_hot([[0, 1], [2, 9]], 3, on_value=5, off_value=-1, axis=1)
    assert got.dtype == ef.int32
    np.testing.assert_array_equal(got.numpy(), _one_hot_loop([[0, 1], [2, 9]], 3, 5, -1, 1,
                                                             np.int32))
    assert ix.one_hot([1], 2, on_value=2.5).numpy().tolist() == [[0.0, 2.5]]
    assert ix.one_hot([1], 2, dtype=ef.float64).dtype == ef.float64
    assert ix.one_hot([1], 2, off_value=ef.constant(3, ef.int64)).numpy().tolist() == [[3, 1]]
    assert ix.one_hot(np.array([0], np.uint8), 2, dtype=ef.bool).numpy().tolist() == [
        [True, False]]
    assert ix.one_hot([0], 0).shape.as_list() == [1, 0]


def test_one_hot_errors():
    with pytest.raises(TypeError, match="does not match"):
        ix.one_hot([0], 2, on_value=1.0, off_value=ef.constant(0.0, ef.float64))
    with pytest.raises(TypeError, match="does not match dtype parameter"):
        ix.one_hot([0], 2, on_value=ef.constant(1), dtype=ef.float32)
    with pytest.raises(errors.InvalidArgumentError, match="depth"):
        ix.one_hot([0], -1)
    with pytest.raises(errors.InvalidArgumentError, match="axis"):
        ix.one_hot([0], 3, axis=2)
    with pytest.raises(errors.InvalidArgumentError, match="OneHot"):
        ix.one_hot([0.0], 3)


# --------------------------------------------------------------------------- where

def test_where_indices():
    cond = RNG.random((3, 4)) > 0.5
    got = ix.where_indices(ef.constant(cond))
    assert got.dtype == ef.int64
    np.testing.assert_array_equal(got.numpy(), np.argwhere(cond))
    assert ef.where(ef.constant([0.0, 2.0, 3.0]) > 1.0).numpy().tolist() == [[1], [2]]


# --------------------------------------------------------------------------- unique

def _unique_first(x):
    values, idx = [], []
    for v in x:
        if v not in values:
            values.append(v)
        idx.append(values.index(v))
    return values, idx


@pytest.mark.parametrize("x", [[4, 1, 4, 2, 1, 7], [3.5, -1.0, 3.5], [5], [], [True, False, True]])
def test_unique_first_occurrence_order(x):
    y, idx = ix.unique(ef.constant(x) if x else ef.constant(np.zeros(0, np.float32)))
    values, positions = _unique_first(x)
    assert y.numpy().tolist() == values
    assert idx.numpy().tolist() == positions
    assert idx.dtype == ef.int32
    y, idx, count = ix.unique_with_counts(ef.constant(x) if x else
                                          ef.constant(np.zeros(0, np.int32)), out_idx=ef.int64)
    assert count.dtype == ef.int64 and idx.dtype == ef.int64
    assert count.numpy().tolist() == [positions.count(i) for i in range(len(values))]


def test_unique_not_sorted_like_numpy_and_nan_distinct():
    y, _ = ix.unique(ef.constant([3, 1, 2, 1]))
    assert y.numpy().tolist() == [3, 1, 2] != np.unique([3, 1, 2, 1]).tolist()
    y, idx = ix.unique(ef.constant([np.nan, 1.0, np.nan]))
    assert len(y.numpy()) == 3 and idx.numpy().tolist() == [0, 1, 2]


def test_unique_errors():
    with pytest.raises(errors.InvalidArgumentError, match="1-D"):
        ix.unique(ef.constant([[1, 2]]))
    with pytest.raises(errors.InvalidArgumentError, match="out_idx"):
        ix.unique(ef.constant([1, 2]), out_idx=ef.float32)


# --------------------------------------------------------------------------- searchsorted

@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("sshape,vshape", [((6,), (4,)), ((3, 5), (3, 7)), ((2, 2, 4), (2, 2, 3)),
                                           ((0,), (3,)), ((4,), (0,))])
def test_searchsorted_matches_numpy(side, sshape, vshape):
    seq = np.sort(RNG.integers(0, 6, size=sshape), axis=-1).astype(np.float32)
    values = RNG.integers(-1, 7, size=vshape).astype(np.float32)
    got = ix.searchsorted(ef.constant(seq), ef.constant(values), side=side)
    expected = np.empty(vshape, np.int32)
    for pos in np.ndindex(*vshape[:-1]):
        expected[pos] = np.searchsorted(seq[pos], values[pos], side=side)
    assert got.dtype == ef.int32
    np.testing.assert_array_equal(got.numpy(), expected)


def test_searchsorted_large_rows_and_out_type(monkeypatch):
    monkeypatch.setattr(search_ops, "_SEARCH_BLOCK", 4)  # forces the per-row path
    seq = np.sort(_x(2, 9), axis=-1)
    values = _x(2, 5)
    for side in ("left", "right"):
        got = ix.searchsorted(seq, values, side=side, out_type=ef.int64)
        assert got.dtype == ef.int64
        np.testing.assert_array_equal(
            got.numpy(), [np.searchsorted(seq[i], values[i], side=side) for i in range(2)])


def test_searchsorted_errors():
    with pytest.raises(errors.InvalidArgumentError, match="side"):
        ix.searchsorted([1.0], [1.0], side="middle")
    with pytest.raises(errors.InvalidArgumentError, match="leading dims"):
        ix.searchsorted(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(errors.InvalidArgumentError, match="out_type"):
        ix.searchsorted([1.0], [1.0], out_type=ef.float32)


# --------------------------------------------------------------------------- module surface

INDEXING_PARTS = (indexing_common, gather_ops, index_nd_ops, segment_ops, mask_ops,
                  search_ops)


def test_exports_are_public_functions():
    for module in (ix,) + INDEXING_PARTS:
        names = [n for group in module.EXPORTS.values() for n in group]
        assert set(names) <= set(module.__all__)
        for name in module.__all__:
            assert callable(getattr(module, name)) and getattr(module, name).__doc__


def _my_prims():
    from eagerflow.ops import registry
    from eagerflow.ops.array import slicing

    mine = [v for m in INDEXING_PARTS + (slicing,) for v in vars(m).values()
            if isinstance(v, registry.Primitive) and v.forward.__module__ == m.__name__]
    return sorted(set(mine), key=lambda p: p.name)


@pytest.mark.parametrize("prim", _my_prims(), ids=lambda p: p.name)
def test_shape_rules_agree_with_kernels(prim):
    """The tracing shape rule gives each sample's real output shape (None = data-dependent)."""
    from eagerflow.ops.dispatch import execute
    from eagerflow.ops.registry import AbstractValue

    dtype = ef.float64 if ef.float64 in (prim.dtypes or [ef.float64]) else prim.dtypes[-1]
    for args, attrs in prim.samples(np.random.default_rng(3), dtype):
        avals = [AbstractValue(np.shape(a), ef.as_dtype(np.asarray(a).dtype)) for a in args]
        want = prim.shape_fn(*avals, **attrs)
        got = execute(prim, tuple(ef.constant(a) for a in args), attrs)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for w, g in zip(want, got):
            assert w.dtype == g.dtype, prim.name
            assert len(w.shape) == g.ndim, prim.name
            for wd, gd in zip(w.shape, g.shape.as_list()):
                assert wd is None or wd == gd, (prim.name, w.shape, g.shape)
