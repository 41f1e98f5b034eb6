"""tf.Module and variables, as the "Introduction to modules" guide writes them."""


def p_variable_basics(tf):
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    return {
        "shape": v.shape.as_list(),
        "dtype": v.dtype.name,
        "numpy": v.numpy(),
        "trainable": v.trainable,
        "argmax": tf.math.argmax(v),
    }


def p_variable_assign(tf):
    v = tf.Variable([2.0, 3.0])
    v.assign([1.0, 2.0])
    v.assign_add([1.0, 1.0])
    v.assign_sub([0.5, 0.5])
    return {"v": v}


def p_variable_assign_shape_error(tf):
    v = tf.Variable([2.0, 3.0])
    try:
        v.assign([1.0, 2.0, 3.0])
    except Exception as e:
        return {"raised": type(e).__name__}
    return {"raised": None}


def p_variable_copy_semantics(tf):
    a = tf.Variable([2.0, 3.0])
    b = tf.Variable(a)
    a.assign([5.0, 6.0])
    return {"a": a, "b": b}


def p_variable_ops(tf):
    v = tf.Variable([1.0, 2.0])
    return {
        "add": v + 1.0,
        "mul": v * v,
        "convert": tf.convert_to_tensor(v),
        "reshape": tf.reshape(v, [2, 1]),
    }


def p_variable_name(tf):
    v = tf.Variable(1.0, name="Mark")
    return {"name": v.name}


def p_variable_int(tf):
    v = tf.Variable(3)
    v.assign_add(2)
    return {"v": v, "dtype": v.dtype.name}


def p_module_simple(tf):
    class SimpleModule(tf.Module):
        def __init__(self, name=None):
            super().__init__(name=name)
            self.a_variable = tf.Variable(5.0, name="train_me")
            self.non_trainable_variable = tf.Variable(5.0, trainable=False, name="do_not_train_me")

        def __call__(self, x):
            return self.a_variable * x + self.non_trainable_variable

    m = SimpleModule(name="simple")
    return {
        "out": m(tf.constant(5.0)),
        "n_trainable": len(m.trainable_variables),
        "n_all": len(m.variables),
        "name": m.name,
    }


def p_module_dense_sequential(tf):
    class Dense(tf.Module):
        def __init__(self, in_features, out_features, name=None):
            super().__init__(name=name)
            self.w = tf.Variable(
                tf.reshape(
                    tf.range(in_features * out_features, dtype=tf.float32),
                    [in_features, out_features],
                )
                / 10.0,
                name="w",
            )
            self.b = tf.Variable(tf.zeros([out_features]), name="b")

        def __call__(self, x):
            return tf.nn.relu(x @ self.w + self.b)

    class Seq(tf.Module):
        def __init__(self, name=None):
            super().__init__(name=name)
            self.dense_1 = Dense(3, 3)
            self.dense_2 = Dense(3, 2)

        def __call__(self, x):
            return self.dense_2(self.dense_1(x))

    m = Seq(name="the_model")
    return {
        "out": m(tf.constant([[2.0, 2.0, 2.0]])),
        "n_sub": len(m.submodules),
        "n_vars": len(m.trainable_variables),
    }


def p_module_list_attr_tracking(tf):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.layers = [tf.Variable(1.0), tf.Variable(2.0)]
            self.table = {"k": tf.Variable(3.0)}

    return {"n": len(M().variables)}


def p_module_name_scope(tf):
    class M(tf.Module):
        def __init__(self):
            super().__init__(name="mymod")
            with self.name_scope:
                self.v = tf.Variable(1.0, name="v")

    return {"name": M().v.name}


def p_training_loop_linear(tf):
    x = tf.linspace(-2.0, 2.0, 20)
    y = x * 3.0 + 2.0

    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(5.0)
            self.b = tf.Variable(0.0)

        def __call__(self, x):
            return self.w * x + self.b

    m = Model()
    for _ in range(10):
        with tf.GradientTape() as t:
            loss = tf.reduce_mean(tf.square(y - m(x)))
        dw, db = t.gradient(loss, [m.w, m.b])
        m.w.assign_sub(0.1 * dw)
        m.b.assign_sub(0.1 * db)
    return {"w": m.w, "b": m.b, "loss": loss}


def p_variable_aggregation_read_value(tf):
    v = tf.Variable([1, 2, 3])
    return {"read": v.read_value(), "value": v.value()}


def p_variable_scatter(tf):
    v = tf.Variable([1.0, 2.0, 3.0, 4.0])
    v.scatter_nd_update([[0], [3]], [10.0, 40.0])
    return {"v": v}


def p_variable_gather(tf):
    v = tf.Variable([[1, 2], [3, 4], [5, 6]])
    return {"g": tf.gather(v, [2, 0])}
