"""Checkpoint behaviour TF programs rely on (values recorded with TF 2.21)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import eagerflow as ef


def test_restore_none_is_a_no_op_with_tf_assertions():
    v = ef.Variable(3.0)
    status = ef.train.Checkpoint(v=v).restore(None)
    assert float(v) == 3.0
    assert status.expect_partial() is status
    assert status.run_restore_ops() is None and status.initialize_or_restore() is None
    for check in (status.assert_consumed, status.assert_existing_objects_matched,
                  status.assert_nontrivial_match):
        with pytest.raises(AssertionError, match=r"No checkpoint specified \(save_path=None\)"):
            check()


def test_tf_resume_snippet_on_a_first_run(tmp_path):
    v = ef.Variable(1.0)
    ckpt = ef.train.Checkpoint(v=v)
    manager = ef.train.CheckpointManager(ckpt, str(tmp_path / "ckpt"), max_to_keep=2)
    ckpt.restore(manager.latest_checkpoint)  # None on a first run
    assert float(v) == 1.0


STEP = textwrap.dedent("""
    import eagerflow as ef
    v = ef.Variable(1.0)
    ckpt = ef.train.Checkpoint(v=v)
    manager = ef.train.CheckpointManager(ckpt, "./ckpt", max_to_keep=3)
    ckpt.restore(manager.latest_checkpoint)
    v.assign_add(1.0)
    print(manager.save(), float(v))
""")


def test_relative_manager_directory_resumes_in_the_next_process(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(ef.__file__))] + sys.path))
    outputs = [subprocess.run([sys.executable, "-c", STEP], cwd=tmp_path, env=env, timeout=120,
                              capture_output=True, text=True, check=True).stdout.split()
               for _ in range(3)]
    # Each process resumes from the previous one: steps 1, 2, 3 and values 2, 3, 4.
    assert [o[0] for o in outputs] == ["./ckpt/ckpt-1", "./ckpt/ckpt-2", "./ckpt/ckpt-3"]
    assert [float(o[1]) for o in outputs] == [2.0, 3.0, 4.0]
    state = (tmp_path / "ckpt" / "checkpoint").read_text()
    assert 'model_checkpoint_path: "ckpt-3"' in state


def test_load_checkpoint_and_list_variables(tmp_path):
    class Net(ef.Module):
        def __init__(self):
            super().__init__()
            self.layers = [ef.Variable(1.0), {"w": ef.Variable([2.0, 3.0])}]

    path = ef.train.Checkpoint(net=Net(), v=ef.Variable([1.0, 2.0])).save(str(tmp_path / "m"))
    names = [n for n, _ in ef.train.list_variables(path)]
    # The keys TF 2.21 writes for the same objects (it adds its own object-graph entry).
    assert names == ["net/layers/0/.ATTRIBUTES/VARIABLE_VALUE",
                     "net/layers/1/w/.ATTRIBUTES/VARIABLE_VALUE",
                     "save_counter/.ATTRIBUTES/VARIABLE_VALUE", "v/.ATTRIBUTES/VARIABLE_VALUE"]
    reader = ef.train.load_checkpoint(path)
    assert reader.get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE").tolist() == [1.0, 2.0]
    assert reader.get_variable_to_shape_map()["net/layers/1/w/.ATTRIBUTES/VARIABLE_VALUE"] == [2]
    assert reader.get_variable_to_dtype_map()["v/.ATTRIBUTES/VARIABLE_VALUE"] == ef.float32
    assert reader.has_tensor("v/.ATTRIBUTES/VARIABLE_VALUE") and not reader.has_tensor("nope")
    with pytest.raises(ef.errors.NotFoundError, match="nope"):
        reader.get_tensor("nope")


def test_restore_into_objects_reached_through_lists_and_dicts(tmp_path):
    class Net(ef.Module):
        def __init__(self, a, b):
            super().__init__()
            self.layers = [ef.Variable(a), {"w": ef.Variable(b)}]

    path = ef.train.Checkpoint(net=Net(1.0, 2.0)).save(str(tmp_path / "n"))
    target = Net(0.0, 0.0)
    ef.train.Checkpoint(net=target).restore(path).assert_consumed()
    assert float(target.layers[0]) == 1.0 and float(target.layers[1]["w"]) == 2.0


@pytest.mark.parametrize("how", ["truncate", "garbage"])
def test_damaged_checkpoint_restore_raises_an_eagerflow_error(tmp_path, how):
    # The same program under TF 2.21 (truncating the data file) leaks an IndexError; here
    # every damaged checkpoint file raises DataLossError naming the file.
    v = ef.Variable(np.arange(64, dtype=np.float32))
    path = ef.train.Checkpoint(v=v).save(str(tmp_path / "ck"))
    for f in tmp_path.iterdir():
        if f.name.startswith("ck-1"):
            data = f.read_bytes()
            f.write_bytes(data[: len(data) // 2] if how == "truncate" else
                          bytes(len(data)))
    target = ef.train.Checkpoint(v=ef.Variable(np.zeros(64, np.float32)))
    with pytest.raises(ef.errors.DataLossError, match="ck-1"):
        target.restore(path).assert_consumed()


ITERATOR_RUN = textwrap.dedent("""
    import json, sys
    import numpy as np
    import eagerflow as ef
    mode, directory = sys.argv[1], sys.argv[2]
    x = np.arange(40)
    ds = (ef.data.Dataset.from_tensor_slices((x, x * 10)).shuffle(16, seed=3)
          .map(lambda a, b: a + b).repeat(2).batch(5).prefetch(2))
    it = iter(ds)
    step = ef.Variable(0, dtype=ef.int64)
    ckpt = ef.train.Checkpoint(step=step, iterator=it)
    manager = ef.train.CheckpointManager(ckpt, directory, max_to_keep=2)
    if mode == "save":
        for _ in range(7):
            next(it)
            step.assign_add(1)
        manager.save()
    else:
        ckpt.restore(manager.latest_checkpoint).assert_consumed()
    print(json.dumps({"step": int(step), "rest": [b.numpy().tolist() for b in it],
                      "next_pass": [b.numpy().tolist() for b in ds]}))
""")


def _run_script(path, *args):
    proc = subprocess.Popen([sys.executable, str(path), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONPATH=os.getcwd()))
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        raise
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_iterator_position_restores_in_a_new_process(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(ITERATOR_RUN)
    saved = _run_script(script, "save", str(tmp_path / "ckpt"))
    restored = _run_script(script, "restore", str(tmp_path / "ckpt"))
    assert restored["step"] == saved["step"] == 7
    assert restored["rest"] == saved["rest"] and len(saved["rest"]) == 16 - 7
    # The shuffle's epoch counter came with the state: the next pass has the same order too.
    assert restored["next_pass"] == saved["next_pass"]
    values = sorted(v for b in saved["rest"] for v in b)
    assert set(values) <= {a * 11 for a in range(40)}
