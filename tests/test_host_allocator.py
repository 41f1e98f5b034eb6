"""The host memory policy: applied once, at the first graph compile, and switchable."""

import pytest

from tests.fresh_interpreter import run_python

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
    # "retain" is the default: set explicitly, so that the caller's environment cannot
    # switch the policy off.
    out = run_python(SCRIPT, mode, env={"EAGERFLOW_HOST_ALLOCATOR": "retain"})
    assert out.strip() == "ok"


def test_environment_variable_keeps_the_system_allocator():
    code = ("from eagerflow.framework import host_allocator as h; import eagerflow as ef; "
            "ef.function(lambda x: x + 1.0)(ef.constant(1.0)); "
            "print(h.retention_enabled(), h._applied)")
    out = run_python(code, env={"EAGERFLOW_HOST_ALLOCATOR": "system"})
    assert out.strip() == "False False"
