"""int32 row splits, run in TensorFlow (scripts/record_tf_reference.py row_splits records them
into tf_reference/ragged_row_splits.json) and in eagerflow (test_ragged_row_splits.py
compares): each case builds a RaggedTensor (or a dataset) from a module ``t`` that is
``tensorflow`` or ``eagerflow``."""

a32 = lambda t: t.ragged.constant([[1, 2], [3], [], [4, 5, 6]], row_splits_dtype=t.int32)  # noqa: E731
a64 = lambda t: t.ragged.constant([[1, 2], [3], [], [4, 5, 6]])  # noqa: E731
deep32 = lambda t: t.ragged.constant([[[1], [2, 3]], [], [[4]]], row_splits_dtype=t.int32)  # noqa: E731
i32 = lambda t, v: t.constant(v, t.int32)  # noqa: E731

CASES = {
    "constant": a32,
    "constant_deep": deep32,
    "from_row_splits": lambda t: t.RaggedTensor.from_row_splits([1, 2, 3], i32(t, [0, 2, 3])),
    "from_row_splits_list": lambda t: t.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 3]),
    "from_row_lengths": lambda t: t.RaggedTensor.from_row_lengths([1, 2, 3], i32(t, [2, 0, 1])),
    "from_value_rowids": lambda t: t.RaggedTensor.from_value_rowids(
        [1, 2, 3], i32(t, [0, 0, 2])),
    "with_int64": lambda t: a32(t).with_row_splits_dtype(t.int64),
    "with_int32": lambda t: deep32(t).with_row_splits_dtype(t.int64).with_row_splits_dtype(
        t.int32),
    "add_same": lambda t: a32(t) + a32(t),
    "scalar_mul": lambda t: a32(t) * 3,
    "concat_0": lambda t: t.concat([a32(t), a32(t)], 0),
    "concat_1": lambda t: t.concat([a32(t), a32(t)], 1),
    "stack": lambda t: t.stack([a32(t), a32(t)]),
    "gather": lambda t: t.gather(a32(t), [3, 0]),
    "slice": lambda t: a32(t)[1:3],
    "map_flat_values": lambda t: t.ragged.map_flat_values(t.negative, a32(t)),
    "merge_dims": lambda t: deep32(t).merge_dims(1, 2),
    "converted_both": lambda t: a32(t).with_row_splits_dtype(t.int64) + a64(t),
}
# Mixing int32 and int64 partitions in one op: TF raises ValueError.
MIXED = {
    "add": lambda t: a32(t) + a64(t),
    "concat": lambda t: t.concat([a32(t), a64(t)], 0),
    "concat_1": lambda t: t.concat([a32(t), a64(t)], 1),
    "stack": lambda t: t.stack([a32(t), a64(t)]),
    "nested": lambda t: t.RaggedTensor.from_row_splits(a32(t), t.constant([0, 2, 4], t.int64)),
}
# Derived values of an int32-partitioned tensor: their dtypes.
DTYPES = {
    "row_lengths": lambda t: a32(t).row_lengths(),
    "nrows": lambda t: a32(t).nrows(),
    "value_rowids": lambda t: a32(t).value_rowids(),
    "bounding_shape": lambda t: a32(t).bounding_shape(),
    "to_sparse_indices": lambda t: a32(t).to_sparse().indices,
    "reduce_sum": lambda t: t.reduce_sum(a32(t), axis=1),
}
DATASETS = {
    "slices": lambda t: t.data.Dataset.from_tensor_slices(a32(t)),
    "batch": lambda t: t.data.Dataset.from_tensor_slices(a32(t)).batch(3),
    "from_tensors": lambda t: t.data.Dataset.from_tensors(a32(t)),
    "ragged_batch": lambda t: t.data.Dataset.from_tensor_slices(a32(t)).ragged_batch(3),
    "batch_batch": lambda t: t.data.Dataset.from_tensor_slices(a32(t)).batch(2).batch(2),
    "rank2_unbatch": lambda t: t.data.Dataset.from_tensor_slices(deep32(t)).batch(2).unbatch(),
}
