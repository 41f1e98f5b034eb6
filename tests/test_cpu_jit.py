"""The compiled-kernel backend: kernels compile on first use, switch off cleanly, and
``import eagerflow`` never imports numba."""

import numpy as np
import pytest

from eagerflow.backend import cpu_jit, cpu_threads
from tests.fresh_interpreter import run_python_ok

numba = pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _kernels_on():
    """These tests are of the compiled form: on even under EAGERFLOW_CPU_KERNELS=numpy."""
    before = cpu_jit.enabled_setting()
    cpu_jit.set_enabled(True)
    yield
    cpu_jit.set_enabled(before)


def _scale_rows(x, factor, out, lo, hi):
    for i in range(lo, hi):
        for j in range(x.shape[1]):
            out[i, j] = factor * x[i, j]


def _bad_kernel(x, lo, hi):
    return x.no_such_attribute  # not compilable: numba cannot type it


SCALE = cpu_jit.kernel(_scale_rows, signatures=["void(float64[:, ::1], float64, "
                                                "float64[:, ::1], int64, int64)"])


def test_compiled_kernel_matches_numpy_on_thread_blocks():
    fn = SCALE.compiled()
    assert fn is not None
    x = np.random.default_rng(0).standard_normal((300, 257))
    out = np.empty_like(x)
    cpu_threads.run_blocks(lambda lo, hi: fn(x, 3.0, out, lo, hi), len(x), x.size,
                           min_elements=1)
    np.testing.assert_array_equal(out, 3.0 * x)


def test_switched_off_gives_none_and_wanted_is_false():
    try:
        cpu_jit.set_enabled(False)
        assert SCALE.compiled() is None
        assert not cpu_jit.enabled()
        assert not cpu_jit.wanted(1 << 30)
    finally:
        cpu_jit.set_enabled(True)
    assert SCALE.compiled() is not None
    assert cpu_jit.wanted(cpu_jit.MIN_ELEMENTS)
    assert not cpu_jit.wanted(cpu_jit.MIN_ELEMENTS - 1)


def test_a_kernel_that_cannot_compile_falls_back(caplog):
    bad = cpu_jit.kernel(_bad_kernel, signatures=["float64(float64[::1], int64, int64)"])
    assert bad.compiled() is None
    assert "not usable" in caplog.text
    assert bad.compiled() is None  # decided once


def test_import_does_not_load_numba_and_env_turns_kernels_off(tmp_path):
    run_python_ok("""
        import sys
        import eagerflow as ef
        assert "numba" not in sys.modules
        x = ef.nn.max_pool2d(ef.ones([1, 4, 4, 1]), 2, 2, "VALID")  # a small input
        assert "numba" not in sys.modules
        from eagerflow.backend import cpu_jit
        assert not cpu_jit.enabled()
        print("OK")
    """, tmp_path, env={"EAGERFLOW_CPU_KERNELS": "numpy"})


_SOURCE = """import numpy as np


def twice(x, out, lo, hi):
    for i in range(lo, hi):
        out[i] = np.float64(2.0) * x[i]
"""


def test_generated_source_is_cached_on_disk_and_loaded_by_a_later_process(tmp_path):
    cache = tmp_path / "kernels"
    code = """
        import os, numpy as np
        from eagerflow.backend import cpu_jit
        k = cpu_jit.source_kernel(%r, "twice", signatures=[
            "void(float64[::1], float64[::1], int64, int64)"])
        x = np.arange(5.0); out = np.empty(5)
        k.compiled()(x, out, 0, 5)
        assert out.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
        assert k.fn.__code__.co_filename.startswith(os.environ["EAGERFLOW_KERNEL_CACHE"])
        print("OK")
    """ % _SOURCE
    env = {"EAGERFLOW_KERNEL_CACHE": str(cache)}
    run_python_ok(code, tmp_path, env=env)
    files = sorted(p.name for p in cache.iterdir())
    assert len([f for f in files if f.endswith(".py")]) == 1
    compiled = list((cache / "__pycache__").glob("*.nbc"))
    assert compiled
    stamp = [p.stat().st_mtime_ns for p in compiled]
    run_python_ok(code, tmp_path, env=env)  # loaded, not compiled and written again
    assert [p.stat().st_mtime_ns for p in compiled] == stamp


def test_a_cache_directory_others_may_write_is_not_used(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("EAGERFLOW_KERNEL_CACHE", str(shared))
    assert cpu_jit.cache_directory() is None
    k = cpu_jit.source_kernel(_SOURCE, "twice")
    assert k.fn.__code__.co_filename == "<generated kernel>"  # compiled in memory
    x = np.arange(3.0)
    out = np.empty(3)
    k.compiled()(x, out, 0, 3)
    assert out.tolist() == [0.0, 2.0, 4.0]
    assert list(shared.iterdir()) == []
