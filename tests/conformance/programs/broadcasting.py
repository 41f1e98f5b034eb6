"""Broadcasting rules as the tensor guide shows them."""


def p_scalar_broadcast(tf):
    x = tf.constant([1, 2, 3])
    return {"mul": x * 2, "add": 2 + x}


def p_row_col(tf):
    x = tf.reshape(tf.range(1, 4), [3, 1])
    y = tf.range(1, 5)
    return {"outer": x * y, "shape": (x * y).shape.as_list()}


def p_broadcast_to(tf):
    return {"v": tf.broadcast_to(tf.constant([1, 2, 3]), [3, 3])}


def p_broadcast_3d(tf):
    a = tf.ones([2, 1, 4])
    b = tf.ones([3, 1])
    return {"shape": (a + b).shape.as_list()}


def p_broadcast_dynamic_shape(tf):
    return {"v": tf.broadcast_dynamic_shape(tf.constant([1, 3]), tf.constant([4, 1]))}


def p_numpy_array_operand(tf):
    import numpy as np

    return {"v": tf.constant([1.0, 2.0]) + np.array([[10.0], [20.0]], dtype=np.float32)}


def p_python_list_operand(tf):
    return {"v": tf.constant([[1, 2], [3, 4]]) - [1, 1]}


def p_where_broadcast(tf):
    return {"v": tf.where(tf.constant([[True], [False]]), tf.constant([1, 2]), 0)}


def p_incompatible_raises(tf):
    try:
        tf.ones([2, 3]) + tf.ones([4])
    except Exception as e:
        return {
            "raised": "InvalidArgumentError"
            if isinstance(e, tf.errors.InvalidArgumentError)
            else type(e).__name__
        }
    return {"raised": None}


def p_bool_mask_broadcast(tf):
    x = tf.constant([[1.0, -1.0], [-2.0, 2.0]])
    return {"v": tf.where(x > 0, x, tf.zeros_like(x))}
