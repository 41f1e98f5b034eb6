"""RaggedTensors as dataset elements and RaggedTensorSpec in @function signatures.

The pipelines of ragged_pipelines.py were run in TensorFlow (scripts/record_tf_reference.py
ragged): each one's element_spec and elements must be TF's.
"""

import json
import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from tests.data.ragged_pipelines import PIPELINES

_REF = os.path.join(os.path.dirname(__file__), "tf_reference", "ragged_datasets.json")
with open(_REF) as _f:
    TF = json.load(_f)


def _plain(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [_plain(y) for y in x]
    return x


def _value(v):
    if isinstance(v, ef.RaggedTensor):
        return {"ragged": _plain(v.to_list())}
    assert isinstance(v, ef.Tensor), type(v)
    return {"dense": _plain(v.numpy().tolist())}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_matches_tensorflow(name):
    ds = PIPELINES[name](ef)
    assert repr(ds.element_spec) == TF[name]["spec"]
    got = [[_value(c) for c in e] if isinstance(e, tuple) else _value(e) for e in ds]
    assert got == TF[name]["elements"]


def test_batches_are_ragged_tensors_with_the_spec_they_announce():
    ds = ef.data.Dataset.from_tensor_slices(ef.ragged.constant([[1.5], [], [2.5, 3.5]]))
    spec = ds.batch(2).element_spec
    for batch in ds.batch(2):
        assert spec.is_compatible_with(batch)
        assert batch.flat_values.dtype is ef.float32
        assert batch.row_splits.dtype is ef.int64


def test_ragged_elements_through_parallel_map_prefetch_shuffle_and_cache(tmp_path):
    rt = ef.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    rows = [r.numpy().tolist() for r in ef.data.Dataset.from_tensor_slices(rt)]
    ds = ef.data.Dataset.from_tensor_slices(rt).batch(2)
    expect = [b.to_list() for b in ds]
    assert [b.to_list() for b in ds.map(lambda x: x, num_parallel_calls=2).prefetch(2)] == \
        expect
    shuffled = [r.numpy().tolist() for r in
                ef.data.Dataset.from_tensor_slices(rt).shuffle(5, seed=1)]
    assert sorted(shuffled) == sorted(rows)
    for cached in (ds.cache(), ds.cache(str(tmp_path / "c"))):
        assert [b.to_list() for b in cached] == expect
        assert [b.to_list() for b in cached] == expect  # the second pass replays
    again = ds.cache(str(tmp_path / "c"))  # a new dataset reads the files
    assert [b.to_list() for b in again] == expect


def test_a_damaged_ragged_file_cache_is_reported(tmp_path):
    rt = ef.ragged.constant([[1, 2], [3]])
    path = str(tmp_path / "c")
    ds = ef.data.Dataset.from_tensors(rt).cache(path)
    list(ds)
    index = os.path.join(path, "index.json")
    with open(index) as f:
        meta = json.load(f)
    meta.pop("digest")
    split_file = meta["chunks"][0]["components"][1]["file"]
    data = np.load(os.path.join(path, split_file)).view(np.int64).copy()
    data[-1] = 7  # the row splits no longer end at the number of values
    raw = data.view(np.uint8)
    np.save(os.path.join(path, split_file), raw, allow_pickle=False)
    meta["chunks"][0]["components"][1].pop("sha256")
    with open(index, "w") as f:
        json.dump(meta, f)
    with pytest.raises(errors.DataLossError, match="damaged"):
        list(ef.data.Dataset.from_tensors(rt).cache(path))


def test_from_generator_with_a_ragged_signature():
    spec = ef.RaggedTensorSpec([None, None], ef.int32)

    def gen():
        yield ef.ragged.constant([[1], [2, 3]])
        yield [[4, 5, 6]]  # nested lists become a RaggedTensor of the spec

    ds = ef.data.Dataset.from_generator(gen, output_signature=spec)
    assert ds.element_spec == spec
    assert [e.to_list() for e in ds] == [[[1], [2, 3]], [[4, 5, 6]]]
    bad = ef.data.Dataset.from_generator(lambda: iter([ef.ragged.constant([[1.0]])]),
                                         output_signature=spec)
    with pytest.raises(errors.InvalidArgumentError, match="output_signature"):
        list(bad)


def test_padded_batch_refuses_ragged_components_like_tf():
    ds = ef.data.Dataset.from_tensor_slices(ef.ragged.constant([[1], [2, 3]]))
    with pytest.raises(TypeError, match="padded_batch.*ragged_batch"):
        ds.padded_batch(2)


def test_ragged_batch_rejects_a_bad_row_splits_dtype():
    with pytest.raises(ValueError, match="row_splits_dtype"):
        ef.data.Dataset.range(3).ragged_batch(2, row_splits_dtype=ef.float32)
    spec = ef.data.Dataset.range(3).map(lambda x: ef.range(x)).ragged_batch(
        2, row_splits_dtype=ef.int32).element_spec
    assert spec == ef.RaggedTensorSpec([None, None], ef.int64, 1, ef.int32)


def test_experimental_dense_to_ragged_batch_is_ragged_batch():
    ds = ef.data.Dataset.range(4).map(lambda x: ef.range(x))
    a = [b.to_list() for b in ds.apply(ef.data.experimental.dense_to_ragged_batch(3))]
    assert a == [b.to_list() for b in ds.ragged_batch(3)] == [[[], [0], [0, 1]], [[0, 1, 2]]]


def test_concatenate_of_ragged_and_dense_is_refused():
    ragged = ef.data.Dataset.from_tensor_slices(ef.ragged.constant([[1], [2, 3]]))
    dense = ef.data.Dataset.from_tensor_slices(ef.constant([[1, 2]]))
    with pytest.raises(TypeError, match="RaggedTensorSpec"):
        ragged.concatenate(dense)


def test_text_pipeline_end_to_end():
    # Split lines into words per batch, hash them, and pad per batch: the usual text
    # input pipeline, with the ragged batch in the middle.
    lines = ["the cat sat", "a dog", "the dog sat down", "cat"]
    ds = (ef.data.Dataset.from_tensor_slices(lines).batch(2)
          .map(ef.strings.split)
          .map(lambda words: ef.ragged.map_flat_values(
              lambda w: ef.strings.to_hash_bucket_fast(w, 1000), words))
          .map(lambda ids: ids.to_tensor()))
    got = [b.numpy() for b in ds]
    expect = []
    for pair in (lines[:2], lines[2:]):
        words = [line.split() for line in pair]
        width = max(map(len, words))
        hashed = [[int(ef.strings.to_hash_bucket_fast(w, 1000)) for w in ws] + [0] * (
            width - len(ws)) for ws in words]
        expect.append(np.asarray(hashed))
    assert len(got) == 2 and all(np.array_equal(g, e) for g, e in zip(got, expect))


# -- RaggedTensorSpec in @function signatures ------------------------------------------------

def test_function_with_a_ragged_signature_matches_tf_and_eager():
    spec = ef.RaggedTensorSpec([None, None], ef.int32)
    fn = ef.function(lambda x: ef.reduce_sum(x, axis=1), input_signature=[spec])
    rt = ef.ragged.constant([[1, 2], [], [3]])
    assert fn(rt).numpy().tolist() == TF["function_reduce_sum"]
    other = ef.ragged.constant([[5], [6, 7], [8, 9, 10], []])
    assert fn(other).numpy().tolist() == ef.reduce_sum(other, axis=1).numpy().tolist()
    assert fn._trace_count == 1  # one trace serves every row count and row length


@pytest.mark.parametrize("name,body", [
    ("identity", lambda x: x),
    ("arith", lambda x: x * 3 + 1),
    ("row_lengths", lambda x: x.row_lengths()),
    ("to_tensor", lambda x: x.to_tensor(default_value=-1)),
    ("value_rowids", lambda x: x.value_rowids()),
    ("max_rows", lambda x: ef.reduce_max(x, axis=1)),
    ("sum_columns", lambda x: ef.reduce_sum(x, axis=0)),
    ("map_flat_values", lambda x: ef.ragged.map_flat_values(ef.square, x)),
    ("nrows", lambda x: x.nrows()),
])
def test_traced_ragged_equals_eager(name, body):
    rt = ef.ragged.constant([[1, 2], [], [3, 4, 5]])

    def as_list(v):
        return v.to_list() if isinstance(v, ef.RaggedTensor) else v.numpy().tolist()

    eager = as_list(body(rt))
    assert as_list(ef.function(body)(rt)) == eager
    signed = ef.function(body, input_signature=[ef.RaggedTensorSpec([None, None], ef.int32)])
    assert as_list(signed(rt)) == eager


def test_ragged_result_of_a_function_is_a_ragged_tensor():
    fn = ef.function(lambda x: x * 2)
    out = fn(ef.ragged.constant([[1.0], [2.0, 3.0]]))
    assert isinstance(out, ef.RaggedTensor) and out.to_list() == [[2.0], [4.0, 6.0]]


def test_gradients_through_a_traced_ragged_function():
    values = ef.Variable([1.0, 2.0, 3.0])
    splits = ef.constant([0, 2, 3], ef.int64)

    @ef.function(input_signature=[ef.RaggedTensorSpec([None, None], ef.float32)])
    def row_sums(x):
        return ef.reduce_sum(x, axis=1)

    with ef.GradientTape() as tape:
        out = row_sums(ef.RaggedTensor.from_row_splits(values * 1.0, splits))
        loss = ef.reduce_sum(out * ef.constant([1.0, 10.0]))
    assert tape.gradient(loss, values).numpy().tolist() == [1.0, 1.0, 10.0]


def test_ragged_signature_refuses_other_values():
    fn = ef.function(lambda x: x.flat_values, input_signature=[
        ef.RaggedTensorSpec([None, None], ef.int32)])
    with pytest.raises(TypeError, match="not compatible with its input_signature"):
        fn(ef.constant([[1, 2]]))
    with pytest.raises(TypeError, match="not compatible"):
        fn(ef.ragged.constant([[1.0]]))
    with pytest.raises(TypeError, match="not compatible"):
        fn(ef.ragged.constant([[[1]]]))  # ragged rank 2
    dense = ef.function(lambda x: x, input_signature=[ef.TensorSpec([None], ef.int32)])
    with pytest.raises(TypeError, match="RaggedTensorSpec"):
        dense(ef.ragged.constant([[1]]))


def test_ragged_tensor_spec():
    spec = ef.RaggedTensorSpec([2, None, 3], ef.float32, 1)
    assert repr(spec) == "RaggedTensorSpec(TensorShape([2, None, 3]), tf.float32, 1, tf.int64)"
    assert spec.value_type is ef.RaggedTensor
    assert ef.RaggedTensorSpec([None], ef.int32).ragged_rank == 0
    with pytest.raises(ValueError, match="ragged_rank"):
        ef.RaggedTensorSpec([None], ef.int32, 1)
    a = ef.RaggedTensorSpec([2, None], ef.int32)
    b = ef.RaggedTensorSpec([3, None], ef.int32)
    assert a.most_specific_compatible_type(b) == ef.RaggedTensorSpec([None, None], ef.int32)
    with pytest.raises(TypeError):
        a.most_specific_compatible_type(ef.RaggedTensorSpec([2, None], ef.int64))


def test_string_components_are_probed_with_strings():
    # A function that needs real values (no tracing) is probed with example strings: its
    # static output shape is found, not left unknown.
    ds = ef.data.Dataset.from_tensor_slices(["ab", "c"]).map(
        lambda s: ef.constant([s.numpy().upper(), b"!"]))
    assert ds.element_spec == ef.TensorSpec([2], ef.string)
    assert [x.numpy().tolist() for x in ds] == [[b"AB", b"!"], [b"C", b"!"]]
