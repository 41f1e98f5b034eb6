"""Shape-like arguments computed from tensors inside ``tf.function``.

The patterns of TF's guides: sizes from ``tf.shape(x)[0]`` (RNN states, masks, reshapes by
batch size), shapes built from scalar tensors and Python ints, and sizes known only when
the function runs. Each program returns the values and the static shapes the function's
outputs have when traced.
"""


def _shapes(fn, *specs):
    outputs = fn.get_concrete_function(*specs).structured_outputs
    if isinstance(outputs, dict):
        return {k: str(v.shape) for k, v in sorted(outputs.items())}
    return str(outputs.shape)


def p_batch_size_from_shape(tf):
    @tf.function
    def f(x):
        b = tf.shape(x)[0]
        return {"state": tf.zeros([b, 4]), "flat": tf.reshape(x, [b, -1]),
                "fill": tf.fill(tf.shape(x), 2.0), "eye": tf.eye(b)}

    x = tf.reshape(tf.range(24.0), [3, 2, 4])
    return {"values": f(x), "static": _shapes(f, x)}


def p_batch_size_unknown_in_signature(tf):
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        b = tf.shape(x)[0]
        return {"state": tf.zeros([b, 4]), "tiled": tf.tile(x, [1, 2]),
                "padded": tf.pad(x, [[0, b], [1, 1]]),
                "mask": tf.sequence_mask(tf.cast(x[:, 0], tf.int32), tf.shape(x)[1]),
                "hot": tf.one_hot(tf.cast(x[:, 0], tf.int32), tf.shape(x)[1])}

    x = tf.constant([[1.0, 2.0, 3.0], [2.0, 0.0, 1.0]])
    return {"values": f(x), "static": _shapes(f)}


def p_sizes_from_scalar_argument(tf):
    @tf.function
    def f(n):
        return {"fill": tf.fill([n % 3 + 1], n), "zeros": tf.zeros([n, 2]),
                "ones": tf.ones(tf.stack([n, 2])), "reshape": tf.reshape(tf.range(n * 2), [n, -1]),
                "tile": tf.tile([[1, 2]], [n, 1]), "bcast": tf.broadcast_to(1.0, [n, 3]),
                "slice": tf.slice(tf.range(10), [n], [2]), "pad": tf.pad([1, 2], [[n, 0]]),
                "hot": tf.one_hot([0, 1], n), "eye": tf.eye(n),
                "mask": tf.sequence_mask([1, 2], n),
                "uniform_shape": tf.shape(tf.random.uniform([n]))}

    n = tf.constant(3)
    return {"values": f(n), "static": _shapes(f, n)}


def p_attention_mask_by_length(tf):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32),
                                  tf.TensorSpec([None], tf.int32)])
    def masked_mean(x, lengths):
        mask = tf.sequence_mask(lengths, tf.shape(x)[1], dtype=x.dtype)
        return tf.reduce_sum(x * mask, axis=1) / tf.cast(lengths, x.dtype)

    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    return {"mean": masked_mean(x, tf.constant([2, 3]))}


def p_dataset_map_ragged_fill(tf):
    ds = tf.data.Dataset.range(5).map(lambda x: tf.fill([x % 3 + 1], x))
    return {"elements": [e for e in ds], "spec": str(ds.element_spec.shape),
            "padded": [b for b in ds.padded_batch(2)]}


def p_gradient_through_dynamic_shapes(tf):
    @tf.function
    def f(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reshape(tf.tile(x, [n, 1]), [n, -1])
            z = tf.slice(tf.pad(y, [[n, 0], [0, n]]), [n - 1, n], [3, 4])
            loss = tf.reduce_sum(tf.broadcast_to(z, [n, 3, 4]) ** 2)
        return tape.gradient(loss, x)

    x = tf.reshape(tf.range(6.0), [2, 3])
    return {"grad": f(x, tf.constant(2))}


def p_rnn_initial_state_by_batch(tf):
    @tf.function
    def run(inputs):
        batch = tf.shape(inputs)[0]
        state = tf.zeros([batch, 2])
        for t in tf.range(tf.shape(inputs)[1]):
            state = tf.tanh(state + inputs[:, t, :2])
        return state

    x = tf.reshape(tf.range(12.0) / 10.0, [2, 2, 3])
    return {"state": run(x), "static": _shapes(run, tf.TensorSpec([None, None, 3])),
            "static_known": _shapes(run, x)}


def p_while_loop_growing_tensor(tf):
    @tf.function
    def grow(n):
        i = tf.constant(0)
        acc = tf.zeros([0], tf.int32)
        _, acc = tf.while_loop(lambda i, a: i < n,
                               lambda i, a: (i + 1, tf.concat([a, [i * i]], 0)),
                               [i, acc], shape_invariants=[i.shape, tf.TensorShape([None])])
        return acc

    return {"acc": grow(tf.constant(4)), "static": _shapes(grow, tf.constant(4))}


def p_autograph_concat_in_loop(tf):
    @tf.function
    def rows(n):
        acc = tf.zeros([0, 2])
        for i in tf.range(n):
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(acc, tf.TensorShape([None, 2]))])
            acc = tf.concat([acc, tf.fill([1, 2], tf.cast(i, tf.float32))], axis=0)
        return acc

    return {"rows": rows(tf.constant(3)), "static": _shapes(rows, tf.constant(3))}


def p_shape_vs_static_shape_in_loop(tf):
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def f(x):
        total = tf.constant(0)
        for _ in tf.range(tf.shape(x)[0]):
            total += tf.shape(x)[0] * x.shape[1]
        return total

    return {"total": f(tf.ones([3, 2]))}
