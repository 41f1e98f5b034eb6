"""SparseTensors as dataset elements (what a VarLenFeature parses to): from_tensor_slices,
map, batch, unbatch and cache, against pipelines run in TensorFlow
(ragged_pipelines.SPARSE_PIPELINES, recorded by scripts/record_tf_reference.py ragged)."""

import json
import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from tests.data.ragged_pipelines import PARSE_PIPELINES, SPARSE_PIPELINES

_REF = os.path.join(os.path.dirname(__file__), "tf_reference", "sparse_datasets.json")
with open(_REF) as _f:
    TF = json.load(_f)

with open(os.path.join(os.path.dirname(__file__), "tf_reference", "sparse_ops.json")) as _f:
    TF_PARSE = json.load(_f)["parse_pipelines"]


def _parts(e):
    return [e.indices.numpy().tolist(), e.values.numpy().tolist(), e.dense_shape.numpy().tolist()]


@pytest.mark.parametrize("name", sorted(SPARSE_PIPELINES))
def test_sparse_pipeline_matches_tensorflow(name):
    ds = SPARSE_PIPELINES[name](ef)
    got = [_parts(e) for e in ds]
    assert all(isinstance(e, ef.SparseTensor) for e in ds)
    assert got == TF[name]["elements"]
    assert repr(ds.element_spec) == TF[name]["spec"]


def _same_value(got, want, where):
    if "dense" in want:
        assert got.dtype.name == want["dtype"], where
        value = got.numpy()
        if got.dtype is ef.string:
            value = np.vectorize(lambda b: b.decode(), otypes=[object])(value) \
                if value.size else value
            assert np.asarray(value).tolist() == want["dense"], where
        else:
            np.testing.assert_allclose(value, want["dense"], err_msg=where)
        return
    values = got.values.numpy().tolist()
    if got.dtype is ef.string:
        values = [v.decode() for v in values]
    assert [got.indices.numpy().tolist(), values, got.dense_shape.numpy().tolist()] == \
        [want["indices"] or got.indices.numpy().tolist()[:0], want["values"],
         want["dense_shape"]], where


@pytest.mark.parametrize("name", sorted(PARSE_PIPELINES))
def test_parse_example_element_specs_and_values_match_tensorflow(name):
    # parse_example traces (the ParseExample op), so the element spec is TF's: the static
    # shape of every FixedLenFeature (with the batch dimension when it is static), and
    # SparseTensorSpec([None] or [None, None]) for a VarLenFeature; the keys in TF's order.
    ds = PARSE_PIPELINES[name](ef)
    assert repr(ds.element_spec) == TF_PARSE[name]["spec"]
    elements = list(ds)
    assert len(elements) == len(TF_PARSE[name]["elements"])
    for e, want in zip(elements, TF_PARSE[name]["elements"]):
        parts = e.items() if isinstance(e, dict) else enumerate(e)
        assert sorted(str(k) for k, _ in parts) == sorted(want)
        for k, v in (e.items() if isinstance(e, dict) else enumerate(e)):
            _same_value(v, want[str(k)], "%s[%s]" % (name, k))


def test_parse_example_traces_in_a_function():
    raw = list(ef.data.TFRecordDataset(os.path.join(os.path.dirname(__file__), "tf_reference",
                                                    "examples.tfrecord")))
    f = ef.function(lambda s: ef.io.parse_example(s, {"tags": ef.io.VarLenFeature(ef.int64),
                                                      "id": ef.io.FixedLenFeature([2], ef.int64)}),
                    input_signature=[ef.TensorSpec([None], ef.string)])
    batch = ef.stack(raw)
    out = f(batch)
    eager = ef.io.parse_example(batch, {"tags": ef.io.VarLenFeature(ef.int64),
                                        "id": ef.io.FixedLenFeature([2], ef.int64)})
    assert out["id"].numpy().tolist() == eager["id"].numpy().tolist()
    assert out["tags"].indices.numpy().tolist() == eager["tags"].indices.numpy().tolist()
    assert out["tags"].values.numpy().tolist() == eager["tags"].values.numpy().tolist()
    assert out["tags"].dense_shape.numpy().tolist() == [4, 3]
    with pytest.raises(errors.InvalidArgumentError, match="parse_example"):
        ef.io.parse_single_example(batch, {"id": ef.io.FixedLenFeature([2], ef.int64)})


def test_sparse_batches_through_shuffle_prefetch_and_cache(tmp_path):
    st = ef.SparseTensor([[0, 1], [2, 0], [2, 3], [3, 3]], [5.0, 6.0, 7.0, 8.0], [4, 4])
    ds = ef.data.Dataset.from_tensor_slices(st)
    dense_rows = [ef.sparse.to_dense(r).numpy().tolist() for r in ds]
    assert dense_rows == ef.sparse.to_dense(st).numpy().tolist()
    shuffled = [ef.sparse.to_dense(r).numpy().tolist() for r in ds.shuffle(4, seed=2)]
    assert sorted(shuffled) == sorted(dense_rows)
    expect = [_parts(b) for b in ds.batch(3)]
    assert [_parts(b) for b in ds.batch(3).prefetch(1)] == expect
    path = str(tmp_path / "c")
    assert [_parts(b) for b in ds.batch(3).cache(path)] == expect
    assert [_parts(b) for b in ds.batch(3).cache(path)] == expect  # read from the files


def test_a_damaged_sparse_file_cache_is_reported(tmp_path):
    import numpy as np

    path = str(tmp_path / "c")
    st = ef.SparseTensor([[0, 1]], [5], [2, 2])
    list(ef.data.Dataset.from_tensors(st).cache(path))
    index = os.path.join(path, "index.json")
    with open(index) as f:
        meta = json.load(f)
    meta.pop("digest")
    entry = meta["chunks"][0]["components"][0]  # the indices
    data = np.load(os.path.join(path, entry["file"])).view(np.int64).copy()
    data[-1] = 9  # out of bounds for dense_shape [2, 2]
    np.save(os.path.join(path, entry["file"]), data.view(np.uint8), allow_pickle=False)
    entry.pop("sha256")
    with open(index, "w") as f:
        json.dump(meta, f)
    with pytest.raises(errors.DataLossError, match="damaged"):
        list(ef.data.Dataset.from_tensors(st).cache(path))


def test_padded_batch_refuses_sparse_components():
    ds = ef.data.Dataset.from_tensor_slices(ef.SparseTensor([[0, 1]], [1], [2, 2]))
    with pytest.raises(TypeError, match="padded_batch"):
        ds.padded_batch(2)


def test_batching_sparse_tensors_of_other_ranks_is_refused():
    ds = ef.data.Dataset.from_generator(
        lambda: iter([0, 1]), output_signature=ef.TensorSpec([], ef.int64)).map(
        lambda i: ef.SparseTensor([[0]], [1], [2]) if int(i) == 0 else
        ef.SparseTensor([[0, 0]], [1], [2, 2]))
    with pytest.raises(errors.InvalidArgumentError, match="different ranks"):
        list(ds.batch(2))


def test_sparse_tensor_spec():
    spec = ef.SparseTensorSpec([None, 3], ef.float32)
    assert repr(spec) == "SparseTensorSpec(TensorShape([None, 3]), tf.float32)"
    assert spec.value_type is ef.SparseTensor
    merged = ef.SparseTensorSpec([2, 3], ef.float32).most_specific_compatible_type(
        ef.SparseTensorSpec([4, 3], ef.float32))
    assert merged == spec
    with pytest.raises(TypeError):
        spec.most_specific_compatible_type(ef.SparseTensorSpec([2, 3], ef.int32))


def test_as_numpy_iterator_densifies_sparse_elements_as_tf():
    ds = ef.data.Dataset.from_tensor_slices(ef.SparseTensor([[0, 1]], [1], [2, 2]))
    assert [a.tolist() for a in ds.as_numpy_iterator()] == [[0, 1], [0, 0]]  # TF's output
