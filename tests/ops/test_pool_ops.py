"""Pooling against loop-per-output-position numpy references written here.

The references compute TF's SAME padding from the documented formula and gather each window's
valid elements with explicit bounds checks, so SAME edges (average over valid elements only)
are checked independently of the kernels. Gradients: routing to the first maximum, TF's tie
rule, and finite differences in float64 up to the gradients' own gradients.
"""

import itertools

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops.nn import pool_kernels as PK
from eagerflow.ops.nn import pool_ops as P
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.testing import check_vjp

RNG = np.random.default_rng(7)
FIRST = {"NCW", "NCHW", "NCDHW"}


def distinct(*shape, dtype=np.float64):
    """Distinct values (unambiguous maxima) in [-0.5, 0.5)."""
    size = int(np.prod(shape))
    return (RNG.permutation(size).reshape(shape) / max(size, 1) - 0.5).astype(dtype)


def windows(shape, ksize, strides, padding, dilations=None):
    """Yields (output position, list of valid input coordinates) per window (spatial only)."""
    nd = len(ksize)
    dilations = dilations or (1,) * nd
    geo = []
    for i, (n, k, s, d) in enumerate(zip(shape, ksize, strides, dilations)):
        eff = (k - 1) * d + 1
        if padding == "SAME":
            out = -(-n // s)
            lo = max((out - 1) * s + eff - n, 0) // 2
        elif padding == "VALID":
            out, lo = (n - eff) // s + 1, 0
        else:
            lo, hi = padding[i]
            out = (n + lo + hi - eff) // s + 1
        geo.append((out, lo))
    for pos in itertools.product(*[range(o) for o, _ in geo]):
        coords = []
        for tap in itertools.product(*[range(k) for k in ksize]):
            c = tuple(p * s - lo + t * d
                      for p, s, (_, lo), t, d in zip(pos, strides, geo, tap, dilations))
            if all(0 <= ci < n for ci, n in zip(c, shape)):
                coords.append(c)
        yield pos, coords


def ref_pool(x, kind, ksize, strides, padding, data_format=None, dilations=None):
    if data_format in FIRST:
        x = np.moveaxis(x, 1, -1)
    shape = x.shape[1:-1]
    outs = list(windows(shape, ksize, strides, padding, dilations))
    out_shape = tuple(max(p[i] for p, _ in outs) + 1 for i in range(len(ksize)))
    y = np.zeros((x.shape[0],) + out_shape + (x.shape[-1],))
    for pos, coords in outs:
        vals = np.stack([x[(slice(None),) + c] for c in coords])
        y[(slice(None),) + pos] = vals.max(axis=0) if kind == "max" else vals.mean(axis=0)
    return np.moveaxis(y, -1, 1) if data_format in FIRST else y


def ref_max_pool_grad(x, g, ksize, strides, padding):
    """Routes each output gradient to the first maximum of its window (NHWC-like layout)."""
    dx = np.zeros(x.shape)
    for pos, coords in windows(x.shape[1:-1], ksize, strides, padding):
        for b, c in itertools.product(range(x.shape[0]), range(x.shape[-1])):
            vals = [x[(b,) + co + (c,)] for co in coords]
            best = coords[int(np.argmax(vals))]
            dx[(b,) + best + (c,)] += g[(b,) + pos + (c,)]
    return dx


def check(got, expected, dtype=np.float64, tol=1e-12):
    got = np.asarray(got.numpy())
    assert got.shape == expected.shape and got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol)


CASES = [
    # (input shape, ksize, strides, padding, data_format)
    ((2, 6, 6, 3), (2, 2), (2, 2), "VALID", "NHWC"),
    ((2, 5, 5, 3), (2, 2), (2, 2), "SAME", "NHWC"),      # odd: last window half padding
    ((1, 5, 7, 2), (3, 3), (2, 2), "SAME", "NHWC"),
    ((1, 4, 6, 2), (3, 2), (1, 3), "SAME", "NHWC"),
    ((1, 6, 5, 2), (4, 4), (1, 1), "SAME", "NHWC"),      # pad 1 before, 2 after
    ((1, 2, 5, 6), (3, 3), (2, 1), "SAME", "NCHW"),
    ((1, 7, 6, 2), (3, 2), (2, 2), ((1, 1), (0, 1)), "NHWC"),
]


@pytest.mark.parametrize("xs,ksize,strides,padding,fmt", CASES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_matches_reference(kind, xs, ksize, strides, padding, fmt):
    x = distinct(*xs)
    fn = P.max_pool2d if kind == "max" else P.avg_pool2d
    got = fn(ef.constant(x), list(ksize), list(strides), padding, data_format=fmt)
    check(got, ref_pool(x, kind, ksize, strides, padding, fmt))
    # The generic form infers the rank.
    check(P.max_pool(x, ksize, strides, padding, fmt) if kind == "max"
          else P.avg_pool(x, ksize, strides, padding, fmt), got.numpy())


def test_avg_pool_same_averages_only_valid_elements():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0]).reshape(1, 5, 1)
    got = P.avg_pool1d(x, 2, 2, "SAME")
    np.testing.assert_array_equal(got.numpy().ravel(), [1.5, 3.5, 5.0])
    # 3x3 windows, stride 1: the corner window holds 4 valid elements, the edge one 6.
    ones = np.ones((1, 4, 4, 1))
    np.testing.assert_array_equal(P.avg_pool2d(ones, 3, 1, "SAME").numpy(), ones)
    ramp = np.arange(16.0).reshape(1, 4, 4, 1)
    got = P.avg_pool2d(ramp, 3, 1, "SAME").numpy()[0, :, :, 0]
    assert got[0, 0] == np.mean([0, 1, 4, 5])
    assert got[0, 1] == np.mean([0, 1, 2, 4, 5, 6])


def test_max_pool_same_padding_never_wins():
    x = -np.arange(1.0, 6.0).reshape(1, 5, 1)           # all negative
    np.testing.assert_array_equal(P.max_pool1d(x, 2, 2, "SAME").numpy().ravel(),
                                  [-1.0, -3.0, -5.0])
    xi = -np.arange(1, 6, dtype=np.int32).reshape(1, 5, 1)
    got = P.max_pool1d(xi, 2, 2, "SAME")
    assert got.dtype == ef.int32
    np.testing.assert_array_equal(got.numpy().ravel(), [-1, -3, -5])


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_max_pool_grad_of_minus_infinity_windows_stays_inside(fmt):
    # A window of -inf elements has its maximum at the padding too (also -inf): the
    # gradient goes to the first element inside, as in TF, not to the cropped padding.
    x = np.full((1, 3, 3, 1), -np.inf)
    x[0, 2, 2, 0] = 1.0
    attrs = P._attrs(2, 3, 1, "SAME", fmt)
    g = RNG.standard_normal((1, 3, 3, 1))
    if fmt == "NCHW":
        x, g = x.transpose(0, 3, 1, 2), g.transpose(0, 3, 1, 2)
    got = execute(P.MAX_POOL_GRAD, (ef.constant(x), ef.constant(g)), attrs).numpy()
    np.testing.assert_allclose(got, P._ref_max_pool_grad(x, g, **attrs), rtol=1e-12)
    np.testing.assert_allclose(got.sum(), g.sum(), rtol=1e-12)


@pytest.mark.parametrize("xs,ksize,strides,padding,fmt", [
    ((2, 9, 3), (3,), (2,), "SAME", "NWC"),
    ((1, 2, 8), (2,), (3,), "VALID", "NCW"),
    ((1, 4, 5, 3, 2), (2, 2, 2), (2, 2, 1), "SAME", "NDHWC"),
    ((1, 2, 3, 5, 4), (2, 3, 2), (1, 2, 2), "SAME", "NCDHW"),
])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_1d_3d(kind, xs, ksize, strides, padding, fmt):
    x = distinct(*xs)
    nd = len(ksize)
    fn = {("max", 1): P.max_pool1d, ("max", 3): P.max_pool3d,
          ("avg", 1): P.avg_pool1d, ("avg", 3): P.avg_pool3d}[kind, nd]
    check(fn(x, list(ksize), list(strides), padding, data_format=fmt),
          ref_pool(x, kind, ksize, strides, padding, fmt))


def test_pool_dtypes_and_empty():
    x = distinct(1, 4, 4, 2, dtype=np.float16)
    got = P.avg_pool2d(x, 2, 2, "VALID")
    check(got, ref_pool(x.astype(np.float64), "avg", (2, 2), (2, 2), "VALID"), np.float16, 1e-3)
    empty = P.max_pool2d(np.zeros((0, 4, 4, 3), np.float32), 2, 2, "SAME")
    assert empty.shape.as_list() == [0, 2, 2, 3]
    with pytest.raises(errors.InvalidArgumentError, match="dtype"):
        P.avg_pool2d(np.zeros((1, 4, 4, 1), np.int32), 2, 2, "SAME")


def test_max_pool_nan_propagates():
    x = np.arange(8.0).reshape(1, 8, 1)
    x[0, 2, 0] = np.nan
    got = P.max_pool1d(x, 2, 2, "VALID").numpy().ravel()
    assert np.isnan(got[1]) and got[0] == 1.0 and got[3] == 7.0


def test_pool_generic_with_dilations():
    x = np.array([1.0, 5.0, 2.0, 4.0, 0.0, 3.0]).reshape(1, 6, 1)
    got = P.pool(x, [2], "MAX", dilations=[2])
    np.testing.assert_array_equal(got.numpy().ravel(), [2.0, 5.0, 2.0, 4.0])
    xs = distinct(1, 7, 6, 2)
    got = P.pool(xs, [2, 2], "AVG", padding="SAME", dilations=[2, 1])
    check(got, ref_pool(xs, "avg", (2, 2), (1, 1), "SAME", dilations=(2, 1)))
    check(P.pool(xs, [3, 2], "max", strides=[2, 1], padding="SAME"),
          ref_pool(xs, "max", (3, 2), (2, 1), "SAME"))
    with pytest.raises(errors.InvalidArgumentError, match="pooling_type"):
        P.pool(xs, [2, 2], "MIN")
    with pytest.raises(errors.InvalidArgumentError, match="dilations above 1"):
        P.pool(xs, [2, 2], "MAX", strides=2, dilations=2)


# Gradients -----------------------------------------------------------------------------------

@pytest.mark.parametrize("xs,ksize,strides,padding,fmt", CASES[:5])
def test_max_pool_grad_routes_to_the_maximum(xs, ksize, strides, padding, fmt):
    x = distinct(*xs)
    attrs = P._attrs(2, ksize, strides, padding, fmt)
    y = P.max_pool2d(x, list(ksize), list(strides), padding)
    g = distinct(*y.shape.as_list())
    got = execute(P.MAX_POOL_GRAD, (ef.constant(x), ef.constant(g)), attrs)
    check(got, ref_max_pool_grad(x, g, ksize, strides, padding))
    # MaxPoolGradGrad is its adjoint in the gradient argument.
    h = distinct(*xs)
    gathered = execute(P.MAX_POOL_GRAD_GRAD, (ef.constant(x), ef.constant(h)), attrs)
    assert abs(np.sum(got.numpy() * h) - np.sum(g * gathered.numpy())) < 1e-12


def test_max_pool_grad_ties_go_to_the_first_maximum():
    x = np.ones((1, 4, 4, 1))
    x[0, 2:, 2:, 0] = [[0.0, 3.0], [3.0, 3.0]]
    attrs = P._attrs(2, 2, 2, "VALID")
    got = execute(P.MAX_POOL_GRAD, (ef.constant(x), ef.constant(np.ones((1, 2, 2, 1)))), attrs)
    expected = np.zeros((4, 4))
    expected[0, 0] = expected[0, 2] = expected[2, 0] = expected[2, 3] = 1.0
    np.testing.assert_array_equal(got.numpy()[0, :, :, 0], expected)
    # Overlapping windows (stride 1): each window routes to its own first maximum.
    x1 = np.array([2.0, 2.0, 1.0, 2.0]).reshape(1, 4, 1)
    attrs1 = P._attrs(1, 2, 1, "VALID")
    got1 = execute(P.MAX_POOL_GRAD, (ef.constant(x1), ef.constant(np.ones((1, 3, 1)))), attrs1)
    np.testing.assert_array_equal(got1.numpy().ravel(), [1.0, 1.0, 0.0, 1.0])


@pytest.mark.parametrize("shape,attrs", [
    ((1, 5, 5, 2), P._attrs(2, 3, 2, "SAME")),
    ((1, 2, 5, 4), P._attrs(2, 2, 1, "SAME", "NCHW")),
    ((2, 7, 2), P._attrs(1, 3, 2, "VALID")),
    ((1, 3, 4, 3, 1), P._attrs(3, 2, 2, "SAME")),
    ((1, 6, 5, 1), P._attrs(2, 3, 2, ((1, 1), (2, 0)))),
])
def test_gradients_first_and_second_order(shape, attrs):
    x = distinct(*shape)
    out_shape = PK.pool_geometry(shape, attrs["ksize"], attrs["strides"], attrs["dilations"],
                                attrs["padding"], attrs["data_format"]).out_shape
    g, h = distinct(*out_shape), distinct(*shape)
    check_vjp(P.MAX_POOL, (x,), attrs)
    check_vjp(P.MAX_POOL_GRAD, (x, g), attrs)
    check_vjp(P.MAX_POOL_GRAD_GRAD, (x, h), attrs)
    check_vjp(P.AVG_POOL, (x,), attrs)
    check_vjp(P.AVG_POOL_GRAD, (g,), dict(attrs, input_shape=shape))


def test_tape_second_order_through_max_and_avg_pool():
    from eagerflow.ops.reduce import reductions

    x = ef.constant(distinct(1, 5, 5, 2))
    for fn in (P.max_pool2d, P.avg_pool2d):
        with ef.GradientTape() as outer:
            outer.watch(x)
            with ef.GradientTape() as inner:
                inner.watch(x)
                y = fn(x, 3, 2, "SAME")
                loss = reductions.reduce_sum(y * y * y)
            gx = inner.gradient(loss, x)
            penalty = reductions.reduce_sum(gx * gx)
        hx = outer.gradient(penalty, x)
        v = distinct(1, 5, 5, 2)

        def pen(xv, fn=fn):
            t = ef.constant(xv)
            with ef.GradientTape() as tape:
                tape.watch(t)
                yy = fn(t, 3, 2, "SAME")
                ll = reductions.reduce_sum(yy * yy * yy)
            gg = tape.gradient(ll, t).numpy()
            return float(np.sum(gg * gg))

        eps = 1e-6
        numeric = (pen(x.numpy() + eps * v) - pen(x.numpy() - eps * v)) / (2 * eps)
        assert abs(float(np.sum(hx.numpy() * v)) - numeric) < 1e-6 * max(1.0, abs(numeric))


def test_registry_samples_and_bad_samples():
    for prim in (P.MAX_POOL, P.MAX_POOL_GRAD, P.MAX_POOL_GRAD_GRAD, P.AVG_POOL, P.AVG_POOL_GRAD):
        for args, attrs in prim.samples(RNG, ef.float64):
            got = execute(prim, tuple(ef.constant(a) for a in args), attrs).numpy()
            np.testing.assert_allclose(got, prim.reference(*args, **attrs), rtol=1e-12,
                                       atol=1e-12)
        for args, attrs, exc in prim.bad_samples(RNG):
            with pytest.raises(exc):
                execute(prim, tuple(ef.constant(a) for a in args), attrs)


def test_shape_rule_with_unknown_dims():
    out = P.MAX_POOL.shape_fn(AbstractValue((None, 5, None, 3), ef.float32),
                              **P._attrs(2, 2, 2, "SAME"))
    assert out.shape == (None, 3, None, 3)
    out = P.AVG_POOL.shape_fn(AbstractValue((2, 3, 7, 7), ef.float32),
                              **P._attrs(2, 3, 2, "VALID", "NCHW"))
    assert out.shape == (2, 3, 3, 3)


# Errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("call,pattern", [
    (lambda x: P.max_pool2d(x[0], 2, 2, "SAME"), "rank-4"),
    (lambda x: P.max_pool2d(x, 2, 2, "same-ish"), "padding must be"),
    (lambda x: P.max_pool2d(x, 0, 2, "SAME"), "ksize must be"),
    (lambda x: P.avg_pool2d(x, 2, -1, "SAME"), "strides must be"),
    (lambda x: P.max_pool2d(x, [1, 2, 2, 2], 2, "SAME"), "batch and channel"),
    (lambda x: P.max_pool2d(x, 6, 1, "VALID"), "bigger than the input"),
    (lambda x: P.max_pool2d(x, 2, 2, "SAME", data_format="NCW"), "data_format"),
    (lambda x: P.max_pool2d(x, 2, 2, [[2, 0], [0, 0]]), "smaller than the window"),
    (lambda x: P.max_pool(x[0, 0, 0], 2, 2, "SAME"), "spatial"),
])
def test_bad_arguments(call, pattern):
    x = np.zeros((1, 5, 5, 3), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match=pattern):
        call(x)


def test_grad_shape_mismatch():
    x = ef.constant(np.zeros((1, 4, 4, 1)))
    with pytest.raises(errors.InvalidArgumentError, match="output gradient has shape"):
        execute(P.MAX_POOL_GRAD, (x, ef.constant(np.zeros((1, 3, 3, 1)))),
                P._attrs(2, 2, 2, "VALID"))
