"""tf.function and AutoGraph, as the "Better performance with tf.function" guide writes it."""


def p_basic_function(tf):
    @tf.function
    def add(a, b):
        return a + b

    return {"v": add(tf.ones([2, 2]), tf.ones([2, 2]))}


def p_retracing_count(tf):
    traces = []

    @tf.function
    def f(x):
        traces.append(1)
        return x * 2

    f(tf.constant(1))
    f(tf.constant(2))
    f(tf.constant([1, 2]))
    f(tf.constant(1.5))
    return {"traces": len(traces)}


def p_python_arg_retraces(tf):
    traces = []

    @tf.function
    def f(n):
        traces.append(n)
        return tf.constant(n) * 2

    f(1)
    f(1)
    f(2)
    return {"traces": len(traces), "v": f(3)}


def p_input_signature(tf):
    @tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.int32)])
    def f(x):
        return tf.reduce_sum(x)

    return {"a": f(tf.constant([1, 2])), "b": f(tf.constant([1, 2, 3]))}


def p_reduce_retracing_shape(tf):
    traces = []

    @tf.function(reduce_retracing=True)
    def f(x):
        traces.append(1)
        return tf.reduce_sum(x)

    f(tf.constant([1]))
    f(tf.constant([1, 2]))
    f(tf.constant([1, 2, 3]))
    return {"le2": len(traces) <= 2}


def p_autograph_if(tf):
    @tf.function
    def f(x):
        if tf.reduce_sum(x) > 0:
            return x * x
        else:
            return -x // 2

    return {"pos": f(tf.constant([1, 2])), "neg": f(tf.constant([-3, -1]))}


def p_autograph_while(tf):
    @tf.function
    def collatz(n):
        steps = tf.constant(0)
        while n > 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        return steps

    return {"27": collatz(tf.constant(27)), "6": collatz(tf.constant(6))}


def p_autograph_for_range(tf):
    @tf.function
    def f(n):
        s = tf.constant(0)
        for i in tf.range(n):
            s += i * i
        return s

    return {"v": f(tf.constant(5))}


def p_autograph_for_tensor(tf):
    @tf.function
    def f(xs):
        total = tf.constant(0.0)
        for x in xs:
            total += x
        return total

    return {"v": f(tf.constant([1.0, 2.0, 3.5]))}


def p_autograph_break(tf):
    @tf.function
    def f(n):
        i = tf.constant(0)
        s = tf.constant(0)
        while i < n:
            if s > 10:
                break
            s += i
            i += 1
        return s, i

    s, i = f(tf.constant(100))
    return {"s": s, "i": i}


def p_autograph_continue(tf):
    @tf.function
    def f(n):
        s = tf.constant(0)
        for i in tf.range(n):
            if i % 2 == 0:
                continue
            s += i
        return s

    return {"v": f(tf.constant(10))}


def p_tensor_array(tf):
    @tf.function
    def f(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for i in tf.range(n):
            ta = ta.write(i, tf.cast(i, tf.float32) * 0.5)
        return ta.stack()

    return {"v": f(tf.constant(4))}


def p_python_loop_unrolled(tf):
    @tf.function
    def f(x):
        for _ in range(3):
            x = x + 1
        return x

    return {"v": f(tf.constant(1))}


def p_variable_in_function(tf):
    v = tf.Variable(1.0)

    @tf.function
    def f(x):
        v.assign_add(x)
        return v.read_value()

    f(tf.constant(2.0))
    return {"v": f(tf.constant(3.0)), "after": v}


def p_print_side_effect_once(tf):
    calls = []

    @tf.function
    def f(x):
        calls.append("py")
        return x + 1

    for i in range(3):
        f(tf.constant(i))
    return {"py_calls": len(calls)}


def p_concrete_function(tf):
    @tf.function
    def f(x):
        return x * 2

    cf = f.get_concrete_function(tf.TensorSpec([None, 3], tf.float32))
    out = cf(tf.ones([2, 3]))
    return {"out": out, "structured_shape": cf.structured_outputs.shape.as_list()}


def p_tf_cond_while_loop(tf):
    x = tf.constant(3)
    c = tf.cond(x > 2, lambda: x * 10, lambda: x)
    i, s = tf.while_loop(
        lambda i, s: i < 5, lambda i, s: (i + 1, s + i), [tf.constant(0), tf.constant(0)]
    )
    return {"cond": c, "i": i, "s": s}


def p_function_returns_python(tf):
    @tf.function
    def f():
        return 3

    r = f()
    return {"dtype": r.dtype.name, "v": r}


def p_function_nested_structure(tf):
    @tf.function
    def f(d):
        return {"sum": d["a"] + d["b"], "pair": (d["a"], d["b"] * 2)}

    r = f({"a": tf.constant(1), "b": tf.constant(2)})
    return {"sum": r["sum"], "pair": list(r["pair"])}


def p_tf_function_shape_inside(tf):
    shapes = []

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def f(x):
        shapes.append(x.shape.as_list())
        return tf.shape(x)

    out = f(tf.ones([5, 2]))
    return {"static": shapes[0], "dynamic": out}


def p_function_grad_equals_eager(tf):
    w = tf.Variable([1.0, -2.0])

    def loss_fn(x):
        return tf.reduce_sum(tf.nn.relu(x * w) ** 2)

    @tf.function
    def traced(x):
        with tf.GradientTape() as t:
            loss = loss_fn(x)
        return loss, t.gradient(loss, w)

    with tf.GradientTape() as t:
        eager_loss = loss_fn(tf.constant([3.0, -1.0]))
    eager_g = t.gradient(eager_loss, w)
    loss, g = traced(tf.constant([3.0, -1.0]))
    return {"loss": loss, "g": g, "eager_g": eager_g}


def p_autograph_early_return(tf):
    @tf.function
    def f(x):
        if x > 5:
            return x * 100
        return x - 1

    return {"big": f(tf.constant(7)), "small": f(tf.constant(2))}


def p_experimental_relax_shape_calls(tf):
    @tf.function
    def f(x):
        return tf.reduce_mean(x)

    return {"a": f(tf.constant([1.0, 2.0])), "b": f(tf.constant([[1.0], [5.0]]))}


def _class_raised(fn):
    try:
        fn()
    except Exception as e:  # the class is what is compared
        return type(e).__name__
    return None


def p_tensor_array_elements_of_different_sizes(tf):
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False)
    ta = ta.write(0, [1.0])
    ta = ta.write(1, [2.0, 3.0])
    # stack() of elements of different sizes raises in TF, but which class depends on how
    # TF's eager array packs its list (ValueError for these three, InvalidArgumentError
    # for two); tests/function/test_functional_ops.py checks eagerflow's error instead.
    ta = ta.write(2, [4.0, 5.0, 6.0])
    strict = tf.TensorArray(tf.float32, size=2, element_shape=[None])
    strict = strict.write(0, [1.0])
    scalars = tf.TensorArray(tf.float32, size=2).write(0, 1.0).write(1, 2.0)
    return {"concat": ta.concat(), "read1": ta.read(1), "size": ta.size(),
            "strict_second_size": _class_raised(lambda: strict.write(1, [1.0, 2.0])),
            "read_past_the_end": _class_raised(lambda: ta.read(5)),
            "concat_of_scalars": _class_raised(scalars.concat)}


def p_tensor_array_split_with_lengths(tf):
    value = tf.reshape(tf.range(12.0), [6, 2])
    ta = tf.TensorArray(tf.float32, size=3).split(value, [1, 3, 2])
    loose = tf.TensorArray(tf.float32, size=3, infer_shape=False).split(value, [2, 0, 4])

    @tf.function
    def traced(v):
        t = tf.TensorArray(tf.float32, size=3).split(v, [1, 3, 2])
        return t.read(0), t.read(1), t.concat(), t.size()

    return {"first": ta.read(0), "second": ta.read(1), "third": ta.read(2),
            "loose_concat": loose.concat(), "loose_empty": loose.read(1),
            "traced": traced(value), "bad_lengths": _class_raised(
                lambda: tf.TensorArray(tf.float32, size=2, infer_shape=False).split(
                    value, [1, 2]))}


def p_tensor_array_of_different_sizes_in_a_loop(tf):
    @tf.function
    def f(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False)
        for i in tf.range(n):
            ta = ta.write(i, tf.range(tf.cast(i, tf.float32) + 1.0))
        return ta.concat(), ta.read(2)

    x = tf.constant([0.5, -1.0, 2.0])

    @tf.function
    def loss(x):
        ta = tf.TensorArray(tf.float32, size=3, infer_shape=False)
        for i in tf.range(3):
            ta = ta.write(i, tf.gather(x, tf.range(i + 1)) * tf.cast(i + 1, tf.float32))
        return tf.reduce_sum(tf.sin(ta.concat())) + tf.reduce_sum(ta.read(1) ** 2)

    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loss(x)
    concat, third = f(tf.constant(4))
    return {"concat": concat, "third": third, "loss": y, "grad": tape.gradient(y, x)}


def p_map_fn_ragged_and_string_outputs(tf):
    r = tf.map_fn(lambda x: tf.range(x), tf.constant([1, 3, 0, 2]),
                  fn_output_signature=tf.RaggedTensorSpec(shape=[None], dtype=tf.int32))
    s = tf.map_fn(lambda x: tf.strings.as_string(x), tf.constant([1, 2]),
                  fn_output_signature=tf.string)
    return {"values": r.flat_values, "row_lengths": r.row_lengths(), "strings": s,
            "type": type(r).__name__}


def p_dataset_reduce_in_function(tf):
    ds = tf.data.Dataset.range(1, 6)

    @tf.function
    def f():
        return ds.reduce((tf.constant(0, tf.int64), tf.constant(1, tf.int64)),
                         lambda s, x: (s[0] + x, s[1] * x))

    total, product = f()
    again = f()
    return {"total": total, "product": product, "again": again[0]}


def p_lists_of_traced_tensors_are_packed(tf):
    @tf.function
    def f(x):
        return tf.convert_to_tensor([x, 2 * x]), tf.stack([x, 1.0]) + [x, x]

    a, b = f(tf.constant(1.5))
    return {"a": a, "b": b}


def p_variable_arguments_trace_once_per_spec(tf):
    traces = []
    v1, v2 = tf.Variable(1.0), tf.Variable(2.0)

    @tf.function
    def h(v):
        traces.append(1)
        return v * 2

    @tf.function
    def step(v, x):
        v.assign_add(x)
        return v.read_value()

    a, b = h(v1), h(v2)
    with tf.GradientTape() as tape:
        y = h(v2) * v2
    step(v1, tf.constant(1.0))
    step(v2, tf.constant(10.0))
    once = h.experimental_get_tracing_count()
    h(tf.Variable([1.0, 2.0]))
    h(tf.Variable(1.0, dtype=tf.float64))
    return {"a": a, "b": b, "traces": len(traces), "count": once,
            "count_after_other_specs": h.experimental_get_tracing_count(),
            "grad": tape.gradient(y, v2), "v1": v1, "v2": v2,
            "step_count": step.experimental_get_tracing_count()}
