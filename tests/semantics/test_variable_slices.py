"""Assignment to slices of variables, as TF's ``v[key].assign(value)``."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors


def _reference(shape, key, value):
    array = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    array[key] = value
    return array


KEYS = [((4,), 1, 9.0), ((4,), slice(None, None, 2), [7.0, 8.0]),
        ((4,), slice(1, 3), [5.0, 6.0]), ((4,), slice(None, None, -1), [1.0, 2.0, 3.0, 4.0]),
        ((3, 4), (1, slice(1, 3)), [5.0, 6.0]), ((3, 4), (Ellipsis, -1), 1.0),
        ((3, 4), (slice(None), 0), [[2.0], [2.0], [2.0]][0]), ((2, 3, 4), (1, Ellipsis, 2), 7.0),
        ((2, 3, 4), (slice(None), None, 1), np.ones((2, 1, 4))), ((3, 4), (-1,), 3.0)]


@pytest.mark.parametrize("shape,key,value", KEYS, ids=[repr(k) for _, k, _ in KEYS])
@pytest.mark.parametrize("traced", [False, True])
def test_slice_assign_matches_numpy(shape, key, value, traced):
    v = ef.Variable(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))

    def assign():
        v[key].assign(value)

    (ef.function(assign) if traced else assign)()
    np.testing.assert_array_equal(v.numpy(), _reference(shape, key, value))


def test_slice_assign_returns_the_variable_and_only_assign_exists():
    v = ef.Variable([1.0, 2.0, 3.0, 4.0])
    assert v[0].assign(5.0) is v
    with pytest.raises(AttributeError):  # as TF: a slice has no assign_add
        v[1:3].assign_add([1.0, 1.0])


def test_slice_is_an_ordinary_tensor_with_gradients():
    w = ef.Variable([1.0, 2.0, 3.0])
    with ef.GradientTape() as tape:
        y = ef.reduce_sum(w[1:] * 2.0)
    assert tape.gradient(y, w).numpy().tolist() == [0.0, 2.0, 2.0]
    assert float(w[1] + 1.0) == 3.0 and isinstance(w[1], ef.Tensor)


def test_bad_slice_assignments_raise_clear_errors():
    v = ef.Variable(np.zeros((2, 3), np.float32))
    with pytest.raises(errors.InvalidArgumentError, match="out of (range|bounds)"):
        v[5].assign(1.0)
    with pytest.raises(errors.InvalidArgumentError, match="does not fit"):
        v[0].assign([1.0, 2.0])
    with pytest.raises(errors.InvalidArgumentError):
        v[0, 0, 0].assign(1.0)
