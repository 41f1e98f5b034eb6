"""repeat, take, skip, shard and enumerate: values and cardinality, on both paths.

Each transformation runs over an in-memory source (the index-block path) and over the same
elements from a generator (the element path); both must agree with Python's list slicing.
"""

import itertools

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.data import Dataset

INFINITE, UNKNOWN = -1, -2


def values(ds):
    return [ef.nest.map_structure(lambda t: t.numpy().tolist(), e) for e in ds]


def sources(n):
    rows = Dataset.range(n)
    gen = Dataset.from_generator(lambda: iter(range(n)),
                                 output_signature=ef.TensorSpec([], ef.int64))
    return [("rows", rows), ("generator", gen)]


@pytest.mark.parametrize("count", [0, 1, 3, -1, None])
def test_repeat(count):
    for kind, ds in sources(4):
        got = values(ds.repeat(count).take(30))
        reps = 30 if count in (-1, None) else count
        assert got == list(itertools.islice(itertools.cycle(range(4)), 4 * reps))[:30], kind
    card = int(Dataset.range(4).repeat(count).cardinality())
    assert card == (INFINITE if count in (-1, None) else 4 * count)


def test_repeat_cardinality_rules_and_empty_input():
    assert int(Dataset.range(0).repeat().cardinality()) == 0
    assert values(Dataset.range(0).repeat()) == []  # an empty pass ends an endless repeat
    assert values(Dataset.range(0).filter(lambda x: True).repeat()) == []
    assert int(Dataset.range(3).filter(lambda x: True).repeat(2).cardinality()) == UNKNOWN
    assert int(Dataset.range(3).filter(lambda x: True).repeat().cardinality()) == INFINITE


@pytest.mark.parametrize("count", [0, 2, 5, 9, -1])
def test_take_and_skip(count):
    expected_take = list(range(5)) if count == -1 else list(range(5))[:count]
    expected_skip = [] if count == -1 else list(range(5))[count:]
    for kind, ds in sources(5):
        assert values(ds.take(count)) == expected_take, kind
        assert values(ds.skip(count)) == expected_skip, kind
    assert int(Dataset.range(5).take(count).cardinality()) == len(expected_take)
    assert int(Dataset.range(5).skip(count).cardinality()) == len(expected_skip)


def test_take_skip_cardinality_of_infinite_and_unknown():
    forever = Dataset.range(3).repeat()
    assert int(forever.take(7).cardinality()) == 7 and len(values(forever.take(7))) == 7
    assert int(forever.skip(7).cardinality()) == INFINITE
    unknown = Dataset.range(3).filter(lambda x: True)
    assert int(unknown.take(2).cardinality()) == UNKNOWN
    assert int(unknown.skip(2).cardinality()) == UNKNOWN
    with pytest.raises(ef.errors.InvalidArgumentError, match="count"):
        Dataset.range(3).take(-2)


@pytest.mark.parametrize("n,shards", [(10, 3), (7, 7), (5, 8), (12, 4)])
def test_shard(n, shards):
    for index in range(shards):
        for kind, ds in sources(n):
            assert values(ds.shard(shards, index)) == list(range(n))[index::shards], kind
        assert int(Dataset.range(n).shard(shards, index).cardinality()) == len(
            range(n)[index::shards])


def test_shard_errors_and_after_repeat():
    with pytest.raises(ef.errors.InvalidArgumentError, match="index"):
        Dataset.range(4).shard(2, 2)
    with pytest.raises(ef.errors.InvalidArgumentError, match="num_shards"):
        Dataset.range(4).shard(0, 0)
    stream = list(range(5)) * 3
    assert values(Dataset.range(5).repeat(3).shard(4, 3)) == stream[3::4]


def test_enumerate():
    ds = Dataset.from_tensor_slices(np.array([5.0, 6.0])).enumerate(start=3)
    assert values(ds) == [(3, 5.0), (4, 6.0)]
    assert ds.element_spec == (ef.TensorSpec([], ef.int64), ef.TensorSpec([], ef.float64))
    assert int(ds.cardinality()) == 2


def test_chains_agree_between_paths():
    chain = lambda ds: ds.skip(3).repeat(2).shard(3, 2).take(6).batch(4)  # noqa: E731
    (_, rows), (_, gen) = sources(11)
    expected = (list(range(11))[3:] * 2)[2::3][:6]
    assert values(chain(rows)) == values(chain(gen)) == [expected[:4], expected[4:]]
