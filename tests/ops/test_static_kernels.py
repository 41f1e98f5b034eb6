"""Static kernels (bound at graph compile time) compute exactly what the general kernels do,
for every primitive that declares one, on its samples with known and unknown dimensions."""

import numpy as np
import pytest

from eagerflow import dtypes
from eagerflow.backend import numpy_backend
from eagerflow.ops import load_all, registry
from eagerflow.ops.registry import AbstractValue

from tests.conftest import count

load_all()
STATIC = [p.name for p in registry.all_primitives() if p.static_kernel is not None]


def _aval(array, unknown):
    shape = tuple(None if unknown and i == 0 else d for i, d in enumerate(array.shape))
    return AbstractValue(shape, dtypes.from_numpy(array.dtype))


def test_some_primitives_declare_static_kernels():
    assert {"MatMul", "SumToShape"} <= set(STATIC)


@pytest.mark.parametrize("name", STATIC)
@pytest.mark.parametrize("unknown_leading_dim", [False, True])
def test_static_kernel_equals_general_kernel(name, unknown_leading_dim):
    prim = registry.get(name)
    general = prim.kernel(numpy_backend)
    rng = np.random.default_rng(0)
    checked = 0
    for dtype in (prim.sweep_dtypes or (dtypes.float32, dtypes.float64)):
        for args, attrs in prim.samples(rng, dtype):
            avals = [_aval(np.asarray(a), unknown_leading_dim) for a in args]
            static = prim.static_kernel(numpy_backend, avals, dict(attrs))
            if static is None:
                continue
            expected = general(*args, **attrs)
            got = static(*args)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(got, expected)
            checked += 1
    assert checked or unknown_leading_dim  # with static shapes every sample specializes
    count("static kernels: cases", checked)


def test_matmul_static_kernel_binds_each_transpose_flag():
    prim = registry.get("MatMul")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 5))
    for ta in (False, True):
        for tb in (False, True):
            x = a.T.copy() if ta else a
            y = b.T.copy() if tb else b
            avals = [_aval(x, False), _aval(y, False)]
            kernel = prim.static_kernel(numpy_backend, avals,
                                        {"transpose_a": ta, "transpose_b": tb})
            np.testing.assert_allclose(kernel(x, y), a @ b, rtol=1e-12)
    assert prim.static_kernel(numpy_backend, [_aval(a, False), _aval(b, False)],
                              {"adjoint_a": True}) is None
