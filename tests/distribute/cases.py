"""Strategy tests run in a fresh interpreter with several logical CPUs.

The logical device layout is fixed at a process's first op, and the test process has long
passed that point. A test module declares its cases with ``run = Cases(__name__, cpus=3)``
and ``@run.case``; under pytest each case is a test that reads its outcome from one child
process per module, which sets up the CPUs, runs every case of the module and reports
each one's traceback. The child runs in its own session and is killed as a group on
timeout, so a hang fails the tests instead of stopping the suite.
"""

import json
import os
import signal
import subprocess
import sys
import traceback

import pytest

from tests.fresh_interpreter import ROOT

_CHILD = "EAGERFLOW_DIST_CASES"


class Cases:
    """The cases of one test module.

    Args:
        module: The module's ``__name__``.
        cpus: Logical CPUs the child process configures.
        timeout: Seconds the whole module may take.
    """

    def __init__(self, module, cpus=3, timeout=300):
        self.module = module
        self.cpus = cpus
        self.timeout = timeout
        self.functions = {}
        self._results = None

    def case(self, fn):
        self.functions[fn.__name__] = fn
        if os.environ.get(_CHILD):
            return fn

        def test():
            outcome = self.results().get(fn.__name__)
            if outcome is None:
                pytest.fail("case %s did not run in the child process" % fn.__name__)
            if outcome != "ok":
                pytest.fail(outcome, pytrace=False)

        test.__name__ = fn.__name__
        test.__doc__ = fn.__doc__
        return test

    def results(self):
        if self._results is None:
            self._results = self._run_child()
        return self._results

    def _run_child(self):
        env = dict(os.environ, **{_CHILD: "1"})
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.distribute.cases", self.module, str(self.cpus)],
            cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return {name: "timed out after %ds (module %s)\n%s" % (self.timeout, self.module,
                                                                  err[-3000:])
                    for name in self.functions}
        for line in reversed(out.splitlines()):
            if line.startswith("CASES "):
                return json.loads(line[6:])
        return {name: "child exited %d without results:\n%s\n%s" % (
            proc.returncode, out[-3000:], err[-3000:]) for name in self.functions}


def _main(module, cpus):
    import importlib

    import eagerflow as ef

    cpu = ef.config.list_physical_devices("CPU")[0]
    ef.config.set_logical_device_configuration(
        cpu, [ef.config.LogicalDeviceConfiguration() for _ in range(cpus)])
    mod = importlib.import_module(module)
    results = {}
    for name, fn in mod.run.functions.items():
        try:
            fn()
            results[name] = "ok"
        except BaseException:  # noqa: BLE001 - reported to the parent
            results[name] = traceback.format_exc()
    sys.stdout.flush()
    print("CASES " + json.dumps(results))


if __name__ == "__main__":
    _main(sys.argv[1], int(sys.argv[2]))
