"""sort, argsort, top_k and in_top_k: order and ties as TF, gradients back to the sources."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops.array import sort_ops as s
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.testing import check_vjp

RNG = np.random.default_rng(77)
PRIMS = [s.SORT, s.TOP_K, s.TAKE_ALONG_AXIS, s.PUT_ALONG_AXIS, s.IN_TOP_K]


def _dtypes(prim):
    if prim.sweep_dtypes is not None:
        return list(prim.sweep_dtypes)
    return [ef.float32, ef.float64, ef.int32]


def _eq(got, expected):
    got = np.asarray(got.numpy())
    expected = np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (
        got.shape, got.dtype, expected.shape, expected.dtype)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("prim", PRIMS, ids=lambda p: p.name)
def test_samples_match_reference(prim):
    cases = 0
    for dtype in _dtypes(prim):
        for args, attrs in prim.samples(RNG, dtype):
            got = execute(prim, tuple(ef.constant(a) for a in args), attrs)
            expected = prim.reference(*args, **attrs)
            if prim.single:
                got, expected = (got,), (expected,)
            avals = prim.shape_fn(*(AbstractValue(np.shape(a), ef.as_dtype(np.asarray(a).dtype))
                                    for a in args), **attrs)
            avals = avals if isinstance(avals, tuple) else (avals,)
            for g, e, aval in zip(got, expected, avals):
                _eq(g, e)
                assert aval.shape == np.shape(e) and aval.dtype == g.dtype
            cases += 1
    assert cases >= 4


@pytest.mark.parametrize("prim", [p for p in PRIMS if p.vjp], ids=lambda p: p.name)
def test_gradient_rules(prim):
    cases = prim.grad_samples(RNG) if prim.grad_samples else prim.samples(RNG, ef.float64)
    for i, (args, attrs) in enumerate(cases):
        check_vjp(prim, args, attrs, seed=i)


@pytest.mark.parametrize("prim", [p for p in PRIMS if p.bad_samples], ids=lambda p: p.name)
def test_declared_bad_inputs(prim):
    for args, attrs, exc in prim.bad_samples(RNG):
        with pytest.raises(exc) as info:
            execute(prim, tuple(ef.constant(a) for a in args), attrs)
        assert prim.name in str(info.value)


# --- sort / argsort ------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_sort_matches_numpy(axis):
    x = RNG.uniform(-5, 5, size=(4, 6)).astype(np.float32)
    _eq(s.sort(ef.constant(x), axis=axis), np.sort(x, axis=axis))
    _eq(s.sort(ef.constant(x), axis=axis, direction="DESCENDING"),
        -np.sort(-x, axis=axis))
    _eq(s.argsort(ef.constant(x), axis=axis),
        np.argsort(x, axis=axis, kind="stable").astype(np.int32))


def test_argsort_ties_keep_index_order_both_directions():
    x = np.array([3, 1, 3, 2, 1, 3], np.int32)
    _eq(s.argsort(ef.constant(x)), np.array([1, 4, 3, 0, 2, 5], np.int32))
    _eq(s.argsort(ef.constant(x), direction="DESCENDING", stable=True),
        np.array([0, 2, 5, 3, 1, 4], np.int32))


def test_sort_nan_is_largest():
    x = np.array([2.0, np.nan, -1.0], np.float32)
    _eq(s.sort(ef.constant(x)), np.array([-1.0, 2.0, np.nan], np.float32))
    _eq(s.sort(ef.constant(x), direction="DESCENDING"),
        np.array([np.nan, 2.0, -1.0], np.float32))


def test_sort_edge_shapes_and_errors():
    _eq(s.sort(ef.constant(np.zeros((2, 0), np.float32))), np.zeros((2, 0), np.float32))
    _eq(s.sort([5]), np.array([5], np.int32))
    with pytest.raises(errors.InvalidArgumentError) as info:
        s.sort(ef.constant(1.0))
    assert "rank >= 1" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError) as info:
        s.sort(ef.constant([1.0, 2.0]), axis=1)
    assert "sort" in str(info.value) and "[-1, 0]" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError) as info:
        s.argsort(ef.constant([1.0]), direction="UP")
    assert "ASCENDING" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError):
        s.sort(ef.constant([True, False]))


def test_sort_gradient_goes_back_to_sources():
    x = ef.constant(np.array([[3.0, 1.0, 2.0], [0.5, 0.7, 0.1]]))
    w = ef.constant(np.array([[1.0, 10.0, 100.0], [1.0, 10.0, 100.0]]))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = s.sort(x, direction="DESCENDING") * w
    got = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(got, [[1.0, 100.0, 10.0], [10.0, 1.0, 100.0]])


# --- top_k ---------------------------------------------------------------------------------

def test_top_k_documented_examples():
    result = s.top_k([1, 2, 98, 1, 1, 99, 3, 1, 3, 96, 4, 1], k=3)
    _eq(result.values, np.array([99, 98, 96], np.int32))
    _eq(result.indices, np.array([5, 2, 9], np.int32))
    result = s.top_k([1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0], k=3)
    _eq(result.indices, np.array([0, 1, 3], np.int32))  # ties: lower index first
    values, indices = result
    assert values is result.values and indices is result.indices
    assert isinstance(result, s.TopKV2)


def test_top_k_batched_and_options():
    x = RNG.normal(size=(3, 4, 7)).astype(np.float32)
    result = s.top_k(ef.constant(x), k=2, sorted=False, index_type=ef.int64)
    order = np.argsort(-x, axis=-1, kind="stable")[..., :2]
    _eq(result.indices, order.astype(np.int64))
    _eq(result.values, np.take_along_axis(x, order, -1))
    assert s.top_k(ef.constant(x), k=ef.constant(7)).values.shape == (3, 4, 7)
    assert s.top_k(ef.constant(x), k=0).values.shape == (3, 4, 0)
    _eq(s.top_k(ef.constant(x)).values, x.max(-1, keepdims=True))


def test_top_k_errors():
    with pytest.raises(errors.InvalidArgumentError) as info:
        s.top_k(ef.constant([1.0, 2.0]), k=3)
    assert "k=3" in str(info.value) and "TopKV2" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError):
        s.top_k(ef.constant([1.0, 2.0]), k=-1)
    with pytest.raises(errors.InvalidArgumentError):
        s.top_k(ef.constant(1.0))
    with pytest.raises(errors.InvalidArgumentError):
        s.top_k(ef.constant([1.0]), index_type=ef.float32)


def test_top_k_gradient_scatters_to_indices():
    x = ef.constant(np.array([[0.1, 0.9, 0.5, 0.7], [4.0, 3.0, 2.0, 1.0]]))
    with ef.GradientTape() as tape:
        tape.watch(x)
        values, _ = s.top_k(x, k=2)
        y = values * ef.constant(np.array([[2.0, 3.0], [5.0, 7.0]]))
    got = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(got, [[0.0, 2.0, 0.0, 3.0], [5.0, 7.0, 0.0, 0.0]])


# --- in_top_k ------------------------------------------------------------------------------

def test_in_top_k():
    preds = np.array([[0.1, 0.3, 0.6], [0.5, 0.2, 0.3], [0.4, 0.4, 0.2], [np.nan, 0.1, 0.2]],
                     np.float32)
    targets = np.array([2, 2, 1, 0], np.int32)
    _eq(s.in_top_k(targets, preds, 1), np.array([True, False, True, False]))
    _eq(s.in_top_k(targets, preds, 2), np.array([True, True, True, False]))
    # Ties at the boundary all count; out-of-range targets are False.
    _eq(s.in_top_k(ef.constant([0, 1, 3, -1], ef.int64), [[1.0, 1.0]] * 4, ef.constant(1)),
        np.array([True, True, False, False]))


def test_in_top_k_errors():
    with pytest.raises(errors.InvalidArgumentError):
        s.in_top_k(ef.constant([0.0]), [[1.0]], 1)
    with pytest.raises(errors.InvalidArgumentError) as info:
        s.in_top_k([0, 1], [[1.0, 2.0]], 1)
    assert "InTopKV2" in str(info.value)
