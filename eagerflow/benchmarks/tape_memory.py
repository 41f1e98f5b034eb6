"""Measures what a GradientTape keeps alive for an MLP training step.

The tape stores, per recorded op, only the inputs and outputs its gradient rule declares it
reads. This compares the bytes of distinct arrays the tape holds after the forward pass of
an MLP 784-512-512-10 (batch 128) with the activations that backprop must keep in any
implementation: the input of each matmul, each ReLU's output (for its mask) and the
softmax probabilities.

Run: ``python -m eagerflow.benchmarks.tape_memory``
"""

from __future__ import annotations

import numpy as np


def _held_arrays(tape):
    """Distinct arrays referenced by the tape's entries (saved inputs and outputs)."""
    held = {}
    for entry in tape._entries:
        saved = list(entry.inputs or ()) + (list(entry.out) if isinstance(entry.out, tuple)
                                            else [entry.out])
        for t in saved:
            value = getattr(t, "_value", None)
            if isinstance(value, np.ndarray):
                base = value if value.base is None else value.base
                held[id(base)] = base.nbytes
    return held


def measure(batch=128, sizes=(784, 512, 512, 10), seed=0):
    """Returns a dict with the tape's held bytes and the necessary activation bytes."""
    import eagerflow as ef

    rng = np.random.default_rng(seed)
    x = ef.constant(rng.standard_normal((batch, sizes[0])).astype(np.float32))
    y = ef.constant(rng.integers(0, sizes[-1], size=batch))
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params.append(ef.Variable(rng.standard_normal((n_in, n_out)).astype(np.float32) * 0.05))
        params.append(ef.Variable(np.zeros(n_out, np.float32)))
    with ef.GradientTape() as tape:
        h = x
        for i in range(0, len(params) - 2, 2):
            h = ef.nn.relu(h @ params[i] + params[i + 1])
        logits = h @ params[-2] + params[-1]
        loss = ef.reduce_mean(
            ef.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    arrays = _held_arrays(tape)
    # The current weights are referenced, not copied: the variables hold them anyway.
    weight_ids = {id(p._value) for p in params}
    held = sum(n for key, n in arrays.items() if key not in weight_ids)
    f32 = 4
    # Backprop needs each matmul's input (x, h1, h2; a ReLU's output is both its own mask and
    # the next matmul's input, so it counts once) and the softmax probabilities (or logits).
    necessary = batch * (sum(sizes[:-1]) + sizes[-1]) * f32
    weights = sum(p.numpy().nbytes for p in params)
    grads = tape.gradient(loss, params)
    assert all(g is not None for g in grads)
    return {"tape_bytes": held, "necessary_bytes": necessary, "weights_bytes": weights,
            "entries": len(tape._entries) if tape._persistent else None}


def main():
    result = measure()
    held, need = result["tape_bytes"], result["necessary_bytes"]
    print("MLP 784-512-512-10, batch 128, float32, one training step under a GradientTape")
    print("  arrays held by the tape after the forward pass: %8.1f KiB" % (held / 1024))
    print("  activations backprop must keep:                 %8.1f KiB" % (need / 1024))
    print("  ratio: %.2fx (weights, referenced not copied, not counted: %.1f KiB)" % (
        held / need, result["weights_bytes"] / 1024))


if __name__ == "__main__":
    main()
