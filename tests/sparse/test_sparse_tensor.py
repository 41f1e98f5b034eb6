"""SparseTensor and tf.sparse against dense numpy references."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors


def _st():
    return ef.sparse.SparseTensor([[2, 0], [0, 1], [1, 2]], [3.0, 1.0, 2.0], [3, 3])


def _dense():
    return np.array([[0, 1, 0], [0, 0, 2], [3, 0, 0]], np.float32)


def test_to_dense_from_dense_round_trip():
    np.testing.assert_array_equal(ef.sparse.to_dense(ef.sparse.reorder(_st())).numpy(),
                                  _dense())
    back = ef.sparse.from_dense(_dense())
    assert back.indices.numpy().tolist() == [[0, 1], [1, 2], [2, 0]]
    assert back.values.numpy().tolist() == [1.0, 2.0, 3.0]
    filled = ef.sparse.to_dense(ef.sparse.reorder(_st()), default_value=-1.0).numpy()
    assert filled[0, 0] == -1 and filled[0, 1] == 1


def test_validation():
    with pytest.raises(errors.InvalidArgumentError, match="out of bounds"):
        ef.sparse.SparseTensor([[3, 0]], [1.0], [3, 3])
    with pytest.raises(errors.InvalidArgumentError, match="values"):
        ef.sparse.SparseTensor([[0, 0]], [1.0, 2.0], [3, 3])
    # As TF's SparseToDense: repeated or unordered indices are refused (reorder sorts them).
    with pytest.raises(errors.InvalidArgumentError, match="repeated"):
        ef.sparse.to_dense(ef.sparse.SparseTensor([[0, 0], [0, 0]], [1.0, 2.0], [1, 1]))
    with pytest.raises(errors.InvalidArgumentError, match="out of order"):
        ef.sparse.to_dense(_st())
    # Without validation a repeated index keeps its last value, as in TF.
    dup = ef.sparse.SparseTensor([[0, 1], [0, 1]], [1.0, 2.0], [2, 2])
    assert ef.sparse.to_dense(dup, validate_indices=False).numpy().tolist() == [[0, 2], [0, 0]]


def test_reorder_add_reshape_retain_slice_concat():
    assert ef.sparse.reorder(_st()).indices.numpy().tolist() == [[0, 1], [1, 2], [2, 0]]
    st = ef.sparse.reorder(_st())
    np.testing.assert_array_equal(ef.sparse.to_dense(ef.sparse.add(st, st)).numpy(),
                                  2 * _dense())
    np.testing.assert_array_equal(ef.sparse.add(st, np.ones((3, 3), np.float32)).numpy(),
                                  _dense() + 1)
    np.testing.assert_array_equal(ef.sparse.to_dense(ef.sparse.reshape(st, [9, -1])).numpy(),
                                  _dense().reshape(9, 1))
    kept = ef.sparse.retain(_st(), [True, False, True])
    assert kept.values.numpy().tolist() == [3.0, 2.0]
    sl = ef.sparse.slice(st, [1, 0], [2, 2])
    np.testing.assert_array_equal(ef.sparse.to_dense(sl).numpy(), _dense()[1:3, 0:2])
    cat = ef.sparse.concat(1, [st, st])
    np.testing.assert_array_equal(ef.sparse.to_dense(cat).numpy(),
                                  np.concatenate([_dense(), _dense()], 1))


def test_matmul_and_reduce_sum_with_gradients():
    b = np.arange(6, dtype=np.float64).reshape(3, 2)
    values = ef.Variable([3.0, 1.0, 2.0], dtype=ef.float64)
    bv = ef.Variable(b)
    with ef.GradientTape() as tape:
        st = ef.sparse.SparseTensor([[2, 0], [0, 1], [1, 2]], values, [3, 3])
        out = ef.sparse.sparse_dense_matmul(st, bv)
        loss = ef.reduce_sum(out * out)
    dense = _dense().astype(np.float64)
    np.testing.assert_allclose(out.numpy(), dense @ b)
    gv, gb = tape.gradient(loss, [values, bv])
    g_out = 2 * dense @ b
    np.testing.assert_allclose(gb.numpy(), dense.T @ g_out)
    want = [(g_out @ b.T)[2, 0], (g_out @ b.T)[0, 1], (g_out @ b.T)[1, 2]]
    np.testing.assert_allclose(gv.numpy(), want)
    np.testing.assert_allclose(ef.sparse.sparse_dense_matmul(st, b.T, adjoint_a=True,
                                                             adjoint_b=True).numpy(),
                               dense.T @ b)
    assert ef.sparse.reduce_sum(_st()).numpy() == 6.0
    assert ef.sparse.reduce_sum(_st(), axis=1).numpy().tolist() == [1.0, 2.0, 3.0]
