"""Checkpoint behaviour TF programs rely on (values recorded with TF 2.21)."""

import os
import subprocess
import sys
import textwrap

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
