"""Running test code in a fresh interpreter (for state fixed at import: device layouts,
the host allocator policy, which modules get imported)."""

import os
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run_python(code, *args, env=None, cwd=None, timeout=120):
    """Runs ``code`` with the repository importable; asserts it exits 0, returns stdout.

    Args:
        code: Python source (dedented before it runs).
        *args: Command-line arguments (``sys.argv[1:]`` of the code).
        env: Environment variables to set on top of this process's.
        cwd: Working directory.
        timeout: Seconds before the run fails.
    """
    full = dict(os.environ, **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([full["PYTHONPATH"]] if full.get("PYTHONPATH") else []))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=cwd,
                            env=full, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def run_python_ok(code, cwd, env=None, timeout=120):
    """``run_python``, and the code must print OK as its last line."""
    out = run_python(code, env=env, cwd=cwd, timeout=timeout)
    assert out.strip().splitlines()[-1] == "OK", out
