"""The eager Tensor: conversion and dtype inference, shapes, numpy/DLPack interop,
operators, Python protocols, and TensorShape/TensorSpec."""

import copy
import operator
import pickle

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors

# -- constant / convert_to_tensor ---------------------------------------------------------------

# The dtype inference table of docs/dtypes.md (TF 2's defaults).
INFERENCE = [
    (1.0, "float32"),
    (1, "int32"),
    (2**31 - 1, "int32"),
    (2**31, "int64"),
    (-(2**31) - 1, "int64"),
    ([1, 2**40], "int64"),
    (True, "bool"),
    ([True, False], "bool"),
    (1j, "complex128"),
    ([1, 2.5], "float32"),
    ([[1, 2], [3, 4]], "int32"),
    ([], "float32"),
    (np.array(1.0), "float64"),
    (np.float32(1), "float32"),
    (np.float64(1), "float64"),
    (np.int16(3), "int16"),
    (np.array([1, 2], dtype=np.uint8), "uint8"),
    (np.array([1j], dtype=np.complex64), "complex64"),
]


@pytest.mark.parametrize("value,name", INFERENCE, ids=[repr(v)[:30] for v, _ in INFERENCE])
def test_constant_dtype_inference(value, name):
    t = ef.constant(value)
    assert t.dtype == ef.as_dtype(name)
    np.testing.assert_array_equal(t.numpy(), np.asarray(value))
    assert ef.convert_to_tensor(value).dtype == ef.as_dtype(name)


def test_python_values_are_cast_but_never_truncated():
    assert ef.constant([1, 2], dtype=ef.float64).numpy().tolist() == [1.0, 2.0]
    assert ef.constant(3.0, dtype=ef.int32).numpy() == 3  # exact: allowed
    # float64 read from the Python double, not widened from a float32 rounding.
    assert ef.constant(0.1, dtype=ef.float64).numpy() == 0.1
    for value, dtype in [(1.5, ef.int32), (300, ef.uint8), (-1, ef.uint8), (2**31, ef.int32),
                         (1 + 1j, ef.float32), (float("nan"), ef.int32),
                         (float("inf"), ef.int64)]:
        with pytest.raises(TypeError, match=dtype.name):
            ef.constant(value, dtype=dtype)


def test_numpy_arrays_are_cast_as_asked():
    assert ef.constant(np.array([1.5, -2.7]), dtype=ef.int32).numpy().tolist() == [1, -2]
    t = ef.constant(np.array([1, 2], dtype=np.int64), dtype=ef.float32)
    assert t.dtype == ef.float32 and t.numpy().tolist() == [1.0, 2.0]


def test_numpy_input_is_copied():
    a = np.array([1.0, 2.0])
    t = ef.constant(a)
    a[0] = 100.0
    assert t.numpy().tolist() == [1.0, 2.0]


def test_convert_to_tensor_of_a_tensor():
    t = ef.constant([1.0])
    assert ef.convert_to_tensor(t) is t
    assert ef.convert_to_tensor(t, dtype=ef.float32) is t
    with pytest.raises(errors.InvalidArgumentError, match="float64.*float32.*cast"):
        ef.convert_to_tensor(t, dtype=ef.float64)
    # constant re-casts tensors (TF's constant accepts a tensor and a dtype).
    assert ef.constant(ef.constant([1, 2]), dtype=ef.float32).numpy().tolist() == [1.0, 2.0]


def test_dtype_hint_is_used_only_when_it_fits():
    assert ef.convert_to_tensor(1, dtype_hint=ef.float32).dtype == ef.float32
    assert ef.convert_to_tensor(1.5, dtype_hint=ef.int32).dtype == ef.float32
    assert ef.convert_to_tensor(np.array([1]), dtype_hint=ef.float32).dtype == ef.int64


def test_list_of_tensors_packs():
    t = ef.constant([ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0])])
    assert t.shape == [2, 2] and t.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_unconvertible_values():
    # TF raises a plain ValueError for a non-rectangular sequence (conformance-recorded).
    for ragged in ([[1, 2], [3]], [[1.0], [2.0, 3.0]], [[1, 2], 3]):
        with pytest.raises(ValueError, match="rectangular") as info:
            ef.constant(ragged)
        assert type(info.value) is ValueError
    assert ef.constant("abc").numpy() == b"abc"  # strings are supported (issue 19)
    with pytest.raises(errors.UnimplementedError):
        ef.constant(None)


def test_constant_shape_broadcasts_a_scalar_or_reshapes():
    t = ef.constant(7, shape=[2, 3])
    assert t.dtype == ef.int32 and t.numpy().tolist() == [[7] * 3] * 2
    assert ef.constant([2.5], shape=[2]).numpy().tolist() == [2.5, 2.5]
    r = ef.constant([1, 2, 3, 4, 5, 6], shape=[3, 2])
    np.testing.assert_array_equal(r.numpy(), np.arange(1, 7).reshape(3, 2))
    assert ef.constant(np.arange(6.0), shape=ef.TensorShape([2, 3])).shape == [2, 3]
    assert ef.constant(1.0, shape=[0, 2]).shape == [0, 2]
    with pytest.raises(errors.InvalidArgumentError, match="3 elements.*shape \\[2, 3\\]"):
        ef.constant([1, 2, 3], shape=[2, 3])


# -- numpy() and __array__ --------------------------------------------------------------------


def test_numpy_returns_a_copy_and_scalars_for_0d():
    t = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    n = t.numpy()
    assert isinstance(n, np.ndarray) and n.dtype == np.float32 and n.flags.writeable
    n[0, 0] = 100.0
    assert t.numpy()[0, 0] == 1.0
    assert isinstance(ef.constant(2.5).numpy(), np.float32)
    assert isinstance(ef.reduce_sum(t).numpy(), np.float32)
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]] and ef.constant(3.5).item() == 3.5


def test_array_is_a_read_only_view():
    t = ef.constant([1.0, 2.0])
    view = np.asarray(t)
    assert not view.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 5.0
    assert t.numpy().tolist() == [1.0, 2.0]
    # An explicit copy or dtype gives a fresh, writeable array.
    assert np.array(t, copy=True).flags.writeable
    converted = np.asarray(t, dtype=np.float64)
    assert converted.dtype == np.float64 and converted.flags.writeable
    assert np.asarray(ef.constant(2.0)).shape == ()


def test_numpy_functions_accept_tensors():
    t = ef.constant([1.0, 2.0, 3.0])
    assert float(np.sum(t)) == 6.0
    out = np.add(t, 1.0)
    assert isinstance(out, np.ndarray) and out.tolist() == [2.0, 3.0, 4.0]


# -- DLPack -----------------------------------------------------------------------------------


def test_dlpack_from_numpy_shares_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = ef.experimental.dlpack.from_dlpack(a)
    assert t.dtype == ef.float64 and t.shape == [2, 3]
    a[1, 2] = -1.0
    assert float(t[1, 2]) == -1.0


def test_dlpack_to_numpy_is_zero_copy_and_read_only():
    t = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    out = np.from_dlpack(t)
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]] and out.dtype == np.float32
    assert np.shares_memory(out, np.asarray(t))
    assert not out.flags.writeable
    assert t.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool"])
def test_dlpack_capsule_round_trip(dtype):
    value = np.array([[1, 0, 1], [0, 1, 1]]).astype(dtype)
    t = ef.constant(value)
    capsule = ef.experimental.dlpack.to_dlpack(t)
    back = ef.experimental.dlpack.from_dlpack(capsule)
    assert back.dtype == t.dtype and back.shape == [2, 3]
    np.testing.assert_array_equal(back.numpy(), value)
    with pytest.raises(errors.InvalidArgumentError, match="consumed only once"):
        ef.experimental.dlpack.from_dlpack(capsule)


def test_dlpack_of_scalar_results():
    s = ef.reduce_sum(ef.constant([1.0, 2.0]))  # kernels may leave a numpy scalar inside
    assert np.from_dlpack(s).tolist() == 3.0
    assert float(ef.experimental.dlpack.from_dlpack(ef.experimental.dlpack.to_dlpack(s))) == 3.0


def test_dlpack_versioned_capsule():
    capsule = np.arange(3.0).__dlpack__(max_version=(1, 0))
    t = ef.experimental.dlpack.from_dlpack(capsule)
    assert t.numpy().tolist() == [0.0, 1.0, 2.0]


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    t = ef.experimental.dlpack.from_dlpack(torch.tensor([1.0, 2.0]))
    assert t.dtype == ef.float32 and t.numpy().tolist() == [1.0, 2.0]
    back = torch.utils.dlpack.from_dlpack(ef.experimental.dlpack.to_dlpack(ef.constant([3, 4])))
    assert back.tolist() == [3, 4] and back.dtype == torch.int32


# -- operators --------------------------------------------------------------------------------

X = np.array([[1.0, -2.0], [3.0, 4.5]], dtype=np.float32)
Y = np.array([[2.0, 0.5], [-1.0, 3.0]], dtype=np.float32)

BINARY = [
    (operator.add, np.add), (operator.sub, np.subtract), (operator.mul, np.multiply),
    (operator.truediv, np.true_divide), (operator.floordiv, np.floor_divide),
    (operator.mod, np.mod), (operator.pow, None), (operator.lt, np.less),
    (operator.le, np.less_equal), (operator.gt, np.greater), (operator.ge, np.greater_equal),
]


@pytest.mark.parametrize("op,ref", BINARY, ids=[o.__name__ for o, _ in BINARY])
def test_binary_operators_and_reflected_forms(op, ref):
    xx = np.abs(X) if op is operator.pow else X  # keep pow real
    yy = np.abs(Y) if op is operator.pow else Y
    x, y = ef.constant(xx), ef.constant(yy)
    ref = ref or np.power
    expected = ref(xx, yy)
    for result in (op(x, y), op(xx, y), op(x, yy)):  # tensor/tensor, ndarray on either side
        assert isinstance(result, ef.Tensor)
        assert result.dtype == ef.as_dtype(expected.dtype)
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-6)
    # Python and numpy scalars on either side take the tensor's dtype.
    for scalar in (2.0, 2, np.float64(2.0), np.float32(2.0)):
        left, right = op(scalar, x), op(x, scalar)
        assert left.dtype == right.dtype == (ef.bool if expected.dtype == bool else ef.float32)
        np.testing.assert_allclose(left.numpy(), ref(np.float32(2.0), xx), rtol=1e-6)
        np.testing.assert_allclose(right.numpy(), ref(xx, np.float32(2.0)), rtol=1e-6)


def test_matmul_operator_both_ways():
    x = ef.constant(X)
    np.testing.assert_allclose((x @ Y).numpy(), X @ Y, rtol=1e-6)
    np.testing.assert_allclose((Y @ x).numpy(), Y @ X, rtol=1e-6)
    np.testing.assert_allclose(([[1.0, 2.0]] @ x).numpy(), np.array([[1.0, 2.0]]) @ X)


def test_unary_operators():
    x = ef.constant(X)
    np.testing.assert_array_equal((-x).numpy(), -X)
    np.testing.assert_array_equal(abs(x).numpy(), np.abs(X))
    assert +x is x
    b = ef.constant([True, False])
    assert (~b).numpy().tolist() == [False, True]
    assert (~ef.constant([0, 5])).numpy().tolist() == [-1, -6]


def test_logical_and_bitwise_operators():
    a, b = ef.constant([True, True, False]), ef.constant([True, False, False])
    assert (a & b).numpy().tolist() == [True, False, False]
    assert (a | b).numpy().tolist() == [True, True, False]
    assert (a ^ b).numpy().tolist() == [False, True, False]
    assert (True & b).numpy().tolist() == [True, False, False]
    i = ef.constant([12, 10])
    assert (i & 6).numpy().tolist() == [4, 2] and (6 | i).numpy().tolist() == [14, 14]


def test_integer_division_semantics():
    i = ef.constant([7, -7])
    assert (i // 2).numpy().tolist() == [3, -4] and (i // 2).dtype == ef.int32
    assert (i % 3).numpy().tolist() == [1, 2]
    assert (7 // ef.constant([2, 3])).numpy().tolist() == [3, 2]
    assert (i / i).dtype == ef.float64
    with pytest.raises(errors.InvalidArgumentError, match="division by zero"):
        i // 0


def test_equality_operators():
    t = ef.constant([1.0, 2.0])
    assert (t == ef.constant([1.0, 3.0])).numpy().tolist() == [True, False]
    assert (t != 2.0).numpy().tolist() == [True, False]
    assert (t == None) is False and (t != None) is True  # noqa: E711 - TF semantics
    # Shapes that cannot broadcast compare unequal rather than raising (TF 2).
    assert (t == ef.constant([1.0, 2.0, 3.0])) is False


def test_operator_dtype_errors_name_both_dtypes():
    with pytest.raises(errors.InvalidArgumentError, match="float32.*float64"):
        ef.constant([1.0]) + ef.constant([1.0], dtype=ef.float64)
    # A numpy array takes the tensor's dtype, as TF casts it (only tensors never convert).
    assert (ef.constant([1.0]) * np.ones(1)).dtype == ef.float32
    with pytest.raises(errors.InvalidArgumentError, match="1.5.*int32"):
        ef.constant([1]) + 1.5


# -- Python protocols -------------------------------------------------------------------------


def test_bool():
    assert bool(ef.constant(True)) is True and bool(ef.constant(0.0)) is False
    assert bool(ef.constant([[1]])) is True  # one element: unambiguous
    for value in ([1, 2], []):
        with pytest.raises(ValueError, match="ambiguous.*reduce_any"):
            bool(ef.constant(value))


def test_float_int_complex():
    assert float(ef.constant(1.5)) == 1.5 and isinstance(float(ef.constant(1)), float)
    assert int(ef.constant(2.7)) == 2 and int(ef.constant(-2.7)) == -2
    assert complex(ef.constant(1 + 2j)) == 1 + 2j
    for conv in (float, int):
        with pytest.raises(TypeError, match="shape \\(1,\\)"):
            conv(ef.constant([1.0]))


def test_index():
    assert operator.index(ef.constant(3)) == 3
    assert operator.index(ef.constant(3, dtype=ef.uint8)) == 3
    assert [10, 20, 30, 40][ef.constant(2)] == 30
    assert list(range(10))[ef.constant(1):ef.constant(3)] == [1, 2]
    for bad in (ef.constant(3.0), ef.constant([3]), ef.constant(True)):
        with pytest.raises(TypeError, match="integer scalar"):
            operator.index(bad)


def test_len_and_iter():
    t = ef.constant([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and all(isinstance(r, ef.Tensor) for r in rows)
    assert [r.numpy().tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    assert len(ef.zeros([0, 2])) == 0 and list(ef.zeros([0, 2])) == []
    with pytest.raises(TypeError, match="scalar"):
        len(ef.constant(1))
    with pytest.raises(TypeError, match="scalar"):
        iter(ef.constant(1))


def test_repr_and_str():
    # TF 2.21's repr: the Python scalar for 0-d values, numpy's array repr otherwise.
    assert repr(ef.constant(1.5)) == "<tf.Tensor: shape=(), dtype=float32, numpy=1.5>"
    assert repr(ef.constant(0.1)) == (
        "<tf.Tensor: shape=(), dtype=float32, numpy=0.10000000149011612>")
    assert repr(ef.constant(True)) == "<tf.Tensor: shape=(), dtype=bool, numpy=True>"
    assert repr(ef.constant([1, 2, 3])) == (
        "<tf.Tensor: shape=(3,), dtype=int32, numpy=array([1, 2, 3], dtype=int32)>")
    assert repr(ef.constant([[1.0, 2.0], [3.0, 4.0]])) == (
        "<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\narray([[1., 2.],\n"
        "       [3., 4.]], dtype=float32)>")
    assert repr(ef.Variable([1.0, 2.0], name="v")) == (
        "<tf.Variable 'v:0' shape=(2,) dtype=float32, numpy=array([1., 2.], dtype=float32)>")
    assert str(ef.constant([1, 2])) == "tf.Tensor([1 2], shape=(2,), dtype=int32)"
    assert str(ef.constant(True)) == "tf.Tensor(True, shape=(), dtype=bool)"
    assert "..." in repr(ef.range(5000))  # long tensors are summarized
    assert format(ef.constant(1.23456), ".2f") == "1.23"
    # f-strings format the value, as TF: "3.5", "[1 2]".
    assert f"{ef.constant(3.5)}" == "3.5"
    assert f"{ef.constant([1, 2])}" == "[1 2]"


def test_hash_raises_and_ref_is_a_key():
    t = ef.constant([1.0])
    with pytest.raises(TypeError, match="unhashable.*ref\\(\\)"):
        hash(t)
    with pytest.raises(TypeError):
        {t: 1}  # noqa: B018
    other = ef.constant([1.0])
    table = {t.ref(): "t", other.ref(): "other"}
    assert table[t.ref()] == "t" and table[other.ref()] == "other"
    assert t.ref() == t.ref() and t.ref() != other.ref()
    assert t.ref().deref() is t and t.experimental_ref().deref() is t


def test_copy_and_pickle():
    t = ef.constant([[1, 2]])
    assert copy.copy(t) is t and copy.deepcopy(t) is t  # immutable
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype == ef.int32 and back.numpy().tolist() == [[1, 2]]


def test_attributes():
    t = ef.zeros([2, 3, 4])
    assert t.shape == [2, 3, 4] and t.get_shape() == t.shape
    assert t.ndim == 3 and t.rank == 3
    assert t.device == t.backing_device == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert ef.is_tensor(t) and ef.is_tensor(ef.Variable(1.0))
    assert not ef.is_tensor(np.zeros(2)) and not ef.is_tensor(1.0)


# -- TensorShape ------------------------------------------------------------------------------

S = ef.TensorShape


def test_tensor_shape_basics():
    s = S([None, 3])
    assert s.rank == 2 and s.ndims == 2 and s[1] == 3 and s[0] is None
    assert s.as_list() == [None, 3] and s.dims == [None, 3] and len(s) == 2
    assert not s.is_fully_defined() and s.num_elements() is None
    assert S([2, 3]).num_elements() == 6 and S([]).num_elements() == 1
    assert S([2, 3])[1:] == S([3]) and isinstance(S([2, 3])[1:], S)
    assert S([2, 3])[-1] == 3 and list(S([2, 3])) == [2, 3]
    assert S(3) == S([3]) and S([np.int64(3)]) == [3]


def test_tensor_shape_unknown_rank():
    u = S(None)
    assert u.rank is None and u.dims is None and not u
    assert u[0] is None and u[1:] == S(None)
    with pytest.raises(ValueError, match="unknown"):
        u.as_list()
    with pytest.raises(ValueError):
        len(u)
    assert u.is_compatible_with([1, 2, 3]) and ef.tensor_shape.unknown_shape(2) == [None, None]


def test_tensor_shape_equality_and_hash():
    assert S([2, 3]) == [2, 3] and S([2, 3]) == (2, 3) and S([2, 3]) != [3, 2]
    assert S([None]) == S([None])
    assert hash(S([2, 3])) == hash(S((2, 3)))
    assert S([]) == [] and bool(S([]))


def test_tensor_shape_compatibility_and_merging():
    assert S([None, 3]).is_compatible_with([5, 3])
    assert not S([None, 3]).is_compatible_with([5, 4])
    assert not S([None, 3]).is_compatible_with([5, 3, 1])
    assert S([None, 3]).merge_with([2, None]) == [2, 3]
    with pytest.raises(ValueError, match="incompatible"):
        S([1, 3]).merge_with([2, 3])
    assert S([2, 3]).most_specific_compatible_shape([4, 3]) == [None, 3]
    assert S([2, 3]).most_specific_compatible_shape([2]).rank is None
    assert S([2, 3]).is_subtype_of([None, 3]) and not S([None, 3]).is_subtype_of([2, 3])
    with pytest.raises(ValueError, match="rank 3"):
        S([2, 3]).with_rank(3)
    assert S(None).with_rank(2) == [None, None]
    with pytest.raises(ValueError, match="at least 3"):
        S([2, 3]).with_rank_at_least(3)


def test_tensor_shape_concatenation_and_str():
    assert S([2]) + [3] == [2, 3] and [1] + S([2]) == [1, 2]
    assert S([2]).concatenate(S(None)).rank is None
    assert str(S([None, 3])) == "(None, 3)" and str(S([3])) == "(3,)" and str(S([])) == "()"
    assert repr(S([None, 3])) == "TensorShape([None, 3])" and str(S(None)) == "<unknown>"
    assert pickle.loads(pickle.dumps(S([None, 2]))) == S([None, 2])


def test_tensor_shape_rejects_bad_dims():
    with pytest.raises(ValueError, match="-1"):
        S([-1])
    with pytest.raises(TypeError, match="1.5"):
        S([1.5])


# -- TensorSpec -------------------------------------------------------------------------------


def test_tensor_spec():
    spec = ef.TensorSpec([None, 3], ef.float32, name="x")
    assert spec.shape == [None, 3] and spec.dtype == ef.float32 and spec.name == "x"
    assert ef.TensorSpec([2]).dtype == ef.float32  # the default
    assert spec.is_compatible_with(ef.zeros([4, 3]))
    assert spec.is_compatible_with(np.zeros([2, 3], np.float32))
    assert spec.is_compatible_with(ef.TensorSpec([2, 3]))
    assert not spec.is_compatible_with(ef.zeros([4, 3], dtype=ef.float64))
    assert not spec.is_compatible_with(ef.zeros([4, 2]))
    assert not spec.is_compatible_with(3.0)


def test_tensor_spec_equality_hash_and_constructors():
    assert ef.TensorSpec([2], "int32") == ef.TensorSpec((2,), ef.int32)
    assert ef.TensorSpec([2], name="a") != ef.TensorSpec([2], name="b")
    assert len({ef.TensorSpec([2]), ef.TensorSpec((2,))}) == 1
    t = ef.constant([[1, 2]])
    assert ef.TensorSpec.from_tensor(t, name="t") == ef.TensorSpec([1, 2], ef.int32, "t")
    assert ef.TensorSpec.from_spec(ef.TensorSpec([1], name="a")).name == "a"
    assert repr(ef.TensorSpec([None], ef.int64)) == \
        "TensorSpec(shape=(None,), dtype=tf.int64, name=None)"


def test_tensor_spec_most_specific_compatible_type():
    merged = ef.TensorSpec([2, 3]).most_specific_compatible_type(ef.TensorSpec([4, 3]))
    assert merged == ef.TensorSpec([None, 3])
    with pytest.raises(errors.InvalidArgumentError, match="float32 and int32"):
        ef.TensorSpec([2]).most_specific_compatible_type(ef.TensorSpec([2], ef.int32))
