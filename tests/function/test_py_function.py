"""py_function and numpy_function: eager, in graphs, gradients, refusal to serialize."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.function import serialize

F64 = ef.float64


def _square_sin(t):
    return ef.sin(t) * t


def test_py_function_eager_and_traced_agree():
    calls = []

    def double(t):
        calls.append(1)
        return t * 2.0

    @ef.function
    def f(x):
        return ef.py_function(double, [x], Tout=ef.float32) + 1.0

    assert float(f(ef.constant(3.0))) == 7.0
    assert float(f(ef.constant(4.0))) == 9.0
    assert len(calls) == 2  # the Python runs each time the graph runs, not at trace time
    assert float(ef.py_function(double, [ef.constant(3.0)], Tout=ef.float32)) == 6.0


def test_py_function_gradient_matches_finite_differences():
    def loss(x):
        return ef.reduce_sum(ef.py_function(_square_sin, [x], Tout=F64) ** 2)

    x0 = np.array([1.0, 2.0, -0.7])
    for fn in (ef.function(loss), loss):
        x = ef.constant(x0, F64)
        with ef.GradientTape() as tape:
            tape.watch(x)
            value = fn(x)
        grad = tape.gradient(value, x).numpy()
        want = 2 * np.sin(x0) * x0 * (np.cos(x0) * x0 + np.sin(x0))
        np.testing.assert_allclose(grad, want, rtol=1e-10)


def test_numpy_function_and_multiple_outputs():
    @ef.function
    def f(a):
        s, m = ef.numpy_function(lambda v: (np.sort(v), v.max()), [a],
                                 Tout=[ef.int32, ef.int32])
        return s, m

    s, m = f(ef.constant([3, 1, 2]))
    assert s.numpy().tolist() == [1, 2, 3] and int(m) == 3


def test_wrong_number_of_outputs_is_a_clear_error():
    f = ef.function(lambda a: ef.py_function(lambda v: (v, v), [a], Tout=ef.float32))
    with pytest.raises(errors.InvalidArgumentError, match="returned 2 values, but Tout"):
        f(ef.constant(1.0))


def test_a_graph_with_py_function_refuses_to_serialize():
    f = ef.function(lambda a: ef.py_function(lambda v: v + 1, [a], Tout=ef.int32))
    graph = f.get_concrete_function(ef.constant(1)).graph
    with pytest.raises(errors.UnimplementedError, match="runs Python code"):
        serialize.graph_to_proto(graph)


def test_numpy_function_gets_a_scalar_string_as_bytes():
    # TF's common idiom: a file name read in a numpy_function with path.decode().
    def length(path):
        return np.int64(len(path.decode()))

    want = [1, 3]
    ds = ef.data.Dataset.from_tensor_slices(["a", "bcd"]).map(
        lambda s: ef.numpy_function(length, [s], ef.int64))
    assert [int(x) for x in ds.as_numpy_iterator()] == want
    traced = ef.function(lambda s: ef.numpy_function(length, [s], ef.int64))
    assert [int(traced(ef.constant(s))) for s in ["a", "bcd"]] == want
    # A vector of strings stays an array.
    assert int(ef.numpy_function(lambda b: np.int64(b.shape[0]), [ef.constant(["a", "b"])],
                                 ef.int64)) == 2
