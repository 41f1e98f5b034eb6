"""Benchmark workloads. Each returns callables for eagerflow, its numpy floor, and the
torch/tensorflow equivalents when those are importable."""

from __future__ import annotations

import importlib.util

import numpy as np


def _available(name):
    return importlib.util.find_spec(name) is not None


class Workload:
    """A named workload: ``setup()`` returns {"eagerflow": fn, "numpy": fn, ...}."""

    def __init__(self, name, setup, unit="us", note=""):
        self.name = name
        self.setup = setup
        self.unit = unit
        self.note = note


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
