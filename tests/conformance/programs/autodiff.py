"""Automatic differentiation as the autodiff guides write it."""


def p_simple_grad(tf):
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x**2
    return {"dy_dx": tape.gradient(y, x)}


def p_grad_matrix(tf):
    w = tf.Variable(tf.reshape(tf.range(6.0), [3, 2]) / 10.0, name="w")
    b = tf.Variable(tf.zeros(2), name="b")
    x = [[1.0, 2.0, 3.0]]
    with tf.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = tf.reduce_mean(y**2)
    dw, db = tape.gradient(loss, [w, b])
    return {"dw": dw, "db": db, "dict": tape.gradient(loss, {"w": w})["w"].shape.as_list()}


def p_watch_constant(tf):
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return {"g": tape.gradient(y, x)}


def p_unwatched_none(tf):
    x = tf.constant(3.0)
    v = tf.Variable(2.0, trainable=False)
    with tf.GradientTape() as tape:
        y = x * v
    return {"none": tape.gradient(y, [x, v]) == [None, None]}


def p_persistent(tf):
    x = tf.constant([1.0, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    return {"dz": tape.gradient(z, x), "dy": tape.gradient(y, x)}


def p_non_persistent_second_call(tf):
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    try:
        tape.gradient(y, x)
    except RuntimeError as e:
        return {"raised": type(e).__name__}
    return {"raised": None}


def p_watched_variables(tf):
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    with tf.GradientTape() as tape:
        _ = a * b
    return {"n": len(tape.watched_variables())}


def p_watch_accessed_false(tf):
    x0 = tf.Variable(0.0)
    x1 = tf.Variable(10.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        y = tf.math.sin(x0) + tf.nn.softplus(x1)
    g = tape.gradient(y, {"x0": x0, "x1": x1})
    return {"x0_none": g["x0"] is None, "x1": g["x1"]}


def p_grad_of_target_sum(tf):
    x = tf.linspace(-2.0, 2.0, 5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.sigmoid(x)
    return {"g": tape.gradient(y, x)}


def p_control_flow_grad(tf):
    x = tf.constant(1.0)
    v0 = tf.Variable(2.0)
    v1 = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        if x > 0.0:
            result = v0
        else:
            result = v1**2
    dv0, dv1 = tape.gradient(result, [v0, v1])
    return {"dv0": dv0, "dv1_none": dv1 is None, "dx_none": tape.gradient(result, x) is None}


def p_integer_grad_none(tf):
    x = tf.constant(10)
    with tf.GradientTape() as g:
        g.watch(x)
        y = x * x
    return {"none": g.gradient(y, x) is None}


def p_stop_gradient(tf):
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = x * tf.stop_gradient(x * 3.0)
    return {"g": tape.gradient(y, x)}


def p_nested_tapes_second_order(tf):
    x = tf.Variable(1.0)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = x * x * x
        dy = t1.gradient(y, x)
    d2y = t2.gradient(dy, x)
    return {"dy": dy, "d2y": d2y}


def p_jacobian(tf):
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    j = tape.jacobian(y, x)
    return {"j": j}


def p_jacobian_matrix_var(tf):
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    x = tf.constant([[1.0, -1.0]])
    with tf.GradientTape() as tape:
        y = tf.nn.relu(x @ w)
    j = tape.jacobian(y, w)
    return {"shape": j.shape.as_list(), "j": j}


def p_batch_jacobian(tf):
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return {"bj": tape.batch_jacobian(y, x)}


def p_custom_gradient(tf):
    @tf.custom_gradient
    def clip_grad(x):
        def grad(upstream):
            return tf.clip_by_value(upstream, -0.5, 0.5)

        return tf.identity(x), grad

    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(clip_grad(x) * 3.0)
    return {"g": tape.gradient(y, x)}


def p_custom_gradient_log1pexp(tf):
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(upstream):
            return upstream * (1 - 1 / (1 + e))

        return tf.math.log(1 + e), grad

    x = tf.constant(100.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    return {"g": tape.gradient(y, x)}


def p_output_gradients(tf):
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return {"g": tape.gradient(y, x, output_gradients=tf.constant([10.0, 0.5]))}


def p_unconnected_zero(tf):
    x = tf.Variable([2.0, 2.0])
    y = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        z = y**2
    return {"g": tape.gradient(z, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)}


def p_stateful_assign_stops(tf):
    x = tf.Variable(2.0)
    y = tf.Variable(0.0)
    with tf.GradientTape() as tape:
        y.assign(x * 2)
        z = y + 1.0
    return {"none": tape.gradient(z, x) is None}


def p_grad_of_reductions(tf):
    x = tf.constant([[1.0, 5.0], [3.0, 2.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        m = tf.reduce_max(x)
        s = tf.reduce_mean(x)
        p = tf.reduce_prod(x)
    return {"max": tape.gradient(m, x), "mean": tape.gradient(s, x), "prod": tape.gradient(p, x)}


def p_grad_gather_indexed(tf):
    x = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.gather(x, [0, 0, 2]) * 2.0) + x[1] * 5.0
    g = tape.gradient(y, x)
    return {"g": tf.convert_to_tensor(g)}


def p_grad_softmax_xent(tf):
    logits = tf.constant([[2.0, 1.0, 0.1]])
    labels = tf.constant([[1.0, 0.0, 0.0]])
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return {"loss": loss, "g": tape.gradient(loss, logits)}


def p_grad_where_sqrt(tf):
    x = tf.constant([-1.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.where(x > 0, tf.sqrt(tf.abs(x)), tf.zeros_like(x))
    return {"g": tape.gradient(y, x)}


def p_grad_in_function(tf):
    v = tf.Variable(3.0)

    @tf.function
    def f():
        with tf.GradientTape() as t:
            y = v * v + 2.0 * v
        return t.gradient(y, v)

    return {"g": f()}


def p_custom_gradient_in_cond_and_loop(tf):
    # Inside tf.function, a custom rule applies in a cond branch and in a while body too.
    @tf.custom_gradient
    def cube_with_rule(x):
        def grad(upstream):
            return upstream * 0.5 * x

        return x * x * x, grad

    @tf.function
    def in_cond(x, p):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.cond(p > 0, lambda: tf.reduce_sum(cube_with_rule(x)),
                        lambda: tf.reduce_sum(x))
        return tape.gradient(y, x)

    @tf.function
    def in_loop(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            acc = tf.zeros_like(x)
            for _ in tf.range(2):
                acc = acc + cube_with_rule(x)
            y = tf.reduce_sum(acc)
        return tape.gradient(y, x)

    x = tf.constant([3.0, -1.2])
    return {"cond": in_cond(x, tf.constant(1.0)), "loop": in_loop(x)}
