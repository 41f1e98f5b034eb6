"""Logical ops on bool tensors and bitwise ops on integer tensors.

``and_``, ``or_``, ``xor_`` and ``invert_`` back Tensor's ``& | ^ ~`` operators: as in TF,
bool tensors get the logical op and integer tensors the bitwise one. None of these ops has
a gradient.

Example:
    >>> import eagerflow as ef
    >>> ef.logical_and(ef.constant([True, True]), ef.constant([True, False])).numpy().tolist()
    [True, False]
    >>> (ef.constant([6]) & ef.constant([3])).numpy().tolist()
    [2]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import BOOL, INT, binary, binary_samples, public_binary, \
    public_unary, unary
from eagerflow.tensor import Tensor
from eagerflow.ops.family import GPU_BOOL

__all__ = [
    "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor", "invert", "left_shift", "right_shift", "and_", "or_", "xor_", "invert_",
]

EXPORTS = {
    "": ["logical_and", "logical_not", "logical_or"],
    "math": ["logical_and", "logical_not", "logical_or", "logical_xor"],
    "bitwise": ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift",
                "right_shift"],
}

_BOOL_SWEEP = (d.bool,)
_INT_SWEEP = (d.int8, d.int32, d.int64, d.uint8, d.uint32)

LOGICAL_AND = binary("LogicalAnd", lambda xp: xp.logical_and, dtypes=BOOL,
                     reference=np.logical_and, sweep_dtypes=_BOOL_SWEEP,
                     gpu_expr=(GPU_BOOL, "{0} && {1}"))
LOGICAL_OR = binary("LogicalOr", lambda xp: xp.logical_or, dtypes=BOOL,
                    reference=np.logical_or, sweep_dtypes=_BOOL_SWEEP,
                    gpu_expr=(GPU_BOOL, "{0} || {1}"))
# TF composes xor from and/or/not (four ops); one primitive does the same work in one pass.
LOGICAL_XOR = binary("LogicalXor", lambda xp: xp.logical_xor, dtypes=BOOL,
                     reference=np.logical_xor, sweep_dtypes=_BOOL_SWEEP,
                     gpu_expr=(GPU_BOOL, "{0} != {1}"))
LOGICAL_NOT = unary("LogicalNot", lambda xp: xp.logical_not, dtypes=BOOL,
                    reference=np.logical_not, sweep_dtypes=_BOOL_SWEEP, gpu_expr=(GPU_BOOL, "!{0}"))

BITWISE_AND = binary("BitwiseAnd", lambda xp: xp.bitwise_and, dtypes=INT,
                     reference=np.bitwise_and, sweep_dtypes=_INT_SWEEP, domain=(-50, 50))
BITWISE_OR = binary("BitwiseOr", lambda xp: xp.bitwise_or, dtypes=INT,
                    reference=np.bitwise_or, sweep_dtypes=_INT_SWEEP, domain=(-50, 50))
BITWISE_XOR = binary("BitwiseXor", lambda xp: xp.bitwise_xor, dtypes=INT,
                     reference=np.bitwise_xor, sweep_dtypes=_INT_SWEEP, domain=(-50, 50))
INVERT = unary("Invert", lambda xp: xp.invert, dtypes=INT, reference=np.invert,
               sweep_dtypes=_INT_SWEEP, domain=(-50, 50))


def _clamped_shift(xp, shift):
    """x shifted by y clamped to [0, bits - 1]: TF's defined result for any shift amount."""

    def kernel(x, y):
        bits = x.dtype.itemsize * 8
        return shift(x, xp.clip(y, 0, bits - 1).astype(x.dtype, copy=False))
    return kernel


def _shift_reference(shift):
    def reference(x, y):
        return shift(x, np.clip(y, 0, x.dtype.itemsize * 8 - 1).astype(x.dtype))
    return reference


def _shift_samples(rng, dtype):
    # Shift amounts run past the bit width (and below 0 for signed types): both are clamped.
    low = -3 if dtype.is_integer and not dtype.is_unsigned else 0
    base = binary_samples((-50, 50), (low, dtype.size * 8 + 3))
    return base(rng, dtype)


LEFT_SHIFT = binary("LeftShift", lambda xp: _clamped_shift(xp, xp.left_shift), dtypes=INT,
                    reference=_shift_reference(np.left_shift), samples=_shift_samples,
                    sweep_dtypes=_INT_SWEEP)
RIGHT_SHIFT = binary("RightShift", lambda xp: _clamped_shift(xp, xp.right_shift), dtypes=INT,
                     reference=_shift_reference(np.right_shift), samples=_shift_samples,
                     sweep_dtypes=_INT_SWEEP)

logical_and = public_binary(LOGICAL_AND, "logical_and", "Returns x AND y element-wise (bool).",
                            ">>> ef.logical_and(True, ef.constant([True, False])).numpy()"
                            ".tolist()\n[True, False]")
logical_or = public_binary(LOGICAL_OR, "logical_or", "Returns x OR y element-wise (bool).",
                           ">>> ef.logical_or(False, ef.constant([True, False])).numpy()"
                           ".tolist()\n[True, False]")
logical_xor = public_binary(LOGICAL_XOR, "logical_xor",
                            "Returns x XOR y element-wise (bool): True where exactly one is.",
                            ">>> ef.math.logical_xor(True, ef.constant([True, False])).numpy()"
                            ".tolist()\n[False, True]")
logical_not = public_unary(LOGICAL_NOT, "logical_not", "Returns NOT x element-wise (bool).",
                           ">>> ef.logical_not(ef.constant([True, False])).numpy().tolist()\n"
                           "[False, True]")
bitwise_and = public_binary(BITWISE_AND, "bitwise_and",
                            "Returns the bitwise AND of two integer tensors.",
                            ">>> ef.bitwise.bitwise_and(ef.constant([12]), 10).numpy().tolist()"
                            "\n[8]")
bitwise_or = public_binary(BITWISE_OR, "bitwise_or",
                           "Returns the bitwise OR of two integer tensors.",
                           ">>> ef.bitwise.bitwise_or(ef.constant([12]), 10).numpy().tolist()"
                           "\n[14]")
bitwise_xor = public_binary(BITWISE_XOR, "bitwise_xor",
                            "Returns the bitwise XOR of two integer tensors.",
                            ">>> ef.bitwise.bitwise_xor(ef.constant([12]), 10).numpy().tolist()"
                            "\n[6]")
invert = public_unary(INVERT, "invert",
                      "Flips every bit of an integer tensor (~x; -x - 1 for signed types).",
                      ">>> ef.bitwise.invert(ef.constant([0, 5])).numpy().tolist()\n[-1, -6]")
left_shift = public_binary(
    LEFT_SHIFT, "left_shift",
    "Shifts the bits of x left by y, wrapping as unsigned arithmetic does.\n\n"
    "Shift amounts are clamped to [0, bit width - 1], as TF's kernels do, so negative or "
    "oversized shifts give a defined result.",
    ">>> ef.bitwise.left_shift(ef.constant([1, -1]), 3).numpy().tolist()\n[8, -8]")
right_shift = public_binary(
    RIGHT_SHIFT, "right_shift",
    "Shifts the bits of x right by y (arithmetic shift for signed types).\n\n"
    "Shift amounts are clamped to [0, bit width - 1], as TF's kernels do.",
    ">>> ef.bitwise.right_shift(ef.constant([16, -16]), 2).numpy().tolist()\n[4, -4]")


def _is_bool(x, y=None):
    """Whether the operands of ``& | ^ ~`` are bool (the first tensor among them decides)."""
    for v in (x, y):
        if v.__class__ is Tensor:
            return v._value.dtype.kind == "b"
        dt = getattr(v, "dtype", None)
        if isinstance(dt, d.DType):
            return dt.is_bool
    return np.asarray(x).dtype.kind == "b"


def and_(x, y, name=None):
    """``x & y``: logical AND for bool tensors, bitwise AND for integer tensors.

    Example:
        >>> import eagerflow as ef
        >>> (ef.constant([True]) & ef.constant([False])).numpy().tolist()
        [False]
    """
    return execute(LOGICAL_AND if _is_bool(x, y) else BITWISE_AND, (x, y))


def or_(x, y, name=None):
    """``x | y``: logical OR for bool tensors, bitwise OR for integer tensors.

    Example:
        >>> import eagerflow as ef
        >>> (ef.constant([4]) | 1).numpy().tolist()
        [5]
    """
    return execute(LOGICAL_OR if _is_bool(x, y) else BITWISE_OR, (x, y))


def xor_(x, y, name=None):
    """``x ^ y``: logical XOR for bool tensors, bitwise XOR for integer tensors.

    Example:
        >>> import eagerflow as ef
        >>> (ef.constant([True]) ^ True).numpy().tolist()
        [False]
    """
    return execute(LOGICAL_XOR if _is_bool(x, y) else BITWISE_XOR, (x, y))


def invert_(x, name=None):
    """``~x``: logical NOT for bool tensors, bitwise inversion for integer tensors.

    Example:
        >>> import eagerflow as ef
        >>> (~ef.constant([True, False])).numpy().tolist()
        [False, True]
    """
    return execute(LOGICAL_NOT if _is_bool(x) else INVERT, (x,))
