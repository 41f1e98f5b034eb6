"""Element-wise ops on RaggedTensors run on their flat values, as TF's ragged dispatch does:
values recorded with TensorFlow (ragged_op_cases.py), traced equal to eager, gradients to
the flat values, and clear errors for what cannot broadcast."""

import json
import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from tests.ragged.ragged_op_cases import CASES, FROM_SPARSE, TO_SPARSE

_REF = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "tf_reference",
                    "ragged_ops.json")
with open(_REF) as _f:
    TF = json.load(_f)


def _plain(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [_plain(y) for y in x]
    return x


def _close(a, b):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, float) or isinstance(b, float):
        return bool(np.isclose(a, b, rtol=1e-6, atol=1e-7))
    return a == b


@pytest.mark.parametrize("name", sorted(CASES))
def test_elementwise_on_ragged_matches_tensorflow(name):
    got = CASES[name](ef)
    assert isinstance(got, ef.RaggedTensor)
    assert got.dtype.name == TF[name]["dtype"]
    assert _close(_plain(got.to_list()), TF[name]["values"]), (got.to_list(), TF[name])


@pytest.mark.parametrize("name", ["abs", "sigmoid", "cast_int", "mul_self", "greater",
                                  "strings_lower", "strings_hash_strong", "inner_bcast"])
def test_elementwise_on_ragged_traced_equals_eager(name):
    eager = CASES[name](ef).to_list()
    traced = ef.function(lambda: CASES[name](ef))().to_list()
    assert traced == eager


def test_elementwise_in_a_ragged_signature_function():
    fn = ef.function(lambda x: ef.strings.length(ef.strings.lower(x)) * 2,
                     input_signature=[ef.RaggedTensorSpec([None, None], ef.string)])
    rt = ef.ragged.constant([["Ab", "c"], [], ["DEF"]])
    assert fn(rt).to_list() == [[4, 2], [], [6]]
    assert fn(ef.ragged.constant([["xyz"]])).to_list() == [[6]]


def test_gradient_of_an_elementwise_op_reaches_the_flat_values():
    values = ef.Variable([1.0, 2.0, 3.0], dtype=ef.float64)
    with ef.GradientTape() as tape:
        rt = ef.RaggedTensor.from_row_lengths(values * 1.0, [2, 1])
        loss = ef.reduce_sum(ef.exp(rt) * rt)
    grad = tape.gradient(loss, values).numpy()
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(grad, np.exp(v) * (1 + v), rtol=1e-12)


def test_elementwise_refusals_are_clear():
    rt = ef.ragged.constant([[1.0, 2.0], [3.0]])
    with pytest.raises(errors.InvalidArgumentError, match="row partitions"):
        ef.add(rt, ef.ragged.constant([[1.0], [2.0, 3.0]]))
    # Rows of lengths 2 and 1 do not broadcast against a dimension of size 2 (TF refuses
    # it too); ragged broadcasting itself is tested in test_ragged_broadcast.py.
    with pytest.raises(errors.InvalidArgumentError, match="rows of other lengths"):
        ef.add(rt, ef.constant([1.0, 2.0]))
    with pytest.raises(errors.InvalidArgumentError, match="rows of other lengths"):
        rt + ef.constant([1.0, 2.0])


def test_plain_tensors_are_untouched_by_the_ragged_path():
    x = ef.constant([1.0, -2.0])
    assert ef.abs(x).numpy().tolist() == [1.0, 2.0]
    assert ef.strings.lower(ef.constant(["AB"])).numpy().tolist() == [b"ab"]


@pytest.mark.parametrize("name", sorted(TO_SPARSE))
def test_to_sparse_matches_tensorflow(name):
    st = TO_SPARSE[name](ef)
    assert isinstance(st, ef.SparseTensor)
    got = [st.indices.numpy().tolist(), _plain(st.values.numpy().tolist()),
           st.dense_shape.numpy().tolist()]
    assert got == TF["to_sparse_" + name]


@pytest.mark.parametrize("name", sorted(FROM_SPARSE))
def test_from_sparse_matches_tensorflow(name):
    assert _plain(FROM_SPARSE[name](ef).to_list()) == TF["from_sparse_" + name]


def test_from_sparse_of_a_varlen_batch_and_refusals():
    records = ef.data.TFRecordDataset(os.path.join(
        os.path.dirname(_REF), "examples.tfrecord")).batch(4)
    tags = ef.io.parse_example(next(iter(records)), {"tags": ef.io.VarLenFeature(ef.int64)})
    assert ef.RaggedTensor.from_sparse(tags["tags"]).to_list() == [[], [0], [0, 1], [0, 1, 2]]
    with pytest.raises(errors.InvalidArgumentError, match="rank-2"):
        ef.RaggedTensor.from_sparse(ef.SparseTensor([[0]], [1], [3]))
    with pytest.raises(errors.InvalidArgumentError, match="leftmost"):
        ef.RaggedTensor.from_sparse(ef.SparseTensor([[0, 1]], [1], [2, 3]))
    rt = ef.ragged.constant([[1.0], [2.0, 3.0]])
    back = ef.RaggedTensor.from_sparse(rt.to_sparse())
    assert back.to_list() == rt.to_list()
