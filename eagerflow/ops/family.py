"""Family factories: the shared defaults of elementwise primitives.

A unary or binary elementwise primitive needs only its name, kernel factory, dtypes,
gradient and numpy reference; its shape rule (same shape / broadcasting), its test samples
and its public function come from here.
"""

from __future__ import annotations


import numpy as np

from eagerflow import dtypes as d
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue

FLOAT = (d.float16, d.bfloat16, d.float32, d.float64)
COMPLEX = (d.complex64, d.complex128)
FLOAT_COMPLEX = FLOAT + COMPLEX
SIGNED_INT = (d.int8, d.int16, d.int32, d.int64)
UNSIGNED_INT = (d.uint8, d.uint16, d.uint32, d.uint64)
INT = SIGNED_INT + UNSIGNED_INT
REAL = FLOAT + INT
NUMERIC = REAL + COMPLEX
BOOL = (d.bool,)
ALL = NUMERIC + BOOL

# The operand dtypes a primitive's GPU scalar expression (``gpu_expr``) is written for.
GPU_FLOAT = frozenset(("float32", "float64"))
GPU_NUM = GPU_FLOAT | frozenset(
    ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))
GPU_ANY = GPU_NUM | {"bool"}
GPU_BOOL = frozenset(("bool",))

# Why a kernel reads values on the host (``host_sync``): the reasons a captured step
# (``function/capture.py``) gives for not capturing a function that holds the op.
HOST_VALUE_SHAPE = "its output's shape depends on the input values, which it reads on the host"
HOST_INDEX_CHECK = "it reads its indices on the host to check that they are in range"
HOST_VALUE_CHECK = "it reads its input values on the host to check them"
HOST_NUMPY = "its kernel runs on numpy: inputs are copied to the host and the result back"
HOST_SOLVER = ("it calls cuSOLVER, which cupy refuses under stream capture, and reads the "
               "solver's status on the host")
HOST_PYTHON = "it runs Python code on the host"
HOST_FILES = "it reads or writes files on the host"


def host_sync_for_integers(reason):
    """A ``host_sync`` rule for an op whose kernel reads the host for integer inputs only
    (a check for zero divisors or negative powers that floats do not need)."""

    def rule(in_avals, attrs):
        return reason if in_avals and in_avals[0].dtype.is_integer else None

    return rule


# Integer division reads its divisors on the host to raise TF's error for a zero one.
HOST_INT_DIVISOR = host_sync_for_integers(
    "it reads integer divisors on the host to check for zero")


# Cost estimates (``cost``) for the placer; a dimension unknown at trace time (a ``None``
# batch size) counts as this many elements.
UNKNOWN_DIM = 32


def aval_size(aval):
    """The element count of an abstract value (unknown dimensions count UNKNOWN_DIM)."""
    if aval.shape is None:
        return UNKNOWN_DIM
    n = 1
    for dim in aval.shape:
        n *= UNKNOWN_DIM if dim is None else dim
    return n


def aval_dim(aval, axis):
    """One dimension of an abstract value, counted from the end (``axis`` < 0); unknown,
    or a rank too small for it: UNKNOWN_DIM."""
    if aval.shape is None or len(aval.shape) < -axis:
        return UNKNOWN_DIM
    d_ = aval.shape[axis]
    return UNKNOWN_DIM if d_ is None else d_


def matmul_cost(ins, outs, attrs):
    """``2*m*n*k``: two flops per multiply-add of a (batched) matrix product (None, the
    default estimate, for a node without its two operands)."""
    if len(ins) < 2:
        return None
    a = ins[0]
    transposed = attrs.get("transpose_a") or attrs.get("adjoint_a")
    k = aval_dim(a, -2) if transposed else aval_dim(a, -1)
    return 2 * sum(aval_size(o) for o in outs) * k


def conv_cost(ins, outs, attrs):
    """The output (or input) size times the kernel volume times the input channels, times 2
    (the kernel is the largest operand after the first; None without one)."""
    if len(ins) < 2:
        return None
    kernel = max(ins[1:], key=aval_size)
    per_output = aval_size(kernel) // max(aval_dim(kernel, -1), 1)
    size = max(sum(aval_size(o) for o in outs), max(aval_size(a) for a in ins))
    return 2 * size * max(per_output, 1)


def cubic_cost(ins, outs, attrs):
    """``n**3`` per matrix of a batch: a factorization, inverse or solve."""
    if not ins:
        return None
    x = ins[0]
    n = aval_dim(x, -1)
    return n ** 3 * max(aval_size(x) // max(n ** 2, 1), 1)

UNARY_SHAPES = [(), (0,), (5,), (2, 3), (2, 1, 3)]
BINARY_SHAPES = [((), ()), ((5,), (5,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2)),
                 ((0,), (0,)), ((3, 1, 2), (4, 1))]


def broadcast_shapes(*shapes):
    """Broadcasts static shapes whose dims may be None (unknown)."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        dim = 1
        for s in shapes:
            k = axis - (rank - len(s))
            if k < 0:
                continue
            v = s[k]
            if v == 1:
                continue
            if v is None:
                dim = None if dim in (1, None) else dim
            elif dim in (1, None):
                dim = v
            elif dim != v:
                raise ValueError("shapes %s are not broadcast-compatible" % (list(shapes),))
        out.append(dim)
    return tuple(out)


def _sample_values(rng, shape, dtype, domain):
    low, high = domain
    np_dt = dtype.np_dtype
    if dtype.is_bool:
        return rng.random(shape) > 0.5
    if dtype is d.string:
        return string_values(rng, shape)
    if dtype.is_integer:
        lo = max(int(low), int(np.iinfo(np_dt).min))
        hi = min(int(high), int(np.iinfo(np_dt).max))
        return rng.integers(lo, hi + 1, size=shape).astype(np_dt)
    values = rng.uniform(low, high, size=shape)
    if dtype.is_complex:
        values = values + 1j * rng.uniform(low, high, size=shape)
    return np.asarray(values).astype(np_dt)


# Short byte strings, some repeated (so comparisons are sometimes true), one not UTF-8.
_STRINGS = (b"", b"a", b"ab", b"A b", b"caf\xc3\xa9", b"\xff", b"hello world")


def string_values(rng, shape):
    """An object array of ``bytes`` of ``shape``: sample values for string primitives."""
    picks = rng.integers(0, len(_STRINGS), size=shape)
    out = np.empty(np.shape(picks), dtype=object)
    for index in np.ndindex(out.shape):
        out[index] = _STRINGS[picks[index]]
    return out


def unary_samples(domain):
    def samples(rng, dtype):
        return [((_sample_values(rng, s, dtype, domain),), {}) for s in UNARY_SHAPES]
    return samples


def binary_samples(domain, domain_y=None):
    domain_y = domain_y or domain

    def samples(rng, dtype):
        return [((_sample_values(rng, a, dtype, domain), _sample_values(rng, b, dtype, domain_y)),
                 {}) for a, b in BINARY_SHAPES]
    return samples


def unary(name, forward, *, dtypes=FLOAT_COMPLEX, out_dtype=None, reference=None,
          domain=(-3.0, 3.0), vjp=None, saves=None, **kwargs):
    """Declares a unary elementwise primitive (same shape; dtype kept or ``out_dtype``)."""

    def shape_fn(x, **attrs):
        return AbstractValue(x.shape, out_dtype or x.dtype)

    kwargs.setdefault("samples", unary_samples(domain))
    prim = registry.primitive(
        name, forward, dtypes=dtypes, shape_fn=shape_fn, reference=reference, vjp=vjp,
        saves=saves, family=kwargs.pop("family", "math"), **kwargs)
    prim.domain = ("unary", domain, None)
    prim.elementwise = True
    return prim


def binary(name, forward, *, dtypes=NUMERIC, out_dtype=None, reference=None,
           domain=(-3.0, 3.0), domain_y=None, vjp=None, saves=None, **kwargs):
    """Declares a broadcasting binary elementwise primitive."""

    def shape_fn(x, y, **attrs):
        return AbstractValue(broadcast_shapes(x.shape, y.shape), out_dtype or x.dtype)

    kwargs.setdefault("samples", binary_samples(domain, domain_y))
    prim = registry.primitive(
        name, forward, dtypes=dtypes, shape_fn=shape_fn, reference=reference, vjp=vjp,
        saves=saves, family=kwargs.pop("family", "math"), **kwargs)
    prim.domain = ("binary", domain, domain_y or domain)
    prim.elementwise = True
    return prim


def public_unary(prim, pyname, summary, example=None):
    """Builds the public function ``pyname(x, name=None)`` for a unary primitive."""

    def op(x, name=None):
        return execute(prim, (x,))

    _finish(op, pyname, summary, example, "x")
    return op


def public_binary(prim, pyname, summary, example=None):
    """Builds the public function ``pyname(x, y, name=None)`` for a binary primitive."""

    def op(x, y, name=None):
        return execute(prim, (x, y))

    _finish(op, pyname, summary, example, "x, y")
    return op


def _finish(fn, pyname, summary, example, argnames):
    fn.__name__ = fn.__qualname__ = pyname
    fn.__module__ = "eagerflow.math"
    lines = [summary, "", "Args:"]
    for arg in argnames.split(", "):
        lines.append("    %s: A Tensor or a value convertible to one." % arg)
    lines += ["    name: Unused (TF compatibility).", "", "Returns:",
              "    A Tensor of the broadcast shape.", ""]
    if example:
        lines += ["Example:", "    >>> import eagerflow as ef"]
        lines += ["    " + line for line in example.strip().splitlines()]
    fn.__doc__ = "\n".join(lines)


def normalize_axis(axis, ndim, op_name):
    """Validates an int axis against a rank and returns it non-negative."""
    from eagerflow import errors

    try:
        axis = int(axis)
    except (TypeError, ValueError):
        raise errors.InvalidArgumentError(
            None, op_name, "%s: axis must be an int, got %r" % (op_name, axis)) from None
    if not -ndim <= axis < max(ndim, 1) and not (ndim == 0 and axis in (0, -1)):
        raise errors.InvalidArgumentError(
            None, op_name, "%s: axis %d is out of range for a tensor of rank %d (valid: "
            "[%d, %d])." % (op_name, axis, ndim, -ndim, ndim - 1))
    return axis % ndim if ndim else 0


