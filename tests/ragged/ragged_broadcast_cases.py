"""RaggedTensor-dense broadcasting cases run in TensorFlow (scripts/record_tf_reference.py
ragged_broadcast records them into tf_reference/ragged_broadcast.json) and in eagerflow
(test_ragged_broadcast.py compares). ``inputs(t)`` builds the ragged and the dense operand
from a module ``t`` that is ``tensorflow`` or ``eagerflow``; ``op(t, x, y)`` combines them."""

rt = lambda t: t.ragged.constant([[1.0, 2.0], [3.0]])  # noqa: E731
one_row = lambda t: t.ragged.constant([[1.0, 2.0, 4.0]])  # noqa: E731
even = lambda t: t.ragged.constant([[1.0, 2.0], [3.0, 4.0]])  # noqa: E731
inner = lambda t: t.ragged.constant([[[1.0], [2.0]], [[3.0]]], ragged_rank=1)  # noqa: E731
deep = lambda t: t.ragged.constant([[[1.0, 2.0], [3.0]], [[4.0]]])  # noqa: E731
rng = lambda t, *shape: t.reshape(t.range(  # noqa: E731
    1, 1 + int(__import__("numpy").prod(shape)), dtype=t.float32), shape) * 0.5
add = lambda t, x, y: x + y  # noqa: E731

CASES = {
    "rows_column": (lambda t: (rt(t), rng(t, 2, 1)), add),
    "one_by_one": (lambda t: (rt(t), rng(t, 1, 1)), add),
    "vector_of_one": (lambda t: (rt(t), rng(t, 1)), add),
    "higher_rank_3_2_1": (lambda t: (rt(t), rng(t, 3, 2, 1)), add),
    "higher_rank_3_1_1": (lambda t: (rt(t), rng(t, 3, 1, 1)), add),
    "higher_rank_4_1_1_1": (lambda t: (rt(t), rng(t, 4, 1, 1, 1)), add),
    "one_row_tiles": (lambda t: (one_row(t), rng(t, 3, 1)), add),
    "even_rows_matrix": (lambda t: (even(t), rng(t, 2, 2)), lambda t, x, y: t.multiply(x, y)),
    "inner_dims": (lambda t: (inner(t), rng(t, 2, 1, 3)), add),
    "inner_vector": (lambda t: (inner(t), rng(t, 3)), lambda t, x, y: t.maximum(x, y)),
    "inner_higher_rank": (lambda t: (inner(t), rng(t, 5, 1, 1, 1)), add),
    "ragged_rank_2": (lambda t: (deep(t), rng(t, 2, 1, 1)), add),
    "ragged_rank_2_higher": (lambda t: (deep(t), rng(t, 3, 1, 1, 1)), add),
    "dense_first": (lambda t: (rt(t), rng(t, 3, 2, 1)), lambda t, x, y: t.subtract(y, x)),
    "comparison": (lambda t: (rt(t), rng(t, 3, 2, 1)), lambda t, x, y: t.greater(x, y)),
}
# Shapes that do not broadcast (TF raises InvalidArgumentError).
ERRORS = {
    "ragged_vs_2": (lambda t: (rt(t), rng(t, 2)), add),
    "ragged_vs_2_2": (lambda t: (rt(t), rng(t, 2, 2)), add),
    "rows_vs_3_1": (lambda t: (rt(t), rng(t, 3, 1)), add),
}
# Gradients of sum(w * (x + y)) w.r.t. the ragged flat values and the dense operand.
GRADS = ["rows_column", "higher_rank_3_2_1", "one_row_tiles", "inner_dims",
         "ragged_rank_2_higher"]
