"""Benchmark workloads. Each returns callables for eagerflow, its numpy floor, and the
torch/tensorflow equivalents when those are importable."""

from __future__ import annotations

import importlib.util

import numpy as np


def _available(name):
    return importlib.util.find_spec(name) is not None


class Workload:
    """A named workload: ``setup()`` returns {"eagerflow": fn, "numpy": fn, ...}."""

    def __init__(self, name, setup, unit="us", note="", flops=None):
        self.name = name
        self.setup = setup
        self.unit = unit
        self.note = note
        # Matrix-product FLOPs of one call: the floor is this count at the sgemm rate.
        self.flops = flops


def _torch():
    if not _available("torch"):
        return None
    import torch

    torch.set_num_threads(max(1, torch.get_num_threads()))
    return torch


def _tf():
    if not _available("tensorflow"):
        return None
    import tensorflow

    return tensorflow


def with_references(fns, torch_step=None, tf_step=None):
    """A workload's candidates: ``fns`` (eagerflow's, and numpy's where it has one), plus
    ``torch_step(torch)`` and ``tf_step(tf)`` when those frameworks are installed."""
    torch = _torch() if torch_step is not None else None
    if torch is not None:
        fns["torch"] = torch_step(torch)
    tf = _tf() if tf_step is not None else None
    if tf is not None:
        fns["tensorflow"] = tf_step(tf)
    return fns


def eager_add():
    import eagerflow as ef

    a = np.ones(16, np.float32)
    b = np.ones(16, np.float32)
    x, y = ef.constant(a), ef.constant(b)
    fns = {"eagerflow": lambda: ef.add(x, y), "numpy": lambda: np.add(a, b)}
    torch = _torch()
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        fns["torch"] = lambda: torch.add(ta, tb)
    tf = _tf()
    if tf is not None:
        fa, fb = tf.constant(a), tf.constant(b)
        fns["tensorflow"] = lambda: tf.add(fa, fb)
    return fns


def eager_matmul():
    import eagerflow as ef

    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    x, y = ef.constant(a), ef.constant(b)
    fns = {"eagerflow": lambda: ef.matmul(x, y), "numpy": lambda: np.matmul(a, b)}
    torch = _torch()
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        fns["torch"] = lambda: torch.matmul(ta, tb)
    tf = _tf()
    if tf is not None:
        fa, fb = tf.constant(a), tf.constant(b)
        fns["tensorflow"] = lambda: tf.matmul(fa, fb)
    return fns


def _chain(lib_ops, x):
    """20 small elementwise ops: (mul, add, tanh, abs, maximum) x 4."""
    mul, add, tanh, abs_, maximum = lib_ops
    for _ in range(4):
        x = mul(x, x)
        x = add(x, x)
        x = tanh(x)
        x = abs_(x)
        x = maximum(x, x)
    return x


def elementwise_chain():
    import eagerflow as ef

    a = np.linspace(-1, 1, 16).astype(np.float32)
    x = ef.constant(a)
    ef_ops = (ef.multiply, ef.add, ef.tanh, ef.abs, ef.maximum)
    np_ops = (np.multiply, np.add, np.tanh, np.abs, np.maximum)
    fns = {"eagerflow": lambda: _chain(ef_ops, x), "numpy": lambda: _chain(np_ops, a)}
    torch = _torch()
    if torch is not None:
        ta = torch.from_numpy(a)
        t_ops = (torch.mul, torch.add, torch.tanh, torch.abs, torch.maximum)
        fns["torch"] = lambda: _chain(t_ops, ta)
    tf = _tf()
    if tf is not None:
        fa = tf.constant(a)
        tf_ops = (tf.multiply, tf.add, tf.tanh, tf.abs, tf.maximum)
        fns["tensorflow"] = lambda: _chain(tf_ops, fa)
    return fns


def value_and_grad():
    """reduce_sum(tanh(x @ W + b)) and its gradients w.r.t. W and b; x [32,64], W [64,64]."""
    import eagerflow as ef

    rng = np.random.default_rng(0)
    xa = rng.standard_normal((32, 64)).astype(np.float32)
    wa = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    ba = np.zeros(64, np.float32)
    x = ef.constant(xa)
    w = ef.Variable(wa)
    b = ef.Variable(ba)

    def eagerflow_step():
        with ef.GradientTape() as tape:
            loss = ef.reduce_sum(ef.tanh(ef.matmul(x, w) + b))
        return loss, tape.gradient(loss, [w, b])

    def numpy_step():
        h = np.tanh(xa @ wa + ba)
        loss = h.sum()
        dz = 1.0 - h * h
        return loss, xa.T @ dz, dz.sum(axis=0)

    fns = {"eagerflow": eagerflow_step, "numpy": numpy_step}
    torch = _torch()
    if torch is not None:
        tx = torch.from_numpy(xa)
        tw = torch.from_numpy(wa.copy()).requires_grad_()
        tb = torch.from_numpy(ba.copy()).requires_grad_()

        def torch_step():
            loss = torch.tanh(tx @ tw + tb).sum()
            return torch.autograd.grad(loss, [tw, tb])

        fns["torch"] = torch_step
    tf = _tf()
    if tf is not None:
        fx, fw, fb = tf.constant(xa), tf.Variable(wa), tf.Variable(ba)

        def tf_step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.tanh(tf.matmul(fx, fw) + fb))
            return tape.gradient(loss, [fw, fb])

        fns["tensorflow"] = tf_step
    return fns


WORKLOADS = [
    Workload("eager add f32[16]", eager_add, note="target <= 4x numpy"),
    Workload("eager matmul f32[64,64]x[64,64]", eager_matmul),
    Workload("chain of 20 elementwise ops f32[16]", elementwise_chain),
    Workload("value+grad sum(tanh(x@W+b)) [32,64]x[64,64]", value_and_grad,
             note="target <= 3x numpy"),
]


# -- @function workloads ------------------------------------------------------------------------
# Columns: "eagerflow" is the traced function, "eagerflow eager" the same Python run eagerly,
# "numpy" the hand-written numpy floor.


def _tanh_layer_data():
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((32, 64)).astype(np.float32)
    wa = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    ba = np.zeros(64, np.float32)
    return xa, wa, ba


def _tanh_layer_step(ef, w, b):
    def step(x):
        with ef.GradientTape() as tape:
            loss = ef.reduce_sum(ef.tanh(ef.matmul(x, w) + b))
        return loss, tape.gradient(loss, [w, b])

    return step


def _tanh_layer_numpy(xa, wa, ba):
    def numpy_step():
        h = np.tanh(xa @ wa + ba)
        dz = 1.0 - h * h
        return h.sum(), xa.T @ dz, dz.sum(axis=0)

    return numpy_step


def function_value_and_grad_first_call():
    """First call of a fresh @function: trace, gradient trace, optimize, compile, run."""
    import eagerflow as ef

    xa, wa, ba = _tanh_layer_data()
    x, w, b = ef.constant(xa), ef.Variable(wa), ef.Variable(ba)
    step = _tanh_layer_step(ef, w, b)
    return {"eagerflow": lambda: ef.function(step)(x),
            "eagerflow eager": lambda: step(x),
            "numpy": _tanh_layer_numpy(xa, wa, ba)}


def function_value_and_grad_steady():
    """Steady calls of the traced value-and-gradient step (the trace is reused)."""
    import eagerflow as ef

    xa, wa, ba = _tanh_layer_data()
    x, w, b = ef.constant(xa), ef.Variable(wa), ef.Variable(ba)
    step = _tanh_layer_step(ef, w, b)
    traced = ef.function(step)
    traced(x)
    fns = {"eagerflow": lambda: traced(x), "eagerflow eager": lambda: step(x),
           "numpy": _tanh_layer_numpy(xa, wa, ba)}
    torch = _torch()
    if torch is not None:
        tx = torch.from_numpy(xa)
        tw = torch.from_numpy(wa.copy()).requires_grad_()
        tb = torch.from_numpy(ba.copy()).requires_grad_()

        def torch_step():
            loss = torch.tanh(tx @ tw + tb).sum()
            return loss, torch.autograd.grad(loss, [tw, tb])

        fns["torch"] = torch_step
    return fns


def _nonlinear_chain(ops, x, y, z):
    """50 small elementwise ops no algebraic rewrite can shorten.

    Each of 10 rounds: tanh, abs, 0.5 * x, maximum(x, 0.5 * x), then a multiply by ``y``
    or a subtraction of ``z`` (alternating rounds).
    """
    tanh, abs_, multiply, maximum, subtract = ops
    for i in range(10):
        x = tanh(x)
        x = abs_(x)
        x = maximum(x, multiply(x, 0.5))
        x = multiply(x, y) if i % 2 == 0 else subtract(x, z)
    return x


def function_elementwise_chain():
    import eagerflow as ef

    a = np.linspace(-1, 1, 16).astype(np.float32)
    ya = np.linspace(0.5, 1.5, 16).astype(np.float32)
    za = np.linspace(-0.2, 0.2, 16).astype(np.float32)
    x, y, z = ef.constant(a), ef.constant(ya), ef.constant(za)
    ef_ops = (ef.tanh, ef.abs, ef.multiply, ef.maximum, ef.subtract)
    traced = ef.function(lambda x: _nonlinear_chain(ef_ops, x, y, z))
    traced(x)
    np_ops = (np.tanh, np.abs, np.multiply, np.maximum, np.subtract)
    fns = {"eagerflow": lambda: traced(x),
           "eagerflow eager": lambda: _nonlinear_chain(ef_ops, x, y, z),
           "numpy": lambda: _nonlinear_chain(np_ops, a, ya, za)}
    torch = _torch()
    if torch is not None:
        ta, tya, tza = torch.from_numpy(a), torch.from_numpy(ya), torch.from_numpy(za)
        t_ops = (torch.tanh, torch.abs, torch.mul, torch.maximum, torch.sub)
        fns["torch"] = lambda: _nonlinear_chain(t_ops, ta, tya, tza)
    return fns


# -- MLP 784-512-512-10, Adam, batch 128 ----------------------------------------------------------
_MLP_SIZES = (784, 512, 512, 10)
_ADAM = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7}


def mlp_flops(batch):
    """Matrix-product FLOPs of one MLP training step: forward, weight gradients and input
    gradients (all layers but the first, whose input is data)."""
    per_sample = sum(a * b for a, b in zip(_MLP_SIZES[:-1], _MLP_SIZES[1:]))
    return 2 * batch * (3 * per_sample - _MLP_SIZES[0] * _MLP_SIZES[1])


def _mlp_arrays(batch=128):
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in zip(_MLP_SIZES[:-1], _MLP_SIZES[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    x = rng.standard_normal((batch, _MLP_SIZES[0])).astype(np.float32)
    labels = rng.integers(0, _MLP_SIZES[-1], batch).astype(np.int32)
    return params, x, labels


def _mlp_adam_step(ef, batch=128):
    """(step, x, labels): one Adam training step of the MLP written with eagerflow ops.

    Adam is written out with Variables for the moments and the step count, as TF's Adam
    does it: ``lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)``,
    ``p -= lr_t * m / (sqrt(v) + epsilon)``. Everything is created on the current device.
    """
    arrays, xa, la = _mlp_arrays(batch)
    params = [ef.Variable(a) for a in arrays]
    ms = [ef.Variable(np.zeros_like(a)) for a in arrays]
    vs = [ef.Variable(np.zeros_like(a)) for a in arrays]
    t = ef.Variable(0.0)
    lr, beta1, beta2, eps = (_ADAM[k] for k in ("lr", "beta1", "beta2", "epsilon"))

    def step(x, labels):
        with ef.GradientTape() as tape:
            h = x
            for i in range(0, len(params) - 2, 2):
                h = ef.nn.relu(ef.matmul(h, params[i]) + params[i + 1])
            logits = ef.matmul(h, params[-2]) + params[-1]
            loss = ef.reduce_mean(
                ef.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        grads = tape.gradient(loss, params)
        t.assign_add(1.0)
        lr_t = lr * ef.sqrt(1.0 - ef.pow(beta2, t)) / (1.0 - ef.pow(beta1, t))
        for p, m, v, g in zip(params, ms, vs, grads):
            m.assign(beta1 * m + (1.0 - beta1) * g)
            v.assign(beta2 * v + (1.0 - beta2) * g * g)
            p.assign_sub(lr_t * m / (ef.sqrt(v) + eps))
        return loss

    return step, ef.constant(xa), ef.constant(la)


def _numpy_mlp_adam(params):
    """``step(x, labels) -> loss``: forward, backward and Adam by hand in numpy, updating
    ``params`` and the moments in place (the floor the MLP workloads compare against)."""
    ms = [np.zeros_like(p) for p in params]
    vs = [np.zeros_like(p) for p in params]
    state = {"t": 0}
    lr, beta1, beta2, eps = (_ADAM[k] for k in ("lr", "beta1", "beta2", "epsilon"))

    def step(x, labels):
        n = x.shape[0]
        rows = np.arange(n)
        w1, b1, w2, b2, w3, b3 = params
        z1 = x @ w1 + b1
        h1 = np.maximum(z1, 0.0)
        z2 = h1 @ w2 + b2
        h2 = np.maximum(z2, 0.0)
        logits = h2 @ w3 + b3
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        total = exp.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(total[:, 0]) - shifted[rows, labels])
        dlogits = exp / total
        dlogits[rows, labels] -= 1.0
        dlogits /= n
        dh2 = dlogits @ w3.T
        dh2 *= z2 > 0
        dh1 = dh2 @ w2.T
        dh1 *= z1 > 0
        grads = (x.T @ dh1, dh1.sum(axis=0), h1.T @ dh2, dh2.sum(axis=0),
                 h2.T @ dlogits, dlogits.sum(axis=0))
        state["t"] += 1
        t = state["t"]
        lr_t = np.float32(lr * np.sqrt(1.0 - beta2 ** t) / (1.0 - beta1 ** t))
        for p, m, v, g in zip(params, ms, vs, grads):
            m *= beta1
            m += (1.0 - beta1) * g
            v *= beta2
            g *= g
            g *= 1.0 - beta2
            v += g
            denom = np.sqrt(v)
            denom += eps
            np.divide(m, denom, out=denom)
            denom *= lr_t
            p -= denom
        return loss

    return step


def _mlp_numpy_step():
    """The numpy floor of one MLP Adam step on a fixed batch."""
    params, x, labels = _mlp_arrays()
    step = _numpy_mlp_adam(params)
    return lambda: step(x, labels)


def _mlp_torch_step(torch, batch=128, device="cpu"):
    arrays, xa, la = _mlp_arrays(batch)
    params = [torch.from_numpy(a.copy()).to(device).requires_grad_() for a in arrays]
    opt = torch.optim.Adam(params, lr=_ADAM["lr"], betas=(_ADAM["beta1"], _ADAM["beta2"]),
                           eps=_ADAM["epsilon"])
    x = torch.from_numpy(xa).to(device)
    labels = torch.from_numpy(la.astype(np.int64)).to(device)

    def step():
        opt.zero_grad()
        h = x
        for i in range(0, len(params) - 2, 2):
            h = torch.relu(h @ params[i] + params[i + 1])
        loss = torch.nn.functional.cross_entropy(h @ params[-2] + params[-1], labels)
        loss.backward()
        opt.step()
        return loss

    return step


def function_mlp_adam_step():
    import eagerflow as ef

    step, x, labels = _mlp_adam_step(ef)
    traced = ef.function(step)
    traced(x, labels)
    eager_step, ex, elabels = _mlp_adam_step(ef)
    def tf_step(tf):
        from eagerflow.benchmarks.training_workloads import mlp_tf_step

        return mlp_tf_step(tf, 128)

    return with_references({"eagerflow": lambda: traced(x, labels),
                            "eagerflow eager": lambda: eager_step(ex, elabels),
                            "numpy": _mlp_numpy_step()}, _mlp_torch_step, tf_step)


def function_mlp_trace_time():
    """Tracing the MLP Adam step (forward, gradient, updates) into a graph, compile excluded;
    the numpy column is one numpy step, for scale."""
    import eagerflow as ef

    step, x, labels = _mlp_adam_step(ef)
    return {"eagerflow": lambda: ef.function(step).get_concrete_function(x, labels),
            "numpy": _mlp_numpy_step()}


def function_one_op_call():
    """Steady call overhead of a @function holding one op."""
    import eagerflow as ef

    a = np.linspace(-1, 1, 16).astype(np.float32)
    x = ef.constant(a)
    traced = ef.function(lambda x: ef.tanh(x))
    traced(x)
    fns = {"eagerflow": lambda: traced(x), "eagerflow eager": lambda: ef.tanh(x),
           "numpy": lambda: np.tanh(a)}
    torch = _torch()
    if torch is not None:
        ta = torch.from_numpy(a)
        fns["torch"] = lambda: torch.tanh(ta)
    return fns


WORKLOADS += [
    Workload("@function value+grad first call (trace)", function_value_and_grad_first_call,
             note="trace+optimize+compile+run of a fresh function"),
    Workload("@function value+grad steady call", function_value_and_grad_steady,
             note="same step as value+grad above"),
    Workload("@function 50 nonlinear elementwise f32[16]", function_elementwise_chain,
             note="target: traced >= 3x faster than eager"),
    Workload("@function MLP 784-512-512-10 Adam b128", function_mlp_adam_step,
             note="target <= 1.15x numpy floor", flops=mlp_flops(128)),
    Workload("@function MLP Adam step: trace time", function_mlp_trace_time,
             note="target < 0.2 s"),
    Workload("@function one-op steady call f32[16]", function_one_op_call,
             note="target <= 20 us"),
]


# -- Keras fit ----------------------------------------------------------------------------------
# One epoch of ``model.fit`` on 8,192 random samples (batch 128, shuffled, verbose=0) of the
# MLP 784-512-512-10 with Adam, against the same epoch written by hand in numpy (forward,
# backward, Adam, shuffled batches). Throughput is 8192 / time; target >= 0.8x numpy.
_FIT_SAMPLES = 8192


def _fit_data():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((_FIT_SAMPLES, _MLP_SIZES[0])).astype(np.float32)
    y = rng.integers(0, _MLP_SIZES[-1], _FIT_SAMPLES).astype(np.int32)
    return x, y


def _fit_keras_model(keras, run_eagerly=False):
    params, _, _ = _mlp_arrays()
    model = keras.Sequential([keras.Input((_MLP_SIZES[0],))] + [
        keras.layers.Dense(n, activation="relu") for n in _MLP_SIZES[1:-1]] + [
        keras.layers.Dense(_MLP_SIZES[-1])])
    model.set_weights(params)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=_ADAM["lr"],
                                                  epsilon=_ADAM["epsilon"]),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  run_eagerly=run_eagerly)
    return model


def _fit_numpy_epoch(x, y, batch=128):
    """One shuffled epoch of the MLP with Adam, by hand in numpy (arrays updated in place)."""
    params, _, _ = _mlp_arrays()
    step = _numpy_mlp_adam(params)
    rng = np.random.default_rng(0)

    def epoch():
        order = rng.permutation(len(x))
        for start in range(0, len(x), batch):
            index = order[start:start + batch]
            step(x[index], y[index])

    return epoch


def _fit_torch_epoch(torch, x, y, batch=128):
    arrays, _, _ = _mlp_arrays()
    params = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    opt = torch.optim.Adam(params, lr=_ADAM["lr"], betas=(_ADAM["beta1"], _ADAM["beta2"]),
                           eps=_ADAM["epsilon"])
    tx, ty = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))

    def epoch():
        order = torch.randperm(len(x))
        for start in range(0, len(x), batch):
            index = order[start:start + batch]
            opt.zero_grad()
            h = tx[index]
            for i in range(0, len(params) - 2, 2):
                h = torch.relu(h @ params[i] + params[i + 1])
            loss = torch.nn.functional.cross_entropy(h @ params[-2] + params[-1], ty[index])
            loss.backward()
            opt.step()

    return epoch


def keras_fit_mlp_epoch():
    """One epoch of ``fit`` (traced step) vs the numpy loop; samples/s = 8192 / time."""
    from eagerflow import keras

    x, y = _fit_data()
    model = _fit_keras_model(keras)
    eager = _fit_keras_model(keras, run_eagerly=True)
    fns = {"eagerflow": lambda: model.fit(x, y, batch_size=128, epochs=1, verbose=0),
           "eagerflow eager": lambda: eager.fit(x, y, batch_size=128, epochs=1, verbose=0),
           "numpy": _fit_numpy_epoch(x, y)}
    torch = _torch()
    if torch is not None:
        fns["torch"] = _fit_torch_epoch(torch, x, y)
    tf = _tf()
    if tf is not None:
        tf_model = _fit_keras_model(tf.keras)
        fns["tensorflow"] = lambda: tf_model.fit(x, y, batch_size=128, epochs=1, verbose=0)
    return fns


WORKLOADS += [
    Workload("keras fit MLP 784-512-512-10, 8192 samples b128", keras_fit_mlp_epoch,
             unit="epoch", note="1 epoch; target >= 0.8x numpy throughput (<= 1.25x time)",
             flops=mlp_flops(_FIT_SAMPLES)),
]


# -- AutoGraph: trace-time cost of conversion ------------------------------------------------
def _autograph_workloads():
    from eagerflow.benchmarks import autograph_workloads

    return autograph_workloads._register(Workload)


WORKLOADS += _autograph_workloads()


# -- input pipelines: PNG decode, resize, augment --------------------------------------------
def _input_pipeline_workloads():
    from eagerflow.benchmarks import input_pipeline_workloads

    return input_pipeline_workloads._register(Workload)


WORKLOADS += _input_pipeline_workloads()
