"""Checkpoints and SavedModel round trips, as the checkpoint and saved_model guides write them."""

import os
import tempfile


def p_checkpoint_save_restore(tf):
    d = tempfile.mkdtemp()
    v = tf.Variable([1.0, 2.0])
    ckpt = tf.train.Checkpoint(v=v)
    path = ckpt.save(os.path.join(d, "ckpt"))
    v.assign([5.0, 6.0])
    ckpt.restore(path)
    return {"v": v, "basename": os.path.basename(path)}


def p_checkpoint_manager(tf):
    d = tempfile.mkdtemp()
    step = tf.Variable(0)
    ckpt = tf.train.Checkpoint(step=step)
    mgr = tf.train.CheckpointManager(ckpt, d, max_to_keep=2)
    for _ in range(4):
        step.assign_add(1)
        mgr.save()
    step.assign(100)
    ckpt.restore(mgr.latest_checkpoint)
    return {
        "step": step,
        "n_kept": len(mgr.checkpoints),
        "latest": os.path.basename(mgr.latest_checkpoint),
    }


def p_checkpoint_module_tree(tf):
    d = tempfile.mkdtemp()

    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([[1.0, 2.0]])
            self.b = tf.Variable([0.5])

    net = Net()
    path = tf.train.Checkpoint(model=net).save(os.path.join(d, "c"))
    net2 = Net()
    net2.w.assign([[0.0, 0.0]])
    net2.b.assign([0.0])
    tf.train.Checkpoint(model=net2).restore(path).assert_consumed()
    return {"w": net2.w, "b": net2.b}


def p_checkpoint_keras_optimizer(tf):
    import numpy as np

    d = tempfile.mkdtemp()
    m = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
    m.set_weights([np.array([[1.0], [2.0]], np.float32), np.array([0.0], np.float32)])
    opt = tf.keras.optimizers.Adam(0.1)
    x = np.ones((1, 2), np.float32)
    with tf.GradientTape() as t:
        loss = tf.reduce_sum(m(x))
    opt.apply_gradients(zip(t.gradient(loss, m.trainable_variables), m.trainable_variables))
    path = tf.train.Checkpoint(model=m, optimizer=opt).save(os.path.join(d, "c"))
    saved = m.get_weights()
    m.set_weights([np.zeros_like(w) for w in saved])
    tf.train.Checkpoint(model=m, optimizer=opt).restore(path)
    return {"kernel": m.get_weights()[0], "iters": int(opt.iterations.numpy())}


def p_latest_checkpoint(tf):
    d = tempfile.mkdtemp()
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    ckpt.save(os.path.join(d, "a"))
    p2 = ckpt.save(os.path.join(d, "a"))
    return {"same": tf.train.latest_checkpoint(d) == p2, "name": os.path.basename(p2)}


def p_checkpoint_read_write(tf):
    d = tempfile.mkdtemp()
    v = tf.Variable(3.0)
    ckpt = tf.train.Checkpoint(v=v)
    path = ckpt.write(os.path.join(d, "w"))
    v.assign(0.0)
    ckpt.read(path)
    return {"v": v}


def p_checkpoint_restore_missing_raises(tf):
    d = tempfile.mkdtemp()
    try:
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(
            os.path.join(d, "nothing-1")
        ).assert_consumed()
    except Exception as e:
        return {"raised": type(e).__name__}
    return {"raised": None}


def p_saved_model_module(tf):
    d = tempfile.mkdtemp()

    class Adder(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(10.0)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return x + self.v

    m = Adder()
    tf.saved_model.save(m, d)
    loaded = tf.saved_model.load(d)
    return {"out": loaded(tf.constant([1.0, 2.0])), "v": loaded.v}


def p_saved_model_signature(tf):
    d = tempfile.mkdtemp()

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
        def serve(self, x):
            return {"y": tf.reduce_sum(x, axis=1)}

    m = M()
    tf.saved_model.save(m, d, signatures={"serving_default": m.serve})
    loaded = tf.saved_model.load(d)
    sig = loaded.signatures["serving_default"]
    return {
        "keys": sorted(loaded.signatures.keys()),
        "out": sig(x=tf.constant([[1.0, 2.0], [3.0, 4.0]]))["y"],
    }


def p_saved_model_variables_restored(tf):
    d = tempfile.mkdtemp()

    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([[1.0], [2.0]])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def predict(self, x):
            return x @ self.w

    m = M()
    m.w.assign([[3.0], [-1.0]])
    tf.saved_model.save(m, d)
    loaded = tf.saved_model.load(d)
    return {"pred": loaded.predict(tf.constant([[1.0, 1.0]])), "w": loaded.w}


def p_saved_model_multiple_functions(tf):
    d = tempfile.mkdtemp()

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
        def double(self, x):
            return x * 2

        @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
        def square(self, x):
            return x * x

    tf.saved_model.save(M(), d)
    loaded = tf.saved_model.load(d)
    return {"d": loaded.double(tf.constant(4)), "s": loaded.square(tf.constant(4))}


def p_saved_model_signature_positional(tf):
    d = tempfile.mkdtemp()

    class M(tf.Module):
        def __init__(self):
            self.v = tf.Variable(3.0)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def serve(self, x):
            return {"y": x * self.v}

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def set_v(self, x):
            self.v.assign(x)
            return {}

    m = M()
    tf.saved_model.save(m, d, signatures={"serving_default": m.serve, "set_v": m.set_v})
    loaded = tf.saved_model.load(d)
    sig = loaded.signatures["serving_default"]
    positional = sig(tf.constant([1.0, 2.0]))["y"]
    emptied = loaded.signatures["set_v"](tf.constant(5.0))
    return {
        "positional": positional,
        "keyword": sig(x=tf.constant([1.0, 2.0]))["y"],
        "empty_outputs": sorted(emptied.keys()),
        "empty_structured": sorted(loaded.signatures["set_v"].structured_outputs.keys()),
        "after_set": sig(x=tf.constant([1.0]))["y"],
    }


def p_keras_model_export(tf):
    import numpy as np

    d = os.path.join(tempfile.mkdtemp(), "exported")
    inputs = tf.keras.Input((2,), name="feat")
    outputs = tf.keras.layers.Dense(1)(inputs)
    model = tf.keras.Model(inputs, outputs)
    model.set_weights([np.array([[0.5], [-1.0]], np.float32), np.array([0.25], np.float32)])
    model.export(d, verbose=False)
    loaded = tf.saved_model.load(d)
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    sig = loaded.signatures["serving_default"]
    return {
        "serve": loaded.serve(x),
        "signatures": sorted(loaded.signatures.keys()),
        "sig_inputs": sorted(sig.structured_input_signature[1].keys()),
        "sig_outputs": sorted(sig.structured_outputs.keys()),
        "sig": sig(feat=x)["output_0"],
        "n_variables": len(loaded.variables),
        "n_trainable": len(loaded.trainable_variables),
    }


def p_saved_model_custom_gradient(tf):
    # The custom rule (0.5 * x), not the derivative of x**3, survives the round trip.
    d = tempfile.mkdtemp()

    @tf.custom_gradient
    def cube_with_rule(x):
        def grad(upstream):
            return upstream * 0.5 * x

        return x * x * x, grad

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([3], tf.float32)])
        def f(self, x):
            return tf.reduce_sum(cube_with_rule(x))

    m = M()
    x = tf.constant([3.0, -1.2, -9.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = m.f(x)
    before = tape.gradient(y, x)
    tf.saved_model.save(m, d)
    loaded = tf.saved_model.load(d)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loaded.f(x)
    after = tape.gradient(y, x)

    @tf.function
    def traced_gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = loaded.f(x)
        return tape.gradient(y, x)

    return {"before": before, "after": after, "traced": traced_gradient(x),
            "value": loaded.f(x)}


def p_saved_model_custom_gradient_variable(tf):
    # A rule for a variable the function reads (grad_fn(variables=...)), after loading.
    d = tempfile.mkdtemp()

    class M(tf.Module):
        def __init__(self):
            self.w = tf.Variable(2.0)

        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(self, x):
            @tf.custom_gradient
            def scale(x):
                def grad(upstream, variables=None):
                    return upstream * 10.0, [tf.reduce_sum(upstream) * -1.0]

                return x * self.w, grad

            return tf.reduce_sum(scale(x))

    tf.saved_model.save(M(), d)
    loaded = tf.saved_model.load(d)
    x = tf.constant([1.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loaded.f(x)
    gx, gw = tape.gradient(y, [x, loaded.w])
    return {"y": y, "gx": gx, "gw": gw}
