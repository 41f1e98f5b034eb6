"""Training-step workloads against TensorFlow and PyTorch, with FLOP floors.

Each step runs with the same weights and data in every framework: eagerflow inside
``@function``, TensorFlow inside ``tf.function``, torch eagerly (its usual form). A
workload's ``flops`` is the multiply-adds (times 2) of its matrix products and
convolutions, forward and backward; the floor is that count at the sgemm rate measured
when the command starts.

* CNN: conv3x3(32)-relu-maxpool2-conv3x3(64)-relu-maxpool2-dense(10) on [64, 28, 28, 1]
  (VALID padding), softmax cross-entropy, SGD (lr 0.01).
* Transformer: one pre-LN block, batch 16, sequence 64, width 128, 4 heads, FFN 512
  (GELU, tanh form), mean squared error to a fixed target, Adam (Keras' form in
  eagerflow and TF, ``torch.optim.Adam`` in torch).
* MLP 784-512-512-10 with Adam at batch 1024 (the batch-128 one lives in ``workloads``).
"""

from __future__ import annotations

import math

import numpy as np

from eagerflow.benchmarks.workloads import (
    _ADAM, Workload, _mlp_adam_step, _mlp_arrays, _mlp_torch_step, mlp_flops, with_references,
)


def sgemm_gflops(size=1024, repeats=7):
    """Best sgemm rate (GFLOP/s) of a ``size`` x ``size`` float32 product, all threads."""
    import time

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2.0 * size ** 3 / best / 1e9


# -- CNN ----------------------------------------------------------------------------------------
_CNN_BATCH = 64


def _cnn_arrays():
    rng = np.random.default_rng(0)

    def glorot(shape, fan_in, fan_out):
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, shape).astype(np.float32)

    params = [glorot((3, 3, 1, 32), 9, 288), np.zeros(32, np.float32),
              glorot((3, 3, 32, 64), 288, 576), np.zeros(64, np.float32),
              glorot((1600, 10), 1600, 10), np.zeros(10, np.float32)]
    x = rng.standard_normal((_CNN_BATCH, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, _CNN_BATCH).astype(np.int32)
    return params, x, labels


def _cnn_flops():
    conv1 = 2 * _CNN_BATCH * 26 * 26 * 9 * 32
    conv2 = 2 * _CNN_BATCH * 11 * 11 * 288 * 64
    dense = 2 * _CNN_BATCH * 1600 * 10
    # conv1: forward and filter gradient (its input is data); conv2 and dense: all three.
    return 2 * conv1 + 3 * conv2 + 3 * dense


def _cnn_forward(lib, conv, pool, relu, matmul, reshape, params, x):
    w1, b1, w2, b2, w3, b3 = params
    h = pool(relu(conv(x, w1) + b1))
    h = pool(relu(conv(h, w2) + b2))
    return matmul(reshape(h, [-1, 1600]), w3) + b3


def cnn_sgd_step():
    import eagerflow as ef

    arrays, xa, la = _cnn_arrays()
    params = [ef.Variable(a) for a in arrays]

    def step(x, labels):
        with ef.GradientTape() as tape:
            logits = _cnn_forward(
                ef, lambda h, w: ef.nn.conv2d(h, w, 1, "VALID"),
                lambda h: ef.nn.max_pool2d(h, 2, 2, "VALID"), ef.nn.relu, ef.matmul,
                ef.reshape, params, x)
            loss = ef.reduce_mean(
                ef.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        for p, g in zip(params, tape.gradient(loss, params)):
            p.assign_sub(0.01 * g)
        return loss

    traced = ef.function(step)
    x, labels = ef.constant(xa), ef.constant(la)
    return with_references({"eagerflow": lambda: traced(x, labels)},
                           lambda torch: _cnn_torch_step(torch, arrays, xa, la),
                           lambda tf: _cnn_tf_step(tf, arrays, xa, la))


def _cnn_torch_step(torch, arrays, xa, la):
    f = torch.nn.functional
    # torch's own layout: NCHW data, [out, in, kh, kw] filters, [out, in] dense weights.
    # The dense layer's 1600 inputs come in HWC order in the other frameworks.
    w1, b1, w2, b2, w3, b3 = arrays
    tw = [np.ascontiguousarray(w1.transpose(3, 2, 0, 1)), b1,
          np.ascontiguousarray(w2.transpose(3, 2, 0, 1)), b2,
          np.ascontiguousarray(w3.reshape(5, 5, 64, 10).transpose(3, 2, 0, 1)
                               .reshape(10, 1600)), b3]
    params = [torch.from_numpy(a.copy()).requires_grad_() for a in tw]
    opt = torch.optim.SGD(params, lr=0.01)
    x = torch.from_numpy(np.ascontiguousarray(xa.transpose(0, 3, 1, 2)))
    labels = torch.from_numpy(la.astype(np.int64))

    def step():
        opt.zero_grad()
        h = f.max_pool2d(torch.relu(f.conv2d(x, params[0], params[1])), 2)
        h = f.max_pool2d(torch.relu(f.conv2d(h, params[2], params[3])), 2)
        loss = f.cross_entropy(f.linear(h.reshape(-1, 1600), params[4], params[5]), labels)
        loss.backward()
        opt.step()
        return loss

    return step


def _cnn_tf_step(tf, arrays, xa, la):
    params = [tf.Variable(a) for a in arrays]
    x, labels = tf.constant(xa), tf.constant(la)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            logits = _cnn_forward(
                tf, lambda h, w: tf.nn.conv2d(h, w, 1, "VALID"),
                lambda h: tf.nn.max_pool2d(h, 2, 2, "VALID"), tf.nn.relu, tf.matmul,
                tf.reshape, params, x)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        for p, g in zip(params, tape.gradient(loss, params)):
            p.assign_sub(0.01 * g)
        return loss

    step()
    return step


# -- Transformer block --------------------------------------------------------------------------
_B, _S, _D, _H, _F = 16, 64, 128, 4, 512


def _block_arrays():
    rng = np.random.default_rng(0)

    def dense(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / math.sqrt(n_in)).astype(np.float32)

    params = [np.ones(_D, np.float32), np.zeros(_D, np.float32),          # LN1 gamma, beta
              dense(_D, 3 * _D), np.zeros(3 * _D, np.float32),             # QKV
              dense(_D, _D), np.zeros(_D, np.float32),                     # output projection
              np.ones(_D, np.float32), np.zeros(_D, np.float32),          # LN2 gamma, beta
              dense(_D, _F), np.zeros(_F, np.float32),                     # FFN in
              dense(_F, _D), np.zeros(_D, np.float32)]                     # FFN out
    x = rng.standard_normal((_B, _S, _D)).astype(np.float32)
    target = rng.standard_normal((_B, _S, _D)).astype(np.float32)
    return params, x, target


def _block_flops():
    tokens = _B * _S
    fwd = 2 * tokens * (_D * 3 * _D + _D * _D + 2 * _D * _F) + 2 * 2 * _B * _S * _S * _D
    return 3 * fwd


class _Ops:
    """The few tensor functions the block needs, from one framework."""

    def __init__(self, **fns):
        self.__dict__.update(fns)


def _block_loss(o, params, x, target):
    g1, be1, wqkv, bqkv, wo, bo, g2, be2, w1, b1, w2, b2 = params
    dh = _D // _H

    def layer_norm(h, gamma, beta):
        mean, var = o.moments(h, [-1])
        return (h - mean) * o.rsqrt(var + 1e-5) * gamma + beta

    h = layer_norm(x, g1, be1)
    qkv = o.matmul(o.reshape(h, [_B * _S, _D]), wqkv) + bqkv
    qkv = o.transpose(o.reshape(qkv, [_B, _S, 3, _H, dh]), [2, 0, 3, 1, 4])
    q, k, v = qkv[0], qkv[1], qkv[2]
    att = o.softmax(o.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(dh)))
    a = o.reshape(o.transpose(o.matmul(att, v), [0, 2, 1, 3]), [_B * _S, _D])
    x = x + o.reshape(o.matmul(a, wo) + bo, [_B, _S, _D])
    h = o.reshape(layer_norm(x, g2, be2), [_B * _S, _D])
    f = o.matmul(o.gelu(o.matmul(h, w1) + b1), w2) + b2
    out = x + o.reshape(f, [_B, _S, _D])
    return o.reduce_mean(o.square(out - target))


def transformer_adam_step():
    import eagerflow as ef
    from eagerflow import keras

    arrays, xa, ta = _block_arrays()
    params = [ef.Variable(a) for a in arrays]
    opt = keras.optimizers.Adam(learning_rate=_ADAM["lr"], epsilon=_ADAM["epsilon"])
    ops = _Ops(moments=lambda h, axes: ef.nn.moments(h, axes, keepdims=True),
               rsqrt=ef.math.rsqrt, matmul=ef.matmul, reshape=ef.reshape,
               transpose=ef.transpose, softmax=ef.nn.softmax,
               gelu=lambda h: ef.nn.gelu(h, approximate=True), reduce_mean=ef.reduce_mean,
               square=ef.square)

    def step(x, target):
        with ef.GradientTape() as tape:
            loss = _block_loss(ops, params, x, target)
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    traced = ef.function(step)
    x, target = ef.constant(xa), ef.constant(ta)
    return with_references({"eagerflow": lambda: traced(x, target)},
                           lambda torch: _block_torch_step(torch, arrays, xa, ta),
                           lambda tf: _block_tf_step(tf, arrays, xa, ta))


def _block_torch_step(torch, arrays, xa, ta):
    params = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    opt = torch.optim.Adam(params, lr=_ADAM["lr"], betas=(_ADAM["beta1"], _ADAM["beta2"]),
                           eps=_ADAM["epsilon"])
    ops = _Ops(moments=lambda h, axes: (h.mean(dim=axes, keepdim=True),
                                        h.var(dim=axes, keepdim=True, unbiased=False)),
               rsqrt=torch.rsqrt,
               matmul=lambda a, b, transpose_b=False: a @ (b.transpose(-1, -2)
                                                          if transpose_b else b),
               reshape=torch.reshape, transpose=lambda h, perm: h.permute(*perm),
               softmax=lambda h: torch.softmax(h, dim=-1),
               gelu=lambda h: torch.nn.functional.gelu(h, approximate="tanh"),
               reduce_mean=torch.mean, square=torch.square)
    x, target = torch.from_numpy(xa), torch.from_numpy(ta)

    def step():
        opt.zero_grad()
        loss = _block_loss(ops, params, x, target)
        loss.backward()
        opt.step()
        return loss

    return step


def _block_tf_step(tf, arrays, xa, ta):
    params = [tf.Variable(a) for a in arrays]
    opt = tf.keras.optimizers.Adam(learning_rate=_ADAM["lr"], epsilon=_ADAM["epsilon"])
    ops = _Ops(moments=lambda h, axes: tf.nn.moments(h, axes, keepdims=True),
               rsqrt=tf.math.rsqrt, matmul=tf.matmul, reshape=tf.reshape,
               transpose=tf.transpose, softmax=tf.nn.softmax,
               gelu=lambda h: tf.nn.gelu(h, approximate=True), reduce_mean=tf.reduce_mean,
               square=tf.square)
    x, target = tf.constant(xa), tf.constant(ta)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = _block_loss(ops, params, x, target)
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    step()
    return step


# -- MLP at batch 1024 --------------------------------------------------------------------------

def mlp_tf_step(tf, batch):
    """The MLP Adam step of ``workloads._mlp_adam_step`` written in TF, in tf.function."""
    arrays, xa, la = _mlp_arrays(batch)
    params = [tf.Variable(a) for a in arrays]
    ms = [tf.Variable(np.zeros_like(a)) for a in arrays]
    vs = [tf.Variable(np.zeros_like(a)) for a in arrays]
    t = tf.Variable(0.0)
    lr, beta1, beta2, eps = (_ADAM[k] for k in ("lr", "beta1", "beta2", "epsilon"))
    x, labels = tf.constant(xa), tf.constant(la)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            h = x
            for i in range(0, len(params) - 2, 2):
                h = tf.nn.relu(tf.matmul(h, params[i]) + params[i + 1])
            logits = tf.matmul(h, params[-2]) + params[-1]
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        grads = tape.gradient(loss, params)
        t.assign_add(1.0)
        lr_t = lr * tf.sqrt(1.0 - tf.pow(beta2, t)) / (1.0 - tf.pow(beta1, t))
        for p, m, v, g in zip(params, ms, vs, grads):
            m.assign(beta1 * m + (1.0 - beta1) * g)
            v.assign(beta2 * v + (1.0 - beta2) * g * g)
            p.assign_sub(lr_t * m / (tf.sqrt(v) + eps))
        return loss

    step()
    return step


def mlp_adam_b1024():
    import eagerflow as ef

    step, x, labels = _mlp_adam_step(ef, batch=1024)
    traced = ef.function(step)
    traced(x, labels)
    return with_references({"eagerflow": lambda: traced(x, labels)},
                           lambda torch: _mlp_torch_step(torch, batch=1024),
                           lambda tf: mlp_tf_step(tf, 1024))


WORKLOADS = [
    Workload("train CNN conv-pool-conv-pool-dense b64 SGD", cnn_sgd_step, flops=_cnn_flops(),
             note="target <= 0.85x TF, < torch"),
    Workload("train pre-LN transformer B16 S64 D128 H4 Adam", transformer_adam_step,
             flops=_block_flops(), note="target <= 0.8x TF"),
    Workload("@function MLP 784-512-512-10 Adam b1024", mlp_adam_b1024, flops=mlp_flops(1024),
             note="target <= 1.0x TF, <= 1.1x floor"),
]
