"""The registry sweep on a GPU: every primitive on cupy against its numpy reference, and
every gradient rule on the GPU against the CPU result. Skipped without cupy and a GPU."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.ops import load_all, registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.vjp import apply_vjp, saved_inputs

from tests.conftest import count
from tests.test_registry_sweep import TOLERANCE, _flatten_args, sweep_dtypes

pytestmark = pytest.mark.gpu

load_all()
NAMES = [p.name for p in registry.all_primitives()
         if p.reference is not None and p.samples is not None]
GPU_TOLERANCE = {"float32": (2e-4, 1e-5), "float64": (1e-9, 1e-11), "float16": (1e-2, 1e-2),
                 "complex64": (2e-4, 1e-5), "complex128": (1e-9, 1e-11)}


def _to_gpu(arrays):
    with ef.device("/gpu:0"):
        return tuple(ef.constant(a) for a in arrays)


def _close(got, expected, dtype_name):
    got = np.asarray(got.numpy())
    expected = np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if expected.dtype.kind in "fc":
        rtol, atol = GPU_TOLERANCE.get(expected.dtype.name, TOLERANCE.get(
            expected.dtype.name, (1e-5, 1e-6)))
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=dtype_name)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", NAMES)
def test_primitive_on_gpu_matches_reference(name):
    prim = registry.get(name)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    for dtype in sweep_dtypes(prim):
        for args, attrs in prim.samples(rng, dtype):
            flat = _flatten_args(prim, args)
            inputs = _to_gpu(flat)
            with ef.device("/gpu:0"):
                got = execute(prim, inputs, attrs)
            outs = got if isinstance(got, tuple) else (got,)
            assert all("GPU" in o.device for o in outs), name
            expected = prim.reference(*flat, **attrs)
            expected = expected if isinstance(got, tuple) else (expected,)
            for g, e in zip(outs, expected):
                _close(g, e, dtype.name)
    count("gpu sweep: primitives", 1)


@pytest.mark.parametrize("name", [p.name for p in registry.all_primitives()
                                  if p.vjp is not None and p.samples is not None])
def test_gradient_rule_on_gpu_matches_cpu(name):
    prim = registry.get(name)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    cases = prim.grad_samples(rng) if prim.grad_samples else prim.samples(rng, ef.float64)
    args, attrs = cases[0]
    flat = [np.asarray(a) for a in _flatten_args(prim, args)]
    results = []
    for device in ("/cpu:0", "/gpu:0"):
        with ef.device(device):
            inputs = tuple(ef.constant(a) for a in flat)
            out = execute(prim, inputs, attrs)
            outs = out if isinstance(out, tuple) else (out,)
            cot = tuple(ef.ones_like(o) for o in outs)
            grads = apply_vjp(prim, cot if not prim.single else cot[0],
                              saved_inputs(prim, inputs), out if prim.saves_out else None,
                              attrs, [a.shape for a in flat])
            results.append([None if g is None else np.asarray(g.numpy()) for g in grads])
    for cpu, gpu in zip(*results):
        if cpu is None:
            assert gpu is None
        else:
            np.testing.assert_allclose(gpu, cpu, rtol=1e-7, atol=1e-9)
    count("gpu sweep: gradient rules", 1)
