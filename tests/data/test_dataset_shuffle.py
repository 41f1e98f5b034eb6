"""shuffle: permutations, TF's buffer semantics, seeds, and a new order per epoch."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.data import Dataset
from eagerflow.ops.random import random_stateful

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def no_global_seed():
    """Each test starts without a global seed and leaves none behind."""

    def unset():
        random_stateful._seeds.global_seed = None
        random_stateful._seeds.rng = None

    unset()
    yield
    unset()


def order(ds):
    return [int(x) for x in ds]


def generator_range(n):
    return Dataset.from_generator(lambda: iter(range(n)),
                                  output_signature=ef.TensorSpec([], ef.int64))


@pytest.mark.parametrize("n,buffer", [(50, 50), (50, 1000), (50, 7), (1, 3), (0, 4)])
def test_shuffle_is_a_permutation(n, buffer):
    for ds in (Dataset.range(n), generator_range(n)):
        out = order(ds.shuffle(buffer, seed=5))
        assert sorted(out) == list(range(n))
    assert int(Dataset.range(n).shuffle(buffer).cardinality()) == n


def test_buffer_of_one_keeps_the_order():
    assert order(Dataset.range(20).shuffle(1)) == list(range(20))
    assert order(generator_range(20).shuffle(1)) == list(range(20))


@pytest.mark.parametrize("buffer", [2, 5, 16])
def test_buffer_bounds_how_far_an_element_can_move_forward(buffer):
    n = 60
    for seed in range(10):
        out = order(Dataset.range(n).shuffle(buffer, seed=seed))
        # Output i is chosen among the elements that have entered the buffer by then.
        assert all(e <= i + buffer - 1 for i, e in enumerate(out)), out


def test_first_element_is_uniform_over_the_first_buffer():
    buffer, counts = 4, np.zeros(10, int)
    for seed in range(400):
        counts[int(next(iter(Dataset.range(10).shuffle(buffer, seed=seed))))] += 1
    assert counts[buffer:].sum() == 0
    assert counts[:buffer].min() > 60  # ~100 each


def test_full_buffer_shuffles_well():
    out = np.array(order(Dataset.range(200).shuffle(200, seed=1)))
    assert abs(np.corrcoef(out, np.arange(200))[0, 1]) < 0.3
    assert (out != np.arange(200)).sum() > 180


def test_reshuffle_each_iteration():
    ds = Dataset.range(30).shuffle(30, seed=3)
    first, second = order(ds), order(ds)
    assert first != second and sorted(first) == sorted(second)
    again = Dataset.range(30).shuffle(30, seed=3)
    assert order(again) == first and order(again) == second  # the same epoch sequence
    pinned = Dataset.range(30).shuffle(30, seed=3, reshuffle_each_iteration=False)
    assert order(pinned) == order(pinned)
    epochs = order(Dataset.range(30).shuffle(30, seed=3).repeat(2))
    assert epochs[:30] != epochs[30:] and sorted(epochs[30:]) == list(range(30))
    fixed = order(Dataset.range(30).shuffle(30, seed=3, reshuffle_each_iteration=False)
                  .repeat(2))
    assert fixed[:30] == fixed[30:]


def test_unseeded_shuffles_differ_and_pinned_unseeded_repeats():
    a, b = Dataset.range(40).shuffle(40), Dataset.range(40).shuffle(40)
    assert order(a) != order(b)
    pinned = Dataset.range(40).shuffle(40, reshuffle_each_iteration=False)
    assert order(pinned) == order(pinned)


def test_global_seed_makes_orders_reproducible_in_process():
    ef.random.set_seed(1234)
    a1, a2 = Dataset.range(25).shuffle(25), Dataset.range(25).shuffle(25)
    ef.random.set_seed(1234)
    b1, b2 = Dataset.range(25).shuffle(25), Dataset.range(25).shuffle(25)
    assert order(a1) == order(b1) and order(a2) == order(b2)
    assert order(Dataset.range(25).shuffle(25, seed=9)) != order(
        Dataset.range(25).shuffle(25, seed=10))


# One fresh program prints three orders, each over two epochs: with an operation seed (no
# global seed yet), with no seed at all, then with only a global seed.
_PROGRAM = """
import eagerflow.random, eagerflow.data as data
def orders(ds):
    return [[int(x) for x in ds] for _ in range(2)]
print(orders(data.Dataset.range(20).shuffle(20, seed=7)))
print(orders(data.Dataset.range(20).shuffle(20)))
eagerflow.random.set_seed(42)
print(orders(data.Dataset.range(20).shuffle(20)))
"""


def run_fresh():
    done = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


def test_seeds_are_deterministic_across_fresh_programs():
    (op_a, none_a, global_a), (op_b, none_b, global_b) = run_fresh(), run_fresh()
    assert op_a == op_b and global_a == global_b
    assert none_a != none_b
    assert op_a != global_a
    epochs = json.loads(global_a)  # two epochs of one dataset: reshuffled, same elements
    assert epochs[0] != epochs[1] and sorted(epochs[0]) == sorted(epochs[1])


def test_batched_and_element_orders_agree():
    x = np.arange(37)
    elements = order(Dataset.from_tensor_slices(x).shuffle(10, seed=2))
    batched = Dataset.from_tensor_slices(x).shuffle(10, seed=2).batch(5)
    flat = [int(v) for b in batched for v in b.numpy()]
    assert flat == elements
    generic = order(generator_range(37).shuffle(10, seed=2))
    assert generic == elements  # the same algorithm and draws on both paths


def test_shuffled_tuples_stay_paired_and_argument_errors():
    x = np.arange(20.0)
    ds = Dataset.from_tensor_slices((x, x * 10)).shuffle(20, seed=0).batch(6)
    for a, b in ds:
        assert (b.numpy() == a.numpy() * 10).all()
    with pytest.raises(ef.errors.InvalidArgumentError, match="buffer_size"):
        Dataset.range(3).shuffle(0)
    with pytest.raises(TypeError, match="reshuffle_each_iteration"):
        Dataset.range(3).shuffle(3, reshuffle_each_iteration="no")
