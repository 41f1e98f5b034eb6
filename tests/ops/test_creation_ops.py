"""Tests of eagerflow.ops.array.creation_ops: zeros/ones/fill/eye/range/linspace against numpy,
TF's dtype inference, placement on the device scope's device, gradients, the composites
meshgrid and sequence_mask, and bad input."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.framework import context
from eagerflow.ops.array import creation_ops as C
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue, Primitive
from eagerflow.testing import check_vjp

from tests.ops.test_array_ops import (
    check_bad_samples, check_gradients, check_reference, run_doctests,
)

PRIMS = [v for v in vars(C).values() if isinstance(v, Primitive) and v.family == "array"
         and v.name not in ("ZerosLike", "OnesLike", "SumToShape")]
PRIMS = list(dict.fromkeys(PRIMS))


def ids(prims):
    return [p.name for p in prims]


# ------------------------------------------------------------------- registry sweeps


def test_primitives_are_complete():
    assert {p.name for p in PRIMS} == {"Zeros", "Ones", "Fill", "Eye", "Range", "LinSpace"}
    for prim in PRIMS:
        assert prim.reference is not None and prim.samples is not None
        assert prim.shape_fn is not None
        if prim.differentiable:
            assert "all" not in prim.saves


@pytest.mark.parametrize("prim", PRIMS, ids=ids(PRIMS))
def test_matches_numpy_reference(prim):
    check_reference(prim, prim.sweep_dtypes or (d.float32, d.float64))


@pytest.mark.parametrize("prim", [C.FILL, C.LINSPACE], ids=["Fill", "LinSpace"])
def test_gradient_matches_finite_differences(prim):
    check_gradients(prim)


@pytest.mark.parametrize("prim", [p for p in PRIMS if p.bad_samples],
                         ids=ids([p for p in PRIMS if p.bad_samples]))
def test_declared_bad_inputs_raise(prim):
    check_bad_samples(prim)


def test_attr_only_primitives_have_no_inputs():
    # Everything is in the attrs, so a trace can record them as self-contained nodes.
    for prim, attrs in ((C.ZEROS, {"shape": (2,), "dtype": "float32"}),
                        (C.RANGE, {"start": 0, "limit": 3, "delta": 1, "dtype": "int32"}),
                        (C.EYE, {"num_rows": 2, "num_columns": 2, "batch_shape": (),
                                 "dtype": "float64"})):
        out = execute(prim, (), attrs)
        aval = prim.shape_fn(**attrs)
        assert tuple(out.shape) == aval.shape and out.dtype is aval.dtype


# -------------------------------------------------------------------------- device


@contextlib.contextmanager
def _scope_on(device):
    st = context.state
    saved = (st.device_spec, st.device)
    st.device_spec, st.device = device.spec, device
    st.refresh()
    try:
        yield
    finally:
        st.device_spec, st.device = saved
        st.refresh()


def test_creation_ops_land_on_the_scope_device():
    other = context.Device("CPU", 1, 0)  # a second logical CPU, not registered globally
    with _scope_on(other):
        made = [C.zeros([2]), C.ones((1, 2)), C.fill([2], 3.0), C.eye(2), C.range(3),
                C.linspace(0.0, 1.0, 3), C.zeros_like([1, 2]), C.ones_like([1.0])]
    for t in made:
        assert t._device is other, t
    for t in (C.zeros([2]), C.range(3), C.eye(2), C.linspace(0.0, 1.0, 2)):
        assert t._device is context.CPU0


# ------------------------------------------------------------------ zeros / ones / fill


@pytest.mark.parametrize("shape", [[2, 3], (2, 3), ef.TensorShape([2, 3]),
                                   ef.constant([2, 3]), np.array([2, 3]),
                                   [ef.constant(2), np.int64(3)]])
def test_zeros_ones_accept_every_shape_form(shape):
    z = C.zeros(shape)
    o = C.ones(shape, dtype=ef.int64)
    assert z.shape == [2, 3] and z.dtype == ef.float32 and not z.numpy().any()
    assert o.dtype == ef.int64 and (o.numpy() == 1).all()


def test_zeros_ones_edge_cases():
    assert C.zeros(3).shape == [3]
    assert C.zeros([]).shape == [] and C.zeros([]).numpy() == 0
    assert C.zeros([2, 0]).shape == [2, 0]
    assert C.ones([2], ef.bool).numpy().tolist() == [True, True]
    assert C.ones([1], "complex64").numpy()[0] == 1 + 0j
    with pytest.raises(errors.InvalidArgumentError, match="negative"):
        C.zeros([2, -1])
    with pytest.raises(errors.InvalidArgumentError, match="list of ints"):
        C.ones([2.5])
    with pytest.raises(errors.InvalidArgumentError, match="list of ints"):
        C.zeros(ef.constant([2.0, 3.0]))
    with pytest.raises(errors.UnimplementedError):
        C.zeros([2], ef.string)


def test_fill_dtype_follows_value():
    assert C.fill([2], 7).dtype == ef.int32
    assert C.fill([2], 7.0).dtype == ef.float32
    assert C.fill([2, 2], ef.constant(1.5, ef.float64)).numpy().tolist() == [[1.5, 1.5]] * 2
    assert C.fill([], True).numpy()
    assert C.fill(ef.constant([3]), np.int64(4)).dtype == ef.int64
    with pytest.raises(errors.InvalidArgumentError, match="scalar"):
        C.fill([2], [1.0, 2.0])


def test_fill_gradient_is_the_sum():
    v = ef.constant(2.0)
    with ef.GradientTape() as tape:
        tape.watch(v)
        y = C.fill([2, 3], v) * ef.constant(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    assert tape.gradient(y, v).numpy() == 15.0


def test_zeros_like_ones_like_dtype():
    x = ef.constant([[1, 2, 3]])
    z = C.zeros_like(x)
    assert z.dtype == ef.int32 and z.shape == [1, 3] and not z.numpy().any()
    z = C.zeros_like(x, dtype=ef.float64)
    assert z.dtype == ef.float64 and not z.numpy().any()
    o = C.ones_like([1.5, 2.5], dtype="int32")
    assert o.dtype == ef.int32 and o.numpy().tolist() == [1, 1]
    assert C.ones_like(x, dtype=ef.bool).numpy().all()
    assert C.ones_like(np.zeros((0, 2))).shape == [0, 2]


# ----------------------------------------------------------------------------- eye


def test_eye():
    np.testing.assert_array_equal(C.eye(3).numpy(), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(C.eye(2, 4, dtype=ef.int32).numpy(), np.eye(2, 4))
    out = C.eye(3, 2, batch_shape=[2, 1])
    assert out.shape == [2, 1, 3, 2]
    np.testing.assert_array_equal(out.numpy()[1, 0], np.eye(3, 2))
    assert C.eye(ef.constant(2)).shape == [2, 2]
    assert C.eye(0).shape == [0, 0]
    with pytest.raises(errors.InvalidArgumentError, match="negative"):
        C.eye(-1)
    with pytest.raises(errors.InvalidArgumentError, match="integer"):
        C.eye(2.5)


# --------------------------------------------------------------------------- range


@pytest.mark.parametrize("args, kwargs, dtype", [
    ((5,), {}, ef.int32), ((2, 11, 3), {}, ef.int32), ((0.0, 1.0, 0.1), {}, ef.float32),
    ((1, 2.5), {}, ef.float32), ((5, -3, -2), {}, ef.int32), ((3, 3), {}, ef.int32),
    ((5,), {"dtype": ef.float64}, ef.float64), ((0, 10, 4), {"dtype": "int64"}, ef.int64),
    ((2**33,), {"limit": 2**33 + 3}, ef.int64),
])
def test_range_dtype_inference_and_values(args, kwargs, dtype):
    out = C.range(*args, **kwargs)
    assert out.dtype == dtype
    start, limit = (0, args[0]) if len(args) == 1 and "limit" not in kwargs else (
        args[0], kwargs.get("limit", args[1] if len(args) > 1 else None))
    delta = args[2] if len(args) > 2 else 1
    want = np.arange(start, limit, delta).astype(dtype.np_dtype)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    assert out.shape == [len(want)]


def test_range_with_tensor_arguments():
    out = C.range(ef.constant(4, ef.int64))
    assert out.dtype == ef.int64 and out.numpy().tolist() == [0, 1, 2, 3]
    out = C.range(ef.constant(1.0, ef.float64), 2, 0.5)
    assert out.dtype == ef.float64 and out.numpy().tolist() == [1.0, 1.5]
    assert C.range(np.int32(3)).numpy().tolist() == [0, 1, 2]


def test_range_float_end_is_exclusive():
    out = C.range(0.0, 1.0, 0.1).numpy()
    assert len(out) == 10 and out[-1] < 1.0
    np.testing.assert_allclose(out, np.arange(10, dtype=np.float32) * np.float32(0.1))


def test_range_errors():
    with pytest.raises(errors.InvalidArgumentError, match="delta != 0"):
        C.range(0, 5, 0)
    with pytest.raises(errors.InvalidArgumentError, match="start <= limit"):
        C.range(5, 2)
    with pytest.raises(errors.InvalidArgumentError, match="start >= limit"):
        C.range(2, 5, -1)
    with pytest.raises(errors.InvalidArgumentError, match="non-integer"):
        C.range(0, 2.5, dtype=ef.int32)
    with pytest.raises(errors.InvalidArgumentError, match="bool"):
        C.range(True)
    with pytest.raises(errors.InvalidArgumentError, match="not supported"):
        C.range(3, dtype=ef.bool)
    with pytest.raises(errors.InvalidArgumentError, match="real scalar"):
        C.range(ef.constant([1, 2]))
    with pytest.raises(errors.InvalidArgumentError, match="finite"):
        C.range(0.0, float("inf"))


# ------------------------------------------------------------------------ linspace


def test_linspace_matches_numpy():
    np.testing.assert_allclose(C.linspace(10.0, 12.0, 3).numpy(), [10.0, 11.0, 12.0])
    out = C.linspace([0.0, 5.0], [10.0, 40.0], 5, axis=0)
    np.testing.assert_allclose(out.numpy(), np.linspace([0, 5], [10, 40], 5, axis=0),
                               rtol=1e-6)
    out = C.linspace([0.0, 5.0], [10.0, 40.0], 5, axis=-1)
    assert out.shape == [2, 5]
    np.testing.assert_allclose(out.numpy(), np.linspace([0, 5], [10, 40], 5, axis=-1),
                               rtol=1e-6)
    out = C.linspace(ef.constant(0.0, ef.float64), 1.0, 4)
    assert out.dtype == ef.float64 and out.numpy()[-1] == 1.0
    assert C.linspace(3.0, 7.0, 1).numpy().tolist() == [3.0]
    assert C.linspace(0.0, 1.0, ef.constant(3)).shape == [3]


def test_linspace_errors():
    with pytest.raises(errors.InvalidArgumentError, match="num must be >= 1"):
        C.linspace(0.0, 1.0, 0)
    # Integer bounds compute in float64, as TF (the old test expected them refused).
    assert C.linspace(0, 10, 5).dtype == ef.float64
    with pytest.raises(errors.InvalidArgumentError, match="does not support dtype bool"):
        C.linspace(ef.constant(True), ef.constant(False), 5)
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        C.linspace([0.0], [1.0], 3, axis=2)
    with pytest.raises(errors.InvalidArgumentError, match="broadcast"):
        C.linspace([0.0, 1.0], [1.0, 2.0, 3.0], 3)


def test_linspace_gradient_with_broadcast_start():
    start = ef.constant(1.0, ef.float64)
    stop = ef.constant([2.0, 4.0], ef.float64)
    with ef.GradientTape() as tape:
        tape.watch([start, stop])
        y = C.linspace(start, stop, 3, axis=1)
    g_start, g_stop = tape.gradient(y, [start, stop])
    # Weights (1 - t) and t with t = 0, 0.5, 1 along the axis.
    assert g_start.shape == [] and g_start.numpy() == pytest.approx(2 * 1.5)
    np.testing.assert_allclose(g_stop.numpy(), [1.5, 1.5])
    assert check_vjp(C.LINSPACE, (np.array([0.5, -1.0]), np.array(2.0)), {"num": 4, "axis": 1})


def test_linspace_shape_rule():
    aval = C.LINSPACE.shape_fn(AbstractValue((None, 3), d.float32),
                               AbstractValue((3,), d.float32), num=4, axis=1)
    assert aval.shape == (None, 4, 3)


# ---------------------------------------------------------------------- composites


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_matches_numpy(indexing):
    a, b, c = np.arange(3), np.arange(10, 14), np.arange(20, 22)
    for args in ((a,), (a, b), (a, b, c)):
        got = C.meshgrid(*args, indexing=indexing)
        want = np.meshgrid(*args, indexing=indexing)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
    assert C.meshgrid() == []
    # Higher-rank inputs are flattened, as in TF.
    got = C.meshgrid(np.arange(4).reshape(2, 2), a, indexing=indexing)
    want = np.meshgrid(np.arange(4), a, indexing=indexing)
    np.testing.assert_array_equal(got[0].numpy(), want[0])


def test_meshgrid_gradient_and_errors():
    x = ef.constant([1.0, 2.0])
    y = ef.constant([3.0, 4.0, 5.0])
    with ef.GradientTape() as tape:
        tape.watch([x, y])
        gx_, gy_ = C.meshgrid(x, y)
        total = gx_ * gy_
    gx, gy = tape.gradient(total, [x, y])
    np.testing.assert_allclose(gx.numpy(), [12.0, 12.0])
    np.testing.assert_allclose(gy.numpy(), [3.0, 3.0, 3.0])
    with pytest.raises(TypeError, match="unexpected"):
        C.meshgrid(x, y, sparse=True)
    with pytest.raises(errors.InvalidArgumentError, match="indexing"):
        C.meshgrid(x, y, indexing="ji")
    with pytest.raises(errors.InvalidArgumentError, match="one dtype"):
        C.meshgrid(x, [1, 2])


def test_sequence_mask():
    lengths = np.array([1, 3, 0])
    want = np.arange(3)[None, :] < lengths[:, None]
    out = C.sequence_mask(lengths)
    assert out.dtype == ef.bool
    np.testing.assert_array_equal(out.numpy(), want)
    out = C.sequence_mask(ef.constant([[2], [0]], ef.int64), maxlen=4, dtype=ef.float32)
    assert out.shape == [2, 1, 4] and out.dtype == ef.float32
    np.testing.assert_array_equal(out.numpy()[:, 0], [[1, 1, 0, 0], [0, 0, 0, 0]])
    assert C.sequence_mask(ef.constant(2), 3).numpy().tolist() == [True, True, False]
    assert C.sequence_mask(np.zeros((0,), np.int32)).shape == [0, 0]
    with pytest.raises(errors.InvalidArgumentError, match="integer"):
        C.sequence_mask([1.5])
    with pytest.raises(errors.InvalidArgumentError, match="maxlen"):
        C.sequence_mask([1], maxlen=-1)


def test_docstring_examples_run(monkeypatch):
    run_doctests(C, monkeypatch)
