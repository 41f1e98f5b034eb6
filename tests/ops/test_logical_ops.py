"""Tests of eagerflow.ops.math.logical_ops: logical and bitwise ops and the & | ^ ~ operators."""

from __future__ import annotations

import doctest
import types

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops.math import logical_ops as lo
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue, Primitive

PRIMS = [v for v in vars(lo).values() if isinstance(v, Primitive)]


def _aval(a):
    a = np.asarray(a)
    return AbstractValue(a.shape, d.from_numpy(a.dtype))


def test_primitives_are_complete_and_not_differentiable():
    assert {p.name for p in PRIMS} == {
        "LogicalAnd", "LogicalOr", "LogicalXor", "LogicalNot", "BitwiseAnd", "BitwiseOr",
        "BitwiseXor", "Invert", "LeftShift", "RightShift"}
    for prim in PRIMS:
        assert not prim.differentiable and prim.sweep_dtypes and prim.reference, prim


@pytest.mark.parametrize("prim", PRIMS, ids=[p.name for p in PRIMS])
def test_matches_numpy_reference(prim):
    rng = np.random.default_rng(0)
    for dtype in prim.sweep_dtypes:
        for args, attrs in prim.samples(rng, dtype):
            out = execute(prim, tuple(ef.constant(a) for a in args), attrs)
            expected = np.asarray(prim.reference(*args, **attrs))
            aval = prim.shape_fn(*[_aval(a) for a in args], **attrs)
            assert out.shape == expected.shape == aval.shape
            assert out.dtype is aval.dtype and out.numpy().dtype == expected.dtype
            np.testing.assert_array_equal(out.numpy(), expected)


def test_logical_ops_truth_tables():
    x = ef.constant([True, True, False, False])
    y = ef.constant([True, False, True, False])
    assert lo.logical_and(x, y).numpy().tolist() == [True, False, False, False]
    assert lo.logical_or(x, y).numpy().tolist() == [True, True, True, False]
    assert lo.logical_xor(x, y).numpy().tolist() == [False, True, True, False]
    assert lo.logical_not(x).numpy().tolist() == [False, False, True, True]
    assert lo.logical_and(ef.constant([[True], [False]]), y).shape == (2, 4)
    assert lo.logical_not(ef.constant(np.zeros((0,), bool))).shape == (0,)


def test_logical_ops_reject_non_bool():
    with pytest.raises(errors.InvalidArgumentError, match="LogicalAnd.*int32"):
        lo.logical_and(ef.constant([1]), ef.constant([0]))
    with pytest.raises(errors.InvalidArgumentError, match="LogicalNot.*float32"):
        lo.logical_not(ef.constant([1.0]))


def test_bitwise_ops():
    x = ef.constant(np.array([12, -1, 0], np.int32))
    y = ef.constant(np.array([10, 7, -1], np.int32))
    assert lo.bitwise_and(x, y).numpy().tolist() == [8, 7, 0]
    assert lo.bitwise_or(x, y).numpy().tolist() == [14, -1, -1]
    assert lo.bitwise_xor(x, y).numpy().tolist() == [6, -8, -1]
    assert lo.invert(x).numpy().tolist() == [-13, 0, -1]
    u = ef.constant(np.array([0, 255], np.uint8))
    assert lo.invert(u).numpy().tolist() == [255, 0]
    with pytest.raises(errors.InvalidArgumentError, match="BitwiseAnd.*float32"):
        lo.bitwise_and(ef.constant([1.0]), ef.constant([2.0]))
    with pytest.raises(errors.InvalidArgumentError, match="same dtype"):
        lo.bitwise_or(ef.constant([1]), ef.constant(np.array([1], np.int64)))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_shifts_match_tf_examples(dtype):
    lhs = ef.constant(np.array([-1, -5, -3, -14], dtype))
    rhs = ef.constant(np.array([5, 0, 7, 11], dtype))
    expected = [-32, -5, -128, 0] if dtype == np.int8 else [-32, -5, -384, -28672]
    assert lo.left_shift(lhs, rhs).numpy().tolist() == expected
    assert lo.right_shift(lhs, rhs).numpy().tolist() == [-1, -5, -1, -1]
    # Negative shift amounts are clamped to 0: the input comes back unchanged.
    x = ef.constant(np.array([-2, 64, 101, 32], dtype))
    neg = ef.constant(np.array([-1, -5, -3, -14], dtype))
    assert lo.left_shift(x, neg).numpy().tolist() == [-2, 64, 101, 32]
    assert lo.right_shift(x, neg).numpy().tolist() == [-2, 64, 101, 32]


def test_oversized_shifts_are_clamped_to_the_bit_width():
    one = ef.constant(np.array([1, 3], np.int32))
    assert lo.left_shift(one, 40).numpy().tolist() == [-(2**31), -(2**31)]
    assert lo.right_shift(ef.constant([-8, 8]), 100).numpy().tolist() == [-1, 0]
    u8 = ef.constant(np.array([1, 255], np.uint8))
    assert lo.left_shift(u8, ef.constant(np.array([10, 1], np.uint8))).numpy().tolist() \
        == [128, 254]
    assert lo.right_shift(u8, ef.constant(np.array([200, 4], np.uint8))).numpy().tolist() \
        == [0, 15]


def test_operators_pick_logical_or_bitwise_by_dtype():
    b = ef.constant([True, False])
    i = ef.constant([6, 5])
    assert (b & ef.constant([True, True])).numpy().tolist() == [True, False]
    assert (b | False).numpy().tolist() == [True, False]
    assert (True ^ b).numpy().tolist() == [False, True]  # reflected operator
    assert (~b).numpy().tolist() == [False, True]
    assert (i & 3).numpy().tolist() == [2, 1]
    assert (3 | i).numpy().tolist() == [7, 7]
    assert (i ^ i).numpy().tolist() == [0, 0]
    assert (~i).numpy().tolist() == [-7, -6]
    assert (b & b).dtype is d.bool and (i & i).dtype is d.int32
    both_python = lo.and_(True, False)
    assert both_python.dtype is d.bool and not bool(both_python)
    assert lo.and_(6, 3).numpy() == 2
    with pytest.raises(errors.InvalidArgumentError, match="BitwiseAnd.*float32"):
        ef.constant([1.0]) & ef.constant([1.0])
    with pytest.raises(errors.InvalidArgumentError, match="Invert.*float32"):
        ~ef.constant([1.0])


def test_exports():
    names = set()
    for namespace, fns in lo.EXPORTS.items():
        assert namespace in ("", "math", "bitwise")
        for name in fns:
            assert callable(getattr(lo, name))
            names.add(name)
    assert names | {"and_", "or_", "xor_", "invert_"} == set(lo.__all__)
    assert "logical_xor" not in lo.EXPORTS[""]  # tf.math.logical_xor only, as in TF 2


def test_docstring_examples_run(monkeypatch):
    for namespace, names in lo.EXPORTS.items():
        target = ef
        if namespace:
            target = getattr(ef, namespace, None)
            if target is None:
                target = types.SimpleNamespace()
                monkeypatch.setattr(ef, namespace, target, raising=False)
        for name in names:
            if not hasattr(target, name):
                monkeypatch.setattr(target, name, getattr(lo, name), raising=False)
    runner = doctest.DocTestRunner()
    parser = doctest.DocTestParser()
    for name in ["__module__"] + lo.__all__:
        obj = lo if name == "__module__" else getattr(lo, name)
        test = parser.get_doctest(obj.__doc__, {}, name, None, 0)
        assert test.examples, name
        runner.run(test, out=lambda s: None)
    assert runner.failures == 0, runner.summarize(verbose=False)
