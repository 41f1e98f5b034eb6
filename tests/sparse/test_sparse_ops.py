"""tf.sparse against TensorFlow's outputs (tests/data/tf_reference/sparse_ops.json, recorded by
scripts/record_tf_reference.py sparse on the cases of sparse_cases.py): eagerly, and traced
in a @function whose SparseTensorSpec signature leaves every dimension (and the number of
values) unknown; and SparseTensors crossing @function boundaries as TF's composites do."""

import json
import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors

from tests.sparse import sparse_cases as cases

with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "tf_reference",
                       "sparse_ops.json")) as f:
    REF = json.load(f)


def _compare(got, want, name):
    if "dense" in want:
        assert not isinstance(got, ef.sparse.SparseTensor), name
        assert got.dtype.name == want["dtype"], name
        if got.dtype is ef.string:
            assert [b.decode() for b in got.numpy().reshape(-1).tolist()] == \
                np.asarray(want["dense"]).reshape(-1).tolist(), name
        else:
            np.testing.assert_allclose(got.numpy(), want["dense"], rtol=1e-6, err_msg=name)
        return
    assert isinstance(got, ef.sparse.SparseTensor), name
    indices = got.indices.numpy()
    assert indices.tolist() == want["indices"] or (indices.size == 0 and not want["indices"]), \
        "%s: indices %s != TF %s" % (name, indices.tolist(), want["indices"])
    values = got.values.numpy().tolist()
    if got.dtype is ef.string:
        values = [v.decode() for v in values]
        assert values == want["values"], name
    else:
        np.testing.assert_allclose(values, want["values"], rtol=1e-6, err_msg=name)
    assert got.dense_shape.numpy().tolist() == want["dense_shape"], name


def _relaxed_spec(x):
    """The signature spec of an argument with every dimension unknown."""
    if isinstance(x, ef.sparse.SparseTensor):
        return ef.SparseTensorSpec([None] * x.shape.rank, x.dtype)
    return ef.TensorSpec([None] * x.shape.rank, x.dtype)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_eager_matches_tensorflow(name):
    inputs, op = cases.CASES[name]
    _compare(op(ef, *inputs(ef)), REF["ops"][name], name)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_traced_with_unknown_shapes_matches_tensorflow(name):
    inputs, op = cases.CASES[name]
    args = inputs(ef)
    call = (lambda a: op(ef, a)) if len(args) == 1 else (lambda a, b: op(ef, a, b))
    fn = ef.function(call, input_signature=[_relaxed_spec(a) for a in args])
    _compare(fn(*args), REF["ops"][name], name)


@pytest.mark.parametrize("name", sorted(cases.GRAD_CASES))
@pytest.mark.parametrize("traced", [False, True])
def test_gradients_match_tensorflow(name, traced):
    loss = cases.GRAD_CASES[name]
    want = REF["grads"][name]
    v = ef.Variable(cases.VALUES)
    b = ef.Variable(cases.GRAD_DENSE)
    fn = (lambda x, y: loss(ef, x, y))
    if traced:
        fn = ef.function(fn, input_signature=[ef.TensorSpec([None], ef.float32),
                                              ef.TensorSpec([None, 2], ef.float32)])
    with ef.GradientTape() as tape:
        value = fn(v * 1.0, b * 1.0)
    gv, gb = tape.gradient(value, [v, b])
    np.testing.assert_allclose(value.numpy(), want["loss"], rtol=1e-5)
    np.testing.assert_allclose(gv.numpy(), want["values"], rtol=1e-5)
    if want["dense"] is None:
        assert gb is None
    else:
        np.testing.assert_allclose(gb.numpy(), want["dense"], rtol=1e-5)


def test_one_trace_serves_any_number_of_values():
    traced = []

    @ef.function
    def f(st):
        traced.append((st.shape.as_list(), st.indices.shape.as_list()))
        return ef.sparse.reduce_sum(st, axis=1)

    a = ef.sparse.SparseTensor([[0, 1]], [2.0], [2, 3])
    b = ef.sparse.SparseTensor([[0, 0], [1, 2], [1, 1]], [1.0, 2.0, 3.0], [2, 3])
    assert f(a).numpy().tolist() == [2.0, 0.0]
    assert f(b).numpy().tolist() == [1.0, 5.0]
    # As TF: the static dense shape is part of the type (a new one traces again), the
    # number of values is not.
    assert traced == [([2, 3], [None, 2])]
    assert f(ef.sparse.SparseTensor([[2, 0]], [4.0], [3, 3])).numpy().tolist() == [0, 0, 4]
    assert len(traced) == 2
    assert "changed type SparseTensorSpec" in f.experimental_retrace_reasons()[0]


def test_signature_spec_shape_inside_and_sparse_results():
    seen = []

    @ef.function(input_signature=[ef.SparseTensorSpec([None, 3], ef.float32)])
    def f(st):
        seen.append(st.shape.as_list())
        return ef.sparse.add(st, st), ef.sparse.to_dense(st)

    for st in (ef.sparse.SparseTensor([[1, 0]], [1.0], [2, 3]),
               ef.sparse.SparseTensor([[0, 2], [4, 1]], [1.0, 3.0], [5, 3])):
        doubled, dense = f(st)
        assert isinstance(doubled, ef.sparse.SparseTensor)
        assert doubled.shape.as_list() == st.shape.as_list()
        np.testing.assert_array_equal(ef.sparse.to_dense(doubled).numpy(), 2 * dense.numpy())
        np.testing.assert_array_equal(dense.numpy(), ef.sparse.to_dense(st).numpy())
    assert seen == [[None, 3]]
    # get_concrete_function() on the signature is the trace the calls used.
    assert f.get_concrete_function() is f.get_concrete_function(
        ef.SparseTensorSpec([None, 3], ef.float32))


def test_signature_refuses_mismatched_sparse_arguments():
    f = ef.function(lambda st: st.values,
                    input_signature=[ef.SparseTensorSpec([None, 3], ef.float32)])
    with pytest.raises(TypeError, match="not compatible"):
        f(ef.sparse.SparseTensor([[0, 0]], [1.0], [2, 4]))
    with pytest.raises(TypeError, match="not compatible"):
        f(ef.sparse.SparseTensor([[0, 0]], [1], [2, 3]))
    with pytest.raises(TypeError, match="SparseTensor"):
        f(ef.constant([[1.0, 2.0, 3.0]]))


def test_traced_ops_check_indices_when_they_run():
    f = ef.function(ef.sparse.to_dense, input_signature=[ef.SparseTensorSpec([None], ef.int32)])
    unordered = ef.sparse.SparseTensor([[2], [0]], [1, 2], [3])
    with pytest.raises(errors.InvalidArgumentError, match="out of order"):
        f(unordered)
    assert f(ef.sparse.reorder(unordered)).numpy().tolist() == [2, 0, 1]
    g = ef.function(lambda st: ef.sparse.reshape(st, [4, -1]),
                    input_signature=[ef.SparseTensorSpec([None, None], ef.int32)])
    with pytest.raises(errors.InvalidArgumentError, match="cannot reshape"):
        g(ef.sparse.SparseTensor([[0, 0]], [1], [3, 3]))
    m = ef.function(ef.sparse.sparse_dense_matmul,
                    input_signature=[ef.SparseTensorSpec([None, None], ef.float32),
                                     ef.TensorSpec([None, None], ef.float32)])
    with pytest.raises(errors.InvalidArgumentError, match="inner dimensions"):
        m(ef.sparse.SparseTensor([[0, 0]], [1.0], [2, 3]), ef.ones([2, 2]))


def test_sparse_function_round_trips_through_a_saved_graph():
    from eagerflow.function import serialize

    f = ef.function(lambda st, b: ef.sparse.sparse_dense_matmul(ef.sparse.reorder(st), b),
                    input_signature=[ef.SparseTensorSpec([None, 3], ef.float32),
                                     ef.TensorSpec([3, 2], ef.float32)])
    loaded = serialize.load_function(serialize.serialize_concrete_function(
        f.get_concrete_function()))
    b = ef.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    for st in (ef.sparse.SparseTensor([[1, 2], [0, 0]], [2.0, -1.0], [2, 3]),
               ef.sparse.SparseTensor([[3, 1]], [5.0], [4, 3])):
        want = ef.sparse.to_dense(ef.sparse.reorder(st)).numpy() @ b.numpy()
        np.testing.assert_allclose(f(st, b).numpy(), want)
        # The loaded graph takes the components, as its placeholders are.
        got = loaded([st.indices, st.values, st.dense_shape, b])
        np.testing.assert_allclose(got.numpy(), want)
