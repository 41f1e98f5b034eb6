"""Semantics ordinary TF 2 programs rely on, one program per behaviour, as users write them:
variable slices and names, silent conversions, custom gradients, gradients of where,
variables in functions, checkpoint matching and managers, corrupt files, Keras symbolic
attributes and training semantics, checkpointed iterators and checkpoint readers."""

import os
import tempfile

import numpy as np


def _raised(fn):
    try:
        fn()
    except Exception as e:  # the class is what is compared
        return type(e).__name__
    return None


def p_variable_slice_assignments(tf):
    v = tf.Variable([1.0, 2.0, 3.0, 4.0])
    v[1].assign(9.0)
    after_index = tf.identity(v)
    v[::2].assign([7.0, 8.0])
    after_step = tf.identity(v)
    m = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    m[1, 1:].assign([0.0, -1.0])
    m[:, 0].assign([10.0, 20.0])

    @tf.function
    def traced(value):
        v[-1].assign(value)

    traced(tf.constant(-5.0))
    return {"after_index": after_index, "after_step": after_step, "m": m, "v": v,
            "assign_add": _raised(lambda: v[1:3].assign_add([1.0, 1.0]))}


def p_eager_variable_names_repeat(tf):
    a = tf.Variable(1.0, name="b")
    b = tf.Variable(2.0, name="b")
    c = tf.Variable(3.0)
    d = tf.Variable(4.0)
    return {"names": [a.name, b.name, c.name, d.name]}


def p_numpy_and_list_operands_take_the_tensor_dtype(tf):
    x = tf.constant([1.0, 2.0])
    cases = {
        "tensor_plus_f64_array": x + np.array([0.5, 0.25]),
        "f64_array_plus_tensor": np.array([0.5, 0.25]) + x,
        "add_tensor_first": tf.add(x, np.array([0.5, 0.25])),
        "times_float_list": x * [2.5, 0.1],
        "f64_tensor_plus_list": tf.constant([1.0], tf.float64) + [2.0],
        "plus_int64_array": x + np.array([2, 3], np.int64),
        "int_tensor_plus_f64_array": tf.constant([1, 2]) + np.array([2.5, 0.5]),
    }
    out = {k: v for k, v in cases.items()}
    out.update({k + "_dtype": v.dtype.name for k, v in cases.items()})
    out["two_tensors"] = _raised(lambda: x + tf.constant([1.0, 2.0], tf.float64))
    out["int_plus_python_float"] = _raised(lambda: tf.constant([1]) + 1.5)
    return out


def p_custom_gradient_variable_argument(tf):
    @tf.custom_gradient
    def scale(v, x):
        def grad(upstream):
            return upstream * 10.0, upstream * -1.0

        return v * x, grad

    v = tf.Variable(2.0)
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scale(v, x)
    eager = tape.gradient(y, [v, x])

    @tf.function
    def traced(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = scale(v, x)
        return tape.gradient(y, [v, x])

    return {"y": y, "eager": eager, "traced": traced(x)}


def p_where_gradient_through_the_unselected_branch(tf):
    def grads(x):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            s = tf.where(x > 0, tf.sqrt(x), 0.0)
            lg = tf.where(x > 0, tf.math.log(x), 0.0)
            r = tf.where(x > 0, 1.0 / x, 0.0)
        return [tape.gradient(s, x), tape.gradient(lg, x), tape.gradient(r, x)]

    x = tf.constant([-1.0, 0.0, 4.0])
    return {"eager": grads(x), "traced": tf.function(grads)(x)}


def p_variables_created_on_the_first_call_only(tf):
    class Scale(tf.Module):
        def __init__(self):
            self.v = None

        @tf.function
        def __call__(self, x):
            if self.v is None:
                self.v = tf.Variable(2.0)
            return self.v * x

    m = Scale()

    @tf.function
    def every_call(x):
        return tf.Variable(1.0) * x

    return {"first": m(tf.constant(1.0)), "second": m(tf.constant(3.0)),
            "n_variables": len(m.trainable_variables),
            "every_call": _raised(lambda: every_call(tf.constant(2.0)))}


def p_checkpoint_matching_assertions(tf):
    d = tempfile.mkdtemp()
    path = tf.train.Checkpoint(a=tf.Variable(1.0), b=tf.Variable(2.0)).save(
        os.path.join(d, "ck"))
    a = tf.Variable(0.0)
    fewer = tf.train.Checkpoint(a=a).restore(path)
    c = tf.Variable(0.0)
    more = tf.train.Checkpoint(a=tf.Variable(0.0), b=tf.Variable(0.0), c=c).restore(path)
    none = tf.train.Checkpoint(a=tf.Variable(0.0)).restore(None)
    return {
        "a": a,
        "fewer_consumed": _raised(fewer.assert_consumed),
        "fewer_existing": _raised(fewer.assert_existing_objects_matched),
        "more_consumed": _raised(more.assert_consumed),
        "more_existing": _raised(more.assert_existing_objects_matched),
        "none_type": type(none).__name__,
        "none_consumed": _raised(none.assert_consumed),
        "none_existing": _raised(none.assert_existing_objects_matched),
    }


def p_checkpoint_manager_relative_directory(tf):
    old = os.getcwd()
    os.chdir(tempfile.mkdtemp())
    try:
        v = tf.Variable(1.0)
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), "./ckpt", max_to_keep=3)
        manager.save()
        v.assign(5.0)
        manager.save()
        # What the next run of the program does: new objects, the same relative directory.
        v2 = tf.Variable(0.0)
        ckpt2 = tf.train.Checkpoint(v=v2)
        manager2 = tf.train.CheckpointManager(ckpt2, "./ckpt", max_to_keep=3)
        latest = manager2.latest_checkpoint
        ckpt2.restore(manager2.latest_checkpoint)
        third = manager2.save()
        return {"latest": os.path.basename(latest), "restored": v2,
                "third": os.path.basename(third),
                "kept": [os.path.basename(p) for p in manager2.checkpoints]}
    finally:
        os.chdir(old)


def p_saturate_cast(tf):
    return {
        "uint8": tf.dtypes.saturate_cast(tf.constant([300.0, -5.0, 7.9]), tf.uint8),
        "int32": tf.dtypes.saturate_cast(tf.constant([3e9, -3e9, 1.5]), tf.int32),
        "int8_from_int32": tf.dtypes.saturate_cast(tf.constant([200, -200, 5]), tf.int8),
        "cast_wraps": tf.cast(tf.constant([300]), tf.uint8),
    }


def p_keras_symbolic_layer_attributes(tf):
    inputs = tf.keras.Input((3,), name="x")
    hidden = tf.keras.layers.Dense(2, name="hidden")
    out = tf.keras.layers.Dense(1, name="out")
    model = tf.keras.Model(inputs, out(hidden(inputs)))
    hidden.set_weights([np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]], np.float32),
                        np.array([0.5, -0.5], np.float32)])
    features = tf.keras.Model(inputs=model.input, outputs=model.layers[1].output)
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    return {
        "layer_input_shape": list(hidden.input.shape),
        "layer_output_shape": list(hidden.output.shape),
        "model_input_shape": list(model.input.shape),
        "model_output_shape": list(model.output.shape),
        "model_input_shape_attr": list(model.input_shape),
        "model_output_shape_attr": list(model.output_shape),
        "layer_names": [layer.name for layer in features.layers],
        "features": features(x),
        "same_input": model.layers[1].input is inputs,
    }


def p_keras_functional_subclass_with_train_step(tf):
    calls = []

    class CustomModel(tf.keras.Model):
        def train_step(self, data):
            calls.append(1)
            x, y = data
            with tf.GradientTape() as tape:
                pred = self(x, training=True)
                loss = tf.reduce_mean(tf.square(pred - y))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"my_loss": loss}

    inputs = tf.keras.Input((1,))
    dense = tf.keras.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros")
    model = CustomModel(inputs, dense(inputs))
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1))
    x = np.array([[1.0], [2.0]], np.float32)
    y = np.array([[2.0], [4.0]], np.float32)
    history = model.fit(x, y, batch_size=2, epochs=2, verbose=0)
    return {"type": type(model).__name__, "keys": sorted(history.history),
            "loss": history.history["my_loss"], "kernel": dense.kernel,
            "train_steps_traced_or_run": len(calls) > 0}


def p_keras_rnn_unknown_time_dimension(tf):
    inputs = tf.keras.Input(shape=(None, 2))
    rnn = tf.keras.layers.SimpleRNN(2)
    model = tf.keras.Model(inputs, rnn(inputs))
    rnn.set_weights([np.array([[0.5, -0.5], [0.25, 0.75]], np.float32),
                     np.array([[0.1, 0.2], [-0.3, 0.4]], np.float32),
                     np.array([0.0, 0.1], np.float32)])
    short = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 4, 2)
    long = np.linspace(-1, 1, 12, dtype=np.float32).reshape(1, 6, 2)
    return {"input_shape": list(model.input.shape), "short": model(short),
            "long": model(long)}


def p_keras_callback_logs(tf):
    seen = []

    class Record(tf.keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            seen.append(("train_begin", type(logs).__name__, sorted(logs or {})))

        def on_epoch_begin(self, epoch, logs=None):
            seen.append(("epoch_begin", type(logs).__name__, sorted(logs or {})))

        def on_train_batch_begin(self, batch, logs=None):
            seen.append(("batch_begin", type(logs).__name__, sorted(logs or {})))

        def on_epoch_end(self, epoch, logs=None):
            seen.append(("epoch_end", type(logs).__name__, sorted(logs or {})))

    model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((2, 1), np.float32), np.ones((2, 1), np.float32), batch_size=2,
              epochs=1, verbose=0, callbacks=[Record()])
    return {"seen": [list(s) for s in seen]}


def p_keras_fit_steps_per_epoch_past_the_data(tf):
    ds = tf.data.Dataset.from_tensor_slices(
        (np.ones((4, 1), np.float32), np.ones((4, 1), np.float32))).batch(2)
    model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(
        1, kernel_initializer="zeros", bias_initializer="zeros")])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(ds, epochs=3, steps_per_epoch=5, verbose=0)
    return {"epochs_run": len(history.history["loss"]),
            "iterations": int(model.optimizer.iterations.numpy())}


def p_keras_random_and_loss_scale_optimizer(tf):
    keras = tf.keras
    normal = keras.random.normal((200, 50), seed=1)
    uniform = keras.random.uniform((3, 4), minval=2.0, maxval=3.0, seed=2)
    backend_normal = keras.backend.random_normal((2, 3), seed=1)
    w = tf.Variable(1.0)
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1))
    with tf.GradientTape() as tape:
        loss = w * w
        scaled = opt.scale_loss(loss)
    grads = tape.gradient(scaled, [w])
    opt.apply_gradients(zip(grads, [w]))
    return {"normal_shape": list(normal.shape), "normal_dtype": normal.dtype.name
            if hasattr(normal.dtype, "name") else str(normal.dtype),
            "normal_mean_small": bool(abs(float(np.mean(normal))) < 0.05),
            "normal_std_near_1": bool(abs(float(np.std(normal)) - 1.0) < 0.05),
            "uniform_in_range": bool(np.all((np.asarray(uniform) >= 2.0)
                                            & (np.asarray(uniform) < 3.0))),
            "backend_normal_shape": list(backend_normal.shape),
            "backend_normal_dtype": backend_normal.dtype.name,
            "w": w}


def p_checkpoint_saves_iterator_position(tf):
    d = tempfile.mkdtemp()
    it = iter(tf.data.Dataset.range(10))
    taken = [int(next(it)) for _ in range(3)]
    ckpt = tf.train.Checkpoint(iterator=it)
    path = ckpt.save(os.path.join(d, "it"))
    ahead = [int(next(it)) for _ in range(2)]
    ckpt.restore(path)
    return {"taken": taken, "ahead": ahead, "after_restore": [int(next(it)) for _ in range(3)]}


def p_checkpoint_reader_functions(tf):
    d = tempfile.mkdtemp()
    path = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0]), w=tf.Variable([[3]])).save(
        os.path.join(d, "ck"))
    listed = [(name, shape) for name, shape in tf.train.list_variables(path)
              if not name.startswith("_CHECKPOINTABLE")]
    reader = tf.train.load_checkpoint(path)
    return {"listed": [[n, list(s)] for n, s in sorted(listed)],
            "v": reader.get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE"),
            "w": reader.get_tensor("w/.ATTRIBUTES/VARIABLE_VALUE"),
            "from_directory": sorted(n for n, _ in tf.train.list_variables(d)
                                     if not n.startswith("_CHECKPOINTABLE"))}


def p_checkpoint_restore_through_lists_and_dicts(tf):
    d = tempfile.mkdtemp()
    layers = [tf.Variable(1.0), tf.Variable([2.0, 3.0])]
    table = {"alpha": tf.Variable(4.0), "beta": [tf.Variable(5.0)]}
    path = tf.train.Checkpoint(layers=layers, table=table).save(os.path.join(d, "ck"))
    new_layers = [tf.Variable(0.0), tf.Variable([0.0, 0.0])]
    new_table = {"alpha": tf.Variable(0.0), "beta": [tf.Variable(0.0)]}
    status = tf.train.Checkpoint(layers=new_layers, table=new_table).restore(path)
    keys = sorted(n for n, _ in tf.train.list_variables(path)
                  if not n.startswith("_CHECKPOINTABLE"))
    return {"layers": new_layers, "alpha": new_table["alpha"], "keys": keys,
            "beta": new_table["beta"][0], "consumed": _raised(status.assert_consumed)}


def p_silent_conversions_and_formatting(tf):
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        tape.watch(v)
    same = tape.gradient(v, v)

    @tf.function
    def returns_python():
        return 2.5

    lin = tf.linspace(-2, 2, 201)
    return {
        "linspace_dtype": lin.dtype.name, "linspace_ends": [lin[0], lin[-1], lin[100]],
        "one_over_variable": 1 / tf.Variable(2.0),
        "maximum_mixed": tf.maximum(0., [1, -1]),
        "to_categorical_float": tf.keras.utils.to_categorical(np.array([0.0, 2.0, 1.0]), 3),
        "tf_one_hot_float": _raised(lambda: tf.one_hot(tf.constant([1.0]), 3)),
        "repr_int": repr(tf.constant([1, 2, 3])),
        "repr_scalar": repr(tf.constant(3.5)),
        "format_scalar": f"{tf.constant(3.5)}",
        "format_vector": f"{tf.constant([1, 2])}",
        "str_vector": str(tf.constant([1.5, 2.0])),
        "returns_python": returns_python(),
        "returns_python_dtype": returns_python().dtype.name,
        "gradient_of_itself": same,
    }


def _values(it):
    return [x.numpy().tolist() for x in it]


def p_checkpoint_iterator_shuffle_repeat_batch_new_checkpoint(tf):
    # Shuffle orders are framework-specific: compared as sets and as "continues exactly".
    d = tempfile.mkdtemp()

    def make():
        return tf.data.Dataset.range(20).shuffle(8, seed=7).repeat(2).batch(3)

    it = iter(make())
    head = [next(it).numpy().tolist() for _ in range(4)]
    path = tf.train.Checkpoint(step=tf.Variable(4), iterator=it).save(os.path.join(d, "s"))
    rest = _values(it)
    it2 = iter(make())
    step = tf.Variable(0)
    tf.train.Checkpoint(step=step, iterator=it2).restore(path)
    rest2 = _values(it2)
    flat = sorted(v for b in head + rest2 for v in b)
    return {"continues_exactly": rest2 == rest, "sizes": [len(b) for b in rest2],
            "all_elements": flat, "step": step}


def p_checkpoint_iterator_map_filter_batch_manager(tf):
    d = tempfile.mkdtemp()

    def make():
        return tf.data.Dataset.range(30).map(lambda x: x * 3).filter(
            lambda x: x % 2 == 0).batch(4)

    it = iter(make())
    head = [next(it).numpy().tolist() for _ in range(2)]
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(iterator=it), d, max_to_keep=1)
    manager.save()
    ahead = next(it).numpy().tolist()
    it2 = iter(make())
    tf.train.Checkpoint(iterator=it2).restore(manager.latest_checkpoint)
    return {"head": head, "ahead": ahead, "restored": _values(it2)}


def p_checkpoint_iterator_shuffle_next_epoch(tf):
    # A restored pipeline's later passes continue the sequence of shuffle orders.
    d = tempfile.mkdtemp()

    def make():
        return tf.data.Dataset.range(12).shuffle(12, seed=5)

    ds = make()
    first = _values(ds)
    it = iter(ds)
    head = [int(next(it)) for _ in range(5)]
    path = tf.train.Checkpoint(iterator=it).save(os.path.join(d, "e"))
    rest = _values(it)
    third = _values(ds)
    ds2 = make()
    it2 = iter(ds2)
    tf.train.Checkpoint(iterator=it2).restore(path)
    return {"continues_exactly": _values(it2) == rest, "next_pass_same": _values(ds2) == third,
            "passes_differ": first != head + rest, "sets": [sorted(first), sorted(head + rest)]}


def p_checkpoint_iterator_interleave_zip_prefetch(tf):
    d = tempfile.mkdtemp()

    def make():
        inner = tf.data.Dataset.range(1, 6).interleave(
            lambda x: tf.data.Dataset.range(x).map(lambda y: y * 10 + x),
            cycle_length=2, block_length=2)
        return tf.data.Dataset.zip((inner, tf.data.Dataset.range(100).skip(3))).prefetch(2)

    it = iter(make())
    head = [[int(a), int(b)] for a, b in (next(it) for _ in range(6))]
    path = tf.train.Checkpoint(iterator=it).save(os.path.join(d, "i"))
    it2 = iter(make())
    tf.train.Checkpoint(iterator=it2).restore(path)
    return {"head": head, "restored": [[int(a), int(b)] for a, b in it2]}


def p_checkpoint_iterator_text_lines_take_skip(tf):
    d = tempfile.mkdtemp()
    files = []
    for i in range(2):
        files.append(os.path.join(d, "f%d.txt" % i))
        with open(files[-1], "w") as f:
            f.write("".join("file%d line%d\n" % (i, j) for j in range(4)))

    def make():
        return tf.data.TextLineDataset(files).skip(1).take(6)

    it = iter(make())
    head = [next(it).numpy() for _ in range(3)]
    path = tf.train.Checkpoint(iterator=it).save(os.path.join(d, "t"))
    it2 = iter(make())
    tf.train.Checkpoint(iterator=it2).restore(path)
    return {"head": [h.decode() for h in head],
            "restored": [x.numpy().decode() for x in it2]}


def p_checkpoint_iterator_exhausted_and_errors(tf):
    d = tempfile.mkdtemp()
    it = iter(tf.data.Dataset.range(3).map(lambda x: x + 1))
    values = [int(x) for x in it]
    path = tf.train.Checkpoint(iterator=it).save(os.path.join(d, "x"))
    it2 = iter(tf.data.Dataset.range(3).map(lambda x: x + 1))
    tf.train.Checkpoint(iterator=it2).restore(path)

    def gen():
        yield from range(3)

    git = iter(tf.data.Dataset.from_generator(
        gen, output_signature=tf.TensorSpec([], tf.int64)))
    next(git)
    other = iter(tf.data.Dataset.range(3).batch(2))
    return {"values": values, "after_restore": _raised(lambda: next(it2)),
            "from_generator": _raised(
                lambda: tf.train.Checkpoint(iterator=git).save(os.path.join(d, "g"))),
            "other_pipeline": _raised(
                lambda: tf.train.Checkpoint(iterator=other).restore(path))}


def p_checkpoint_iterator_tutorial_pipeline_with_cache(tf):
    # The input pipeline of TF's tutorials: cache, shuffle, batch, prefetch (AUTOTUNE),
    # saved in the second epoch (the cache is being read) and restored in a new pipeline.
    d = tempfile.mkdtemp()
    x = np.arange(24, dtype=np.float32).reshape(12, 2)
    y = np.arange(12, dtype=np.int64)

    def make():
        return (tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 2.0, b))
                .cache().shuffle(5, seed=11).repeat(2).batch(4)
                .prefetch(tf.data.AUTOTUNE))

    it = iter(make())
    head = [next(it) for _ in range(4)]
    path = tf.train.Checkpoint(iterator=it).save(os.path.join(d, "c"))
    rest = [(a.numpy().tolist(), b.numpy().tolist()) for a, b in it]
    it2 = iter(make())
    tf.train.Checkpoint(iterator=it2).restore(path)
    rest2 = [(a.numpy().tolist(), b.numpy().tolist()) for a, b in it2]
    labels = sorted(v for _, b in head for v in b.numpy().tolist()) + sorted(
        v for _, b in rest2 for v in b)
    return {"continues_exactly": rest2 == rest, "batches_left": len(rest2),
            "labels_seen": sorted(labels),
            "features_match_labels": all(a[0] == [4.0 * v, 4.0 * v + 2.0]
                                         for a_list, b_list in rest2
                                         for a, v in [(a_list, b_list[0])])}


def p_checkpoint_iterator_window_padded_unbatch(tf):
    d = tempfile.mkdtemp()

    def make():
        windows = tf.data.Dataset.range(10).window(3, shift=2).flat_map(lambda w: w.batch(3))
        return windows.padded_batch(2, padded_shapes=[4], padding_values=np.int64(-1)).unbatch()

    it = iter(make())
    head = [next(it).numpy().tolist() for _ in range(3)]
    path = tf.train.Checkpoint(iterator=it).save(os.path.join(d, "w"))
    it2 = iter(make())
    tf.train.Checkpoint(iterator=it2).restore(path)
    return {"head": head, "restored": _values(it2)}


def p_checkpoint_iterator_stateful_map_policy(tf):
    d = tempfile.mkdtemp()
    ds = tf.data.Dataset.range(6).map(
        lambda x: x + tf.cast(tf.random.uniform([], 0, 2, tf.int32), tf.int64) * 0)
    it = iter(ds)
    next(it)
    refused = _raised(lambda: tf.train.Checkpoint(iterator=it).save(os.path.join(d, "r")))
    options = tf.data.Options()
    options.experimental_external_state_policy = (
        tf.data.experimental.ExternalStatePolicy.IGNORE)
    ds = ds.with_options(options)
    it = iter(ds)
    next(it)
    next(it)
    path = tf.train.Checkpoint(iterator=it).save(os.path.join(d, "i"))
    it2 = iter(ds)
    tf.train.Checkpoint(iterator=it2).restore(path)
    return {"default_policy": refused, "ignored": _values(it2)}


def p_checkpoint_iterator_shuffle_order_drawn_at_iter(tf):
    # Each iter() takes the next shuffle order when it is made, not when first read.
    def make():
        return tf.data.Dataset.range(8).shuffle(8, seed=1)

    ds = make()
    passes = [_values(ds), _values(ds)]
    ds = make()
    it1, it2 = iter(ds), iter(ds)
    second = _values(it2)
    first = _values(it1)
    return {"first_is_pass_0": first == passes[0], "second_is_pass_1": second == passes[1],
            "passes_differ": passes[0] != passes[1]}


def p_generator_checkpoint_and_numpy_function_strings(tf):
    g = tf.random.Generator.from_seed(1)
    ckpt = tf.train.Checkpoint(generator=g)
    with tempfile.TemporaryDirectory() as d:
        g.normal([])
        path = ckpt.save(os.path.join(d, "ckpt"))
        want = g.normal([3])
        g.normal([5])
        ckpt.restore(path)
        again = g.normal([3])
        names = sorted(n for n, _ in tf.train.list_variables(path) if n.endswith("VALUE"))
    lengths = tf.data.Dataset.from_tensor_slices(["a", "bcd"]).map(
        lambda s: tf.numpy_function(lambda b: np.int64(len(b.decode())), [s], tf.int64))
    return {"same_after_restore": bool((want == again).numpy().all()), "names": names,
            "lengths": [int(x) for x in lengths]}


def p_debugging_assert_scalar_and_integer(tf):
    def raised(fn):
        try:
            fn()
        except Exception as e:  # the class is what is compared
            return type(e).__name__
        return None

    return {"scalar_ok": tf.debugging.assert_scalar(tf.constant(3)),
            "scalar_bad": raised(lambda: tf.debugging.assert_scalar(tf.constant([3]))),
            "integer_bad": raised(lambda: tf.debugging.assert_integer(tf.constant(1.0))),
            "integer_ok": raised(lambda: tf.debugging.assert_integer(tf.constant(1)))}
