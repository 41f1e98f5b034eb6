"""batch, padded_batch, unbatch and rebatch against numpy expectations."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.data import Dataset

INFINITE, UNKNOWN = -1, -2


def values(ds):
    return [ef.nest.map_structure(lambda t: t.numpy().tolist(), e) for e in ds]


def as_generator(ds):
    """The same elements from a source with no row access (forces the element path)."""
    return Dataset.from_generator(lambda: iter(list(ds)), output_signature=ds.element_spec)


@pytest.mark.parametrize("n,size,drop", [(10, 3, False), (10, 3, True), (9, 3, False),
                                         (2, 5, False), (2, 5, True), (0, 4, False)])
def test_batch_values_spec_and_cardinality(n, size, drop):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n)
    expected = [(x[i:i + size].tolist(), y[i:i + size].tolist())
                for i in range(0, n, size) if not drop or i + size <= n]
    for ds in (Dataset.from_tensor_slices((x, y)), as_generator(
            Dataset.from_tensor_slices((x, y)))):
        batched = ds.batch(size, drop_remainder=drop)
        assert values(batched) == expected
        bdim = size if drop else None
        assert batched.element_spec == (ef.TensorSpec([bdim, 2], ef.float32),
                                        ef.TensorSpec([bdim], ef.int64))
    assert int(Dataset.from_tensor_slices((x, y)).batch(size, drop).cardinality()) == len(
        expected)


def test_batch_cardinality_of_infinite_and_unknown():
    assert int(Dataset.range(3).repeat().batch(2).cardinality()) == INFINITE
    assert int(Dataset.range(3).filter(lambda x: True).batch(2).cardinality()) == UNKNOWN


def test_batch_fast_path_slices_without_copying():
    x = np.arange(20.0).reshape(10, 2)
    ds = Dataset.from_tensor_slices(x)
    first = next(iter(ds.batch(4)))
    base = np.asarray(first)
    assert not base.flags.owndata  # a view of the source array, not a stacked copy
    assert base.tolist() == x[:4].tolist()


def test_batch_after_repeat_take_skip_shard_matches_numpy():
    x = np.arange(7)
    ds = Dataset.from_tensor_slices(x)
    stream = np.concatenate([x, x, x])
    assert values(ds.repeat(3).batch(4)) == [stream[i:i + 4].tolist() for i in range(0, 21, 4)]
    assert values(ds.skip(2).take(4).batch(3)) == [[2, 3, 4], [5]]
    assert values(ds.shard(3, 1).batch(2)) == [[1, 4]]
    assert values(ds.repeat(2).shard(3, 1).batch(10)) == [stream[:14][1::3].tolist()]


def test_batch_nested_dict_structure():
    ds = Dataset.from_tensor_slices({"a": np.arange(5), "b": (np.ones((5, 2)), [1, 2, 3, 4, 5])})
    first = next(iter(ds.batch(2)))
    assert set(first) == {"a", "b"} and isinstance(first["b"], tuple)
    assert first["b"][0].shape == [2, 2] and first["a"].numpy().tolist() == [0, 1]


def test_batch_of_different_shapes_says_use_padded_batch():
    ds = Dataset.range(1, 4).map(lambda x: ef.fill([x], x))
    with pytest.raises(ef.errors.InvalidArgumentError, match="padded_batch"):
        list(ds.batch(3))


def test_batch_argument_errors():
    with pytest.raises(ef.errors.InvalidArgumentError, match="batch_size"):
        Dataset.range(3).batch(0)
    with pytest.raises(TypeError, match="batch_size"):
        Dataset.range(3).batch(2.0)
    with pytest.raises(TypeError, match="drop_remainder"):
        Dataset.range(3).batch(2, drop_remainder="yes")
    assert values(Dataset.range(3).batch(2, num_parallel_calls=-1, deterministic=True)) == [
        [0, 1], [2]]


# -- padded_batch -------------------------------------------------------------------------------


def ragged():
    return Dataset.range(1, 5).map(lambda x: ef.fill([x], x))


def test_padded_batch_pads_to_the_longest_in_each_batch():
    ds = ragged().padded_batch(2)
    assert values(ds) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert ds.element_spec == ef.TensorSpec([None, None], ef.int64)
    assert int(ds.cardinality()) == 2


def test_padded_batch_with_shapes_values_and_drop_remainder():
    ds = ragged().padded_batch(3, padded_shapes=[5], padding_values=np.int64(-1),
                               drop_remainder=True)
    assert ds.element_spec == ef.TensorSpec([3, 5], ef.int64)
    assert values(ds) == [[[1, -1, -1, -1, -1], [2, 2, -1, -1, -1], [3, 3, 3, -1, -1]]]
    assert values(ragged().padded_batch(4, padded_shapes=[None], padding_values=9))[0][0] == \
        [1, 9, 9, 9]


def test_padded_batch_of_tuples_with_per_component_settings():
    ds = Dataset.range(1, 4).map(lambda x: (ef.fill([x], 1.0), ef.fill([2, x], x)))
    out = values(ds.padded_batch(2, padded_shapes=([4], [2, None]),
                                 padding_values=(0.5, np.int64(0))))
    assert out[0][0] == [[1.0, 0.5, 0.5, 0.5], [1.0, 1.0, 0.5, 0.5]]
    assert out[0][1] == [[[1, 0], [1, 0]], [[2, 2], [2, 2]]]
    assert out[1][1] == [[[3, 3, 3], [3, 3, 3]]]


def test_padded_batch_errors():
    with pytest.raises(ef.errors.InvalidArgumentError, match="smaller size"):
        list(ragged().padded_batch(4, padded_shapes=[2]))
    fixed = Dataset.from_tensor_slices(np.zeros((4, 5)))
    with pytest.raises(ValueError, match="not compatible"):
        fixed.padded_batch(2, padded_shapes=[3])
    with pytest.raises(ValueError, match="not compatible"):
        fixed.padded_batch(2, padded_shapes=[5, 1])
    with pytest.raises(TypeError, match="dtype"):
        ragged().padded_batch(2, padding_values=ef.constant(0, ef.int32))
    with pytest.raises(ValueError, match="scalar"):
        ragged().padded_batch(2, padding_values=np.zeros(2, np.int64))


# -- unbatch, rebatch ---------------------------------------------------------------------------


def test_unbatch_inverts_batch():
    x = np.arange(14).reshape(7, 2)
    ds = Dataset.from_tensor_slices((x, np.arange(7))).batch(3)
    flat = ds.unbatch()
    assert values(flat) == [(x[i].tolist(), i) for i in range(7)]
    assert flat.element_spec == (ef.TensorSpec([2], ef.int64), ef.TensorSpec([], ef.int64))
    assert int(flat.cardinality()) == UNKNOWN  # the batch dimension is not static
    fixed = Dataset.from_tensor_slices(np.zeros((3, 4, 2))).unbatch()
    assert int(fixed.cardinality()) == 12 and fixed.element_spec.shape == [2]


def test_unbatch_errors():
    with pytest.raises(ValueError, match="scalar"):
        _ = Dataset.range(3).unbatch().element_spec
    mismatched = Dataset.from_generator(
        lambda: iter([(np.zeros(2), np.zeros(3))]),
        output_signature=(ef.TensorSpec([None], ef.float64),) * 2)
    with pytest.raises(ef.errors.InvalidArgumentError, match="different batch sizes"):
        list(mismatched.unbatch())


def test_rebatch():
    assert values(Dataset.range(7).batch(3).rebatch(2)) == [[0, 1], [2, 3], [4, 5], [6]]
    assert values(Dataset.range(7).batch(3).rebatch(2, drop_remainder=True))[-1] == [4, 5]


# -- window ----------------------------------------------------------------------------------------


def windows(ds):
    return [[int(x) for x in w] for w in ds]


@pytest.mark.parametrize("size,shift,stride,drop", [
    (3, 2, 1, False), (3, 1, 2, True), (2, None, 1, False), (2, None, 1, True), (3, 4, 1, False),
    (1, 1, 3, False), (4, 1, 1, True), (9, 1, 1, True)])
def test_window_matches_python_and_cardinality(size, shift, stride, drop):
    n, step = 7, size if shift is None else shift
    expected = []
    for start in range(0, n, step):
        members = list(range(n))[start:start + (size - 1) * stride + 1:stride]
        if drop and len(members) < size:
            break
        expected.append(members)
    ds = Dataset.range(n).window(size, shift=shift, stride=stride, drop_remainder=drop)
    assert windows(ds) == expected
    assert int(ds.cardinality()) == len(expected)


def test_window_of_tuples_gives_datasets_per_component_and_flat_map_batches_them():
    ds = Dataset.from_tensor_slices((np.arange(5), np.arange(5.0) * 10)).window(2)
    spec = ds.element_spec
    assert isinstance(spec, tuple) and spec[1].element_spec == ef.TensorSpec([], ef.float64)
    batched = ds.flat_map(lambda a, b: Dataset.zip(a.batch(2), b.batch(2)))
    assert values(batched) == [([0, 1], [0.0, 10.0]), ([2, 3], [20.0, 30.0]), ([4], [40.0])]
    assert batched.element_spec == (ef.TensorSpec([None], ef.int64),
                                    ef.TensorSpec([None], ef.float64))
    with pytest.raises(ef.errors.InvalidArgumentError, match="size"):
        Dataset.range(3).window(0)
