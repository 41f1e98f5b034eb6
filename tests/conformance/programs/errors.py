"""Which exception class common mistakes raise."""


def _raised(fn):
    try:
        fn()
    except Exception as e:  # the class name is the result
        return type(e).__name__
    return None


def p_matmul_shape_mismatch(tf):
    return {"c": _raised(lambda: tf.matmul(tf.ones([2, 3]), tf.ones([2, 3])))}


def p_add_dtype_mismatch(tf):
    return {"c": _raised(lambda: tf.constant(1) + tf.constant(1.0))}


def p_reshape_bad_size(tf):
    return {"c": _raised(lambda: tf.reshape(tf.range(6), [4, 2]))}


def p_index_out_of_range(tf):
    return {"c": _raised(lambda: tf.constant([1, 2, 3])[5])}


def p_gather_out_of_range(tf):
    return {"c": _raised(lambda: tf.gather(tf.constant([1, 2, 3]), [7]))}


def p_non_rectangular_constant(tf):
    return {"c": _raised(lambda: tf.constant([[1, 2], [3]]))}


def p_python_float_into_int(tf):
    return {"c": _raised(lambda: tf.constant([1, 2]) + 1.5)}


def p_concat_rank_mismatch(tf):
    return {"c": _raised(lambda: tf.concat([tf.ones([2, 2]), tf.ones([2])], 0))}


def p_variable_in_function_every_call(tf):
    @tf.function
    def f(x):
        v = tf.Variable(1.0)
        return v * x

    f(tf.constant(1.0))
    return {"c": _raised(lambda: f(tf.constant(2.0)))}


def p_input_signature_violation(tf):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
    def f(x):
        return x

    return {"c": _raised(lambda: f(tf.constant([1.0])))}


def p_tensor_bool_in_graph_ok_eager(tf):
    return {"eager": bool(tf.constant(3) > 2)}


def p_tensor_is_unhashable(tf):
    return {"c": _raised(lambda: {tf.constant(1): 1})}


def p_tensor_item_assignment(tf):
    def f():
        t = tf.constant([1, 2])
        t[0] = 5

    return {"c": _raised(f)}


def p_dense_wrong_input_dim(tf):
    import numpy as np

    m = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(2)])
    return {"c": _raised(lambda: m(np.ones((1, 4), np.float32)))}


def p_invalid_argument_is_op_error(tf):
    try:
        tf.reshape(tf.range(6), [4, 2])
    except tf.errors.OpError as e:
        return {"op_error": True, "invalid": isinstance(e, tf.errors.InvalidArgumentError)}
    return {"op_error": False}


def p_cast_string_to_float(tf):
    return {"c": _raised(lambda: tf.cast(tf.constant(["1.0"]), tf.float32))}


def p_strings_to_number(tf):
    return {
        "v": tf.strings.to_number(tf.constant(["1.5", "-2"])),
        "c": _raised(lambda: tf.strings.to_number(tf.constant(["abc"]))),
    }


def p_tape_gradient_outside_persistent(tf):
    x = tf.Variable(1.0)
    with tf.GradientTape() as t:
        y = x * 2
    t.gradient(y, x)
    return {"c": _raised(lambda: t.gradient(y, x))}


def p_sqrt_of_int(tf):
    return {"c": _raised(lambda: tf.sqrt(tf.constant(4)))}


def p_split_uneven(tf):
    return {"c": _raised(lambda: tf.split(tf.range(7), 3))}


def p_one_hot_float_indices(tf):
    return {"c": _raised(lambda: tf.one_hot(tf.constant([1.0]), 3))}
