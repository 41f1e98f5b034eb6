"""The training-step benchmark workloads run and train (eagerflow columns only here; the
TF and torch columns run where those are installed)."""

import numpy as np

from eagerflow.benchmarks import training_workloads as T
from eagerflow.benchmarks import workloads as W


def test_flop_counts():
    # 784-512-512-10: 668,672 weights; the first layer's input gradient is not computed.
    assert W.mlp_flops(1) == 2 * (3 * 668672 - 784 * 512)
    assert T._cnn_flops() == (2 * 2 * 64 * 26 * 26 * 9 * 32 + 3 * 2 * 64 * 11 * 11 * 288 * 64
                              + 3 * 2 * 64 * 1600 * 10)
    assert T._block_flops() > 0 and T.sgemm_gflops(size=64, repeats=1) > 0


def _losses(setup, steps=3):
    step = setup()["eagerflow"]
    return [float(step().numpy()) for _ in range(steps)]


def test_cnn_and_transformer_steps_train():
    for setup in (T.cnn_sgd_step, T.transformer_adam_step):
        losses = _losses(setup)
        assert np.all(np.isfinite(losses)) and losses[-1] < losses[0], setup.__name__


def test_mlp_b1024_step_trains():
    losses = _losses(T.mlp_adam_b1024)
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
