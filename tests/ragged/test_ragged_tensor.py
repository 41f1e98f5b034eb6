"""RaggedTensor: construction, conversion, partitions, indexing, element-wise ops, gradients."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors


def test_constructions_agree():
    values = [3, 1, 4, 1, 5, 9, 2]
    a = ef.RaggedTensor.from_row_splits(values, [0, 4, 4, 7])
    b = ef.RaggedTensor.from_row_lengths(values, [4, 0, 3])
    c = ef.RaggedTensor.from_value_rowids(values, [0, 0, 0, 0, 2, 2, 2], nrows=3)
    want = [[3, 1, 4, 1], [], [5, 9, 2]]
    assert a.to_list() == b.to_list() == c.to_list() == want
    assert ef.ragged.constant(want).to_list() == want
    assert a.row_lengths().numpy().tolist() == [4, 0, 3]
    assert a.row_splits.dtype is ef.int64 and a.ragged_rank == 1
    assert a.shape.as_list() == [3, None]


def test_bad_partitions_are_refused():
    with pytest.raises(errors.InvalidArgumentError, match="row_splits"):
        ef.RaggedTensor.from_row_splits([1, 2], [0, 3])
    with pytest.raises(errors.InvalidArgumentError, match="sorted"):
        ef.RaggedTensor.from_value_rowids([1, 2], [1, 0])


def test_nested_and_merge_dims():
    rt = ef.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]])
    assert rt.ragged_rank == 2
    assert [s.numpy().tolist() for s in rt.nested_row_lengths()] == [[2, 0, 1], [2, 1, 3]]
    assert rt.flat_values.numpy().tolist() == [1, 2, 3, 4, 5, 6]
    assert rt.merge_dims(1, 2).to_list() == [[1, 2, 3], [], [4, 5, 6]]
    assert rt.merge_dims(0, 1).to_list() == [[1, 2], [3], [4, 5, 6]]
    again = ef.RaggedTensor.from_nested_row_splits(rt.flat_values, rt.nested_row_splits)
    assert again.to_list() == rt.to_list()


def test_to_tensor_and_from_tensor():
    rt = ef.ragged.constant([[1.0, 2.0], [], [3.0]])
    assert rt.to_tensor().numpy().tolist() == [[1, 2], [0, 0], [3, 0]]
    assert rt.to_tensor(default_value=-1.0).numpy().tolist() == [[1, 2], [-1, -1], [3, -1]]
    nested = ef.ragged.constant([[[1], [2, 3]], [[4]]])
    assert nested.to_tensor().numpy().tolist() == [[[1, 0], [2, 3]], [[4, 0], [0, 0]]]
    assert ef.RaggedTensor.from_tensor([[1, 0, 0], [2, 3, 0]], padding=0).to_list() == \
        [[1], [2, 3]]
    assert ef.RaggedTensor.from_tensor([[1, 2], [3, 4]], lengths=[1, 2]).to_list() == \
        [[1], [3, 4]]
    strings = ef.ragged.constant([["a"], []])
    assert strings.to_tensor().numpy().tolist() == [[b"a"], [b""]]


def test_indexing():
    rt = ef.ragged.constant([[1, 2], [], [3, 4, 5]])
    assert rt[0].numpy().tolist() == [1, 2]
    assert rt[-1].numpy().tolist() == [3, 4, 5]
    assert rt[2, 1].numpy() == 4
    assert rt[1:].to_list() == [[], [3, 4, 5]]
    assert rt[::2].to_list() == [[1, 2], [3, 4, 5]]
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        rt[3]


def test_elementwise_and_map_flat_values():
    rt = ef.ragged.constant([[1.0, 2.0], [3.0]])
    assert (rt * 2 + 1).to_list() == [[3.0, 5.0], [7.0]]
    assert (rt + rt).to_list() == [[2.0, 4.0], [6.0]]
    assert ef.ragged.map_flat_values(ef.square, rt).to_list() == [[1.0, 4.0], [9.0]]
    with pytest.raises(errors.InvalidArgumentError, match="partitions"):
        rt + ef.ragged.constant([[1.0], [2.0, 3.0]])


def test_concat_stack_gather():
    a = ef.ragged.constant([[1], [2, 3]])
    b = ef.ragged.constant([[4, 5], []])
    assert ef.ragged.concat([a, b], 0).to_list() == [[1], [2, 3], [4, 5], []]
    assert ef.ragged.concat([a, b], 1).to_list() == [[1, 4, 5], [2, 3]]
    assert ef.ragged.stack([ef.constant([1, 2]), ef.constant([3])]).to_list() == [[1, 2], [3]]
    assert ef.ragged.gather(a, [1, 1, 0]).to_list() == [[2, 3], [2, 3], [1]]


def test_gradient_reaches_flat_values():
    values = ef.Variable([1.0, 2.0, 3.0], dtype=ef.float64)
    with ef.GradientTape() as tape:
        rt = ef.RaggedTensor.from_row_lengths(values, [2, 1])
        dense = (rt * rt).to_tensor()
        loss = ef.reduce_sum(dense * ef.constant([[1.0, 10.0], [100.0, 1000.0]], ef.float64))
    grad = tape.gradient(loss, values)
    np.testing.assert_allclose(grad.numpy(), [2 * 1.0 * 1, 2 * 2.0 * 10, 2 * 3.0 * 100])
