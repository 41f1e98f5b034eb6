"""Tests of Tensor.__getitem__, strided_slice and slice against numpy and TF's rules."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops import operators
from eagerflow.ops.array import slicing
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.array.slicing import STRIDED_SLICE, STRIDED_SLICE_GRAD, getitem, strided_slice
from eagerflow.tensor_shape import TensorShape
from eagerflow.testing import check_vjp

E = Ellipsis
S = slice

# Keys on which TF and numpy agree (basic indexing), with the shapes they apply to.
KEYS = [
    ((5,), 0), ((5,), 4), ((5,), -1), ((5,), -5),
    ((5,), S(1, 4)), ((5,), S(None, None, -1)), ((5,), S(-2, None, -2)),
    ((5,), S(10, -10, -3)), ((5,), S(3, 1)), ((5,), S(-100, 100)), ((5,), S(None, 2)),
    ((5,), S(4, None, -2)), ((5,), S(-1, -6, -1)), ((5,), S(0, 0)), ((5,), S(2, 2, -1)),
    ((4, 3), (S(None), 1)), ((4, 3), (E, None)), ((4, 3), (None, E)), ((4, 3), (1, 2)),
    ((4, 3), (-1, S(None, None, -1))), ((4, 3), (S(1, 3), S(None, None, 2))),
    ((4, 3), (E, -1)), ((4, 3), (S(None), None, S(None))), ((4, 3), (None, None)),
    ((2, 3, 4), (1, E, S(None, None, 2))), ((2, 3, 4), (None, E, None, 0)),
    ((2, 3, 4), (S(None), None, S(1, None), -1)), ((2, 3, 4), (E, 1, S(3, 0, -2))),
    ((2, 3, 4), (0, 2, 3)), ((2, 3, 4), (E,)), ((2, 3, 4), (0, E, 0)),
    ((2, 3, 4), (S(None), E, None, S(None, None, -3))), ((2, 3, 4), (1, None, E, None)),
    ((2, 3, 4), (S(5, None),)), ((2, 3, 4), (E, S(1, 1))),
    ((), (None,)), ((), E), ((), (E, None, None)), ((), ()),
    ((0, 3), (S(None), 2)), ((3, 0), (S(1, 2),)), ((0,), S(None, None, -1)),
    ((3, 0, 2), (E, 1)),
]


def _value(shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) * 3 - 7


@pytest.mark.parametrize("shape,key", KEYS, ids=[repr(k) for _, k in KEYS])
def test_getitem_matches_numpy(shape, key):
    x = _value(shape)
    got = ef.constant(x)[key]
    expected = x[key]
    assert got.shape.as_list() == list(np.shape(expected))
    assert got.dtype == ef.float32
    np.testing.assert_array_equal(got.numpy(), expected)


def test_getitem_random_slices_match_numpy():
    rng = np.random.default_rng(0)
    x = _value((4, 5, 6), np.int64)
    t = ef.constant(x)

    def bound():
        return None if rng.random() < 0.25 else int(rng.integers(-8, 9))

    for _ in range(300):
        key = []
        for _ in range(int(rng.integers(1, 4))):
            r = rng.random()
            if r < 0.15:
                key.append(None)
            elif r < 0.35:
                key.append(int(rng.integers(-4, 4)))
            else:
                step = bound()
                key.append(S(bound(), bound(), step if step != 0 else None))
        if rng.random() < 0.3:
            key.insert(int(rng.integers(0, len(key) + 1)), E)
        key = tuple(key)
        np.testing.assert_array_equal(t[key].numpy(), x[key], err_msg=repr(key))
        assert t[key].dtype == ef.int64


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.complex64, np.float16])
def test_getitem_keeps_dtype(dtype):
    x = (_value((3, 4)) % 3).astype(dtype)
    got = ef.constant(x)[1:, ::-2]
    assert got.numpy().dtype == dtype
    np.testing.assert_array_equal(got.numpy(), x[1:, ::-2])


def test_scalar_tensor_and_numpy_indices():
    x = _value((4, 3))
    t = ef.constant(x)
    np.testing.assert_array_equal(t[ef.constant(2)].numpy(), x[2])
    np.testing.assert_array_equal(t[ef.constant(-1, ef.int64), ef.constant(1)].numpy(), x[-1, 1])
    np.testing.assert_array_equal(t[ef.constant(1):ef.constant(3)].numpy(), x[1:3])
    np.testing.assert_array_equal(t[np.int64(1), np.int32(2)].numpy(), x[1, 2])
    np.testing.assert_array_equal(t[np.array(3)].numpy(), x[3])
    np.testing.assert_array_equal(t[:, ef.constant(2, ef.uint8)].numpy(), x[:, 2])


def test_list_key_is_a_tuple_as_in_tf():
    # TF reads t[[0, 1]] as t[0, 1]; numpy would gather rows 0 and 1.
    x = _value((4, 3))
    np.testing.assert_array_equal(ef.constant(x)[[0, 1]].numpy(), x[0, 1])
    np.testing.assert_array_equal(ef.constant(x)[[S(1, None), -1]].numpy(), x[1:, -1])


def test_bool_keys_are_boolean_masks():
    x = _value((3, 4))
    t = ef.constant(x)
    np.testing.assert_array_equal(t[t > 5.0].numpy(), x[x > 5.0])
    mask = np.array([True, False, True])
    np.testing.assert_array_equal(t[mask].numpy(), x[mask])
    np.testing.assert_array_equal(t[ef.constant(mask)].numpy(), x[mask])
    with pytest.raises(errors.InvalidArgumentError, match="scalar"):
        t[True]


def test_result_is_a_copy():
    t = ef.constant(_value((4, 3)))
    for key in (1, S(None), (E,), (S(None), 0)):
        assert not np.shares_memory(t[key]._value, t._value)


def test_cached_keys_do_not_confuse_types():
    t = ef.constant(_value((4, 3)))
    np.testing.assert_array_equal(t[:, 1].numpy(), _value((4, 3))[:, 1])
    with pytest.raises(TypeError):
        t[:, 1.0]
    with pytest.raises(TypeError):
        t[S(1.0, None), 0]
    np.testing.assert_array_equal(t[S(True, None), 0].numpy(), _value((4, 3))[1:, 0])


def test_iteration_uses_getitem():
    x = _value((3, 2))
    rows = [r.numpy() for r in ef.constant(x)]
    np.testing.assert_array_equal(np.stack(rows), x)


@pytest.mark.parametrize("shape,key,dim,size", [
    ((3,), 3, 0, 3), ((3,), -4, 0, 3), ((2, 5), (1, 5), 1, 5), ((2, 5), (E, -6), 1, 5),
    ((0, 2), 0, 0, 0),
])
def test_int_index_out_of_range_names_index_dim_and_size(shape, key, dim, size):
    t = ef.constant(_value(shape))
    with pytest.raises(errors.InvalidArgumentError) as info:
        t[key]
    message = str(info.value)
    index = key if isinstance(key, int) else key[-1]
    assert "slice index %d of dimension %d" % (index, dim) in message
    assert "size %d" % size in message
    assert "StridedSlice" in message


def test_bad_keys():
    t = ef.constant(_value((4, 3)))
    with pytest.raises(errors.InvalidArgumentError, match="only 2 dims"):
        t[0, 0, 0]
    with pytest.raises(errors.InvalidArgumentError, match="Multiple ellipses"):
        t[E, 0, E]
    with pytest.raises(errors.InvalidArgumentError, match="non-zero"):
        t[::0]
    with pytest.raises(TypeError, match="valid indices"):
        t[1.5]
    with pytest.raises(TypeError, match="valid indices"):
        t[S(0.5, 2)]
    with pytest.raises(TypeError, match="gather"):
        t[ef.constant([0, 1])]
    with pytest.raises(TypeError, match="valid indices"):
        t[ef.constant(1.0)]
    with pytest.raises(TypeError, match="valid indices"):
        t["a"]
    with pytest.raises(TypeError):
        t[np.array([0, 1])]


# --------------------------------------------------------------------------- strided_slice

def test_strided_slice_masks_match_key_semantics():
    x = _value((3, 4, 5))
    t = ef.constant(x)
    got = strided_slice(t, [1, 0, 0, 0], [0, 0, 0, 1], [1, 1, 1, 1], end_mask=1,
                        new_axis_mask=2, ellipsis_mask=4, shrink_axis_mask=8)
    np.testing.assert_array_equal(got.numpy(), x[1:, None, ..., 0])
    got = strided_slice(t, [0, 2], [2, 0], [1, -1])
    np.testing.assert_array_equal(got.numpy(), x[0:2, 2:0:-1])
    got = strided_slice(t, ef.constant([1, 3]), np.array([3, 100]), begin_mask=1)
    np.testing.assert_array_equal(got.numpy(), x[:3, 3:100])
    # Mask bits beyond the spec are ignored; ellipsis wins over a new axis on one entry.
    got = strided_slice(t, [0], [1], [1], ellipsis_mask=1, new_axis_mask=1 | 8)
    np.testing.assert_array_equal(got.numpy(), x)
    # A shrunk entry ignores its end and its begin mask, as TF's kernel does.
    got = strided_slice(t, [-1], [123], begin_mask=1, shrink_axis_mask=1)
    np.testing.assert_array_equal(got.numpy(), x[-1])


def test_strided_slice_bad_arguments():
    t = ef.constant(_value((3, 4)))
    with pytest.raises(errors.InvalidArgumentError, match="equal length"):
        strided_slice(t, [0, 0], [1], [1, 1])
    with pytest.raises(errors.InvalidArgumentError, match="stride 1"):
        strided_slice(t, [1], [2], [-1], shrink_axis_mask=1)
    with pytest.raises(errors.InvalidArgumentError, match="begin"):
        strided_slice(t, [0.5], [1])
    with pytest.raises(errors.InvalidArgumentError, match="begin_mask"):
        strided_slice(t, [0], [1], begin_mask=1.0)


def test_reference_agrees_with_kernel_on_samples():
    rng = np.random.default_rng(1)
    for (x,), attrs in STRIDED_SLICE.samples(rng, ef.float64):
        got = execute(STRIDED_SLICE, (ef.constant(x),), attrs).numpy()
        np.testing.assert_array_equal(got, STRIDED_SLICE.reference(x, **attrs))


# --------------------------------------------------------------------------- slice

@pytest.mark.parametrize("begin,size", [
    ([0, 0], [2, 3]), ([1, 1], [-1, -1]), ([0, 2], [3, 1]), ([3, 1], [0, 2]), ([2, 0], [1, 0]),
])
def test_slice_matches_numpy(begin, size):
    x = _value((3, 4))
    got = slicing.slice(ef.constant(x), begin, size)
    ends = [d if s == -1 else b + s for b, s, d in zip(begin, size, x.shape)]
    np.testing.assert_array_equal(got.numpy(), x[begin[0]:ends[0], begin[1]:ends[1]])


def test_slice_accepts_tensors_and_scalars():
    x = _value((5,))
    got = slicing.slice(ef.constant(x), ef.constant([1]), ef.constant([3]))
    np.testing.assert_array_equal(got.numpy(), x[1:4])
    got = slicing.slice(x, 2, -1)
    np.testing.assert_array_equal(got.numpy(), x[2:])


@pytest.mark.parametrize("begin,size,match", [
    ([0], [1], "2 entries"), ([-1, 0], [1, 1], r"begin\[0\]"), ([4, 0], [0, 1], r"begin\[0\]"),
    ([1, 0], [3, 1], r"size\[0\] in \[0, 2\]"), ([0, 0], [1, -2], r"size\[1\]"),
])
def test_slice_does_not_clamp(begin, size, match):
    t = ef.constant(_value((3, 4)))
    with pytest.raises(errors.InvalidArgumentError, match=match):
        slicing.slice(t, begin, size)


# --------------------------------------------------------------------------- gradients

GRAD_KEYS = [
    ((5,), 2), ((5,), S(None, None, -2)), ((4, 3), (S(1, None), -1)), ((4, 3), (E, None, 1)),
    ((2, 3, 4), (None, 1, E, S(3, 0, -1))), ((2, 3, 4), (S(None), S(None), S(None, None, 3))),
    ((), (None,)), ((3, 2), (S(5, 9),)),
]


@pytest.mark.parametrize("shape,key", GRAD_KEYS, ids=[repr(k) for _, k in GRAD_KEYS])
def test_strided_slice_vjp(shape, key):
    attrs, _ = slicing._parse(key if isinstance(key, tuple) else (key,))
    x = np.random.default_rng(2).standard_normal(shape)
    assert check_vjp(STRIDED_SLICE, (x,), attrs)
    dy = np.asarray(STRIDED_SLICE.reference(x, **attrs))
    assert check_vjp(STRIDED_SLICE_GRAD, (dy,), dict(attrs, shape=shape))


def test_tape_gradient_and_second_order():
    x = ef.constant(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    with ef.GradientTape() as outer:
        outer.watch(x)
        with ef.GradientTape() as inner:
            inner.watch(x)
            y = x[1, ::-1]
            z = (y * y * y)
        g = inner.gradient(z, x)  # 3 x^2 on row 1, zeros elsewhere
        h = g[1:, 1:] * 1.0
    expected = np.zeros((2, 3))
    expected[1] = 3 * x.numpy()[1] ** 2
    np.testing.assert_allclose(g.numpy(), expected)
    second = outer.gradient(h, x)  # d/dx of sum(3 x^2) over row 1, cols 1: -> 6 x
    want = np.zeros((2, 3))
    want[1, 1:] = 6 * x.numpy()[1, 1:]
    np.testing.assert_allclose(second.numpy(), want)


def test_integer_slices_have_no_gradient():
    x = ef.constant([1, 2, 3])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = x[1:]
    assert tape.gradient(y, x) is None


# --------------------------------------------------------------------------- tracing support

def test_shape_rule_handles_unknown_dims():
    attrs, _ = slicing._parse((S(None), S(1, 3), 0))
    aval = STRIDED_SLICE.shape_fn(AbstractValue((None, 5, 4), ef.float32), **attrs)
    assert aval.shape == (None, 2)
    attrs, _ = slicing._parse((None, -1))
    assert STRIDED_SLICE.shape_fn(AbstractValue((None, 3), ef.int32), **attrs).shape == (1, 3)
    with pytest.raises(errors.InvalidArgumentError, match="out of bounds"):
        STRIDED_SLICE.shape_fn(AbstractValue((2, None), ef.float32),
                               **slicing._parse((2,))[0])


class _Symbolic:
    """Stands in for a traced scalar int: it has a dtype and shape but no static value."""

    _is_eagerflow_tensor_like = True

    def __init__(self, value):
        self._t = ef.constant(value)
        self.dtype = self._t.dtype
        self.shape = TensorShape([])

    def _as_tensor(self, dtype=None):
        return self._t

    def __index__(self):
        raise TypeError("symbolic")


operators.install(_Symbolic)


@pytest.mark.parametrize("key_fn", [
    lambda i: (i,), lambda i: (S(None), i), lambda i: (E, i), lambda i: (None, 1, i),
    lambda i: (i, S(None, None, -1)),
])
@pytest.mark.parametrize("value", [1, -1, 0])
def test_symbolic_scalar_index_becomes_a_gather(key_fn, value):
    x = _value((3, 3, 2)) if len(key_fn(0)) < 3 else _value((2, 3, 3))
    got = getitem(ef.constant(x), key_fn(_Symbolic(value)))
    np.testing.assert_array_equal(got.numpy(), x[key_fn(value)])


def test_symbolic_slice_bound_is_unimplemented():
    with pytest.raises(errors.UnimplementedError, match="gather"):
        getitem(ef.constant(_value((3,))), S(_Symbolic(1), None))


def test_exports():
    assert slicing.EXPORTS[""] == ["strided_slice", "slice"]
    for name in slicing.__all__:
        assert callable(getattr(slicing, name))
