"""math.bincount and histogram_fixed_width: numpy references, TF's rules, gradients, traces."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors


def _np_bincount(arr, weights=None, minlength=None, maxlength=None):
    arr = np.asarray(arr).reshape(-1)
    size = int(arr.max()) + 1 if arr.size else 0
    if minlength is not None:
        size = max(size, minlength)
    if maxlength is not None:
        size = min(size, maxlength)
    keep = arr < size
    w = None if weights is None else np.asarray(weights).reshape(-1)[keep]
    return np.bincount(arr[keep], w, minlength=size)[:size]


@pytest.mark.parametrize("seed", range(6))
def test_bincount_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 9, size=rng.integers(0, 30)).astype(np.int32)
    weights = rng.normal(size=arr.shape)
    for minlength, maxlength in ((None, None), (12, None), (None, 4), (3, 6), (0, 0)):
        got = ef.math.bincount(arr, minlength=minlength, maxlength=maxlength)
        want = _np_bincount(arr, None, minlength, maxlength)
        assert got.dtype == ef.int32
        np.testing.assert_array_equal(got.numpy(), want)
        got = ef.math.bincount(arr, weights=weights, minlength=minlength, maxlength=maxlength)
        assert got.dtype == ef.float64  # the weights' dtype
        np.testing.assert_allclose(got.numpy(), _np_bincount(arr, weights, minlength,
                                                             maxlength), rtol=1e-12)


def test_bincount_dtypes_axis_and_binary_output_as_tf():
    # Values recorded with TF 2.21 (see also tests/conformance/programs/math.py).
    a = ef.constant([1, 1, 3, 0])
    assert ef.math.bincount(a, dtype=ef.int64).dtype == ef.int64
    got = ef.math.bincount(a, weights=[0.5, 1.0, 2.0, 3.0], dtype=ef.float64)
    assert got.dtype == ef.float32  # dtype is ignored with weights, as TF
    assert got.numpy().tolist() == [3.0, 1.5, 0.0, 2.0]
    assert ef.math.bincount(a, weights=[1, 2, 3, 4]).numpy().tolist() == [4, 3, 0, 3]
    assert ef.math.bincount(a, binary_output=True).numpy().tolist() == [1, 1, 0, 1]
    assert ef.math.bincount([1.0, 2.0]).numpy().tolist() == [0, 1, 1]  # cast to int32
    assert ef.math.bincount(ef.constant(2)).numpy().tolist() == [0, 0, 1]
    m = np.array([[1, 5], [0, 0], [2, 2]])
    np.testing.assert_array_equal(ef.math.bincount(m).numpy(), _np_bincount(m))
    np.testing.assert_array_equal(ef.math.bincount(m, axis=0).numpy(), _np_bincount(m))
    rows = ef.math.bincount(m, minlength=3, maxlength=4, axis=-1)
    # One bin count for all rows: max(m) + 1 = 6, raised to 3, cut to 4.
    np.testing.assert_array_equal(
        rows.numpy(), [_np_bincount(r, minlength=4, maxlength=4) for r in m])
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(
        ef.math.bincount(m, weights=w, axis=-1).numpy(),
        [np.bincount(r, wr, minlength=6) for r, wr in zip(m, w)])
    np.testing.assert_array_equal(
        ef.math.bincount(m, binary_output=True, axis=-1).numpy(),
        [np.minimum(np.bincount(r, minlength=6), 1) for r in m])
    assert ef.math.bincount(np.zeros((2, 0), np.int32), axis=-1).shape == (2, 0)


def test_bincount_bad_input():
    with pytest.raises(errors.InvalidArgumentError, match="non-negative"):
        ef.math.bincount([1, -1])
    with pytest.raises(errors.InvalidArgumentError, match="rank 2"):
        ef.math.bincount(np.zeros((1, 2, 2), np.int32), axis=-1)
    with pytest.raises(errors.InvalidArgumentError, match="shape"):
        ef.math.bincount([1, 2], weights=[1.0, 2.0, 3.0])
    with pytest.raises(errors.InvalidArgumentError, match="maxlength"):
        ef.math.bincount([1, 2], maxlength=-1)
    with pytest.raises(errors.InvalidArgumentError, match="float16"):
        ef.math.bincount([1, 2], dtype=ef.float16)
    with pytest.raises(ValueError, match="axis=1"):
        ef.math.bincount([[1, 2]], axis=1)
    with pytest.raises(ValueError, match="mutually exclusive"):
        ef.math.bincount([1, 2], weights=[1.0, 1.0], binary_output=True)


def _fd_gradient(f, w, eps=1e-6):
    grad = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        up, down = w.copy(), w.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


@pytest.mark.parametrize("axis,arr,maxlength", [
    (None, [1, 1, 3, 0, 7], None),
    (None, [1, 1, 3, 0, 7], 3),      # dropped values get gradient 0
    (-1, [[1, 2, 2], [0, 4, 0]], None),
    (-1, [[1, 2, 2], [0, 4, 0]], 2),
    (None, [[1, 2], [5, 0]], 0),     # no bins at all
])
def test_bincount_weights_gradient_is_exact(axis, arr, maxlength):
    """TF has no gradient for bincount; eagerflow's is checked against finite differences."""
    arr = np.asarray(arr, np.int32)
    rng = np.random.default_rng(1)
    w0 = rng.normal(size=arr.shape)
    size = ef.math.bincount(arr, maxlength=maxlength, axis=axis).shape
    upstream = rng.normal(size=size)

    def loss(w):
        out = ef.math.bincount(arr, weights=ef.constant(w), maxlength=maxlength, axis=axis)
        return ef.reduce_sum(out * upstream)

    w = ef.constant(w0)
    with ef.GradientTape() as tape:
        tape.watch(w)
        value = loss(w)
    grad = tape.gradient(value, w)
    assert grad.shape == arr.shape
    np.testing.assert_allclose(grad.numpy(), _fd_gradient(lambda x: float(loss(x)), w0),
                               rtol=1e-7, atol=1e-9)

    @ef.function
    def traced(w):
        with ef.GradientTape() as tape:
            tape.watch(w)
            value = loss(w)
        return tape.gradient(value, w)

    np.testing.assert_allclose(traced(w).numpy(), grad.numpy(), rtol=1e-12)


def test_bincount_traced_equals_eager_with_unknown_length():
    @ef.function(input_signature=[ef.TensorSpec([None], ef.int32)])
    def counts(x):
        return ef.math.bincount(x, minlength=4)

    @ef.function(input_signature=[ef.TensorSpec([2, None], ef.int64)])
    def rows(x):
        return ef.math.bincount(x, axis=-1)

    assert counts.get_concrete_function().structured_outputs.shape.as_list() == [None]
    assert rows.get_concrete_function().structured_outputs.shape.as_list() == [2, None]
    for arr in ([5, 1, 1], [], [0, 2, 2, 2, 9]):
        np.testing.assert_array_equal(counts(ef.constant(arr, ef.int32)).numpy(),
                                      ef.math.bincount(arr, minlength=4).numpy())
    m = ef.constant([[3, 0, 3], [1, 1, 6]], ef.int64)
    np.testing.assert_array_equal(rows(m).numpy(), ef.math.bincount(m, axis=-1).numpy())


def test_histogram_fixed_width_matches_tf_rule():
    rng = np.random.default_rng(0)
    values = rng.uniform(-2, 7, size=200).astype(np.float32)
    got = ef.histogram_fixed_width(values, [0.0, 5.0], nbins=7)
    clipped = np.clip(values, 0.0, np.nextafter(np.float32(5.0), np.float32(0)))
    want, _ = np.histogram(clipped, bins=7, range=(0.0, 5.0))
    np.testing.assert_array_equal(got.numpy(), want)
    assert got.dtype == ef.int32 and got.shape == (7,)
    # TF 2.21's values: below the range -> first bin, at or above its end -> last.
    v = [-1.0, 0.0, 0.5, 1.0, 4.9, 5.0, 7.0]
    assert ef.histogram_fixed_width(v, [0.0, 5.0], nbins=5).numpy().tolist() == [3, 1, 0, 0, 3]
    assert ef.histogram_fixed_width(v, [0.0, 5.0], dtype=ef.int64).shape == (100,)
    assert ef.histogram_fixed_width([0, 1, 2, 9], [0, 10], nbins=5).numpy().tolist() == [
        2, 1, 0, 0, 1]
    with pytest.raises(errors.InvalidArgumentError, match="NaN"):
        ef.histogram_fixed_width([np.nan, 1.0], [0.0, 5.0], nbins=5)
    with pytest.raises(errors.InvalidArgumentError, match="value_range"):
        ef.histogram_fixed_width(v, [5.0, 0.0], nbins=5)
    with pytest.raises(errors.InvalidArgumentError, match="nbins"):
        ef.histogram_fixed_width(v, [0.0, 5.0], nbins=0)

    @ef.function
    def traced(x):
        return ef.histogram_fixed_width(x, [0.0, 5.0], nbins=7)

    np.testing.assert_array_equal(traced(ef.constant(values)).numpy(), got.numpy())


def test_bincount_of_ragged_and_sparse_values_as_tf():
    # TF 2.21: bincount(ragged [[1, 2], [3]]) = [0 1 1 1]; sparse values [1, 3] -> [0 1 0 1].
    rt = ef.ragged.constant([[1, 2], [3]])
    assert ef.math.bincount(rt).numpy().tolist() == [0, 1, 1, 1]
    weights = ef.ragged.constant([[0.5, 1.0], [2.0]])
    assert ef.math.bincount(rt, weights=weights).numpy().tolist() == [0.0, 0.5, 1.0, 2.0]
    st = ef.sparse.SparseTensor([[0, 0], [1, 1]], [1, 3], [2, 2])
    assert ef.math.bincount(st, minlength=5).numpy().tolist() == [0, 1, 0, 1, 0]
    with pytest.raises(errors.UnimplementedError, match="axis=-1"):
        ef.math.bincount(rt, axis=-1)


def test_histogram_fixed_width_bins_matches_numpy_and_traces():
    rng = np.random.default_rng(2)
    values = rng.uniform(-2, 7, size=(5, 8)).astype(np.float32)
    got = ef.histogram_fixed_width_bins(values, [0.0, 5.0], nbins=7)
    scaled = (values - np.float32(0.0)) / np.float32(5.0)
    want = np.clip(np.floor(scaled * np.float32(7)), 0, 6).astype(np.int32)
    assert got.dtype == ef.int32 and got.shape == (5, 8)
    np.testing.assert_array_equal(got.numpy(), want)
    # Counting the bins gives the histogram.
    np.testing.assert_array_equal(
        np.bincount(got.numpy().ravel(), minlength=7),
        ef.histogram_fixed_width(values, [0.0, 5.0], nbins=7).numpy())

    @ef.function(input_signature=[ef.TensorSpec([None, None], ef.float32)])
    def traced(x):
        return ef.histogram_fixed_width_bins(x, [0.0, 5.0], nbins=7)

    np.testing.assert_array_equal(traced(values).numpy(), got.numpy())
    with pytest.raises(errors.InvalidArgumentError, match="nbins"):
        ef.histogram_fixed_width_bins(values, [0.0, 5.0], nbins=0)
