"""Indexing and slicing as the tensor-slicing guide writes it."""


def p_basic_index(tf):
    t = tf.constant([0, 1, 1, 2, 3, 5, 8, 13, 21, 34])
    return {"first": t[0], "last": t[-1], "slice": t[2:7], "step": t[::3], "rev": t[::-1]}


def p_2d_index(tf):
    m = tf.reshape(tf.range(12), [3, 4])
    return {"row": m[1], "col": m[:, 2], "block": m[1:, :2], "elem": m[2, 3]}


def p_ellipsis_newaxis(tf):
    t = tf.zeros([2, 3, 4])
    return {
        "e": t[..., 0].shape.as_list(),
        "n": t[:, tf.newaxis].shape.as_list(),
        "n2": t[None, ..., None].shape.as_list(),
    }


def p_gather(tf):
    t = tf.constant([10, 20, 30, 40])
    m = tf.reshape(tf.range(6), [3, 2])
    return {"g": tf.gather(t, [3, 0, 0]), "g_axis1": tf.gather(m, [1, 0], axis=1)}


def p_gather_nd(tf):
    t = tf.constant([[1, 2], [3, 4], [5, 6]])
    return {"g": tf.gather_nd(t, [[2, 0], [0, 1]]), "rows": tf.gather_nd(t, [[1], [0]])}


def p_scatter_nd(tf):
    return {"s": tf.scatter_nd([[1], [3]], [9, 10], [5])}


def p_tensor_scatter_update(tf):
    t = tf.constant([1, 2, 3, 4])
    return {
        "u": tf.tensor_scatter_nd_update(t, [[0], [2]], [10, 30]),
        "a": tf.tensor_scatter_nd_add(t, [[1]], [100]),
    }


def p_boolean_mask(tf):
    t = tf.constant([1, 2, 3, 4])
    return {"m": tf.boolean_mask(t, [True, False, True, False]), "where": tf.where(t > 2)}


def p_where_select(tf):
    return {"w": tf.where([True, False, True], [1, 2, 3], [10, 20, 30])}


def p_slice_strided(tf):
    t = tf.reshape(tf.range(24), [2, 3, 4])
    return {
        "slice": tf.slice(t, [0, 1, 1], [2, 1, 2]),
        "strided": tf.strided_slice(t, [0, 0, 0], [2, 3, 4], [1, 2, 2]),
    }


def p_variable_slice_assign(tf):
    v = tf.Variable([1.0, 2.0, 3.0, 4.0])
    v[1:3].assign([9.0, 8.0])
    return {"v": v}


def p_index_with_tensor(tf):
    t = tf.constant([5, 6, 7])
    i = tf.constant(1)
    return {"v": t[i]}


def p_negative_step_2d(tf):
    m = tf.reshape(tf.range(6), [2, 3])
    return {"v": m[::-1, ::-2]}


def p_reverse_roll(tf):
    t = tf.constant([1, 2, 3, 4])
    return {"rev": tf.reverse(t, [0]), "roll": tf.roll(t, 1, 0)}


def p_unique(tf):
    y, idx = tf.unique(tf.constant([1, 1, 2, 4, 4, 4, 7, 8, 8]))
    return {"y": y, "idx": idx}
