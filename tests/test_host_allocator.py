"""The host memory policy: applied once, at the first graph compile, and switchable."""

import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import sys
from eagerflow.framework import host_allocator
assert not host_allocator._applied
import eagerflow as ef
ef.constant(1.0) + 1.0
assert not host_allocator._applied, "eager code must not touch malloc"
if sys.argv[1] == "off":
    assert ef.config.experimental.set_host_memory_retention(False) is True
ef.function(lambda x: x * 2.0)(ef.constant(1.0))
assert host_allocator._applied == (sys.argv[1] != "off")
assert ef.config.experimental.set_host_memory_retention(True) is (sys.argv[1] == "off")
print("ok")
"""


@pytest.mark.parametrize("mode", ["on", "off"])
def test_policy_applies_at_first_graph_compile_unless_turned_off(mode):
    env = dict(os.environ)
    env.pop("EAGERFLOW_HOST_ALLOCATOR", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_environment_variable_keeps_the_system_allocator():
    env = dict(os.environ, EAGERFLOW_HOST_ALLOCATOR="system")
    code = ("from eagerflow.framework import host_allocator as h; import eagerflow as ef; "
            "ef.function(lambda x: x + 1.0)(ef.constant(1.0)); "
            "print(h.retention_enabled(), h._applied)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False False"
