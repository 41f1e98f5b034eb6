"""Dataset sources and the iteration protocol, against plain Python/numpy expectations."""

import collections

import numpy as np
import pytest

import eagerflow as ef
import eagerflow.data as data
from eagerflow.data import Dataset

INFINITE, UNKNOWN = data.INFINITE_CARDINALITY, data.UNKNOWN_CARDINALITY


def values(ds):
    return [ef.nest.map_structure(lambda t: t.numpy().tolist(), e) for e in ds]


def card(ds):
    c = ds.cardinality()
    assert c.dtype == ef.int64 and c.shape.rank == 0
    return int(c)


# -- from_tensor_slices -----------------------------------------------------------------------


def test_slices_of_numpy_tuple_keep_dtypes_and_values():
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    y = np.array([1, 0, 1, 1], np.int64)
    ds = Dataset.from_tensor_slices((x, y))
    assert ds.element_spec == (ef.TensorSpec([3], ef.float64), ef.TensorSpec([], ef.int64))
    assert card(ds) == 4 and len(ds) == 4
    got = values(ds)
    assert got == [(x[i].tolist(), int(y[i])) for i in range(4)]
    xi, yi = next(iter(ds))
    assert isinstance(xi, ef.Tensor) and xi.dtype == ef.float64 and yi.shape == []


def test_slices_python_lists_are_single_tensors_with_tf_default_dtypes():
    ds = Dataset.from_tensor_slices([[1, 2], [3, 4], [5, 6]])
    assert ds.element_spec == ef.TensorSpec([2], ef.int32)
    assert values(ds) == [[1, 2], [3, 4], [5, 6]]
    floats = Dataset.from_tensor_slices([0.5, 1.5])
    assert floats.element_spec.dtype == ef.float32


def test_slices_of_nested_dict_and_namedtuple():
    Pair = collections.namedtuple("Pair", "a b")
    ds = Dataset.from_tensor_slices({"img": np.zeros((3, 2, 2), np.float32),
                                     "meta": Pair(np.arange(3), [7, 8, 9])})
    spec = ds.element_spec
    assert spec["img"].shape == [2, 2] and isinstance(spec["meta"], Pair)
    first = next(iter(ds))
    assert isinstance(first["meta"], Pair) and int(first["meta"].b) == 7
    assert [int(e["meta"].a) for e in ds] == [0, 1, 2]


def test_slices_mismatched_leading_dims_name_the_components():
    with pytest.raises(ef.errors.InvalidArgumentError, match=r"\[0\] has 3, \[1\] has 4"):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    with pytest.raises(ef.errors.InvalidArgumentError, match="'y'.*scalar|scalar.*'y'"):
        Dataset.from_tensor_slices({"x": [1, 2], "y": 3})


def test_slices_copy_the_input_and_hand_out_read_only_views():
    x = np.arange(4.0)
    ds = Dataset.from_tensor_slices(x)
    x[:] = -1  # later writes by the caller do not change the dataset
    assert values(ds) == [0.0, 1.0, 2.0, 3.0]
    view = np.asarray(next(iter(ds.batch(2))))
    with pytest.raises(ValueError):
        view[0] = 5.0


def test_slices_from_tensor_and_refusing_a_dataset():
    ds = Dataset.from_tensor_slices(ef.constant([[1.0], [2.0]]))
    assert values(ds) == [[1.0], [2.0]]
    with pytest.raises(TypeError, match="Dataset.zip"):
        Dataset.from_tensor_slices(Dataset.range(2))


# -- from_tensors, range ------------------------------------------------------------------------


def test_from_tensors_is_one_element():
    ds = Dataset.from_tensors((np.ones((2, 3), np.float32), 5))
    assert card(ds) == 1
    assert ds.element_spec == (ef.TensorSpec([2, 3], ef.float32), ef.TensorSpec([], ef.int32))
    assert values(ds) == [([[1.0] * 3] * 2, 5)]


@pytest.mark.parametrize("args", [(5,), (2, 7), (1, 10, 3), (10, 1, -3), (5, 5), (5, 2)])
def test_range_matches_python(args):
    ds = Dataset.range(*args)
    assert [int(x) for x in ds] == list(range(*args))
    assert card(ds) == len(range(*args))
    assert ds.element_spec == ef.TensorSpec([], ef.int64)


def test_range_dtype_and_errors():
    ds = Dataset.range(3, output_type=ef.int32)
    assert ds.element_spec.dtype == ef.int32 and next(iter(ds)).dtype == ef.int32
    assert values(Dataset.range(1, 3, dtype=ef.float32)) == [1.0, 2.0]
    with pytest.raises(TypeError, match="not both"):
        Dataset.range(3, output_type=ef.int32, dtype=ef.int32)
    with pytest.raises(ef.errors.InvalidArgumentError, match="step"):
        Dataset.range(0, 5, 0)
    with pytest.raises(TypeError, match="1 to 3"):
        Dataset.range()
    with pytest.raises(TypeError, match="stop"):
        Dataset.range(2.5)


# -- from_generator -------------------------------------------------------------------------------


def gen_pairs():
    for i in range(4):
        yield i, np.arange(i, dtype=np.float64)


def test_from_generator_with_signature_converts_and_restarts():
    sig = (ef.TensorSpec([], ef.int64), ef.TensorSpec([None], ef.float32))
    ds = Dataset.from_generator(gen_pairs, output_signature=sig)
    assert ds.element_spec == sig and card(ds) == UNKNOWN
    first = values(ds)
    assert first == [(i, list(map(float, range(i)))) for i in range(4)]
    assert values(ds) == first  # each iteration calls the generator again
    x, y = next(iter(ds))
    assert x.dtype == ef.int64 and y.dtype == ef.float32


def test_from_generator_args_and_output_types():
    def count(n, step):
        for i in range(int(n)):
            yield i * int(step)

    ds = Dataset.from_generator(count, output_types=ef.int32, args=(3, 5))
    assert ds.element_spec.shape.rank is None
    assert [int(x) for x in ds] == [0, 5, 10]
    shaped = Dataset.from_generator(lambda: iter([[1, 2]]), output_types=ef.int32,
                                    output_shapes=[2])
    assert shaped.element_spec.shape == [2]


def test_from_generator_signature_mismatch_raises_clearly():
    sig = ef.TensorSpec([2], ef.float32)
    bad_shape = Dataset.from_generator(lambda: iter([np.zeros(3)]), output_signature=sig)
    with pytest.raises(ef.errors.InvalidArgumentError, match=r"shape \(3,\).*\(2,\)"):
        list(bad_shape)
    bad_dtype = Dataset.from_generator(lambda: iter([np.zeros(2)]),
                                       output_signature=ef.TensorSpec([2], ef.int32))
    with pytest.raises(TypeError, match="float64.*int32"):
        list(bad_dtype)
    bad_structure = Dataset.from_generator(lambda: iter([1.0]), output_signature=(sig, sig))
    with pytest.raises(TypeError, match="does not match output_signature"):
        list(bad_structure)
    lossy = Dataset.from_generator(lambda: iter([1.5]),
                                   output_signature=ef.TensorSpec([], ef.int32))
    with pytest.raises(TypeError, match="cannot be converted"):
        list(lossy)


def test_from_generator_argument_errors():
    with pytest.raises(TypeError, match="callable"):
        Dataset.from_generator([1, 2], output_types=ef.int32)
    with pytest.raises(TypeError, match="at least one"):
        Dataset.from_generator(gen_pairs)
    with pytest.raises(TypeError, match="TensorSpec"):
        Dataset.from_generator(gen_pairs, output_signature=(ef.int32, ef.float32))


def test_from_generator_copies_reused_buffers():
    def reuse():
        buf = np.zeros(2)
        for i in range(3):
            buf[:] = i
            yield buf

    ds = Dataset.from_generator(reuse, output_signature=ef.TensorSpec([2], ef.float64))
    assert values(ds) == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]


# -- zip, concatenate ----------------------------------------------------------------------------


def test_zip_structures_and_shortest_length():
    a, b = Dataset.range(3), Dataset.range(10, 15)
    assert values(Dataset.zip(a, b)) == [(0, 10), (1, 11), (2, 12)]
    assert values(Dataset.zip((a, b))) == values(Dataset.zip(datasets=(a, b)))
    nested = Dataset.zip({"x": a, "yz": (b, a)})
    assert nested.element_spec["yz"][0] == ef.TensorSpec([], ef.int64)
    assert values(nested)[1] == {"x": 1, "yz": (11, 1)}
    assert card(Dataset.zip(a, b)) == 3
    assert card(Dataset.zip(a, b.repeat())) == 3
    assert card(Dataset.zip(a.repeat(), b.repeat())) == INFINITE
    assert card(Dataset.zip(a, a.filter(lambda x: True))) == UNKNOWN
    assert values(Dataset.zip([a, b]))[0] == (0, 10)  # a list is taken as a tuple
    with pytest.raises(TypeError, match="Dataset objects"):
        Dataset.zip((a, 3))


def test_zip_of_sources_batches_by_slicing_and_matches_elements():
    x, y = np.arange(10.0), np.arange(10) * 2
    ds = Dataset.zip(Dataset.from_tensor_slices(x), Dataset.from_tensor_slices(y[:7]))
    assert ds._rows() is not None
    batches = [(bx.numpy().tolist(), by.numpy().tolist()) for bx, by in ds.batch(3)]
    assert batches == [([0.0, 1.0, 2.0], [0, 2, 4]), ([3.0, 4.0, 5.0], [6, 8, 10]),
                       ([6.0], [12])]


def test_concatenate_values_spec_and_cardinality():
    a = Dataset.from_tensor_slices(np.zeros((2, 3), np.float32))
    b = Dataset.from_tensor_slices(np.ones((1, 4), np.float32))
    ds = a.concatenate(b)
    assert ds.element_spec == ef.TensorSpec([None], ef.float32)
    assert values(ds) == [[0.0] * 3, [0.0] * 3, [1.0] * 4]
    assert card(ds) == 3
    assert card(a.concatenate(b.repeat())) == INFINITE
    assert card(a.concatenate(b.filter(lambda x: True))) == UNKNOWN
    with pytest.raises(TypeError, match="dtype"):
        a.concatenate(Dataset.range(3))
    with pytest.raises(TypeError, match="structure"):
        a.concatenate(Dataset.zip(a, a))


# -- iteration protocol -----------------------------------------------------------------------


def test_each_iter_restarts_and_next_and_get_next():
    ds = Dataset.range(3)
    it1 = iter(ds)
    assert int(next(it1)) == 0 and int(next(it1)) == 1
    it2 = iter(ds)
    assert int(next(it2)) == 0
    assert it1.element_spec == ds.element_spec
    assert int(it1.get_next()) == 2
    with pytest.raises(ef.errors.OutOfRangeError):
        it1.get_next()
    with pytest.raises(StopIteration):
        next(it1)


def test_len_and_bool_follow_tf():
    assert len(Dataset.range(7).batch(2)) == 4
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(3).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(Dataset.range(3).filter(lambda x: x > 0))
    assert bool(Dataset.range(0)) and bool(Dataset.range(3).repeat())


def test_as_numpy_iterator_structures():
    ds = Dataset.from_tensor_slices({"a": [1, 2], "b": ([3.0, 4.0], [[5], [6]])})
    got = list(ds.as_numpy_iterator())
    assert isinstance(got[0]["b"][1], np.ndarray) and got[1]["b"][1].tolist() == [6]
    assert isinstance(got[0]["a"], np.integer) and got[1]["a"] == 2


def test_reduce_and_get_single_element():
    total = Dataset.range(1, 5).reduce(np.int64(0), lambda s, x: s + x)
    assert int(total) == 10
    pair = Dataset.from_tensor_slices(([1.0, 2.0], [3.0, 4.0])).reduce(
        (0.0, 0.0), lambda s, e: (s[0] + e[0], s[1] * 1.0 + e[1]))
    assert [float(v) for v in pair] == [3.0, 7.0]
    with pytest.raises(TypeError, match="dtype"):
        Dataset.range(3).reduce(np.int64(0), lambda s, x: ef.cast(s, ef.float32))
    assert int(Dataset.range(4, 5).get_single_element()) == 4
    with pytest.raises(ef.errors.InvalidArgumentError, match="empty"):
        Dataset.range(0).get_single_element()
    with pytest.raises(ef.errors.InvalidArgumentError, match="more than one"):
        Dataset.range(2).get_single_element()


def test_repr_apply_and_experimental_helpers():
    ds = Dataset.range(3)
    assert "element_spec=TensorSpec" in repr(ds)
    assert values(ds.apply(lambda d: d.skip(1))) == [1, 2]
    with pytest.raises(TypeError, match="must return a Dataset"):
        ds.apply(lambda d: 3)
    assert data.experimental.INFINITE_CARDINALITY == -1
    assert data.experimental.UNKNOWN_CARDINALITY == -2
    assert data.AUTOTUNE == data.experimental.AUTOTUNE == -1
    assert int(data.experimental.cardinality(ds)) == 3
    assert values(data.experimental.from_list([[1], [2, 3]])) == [[1], [2, 3]]
    assert data.experimental.from_list([[1], [2, 3]]).element_spec.shape.as_list() == [None]
    assert values(data.experimental.Counter(3, -1).take(3)) == [3, 2, 1]
    assert card(data.experimental.Counter()) == INFINITE


def test_assert_cardinality():
    ds = Dataset.range(6).filter(lambda x: x % 2 == 0)
    checked = ds.apply(data.experimental.assert_cardinality(3))
    assert card(checked) == 3 and values(checked) == [0, 2, 4]
    with pytest.raises(ef.errors.FailedPreconditionError, match="at least 3"):
        list(ds.apply(data.experimental.assert_cardinality(2)))
    with pytest.raises(ef.errors.FailedPreconditionError, match="only 3"):
        list(ds.apply(data.experimental.assert_cardinality(4)))


def test_options_merge_and_reject_unknown_names():
    opts = data.Options()
    opts.deterministic = False
    opts.experimental_distribute.auto_shard_policy = data.experimental.AutoShardPolicy.DATA
    ds = Dataset.range(3).with_options(opts).map(lambda x: x)
    assert ds.options().deterministic is False
    assert ds.options().experimental_distribute.auto_shard_policy == 2
    later = data.Options()
    later.deterministic = True
    assert ds.with_options(later).options().deterministic is True
    assert Dataset.range(2).options().deterministic is None
    with pytest.raises(AttributeError, match="no option"):
        opts.not_an_option = 1
    with pytest.raises(TypeError, match="Options"):
        Dataset.range(2).with_options({"deterministic": True})


def test_iteration_inside_a_trace_is_refused_clearly():
    from eagerflow.framework import context

    ds = Dataset.range(3)
    it = iter(ds)
    previous = context.set_trace_hook(object())
    try:
        with pytest.raises(ef.errors.UnimplementedError, match="outside the function"):
            iter(ds)
        with pytest.raises(ef.errors.UnimplementedError, match="outside the function"):
            next(it)
    finally:
        context.set_trace_hook(previous)
    assert int(next(it)) == 0


@pytest.mark.gpu
def test_gpu_tensors_are_read_into_the_cpu_pipeline():
    with ef.device("/gpu:0"):
        x = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    assert values(Dataset.from_tensor_slices(x)) == [[1.0, 2.0], [3.0, 4.0]]

    def on_gpu(v):
        with ef.device("/gpu:0"):
            return ef.identity(v) * 2.0

    batched = Dataset.from_tensor_slices(np.ones((4, 2), np.float32)).map(on_gpu).batch(2)
    first = next(iter(batched))
    assert "CPU" in first.device and first.numpy().tolist() == [[2.0, 2.0]] * 2
