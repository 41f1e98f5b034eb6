"""tf.sparse cases run in TensorFlow (scripts/record_tf_reference.py sparse records their
outputs into tests/data/tf_reference/sparse_ops.json) and in eagerflow (test_sparse_ops.py
compares, eagerly and traced). Each case is ``(inputs, op)``: ``inputs(t)`` builds the
arguments from a module ``t`` that is either ``tensorflow`` or ``eagerflow``, and
``op(t, *args)`` applies the operation with names both have.
"""

sp = lambda t, i, v, s: t.sparse.SparseTensor(i, v, s)  # noqa: E731
A = lambda t: sp(t, [[0, 1], [1, 0], [1, 2], [2, 3]], [1.0, -2.0, 3.0, 0.5], [3, 4])  # noqa: E731
B = lambda t: sp(t, [[0, 1], [1, 1], [2, 3]], [4.0, 5.0, -0.5], [3, 4])  # noqa: E731
UNORDERED = lambda t: sp(t, [[1, 2, 0], [0, 0, 1], [1, 0, 1], [0, 2, 0]],  # noqa: E731
                         [1.0, 2.0, 3.0, 4.0], [2, 3, 2])
DENSE = lambda t: t.reshape(t.range(8, dtype=t.float32), [4, 2]) - 3.0  # noqa: E731
DENSE_T = lambda t: t.reshape(t.range(8, dtype=t.float32), [2, 4]) - 3.0  # noqa: E731
DENSE3 = lambda t: t.reshape(t.range(9, dtype=t.float32), [3, 3]) * 0.5  # noqa: E731

CASES = {
    "to_dense": (lambda t: [A(t)], lambda t, a: t.sparse.to_dense(a)),
    "to_dense_default": (lambda t: [A(t)], lambda t, a: t.sparse.to_dense(a, -7.0)),
    "to_dense_string": (lambda t: [sp(t, [[0], [2]], ["q", "r"], [4])],
                        lambda t, a: t.sparse.to_dense(a, default_value="x")),
    "from_dense": (lambda t: [t.constant([[0.0, 3.0, 0.0], [4.0, 0.0, -1.0]])],
                   lambda t, x: t.sparse.from_dense(x)),
    "from_dense_string": (lambda t: [t.constant([["a", ""], ["", "b"]])],
                          lambda t, x: t.sparse.from_dense(x)),
    "from_dense_empty": (lambda t: [t.zeros([2, 0])], lambda t, x: t.sparse.from_dense(x)),
    "reorder": (lambda t: [UNORDERED(t)], lambda t, a: t.sparse.reorder(a)),
    "add": (lambda t: [A(t), B(t)], lambda t, a, b: t.sparse.add(a, b)),
    "add_threshold": (lambda t: [A(t), B(t)], lambda t, a, b: t.sparse.add(a, b, 3.0)),
    "add_dense": (lambda t: [A(t), t.ones([3, 4])], lambda t, a, b: t.sparse.add(a, b)),
    "reshape": (lambda t: [A(t)], lambda t, a: t.sparse.reshape(a, [2, 6])),
    "reshape_infer": (lambda t: [UNORDERED(t)], lambda t, a: t.sparse.reshape(a, [-1, 2])),
    "reshape_rank": (lambda t: [A(t)], lambda t, a: t.sparse.reshape(a, [3, 2, 2])),
    "matmul": (lambda t: [A(t), DENSE(t)], lambda t, a, b: t.sparse.sparse_dense_matmul(a, b)),
    "matmul_adjoint_a": (lambda t: [A(t), DENSE3(t)],
                         lambda t, a, b: t.sparse.sparse_dense_matmul(a, b, adjoint_a=True)),
    "matmul_adjoint_b": (lambda t: [A(t), DENSE_T(t)],
                         lambda t, a, b: t.sparse.sparse_dense_matmul(a, b, adjoint_b=True)),
    "matmul_adjoint_both": (lambda t: [A(t), t.transpose(DENSE3(t))],
                            lambda t, a, b: t.sparse.sparse_dense_matmul(
                                a, b, adjoint_a=True, adjoint_b=True)),
    "reduce_sum_all": (lambda t: [A(t)], lambda t, a: t.sparse.reduce_sum(a)),
    "reduce_sum_all_keepdims": (lambda t: [A(t)],
                                lambda t, a: t.sparse.reduce_sum(a, keepdims=True)),
    "reduce_sum_0": (lambda t: [A(t)], lambda t, a: t.sparse.reduce_sum(a, axis=0)),
    "reduce_sum_1": (lambda t: [A(t)], lambda t, a: t.sparse.reduce_sum(a, axis=1)),
    "reduce_sum_neg_keepdims": (lambda t: [A(t)],
                                lambda t, a: t.sparse.reduce_sum(a, axis=-1, keepdims=True)),
    "reduce_sum_3d": (lambda t: [UNORDERED(t)],
                      lambda t, a: t.sparse.reduce_sum(a, axis=[0, 2])),
    "reduce_sum_sparse": (lambda t: [UNORDERED(t)], lambda t, a: t.sparse.reduce_sum(
        a, axis=1, output_is_sparse=True)),
    "reduce_sum_sparse_keepdims": (lambda t: [A(t)], lambda t, a: t.sparse.reduce_sum(
        a, axis=0, keepdims=True, output_is_sparse=True)),
    "retain": (lambda t: [A(t)], lambda t, a: t.sparse.retain(a, a.values > 0.75)),
    "slice": (lambda t: [A(t)], lambda t, a: t.sparse.slice(a, [1, 0], [2, 3])),
    "slice_clipped": (lambda t: [A(t)], lambda t, a: t.sparse.slice(a, [1, 2], [5, 5])),
    "slice_outside": (lambda t: [A(t)], lambda t, a: t.sparse.slice(a, [0, 4], [2, 2])),
    "concat_0": (lambda t: [A(t), B(t)], lambda t, a, b: t.sparse.concat(0, [a, b])),
    "concat_1": (lambda t: [A(t), B(t)], lambda t, a, b: t.sparse.concat(1, [a, b])),
    "concat_expand": (lambda t: [A(t), sp(t, [[0, 5]], [9.0], [1, 6])],
                      lambda t, a, b: t.sparse.concat(0, [a, b], expand_nonconcat_dims=True)),
}

# Gradients: ``loss(t, values, dense)`` with the sparse values (and a dense operand) watched.
IDX = [[0, 1], [1, 0], [1, 2], [2, 3]]
VALUES = [1.0, -2.0, 3.0, 0.5]
GRAD_CASES = {
    "matmul": lambda t, v, b: t.reduce_sum(t.sparse.sparse_dense_matmul(
        sp(t, IDX, v, [3, 4]), b) ** 2),
    "matmul_adjoint_a": lambda t, v, b: t.reduce_sum(t.sparse.sparse_dense_matmul(
        sp(t, IDX, v, [3, 4]), b[:3], adjoint_a=True) * t.constant([[1.0, -1.0]] * 4)),
    "matmul_adjoint_b": lambda t, v, b: t.reduce_sum(t.sparse.sparse_dense_matmul(
        sp(t, IDX, v, [3, 4]), t.transpose(b), adjoint_b=True) ** 3),
    "to_dense": lambda t, v, b: t.reduce_sum(t.sparse.to_dense(
        sp(t, IDX, v, [3, 4])) * t.reshape(t.range(12, dtype=t.float32), [3, 4])),
    "reduce_sum": lambda t, v, b: t.reduce_sum(t.sparse.reduce_sum(
        sp(t, IDX, v, [3, 4]), axis=1) * t.constant([1.0, 2.0, 3.0])),
    "add": lambda t, v, b: t.reduce_sum(t.sparse.add(
        sp(t, IDX, v, [3, 4]), sp(t, IDX[:2], v[:2] * 3.0, [3, 4])).values ** 2),
}
GRAD_DENSE = [[1.0, 2.0], [-1.0, 0.5], [0.25, 3.0], [2.0, -2.0]]
