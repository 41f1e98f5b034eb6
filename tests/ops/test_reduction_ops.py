"""Reductions and scans: values against numpy, TF's axis/dtype/empty semantics, gradients.

Every primitive of the family is run over its declared samples against its numpy reference,
its gradient rule is checked by random-direction finite differences (``check_vjp``), and its
declared bad inputs must raise. The public functions and composites are checked against
numpy written here, and their gradients through the GradientTape against central
differences.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.testing import check_vjp
from eagerflow.ops import math as math_family
from eagerflow.ops import reduce as reduce_family
from eagerflow.ops.math import arithmetic, binary_math
from eagerflow.ops.math import complex_math
from eagerflow.ops.math import special_math
from eagerflow.ops.math import unary_math
from eagerflow.ops.reduce import reduction_composites
from eagerflow.ops.reduce import reductions
from eagerflow.ops.reduce import scans
from tests.ops.family_view import family_view

# The math family as one namespace: its modules' names, __all__ and EXPORTS.
math_ops = family_view(math_family, (unary_math, special_math, binary_math, complex_math),
                extra=(arithmetic,))
# The reduce family as one namespace: its modules' names, __all__ and EXPORTS.
r = family_view(reduce_family, (scans, reductions, reduction_composites,))

RNG = np.random.default_rng(20240611)
PRIMS = [r.SUM, r.PROD, r.MEAN, r.MAX, r.MIN, r.ANY, r.ALL_, r.BROADCAST_REDUCED, r.ARGMAX,
         r.ARGMIN, r.CUMSUM, r.CUMPROD, r.CUMULATIVE_LOGSUMEXP]
DIFFERENTIABLE = [p for p in PRIMS if p.vjp is not None]


def _dtypes(prim):
    if prim.sweep_dtypes is not None:
        return list(prim.sweep_dtypes)
    return [dt for dt in (ef.float32, ef.float64, ef.int32) if dt in prim.dtypes]


def _close(got, expected, rtol=1e-6, atol=1e-6):
    got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def _tape_grad(fn, x):
    x = ef.constant(x)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return np.asarray(tape.gradient(y, x).numpy())


def _numeric_grad(fn, x, eps=1e-6):
    """Central differences of sum(fn(x)) for float64 x."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        grad[i] = (np.sum(fn(ef.constant(hi)).numpy()) - np.sum(fn(ef.constant(lo)).numpy())) \
            / (2 * eps)
    return grad


# --- registry-declared samples, references, gradients and bad inputs ----------------------

@pytest.mark.parametrize("prim", PRIMS, ids=lambda p: p.name)
def test_samples_match_reference(prim):
    cases = 0
    for dtype in _dtypes(prim):
        for args, attrs in prim.samples(RNG, dtype):
            got = execute(prim, tuple(ef.constant(a) for a in args), attrs)
            with np.errstate(all="ignore"):
                expected = prim.reference(*args, **attrs)
            tol = 1e-5 if dtype == ef.float32 else 1e-12
            _close(got, expected, rtol=tol, atol=tol)
            # The shape rule agrees with the kernel.
            aval = prim.shape_fn(*(AbstractValue(np.shape(a), ef.as_dtype(np.asarray(a).dtype))
                                   for a in args), **attrs)
            assert aval.shape == np.shape(expected) and aval.dtype == got.dtype
            cases += 1
    assert cases >= 5


@pytest.mark.parametrize("prim", DIFFERENTIABLE, ids=lambda p: p.name)
def test_gradient_rules(prim):
    cases = prim.grad_samples(RNG)
    assert cases
    for i, (args, attrs) in enumerate(cases):
        check_vjp(prim, args, attrs, seed=i)


@pytest.mark.parametrize("prim", [p for p in PRIMS if p.bad_samples], ids=lambda p: p.name)
def test_declared_bad_inputs(prim):
    for args, attrs, exc in prim.bad_samples(RNG):
        with pytest.raises(exc) as info:
            execute(prim, tuple(ef.constant(a) for a in args), attrs)
        assert prim.name in str(info.value)


# --- axis forms and errors -----------------------------------------------------------------

X = RNG.uniform(-2, 2, size=(2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("axis, np_axis", [
    (None, None), (0, 0), (-1, 2), ([0, 2], (0, 2)), ((-1, 0), (0, 2)), ([], ()),
    (np.array([1, -1]), (1, 2)), (np.int64(1), 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_axis_forms(axis, np_axis, keepdims):
    got = r.reduce_sum(ef.constant(X), axis=axis, keepdims=keepdims)
    _close(got, np.sum(X, axis=np_axis, keepdims=keepdims), rtol=1e-5)


def test_axis_as_tensor():
    got = r.reduce_max(ef.constant(X), axis=ef.constant([0, -1]))
    _close(got, np.max(X, axis=(0, 2)))
    _close(r.reduce_min(ef.constant(X), axis=ef.constant(1)), np.min(X, axis=1))


@pytest.mark.parametrize("fn", [r.reduce_sum, r.reduce_mean, r.reduce_max, r.reduce_prod])
def test_out_of_range_axis_names_op_axis_rank_and_range(fn):
    with pytest.raises(errors.InvalidArgumentError) as info:
        fn(ef.constant(X), axis=3)
    message = str(info.value)
    assert fn.__name__ in message and "3" in message and "[-3, 2]" in message
    with pytest.raises(errors.InvalidArgumentError):
        fn(ef.constant(X), axis=[-4])


def test_duplicate_axis_rejected():
    with pytest.raises(errors.InvalidArgumentError) as info:
        r.reduce_sum(ef.constant(X), axis=[0, -3])
    assert "reduce_sum" in str(info.value) and "twice" in str(info.value)


def test_scalar_input_axis():
    s = ef.constant(2.5)
    _close(r.reduce_sum(s), np.float32(2.5))
    _close(r.reduce_sum(s, axis=[]), np.float32(2.5))
    with pytest.raises(errors.InvalidArgumentError) as info:
        r.reduce_mean(s, axis=0)
    assert "scalar" in str(info.value)


def test_bad_axis_type():
    with pytest.raises(errors.InvalidArgumentError):
        r.reduce_sum(ef.constant(X), axis="0")
    with pytest.raises(errors.InvalidArgumentError):
        r.reduce_sum(ef.constant(X), axis=np.array([0.5]))


def test_python_lists_and_default_dtypes():
    _close(r.reduce_sum([1, 2, 3]), np.int32(6))
    _close(r.reduce_sum([[1.0, 2.0]], axis=1), np.array([3.0], np.float32))


# --- dtypes --------------------------------------------------------------------------------

def test_integer_sums_keep_dtype_and_wrap():
    x = np.array([2**30, 2**30, 2**30], np.int32)
    _close(r.reduce_sum(ef.constant(x)), np.sum(x, dtype=np.int32))
    _close(r.reduce_prod(ef.constant(np.array([3, 4], np.uint8))), np.uint8(12))


def test_integer_mean_truncates_toward_zero():
    _close(r.reduce_mean(ef.constant([1, 0, 1, 0])), np.int32(0))
    _close(r.reduce_mean(ef.constant([1, 2])), np.int32(1))
    _close(r.reduce_mean(ef.constant([-1, -2])), np.int32(-1))  # not floor (-2)
    x = RNG.integers(-50, 50, size=(4, 7)).astype(np.int64)
    _close(r.reduce_mean(ef.constant(x), axis=1),
           np.trunc(x.sum(axis=1) / 7).astype(np.int64))


def test_mean_float16_accumulates_in_float32():
    x = np.full((4096,), 0.1, np.float16)
    got = r.reduce_mean(ef.constant(x)).numpy()
    assert got.dtype == np.float16
    assert abs(float(got) - 0.1) < 1e-3
    assert abs(float(r.reduce_sum(ef.constant(x)).numpy()) - 409.6) < 1.0


def test_complex_sum_mean_prod():
    z = (RNG.normal(size=(3, 2)) + 1j * RNG.normal(size=(3, 2))).astype(np.complex64)
    _close(r.reduce_sum(ef.constant(z), 0), z.sum(0), rtol=1e-5)
    _close(r.reduce_mean(ef.constant(z), 1), z.mean(1), rtol=1e-5)
    _close(r.reduce_prod(ef.constant(z)), np.prod(z), rtol=1e-5)


def test_dtype_errors():
    with pytest.raises(errors.InvalidArgumentError):
        r.reduce_sum(ef.constant([True, False]))
    with pytest.raises(errors.InvalidArgumentError):
        r.reduce_any(ef.constant([1, 0]))
    with pytest.raises(errors.InvalidArgumentError):
        r.reduce_max(ef.constant([1j]))


def test_any_all():
    b = RNG.random((3, 4)) > 0.5
    _close(r.reduce_any(ef.constant(b), 1), b.any(1))
    _close(r.reduce_all(ef.constant(b), 0, keepdims=True), b.all(0, keepdims=True))


# --- empty and non-finite ------------------------------------------------------------------

def test_empty_reductions_give_identities():
    e = ef.constant(np.zeros((0,), np.float32))
    _close(r.reduce_sum(e), np.float32(0))
    _close(r.reduce_prod(e), np.float32(1))
    _close(r.reduce_max(e), np.float32(-np.inf))
    _close(r.reduce_min(e), np.float32(np.inf))
    assert np.isnan(r.reduce_mean(e).numpy())
    _close(r.reduce_any(ef.constant(np.zeros((0,), bool))), np.bool_(False))
    _close(r.reduce_all(ef.constant(np.zeros((0,), bool))), np.bool_(True))
    ei = ef.constant(np.zeros((2, 0), np.int32))
    _close(r.reduce_max(ei, axis=1), np.full((2,), np.iinfo(np.int32).min, np.int32))
    _close(r.reduce_min(ei, axis=1), np.full((2,), np.iinfo(np.int32).max, np.int32))
    _close(r.reduce_mean(ei, axis=1), np.zeros((2,), np.int32))
    _close(r.reduce_max(ei, axis=0), np.zeros((0,), np.int32))


def test_max_min_propagate_nan():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    _close(r.reduce_max(ef.constant(x), 1), np.array([np.nan, 6.0], np.float32))
    _close(r.reduce_min(ef.constant(x), 1), np.array([np.nan, 4.0], np.float32))
    assert np.isnan(r.reduce_max(ef.constant(x)).numpy())


# --- gradients through the tape ------------------------------------------------------------

def test_max_gradient_splits_ties_equally():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    got = _tape_grad(lambda t: r.reduce_max(t, axis=1), x)
    np.testing.assert_allclose(got, [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    got = _tape_grad(lambda t: r.reduce_min(t), x)
    np.testing.assert_allclose(got, [[1.0, 0, 0], [0, 0, 0]])


def test_prod_gradient_with_zeros_is_exact():
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.5, 2.0, 4.0]])
    got = _tape_grad(lambda t: r.reduce_prod(t, axis=1), x)
    expected = np.array([[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [8.0, 6.0, 3.0]])
    np.testing.assert_allclose(got, expected)
    got = _tape_grad(lambda t: r.reduce_prod(t), np.array([[2.0, 0.0], [3.0, 4.0]]))
    np.testing.assert_allclose(got, [[0.0, 24.0], [0.0, 0.0]])


def test_prod_gradient_does_not_overflow_through_division():
    x = np.array([1e300, 1e300, 1e-300])
    got = _tape_grad(lambda t: r.reduce_prod(t), x)
    # Only the last partial product really overflows (1e600); dividing the full product by
    # x_i would give inf for the first two as well.
    np.testing.assert_allclose(got, [1.0, 1.0, np.inf])


def test_second_order_gradient_of_prod():
    x = ef.constant(np.array([2.0, 3.0, 5.0]))
    with ef.GradientTape() as outer:
        outer.watch(x)
        with ef.GradientTape() as inner:
            inner.watch(x)
            y = r.reduce_prod(x)
        g = inner.gradient(y, x)  # [15, 10, 6]
        s = r.reduce_sum(g)
    h = outer.gradient(s, x)  # d/dx_i sum_j prod_{k != j} x_k
    np.testing.assert_allclose(h.numpy(), [3 + 5, 2 + 5, 2 + 3])


def test_cumprod_gradient_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 0.0, 4.0])
    for exclusive in (False, True):
        for reverse in (False, True):
            def f(t, e=exclusive, rv=reverse):
                return r.cumprod(t, exclusive=e, reverse=rv) * ef.constant(
                    np.arange(1.0, 6.0))
            np.testing.assert_allclose(_tape_grad(f, x), _numeric_grad(f, x), atol=1e-6)


def test_mean_gradient_divides_by_count():
    got = _tape_grad(lambda t: r.reduce_mean(t, axis=[0, 2]), np.ones((2, 3, 4)))
    np.testing.assert_allclose(got, np.full((2, 3, 4), 1 / 8))


@pytest.mark.parametrize("fn", [
    lambda t: r.reduce_logsumexp(t, axis=1),
    lambda t: r.reduce_variance(t, axis=0, keepdims=True),
    lambda t: r.reduce_std(t, axis=[0, 1]),
    lambda t: r.reduce_euclidean_norm(t, axis=1),
    # exp() keeps the leading -inf of an exclusive scan finite for the differences.
    lambda t: math_ops.exp(r.cumulative_logsumexp(t, axis=1, exclusive=True)) * ef.constant(
        np.array([1.0, -2.0, 0.5])),
    lambda t: math_ops.exp(r.cumulative_logsumexp(t, axis=0, exclusive=True, reverse=True)),
    lambda t: r.cumulative_logsumexp(t, axis=0, reverse=True),
])
def test_composite_gradients_match_finite_differences(fn):
    x = RNG.uniform(-2, 2, size=(2, 3))
    np.testing.assert_allclose(_tape_grad(fn, x), _numeric_grad(fn, x), rtol=1e-6, atol=1e-7)


def test_logsumexp_gradient_is_softmax():
    x = np.array([[1000.0, 1000.0, 999.0]])
    got = _tape_grad(lambda t: r.reduce_logsumexp(t, axis=1), x)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(got, e / e.sum(), rtol=1e-12)


# --- composites ----------------------------------------------------------------------------

def test_reduce_logsumexp_values():
    x = RNG.uniform(-3, 3, size=(3, 4))
    expected = np.log(np.sum(np.exp(x), axis=1))
    _close(r.reduce_logsumexp(ef.constant(x), axis=1), expected, rtol=1e-12)
    _close(r.reduce_logsumexp(ef.constant(x), axis=-1, keepdims=True), expected[:, None],
           rtol=1e-12)
    _close(r.reduce_logsumexp(ef.constant(x)), np.log(np.sum(np.exp(x))), rtol=1e-12)
    big = ef.constant([1000.0, 1000.0])
    assert abs(float(r.reduce_logsumexp(big)) - (1000 + np.log(2))) < 1e-3
    _close(r.reduce_logsumexp(ef.constant([-np.inf, -np.inf])), np.float32(-np.inf))
    _close(r.reduce_logsumexp(ef.constant([np.inf, 1.0])), np.float32(np.inf))
    _close(r.reduce_logsumexp(ef.constant(np.zeros((0,), np.float32))), np.float32(-np.inf))
    with pytest.raises(errors.InvalidArgumentError):
        r.reduce_logsumexp(ef.constant([1, 2]))


def test_variance_and_std():
    x = RNG.uniform(-3, 3, size=(4, 5))
    _close(r.reduce_variance(ef.constant(x), axis=0), x.var(axis=0), rtol=1e-12)
    _close(r.reduce_std(ef.constant(x), axis=1, keepdims=True), x.std(axis=1, keepdims=True),
           rtol=1e-12)
    z = (RNG.normal(size=(6,)) + 1j * RNG.normal(size=(6,))).astype(np.complex128)
    _close(r.reduce_variance(ef.constant(z)), np.var(z), rtol=1e-12)
    _close(r.reduce_std(ef.constant(z)), np.std(z), rtol=1e-12)
    with pytest.raises(errors.InvalidArgumentError) as info:
        r.reduce_variance(ef.constant([1, 2, 3]))
    assert "int32" in str(info.value)


def test_euclidean_norm():
    x = RNG.uniform(-3, 3, size=(3, 4)).astype(np.float32)
    _close(r.reduce_euclidean_norm(ef.constant(x), axis=1), np.linalg.norm(x, axis=1),
           rtol=1e-6)
    ints = np.array([[1, 2, 3], [1, 1, 1]], np.int32)
    _close(r.reduce_euclidean_norm(ef.constant(ints)), np.int32(4))
    _close(r.reduce_euclidean_norm(ef.constant(ints), 0), np.array([1, 2, 3], np.int32))
    z = np.array([3 + 4j, 0j], np.complex128)
    _close(r.reduce_euclidean_norm(ef.constant(z)), np.complex128(5))


def test_count_nonzero():
    x = np.array([[0, 1, 7], [0, 0, -2]], np.int32)
    _close(r.count_nonzero(ef.constant(x)), np.int64(3))
    _close(r.count_nonzero(ef.constant(x), axis=1, keepdims=True), np.array([[2], [1]]))
    _close(r.count_nonzero(ef.constant(x > 0), axis=0, dtype=ef.int32),
           np.array([0, 1, 1], np.int32))
    _close(r.count_nonzero(ef.constant([0.0, 0.5, np.nan])), np.int64(2))


# --- argmax / argmin -----------------------------------------------------------------------

def test_argmax_argmin():
    x = np.array([[1, 9, 9], [7, 2, 7]], np.int32)
    _close(r.argmax(ef.constant(x)), np.array([1, 0, 0], np.int64))  # default axis 0
    _close(r.argmax(ef.constant(x), axis=1), np.array([1, 0], np.int64))  # first of ties
    _close(r.argmin(ef.constant(x), axis=-1, output_type=ef.int32), np.array([0, 1], np.int32))
    _close(r.argmax(ef.constant([[True, False]]), axis=1), np.array([0], np.int64))


def test_argmax_errors():
    with pytest.raises(errors.InvalidArgumentError) as info:
        r.argmax(ef.constant(np.zeros((2, 0))), axis=1)
    assert "empty" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError):
        r.argmax(ef.constant(3.0))
    with pytest.raises(errors.InvalidArgumentError):
        r.argmax(ef.constant([1.0]), axis=1)
    with pytest.raises(errors.InvalidArgumentError):
        r.argmax(ef.constant([1.0]), output_type=ef.float32)
    with pytest.raises(errors.InvalidArgumentError):
        r.argmin(ef.constant([[1.0]]), axis=[0, 1])


# --- scans ---------------------------------------------------------------------------------

def _np_scan(fn, x, axis, exclusive, reverse, identity):
    if reverse:
        x = np.flip(x, axis)
    out = fn(x, axis=axis)
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis), identity),
                              np.take(out, range(x.shape[axis] - 1), axis)], axis)
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_cumprod(exclusive, reverse, axis):
    x = RNG.integers(-3, 4, size=(3, 4)).astype(np.int32)
    _close(r.cumsum(ef.constant(x), axis, exclusive, reverse),
           _np_scan(np.cumsum, x, axis, exclusive, reverse, 0).astype(np.int32))
    _close(r.cumprod(ef.constant(x), axis, exclusive, reverse),
           _np_scan(np.cumprod, x, axis, exclusive, reverse, 1).astype(np.int32))


def test_scan_defaults_and_errors():
    _close(r.cumsum(ef.constant([[1, 2], [3, 4]])), np.array([[1, 2], [4, 6]], np.int32))
    _close(r.cumsum(ef.constant([1.0, 2.0]), axis=ef.constant(0)),
           np.array([1.0, 3.0], np.float32))
    with pytest.raises(errors.InvalidArgumentError) as info:
        r.cumsum(ef.constant([1, 2]), axis=1)
    assert "cumsum" in str(info.value) and "[-1, 0]" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError):
        r.cumprod(ef.constant(2.0))
    with pytest.raises(errors.InvalidArgumentError):
        r.cumulative_logsumexp(ef.constant([1, 2]))


def test_cumulative_logsumexp_is_accurate_across_a_large_range():
    x = np.array([-1000.0, 0.0, 1000.0], np.float64)
    got = r.cumulative_logsumexp(ef.constant(x)).numpy()
    np.testing.assert_allclose(got, [-1000.0, 0.0, 1000.0])
    got = r.cumulative_logsumexp(ef.constant(x), exclusive=True).numpy()
    np.testing.assert_allclose(got, [-np.inf, -1000.0, 0.0])
    y = RNG.uniform(-2, 2, size=(2, 5)).astype(np.float32)
    _close(r.cumulative_logsumexp(ef.constant(y), axis=1, reverse=True),
           np.flip(np.log(np.cumsum(np.exp(np.flip(y, 1)), 1)), 1).astype(np.float32),
           rtol=1e-5)


def test_hot_path_reuses_attrs():
    x = ef.constant(X)
    r.reduce_sum(x, axis=-1)
    key = ("reduce_sum", -1, 3, False)
    assert r._ATTR_CACHE[key] == {"axis": (2,), "keepdims": False}
    assert r._ALL_AXES[0] == {"axis": None, "keepdims": False}
