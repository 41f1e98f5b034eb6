"""Shared test configuration: markers that skip cleanly, and sweep counters in the summary."""

import pytest

SWEEP_COUNTS = {}


def count(key, n=1):
    SWEEP_COUNTS[key] = SWEEP_COUNTS.get(key, 0) + n


@pytest.fixture
def compiled_kernels(monkeypatch):
    """The compiled CPU kernels (``backend.cpu_jit``) on for inputs of every size, even
    under ``EAGERFLOW_CPU_KERNELS=numpy``; skips where numba does not import."""
    from eagerflow.backend import cpu_jit

    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(cpu_jit, "_setting", [True])
    if not cpu_jit.enabled():
        pytest.skip("numba does not import here")


def _has_gpu():
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no cupy, no driver, no device: all mean "no GPU"
        return False


def _has_mpi():
    # mpi4py importable and an mpirun beside this python (the mpich wheel) or on PATH.
    from eagerflow.distribute.launch import mpi_available

    return mpi_available()


def pytest_collection_modifyitems(config, items):
    gpu = mpi = None
    for item in items:
        if "gpu" in item.keywords:
            gpu = _has_gpu() if gpu is None else gpu
            if not gpu:
                item.add_marker(pytest.mark.skip(reason="needs cupy and a CUDA GPU"))
        if "mpi" in item.keywords:
            mpi = _has_mpi() if mpi is None else mpi
            if not mpi:
                item.add_marker(pytest.mark.skip(reason="needs mpi4py and mpirun"))


def pytest_terminal_summary(terminalreporter):
    if SWEEP_COUNTS:
        terminalreporter.section("eagerflow sweep counts")
        for key in sorted(SWEEP_COUNTS):
            terminalreporter.write_line("%s: %d" % (key, SWEEP_COUNTS[key]))
