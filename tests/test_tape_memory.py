"""The tape keeps only what gradient rules declare: for an MLP step that is exactly the
activations backprop needs (a byte count, not a timing)."""

from eagerflow.benchmarks.tape_memory import measure


def test_tape_holds_only_necessary_activations():
    result = measure(batch=16, sizes=(64, 32, 32, 10))
    assert result["tape_bytes"] <= 1.05 * result["necessary_bytes"]
    assert result["tape_bytes"] >= result["necessary_bytes"]  # nothing needed was dropped
