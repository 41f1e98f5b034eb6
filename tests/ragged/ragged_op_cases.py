"""Element-wise ops on RaggedTensors, run in TensorFlow (scripts/record_tf_reference.py
ragged records them into tf_reference/ragged_ops.json) and in eagerflow
(test_ragged_elementwise.py compares): each takes a module ``t`` that is either
``tensorflow`` or ``eagerflow`` and uses only names both have."""

num = lambda t: t.ragged.constant([[1.5, -2.0], [], [3.0, 0.25, -0.5]])  # noqa: E731
ints = lambda t: t.ragged.constant([[7, -3], [], [4, 9, 0]])  # noqa: E731
words = lambda t: t.ragged.constant([["Hello", " Wide "], [], ["WORLD", "42"]])  # noqa: E731
inner = lambda t: t.RaggedTensor.from_row_lengths(  # noqa: E731
    t.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), [2, 0, 1])

CASES = {
    "abs": lambda t: t.abs(num(t)),
    "negative": lambda t: -num(t),
    "exp": lambda t: t.exp(num(t)),
    "log_abs": lambda t: t.math.log(t.abs(num(t))),
    "sigmoid": lambda t: t.math.sigmoid(num(t)),
    "relu": lambda t: t.nn.relu(num(t)),
    "cast_int": lambda t: t.cast(num(t), t.int32),
    "cast_float": lambda t: t.cast(ints(t), t.float64),
    "add_scalar": lambda t: t.add(num(t), 1.0),
    "mul_self": lambda t: t.multiply(num(t), num(t)),
    "maximum": lambda t: t.maximum(num(t), 0.0),
    "greater": lambda t: t.greater(num(t), 0.0),
    "operator_gt": lambda t: num(t) > 0.0,
    "operator_pow": lambda t: num(t) ** 2.0,
    "floormod": lambda t: t.math.floormod(ints(t), 4),
    "logical_not": lambda t: t.logical_not(num(t) > 0.0),
    "inner_bcast": lambda t: inner(t) * t.constant([10.0, -1.0]),
    "strings_lower": lambda t: t.strings.lower(words(t)),
    "strings_upper": lambda t: t.strings.upper(words(t)),
    "strings_length": lambda t: t.strings.length(words(t)),
    "strings_strip": lambda t: t.strings.strip(words(t)),
    "strings_regex_replace": lambda t: t.strings.regex_replace(words(t), "[lL]", "_"),
    "strings_regex_full_match": lambda t: t.strings.regex_full_match(words(t), "[A-Z]+"),
    "strings_hash_fast": lambda t: t.strings.to_hash_bucket_fast(words(t), 1000),
    "strings_hash_strong": lambda t: t.strings.to_hash_bucket_strong(words(t), 1000, [3, 5]),
    "strings_as_string": lambda t: t.strings.as_string(ints(t)),
    "strings_to_number": lambda t: t.strings.to_number(
        t.ragged.constant([["1.5", "-2"], [], ["1e3"]])),
    "strings_equal": lambda t: t.equal(words(t), "42"),
}

# RaggedTensor.to_sparse / from_sparse (recorded as indices, values, dense_shape / lists).
TO_SPARSE = {
    "rank1": lambda t: t.ragged.constant([[1, 2], [], [3]]).to_sparse(),
    "rank2": lambda t: t.ragged.constant([[[1], [2, 3]], [], [[4]]]).to_sparse(),
    "inner": lambda t: inner(t).to_sparse(),
    "strings": lambda t: words(t).to_sparse(),
}
FROM_SPARSE = {
    "basic": lambda t: t.RaggedTensor.from_sparse(t.sparse.SparseTensor(
        [[0, 0], [0, 1], [2, 0]], [1, 2, 3], [3, 5])),
    "empty_rows": lambda t: t.RaggedTensor.from_sparse(t.sparse.SparseTensor(
        t.zeros([0, 2], t.int64), t.zeros([0], t.float32), [2, 4])),
}
