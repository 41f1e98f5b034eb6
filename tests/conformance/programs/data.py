"""tf.data pipelines as the "tf.data: Build TensorFlow input pipelines" guide writes them."""


def _list(ds):
    return [x.numpy().tolist() if hasattr(x, "numpy") else x for x in ds]


def p_from_tensor_slices(tf):
    ds = tf.data.Dataset.from_tensor_slices([8, 3, 0, 8, 2, 1])
    return {"v": _list(ds), "spec_dtype": ds.element_spec.dtype.name}


def p_range_map_batch(tf):
    ds = tf.data.Dataset.range(10).map(lambda x: x * 2).batch(4)
    return {"v": _list(ds)}


def p_batch_drop_remainder(tf):
    ds = tf.data.Dataset.range(10).batch(3, drop_remainder=True)
    return {"v": _list(ds), "shape": ds.element_spec.shape.as_list()}


def p_filter(tf):
    ds = tf.data.Dataset.range(20).filter(lambda x: x % 3 == 0)
    return {"v": _list(ds)}


def p_take_skip(tf):
    ds = tf.data.Dataset.range(10)
    return {"take": _list(ds.take(3)), "skip": _list(ds.skip(7)), "both": _list(ds.skip(2).take(2))}


def p_zip(tf):
    a = tf.data.Dataset.range(1, 4)
    b = tf.data.Dataset.range(4, 8)
    return {"v": [[int(x), int(y)] for x, y in tf.data.Dataset.zip((a, b))]}


def p_concatenate_repeat(tf):
    a = tf.data.Dataset.range(3)
    return {"cat": _list(a.concatenate(tf.data.Dataset.range(10, 12))), "rep": _list(a.repeat(2))}


def p_window(tf):
    ds = tf.data.Dataset.range(7).window(3, shift=2, drop_remainder=True)
    return {"v": [_list(w) for w in ds]}


def p_window_flat_map(tf):
    ds = (
        tf.data.Dataset.range(6)
        .window(2, shift=1, drop_remainder=True)
        .flat_map(lambda w: w.batch(2))
    )
    return {"v": _list(ds)}


def p_shuffle_set(tf):
    ds = tf.data.Dataset.range(10).shuffle(4, seed=7)
    return {"sorted": sorted(_list(ds)), "len": len(_list(ds))}


def p_dict_elements(tf):
    ds = tf.data.Dataset.from_tensor_slices({"a": [1, 2], "b": [[1.0, 2.0], [3.0, 4.0]]})
    return {"v": [{"a": int(e["a"]), "b": e["b"].numpy().tolist()} for e in ds]}


def p_tuple_features_labels(tf):
    feats = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    labels = [0, 1, 0]
    ds = tf.data.Dataset.from_tensor_slices((feats, labels)).batch(2)
    out = [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
    return {"v": [list(p) for p in out]}


def p_padded_batch(tf):
    ds = tf.data.Dataset.range(1, 5).map(lambda x: tf.fill([x], x)).padded_batch(2)
    return {"v": _list(ds)}


def p_enumerate_reduce(tf):
    ds = tf.data.Dataset.range(5, 8)
    return {
        "enum": [[int(i), int(x)] for i, x in ds.enumerate()],
        "reduce": ds.reduce(tf.constant(0, tf.int64), lambda s, x: s + x),
    }


def p_cardinality(tf):
    ds = tf.data.Dataset.range(10)
    return {
        "card": ds.cardinality(),
        "batched": ds.batch(3).cardinality(),
        "filtered": ds.filter(lambda x: x > 2).cardinality(),
        "len": len(ds),
    }


def p_unbatch_rebatch(tf):
    ds = tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4], [5, 6]]).unbatch().batch(4)
    return {"v": _list(ds)}


def p_map_tuple_args(tf):
    ds = tf.data.Dataset.from_tensor_slices(([1, 2], [10, 20])).map(lambda a, b: a + b)
    return {"v": _list(ds)}


def p_from_generator(tf):
    def gen():
        for i in range(4):
            yield i, [i] * i

    ds = tf.data.Dataset.from_generator(
        gen, output_signature=(tf.TensorSpec((), tf.int32), tf.TensorSpec((None,), tf.int32))
    )
    return {"v": [[int(a), b.numpy().tolist()] for a, b in ds]}


def p_prefetch_cache(tf):
    ds = tf.data.Dataset.range(4).map(lambda x: x + 1).cache().prefetch(tf.data.AUTOTUNE)
    return {"a": _list(ds), "b": _list(ds)}


def p_as_numpy_iterator(tf):
    ds = tf.data.Dataset.from_tensor_slices([1.5, 2.5])
    return {"v": [float(x) for x in ds.as_numpy_iterator()]}


def p_scan(tf):
    ds = tf.data.Dataset.range(5).scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s + x))
    return {"v": _list(ds)}


def p_interleave(tf):
    ds = tf.data.Dataset.range(1, 4).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(2), cycle_length=2, block_length=1
    )
    return {"v": _list(ds)}


def p_dataset_in_function(tf):
    @tf.function
    def total(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s

    return {"v": total(tf.data.Dataset.range(6))}


def p_fit_on_dataset(tf):
    import numpy as np

    m = tf.keras.Sequential([tf.keras.Input(shape=(1,)), tf.keras.layers.Dense(1)])
    m.set_weights([np.array([[0.5]], np.float32), np.array([0.0], np.float32)])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    x = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
    y = 2.0 * x
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)
    h = m.fit(ds, epochs=2, verbose=0)
    return {"loss": h.history["loss"], "w": m.layers[0].kernel}
