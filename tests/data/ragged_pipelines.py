"""Ragged-element pipelines run in TensorFlow (scripts/record_tf_reference.py records their
element specs and values into tf_reference/ragged_datasets.json) and in eagerflow
(test_dataset_ragged.py compares): each builds a dataset from a module ``t`` that is either
``tensorflow`` or ``eagerflow``, using only names both have."""

rt = lambda t: t.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])  # noqa: E731
rt3 = lambda t: t.ragged.constant([[[1], [2, 3]], [[4]], [], [[5, 6, 7]]])  # noqa: E731
inner = lambda t: t.RaggedTensor.from_row_lengths(  # noqa: E731
    t.reshape(t.range(12), [6, 2]), [2, 0, 4])
slices = lambda t, f: t.data.Dataset.from_tensor_slices(f(t))  # noqa: E731
text = lambda t: t.data.Dataset.from_tensor_slices(  # noqa: E731
    ["a b c", "d", "e f", "g h i j"])
PIPELINES = {
    "slices": lambda t: slices(t, rt),
    "batch": lambda t: slices(t, rt).batch(2),
    "batch_drop": lambda t: slices(t, rt).batch(2, drop_remainder=True),
    "batch_unbatch": lambda t: slices(t, rt).batch(2).unbatch(),
    "rank2_slices": lambda t: slices(t, rt3),
    "rank2_batch": lambda t: slices(t, rt3).batch(3),
    "rank2_batch_unbatch": lambda t: slices(t, rt3).batch(3).unbatch(),
    "inner_slices": lambda t: slices(t, inner),
    "inner_batch": lambda t: slices(t, inner).batch(2),
    "map_split": lambda t: text(t).batch(2).map(t.strings.split),
    "map_split_unbatch": lambda t: text(t).batch(3).map(t.strings.split).unbatch(),
    "map_ragged_arith": lambda t: slices(t, rt).batch(2).map(lambda x: x * 2 + 1),
    "map_to_tensor": lambda t: slices(t, rt).batch(2).map(lambda x: x.to_tensor()),
    "ragged_batch": lambda t: t.data.Dataset.range(5).map(
        lambda x: t.range(x)).ragged_batch(2),
    "ragged_batch_drop": lambda t: t.data.Dataset.range(5).map(
        lambda x: t.range(x)).ragged_batch(2, drop_remainder=True),
    "ragged_batch_2d": lambda t: t.data.Dataset.range(4).map(
        lambda x: t.fill(t.stack([x, 2]), x)).ragged_batch(3),
    "ragged_batch_fixed": lambda t: t.data.Dataset.from_tensor_slices(
        [[1, 2], [3, 4], [5, 6]]).ragged_batch(2),
    "ragged_batch_of_ragged": lambda t: slices(t, rt).batch(2).ragged_batch(2),
    "tuple_batch": lambda t: t.data.Dataset.from_tensor_slices(
        (rt(t), t.range(5))).batch(3),
    "filter": lambda t: slices(t, rt).filter(lambda x: t.size(x) > 1),
    "batch_reduce": lambda t: slices(t, rt).batch(5).map(lambda x: t.reduce_sum(x, axis=1)),
    "from_tensors": lambda t: t.data.Dataset.from_tensors(rt(t)),
    "concatenate": lambda t: slices(t, rt).concatenate(slices(t, rt)).batch(4),
}

# SparseTensor elements (recorded into tf_reference/sparse_datasets.json).
sp = lambda t: t.sparse.SparseTensor([[0, 1], [2, 0], [2, 3]], [5, 6, 7], [3, 4])  # noqa: E731
records = lambda t: t.data.TFRecordDataset(  # noqa: E731
    __file__.rsplit("/", 1)[0] + "/tf_reference/examples.tfrecord")
features = lambda t: {"id": t.io.FixedLenFeature([2], t.int64),  # noqa: E731
                      "tags": t.io.VarLenFeature(t.int64)}
SPARSE_PIPELINES = {
    "slices": lambda t: t.data.Dataset.from_tensor_slices(sp(t)),
    "batch": lambda t: t.data.Dataset.from_tensor_slices(sp(t)).batch(2),
    "batch_unbatch": lambda t: t.data.Dataset.from_tensor_slices(sp(t)).batch(2).unbatch(),
    "map_from_dense": lambda t: t.data.Dataset.from_tensor_slices(
        [[1, 0, 0], [0, 0, 2], [0, 0, 0]]).map(t.sparse.from_dense).batch(3),
    "varlen_batch": lambda t: t.data.Dataset.range(4).map(
        lambda x: t.sparse.from_dense(t.range(x) + 1)).batch(2),
    "parse_single_then_batch": lambda t: records(t).map(
        lambda x: t.io.parse_single_example(x, features(t))["tags"]).batch(3),
    "batch_then_parse": lambda t: records(t).batch(3).map(
        lambda x: t.io.parse_example(x, features(t))["tags"]),
    "batch_then_parse_unbatch": lambda t: records(t).batch(3).map(
        lambda x: t.io.parse_example(x, features(t))["tags"]).unbatch(),
}

# parse_example / parse_single_example in map: the element specs TF infers (shapes and dtypes
# per feature, FixedLen and VarLen), recorded into tf_reference/sparse_ops.json.
all_features = lambda t: {  # noqa: E731
    "id": t.io.FixedLenFeature([2], t.int64), "score": t.io.FixedLenFeature([], t.float32),
    "name": t.io.VarLenFeature(t.string), "tags": t.io.VarLenFeature(t.int64),
    "missing": t.io.FixedLenFeature([3], t.float32, default_value=[1.0, 2.0, 3.0]),
    "grid": t.io.FixedLenFeature([1, 2], t.int64, default_value=[[7, 8]])}
single = lambda t, x: t.io.parse_single_example(x, all_features(t))  # noqa: E731
PARSE_PIPELINES = {
    "single": lambda t: records(t).map(lambda x: single(t, x)),
    "batch": lambda t: records(t).batch(3).map(lambda x: t.io.parse_example(
        x, all_features(t))),
    "batch_drop": lambda t: records(t).batch(2, drop_remainder=True).map(
        lambda x: t.io.parse_example(x, all_features(t))),
    "single_then_batch": lambda t: records(t).map(lambda x: single(t, x)).batch(2),
    "single_tuple": lambda t: records(t).map(
        lambda x: (single(t, x)["id"], single(t, x)["tags"], single(t, x)["score"])),
}
