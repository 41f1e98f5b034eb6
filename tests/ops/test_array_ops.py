"""Tests of the array family, eagerflow.ops.array: every primitive against numpy (values,
dtypes, shape rules), every gradient by finite differences in float64, the public functions' TF
semantics, and the errors bad input must raise."""

from __future__ import annotations

import doctest
import types

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import array as array_common
from eagerflow.ops.array import join_ops, pad_ops, reshape_ops, shape_ops, tile_repeat_ops
from eagerflow.ops.array import creation_ops as C
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue, Primitive
from eagerflow.testing import check_vjp
from eagerflow.ops import array as array_family
from eagerflow.ops.array import creation_ops
from tests.ops.family_view import family_view

# The array family as one namespace: its modules' names, __all__ and EXPORTS.
A = family_view(array_family, (reshape_ops, join_ops, pad_ops, tile_repeat_ops, shape_ops),
                extra=(creation_ops,))

_CREATION = {id(v) for v in vars(C).values() if isinstance(v, Primitive)}
PRIMS = list(dict.fromkeys(
    v for v in vars(A).values()
    if isinstance(v, Primitive) and v.family == "array" and id(v) not in _CREATION
    and v.name not in ("ZerosLike", "OnesLike", "SumToShape", "BroadcastTo")))
DIFF = [p for p in PRIMS if p.differentiable]


def ids(prims):
    return [p.name for p in prims]


# --------------------------------------------------------------- shared sweep helpers


def aval_of(a):
    a = np.asarray(a)
    return AbstractValue(a.shape, d.from_numpy(a.dtype))


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def check_reference(prim, dtypes=None):
    """Runs every sample of ``prim``: values and dtype match the numpy reference, and the
    shape rule agrees with the result (None dims allowed where values decide)."""
    rng = np.random.default_rng(1)
    cases = 0
    for dtype in dtypes or prim.sweep_dtypes:
        for args, attrs in prim.samples(rng, dtype):
            got = as_tuple(execute(prim, tuple(ef.constant(a) for a in args), attrs))
            expected = as_tuple(prim.reference(*args, **attrs))
            avals = as_tuple(prim.shape_fn(*[aval_of(a) for a in args], **attrs))
            assert len(got) == len(expected) == len(avals) == prim.outputs_count(attrs)
            for g, e, v in zip(got, expected, avals):
                e = np.asarray(e)
                out = np.asarray(g.numpy())
                where = "%s %s %s" % (prim.name, dtype.name, attrs)
                assert out.shape == e.shape, where
                assert out.dtype == e.dtype, where
                assert g.dtype is v.dtype, where
                assert g.shape.is_compatible_with(v.shape) and len(v.shape) == out.ndim, where
                if e.dtype.kind in "fc":
                    np.testing.assert_allclose(out, e, rtol=1e-6, atol=1e-6, err_msg=where)
                else:
                    np.testing.assert_array_equal(out, e, err_msg=where)
            cases += 1
    assert cases


def check_gradients(prim):
    rng = np.random.default_rng(2)
    cases = prim.grad_samples(rng) if prim.grad_samples else prim.samples(rng, d.float64)
    checked = 0
    for i, (args, attrs) in enumerate(cases):
        if any(np.asarray(a).size == 0 for a in args):
            continue
        assert check_vjp(prim, args, attrs, seed=i)
        checked += 1
    assert checked, prim.name


def check_bad_samples(prim):
    rng = np.random.default_rng(3)
    for args, attrs, exc in prim.bad_samples(rng):
        with pytest.raises(exc) as info:
            execute(prim, tuple(ef.constant(a) for a in args), attrs)
        assert prim.name in str(info.value), str(info.value)


# ------------------------------------------------------------------- registry sweeps


def test_every_primitive_is_complete():
    assert len(PRIMS) >= 25
    for prim in PRIMS:
        assert prim.reference is not None and prim.samples is not None, prim
        assert prim.shape_fn is not None, prim
        if prim.differentiable and prim is not A.CONCAT:  # concat reads every input's size
            assert "all" not in prim.saves, "%s must declare what its VJP reads" % prim


@pytest.mark.parametrize("prim", PRIMS, ids=ids(PRIMS))
def test_matches_numpy_reference(prim):
    check_reference(prim)


@pytest.mark.parametrize("prim", DIFF, ids=ids(DIFF))
def test_gradient_matches_finite_differences(prim):
    check_gradients(prim)


BAD = [p for p in PRIMS if p.bad_samples]


@pytest.mark.parametrize("prim", BAD, ids=ids(BAD))
def test_declared_bad_inputs_raise(prim):
    check_bad_samples(prim)


def test_stop_gradient_is_a_primitive_without_gradient():
    assert A.STOP_GRADIENT.name == "StopGradient" and not A.STOP_GRADIENT.differentiable
    x = ef.constant([1.0, 2.0])
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = A.stop_gradient(x) * x
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.0, 2.0])
    with ef.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = A.stop_gradient(x)
    assert tape.gradient(y, x) is None
    assert "non-differentiable" in tape.explain_none(y, x)


# -------------------------------------------------------------------------- reshape


def test_reshape_infers_minus_one_and_accepts_shape_forms():
    x = np.arange(12, dtype=np.float32)
    for shape in ([3, -1], (3, 4), ef.TensorShape([3, 4]), ef.constant([3, 4]),
                  np.array([3, 4]), [ef.constant(3), -1]):
        out = A.reshape(x, shape)
        np.testing.assert_array_equal(out.numpy(), x.reshape(3, 4))
    assert A.reshape(A.zeros([0, 3]), [-1, 0]).shape == [0, 0]
    assert A.reshape(5.0, [1, 1]).shape == [1, 1]
    assert A.reshape([[7]], []).numpy() == 7


def test_reshape_error_names_both_shapes_and_counts():
    with pytest.raises(errors.InvalidArgumentError) as info:
        A.reshape(A.zeros([2, 3]), [4, 2])
    message = str(info.value)
    assert "Reshape" in message and "[2, 3]" in message and "[4, 2]" in message
    assert "6 elements" in message and "8 elements" in message
    with pytest.raises(errors.InvalidArgumentError, match="not a multiple of 4"):
        A.reshape(A.zeros([2, 3]), [-1, 4])
    with pytest.raises(errors.InvalidArgumentError, match="list of ints"):
        A.reshape(A.zeros([2, 3]), [2.5, 2])


def test_reshape_gradient_through_tape_and_view_safety():
    x = ef.constant(np.arange(6.0).reshape(2, 3))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = A.reshape(x, [3, 2]) * ef.constant(np.arange(6.0).reshape(3, 2))
    g = tape.gradient(y, x)
    np.testing.assert_array_equal(g.numpy(), np.arange(6.0).reshape(2, 3))
    out = A.reshape(x, [-1]).numpy()
    out[0] = 99.0  # numpy() hands out a copy: the tensors are untouched
    assert x.numpy()[0, 0] == 0.0


def test_reshape_like_for_unknown_dims():
    g = ef.constant(np.arange(6.0))
    like = A.zeros([2, 1, 3], ef.int32)
    out = execute(A.RESHAPE_LIKE, (g, like))
    assert out.shape == [2, 1, 3] and out.dtype == ef.float64
    aval = A.RESHAPE_LIKE.shape_fn(AbstractValue((6,), d.float64),
                                   AbstractValue((None, 1, None), d.int32))
    assert aval.shape == (None, 1, None)


# ------------------------------------------------------------------------ transpose


def test_transpose_default_reverses_and_perm():
    x = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(A.transpose(x).numpy(), x.T)
    np.testing.assert_array_equal(A.transpose(x, [1, 0, 2]).numpy(), x.transpose(1, 0, 2))
    np.testing.assert_array_equal(A.transpose(x, ef.constant([2, 0, 1])).numpy(),
                                  x.transpose(2, 0, 1))


def test_transpose_conjugate():
    z = np.array([[1 + 2j, 3 - 1j]], np.complex64)
    np.testing.assert_array_equal(A.transpose(z, conjugate=True).numpy(), z.conj().T)
    np.testing.assert_array_equal(A.transpose(z, conjugate=False).numpy(), z.T)
    np.testing.assert_array_equal(A.transpose([[1.0, 2.0]], conjugate=True).numpy(),
                                  [[1.0], [2.0]])


def test_transpose_bad_perm():
    with pytest.raises(errors.InvalidArgumentError, match="not a permutation"):
        A.transpose(A.zeros([2, 3]), [0, 0])


# ----------------------------------------------------------------- expand / squeeze


def test_expand_dims_and_squeeze():
    x = np.zeros((2, 3))
    for axis in (0, 1, 2, -1, -3):
        assert A.expand_dims(x, axis).shape == np.expand_dims(x, axis).shape
    assert A.expand_dims(x, [1]).shape == [2, 1, 3]
    assert A.expand_dims(ef.constant(1.0), 0).shape == [1]
    y = np.zeros((1, 2, 1, 3, 1))
    assert A.squeeze(y).shape == [2, 3]
    assert A.squeeze(y, 0).shape == [2, 1, 3, 1]
    assert A.squeeze(y, [0, -1]).shape == [2, 1, 3]
    assert A.squeeze(np.zeros((1, 1))).shape == []


def test_squeeze_non_unit_dim_raises():
    with pytest.raises(errors.InvalidArgumentError) as info:
        A.squeeze(A.zeros([1, 3]), axis=[1])
    message = str(info.value)
    assert "Can not squeeze dim[1]" in message and "got 3" in message
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        A.expand_dims(A.zeros([2]), 3)


def test_squeeze_shape_rule_with_unknown_dims():
    aval = AbstractValue((None, 1, 3), d.float32)
    assert A.SQUEEZE.shape_fn(aval, axis=(1,)).shape == (None, 3)
    assert A.SQUEEZE.shape_fn(aval, axis=()).shape is None  # decided at run time
    assert A.EXPAND_DIMS.shape_fn(aval, axis=-1).shape == (None, 1, 3, 1)
    assert A.RESHAPE.shape_fn(aval, shape=(-1, 3)).shape == (None, 3)
    assert A.RESHAPE.shape_fn(AbstractValue((2, 3), d.float32), shape=(-1,)).shape == (6,)


# ----------------------------------------------------------------- concat / stack


def test_concat_matches_numpy():
    a, b = np.arange(6).reshape(2, 3), np.arange(9).reshape(3, 3)
    np.testing.assert_array_equal(A.concat([a, b], 0).numpy(), np.concatenate([a, b]))
    np.testing.assert_array_equal(A.concat([a, a], -1).numpy(), np.concatenate([a, a], 1))
    np.testing.assert_array_equal(A.concat([a], axis=ef.constant(1)).numpy(), a)
    np.testing.assert_array_equal(A.concat((a, b), axis=0).numpy(), np.concatenate([a, b]))


def test_concat_errors_name_the_offending_input():
    a = A.zeros([2, 3])
    with pytest.raises(errors.InvalidArgumentError) as info:
        A.concat([a, a, A.zeros([2, 2])], axis=0)
    assert "input 2" in str(info.value) and "[2, 2]" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError, match="input 1 has rank 1"):
        A.concat([a, A.zeros([3])], axis=0)
    with pytest.raises(errors.InvalidArgumentError) as info:
        A.concat([a, a, A.zeros([2, 3], ef.int32)], axis=1)
    assert "input 2" in str(info.value) and "int32" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError, match="empty"):
        A.concat([], 0)
    with pytest.raises(errors.InvalidArgumentError, match="scalar"):
        A.concat([1.0, 2.0], 0)


def test_concat_shape_rule_with_unknown_dims():
    out = A.CONCAT.shape_fn(AbstractValue((None, 3), d.float32),
                            AbstractValue((2, None), d.float32), axis=0)
    assert out.shape == (None, 3)
    out = A.CONCAT.shape_fn(AbstractValue((4, 3), d.float32),
                            AbstractValue((2, None), d.float32), axis=0)
    assert out.shape == (6, 3)
    with pytest.raises(errors.InvalidArgumentError):
        A.CONCAT.shape_fn(AbstractValue((4, 3), d.float32),
                          AbstractValue((2, 2), d.float32), axis=0)


def test_concat_gradient_splits_by_input_sizes():
    a, b = ef.constant(np.ones((2, 1))), ef.constant(np.ones((2, 3)))
    with ef.GradientTape() as tape:
        tape.watch([a, b])
        y = A.concat([a, b], axis=1) * ef.constant(np.arange(8.0).reshape(2, 4))
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_array_equal(ga.numpy(), [[0.0], [4.0]])
    np.testing.assert_array_equal(gb.numpy(), [[1, 2, 3], [5, 6, 7]])


def test_stack_unstack_roundtrip():
    xs = [np.full((2, 3), i, np.float32) for i in range(4)]
    for axis in (0, 1, 2, -1, -3):
        out = A.stack(xs, axis=axis)
        np.testing.assert_array_equal(out.numpy(), np.stack(xs, axis=axis))
        back = A.unstack(out, axis=axis)
        assert len(back) == 4
        for got, want in zip(back, xs):
            np.testing.assert_array_equal(got.numpy(), want)
    assert A.stack([1, 2.0]).dtype == ef.float32  # one conversion, as in TF
    assert A.stack([ef.constant(1), 2]).dtype == ef.int32
    assert len(A.unstack(A.zeros([0, 2]))) == 0
    assert len(A.unstack(A.zeros([3, 2]), num=3)) == 3


def test_stack_unstack_errors():
    with pytest.raises(errors.InvalidArgumentError, match="input 1 has shape"):
        A.stack([A.zeros([2]), A.zeros([3])])
    with pytest.raises(errors.InvalidArgumentError, match="empty"):
        A.stack([])
    with pytest.raises(errors.InvalidArgumentError, match="must equal 2"):
        A.unstack(A.zeros([3, 2]), num=2)
    with pytest.raises(errors.InvalidArgumentError):
        A.unstack(ef.constant(1.0))


def test_unstack_gradient_fills_absent_cotangents():
    x = ef.constant(np.arange(6.0).reshape(3, 2))
    with ef.GradientTape() as tape:
        tape.watch(x)
        parts = A.unstack(x)
        y = parts[1] * 3.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[0, 0], [3, 3], [0, 0]])
    outs = execute(A.UNPACK, (x,), {"num": 3, "axis": 0})
    cot = (None, ef.constant([1.0, 2.0]), None)
    g = A.UNPACK.vjp(cot, None, outs, num=3, axis=0)
    np.testing.assert_array_equal(g.numpy(), [[0, 0], [1, 2], [0, 0]])
    assert A.UNPACK.vjp((None, None, None), None, outs, num=3, axis=0) is None


# --------------------------------------------------------------------------- split


def test_split_count_and_sizes():
    x = np.arange(24).reshape(4, 6)
    parts = A.split(x, 3, axis=1)
    for got, want in zip(parts, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(got.numpy(), want)
    parts = A.split(x, [1, -1, 2], axis=1)
    assert [p.shape[1] for p in parts] == [1, 3, 2]
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in parts], 1), x)
    parts = A.split(x, ef.constant([3, 1]))
    assert [p.shape[0] for p in parts] == [3, 1]
    assert len(A.split(x, ef.constant(2))) == 2
    assert len(A.split(x, [6], axis=-1, num=1)) == 1


def test_split_errors():
    x = A.zeros([5, 2])
    with pytest.raises(errors.InvalidArgumentError, match="evenly divide"):
        A.split(x, 2)
    with pytest.raises(errors.InvalidArgumentError, match="add up to 4"):
        A.split(x, [2, 2])
    with pytest.raises(errors.InvalidArgumentError, match="at most one -1"):
        A.split(x, [-1, -1])
    with pytest.raises(errors.InvalidArgumentError, match="num=3"):
        A.split(x, [2, 3], num=3)
    with pytest.raises(errors.InvalidArgumentError, match="positive"):
        A.split(x, 0)


def test_split_gradient_with_unused_outputs():
    x = ef.constant(np.arange(6.0))
    with ef.GradientTape() as tape:
        tape.watch(x)
        a, b, c = A.split(x, [1, 3, 2])
        y = b * 2.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0, 2, 2, 2, 0, 0])
    outs = execute(A.SPLITV, (x,), {"size_splits": (1, 3, 2), "axis": 0})
    g = A.SPLITV.vjp((None, ef.constant([1.0, 1.0, 1.0]), None), None, outs,
                     size_splits=(1, 3, 2), axis=0)
    np.testing.assert_array_equal(g.numpy(), [0, 1, 1, 1, 0, 0])


# ---------------------------------------------------------------------------- tile


def test_tile_matches_numpy_and_validates():
    x = np.arange(6).reshape(2, 3)
    for multiples in ([1, 1], [2, 3], [3, 1], [0, 2]):
        np.testing.assert_array_equal(A.tile(x, multiples).numpy(), np.tile(x, multiples))
    np.testing.assert_array_equal(A.tile(x, ef.constant([2, 1])).numpy(), np.tile(x, [2, 1]))
    with pytest.raises(errors.InvalidArgumentError, match="length 2"):
        A.tile(x, [2])


def test_tile_gradient_sums_the_copies():
    x = ef.constant(np.array([[1.0, 2.0]]))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = A.tile(x, [3, 2]) * ef.constant(np.arange(12.0).reshape(3, 4))
    # Element (0, j) is copied to (i, j + 2k): its gradient is the sum of those weights.
    w = np.arange(12.0).reshape(3, 4)
    want = np.array([[w[:, [0, 2]].sum(), w[:, [1, 3]].sum()]])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), want)


# ----------------------------------------------------------------------------- pad


@pytest.mark.parametrize("mode", ["CONSTANT", "reflect", "Symmetric"])
def test_pad_matches_numpy(mode):
    x = np.arange(12.0).reshape(3, 4)
    paddings = [[2, 1], [1, 3]]
    out = A.pad(x, paddings, mode=mode)
    np_mode = {"constant": "constant", "reflect": "reflect", "symmetric": "symmetric"}
    np.testing.assert_array_equal(out.numpy(), np.pad(x, paddings, mode=np_mode[mode.lower()]))
    out = A.pad(x, ef.constant(paddings), mode=mode)
    assert out.shape == [6, 8]


def test_pad_constant_values_and_dtype():
    out = A.pad(ef.constant([1, 2]), [[1, 2]], constant_values=7)
    np.testing.assert_array_equal(out.numpy(), [7, 1, 2, 7, 7])
    assert out.dtype == ef.int32
    out = A.pad(ef.constant([1.5]), np.array([[0, 1]]), constant_values=ef.constant(-1.0))
    np.testing.assert_array_equal(out.numpy(), [1.5, -1.0])
    with pytest.raises(errors.InvalidArgumentError):
        A.pad(ef.constant([1, 2]), [[1, 1]], constant_values=0.5)


def test_pad_errors():
    x = A.zeros([3, 2])
    with pytest.raises(errors.InvalidArgumentError, match="REFLECT padding"):
        A.pad(x, [[3, 0], [0, 0]], mode="REFLECT")
    A.pad(x, [[3, 0], [0, 0]], mode="SYMMETRIC")  # SYMMETRIC may pad by the full size
    with pytest.raises(errors.InvalidArgumentError, match="SYMMETRIC padding"):
        A.pad(x, [[4, 0], [0, 0]], mode="SYMMETRIC")
    with pytest.raises(errors.InvalidArgumentError, match="mode must be one of"):
        A.pad(x, [[1, 1], [0, 0]], mode="wrap")
    with pytest.raises(errors.InvalidArgumentError, match="rank 2"):
        A.pad(x, [[1, 1]])
    with pytest.raises(errors.InvalidArgumentError, match="non-negative"):
        A.pad(x, [[-1, 1], [0, 0]])
    with pytest.raises(errors.InvalidArgumentError, match=r"\[rank, 2\]"):
        A.pad(x, [[1, 1, 1], [0, 0, 0]])


def test_pad_gradients_fold_back():
    x = ef.constant(np.arange(4.0))
    w = ef.constant(np.arange(1.0, 8.0))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = A.pad(x, [[2, 1]], mode="REFLECT") * w
    # reflect [2,1] of [x0 x1 x2 x3] -> [x2 x1 x0 x1 x2 x3 x2]
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 2 + 4, 1 + 5 + 7, 6])
    c = ef.constant(0.0, dtype=ef.float64)
    with ef.GradientTape() as tape:
        tape.watch([x, c])
        y = A.pad(x, [[1, 2]], constant_values=c) * w
    gx, gc = tape.gradient(y, [x, c])
    np.testing.assert_array_equal(gx.numpy(), [2, 3, 4, 5])
    assert gc.numpy() == 1 + 6 + 7  # the padded border's weights


def test_pad_grad_second_order():
    # PadGrad's own gradient is the pad again: check it in every mode.
    for mode in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        assert check_vjp(A.PAD_GRAD, (np.random.default_rng(0).normal(size=(5, 6)),),
                         {"paddings": ((1, 1), (2, 1)), "mode": mode})


# ---------------------------------------------------------------- reverse / roll


def test_reverse_and_roll():
    x = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(A.reverse(x, [0, 2]).numpy(), x[::-1, :, ::-1])
    np.testing.assert_array_equal(A.reverse(x, []).numpy(), x)
    np.testing.assert_array_equal(A.reverse(x, ef.constant([-1])).numpy(), x[..., ::-1])
    np.testing.assert_array_equal(A.roll(x, 2, 2).numpy(), np.roll(x, 2, 2))
    np.testing.assert_array_equal(A.roll(x, [1, -2], [0, 2]).numpy(),
                                  np.roll(x, (1, -2), (0, 2)))
    np.testing.assert_array_equal(A.roll(x, [1, 2], [1, 1]).numpy(), np.roll(x, 3, 1))
    with pytest.raises(errors.InvalidArgumentError, match="more than once"):
        A.reverse(x, [0, 0])
    with pytest.raises(errors.InvalidArgumentError, match="same length"):
        A.roll(x, [1, 2], [0])


# ------------------------------------------------------------------ identity & co


def test_identity_and_identity_n():
    x = ef.constant([1.0, 2.0])
    y = A.identity(x)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    outs = A.identity_n([x, ef.constant(3), [True]])
    assert [o.dtype for o in outs] == [ef.float32, ef.int32, ef.bool]
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = A.identity(x) * 2.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 2.0])


def test_shape_size_rank():
    x = A.zeros([2, 0, 3], ef.int32)
    assert A.shape(x).numpy().tolist() == [2, 0, 3] and A.shape(x).dtype == ef.int32
    assert A.shape(x, out_type=ef.int64).dtype == ef.int64
    assert A.shape(5.0).numpy().tolist() == []
    assert A.size(x).numpy() == 0 and A.size(x).dtype == ef.int32
    assert A.size(np.zeros((2, 3)), out_type="int64").numpy() == 6
    assert A.rank(x).numpy() == 3 and A.rank(x).dtype == ef.int32
    shapes = A.shape_n([x, [1, 2]], out_type=ef.int64)
    assert [s.numpy().tolist() for s in shapes] == [[2, 0, 3], [2]]
    with pytest.raises(errors.InvalidArgumentError, match="int32 or int64"):
        A.shape(x, out_type=ef.float32)


def test_ensure_shape():
    x = A.zeros([2, 3])
    assert A.ensure_shape(x, [2, 3]) is not None
    assert A.ensure_shape(x, ef.TensorShape([None, 3])).shape == [2, 3]
    assert A.ensure_shape(x, None).shape == [2, 3]
    with pytest.raises(errors.InvalidArgumentError, match="not compatible"):
        A.ensure_shape(x, [None, 4])
    merged = A.ENSURE_SHAPE.shape_fn(AbstractValue((None, 3), d.float32), shape=(5, None))
    assert merged.shape == (5, 3)


def test_broadcast_shapes():
    s = A.broadcast_static_shape(ef.TensorShape([2, 1, 3]), ef.TensorShape([4, 1]))
    assert s == ef.TensorShape([2, 4, 3])
    assert A.broadcast_static_shape(ef.TensorShape(None), ef.TensorShape([2])).rank is None
    with pytest.raises(ValueError, match="Incompatible"):
        A.broadcast_static_shape(ef.TensorShape([2]), ef.TensorShape([3]))
    out = A.broadcast_dynamic_shape(ef.constant([2, 1, 3], ef.int64), [4, 1])
    assert out.numpy().tolist() == [2, 4, 3] and out.dtype == ef.int64
    with pytest.raises(errors.InvalidArgumentError, match="Incompatible shapes"):
        A.broadcast_dynamic_shape([2], [3])


def test_where_with_condition_only():
    c = np.array([[True, False, True], [False, False, True]])
    np.testing.assert_array_equal(ef.where(c).numpy(), np.argwhere(c))
    assert ef.where(c).dtype == ef.int64
    assert ef.where(np.zeros((0, 2), bool)).shape == [0, 2]
    np.testing.assert_array_equal(A.where_indices([0.0, 2.0, -1.0]).numpy(), [[1], [2]])


# -------------------------------------------------------------------------- repeat


def test_repeat_matches_numpy():
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(A.repeat(x, 2).numpy(), np.repeat(x, 2))
    np.testing.assert_array_equal(A.repeat(x, 2, axis=1).numpy(), np.repeat(x, 2, axis=1))
    np.testing.assert_array_equal(A.repeat(x, [1, 0, 3], axis=-1).numpy(),
                                  np.repeat(x, [1, 0, 3], axis=1))
    np.testing.assert_array_equal(A.repeat(x, ef.constant([2, 1]), axis=0).numpy(),
                                  np.repeat(x, [2, 1], axis=0))
    np.testing.assert_array_equal(A.repeat(x, [3], axis=0).numpy(), np.repeat(x, 3, axis=0))
    with pytest.raises(errors.InvalidArgumentError, match="2 entries"):
        A.repeat(x, [1, 2], axis=1)


def test_repeat_gradient():
    x = ef.constant(np.array([1.0, 2.0, 3.0]))
    w = ef.constant(np.arange(1.0, 5.0))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = A.repeat(x, [2, 0, 2]) * w
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1 + 2, 0, 3 + 4])
    x2 = ef.constant(np.ones((2, 2)))
    with ef.GradientTape() as tape:
        tape.watch(x2)
        y = A.repeat(x2, 2) * ef.constant(np.arange(8.0))
    np.testing.assert_array_equal(tape.gradient(y, x2).numpy(), [[1, 5], [9, 13]])


# ---------------------------------------------------------------- composite chain


def test_chain_of_structural_ops_gradient_matches_finite_differences():
    rng = np.random.default_rng(5)
    x0 = rng.normal(size=(2, 3))
    w = rng.normal(size=(2, 12))

    def f(x):
        y = A.concat([x, A.reverse(x, [1])], axis=0)
        y = A.transpose(A.pad(y, [[0, 0], [2, 1]], mode="SYMMETRIC"))
        y = A.reshape(A.tile(A.roll(y, 1, 0), [1, 1]), [2, -1])
        return ef.multiply(y, w)

    x = ef.constant(x0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x).numpy()
    eps = 1e-6
    numeric = np.zeros_like(x0)
    for idx in np.ndindex(*x0.shape):
        dx = np.zeros_like(x0)
        dx[idx] = eps
        numeric[idx] = (np.sum(f(ef.constant(x0 + dx)).numpy())
                        - np.sum(f(ef.constant(x0 - dx)).numpy())) / (2 * eps)
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------------- exports


ARRAY_PARTS = (array_common, reshape_ops, join_ops, pad_ops, tile_repeat_ops, shape_ops)


def test_exports_and_all_agree():
    for module in (A, C) + ARRAY_PARTS:
        exported = {n for names in module.EXPORTS.values() for n in names}
        assert exported <= set(module.__all__), module
        for name in module.__all__:
            assert callable(getattr(module, name)), name
    # array_ops re-exports the creation ops other families use.
    for name in ("zeros", "ones", "fill", "range", "zeros_like", "ones_like"):
        assert getattr(A, name) is getattr(C, name)


def _public_namespaces(monkeypatch, *modules):
    for module in modules:
        for namespace, names in module.EXPORTS.items():
            if namespace:
                target = getattr(ef, namespace, None)
                if target is None:
                    target = types.SimpleNamespace()
                    monkeypatch.setattr(ef, namespace, target, raising=False)
            else:
                target = ef
            for name in names:
                if not hasattr(target, name):
                    monkeypatch.setattr(target, name, getattr(module, name), raising=False)


def run_doctests(module, monkeypatch):
    _public_namespaces(monkeypatch, A, C)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    parser = doctest.DocTestParser()
    for name in ["__module__"] + list(module.__all__):
        obj = module if name == "__module__" else getattr(module, name)
        if name == "int_tuple":
            continue
        assert obj.__doc__ and "Example" in obj.__doc__, name
        test = parser.get_doctest(obj.__doc__, {}, name, None, 0)
        assert test.examples, name
        runner.run(test, out=lambda s: None)
    assert runner.failures == 0, runner.summarize(verbose=False)


def test_docstring_examples_run(monkeypatch):
    run_doctests(A, monkeypatch)


# ------------------------------------------------------- higher order and tracing


@pytest.mark.parametrize("fn", [
    lambda x: A.pad(x, [[2, 1]], mode="REFLECT"),
    lambda x: A.repeat(x, [2, 0, 1, 3]),
    lambda x: A.tile(A.reshape(x, [2, 2]), [2, 3]),
    lambda x: A.concat(A.split(x, [1, -1]) + [x], axis=0),
], ids=["pad", "repeat", "tile", "split-concat"])
def test_second_order_gradients(fn):
    """The gradient rules are ops, so an outer tape differentiates them again."""
    rng = np.random.default_rng(4)
    x0 = rng.normal(size=4)
    u = rng.normal(size=4)

    def grad_of(x_value):
        x = ef.constant(x_value)
        with ef.GradientTape() as outer:
            outer.watch(x)
            with ef.GradientTape() as inner:
                inner.watch(x)
                y = fn(x)
                f = ef.multiply(y, ef.multiply(y, y))  # cubic, so the Hessian depends on x
            g = inner.gradient(f, x)
            gu = ef.multiply(g, u)
        return g.numpy(), outer.gradient(gu, x).numpy()

    g0, hvp = grad_of(x0)
    eps = 1e-6
    numeric = np.array([(np.dot(grad_of(x0 + eps * e)[0], u) - np.dot(grad_of(x0 - eps * e)[0],
                                                                      u)) / (2 * eps)
                        for e in np.eye(4)])
    np.testing.assert_allclose(hvp, numeric, rtol=1e-5, atol=1e-6)


class _Symbolic:
    """Stands in for a traced tensor: a static shape with unknown dims."""

    def __init__(self, dims):
        self.shape = ef.TensorShape(dims)
        self.dtype = ef.float32


def test_concat_gradient_with_several_unknown_sizes():
    # As TF: a traced concat of inputs whose sizes are known only at run time still has a
    # gradient (each input's part of the cotangent is gathered from its positions).
    @ef.function(input_signature=[ef.TensorSpec([None, 2], ef.float64)] * 3)
    def grads(a, b, c):
        with ef.GradientTape() as tape:
            tape.watch([a, b, c])
            out = ef.concat([a, b * 2.0, c], 0)
            loss = ef.reduce_sum(out * out * ef.reshape(ef.cast(
                ef.range(ef.shape(out)[0] * 2), ef.float64), [-1, 2]))
        return tape.gradient(loss, [a, b, c])

    rng = np.random.default_rng(0)
    a, b, c = (rng.normal(size=(n, 2)) for n in (3, 0, 2))
    weights = np.arange(10.0).reshape(5, 2)
    full = np.concatenate([a, 2 * b, c])
    g = 2 * full * weights
    got = grads(ef.constant(a), ef.constant(b), ef.constant(c))
    np.testing.assert_allclose(got[0].numpy(), g[:3])
    assert got[1].numpy().shape == (0, 2)
    np.testing.assert_allclose(got[2].numpy(), g[3:])


def test_gradients_with_unknown_sizes_explain_what_is_missing():
    assert A._split_sizes_for_grad([_Symbolic([2, 3]), _Symbolic([None, 3])], 0,
                                   "ConcatV2") == (2, -1)
    assert A._interleaved((None, 3), (2, 2), "Tile") == (2, -1, 2, 3)
    with pytest.raises(errors.UnimplementedError, match="2 unknown"):
        A._interleaved((None, None), (2, 2), "Tile")


def test_shape_arguments_that_are_not_integer_vectors_are_rejected():
    # A traced value is taken (see tests/function/test_dynamic_shapes.py); an object that is
    # no tensor, a float or a rank-2 shape tensor is refused naming the op.
    with pytest.raises(errors.InvalidArgumentError, match="reshape: shape must be"):
        A.reshape(A.zeros([4]), _Symbolic([2]))

    @ef.function
    def float_shape(n):
        return A.zeros(ef.cast(n, ef.float32))

    with pytest.raises(errors.InvalidArgumentError, match="zeros: shape .*float32.*cast"):
        float_shape(ef.constant([2]))

    @ef.function
    def matrix_shape(n):
        return A.reshape(A.zeros([4]), ef.reshape(n, [1, 2]))

    with pytest.raises(errors.InvalidArgumentError, match="reshape: shape must be"):
        matrix_shape(ef.constant([2, 2]))


def test_split_gradients_fill_absent_cotangents_directly():
    x = ef.constant(np.arange(6.0))
    outs = execute(A.SPLIT, (x,), {"num_split": 3, "axis": 0})
    g = A.SPLIT.vjp((None, ef.constant([1.0, 2.0]), None), None, outs, num_split=3, axis=0)
    np.testing.assert_array_equal(g.numpy(), [0, 0, 1, 2, 0, 0])
    assert A.SPLIT.vjp((None,) * 3, None, outs, num_split=3, axis=0) is None
    assert A.SPLITV.vjp((None, None), None, outs, size_splits=(2, 4), axis=0) is None
