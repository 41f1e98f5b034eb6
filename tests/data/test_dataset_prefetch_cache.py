"""prefetch (no hangs, errors reach the consumer, threads end) and cache (memory, files)."""

import gc
import json
import os
import threading
import time

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.data import AUTOTUNE, Dataset

TIMEOUT_S = 10


def values(ds):
    return [ef.nest.map_structure(lambda t: t.numpy().tolist(), e) for e in ds]


def within(fn, seconds=TIMEOUT_S):
    """Runs ``fn`` on a helper thread; fails (instead of hanging the suite) if it is late."""
    result = {}

    def run():
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "did not finish within %ss (hang)" % seconds
    if "error" in result:
        raise result["error"]
    return result.get("value")


def producers():
    return [t for t in threading.enumerate() if t.name.startswith("eagerflow-data-")]


def wait_no_producers():
    deadline = time.time() + TIMEOUT_S
    while producers() and time.time() < deadline:
        time.sleep(0.01)
    assert not producers(), producers()


class Counter:
    """A map function that counts its calls (to see whether the input ran).

    Tests ask for ``element_spec`` first and then reset the count: learning the spec traces
    the function once, as TF does when a dataset is built.
    """

    def __init__(self):
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, x):
        with self.lock:
            self.calls += 1
        return x


# -- prefetch -------------------------------------------------------------------------------------


def test_prefetch_passes_elements_through():
    ds = Dataset.from_tensor_slices((np.arange(10), np.arange(10.0))).batch(3).prefetch(2)
    assert values(ds) == values(Dataset.from_tensor_slices((np.arange(10), np.arange(10.0)))
                                .batch(3))
    assert int(ds.cardinality()) == 4
    assert values(Dataset.range(5).prefetch(AUTOTUNE)) == values(Dataset.range(5).prefetch(0))
    with pytest.raises(ef.errors.InvalidArgumentError, match="buffer_size"):
        Dataset.range(3).prefetch(-5)
    wait_no_producers()


def test_prefetch_produces_ahead_on_another_thread():
    seen = []
    ds = Dataset.range(100).map(lambda x: seen.append(threading.get_ident()) or x).prefetch(3)
    it = iter(ds)
    next(it)
    deadline = time.time() + TIMEOUT_S
    while len(seen) < 4 and time.time() < deadline:
        time.sleep(0.005)
    assert 4 <= len(seen) <= 6  # one consumed + a full buffer of 3 (+ one being put)
    assert threading.get_ident() not in seen
    it.close()
    wait_no_producers()


def test_early_break_on_an_endless_input_does_not_hang():
    def consume():
        out = []
        for x in Dataset.range(10).repeat().prefetch(2):
            out.append(int(x))
            if len(out) == 3:
                break
        return out

    assert within(consume) == [0, 1, 2]
    gc.collect()
    wait_no_producers()


def test_dropping_the_iterator_stops_the_producer():
    def consume():
        it = iter(Dataset.range(10).repeat().map(lambda x: x).prefetch(1))
        next(it)
        time.sleep(0.05)  # let the producer block on its full queue

    within(consume)
    gc.collect()
    wait_no_producers()


def test_producer_exception_reaches_the_consumer():
    def gen():
        yield 1
        yield 2
        raise KeyError("broken source")

    ds = Dataset.from_generator(gen, output_signature=ef.TensorSpec([], ef.int32)).prefetch(4)

    def consume():
        got = []
        with pytest.raises(KeyError, match="broken source"):
            for x in ds:
                got.append(int(x))
        return got

    assert within(consume) == [1, 2]
    wait_no_producers()


def test_exception_in_a_map_before_prefetch_and_a_slow_producer():
    def boom(x):
        if int(x) == 3:
            raise ValueError("map failed at 3")
        return x

    with pytest.raises(ValueError, match="map failed at 3"):
        within(lambda: list(Dataset.range(10).map(boom).prefetch(2)))

    def slow(x):
        time.sleep(0.01)
        return x

    assert within(lambda: values(Dataset.range(8).map(slow).prefetch(1))) == list(range(8))
    wait_no_producers()


def test_nested_prefetch_and_parallel_map_close_together():
    ds = Dataset.range(1000).map(lambda x: x * 2, num_parallel_calls=3).prefetch(2) \
        .batch(4).prefetch(2)

    def consume():
        it = iter(ds)
        first = next(it).numpy().tolist()
        it.close()
        return first

    assert within(consume) == [0, 2, 4, 6]
    wait_no_producers()


# -- cache in memory ------------------------------------------------------------------------------


def test_memory_cache_runs_the_input_once():
    count = Counter()
    ds = Dataset.range(6).map(count).cache()
    assert ds.element_spec is not None
    count.calls = 0
    assert values(ds) == list(range(6)) and count.calls == 6
    assert values(ds) == list(range(6)) and count.calls == 6
    assert int(ds.cardinality()) == 6 and ds.element_spec == ef.TensorSpec([], ef.int64)


def test_memory_cache_keeps_nothing_from_a_partial_pass():
    count = Counter()
    ds = Dataset.range(6).map(count).cache()
    it = iter(ds)
    next(it), next(it)
    it.close()
    assert values(ds) == list(range(6))
    calls = count.calls
    assert values(ds.repeat(2)) == list(range(6)) * 2 and count.calls == calls


def test_cache_after_shuffle_freezes_the_order():
    ds = Dataset.range(20).shuffle(20, seed=4).cache()
    assert values(ds) == values(ds)


# -- cache in files -------------------------------------------------------------------------------


def listing(directory):
    return sorted(os.listdir(directory))


def test_file_cache_is_written_after_a_full_pass_and_read_later(tmp_path):
    path = str(tmp_path / "cache")
    count = Counter()
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    ds = Dataset.from_tensor_slices({"x": x, "y": np.arange(6) % 2 == 0}).map(count).cache(path)
    assert ds.element_spec is not None
    count.calls = 0
    first = values(ds)
    assert count.calls == 6 and os.path.isdir(path)
    files = listing(path)
    assert "index.json" in files and any(f.endswith(".npy") for f in files)
    for name in files:
        if name.endswith(".npy"):
            np.load(os.path.join(path, name), allow_pickle=False)  # no pickle inside
    assert json.load(open(os.path.join(path, "index.json")))["format"] == "eagerflow.data.cache"
    calls = count.calls
    assert values(ds) == first and count.calls == calls  # the second epoch reads the files

    def must_not_run():
        raise AssertionError("the input must not run when the cache exists")
        yield

    fresh = Dataset.from_generator(must_not_run, output_signature=ds.element_spec).cache(path)
    assert values(fresh) == first  # another dataset (or program) reads the same files
    y = next(iter(fresh))["y"]
    assert isinstance(y, ef.Tensor) and y.dtype == ef.bool


def test_interrupted_first_pass_leaves_no_cache(tmp_path):
    path = str(tmp_path / "cache")
    count = Counter()
    ds = Dataset.range(10).map(count).cache(path)
    assert ds.element_spec is not None
    count.calls = 0
    for i, _ in enumerate(ds):
        if i == 3:
            break
    gc.collect()
    assert listing(tmp_path) == []  # neither the cache nor a temporary directory
    assert values(ds) == list(range(10))
    assert listing(tmp_path) == ["cache"]
    calls = count.calls
    assert values(ds) == list(range(10)) and count.calls == calls


def test_failed_first_pass_leaves_no_cache(tmp_path):
    def gen():
        yield np.float32(1.0)
        raise RuntimeError("source failed")

    path = str(tmp_path / "cache")
    ds = Dataset.from_generator(gen, output_signature=ef.TensorSpec([], ef.float32)).cache(path)
    with pytest.raises(RuntimeError, match="source failed"):
        list(ds)
    assert listing(tmp_path) == []


def test_file_cache_round_trips_dtypes_ragged_shapes_and_scalars(tmp_path):
    path = str(tmp_path / "c")
    ds = Dataset.range(1, 6).map(lambda n: (ef.fill([n, 2], ef.cast(n, ef.float16)),
                                            ef.cast(n, ef.int8), n > 2)).cache(path)
    first = [tuple(t.numpy() for t in e) for e in ds]
    second = [tuple(t for t in e) for e in ds]
    assert len(second) == 5
    for (a, b, c), (ta, tb, tc) in zip(first, second):
        assert ta.dtype == ef.float16 and tb.dtype == ef.int8 and tc.dtype == ef.bool
        assert ta.shape == a.shape and (ta.numpy() == a).all()
        assert tb.shape == [] and tb.numpy() == b and bool(tc) == bool(c)
    empty = Dataset.range(0).cache(str(tmp_path / "empty"))
    assert values(empty) == [] and values(empty) == []


def test_file_cache_refuses_a_cache_of_other_dtypes(tmp_path):
    path = str(tmp_path / "c")
    list(Dataset.range(3).cache(path))
    with pytest.raises(ef.errors.InvalidArgumentError, match="dtypes"):
        list(Dataset.range(3).map(lambda x: ef.cast(x, ef.float32)).cache(path))
