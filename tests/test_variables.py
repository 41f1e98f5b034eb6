"""Variable semantics: assignment, names, shapes, scatter updates, creator stack."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors


def test_assign_family_returns_variable_and_is_usable_in_expressions():
    v = ef.Variable([1.0, 2.0])
    assert v.assign([3.0, 4.0]) is v
    np.testing.assert_allclose((v.assign_add([1.0, 1.0]) * 2).numpy(), [8.0, 10.0])
    np.testing.assert_allclose(v.assign_sub([4.0, 5.0]).numpy(), [0.0, 0.0])
    assert v.assign(1.0 + np.zeros(2), read_value=False) is None


def test_reads_are_snapshots():
    v = ef.Variable([1.0, 2.0])
    before = v.read_value()
    v.assign_add([10.0, 10.0])
    np.testing.assert_allclose(before.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(v.value().numpy(), [11.0, 12.0])


def test_dtype_shape_device_and_numpy():
    v = ef.Variable(np.zeros((2, 3), np.float64))
    assert v.dtype == ef.float64 and v.shape == (2, 3)
    assert v.device.endswith("CPU:0")
    assert isinstance(v.numpy(), np.ndarray)
    assert ef.Variable(1).dtype == ef.int32
    assert ef.Variable(1, dtype=ef.float32).dtype == ef.float32


def test_names_are_not_made_unique_as_tf_eager():
    # TF 2 eager keeps the given name: two variables named `b` are both `b:0`.
    a = ef.Variable(1.0, name="weight_for_name_test")
    b = ef.Variable(1.0, name="weight_for_name_test")
    assert a.name == "weight_for_name_test:0"
    assert b.name == "weight_for_name_test:0"
    assert a is not b
    with ef.name_scope("outer_scope_for_test"):
        c = ef.Variable(1.0, name="w")
    assert c.name == "outer_scope_for_test/w:0"


def test_assign_wrong_dtype_or_shape_raises():
    v = ef.Variable([1.0, 2.0])
    with pytest.raises(errors.InvalidArgumentError, match="dtype"):
        v.assign(ef.constant([1, 2]))
    # assign of a wrong shape is TF's ValueError, eager and traced; assign_add is the op's
    # InvalidArgumentError, as in TF.
    with pytest.raises(ValueError, match="shape") as info:
        v.assign([1.0, 2.0, 3.0])
    assert type(info.value) is ValueError

    @ef.function
    def traced_assign():
        v.assign([1.0, 2.0, 3.0])

    with pytest.raises(ValueError, match="shape") as info:
        traced_assign()
    assert type(info.value) is ValueError
    with pytest.raises(errors.InvalidArgumentError):
        v.assign_add([1.0, 2.0, 3.0])
    np.testing.assert_allclose(v.numpy(), [1.0, 2.0])  # nothing changed


def test_unknown_shape_variable_accepts_new_shapes():
    v = ef.Variable([1.0], shape=ef.TensorShape(None))
    v.assign([1.0, 2.0, 3.0])
    assert v.shape.rank is None and v.numpy().shape == (3,)
    w = ef.Variable(np.zeros((2, 3)), shape=[None, 3])
    w.assign(np.ones((5, 3)))
    with pytest.raises(ValueError, match=r"shape \[5, 4\]"):
        w.assign(np.ones((5, 4)))


def test_scatter_updates():
    v = ef.Variable(np.zeros((4, 2)))
    v.scatter_update(ef.IndexedSlices(ef.constant(np.ones((2, 2))), ef.constant([0, 2])))
    v.scatter_add(ef.IndexedSlices(ef.constant(np.full((2, 2), 5.0)), ef.constant([2, 2])))
    np.testing.assert_allclose(v.numpy(), [[1, 1], [0, 0], [11, 11], [0, 0]])
    v.scatter_nd_update(ef.constant([[1, 0], [3, 1]]), ef.constant([7.0, 8.0], ef.float64))
    assert v.numpy()[1, 0] == 7.0 and v.numpy()[3, 1] == 8.0
    v.scatter_nd_add(ef.constant([[1, 0]]), ef.constant([1.0], ef.float64))
    assert v.numpy()[1, 0] == 8.0
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        v.scatter_update(ef.IndexedSlices(ef.constant(np.ones((1, 2))), ef.constant([9])))


def test_operators_and_conversion():
    v = ef.Variable([1.0, 2.0])
    np.testing.assert_allclose((v + v).numpy(), [2.0, 4.0])
    np.testing.assert_allclose((1.0 - v).numpy(), [0.0, -1.0])
    np.testing.assert_allclose(np.asarray(v), [1.0, 2.0])
    assert float(ef.Variable(3.0)) == 3.0
    assert v[1].numpy() == 2.0
    assert {v: 1}[v] == 1  # hashable by identity


def test_trainable_and_synchronization_defaults():
    assert ef.Variable(1.0).trainable
    on_read = ef.Variable(1.0, synchronization=ef.VariableSynchronization.ON_READ,
                          aggregation=ef.VariableAggregation.SUM)
    assert not on_read.trainable
    assert on_read.aggregation is ef.VariableAggregation.SUM
    with pytest.raises(ValueError):
        ef.Variable(1.0, trainable=True, synchronization=ef.VariableSynchronization.ON_READ)


def test_initial_value_callable_and_required():
    v = ef.Variable(lambda: ef.constant([1.0, 2.0]))
    assert v.shape == (2,)
    with pytest.raises(ValueError):
        ef.Variable()


def test_creator_stack_innermost_first():
    calls = []

    def outer(next_creator, **kwargs):
        calls.append("outer")
        return next_creator(**kwargs)

    def inner(next_creator, **kwargs):
        calls.append("inner")
        kwargs["trainable"] = False
        return next_creator(**kwargs)

    with ef.variable_creator_scope(outer):
        with ef.variable_creator_scope(inner):
            v = ef.Variable(1.0)
    assert calls == ["inner", "outer"]
    assert not v.trainable


def test_creator_can_substitute_another_object():
    class Remote:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    with ef.variable_creator_scope(lambda next_creator, **kw: Remote(**kw)):
        v = ef.Variable(2.0, name="r")
    assert isinstance(v, Remote) and v.kwargs["name"] == "r"


def test_variable_in_device_scope():
    with ef.device("/cpu:0"):
        v = ef.Variable(1.0)
    assert v.device == "/job:localhost/replica:0/task:0/device:CPU:0"
