"""map (sequential and threaded), filter, take_while, flat_map, interleave and scan."""

import random
import threading
import time

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.data import AUTOTUNE, Dataset, Options


def values(ds):
    return [ef.nest.map_structure(lambda t: t.numpy().tolist(), e) for e in ds]


# -- map ------------------------------------------------------------------------------------------


def test_map_unpacks_tuples_and_passes_dicts_whole():
    pairs = Dataset.from_tensor_slices(([1, 2, 3], [10, 20, 30]))
    assert values(pairs.map(lambda x, y: x + y)) == [11, 22, 33]
    dicts = Dataset.from_tensor_slices({"a": [1, 2], "b": [3, 4]})
    assert values(dicts.map(lambda d: d["a"] * d["b"])) == [3, 8]
    nested = Dataset.from_tensor_slices(((np.arange(2), np.arange(2)), np.arange(2)))
    assert values(nested.map(lambda xy, z: xy[0] + xy[1] + z)) == [0, 3]


def test_map_output_spec_cardinality_and_list_outputs():
    ds = Dataset.range(5).map(lambda x: [x, ef.cast(x, ef.float32) * 0.5])
    assert ds.element_spec == (ef.TensorSpec([], ef.int64), ef.TensorSpec([], ef.float32))
    assert values(ds)[3] == (3, 1.5)  # a returned list becomes a tuple, as in TF
    assert int(ds.cardinality()) == 5
    assert int(Dataset.range(3).repeat().map(lambda x: x).cardinality()) == -1
    plain = Dataset.range(3).map(lambda x: 7)  # Python values become tensors
    assert values(plain) == [7, 7, 7] and plain.element_spec.dtype == ef.int32


def test_map_spec_has_none_for_dims_that_vary():
    batched = Dataset.range(10).batch(4).map(lambda x: (x * 2, ef.reduce_sum(x)))
    assert batched.element_spec == (ef.TensorSpec([None], ef.int64),
                                    ef.TensorSpec([], ef.int64))
    value_dependent = Dataset.range(1, 4).map(lambda x: ef.fill([x], x))
    assert value_dependent.element_spec == ef.TensorSpec([None], ef.int64)
    fixed = Dataset.from_tensor_slices(np.zeros((4, 6), np.float32)).map(
        lambda x: ef.reshape(x, [2, 3]))
    assert fixed.element_spec == ef.TensorSpec([2, 3], ef.float32)


def test_map_spec_falls_back_to_a_real_element_when_examples_fail():
    def needs_positive(x):
        if float(ef.reduce_min(x)) <= 0:
            raise ValueError("needs positive inputs")
        return x * 2

    ds = Dataset.from_tensor_slices(np.full((3, 2), 5.0)).map(needs_positive)
    assert ds.element_spec == ef.TensorSpec([None], ef.float64)
    assert values(ds)[0] == [10.0, 10.0]
    empty = Dataset.from_tensor_slices(np.zeros((0, 2))).map(needs_positive)
    with pytest.raises(ValueError, match="cannot infer"):
        _ = empty.element_spec


def test_map_errors_propagate_and_name_the_argument():
    with pytest.raises(TypeError, match="map_func"):
        Dataset.range(3).map(5)
    with pytest.raises(ef.errors.InvalidArgumentError, match="num_parallel_calls"):
        Dataset.range(3).map(lambda x: x, num_parallel_calls=0)

    def boom(x):
        if int(x) == 2:
            raise RuntimeError("bad element")
        return x

    for parallel in (None, 3):
        it = iter(Dataset.range(5).map(boom, num_parallel_calls=parallel))
        assert int(next(it)) == 0
        with pytest.raises(RuntimeError, match="bad element"):
            list(it)


def jittered(x):
    time.sleep(random.uniform(0, 0.003))
    return x * 2, threading.get_ident()


def test_parallel_map_keeps_order_by_default_and_uses_threads():
    ds = Dataset.range(60).map(jittered, num_parallel_calls=4)
    out = list(ds)
    assert [int(v) for v, _ in out] == [2 * i for i in range(60)]
    threads = {int(t) for _, t in out}
    assert threading.get_ident() not in threads and len(threads) > 1
    auto = Dataset.range(20).map(lambda x: x + 1, num_parallel_calls=AUTOTUNE)
    assert values(auto) == list(range(1, 21))


def test_parallel_map_non_deterministic_is_a_permutation():
    ds = Dataset.range(40).map(lambda x: jittered(x)[0], num_parallel_calls=4,
                               deterministic=False)
    assert sorted(values(ds)) == [2 * i for i in range(40)]
    opts = Options()
    opts.deterministic = False
    from_options = Dataset.range(40).with_options(opts).map(
        lambda x: jittered(x)[0], num_parallel_calls=4)
    assert sorted(values(from_options)) == [2 * i for i in range(40)]


def test_parallel_map_stops_cleanly_on_early_break():
    before = threading.active_count()
    for i, _ in enumerate(Dataset.range(1000).map(jittered, num_parallel_calls=4)):
        if i == 3:
            break
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= before


# -- filter, take_while ---------------------------------------------------------------------------


def test_filter_matches_python_and_is_unknown_cardinality():
    ds = Dataset.range(20).filter(lambda x: x % 3 == 0)
    assert values(ds) == [i for i in range(20) if i % 3 == 0]
    assert int(ds.cardinality()) == -2
    assert int(Dataset.range(3).repeat().filter(lambda x: True).cardinality()) == -2
    pairs = Dataset.from_tensor_slices(([1, 2, 3], [3, 2, 1])).filter(lambda a, b: a < b)
    assert values(pairs) == [(1, 3)]
    assert values(Dataset.range(4).filter(lambda x: True)) == [0, 1, 2, 3]


def test_filter_predicate_must_return_a_scalar_bool():
    with pytest.raises(ef.errors.InvalidArgumentError, match="scalar tf.bool"):
        list(Dataset.range(3).filter(lambda x: x))
    with pytest.raises(ef.errors.InvalidArgumentError, match="scalar tf.bool"):
        list(Dataset.range(3).batch(2).filter(lambda x: x > 0))


def test_take_while():
    ds = Dataset.range(10).take_while(lambda x: x * x < 20)
    assert values(ds) == [0, 1, 2, 3, 4]
    assert int(ds.cardinality()) == -2


# -- flat_map, interleave -------------------------------------------------------------------------


def test_flat_map_concatenates():
    ds = Dataset.from_tensor_slices([[1, 2, 3], [4, 5, 6]]).flat_map(
        Dataset.from_tensor_slices)
    assert values(ds) == [1, 2, 3, 4, 5, 6]
    assert ds.element_spec == ef.TensorSpec([], ef.int32)
    repeated = Dataset.range(1, 4).flat_map(lambda x: Dataset.from_tensors(x).repeat(x))
    assert values(repeated) == [1, 2, 2, 3, 3, 3]
    with pytest.raises(TypeError, match="must return a Dataset"):
        list(Dataset.range(2).flat_map(lambda x: x))


def test_interleave_matches_tf_documented_order():
    ds = Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
                                        cycle_length=2, block_length=4)
    assert values(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                          3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
    ds = Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(3),
                                        cycle_length=4, block_length=2)
    assert values(ds) == [1, 1, 2, 2, 3, 3, 4, 4, 1, 2, 3, 4, 5, 5, 5]


def interleave_reference(sources, cycle, block):
    """TF's interleave kernel on Python lists: an empty slot opens the next source and is
    read at once; a source found exhausted frees its slot and the turn passes on."""
    pending = [list(s) for s in sources]
    slots, out = [None] * cycle, []
    index = taken = 0
    while pending or any(s is not None for s in slots):
        if slots[index] is not None:
            if slots[index]:
                out.append(slots[index].pop(0))
                taken += 1
                if taken == block:
                    index, taken = (index + 1) % cycle, 0
                continue
            slots[index] = None
            index, taken = (index + 1) % cycle, 0
        elif pending:
            slots[index] = pending.pop(0)
        else:
            index, taken = (index + 1) % cycle, 0
    return out


def test_interleave_uneven_and_empty_sources_and_cycle_of_one():
    lengths = [3, 0, 5, 1, 4, 2]
    sources = [list(range(10 * i, 10 * i + n)) for i, n in enumerate(lengths)]
    table = ef.constant(lengths, ef.int64)

    def make(i):
        return Dataset.range(10 * i, 10 * i + ef.gather(table, i))

    for cycle, block in [(1, 1), (2, 1), (3, 2), (4, 3), (10, 1)]:
        got = values(Dataset.range(6).interleave(make, cycle_length=cycle,
                                                 block_length=block))
        assert got == interleave_reference(sources, cycle, block), (cycle, block)
    # With two sources found exhausted in turn, the turn passes on (TF's kernel):
    assert interleave_reference(sources, 2, 1)[:7] == [0, 1, 20, 2, 21, 22, 30]
    flat = Dataset.range(4).interleave(lambda x: Dataset.range(x), cycle_length=1)
    assert values(flat) == values(Dataset.range(4).flat_map(lambda x: Dataset.range(x)))


def test_parallel_interleave_gives_the_same_order():
    def slow(x):
        return Dataset.range(x * 10, x * 10 + 5).map(jittered).map(lambda v, t: v)

    sequential = values(Dataset.range(6).interleave(slow, cycle_length=3, block_length=2))
    parallel = values(Dataset.range(6).interleave(slow, cycle_length=3, block_length=2,
                                                  num_parallel_calls=3))
    assert parallel == sequential and sorted(parallel) == sorted(
        2 * v for x in range(6) for v in range(x * 10, x * 10 + 5))


# -- scan -----------------------------------------------------------------------------------------


def test_scan_running_sum():
    ds = Dataset.range(1, 6).scan(np.int64(0), lambda s, x: (s + x, s * 10 + x))
    assert values(ds) == [1, 12, 33, 64, 105]
    assert ds.element_spec == ef.TensorSpec([], ef.int64)
    with pytest.raises(TypeError, match="pair"):
        list(Dataset.range(2).scan(np.int64(0), lambda s, x: s))
