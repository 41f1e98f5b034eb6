"""Assert, debugging.assert_*, check_numerics, control_dependencies, init_scope, types."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.function import serialize


def test_assert_eager_and_in_a_graph():
    ef.debugging.Assert(ef.constant(True), ["never shown"])
    with pytest.raises(errors.InvalidArgumentError, match=r"x must be positive: \[-1 2\]"):
        ef.Assert(ef.reduce_all(ef.constant([-1, 2]) > 0),
                  ["x must be positive:", ef.constant([-1, 2])])

    @ef.function
    def f(x):
        ef.debugging.Assert(ef.reduce_all(x > 0), ["x must be positive:", x])
        return x * 2

    assert f(ef.constant([1, 2])).numpy().tolist() == [2, 4]
    with pytest.raises(errors.InvalidArgumentError, match=r"x must be positive: \[-1 2\]"):
        f(ef.constant([-1, 2]))
    # The Assert node survives a protobuf round trip and still fails.
    loaded = serialize.load_function(serialize.graph_to_proto(
        f.get_concrete_function(ef.TensorSpec([2], ef.int32))))
    assert loaded(ef.constant([3, 4])).numpy().tolist() == [6, 8]
    with pytest.raises(errors.InvalidArgumentError, match=r"x must be positive: \[-3 4\]"):
        loaded(ef.constant([-3, 4]))


@pytest.mark.parametrize("check, good, bad", [
    (ef.debugging.assert_equal, ([1, 2], [1, 2]), ([1, 2], [1, 3])),
    (ef.debugging.assert_less, ([1, 2], [2, 3]), ([1, 2], [2, 2])),
    (ef.debugging.assert_greater_equal, ([2, 2], [1, 2]), ([0, 2], [1, 2])),
    (ef.debugging.assert_none_equal, ([1, 2], [3, 4]), ([1, 2], [1, 4])),
])
def test_binary_asserts_eager_and_traced(check, good, bad):
    check(ef.constant(good[0]), ef.constant(good[1]))
    with pytest.raises(errors.InvalidArgumentError):
        check(ef.constant(bad[0]), ef.constant(bad[1]))

    @ef.function
    def f(x, y):
        check(x, y)
        return x

    f(ef.constant(good[0]), ef.constant(good[1]))
    with pytest.raises(errors.InvalidArgumentError, match="did not hold element-wise"):
        f(ef.constant(bad[0]), ef.constant(bad[1]))


def test_static_checks_fail_while_tracing():
    @ef.function
    def f(x):
        ef.debugging.assert_equal(ef.constant(1), ef.constant(2), message="static")
        return x

    with pytest.raises(errors.InvalidArgumentError, match="static"):
        f(ef.constant(1.0))


def test_rank_shape_and_type_asserts():
    x = ef.ones([2, 3])
    ef.debugging.assert_rank(x, 2)
    ef.debugging.assert_rank_at_least(x, 1)
    ef.debugging.assert_rank_in(x, [1, 2])
    with pytest.raises(ValueError, match="must have rank 3"):
        ef.debugging.assert_rank(x, 3)
    ef.debugging.assert_shapes([(x, ("N", "D")), (ef.ones([2]), ("N",))])
    with pytest.raises(ValueError, match="symbol 'N'"):
        ef.debugging.assert_shapes([(x, ("N", "D")), (ef.ones([3]), ("N",))])
    with pytest.raises(TypeError, match="float64"):
        ef.debugging.assert_type(x, ef.float64)

    @ef.function(input_signature=[ef.TensorSpec([None, 3]), ef.TensorSpec([None])])
    def f(a, b):
        ef.debugging.assert_shapes([(a, ("N", 3)), (b, ("N",))])
        return b

    f(ef.ones([4, 3]), ef.ones([4]))
    with pytest.raises(errors.InvalidArgumentError, match="symbol 'N'"):
        f(ef.ones([4, 3]), ef.ones([5]))


def test_check_numerics_eager_traced_and_gradient():
    ok = ef.debugging.check_numerics(ef.constant([1.0, 2.0]), "fine")
    assert ok.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(errors.InvalidArgumentError, match="bad : Tensor had NaN values"):
        ef.debugging.check_numerics(ef.constant([np.nan, 1.0]), "bad")
    f = ef.function(lambda x: ef.debugging.check_numerics(ef.math.log(x), "log"))
    assert f(ef.constant([1.0])).numpy().tolist() == [0.0]
    with pytest.raises(errors.InvalidArgumentError, match="log : Tensor had"):
        f(ef.constant([-1.0]))
    x = ef.constant([2.0, 3.0], ef.float64)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(ef.debugging.check_numerics(x * x, "sq"))
    assert tape.gradient(y, x).numpy().tolist() == [4.0, 6.0]


def test_enable_check_numerics_names_the_op():
    ef.debugging.enable_check_numerics()
    try:
        with pytest.raises(errors.InvalidArgumentError, match="Detected NaN .* op Log"):
            ef.math.log(ef.constant(-1.0))
    finally:
        ef.debugging.disable_check_numerics()
    assert np.isnan(ef.math.log(ef.constant(-1.0)).numpy())  # off again: TF's silence


def test_control_dependencies_and_init_scope():
    @ef.function
    def f(x):
        check = ef.debugging.assert_positive(x)
        with ef.control_dependencies([check, x]):
            y = ef.identity(x) + 1.0
        with ef.init_scope():
            eager = ef.executing_eagerly()
        return y, eager

    y, eager = f(ef.constant(2.0))
    assert float(y) == 3.0 and bool(eager) is True
    with pytest.raises(errors.InvalidArgumentError):
        f(ef.constant(-2.0))
    with pytest.raises(TypeError):
        with ef.control_dependencies(ef.constant(1.0)):
            pass


def test_types_and_signatures():
    f = ef.function(lambda x: x * 2.0)
    f(ef.constant(1.0))
    f(ef.constant([1.0, 2.0]))
    assert isinstance(f, ef.types.experimental.GenericFunction)
    cf = f.get_concrete_function(ef.constant(1.0))
    assert isinstance(cf, ef.types.experimental.ConcreteFunction)
    text = f.pretty_printed_concrete_signatures()
    assert text.count("float32") >= 4 and len(text.split("\n\n")) == 2
    graph_def = cf.graph.as_graph_def()
    ops = [n.op for n in graph_def.node]
    assert "Placeholder" in ops and "Mul" in ops
    assert all(n.name for n in graph_def.node)


def test_assert_scalar_and_assert_integer():
    assert ef.debugging.assert_scalar(ef.constant(3)) is None  # as TF 2's
    with pytest.raises(ValueError, match="Expected scalar shape"):
        ef.debugging.assert_scalar(ef.constant([3]))
    with pytest.raises(ValueError, match="Expected scalar shape"):
        ef.function(lambda x: ef.debugging.assert_scalar(x))(ef.constant([3]))
    ef.debugging.assert_integer(ef.constant([1, 2]))
    with pytest.raises(TypeError, match="Expected integer type"):
        ef.debugging.assert_integer(ef.constant(1.0))


def test_graph_operations_have_tf_types_and_names():
    cf = ef.function(lambda x: ef.nn.relu(x) * 2.0).get_concrete_function(ef.TensorSpec([2]))
    ops = cf.graph.get_operations()
    assert [op.type for op in ops] == ["Placeholder", "Relu", "Const", "Mul"]
    assert [n.op for n in cf.graph.as_graph_def().node] == [op.type for op in ops]
