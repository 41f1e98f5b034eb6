"""clip_by_norm, global_norm and clip_by_global_norm against numpy, with TF's edge cases."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.indexed_slices import IndexedSlices
from eagerflow.ops.math import clip_ops as c

RNG = np.random.default_rng(5)


def np_clip_by_norm(t, clip, axes=None):
    norm = np.sqrt(np.sum(t * t, axis=axes, keepdims=True))
    return t * clip / np.maximum(norm, clip)


def _grad(fn, x):
    x = ef.constant(x)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x).numpy()


def _numeric_grad(fn, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        grad[i] = (np.sum(fn(ef.constant(hi)).numpy()) - np.sum(fn(ef.constant(lo)).numpy())) \
            / (2 * eps)
    return grad


@pytest.mark.parametrize("axes", [None, [1], 0, [0, 1], (-1,)])
@pytest.mark.parametrize("clip", [0.5, 100.0])
def test_clip_by_norm_matches_formula(axes, clip):
    t = RNG.uniform(-2, 2, size=(3, 4))
    got = c.clip_by_norm(ef.constant(t), clip, axes=axes).numpy()
    np_axes = tuple(axes) if isinstance(axes, list) else axes
    np.testing.assert_allclose(got, np_clip_by_norm(t, clip, np_axes), rtol=1e-12)
    assert got.dtype == np.float64


def test_clip_by_norm_leaves_small_tensors_and_zeros_alone():
    t = np.array([0.3, 0.4], np.float32)
    np.testing.assert_array_equal(c.clip_by_norm(ef.constant(t), 1.0).numpy(), t)
    z = c.clip_by_norm(ef.constant(np.zeros((2, 2), np.float32)), 1.0)
    np.testing.assert_array_equal(z.numpy(), np.zeros((2, 2), np.float32))


def test_clip_by_norm_gradient_is_finite_at_zero():
    g = _grad(lambda x: c.clip_by_norm(x, 1.0), np.zeros(3))
    np.testing.assert_allclose(g, np.ones(3))


def test_clip_by_norm_gradient_matches_finite_differences():
    x = RNG.uniform(-2, 2, size=(2, 3))
    w = ef.constant(RNG.normal(size=(2, 3)))

    def fn(t):
        return c.clip_by_norm(t, 1.5, axes=[1]) * w

    np.testing.assert_allclose(_grad(fn, x), _numeric_grad(fn, x), rtol=1e-6, atol=1e-8)


def test_clip_by_norm_complex_and_indexed_slices():
    z = np.array([3 + 4j, 0j], np.complex64)
    got = c.clip_by_norm(ef.constant(z), 1.0).numpy()
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, z / 5, rtol=1e-6)
    s = IndexedSlices(ef.constant([[3.0, 4.0]]), ef.constant([2]), [4, 2])
    out = c.clip_by_norm(s, 1.0)
    assert isinstance(out, IndexedSlices) and out.dense_shape == (4, 2)
    np.testing.assert_allclose(out.values.numpy(), [[0.6, 0.8]], rtol=1e-6)
    np.testing.assert_array_equal(out.indices.numpy(), [2])


def test_clip_by_norm_errors():
    with pytest.raises(errors.InvalidArgumentError) as info:
        c.clip_by_norm(ef.constant([1, 2]), 1.0)
    assert "int32" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError) as info:
        c.clip_by_norm(ef.constant([[1.0, 2.0]]), ef.constant([[1.0], [2.0], [3.0]]))
    assert "clip_norm" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError):
        c.clip_by_norm(ef.constant([1.0]), 1.0, axes=[1])


def test_global_norm():
    a = RNG.normal(size=(3,)).astype(np.float32)
    b = RNG.normal(size=(2, 2)).astype(np.float32)
    expected = np.sqrt(np.sum(a * a) + np.sum(b * b))
    got = c.global_norm([ef.constant(a), None, ef.constant(b)])
    assert got.numpy().dtype == np.float32
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    mixed = c.global_norm((ef.constant(a), ef.constant(b.astype(np.float64))))
    assert mixed.numpy().dtype == np.float64
    np.testing.assert_allclose(mixed.numpy(), expected, rtol=1e-6)
    assert float(c.global_norm([None])) == 0.0
    with pytest.raises(TypeError):
        c.global_norm(ef.constant([1.0]))
    with pytest.raises(TypeError):
        c.global_norm("abc")


def test_clip_by_global_norm():
    ts = [RNG.normal(size=(3,)) * 10, None, RNG.normal(size=(2, 2)) * 10]
    norm = np.sqrt(sum(np.sum(t * t) for t in ts if t is not None))
    clipped, got_norm = c.clip_by_global_norm(
        tuple(ef.constant(t) if t is not None else None for t in ts), 2.0)
    assert isinstance(clipped, list) and clipped[1] is None
    np.testing.assert_allclose(got_norm.numpy(), norm, rtol=1e-12)
    for out, t in zip(clipped, ts):
        if t is not None:
            np.testing.assert_allclose(out.numpy(), t * 2.0 / max(norm, 2.0), rtol=1e-12)
    # Below the threshold nothing changes; use_norm overrides the computed norm.
    small, _ = c.clip_by_global_norm([ef.constant([0.3, 0.4])], 1.0)
    np.testing.assert_allclose(small[0].numpy(), [0.3, 0.4], rtol=1e-6)
    forced, used = c.clip_by_global_norm([ef.constant([0.3, 0.4])], 1.0, use_norm=2.0)
    np.testing.assert_allclose(forced[0].numpy(), [0.15, 0.2], rtol=1e-6)
    assert float(used) == 2.0


def test_clip_by_global_norm_non_finite_norm_gives_nan():
    clipped, norm = c.clip_by_global_norm(
        [ef.constant([np.inf, 1.0]), ef.constant([2.0])], 1.0)
    assert np.isinf(norm.numpy())
    assert all(np.isnan(t.numpy()).all() for t in clipped)


def test_clip_by_global_norm_keeps_each_dtype_and_slices():
    a = ef.constant(np.array([3.0], np.float16))
    s = IndexedSlices(ef.constant([[4.0]]), ef.constant([0]), [2, 1])
    clipped, norm = c.clip_by_global_norm([a, s], 1.0)
    assert clipped[0].dtype == ef.float16 and isinstance(clipped[1], IndexedSlices)
    np.testing.assert_allclose(float(norm), 5.0, rtol=1e-3)
    np.testing.assert_allclose(clipped[1].values.numpy(), [[0.8]], rtol=1e-3)
    with pytest.raises(TypeError):
        c.clip_by_global_norm(ef.constant([1.0]), 1.0)


def test_clip_by_global_norm_gradient():
    x = RNG.uniform(-2, 2, size=(4,))

    def fn(t):
        clipped, _ = c.clip_by_global_norm([t, t * 2.0], 1.0)
        return clipped[0] * ef.constant(np.arange(4.0)) + clipped[1]

    np.testing.assert_allclose(_grad(fn, x), _numeric_grad(fn, x), rtol=1e-6, atol=1e-8)
