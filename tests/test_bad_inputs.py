"""Named bad inputs: out-of-range Python ints, object arrays, deep nesting, bad seeds.

Each must raise a clean error (an eagerflow error, TypeError or ValueError naming what is
wrong), never wrap silently, loop or raise OverflowError, RecursionError, AttributeError.
"""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors, nest


def _deep(n, leaf=1):
    x = leaf
    for _ in range(n):
        x = [x]
    return x


# -- Python ints out of range: TF's rules per dtype ------------------------------------------
@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64, 10**30, [1, 2**63],
                                   [-1, 2**63], [[2**64]]])
def test_ints_outside_int64_raise_instead_of_wrapping(value):
    with pytest.raises(ValueError, match="out of range for int64"):
        ef.constant(value)
    with pytest.raises(ValueError, match="out of range"):
        ef.convert_to_tensor(value)


@pytest.mark.parametrize("value,dtype", [(2**31, ef.int32), (-(2**31) - 1, ef.int32),
                                         (256, ef.uint8), (-1, ef.uint8), (2**63, ef.int64),
                                         (2**64, ef.uint64), (-1, ef.uint64),
                                         ([0, 2**16], ef.int16)])
def test_ints_outside_the_requested_dtype_raise(value, dtype):
    with pytest.raises(TypeError, match="out of range"):
        ef.constant(value, dtype=dtype)


def test_ints_at_the_edges_convert_exactly():
    assert ef.constant(2**63 - 1).numpy() == 2**63 - 1
    assert ef.constant(-(2**63)).numpy() == -(2**63)
    assert ef.constant(2**31).dtype == ef.int64 and ef.constant(2**31 - 1).dtype == ef.int32
    big = ef.constant([2**63, 2**64 - 1], dtype=ef.uint64).numpy()
    assert big.dtype == np.uint64 and big.tolist() == [2**63, 2**64 - 1]
    assert ef.constant(2**63, dtype=ef.float64).numpy() == 2.0**63
    assert ef.constant([1.5, 2**63]).dtype == ef.float32  # a float in the list: floats


def test_object_arrays_are_refused():
    with pytest.raises(errors.InvalidArgumentError, match="object"):
        ef.constant(np.array([object()]))
    with pytest.raises(errors.InvalidArgumentError):
        ef.convert_to_tensor(np.array([1, object()], dtype=object))


# -- nesting depth ---------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [65, 200, 5000, 100000])
def test_deeply_nested_lists_have_a_depth_limit(depth):
    with pytest.raises(errors.InvalidArgumentError, match="nested"):
        ef.constant(_deep(depth))
    with pytest.raises(errors.InvalidArgumentError, match="nested"):
        ef.add(_deep(depth), 1.0)


def test_nest_refuses_structures_deeper_than_the_recursion_limit():
    deep = _deep(20000)
    assert len(nest.flatten(deep)) == 1  # flatten walks without recursion
    for call in (lambda: nest.map_structure(lambda x: x, deep),
                 lambda: nest.pack_sequence_as(deep, [1]),
                 lambda: nest.assert_same_structure(deep, deep),
                 lambda: nest.flatten_with_paths(deep)):
        with pytest.raises(ValueError, match="nested deeper"):
            call()


def test_short_repr_never_raises_and_is_short():
    class Broken:
        def __repr__(self):
            raise RuntimeError("no repr")

    assert errors.short_repr(_deep(50000)).startswith("[[[[")
    assert errors.short_repr(Broken()).startswith("<Broken")
    assert len(errors.short_repr(list(range(10**5)), 40)) <= 40


def test_keras_layers_refuse_deeply_nested_inputs():
    with pytest.raises(ValueError, match="nested more than"):
        ef.keras.layers.Dense(2)(_deep(5000, [1.0]))


# -- seeds -----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [object(), 1.5, float("inf"), float("nan"), "1", [1, 2],
                                  ef.constant([1, 2]), ef.constant(1.0), True])
@pytest.mark.parametrize("op", ["uniform", "normal", "truncated_normal", "gamma", "shuffle",
                                "categorical"])
def test_stateful_random_ops_refuse_bad_seeds(seed, op):
    calls = {
        "uniform": lambda: ef.random.uniform([2], seed=seed),
        "normal": lambda: ef.random.normal([2], seed=seed),
        "truncated_normal": lambda: ef.random.truncated_normal([2], seed=seed),
        "gamma": lambda: ef.random.gamma([2], 1.5, seed=seed),
        "shuffle": lambda: ef.random.shuffle([1, 2, 3], seed=seed),
        "categorical": lambda: ef.random.categorical([[0.0, 1.0]], 2, seed=seed),
    }
    with pytest.raises(TypeError, match="random.%s: seed must be an integer" % op):
        calls[op]()


def test_integer_seeds_of_every_kind_work_and_agree():
    a = ef.random.uniform([3], seed=7).numpy()
    b = ef.random.uniform([3], seed=np.int64(7)).numpy()
    c = ef.random.uniform([3], seed=ef.constant(7)).numpy()
    assert a.shape == b.shape == c.shape == (3,)
    ef.random.set_seed(5)
    x = ef.random.uniform([3], seed=7).numpy()
    ef.random.set_seed(ef.constant(5))
    y = ef.random.uniform([3], seed=7).numpy()
    ef.random.set_seed(None)
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("seed", [object(), float("inf"), 2.5, "3", [1]])
def test_set_seed_refuses_bad_seeds(seed):
    with pytest.raises(TypeError, match="random.set_seed: seed must be an integer"):
        ef.random.set_seed(seed)
    assert ef.random.uniform([1]).shape == [1]  # the global seed was left alone


def test_generator_copy_from_must_be_a_generator():
    with pytest.raises(TypeError, match="copy_from must be a Generator"):
        ef.random.Generator(copy_from=1.0)


# -- inf / NaN where an integer is expected ----------------------------------------------------
@pytest.mark.parametrize("bad", [float("inf"), float("nan"), -float("inf"), 1e300])
def test_inf_and_nan_where_an_integer_is_expected(bad):
    cases = [lambda: ef.zeros([bad]), lambda: ef.ones([2, bad]), lambda: ef.one_hot([0], bad),
             lambda: ef.reshape([1.0, 2.0], [bad]), lambda: ef.tile([1.0], [bad]),
             lambda: ef.range(bad), lambda: ef.random.uniform([bad]),
             lambda: ef.DeviceSpec(device_index=bad), lambda: ef.DeviceSpec(task=bad),
             lambda: ef.keras.layers.Dense(bad), lambda: ef.reduce_sum([1.0], axis=bad)]
    for case in cases:
        with pytest.raises((errors.OpError, TypeError, ValueError)):
            case()


# -- layers given the wrong kind of argument ----------------------------------------------------
def test_layers_name_the_bad_argument():
    layers = ef.keras.layers
    with pytest.raises(ValueError, match="backward_layer"):
        layers.Bidirectional(layers.SimpleRNN(2), backward_layer=5)
    with pytest.raises(TypeError, match="equation must be a string"):
        layers.EinsumDense(None, 2)
    for cell in (layers.SimpleRNNCell(2), layers.LSTMCell(2), layers.GRUCell(2)):
        with pytest.raises(ValueError, match="feature axis"):
            cell(ef.constant(1.0), [ef.zeros([1, 2])] * len(cell.state_size)
                 if isinstance(cell.state_size, (list, tuple)) else [ef.zeros([1, 2])])
    with pytest.raises((errors.OpError, TypeError, ValueError)):
        layers.Reshape((3, 2))("not a tensor")


def test_conv_transpose_with_a_bad_input_names_the_op():
    with pytest.raises(errors.InvalidArgumentError, match="rank 4"):
        ef.nn.conv2d_transpose(None, ef.ones([2, 2, 3, 2]), [4, 4], strides=1)


def test_keras_identifiers_that_are_not_names_raise_value_error():
    deep = _deep(5000)
    keras = ef.keras
    for get in (keras.initializers.get, keras.regularizers.get, keras.constraints.get,
                keras.activations.get, keras.optimizers.get, keras.losses.get,
                keras.metrics.get):
        with pytest.raises(ValueError, match="Could not interpret"):
            get(deep)
    with pytest.raises(ValueError, match="Could not interpret initializer"):
        keras.layers.LSTM(2, bias_initializer=deep)
