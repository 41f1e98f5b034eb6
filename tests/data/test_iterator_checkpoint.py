"""Saving and restoring iterator positions: every transformation, mid-epoch, at the end of
an epoch and exhausted; restoring into another pipeline; stateful functions (TF 2.21's
behaviour for each is named where it matters)."""

import os
import warnings

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.data import Dataset, iterator_state
from eagerflow.io import tfrecord

D = Dataset


def _plain(x):
    if isinstance(x, tuple):
        return tuple(_plain(v) for v in x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if hasattr(x, "to_list"):
        return x.to_list()
    if hasattr(x, "dense_shape"):
        return ef.sparse.to_dense(x).numpy().tolist()
    value = x.numpy()
    return value if isinstance(value, bytes) else value.tolist()


def _text_files(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / ("t%d.txt" % i)
        p.write_bytes(b"".join(b"f%d-l%d\n" % (i, j) for j in range(4)))
        paths.append(str(p))
    return paths


def _record_files(tmp_path):
    paths = []
    for i in range(2):
        p = str(tmp_path / ("r%d.tfrecord" % i))
        with tfrecord.TFRecordWriter(p) as w:
            for j in range(5):
                w.write(b"r%d-%d" % (i, j))
        paths.append(p)
    return paths


PIPELINES = {
    "range": lambda tmp: D.range(9),
    "slices_tuple": lambda tmp: D.from_tensor_slices((np.arange(8.0), np.arange(8) * 2)),
    "slices_dict_strings": lambda tmp: D.from_tensor_slices(
        {"s": ["a", "bb", "ccc", "d", "ee"], "n": [1, 2, 3, 4, 5]}),
    "from_tensors_repeat": lambda tmp: D.from_tensors([1, 2]).repeat(4),
    "from_list": lambda tmp: ef.data.experimental.from_list([[1], [2, 3], [4, 5, 6]]),
    "counter_take": lambda tmp: ef.data.experimental.Counter(3, 2).take(7),
    "map": lambda tmp: D.range(10).map(lambda x: x * 3),
    "parallel_map": lambda tmp: D.range(20).map(lambda x: x * 2, num_parallel_calls=3),
    "unordered_map": lambda tmp: D.range(20).map(lambda x: x + 1, num_parallel_calls=2,
                                                 deterministic=False).batch(20),
    "filter": lambda tmp: D.range(20).map(lambda x: x).filter(lambda x: x % 3 != 1),
    "take_while": lambda tmp: D.range(20).take_while(lambda x: x < 11),
    "batch_rows": lambda tmp: D.range(11).batch(3),
    "batch_drop": lambda tmp: D.range(11).map(lambda x: x).batch(3, drop_remainder=True),
    "padded_batch": lambda tmp: D.range(7).map(lambda x: ef.range(x % 3 + 1)).padded_batch(
        2),
    "unbatch": lambda tmp: D.range(10).batch(4).map(lambda x: x).unbatch(),
    "shuffle_rows": lambda tmp: D.range(40).shuffle(7, seed=3),
    "shuffle_elements": lambda tmp: D.range(40).map(lambda x: x * 1).shuffle(7, seed=3),
    "shuffle_repeat_batch": lambda tmp: D.from_tensor_slices(np.arange(13)).shuffle(
        5, seed=1).repeat(3).batch(4),
    "repeat_shuffle": lambda tmp: D.range(6).repeat(3).shuffle(4, seed=9),
    "shuffle_fixed_order": lambda tmp: D.range(8).shuffle(8, seed=2,
                                                         reshuffle_each_iteration=False).repeat(2),
    "take_skip_shard": lambda tmp: D.range(50).skip(3).take(30).shard(3, 1),
    "take_skip_shard_elements": lambda tmp: D.range(50).map(lambda x: x).skip(3).take(30).shard(
        3, 1),
    "enumerate": lambda tmp: D.range(5, 12).enumerate(start=2),
    "zip": lambda tmp: D.zip((D.range(6).map(lambda x: x), D.range(10, 20))),
    "concatenate": lambda tmp: D.range(4).concatenate(D.range(10, 13).map(lambda x: x)),
    "flat_map": lambda tmp: D.range(5).flat_map(lambda x: D.range(x)),
    "interleave": lambda tmp: D.range(1, 7).interleave(
        lambda x: D.range(x).map(lambda y: y * 10 + x), cycle_length=3, block_length=2),
    "parallel_interleave": lambda tmp: D.range(1, 7).interleave(
        lambda x: D.range(x), cycle_length=2, block_length=3, num_parallel_calls=2),
    "scan": lambda tmp: D.range(8).scan(ef.constant(0, ef.int64), lambda s, x: (s + x, s)),
    "prefetch": lambda tmp: D.range(30).map(lambda x: x * x).prefetch(3),
    "prefetch_batch_shuffle": lambda tmp: D.range(30).shuffle(10, seed=4).batch(4).prefetch(2),
    "ragged_batch": lambda tmp: D.range(6).map(lambda x: ef.range(x % 3)).ragged_batch(2),
    "assert_cardinality": lambda tmp: D.range(5).map(lambda x: x).apply(
        ef.data.experimental.assert_cardinality(5)),
    "with_options": lambda tmp: D.range(6).map(lambda x: x).with_options(ef.data.Options()),
    "memory_cache_repeat": lambda tmp: D.range(6).map(lambda x: x * 2).cache().repeat(3),
    "memory_cache_shuffle": lambda tmp: D.range(9).cache().shuffle(4, seed=1).repeat(2),
    "file_cache_repeat": lambda tmp: D.range(7).map(lambda x: x + 1).cache(
        str(tmp / "cache")).repeat(2),
    "choose": lambda tmp: D.choose_from_datasets(
        [D.range(5), D.range(10, 15).map(lambda x: x)], D.from_tensor_slices(
            np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0], np.int64))),
    "sample": lambda tmp: D.sample_from_datasets([D.range(8), D.range(100, 108)], seed=4),
    "shuffle_ragged": lambda tmp: D.range(8).map(lambda x: ef.range(x % 4)).ragged_batch(
        2).shuffle(3, seed=1),
    "prefetch_sparse": lambda tmp: D.from_tensor_slices(ef.sparse.SparseTensor(
        [[0, 0], [1, 2], [3, 1]], [1.0, 2.0, 3.0], [4, 3])).prefetch(2),
    "window_flat_map": lambda tmp: D.range(11).window(3, shift=2, stride=2).flat_map(
        lambda w: w.batch(3)),
    "window_zip_flat_map": lambda tmp: D.zip((D.range(9), D.range(9).map(lambda x: -x))).window(
        4, drop_remainder=True).flat_map(lambda a, b: D.zip((a.batch(4), b.batch(4)))),
    "text_lines": lambda tmp: ef.data.TextLineDataset(_text_files(tmp)),
    "text_lines_shuffled": lambda tmp: ef.data.TextLineDataset(_text_files(tmp)).shuffle(
        5, seed=7).batch(3),
    "tfrecords": lambda tmp: ef.data.TFRecordDataset(_record_files(tmp)),
}


def _cases():
    for name in sorted(PIPELINES):
        for where in ("fresh", "mid", "end", "exhausted"):
            yield name, where


@pytest.mark.parametrize("name,where", list(_cases()))
def test_restore_continues_exactly(tmp_path, name, where):
    make = PIPELINES[name]
    full = [_plain(x) for x in make(tmp_path)]
    ds = make(tmp_path)
    it = iter(ds)
    n = {"fresh": 0, "mid": max(1, len(full) // 2), "end": len(full),
         "exhausted": len(full)}[where]
    head = [_plain(next(it)) for _ in range(n)]
    if where == "exhausted":
        with pytest.raises(StopIteration):
            next(it)
    state = it._save_state()
    rest = [_plain(x) for x in it]
    if name != "unordered_map":
        assert head + rest == full
    # A freshly built identical pipeline continues with the same elements.
    fresh = iter(make(tmp_path))
    fresh._restore_state(state)
    assert [_plain(x) for x in fresh] == rest
    # The iterator it was saved from rewinds to the saved position.
    it._restore_state(state)
    assert [_plain(x) for x in it] == rest


def test_saving_does_not_change_what_follows():
    def make():
        return D.range(40).map(lambda x: x * 2, num_parallel_calls=4).shuffle(
            6, seed=5).prefetch(3)

    expected = [int(x) for x in make()]
    it = iter(make())
    got = []
    for i in range(len(expected)):
        if i % 3 == 0:
            it._save_state()
        got.append(int(next(it)))
    assert got == expected


def test_prefetch_saves_the_elements_made_ahead():
    ds = D.range(100).map(lambda x: x + 1).prefetch(8)
    it = iter(ds)
    assert int(next(it)) == 1
    import time

    time.sleep(0.2)  # let the producer fill its buffer
    state = it._save_state()
    fresh = iter(ds)
    fresh._restore_state(state)
    assert [int(x) for x in fresh] == list(range(2, 101))


def test_shuffle_epoch_counter_is_saved_as_tf():
    # TF 2.21: after restoring into a new pipeline, a later iter() gives the order the
    # original's next epoch had (the shuffle's seed generator state is part of the state).
    ds = D.range(6).shuffle(6, seed=3)
    first = [int(x) for x in ds]
    it = iter(ds)
    head = [int(next(it)) for _ in range(2)]
    state = it._save_state()
    rest = [int(x) for x in it]
    third = [int(x) for x in ds]
    assert sorted(head + rest) == list(range(6)) and head + rest != first or third != first
    ds2 = D.range(6).shuffle(6, seed=3)
    it2 = iter(ds2)
    it2._restore_state(state)
    assert [int(x) for x in it2] == rest
    assert [int(x) for x in ds2] == third


def test_unseeded_shuffle_restores_exactly():
    ds = D.range(50).shuffle(20).repeat(2)
    it = iter(ds)
    for _ in range(30):
        next(it)
    state = it._save_state()
    rest = [int(x) for x in it]
    fresh = iter(ds)
    fresh._restore_state(state)
    assert [int(x) for x in fresh] == rest


@pytest.mark.parametrize("other", [
    lambda: D.range(10).batch(2),
    lambda: D.range(10).shuffle(3, seed=1),
    lambda: D.range(10).map(lambda x: x).map(lambda x: x),
    lambda: D.zip((D.range(10), D.range(10))),
])
def test_restoring_into_another_pipeline_names_the_iterator(other):
    it = iter(D.range(10).map(lambda x: x * 2))
    next(it)
    state = it._save_state()
    with pytest.raises(ef.errors.NotFoundError, match="Iterator::.*dataset definition"):
        iter(other())._restore_state(state)


def test_restoring_into_a_smaller_source_is_refused():
    it = iter(D.range(10))
    for _ in range(6):
        next(it)
    state = it._save_state()
    with pytest.raises(ef.errors.NotFoundError, match="beyond the 4 rows"):
        iter(D.range(4))._restore_state(state)


def test_corrupt_state_is_data_loss():
    it = iter(D.range(10).batch(2))
    next(it)
    state = bytearray(it._save_state())
    state[-1] ^= 0xFF
    with pytest.raises(ef.errors.DataLossError):
        iter(D.range(10).batch(2))._restore_state(bytes(state))
    # A failed restore leaves the iterator where it was.
    target = iter(D.range(10).batch(2))
    next(target)
    with pytest.raises(ef.errors.DataLossError):
        target._restore_state(bytes(state[:40]))
    assert next(target).numpy().tolist() == [2, 3]


def _gen():
    yield from range(4)


def test_from_generator_cannot_be_saved_as_tf():
    # TF 2.21: FailedPreconditionError "PyFunc is stateful" by default, and
    # UnimplementedError "GeneratorDataset does not support checkpointing" with IGNORE.
    ds = D.from_generator(_gen, output_signature=ef.TensorSpec([], ef.int64)).map(lambda x: x)
    it = iter(ds)
    next(it)
    with pytest.raises(ef.errors.FailedPreconditionError, match="from_generator"):
        it._save_state()
    options = ef.data.Options()
    options.experimental_external_state_policy = ef.data.experimental.ExternalStatePolicy.IGNORE
    it = iter(ds.with_options(options))
    next(it)
    with pytest.raises(ef.errors.UnimplementedError, match="GeneratorDataset"):
        it._save_state()
    # Saving never ran the generator further.
    assert int(next(it)) == 1


def test_stateful_functions_follow_the_external_state_policy():
    # TF 2.21: ReadVariableOp / RandomUniformInt "is stateful" under the default policy.
    v = ef.Variable(5, dtype=ef.int64)
    for fn, op in ((lambda x: x + v, "ReadVariableOp"),
                   (lambda x: x + ef.cast(ef.random.uniform([], 0, 1, ef.int32), ef.int64),
                    "RandomUniformInt"),
                   (lambda x: ef.constant(int(x.numpy()), ef.int64), "cannot be traced")):
        ds = D.range(6).map(fn)
        it = iter(ds)
        next(it)
        with pytest.raises(ef.errors.FailedPreconditionError, match=op):
            it._save_state()
        policy = ef.data.experimental.ExternalStatePolicy
        for value in (policy.WARN, policy.IGNORE):
            options = ef.data.Options()
            options.experimental_external_state_policy = value
            it = iter(ds.with_options(options))
            next(it)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                state = it._save_state()
            assert bool(caught) == (value == policy.WARN)
            fresh = iter(ds.with_options(options))
            fresh._restore_state(state)
            assert [int(x) for x in fresh] == [x + 5 for x in range(1, 6)] or op != \
                "ReadVariableOp"
    for method in ("filter", "take_while"):
        it = iter(getattr(D.range(4), method)(lambda x: x < v))
        next(it)
        with pytest.raises(ef.errors.FailedPreconditionError, match="Dataset.%s" % method):
            it._save_state()


def test_memory_cache_is_saved_with_its_contents():
    # As TF: a pass reading the cache saves the cache, so a new process has it.
    calls = []

    def make():
        return D.range(5).map(lambda x: x * 3).cache().repeat(2)

    ds = make()
    it = iter(ds)
    for _ in range(7):
        next(it)
    state = it._save_state()
    fresh_ds = D.range(5).map(lambda x: calls.append(1) or x * 3).cache().repeat(2)
    fresh = iter(fresh_ds)
    fresh._restore_state(state)
    before = len(calls)  # (the function also runs on example inputs to learn its spec)
    assert [int(x) for x in fresh] == [6, 9, 12]
    assert len(calls) == before  # read from the restored cache, not from the input


def test_restored_file_cache_writing_pass_leaves_the_cache_to_the_next_pass(tmp_path):
    def make():
        return D.range(6).map(lambda x: x * 2).cache(str(tmp_path / "c"))

    it = iter(make())
    next(it)
    next(it)
    state = it._save_state()
    it.close()
    fresh = iter(make())
    fresh._restore_state(state)
    assert [int(x) for x in fresh] == [4, 6, 8, 10]
    assert not os.path.exists(tmp_path / "c" / "index.json")
    assert [int(x) for x in make()] == [0, 2, 4, 6, 8, 10]
    assert os.path.exists(tmp_path / "c" / "index.json")


class _Opaque(D):
    """A dataset whose pass is a plain generator (no saved state)."""

    def __init__(self):
        super().__init__()
        self._spec = ef.TensorSpec([], ef.int64)

    def _elements(self):
        yield from (ef.constant(i, ef.int64) for i in range(3))


def test_a_pass_without_saved_state_is_refused_by_name():
    it = iter(_Opaque().map(lambda x: x).batch(2))
    with pytest.raises(ef.errors.UnimplementedError,
                       match="_Opaque does not support checkpointing.*Iterator::Batch::Map"):
        it._save_state()


def test_checkpoint_and_manager_round_trip(tmp_path):
    def make():
        return D.from_tensor_slices(np.arange(20)).shuffle(6, seed=2).map(
            lambda x: x * 10).batch(3).prefetch(2)

    it = iter(make())
    step = ef.Variable(0, dtype=ef.int64)
    ckpt = ef.train.Checkpoint(step=step, iterator=it)
    manager = ef.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    next(it)
    step.assign(1)
    manager.save()
    rest = [_plain(x) for x in it]
    names = [n for n, _ in ef.train.list_variables(manager.latest_checkpoint)]
    assert "iterator/.ATTRIBUTES/ITERATOR_STATE" in names  # TF's key
    fresh = iter(make())
    new_step = ef.Variable(0, dtype=ef.int64)
    status = ef.train.Checkpoint(step=new_step, iterator=fresh).restore(
        manager.latest_checkpoint)
    status.assert_consumed()
    assert int(new_step) == 1
    assert [_plain(x) for x in fresh] == rest
    # A checkpoint without the iterator's state leaves it unrestored, and says so.
    path = ef.train.Checkpoint(step=step).save(str(tmp_path / "no_iterator"))
    unrestored = iter(make())
    status = ef.train.Checkpoint(step=new_step, iterator=unrestored).restore(path)
    with pytest.raises(AssertionError, match="iterator/.ATTRIBUTES/"):
        status.assert_consumed()


def test_an_unsaveable_iterator_writes_no_checkpoint(tmp_path):
    it = iter(D.from_generator(_gen, output_signature=ef.TensorSpec([], ef.int64)))
    ckpt = ef.train.Checkpoint(iterator=it)
    with pytest.raises(ef.errors.FailedPreconditionError):
        ckpt.write(str(tmp_path / "c"))
    assert not os.listdir(tmp_path)


def test_state_holds_no_pickle():
    it = iter(D.from_tensor_slices(["x", "yy"]).shuffle(2, seed=1))
    next(it)
    reader = iterator_state.from_bytes(it._save_state())
    assert all(v.dtype != object for v in reader.tensors.values())


FUZZ_PIPELINES = ["shuffle_repeat_batch", "interleave", "prefetch_batch_shuffle", "unbatch",
                  "text_lines_shuffled", "memory_cache_shuffle", "shuffle_ragged", "sample",
                  "take_skip_shard", "parallel_map", "zip", "concatenate"]


@pytest.mark.parametrize("name", FUZZ_PIPELINES)
def test_hostile_states_raise_eagerflow_errors(tmp_path, name):
    """States with valid checksums but hostile values (crafted, as a file could be) are
    refused with eagerflow errors or restore harmlessly; nothing else escapes."""
    make = PIPELINES[name]
    it = iter(make(tmp_path))
    for _ in range(3):
        next(it)
    reader = iterator_state.from_bytes(it._save_state())
    keys = sorted(reader.tensors)
    rng = np.random.default_rng(len(name))
    extremes = [-1, 0, 1, 2 ** 31, 2 ** 62, -2 ** 62, 7]
    for trial in range(60):
        tensors = {k: np.array(v) for k, v in reader.tensors.items()}
        key = keys[rng.integers(len(keys))]
        value = tensors[key]
        kind = trial % 4
        if kind == 0 and value.size:
            flat = value.reshape(-1).copy()
            if flat.dtype.kind in "iu":
                flat[rng.integers(flat.size)] = np.array(
                    extremes[rng.integers(len(extremes))]).astype(flat.dtype)
            tensors[key] = flat.reshape(value.shape)
        elif kind == 1:
            tensors[key] = value.astype(np.float32) if value.dtype != np.float32 else \
                value.astype(np.int64)
        elif kind == 2:
            del tensors[key]
        else:
            tensors[key] = np.concatenate([value.reshape(-1), value.reshape(-1)])
        writer = iterator_state.StateWriter(tensors=tensors, ops=dict(reader.ops))
        state = iterator_state.to_bytes(writer)
        target = iter(make(tmp_path))
        try:
            target._restore_state(state)
            for _ in range(50):
                next(target)
        except (StopIteration, ef.errors.OpError, ValueError):
            pass  # eagerflow errors (InvalidArgumentError is also a ValueError)
        finally:
            target.close()


@pytest.mark.parametrize("make", [lambda: D.range(5).repeat(2),
                                  lambda: D.range(5).map(lambda x: x).repeat(2)])
def test_a_hostile_state_cannot_make_a_finite_pass_endless(make):
    it = iter(make())
    next(it)
    reader = iterator_state.from_bytes(it._save_state())
    tensors = dict(reader.tensors)
    for key, value in tensors.items():
        if "passes" in key:
            flat = np.array(value).reshape(-1)
            flat[0] = -2 ** 62
            tensors[key] = flat.reshape(value.shape)
    state = iterator_state.to_bytes(iterator_state.StateWriter(tensors=tensors,
                                                                ops=dict(reader.ops)))
    with pytest.raises(ef.errors.NotFoundError, match="passes"):
        iter(make())._restore_state(state)


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_text_lines_restore_at_a_byte_offset(tmp_path, compression):
    import gzip
    import zlib

    data = b"".join(b"line %d\r\n" % i if i % 3 == 0 else b"line %d\n" % i for i in range(50))
    path = tmp_path / "t.txt"
    path.write_bytes({None: data, "GZIP": gzip.compress(data),
                      "ZLIB": zlib.compress(data)}[compression])

    def make():
        return ef.data.TextLineDataset(str(path), compression_type=compression)

    it = iter(make())
    for _ in range(17):
        next(it)
    state = it._save_state()
    fresh = iter(make())
    fresh._restore_state(state)
    assert [x.numpy() for x in fresh] == [b"line %d" % i for i in range(17, 50)]


def test_a_stateful_scan_state_update_is_refused():
    v = ef.Variable(2, dtype=ef.int64)
    it = iter(D.range(5).scan(ef.constant(0, ef.int64), lambda s, x: (s + x * v, x)))
    next(it)
    with pytest.raises(ef.errors.FailedPreconditionError, match="Dataset.scan: ReadVariableOp"):
        it._save_state()
