"""DTypes: names and conversions, properties and limits, bfloat16, and the no-promotion rule
for every binary arithmetic op."""

import operator
import pickle

import ml_dtypes
import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes, errors

NUMPY_TYPES = {
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_, "complex64": np.complex64, "complex128": np.complex128,
    "bfloat16": ml_dtypes.bfloat16,
}

# TF's DataType enum values (types.proto).
ENUMS = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
         "complex64": 8, "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17,
         "complex128": 18, "float16": 19, "uint32": 22, "uint64": 23}


@pytest.mark.parametrize("name", sorted(NUMPY_TYPES))
def test_as_dtype_round_trips(name):
    dt = ef.as_dtype(name)
    assert dt.name == name and getattr(ef, name) is dt
    assert ef.as_dtype(NUMPY_TYPES[name]) is dt
    assert ef.as_dtype(np.dtype(NUMPY_TYPES[name])) is dt
    assert ef.as_dtype(dt) is dt
    assert ef.as_dtype(dt.as_datatype_enum) is dt and dt.as_datatype_enum == ENUMS[name]
    assert dt.as_numpy_dtype is NUMPY_TYPES[name]
    assert dt.np_dtype == np.dtype(NUMPY_TYPES[name])
    assert dtypes.from_numpy(np.dtype(NUMPY_TYPES[name])) is dt
    assert pickle.loads(pickle.dumps(dt)) is dt
    assert repr(dt) == "tf." + name and str(dt) == "<dtype: '%s'>" % name


def test_as_dtype_aliases_and_python_types():
    assert ef.as_dtype("half") is ef.float16 is ef.half
    assert ef.as_dtype("double") is ef.float64 is ef.double
    assert ef.as_dtype("float") is ef.float32 and ef.as_dtype("int") is ef.int32
    assert ef.as_dtype(float) is ef.float32 and ef.as_dtype(int) is ef.int32
    assert ef.as_dtype(bool) is ef.bool and ef.as_dtype(complex) is ef.complex128
    assert ef.as_dtype(ef.constant([1.0]).dtype) is ef.float32


@pytest.mark.parametrize("bad", ["float8", "tensor", 99, True, None, np.longdouble, str,
                                 [1, 2]])
def test_as_dtype_rejects(bad):
    with pytest.raises(TypeError, match="Cannot convert .* to an eagerflow dtype"):
        ef.as_dtype(bad)


def test_equality_with_names_and_numpy():
    assert ef.float32 == "float32" and ef.float32 == np.float32
    assert ef.float32 == np.dtype("float32") and ef.float32 != ef.float64
    assert ef.float32 != "bogus" and ef.float32 != None  # noqa: E711
    assert hash(ef.float32) == hash(ef.as_dtype("float32"))
    assert ef.float32.is_compatible_with(np.float32)
    assert not ef.float32.is_compatible_with(ef.float16)
    assert ef.float32.base_dtype is ef.float32


KINDS = {
    "float16": "f", "bfloat16": "f", "float32": "f", "float64": "f",
    "int8": "i", "int16": "i", "int32": "i", "int64": "i",
    "uint8": "u", "uint16": "u", "uint32": "u", "uint64": "u",
    "bool": "b", "complex64": "c", "complex128": "c",
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_properties(name):
    dt, kind = ef.as_dtype(name), KINDS[name]
    assert dt.is_floating == (kind == "f")
    assert dt.is_integer == (kind in "iu")
    assert dt.is_complex == (kind == "c")
    assert dt.is_bool == (kind == "b")
    assert dt.is_numeric == (kind != "b")
    assert dt.is_differentiable == (kind in "fc")
    assert not dt.is_quantized
    if kind in "iu":
        assert dt.is_unsigned == (kind == "u")
    assert dt.size == np.dtype(NUMPY_TYPES[name]).itemsize


def test_real_dtype():
    assert ef.complex64.real_dtype is ef.float32 and ef.complex128.real_dtype is ef.float64
    assert ef.float16.real_dtype is ef.float16 and ef.int8.real_dtype is ef.int8


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64",
                                  "uint8", "uint16", "uint32", "uint64"])
def test_integer_limits(name):
    dt = ef.as_dtype(name)
    info = np.iinfo(NUMPY_TYPES[name])
    assert (dt.min, dt.max) == (int(info.min), int(info.max)) == dt.limits
    assert isinstance(dt.min, int)


def test_known_limits():
    assert (ef.int8.min, ef.int8.max, ef.uint8.max) == (-128, 127, 255)
    assert ef.int64.min == -(2**63) and ef.uint64.max == 2**64 - 1
    assert ef.float16.max == 65504.0 and ef.float16.min == -65504.0
    assert ef.float32.max == float(np.finfo(np.float32).max)
    assert ef.float64.max == float(np.finfo(np.float64).max)
    assert (ef.bool.min, ef.bool.max) == (False, True)


def test_bfloat16_through_ml_dtypes():
    assert ef.as_dtype(ml_dtypes.bfloat16) is ef.bfloat16
    assert ef.as_dtype("bfloat16") is ef.bfloat16
    assert ef.bfloat16.max == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert ef.bfloat16.is_floating and ef.bfloat16.size == 2
    t = ef.constant([1.5, -2.0, 3.0], dtype=ef.bfloat16)
    assert t.dtype == ef.bfloat16 and t.numpy().dtype == np.dtype(ml_dtypes.bfloat16)
    assert (t * 2).dtype == ef.bfloat16
    assert ef.cast(t * 2, ef.float32).numpy().tolist() == [3.0, -4.0, 6.0]
    # bfloat16 keeps 8 bits of mantissa: 1 + 2**-9 rounds to 1.
    assert float(ef.cast(ef.constant(1 + 2**-9, dtype=ef.bfloat16), ef.float32)) == 1.0
    with pytest.raises(errors.InvalidArgumentError, match="bfloat16.*float32"):
        t + ef.constant([1.0, 1.0, 1.0])


# -- no promotion -----------------------------------------------------------------------------

BINARY_OPS = {
    "add": ef.add, "subtract": ef.subtract, "multiply": ef.multiply, "divide": ef.divide,
    "truediv": ef.truediv, "realdiv": ef.realdiv, "floordiv": ef.floordiv,
    "floormod": ef.floormod, "pow": ef.pow, "maximum": ef.maximum, "minimum": ef.minimum,
    "atan2": ef.atan2, "truncatediv": ef.truncatediv, "truncatemod": ef.truncatemod,
    "equal": ef.equal, "not_equal": ef.not_equal, "less": ef.less,
    "less_equal": ef.less_equal, "greater": ef.greater, "greater_equal": ef.greater_equal,
    "squared_difference": ef.math.squared_difference, "xdivy": ef.math.xdivy,
    "xlogy": ef.math.xlogy, "divide_no_nan": ef.math.divide_no_nan,
    "multiply_no_nan": ef.math.multiply_no_nan,
    "operator +": operator.add, "operator -": operator.sub, "operator *": operator.mul,
    "operator /": operator.truediv, "operator //": operator.floordiv,
    "operator %": operator.mod, "operator **": operator.pow, "operator <": operator.lt,
    "operator >=": operator.ge,
}

MIXED = [("float32", "float64"), ("float64", "float32"), ("float16", "float32"),
         ("int32", "int64"), ("int32", "float32")]


@pytest.mark.parametrize("name", sorted(BINARY_OPS))
@pytest.mark.parametrize("a,b", MIXED, ids=["%s-%s" % p for p in MIXED])
def test_mixed_dtypes_raise_naming_both(name, a, b):
    fn = BINARY_OPS[name]
    x = ef.constant([1, 2], dtype=a)
    y = ef.constant([3, 4], dtype=b)
    with pytest.raises(errors.InvalidArgumentError) as info:
        fn(x, y)
    message = str(info.value)
    if name in ("atan2", "xdivy", "xlogy") and a == "int32":
        # Float-only ops reject the integer input for its own dtype first.
        assert "does not support dtype int32" in message, message
    else:
        assert a in message and b in message, message


def test_same_dtype_binary_ops_work():
    for name, fn in BINARY_OPS.items():
        x = ef.constant([1.0, 2.0], dtype=ef.float64)
        y = ef.constant([3.0, 4.0], dtype=ef.float64)
        out = fn(x, y)
        assert out.shape == [2], name
        assert out.dtype in (ef.float64, ef.bool), name


def test_matmul_mixed_dtypes():
    with pytest.raises(errors.InvalidArgumentError, match="float32.*float64"):
        ef.matmul(ef.ones([2, 2]), ef.ones([2, 2], dtype=ef.float64))


def test_python_scalars_take_the_tensor_dtype():
    for dt in (ef.float16, ef.float64, ef.int8, ef.uint8, ef.int64, ef.complex64):
        t = ef.constant([1, 2], dtype=dt)
        assert (t + 1).dtype is dt and (1 + t).dtype is dt and (t * 2).dtype is dt
    with pytest.raises(errors.InvalidArgumentError, match="300.*uint8"):
        ef.constant([1], dtype=ef.uint8) + 300
    with pytest.raises(errors.InvalidArgumentError, match="0.5.*int64"):
        ef.constant([1], dtype=ef.int64) * 0.5


def test_truediv_result_dtypes():
    for src, out in [(ef.int8, ef.float32), (ef.int16, ef.float32), (ef.uint8, ef.float32),
                     (ef.int32, ef.float64), (ef.int64, ef.float64),
                     (ef.float16, ef.float16), (ef.float32, ef.float32)]:
        t = ef.constant([3, 4], dtype=src)
        q = t / ef.constant([2, 8], dtype=src)
        assert q.dtype is out, src
        np.testing.assert_allclose(q.numpy(), [1.5, 0.5])
