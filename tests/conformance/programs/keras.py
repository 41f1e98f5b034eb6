"""Keras models, layers, losses, metrics and optimizers with fixed weights."""

import numpy as np


def _fixed(shape, scale=0.1):
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float32).reshape(shape) - n / 2.0) * scale


def _set_fixed(model):
    model.set_weights([_fixed(w.shape) for w in model.get_weights()])


def p_sequential_params(tf):
    m = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(4,)),
            tf.keras.layers.Dense(8, activation="relu"),
            tf.keras.layers.Dense(3),
        ]
    )
    return {
        "params": m.count_params(),
        "out_shape": list(m.output_shape),
        "n_layers": len(m.layers),
        "n_weights": len(m.weights),
    }


def p_functional_params(tf):
    inp = tf.keras.Input(shape=(10,))
    h = tf.keras.layers.Dense(16, activation="relu")(inp)
    a = tf.keras.layers.Dense(4)(h)
    b = tf.keras.layers.Dense(2)(h)
    out = tf.keras.layers.Concatenate()([a, b])
    m = tf.keras.Model(inp, out)
    return {"params": m.count_params(), "out_shape": list(m.output_shape)}


def p_dense_fixed_output(tf):
    layer = tf.keras.layers.Dense(2, activation="tanh")
    layer.build((None, 3))
    layer.set_weights([_fixed((3, 2)), np.array([0.1, -0.1], np.float32)])
    return {"out": layer(np.array([[1.0, 2.0, 3.0]], np.float32))}


def p_sequential_fixed_predict(tf):
    m = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(3,)),
            tf.keras.layers.Dense(4, activation="relu"),
            tf.keras.layers.Dense(1),
        ]
    )
    _set_fixed(m)
    x = np.array([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]], np.float32)
    return {"call": m(x), "predict": m.predict(x, verbose=0)}


def p_conv2d_shapes(tf):
    m = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(28, 28, 1)),
            tf.keras.layers.Conv2D(8, 3, activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(4, 3, padding="same", strides=2),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(10),
        ]
    )
    return {
        "params": m.count_params(),
        "shapes": [list(layer.output.shape[1:]) for layer in m.layers],
    }


def p_conv2d_fixed_output(tf):
    layer = tf.keras.layers.Conv2D(2, 2)
    layer.build((None, 3, 3, 1))
    layer.set_weights([_fixed((2, 2, 1, 2)), np.zeros(2, np.float32)])
    x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    return {"out": layer(x)}


def p_embedding_lstm_shapes(tf):
    m = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(7,)),
            tf.keras.layers.Embedding(100, 8),
            tf.keras.layers.LSTM(5),
            tf.keras.layers.Dense(1),
        ]
    )
    return {"params": m.count_params(), "out": list(m.output_shape)}


def p_gru_simple_rnn_params(tf):
    a = tf.keras.Sequential([tf.keras.Input(shape=(4, 3)), tf.keras.layers.GRU(6)])
    b = tf.keras.Sequential(
        [tf.keras.Input(shape=(4, 3)), tf.keras.layers.SimpleRNN(6, return_sequences=True)]
    )
    return {"gru": a.count_params(), "rnn": b.count_params(), "rnn_out": list(b.output_shape)}


def p_batchnorm_inference(tf):
    layer = tf.keras.layers.BatchNormalization()
    layer.build((None, 2))
    layer.set_weights(
        [
            np.array([2.0, 1.0], np.float32),
            np.array([0.5, 0.0], np.float32),
            np.array([1.0, -1.0], np.float32),
            np.array([4.0, 1.0], np.float32),
        ]
    )
    x = np.array([[3.0, 1.0]], np.float32)
    return {"infer": layer(x, training=False), "n_trainable": len(layer.trainable_weights)}


def p_layernorm(tf):
    layer = tf.keras.layers.LayerNormalization()
    return {"out": layer(np.array([[1.0, 2.0, 3.0, 6.0]], np.float32))}


def p_dropout_inference_identity(tf):
    layer = tf.keras.layers.Dropout(0.5)
    x = np.ones((2, 3), np.float32)
    return {"out": layer(x, training=False)}


def p_activation_layers(tf):
    x = np.array([[-1.0, 0.0, 2.0]], np.float32)
    return {
        "relu": tf.keras.layers.ReLU()(x),
        "softmax": tf.keras.layers.Softmax()(x),
        "sig": tf.keras.activations.sigmoid(x),
        "gelu": tf.keras.activations.gelu(x, approximate=False),
    }


def p_pooling_layers(tf):
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    return {
        "max": tf.keras.layers.MaxPooling2D(2)(x),
        "avg": tf.keras.layers.AveragePooling2D(2)(x),
        "gap": tf.keras.layers.GlobalAveragePooling2D()(x),
    }


def p_loss_mse_mae(tf):
    yt = np.array([[0.0, 1.0], [0.0, 0.0]], np.float32)
    yp = np.array([[1.0, 1.0], [1.0, 0.0]], np.float32)
    return {
        "mse": tf.keras.losses.MeanSquaredError()(yt, yp),
        "mae": tf.keras.losses.MeanAbsoluteError()(yt, yp),
        "huber": tf.keras.losses.Huber()(yt, yp),
    }


def p_loss_crossentropy(tf):
    yt = np.array([1, 2])
    yp = np.array([[0.05, 0.95, 0.0], [0.1, 0.8, 0.1]], np.float32)
    yt_oh = np.array([[0, 1, 0], [0, 0, 1]], np.float32)
    return {
        "scce": tf.keras.losses.SparseCategoricalCrossentropy()(yt, yp),
        "cce": tf.keras.losses.CategoricalCrossentropy()(yt_oh, yp),
        "scce_logits": tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(yt, yp),
    }


def p_loss_binary_crossentropy(tf):
    yt = np.array([[0.0, 1.0], [0.0, 0.0]], np.float32)
    yp = np.array([[0.6, 0.4], [0.4, 0.6]], np.float32)
    return {
        "bce": tf.keras.losses.BinaryCrossentropy()(yt, yp),
        "bce_logits": tf.keras.losses.BinaryCrossentropy(from_logits=True)(yt, yp),
        "none": tf.keras.losses.BinaryCrossentropy(reduction=None)(yt, yp),
    }


def p_loss_sample_weight(tf):
    yt = np.array([[0.0, 1.0], [0.0, 0.0]], np.float32)
    yp = np.array([[1.0, 1.0], [1.0, 0.0]], np.float32)
    return {
        "mse_w": tf.keras.losses.MeanSquaredError()(
            yt, yp, sample_weight=np.array([0.7, 0.3], np.float32)
        )
    }


def p_metrics_accuracy(tf):
    m = tf.keras.metrics.Accuracy()
    m.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]])
    s = tf.keras.metrics.SparseCategoricalAccuracy()
    s.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]])
    b = tf.keras.metrics.BinaryAccuracy()
    b.update_state([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]])
    return {"acc": m.result(), "sparse": s.result(), "binary": b.result()}


def p_metrics_mean_reset(tf):
    m = tf.keras.metrics.Mean()
    m.update_state([1.0, 3.0, 5.0, 7.0])
    r1 = float(m.result())
    m.reset_state()
    m.update_state([2.0])
    return {"r1": r1, "r2": m.result()}


def p_metrics_auc_precision(tf):
    p = tf.keras.metrics.Precision()
    p.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    r = tf.keras.metrics.Recall()
    r.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    return {"precision": p.result(), "recall": r.result()}


def p_sgd_first_step(tf):
    w = tf.Variable([1.0, -2.0])
    opt = tf.keras.optimizers.SGD(learning_rate=0.1)
    with tf.GradientTape() as t:
        loss = tf.reduce_sum(w**2)
    opt.apply_gradients(zip(t.gradient(loss, [w]), [w]))
    return {"w": w}


def p_sgd_momentum_steps(tf):
    w = tf.Variable([1.0, -2.0])
    opt = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=False)
    for _ in range(3):
        with tf.GradientTape() as t:
            loss = tf.reduce_sum(w**2)
        opt.apply_gradients(zip(t.gradient(loss, [w]), [w]))
    return {"w": w, "iterations": int(opt.iterations.numpy())}


def p_adam_steps(tf):
    w = tf.Variable([1.0, -2.0, 0.5])
    opt = tf.keras.optimizers.Adam(learning_rate=0.01)
    for _ in range(3):
        with tf.GradientTape() as t:
            loss = tf.reduce_sum(w**3)
        opt.apply_gradients(zip(t.gradient(loss, [w]), [w]))
    return {"w": w}


def p_rmsprop_adagrad_steps(tf):
    out = {}
    for name, opt in [
        ("rms", tf.keras.optimizers.RMSprop(0.01)),
        ("adagrad", tf.keras.optimizers.Adagrad(0.1)),
    ]:
        w = tf.Variable([1.0, -2.0])
        for _ in range(2):
            with tf.GradientTape() as t:
                loss = tf.reduce_sum(w**2)
            opt.apply_gradients(zip(t.gradient(loss, [w]), [w]))
        out[name] = w.numpy()
    return out


def p_fit_sgd_tiny_model(tf):
    m = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
    m.set_weights([np.array([[0.5], [-0.5]], np.float32), np.array([0.1], np.float32)])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    x = np.array([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0], [1.0, 1.0]], np.float32)
    y = np.array([[1.0], [2.0], [0.0], [1.0]], np.float32)
    h = m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    return {
        "loss": h.history["loss"],
        "kernel": m.layers[0].kernel,
        "bias": m.layers[0].bias,
        "eval": m.evaluate(x, y, verbose=0),
    }


def p_fit_adam_with_metrics(tf):
    m = tf.keras.Sequential(
        [tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(2, activation="softmax")]
    )
    m.set_weights([np.array([[0.5, -0.2], [-0.5, 0.3]], np.float32), np.zeros(2, np.float32)])
    m.compile(
        optimizer=tf.keras.optimizers.Adam(0.05),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    x = np.array([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0], [1.0, -1.0]], np.float32)
    y = np.array([0, 1, 1, 0])
    h = m.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
    return {"loss": h.history["loss"], "acc": h.history["accuracy"], "kernel": m.layers[0].kernel}


def p_custom_training_loop(tf):
    m = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
    m.set_weights([np.array([[0.2], [0.3]], np.float32), np.array([0.0], np.float32)])
    opt = tf.keras.optimizers.SGD(0.05)
    loss_fn = tf.keras.losses.MeanSquaredError()
    x = np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)
    y = np.array([[1.0], [0.0]], np.float32)
    losses = []
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, m(x, training=True))
        grads = tape.gradient(loss, m.trainable_variables)
        opt.apply_gradients(zip(grads, m.trainable_variables))
        losses.append(float(loss))
    return {"losses": losses, "kernel": m.trainable_variables[0]}


def p_subclassed_model(tf):
    class MyModel(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.d1 = tf.keras.layers.Dense(3, activation="relu")
            self.d2 = tf.keras.layers.Dense(1)

        def call(self, x):
            return self.d2(self.d1(x))

    m = MyModel()
    out = m(np.ones((2, 4), np.float32))
    return {
        "out_shape": out.shape.as_list() if hasattr(out.shape, "as_list") else list(out.shape),
        "n_weights": len(m.trainable_weights),
        "params": m.count_params(),
    }


def p_custom_layer_add_weight(tf):
    class Linear(tf.keras.layers.Layer):
        def __init__(self, units):
            super().__init__()
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones")
            self.b = self.add_weight(shape=(self.units,), initializer="zeros")

        def call(self, x):
            return x @ self.w + self.b

    layer = Linear(2)
    return {"out": layer(np.array([[1.0, 2.0]], np.float32)), "n": len(layer.weights)}


def p_initializers_constant(tf):
    layer = tf.keras.layers.Dense(
        2, kernel_initializer=tf.keras.initializers.Constant(0.5), bias_initializer="ones"
    )
    return {"out": layer(np.array([[1.0, 2.0]], np.float32))}


def p_glorot_seeded_stats(tf):
    init = tf.keras.initializers.GlorotUniform(seed=1)
    w = np.asarray(init((200, 100)))
    limit = np.sqrt(6.0 / 300.0)
    return {
        "shape": list(w.shape),
        "within": bool(np.all(np.abs(w) <= limit + 1e-7)),
        "mean_small": bool(abs(w.mean()) < 0.01),
    }


def p_model_summary_layer_names(tf):
    m = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(3,)),
            tf.keras.layers.Dense(2, name="first"),
            tf.keras.layers.Dense(1, name="second"),
        ]
    )
    return {"names": [layer.name for layer in m.layers], "get": m.get_layer("second").units}


def p_weights_shapes(tf):
    m = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(2)])
    return {"shapes": [list(w.shape) for w in m.get_weights()]}


def p_lr_schedule(tf):
    s = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    p = tf.keras.optimizers.schedules.PiecewiseConstantDecay([5, 10], [1.0, 0.5, 0.1])
    return {
        "exp": [float(s(i)) for i in (0, 5, 10, 20)],
        "pw": [float(p(i)) for i in (0, 5, 6, 11)],
    }
