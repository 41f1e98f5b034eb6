"""State a traced graph must advance or read at run time: Generators and Datasets."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.function import serialize


def test_generator_draws_advance_inside_a_function_as_eagerly():
    eager = ef.random.Generator.from_seed(7)
    want = [eager.normal([3]).numpy() for _ in range(3)]
    traced = ef.random.Generator.from_seed(7)
    f = ef.function(lambda: traced.normal([3]))
    got = [f().numpy() for _ in range(3)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(traced.state.numpy(), eager.state.numpy())
    assert f.experimental_get_tracing_count() == 1


def test_generator_make_seeds_and_uniform_in_a_function():
    g = ef.random.Generator.from_seed(3)
    h = ef.random.Generator.from_seed(3)
    f = ef.function(lambda: (g.make_seeds(2), g.uniform([2], 0, 10, dtype=ef.int32)))
    seeds, ints = f()
    np.testing.assert_array_equal(seeds.numpy(), h.make_seeds(2).numpy())
    np.testing.assert_array_equal(ints.numpy(), h.uniform([2], 0, 10, dtype=ef.int32).numpy())
    with pytest.raises(errors.UnimplementedError, match="split outside"):
        ef.function(lambda: g.split(2))()


def test_for_over_a_dataset_inside_a_function_runs_when_the_graph_runs():
    ds = ef.data.Dataset.from_tensor_slices(np.arange(5.0, dtype=np.float32)).map(
        lambda x: x * 2.0)

    @ef.function
    def total(scale):
        s = ef.constant(0.0)
        for x in ds:
            s += x * scale
        return s

    assert float(total(ef.constant(1.0))) == 20.0
    assert float(total(ef.constant(0.5))) == 10.0  # a fresh pass on every call
    assert total.experimental_get_tracing_count() == 1

    @ef.function
    def first_over(limit):
        for x in ds.batch(2):
            if ef.reduce_sum(x) > limit:
                return x
        return ef.zeros([2])

    assert first_over(ef.constant(5.0)).numpy().tolist() == [4.0, 6.0]
    graph = total.get_concrete_function(ef.constant(1.0)).graph
    with pytest.raises(errors.UnimplementedError, match="runs Python code"):
        serialize.graph_to_proto(graph)


def test_dataset_map_with_py_function_and_numpy_function():
    ds = ef.data.Dataset.from_tensor_slices(np.arange(4.0, dtype=np.float32))
    squared = ds.map(lambda x: ef.py_function(
        lambda t: float(np.asarray(t.numpy()) ** 2), [x], Tout=ef.float32))
    assert [float(v) for v in squared] == [0.0, 1.0, 4.0, 9.0]
    tripled = ds.map(lambda x: ef.numpy_function(
        lambda a: (a * 3).astype(np.float32), [x], ef.float32))
    assert [float(v) for v in tripled] == [0.0, 3.0, 6.0, 9.0]


def test_generator_from_non_deterministic_state_and_split():
    a = ef.random.Generator.from_non_deterministic_state()
    b = ef.random.Generator.from_non_deterministic_state()
    assert a.state.shape == (3,) and a.state.dtype == ef.int64
    assert not np.array_equal(a.normal([8]).numpy(), b.normal([8]).numpy())
    children = ef.random.Generator.from_seed(1).split(3)
    draws = [c.normal([4]).numpy() for c in children]
    assert not np.array_equal(draws[0], draws[1]) and not np.array_equal(draws[1], draws[2])
    again = [c.normal([4]).numpy() for c in ef.random.Generator.from_seed(1).split(3)]
    for x, y in zip(draws, again):
        np.testing.assert_array_equal(x, y)  # split is deterministic from the seed


def test_generator_saved_in_a_checkpoint_continues_where_it_was(tmp_path):
    g = ef.random.Generator.from_seed(1)
    ckpt = ef.train.Checkpoint(generator=g)
    g.normal([])
    path = ckpt.save(str(tmp_path / "ckpt"))
    want = g.normal([3]).numpy()
    g.normal([5])
    ckpt.restore(path).assert_consumed()
    np.testing.assert_array_equal(g.normal([3]).numpy(), want)
    assert ("generator/_state_var/.ATTRIBUTES/VARIABLE_VALUE", [3]) in \
        ef.train.list_variables(path)


def test_dataset_reduce_inside_a_function_runs_when_the_graph_runs():
    values = np.arange(6.0, dtype=np.float32)
    ds = ef.data.Dataset.from_tensor_slices(values).batch(2)

    def fold(d):
        return d.reduce((ef.constant(0.0), ef.constant(0)),
                        lambda s, b: (s[0] + ef.reduce_sum(b * b), s[1] + 1))

    traced = ef.function(fold)
    for got in (fold(ds), traced(ds), traced(ds)):  # each run iterates anew
        assert float(got[0]) == float(np.sum(values ** 2)) and int(got[1]) == 3
    bad = ef.function(lambda d: d.reduce(ef.constant(0, ef.int64),
                                         lambda a, b: ef.cast(a, ef.float32)))
    with pytest.raises(TypeError, match="changed dtype"):
        bad(ef.data.Dataset.range(3))
