"""Conversions TF 2 makes silently when values that are not tensors meet tensors."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors


def test_float64_array_takes_the_tensor_dtype_both_sides():
    x = ef.constant([1.0, 2.0])
    for out in (x + np.array([0.5, 0.25]), np.array([0.5, 0.25]) + x,
                ef.add(np.array([0.5, 0.25]), x), ef.multiply(x, np.float64(2.0))):
        assert out.dtype == ef.float32
    np.testing.assert_array_equal((x + np.array([0.5, 0.25])).numpy(),
                                  np.array([1.5, 2.25], np.float32))


def test_integer_array_converts_to_float_tensor_dtype():
    out = ef.constant([1.0]) + np.array([2], dtype=np.int64)
    assert out.dtype == ef.float32 and out.numpy().tolist() == [3.0]


def test_numpy_arrays_are_cast_as_tf_but_python_values_must_fit():
    # TF casts numpy values to the tensor's dtype (truncating), but refuses Python floats.
    assert (ef.constant([1]) + np.array([2.5])).numpy().tolist() == [3]
    assert (np.array([2.5]) + ef.constant([1])).numpy().tolist() == [3]
    assert (ef.constant([1]) + np.float64(1.5)).numpy().tolist() == [2]
    with pytest.raises(errors.InvalidArgumentError, match="1.5"):
        ef.constant([1]) + 1.5
    with pytest.raises(errors.InvalidArgumentError, match="1.5"):
        ef.constant([1]) + [1.5]


def test_first_numpy_value_fixes_dtype_without_tensors():
    out = ef.add(np.array([1.0], np.float32), np.array([2.0]))
    assert out.dtype == ef.float32 and out.numpy().tolist() == [3.0]


def test_python_list_takes_tensor_dtype():
    out = ef.constant([1.0], ef.float64) + [2.0]
    assert out.dtype == ef.float64


def test_first_value_fixes_dtype_without_tensors():
    out = ef.maximum(0., [1, -1])
    assert out.dtype == ef.float32 and out.numpy().tolist() == [1.0, 0.0]
    with pytest.raises(errors.InvalidArgumentError, match="2.5"):
        ef.add(1, 2.5)


def test_python_value_divided_by_variable():
    out = 1 / ef.Variable(2.0)
    assert out.dtype == ef.float32 and float(out) == 0.5
    out = ef.Variable(4.0) / 2
    assert float(out) == 2.0


def test_traced_conversion_equals_eager():
    def f(x):
        return x * np.array([2.0, 3.0]) + [1, 2]

    x = ef.constant([1.0, 1.0])
    traced = ef.function(f)(x)
    assert traced.dtype == ef.float32
    np.testing.assert_array_equal(traced.numpy(), f(x).numpy())


def test_saturate_cast_in_dtypes_namespace():
    out = ef.dtypes.saturate_cast(ef.constant([300.0, -5.0, 7.0]), ef.uint8)
    assert out.dtype == ef.uint8 and out.numpy().tolist() == [255, 0, 7]
    assert ef.dtypes.cast(ef.constant([1.7]), ef.int32).numpy().tolist() == [1]


def test_saturate_cast_bounds_a_float_cannot_hold():
    # Recorded with TF 2.21: int32's max rounds up to 2**31 in float32, so TF clamps to the
    # largest float32 below it; the same for every float source and integer target.
    out = ef.dtypes.saturate_cast(ef.constant([3e9, -3e9, 1.5]), ef.int32)
    assert out.numpy().tolist() == [2147483520, -2147483648, 1]
    half = ef.dtypes.saturate_cast(ef.constant([6e4, -6e4], ef.float16), ef.int16)
    assert half.numpy().tolist() == [32752, -32768]
    # To int64 TF 2.21 wraps 3e38 to -2**63; eagerflow saturates to the largest float32
    # below 2**63 (documented in saturate_cast).
    big = ef.dtypes.saturate_cast(ef.constant([3e38, -3e38]), ef.int64)
    assert big.numpy().tolist() == [9223371487098961920, -9223372036854775808]
