"""MultiWorkerMirroredStrategy under mpirun: training equals one process, data, mismatches."""

import json
import os

import numpy as np
import pytest

import eagerflow as ef

from tests.mpi.harness import SCRIPTS, mpirun, ok
from tests.fresh_interpreter import run_python

pytestmark = pytest.mark.mpi


def _single_process(script, out, *args):
    """The same script as a plain `python` run: a one-worker job."""
    run_python("import runpy, sys; sys.argv = %r; runpy.run_path(%r, run_name='__main__')"
               % ([str(SCRIPTS / script), str(out)] + list(args), str(SCRIPTS / script)))
    with open(out) as f:
        return json.load(f)


def _assert_same_training(one, many, rtol=1e-5):
    assert len(one["losses"]) == len(many["losses"])
    np.testing.assert_allclose(many["losses"], one["losses"], rtol=rtol)
    for a, b in zip(one["weights"], many["weights"]):
        a, b = np.array(a), np.array(b)
        # Relative to the layer's scale (weights near 0 have no meaningful relative error).
        assert np.max(np.abs(a - b)) <= rtol * np.max(np.abs(a)), np.max(np.abs(a - b))


@pytest.mark.parametrize("n,traced", [(2, False), (3, False), (2, True), (3, True)])
def test_custom_loop_equals_single_process(tmp_path, n, traced):
    # Adam on the bundled digits, global batch 64, 12 steps; ranks seed their initializers
    # differently, so equality also shows rank 0's initial values were broadcast.
    flags = ["--traced"] if traced else []
    one = _single_process("custom_loop.py", tmp_path / "one.json", *flags)
    ok(mpirun(n, "custom_loop.py", str(tmp_path / "many.json"), *flags), n)
    with open(tmp_path / "many.json") as f:
        many = json.load(f)
    _assert_same_training(one, many)
    if traced:  # inside @function the all-reduce is a graph node
        assert many["collective_nodes"] == 2 and one["collective_nodes"] == 0, many
        assert many["merged_nodes"] == 1, many  # gradients and loss: one collective a step


@pytest.mark.parametrize("n", [2, 3])
def test_keras_fit_equals_single_process(tmp_path, n):
    one = _single_process("fit_digits.py", tmp_path / "one.json")
    ok(mpirun(n, "fit_digits.py", str(tmp_path / "many.json")), n)
    with open(tmp_path / "many.json") as f:
        many = json.load(f)
    _assert_same_training(one, many)
    np.testing.assert_allclose(many["accuracy"], one["accuracy"], rtol=1e-5)
    np.testing.assert_allclose(many["evaluate"], one["evaluate"], rtol=1e-5)
    np.testing.assert_allclose(many["predict"], one["predict"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n,traced", [(2, True), (3, False)])
def test_sharded_optimizer_updates_equal_unsharded_and_checkpoint_the_same(tmp_path, n,
                                                                          traced):
    # Each worker updates its rows only and the rows are all-gathered: the same numbers as
    # every worker updating everything, bit for bit (the custom loop has a scalar
    # variable, given whole to one worker). Every rank reads the slots (gathered), writes
    # a checkpoint, restores it into zeroed slots and checks it got the values back.
    flags = ["--traced"] if traced else []
    one = _single_process("custom_loop.py", tmp_path / "one.json", *flags)
    runs = {}
    for mode in ("shard", "no-shard"):
        where = tmp_path / mode
        where.mkdir()
        ok(mpirun(n, "custom_loop.py", str(where / "out.json"), "--ckpt", str(where),
                  "--" + mode, *flags), n)
        with open(where / "out.json") as f:
            runs[mode] = json.load(f)
    sharded, plain = runs["shard"], runs["no-shard"]
    assert (sharded["sharded"], plain["sharded"]) == ("ShardedSlot", "MirroredVariable")
    for key in ("losses", "weights", "slots", "slot_names"):
        assert sharded[key] == plain[key], key
    _assert_same_training(one, sharded)
    # The checkpoint written from sharded slots is the unsharded one: same keys, shapes
    # and values (so either restores into the other).
    a, b = sharded["checkpoint"], plain["checkpoint"]
    assert ef.train.list_variables(a) == ef.train.list_variables(b)
    ra, rb = ef.train.load_checkpoint(a), ef.train.load_checkpoint(b)
    for key, _ in ef.train.list_variables(a):
        np.testing.assert_array_equal(ra.get_tensor(key), rb.get_tensor(key), err_msg=key)
    assert any("OPTIMIZER_SLOT" in key for key, _ in ef.train.list_variables(a))


def test_keras_fit_with_sharded_optimizer_updates_equals_unsharded(tmp_path):
    ok(mpirun(2, "fit_digits.py", str(tmp_path / "shard.json"), "--shard"), 2)
    ok(mpirun(2, "fit_digits.py", str(tmp_path / "plain.json")), 2)
    with open(tmp_path / "shard.json") as f, open(tmp_path / "plain.json") as g:
        sharded, plain = json.load(f), json.load(g)
    assert (sharded.pop("slots"), plain.pop("slots")) == ("ShardedSlot", "MirroredVariable")
    assert sharded == plain  # losses, metrics, evaluate, predict, weights: bit for bit


@pytest.mark.parametrize("n", [2, 3])
def test_data_sharding_policies_and_uneven_data(n):
    ok(mpirun(n, "data_shards.py"), n)


@pytest.mark.parametrize("mode,message", [
    ("variables", "broadcast 'initial value of kernel': rank 1 expects float32 [16, 33] but "
                  "root 0 sends float32 [16, 32]"),
    ("gradients", "the gradients to all-reduce differ between ranks: rank 0 has 4 and rank 1 "
                  "has 3"),
])
def test_ranks_building_different_models_fail_fast_with_the_difference(mode, message):
    res = mpirun(2, "mismatch.py", mode, env={"EAGERFLOW_COLLECTIVE_TIMEOUT": "120"},
                 timeout=240)
    # Long before the 120 s deadline (a few seconds quiet; the margin is for start-up on a
    # loaded machine: a job that waited for the deadline cannot finish under 60 s).
    assert res.returncode != 0 and res.seconds < 60, res
    # Every rank prints the message of the rank that stopped first (in "gradients" mode
    # both detect the mismatch, so either may be first).
    for r in range(2):
        assert "[eagerflow rank %d] rank " % r in res.stderr and message in res.stderr, \
            res.stderr[-3000:]
    assert res.survivors == []


def test_compressed_gradients_change_the_loss_curve_only_slightly(tmp_path):
    exact = _single_process("custom_loop.py", tmp_path / "one.json")
    ok(mpirun(2, "custom_loop.py", str(tmp_path / "fp16.json"), "--compression", "fp16"), 2)
    with open(tmp_path / "fp16.json") as f:
        lossy = json.load(f)
    diff = np.abs(np.array(lossy["losses"]) - exact["losses"]) / np.array(exact["losses"])
    assert 0 < diff.max() < 1e-2, diff  # lossy, but the curve stays within 1%
    print("fp16 compression: max relative loss difference over %d steps: %.2e"
          % (len(diff), diff.max()))


def test_plain_python_runs_the_script_as_one_worker_without_mpi(tmp_path):
    out = run_python("""
        import sys
        sys.argv = ["x", %r]
        import runpy
        runpy.run_path(%r, run_name="__main__")
        print("mpi4py" in sys.modules)
    """ % (str(tmp_path / "o.json"), str(SCRIPTS / "custom_loop.py")),
        env={k: "" for k in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")})
    assert out.split()[-2:] == ["OK", "False"], out
    assert os.path.exists(tmp_path / "o.json")


def test_keras_chief_alone_prints_logs_and_saves(tmp_path):
    res = mpirun(2, "keras_chief.py", str(tmp_path), "writes")
    ok(res, 2)
    assert res.stdout.count("Epoch 1/3") == 1 and res.stdout.count("Epoch 3/3") == 1, \
        res.stdout  # progress from the chief only
    names = sorted(os.listdir(tmp_path))
    assert names == ["ckpt-1.weights.h5", "ckpt-2.weights.h5", "ckpt-3.weights.h5",
                     "final.json", "log.csv", "model.keras", "tb"], names
    assert len(open(tmp_path / "log.csv").read().strip().splitlines()) == 4  # header + 3
    assert len(os.listdir(tmp_path / "tb" / "train")) == 1  # one event file: the chief's


def test_backup_and_restore_resumes_a_killed_job_to_the_same_weights(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    whole.mkdir()
    killed.mkdir()
    ok(mpirun(2, "keras_chief.py", str(whole), "backup"), 2)
    first = mpirun(2, "keras_chief.py", str(killed), "backup", "--kill-at-epoch", "2")
    assert first.returncode != 0 and first.survivors == [] and "rank 0 OK" not in first.stdout
    assert sorted(os.listdir(killed / "backup")) == ["epoch-1.efckpt", "training_state.json"]
    again = mpirun(2, "keras_chief.py", str(killed), "backup", "--kill-at-epoch", "2")
    ok(again, 2)
    assert "Epoch 1/4" not in again.stdout and "Epoch 3/4" in again.stdout, again.stdout
    assert os.listdir(killed / "backup") == []  # deleted once fit completed
    with open(whole / "final.json") as f, open(killed / "final.json") as g:
        assert json.load(f) == json.load(g)  # bit for bit
