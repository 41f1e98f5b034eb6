"""Matrix products and transposes: matmul, matrix_transpose, adjoint and cross.

``MatMul`` multiplies the two innermost axes of ``[..., M, N]`` operands, broadcasting the
batch axes; its ``transpose_*``/``adjoint_*`` attrs apply op(X) in the kernel. For
``C = A @ B`` the gradients are ``dA = G @ B^H`` and ``dB = A^H @ G``, each computed as one
more MatMul with the right flags. This module also holds the shape checks and messages the
other linear algebra modules share (``_shape_text``, ``_rank_error``, ``_flip``).
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import conj
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, BOOL, NUMERIC, REAL, broadcast_shapes
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import convert_to_tensor
from eagerflow.ops.family import matmul_cost

__all__ = ["matmul", "matrix_transpose", "adjoint", "cross"]

EXPORTS = {
    "": ["matmul"],
    "linalg": ["matmul", "matrix_transpose", "adjoint", "cross"],
}


_MATMUL_DTYPES = tuple(t for t in NUMERIC if t not in BOOL)


def _shape_text(shape):
    return "[%s]" % ", ".join("?" if s is None else str(s) for s in shape)


def _rank_error(op, what, shape, need=2):
    return errors.InvalidArgumentError(
        None, None, "%s: %s must have rank >= %d (a matrix or a batch of matrices), got "
        "shape %s. Reshape vectors to [n, 1] or [1, n] first." % (op, what, need,
                                                                   _shape_text(shape)))


def _batch_broadcast(sa, sb, op, what):
    try:
        return broadcast_shapes(tuple(sa), tuple(sb))
    except ValueError:
        raise errors.InvalidArgumentError(
            None, op, "%s: the batch dimensions %s and %s of %s do not broadcast. Each batch "
            "dimension must be equal or 1." % (op, _shape_text(sa), _shape_text(sb), what)
        ) from None


# ----------------------------------------------------------------------------------------
# MatMul
# ----------------------------------------------------------------------------------------

def _flip(x, conjugate):
    """The (conjugate) transpose of the innermost two axes, as a view where possible."""
    x = x.swapaxes(-1, -2)
    return x.conj() if conjugate and x.dtype.kind == "c" else x


def _matmul_mismatch(a_shape, b_shape, ta, tb):
    a_dim, a_axis = (a_shape[-2], "second-to-last") if ta else (a_shape[-1], "last")
    b_dim, b_axis = (b_shape[-1], "last") if tb else (b_shape[-2], "second-to-last")
    if a_dim is not None and b_dim is not None and a_dim != b_dim:
        return errors.InvalidArgumentError(
            None, None, "Matrix size-incompatible: In[0] a has shape %s, In[1] b has shape %s; "
            "the contracted dimensions differ (a's %s dim %s%s vs b's %s dim %s%s). Multiply "
            "[..., M, K] by [..., K, N]: transpose an operand (transpose_a/transpose_b) or "
            "reshape so that they match." % (
                _shape_text(a_shape), _shape_text(b_shape), a_axis, a_dim,
                " after transpose_a" if ta else "", b_axis, b_dim,
                " after transpose_b" if tb else ""))
    return None


def _matmul_kernel(xp):
    matmul = xp.matmul

    def kernel(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
               output_type=None):
        if a.ndim < 2 or b.ndim < 2:
            raise errors.InvalidArgumentError(
                None, None, "matmul needs inputs of rank >= 2, got In[0] a with shape %s and "
                "In[1] b with shape %s. Use tf.linalg.matvec for a matrix times a vector, "
                "tf.tensordot or tf.einsum for other contractions, or expand_dims the vector "
                "to [n, 1]." % (_shape_text(a.shape), _shape_text(b.shape)))
        a_shape, b_shape = a.shape, b.shape
        if transpose_a or adjoint_a:
            a = _flip(a, adjoint_a)
        if transpose_b or adjoint_b:
            b = _flip(b, adjoint_b)
        if output_type is not None:
            target = d.as_dtype(output_type).np_dtype
            a = a.astype(target, copy=False)
            b = b.astype(target, copy=False)
        try:
            return matmul(a, b)
        except ValueError:
            exc = _matmul_mismatch(a_shape, b_shape, transpose_a or adjoint_a,
                                   transpose_b or adjoint_b)
            if exc is None:
                exc = errors.InvalidArgumentError(
                    None, None, "matmul: the batch dimensions of a %s and b %s do not "
                    "broadcast. Each batch dimension must be equal or 1." % (
                        _shape_text(a_shape), _shape_text(b_shape)))
            raise exc from None

    return kernel


def _matmul_shape(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
                  output_type=None):
    dtype = d.as_dtype(output_type) if output_type is not None else a.dtype
    if a.shape is None or b.shape is None:
        return AbstractValue(None, dtype)
    for what, s in (("a", a.shape), ("b", b.shape)):
        if len(s) < 2:
            raise _rank_error("MatMul", what, s)
    ta, tb = transpose_a or adjoint_a, transpose_b or adjoint_b
    exc = _matmul_mismatch(a.shape, b.shape, ta, tb)
    if exc is not None:
        exc.op = "MatMul"
        raise exc
    m = a.shape[-1] if ta else a.shape[-2]
    n = b.shape[-2] if tb else b.shape[-1]
    batch = _batch_broadcast(a.shape[:-2], b.shape[:-2], "MatMul", "a and b")
    return AbstractValue(batch + (m, n), dtype)


def _np_op(x, t, h):
    if t:
        return np.swapaxes(x, -1, -2)
    if h:
        x = np.swapaxes(x, -1, -2)
        return np.conj(x) if np.iscomplexobj(x) else x
    return x


def _matmul_reference(a, b, transpose_a=False, transpose_b=False, adjoint_a=False,
                      adjoint_b=False, output_type=None):
    out = np.matmul(_np_op(a, transpose_a, adjoint_a), _np_op(b, transpose_b, adjoint_b))
    return out if output_type is None else out.astype(d.as_dtype(output_type).np_dtype)


# Transpose and adjoint of op(X), for op in N (X), T (X^T), H (X^H), C (conj X).
_TRANSPOSED = {"N": "T", "T": "N", "H": "C", "C": "H"}
_ADJOINTED = {"N": "H", "T": "C", "H": "N", "C": "T"}


def _post(product, op):
    """Applies op (N/T/H) to a product [(op1, X1), (op2, X2)] of two operand terms."""
    (o1, x1), (o2, x2) = product
    if op == "N":
        return product
    table = _TRANSPOSED if op == "T" else _ADJOINTED
    return [(table[o2], x2), (table[o1], x1)]


def _run_product(product, is_complex):
    args, attrs = [], {}
    for (op, x), side in zip(product, "ab"):
        if op == "C":
            x, op = conj(x), "N"
        if op == "H" and not is_complex:
            op = "T"
        if op == "T":
            attrs["transpose_" + side] = True
        elif op == "H":
            attrs["adjoint_" + side] = True
        args.append(x)
    return execute(MATMUL, tuple(args), attrs)


def _matmul_vjp(g, a, b, out, transpose_a=False, transpose_b=False, adjoint_a=False,
                adjoint_b=False, output_type=None, skip=None):
    in_dtype = a.dtype
    if output_type is not None and d.as_dtype(output_type) is not in_dtype:
        from eagerflow.ops.math.cast import cast

        if not (in_dtype.is_floating or in_dtype.is_complex):
            return None, None
        a, b = cast(a, output_type), cast(b, output_type)
    op_a = "T" if transpose_a else ("H" if adjoint_a else "N")
    op_b = "T" if transpose_b else ("H" if adjoint_b else "N")
    is_complex = g.dtype.is_complex
    # C = op_a(A) op_b(B): d op_a(A) = G op_b(B)^H and d op_b(B) = op_a(A)^H G.
    ga = gb = None
    if not (skip and skip[0]):
        ga = _run_product(_post([("N", g), (_ADJOINTED[op_b], b)], op_a), is_complex)
    if not (skip and skip[1]):
        gb = _run_product(_post([(_ADJOINTED[op_a], a), ("N", g)], op_b), is_complex)
    if g.dtype is not in_dtype:
        from eagerflow.ops.math.cast import cast

        ga = None if ga is None else cast(ga, in_dtype)
        gb = None if gb is None else cast(gb, in_dtype)
    return ga, gb


def _matmul_samples(rng, dtype):
    def r(*shape):
        x = rng.uniform(-2, 2, size=shape)
        if dtype.is_complex:
            x = x + 1j * rng.uniform(-2, 2, size=shape)
        return np.asarray(x).astype(dtype.np_dtype)

    out = [((r(2, 3), r(3, 4)), {}), ((r(2, 2, 3), r(3, 4)), {}),
           ((r(2, 1, 2, 3), r(3, 3, 2)), {}), ((r(0, 3), r(3, 2)), {}),
           ((r(2, 0), r(0, 3)), {}), ((r(0, 2, 3), r(3, 4)), {}), ((r(1, 1), r(1, 1)), {})]
    for ta, tb, ha, hb in ((True, False, False, False), (False, True, False, False),
                           (True, True, False, False), (False, False, True, False),
                           (False, False, False, True), (True, False, False, True),
                           (False, True, True, False)):
        sa = (3, 2) if ta or ha else (2, 3)
        sb = (4, 3) if tb or hb else (3, 4)
        out.append(((r(2, *sa), r(*sb)), {"transpose_a": ta, "transpose_b": tb,
                                          "adjoint_a": ha, "adjoint_b": hb}))
    return out


def _matmul_bad(rng):
    x = rng.standard_normal
    return [((x((3,)), x((3, 2))), {}, errors.InvalidArgumentError),
            ((x((2, 3)), x((4, 2))), {}, errors.InvalidArgumentError),
            ((x((2, 3)), x((2, 3))), {"transpose_a": False}, errors.InvalidArgumentError),
            ((x((2, 2, 3)), x((3, 3, 2))), {}, errors.InvalidArgumentError)]


def _matmul_static(xp, avals, attrs):
    """MatMul of known shapes (validated when the graph was built): the flags are bound."""
    if attrs.get("output_type") is not None or attrs.get("adjoint_a") or \
            attrs.get("adjoint_b") or len(avals[0].shape) < 2 or len(avals[1].shape) < 2:
        return None
    matmul = xp.matmul
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
    if ta and tb:
        return lambda a, b: matmul(a.swapaxes(-1, -2), b.swapaxes(-1, -2))
    if ta:
        return lambda a, b: matmul(a.swapaxes(-1, -2), b)
    if tb:
        return lambda a, b: matmul(a, b.swapaxes(-1, -2))
    return matmul


MATMUL = registry.primitive(
    "MatMul", _matmul_kernel, dtypes=_MATMUL_DTYPES, shape_fn=_matmul_shape,
    vjp=_matmul_vjp, saves=(0, 1), vjp_skips=True, reference=_matmul_reference,
    samples=_matmul_samples,
    sweep_dtypes=(d.float32, d.float64, d.int32, d.complex128), bad_samples=_matmul_bad,
    family="linalg", doc="Batched matrix product with numpy batch broadcasting.",
    static_kernel=_matmul_static, cost=matmul_cost)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, grad_a=False, grad_b=False,
           name=None):
    """Multiplies matrix ``a`` by matrix ``b``: ``a @ b`` over the two innermost axes.

    Inputs of rank > 2 are batches of matrices whose batch dimensions broadcast (numpy
    rules, as in TF 2). ``a`` and ``b`` must share one dtype (floating, complex or integer).

    Args:
        a: A Tensor of shape ``[..., M, K]`` (``[..., K, M]`` if transposed/adjointed).
        b: A Tensor of shape ``[..., K, N]`` (``[..., N, K]`` if transposed/adjointed).
        transpose_a: If True, ``a`` is transposed before the product.
        transpose_b: If True, ``b`` is transposed before the product.
        adjoint_a: If True, ``a`` is conjugated and transposed before the product.
        adjoint_b: If True, ``b`` is conjugated and transposed before the product.
        a_is_sparse: Unused hint (TF compatibility); dense kernels are used.
        b_is_sparse: Unused hint (TF compatibility).
        output_type: Optional output dtype; the inputs are converted to it first (e.g. int8
            inputs with ``output_type=tf.int32`` accumulate in int32).
        grad_a: Unused (TF compatibility).
        grad_b: Unused (TF compatibility).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of shape ``[..., M, N]``.

    Raises:
        InvalidArgumentError: If an input has rank < 2, the contracted dimensions differ,
            the batch dimensions do not broadcast, or both transpose and adjoint are set for
            one operand.

    Example:
        >>> import eagerflow as ef
        >>> ef.matmul([[1.0, 2.0]], [[3.0], [4.0]]).numpy().tolist()
        [[11.0]]
    """
    # TF's matmul converts each operand on its own (b only with a dtype hint), so numpy
    # arrays keep their dtype here, unlike in elementwise ops.
    if isinstance(a, (np.ndarray, np.generic)):
        a = convert_to_tensor(a)
    if isinstance(b, (np.ndarray, np.generic)):
        b = convert_to_tensor(b)
    if not (transpose_a or transpose_b or adjoint_a or adjoint_b) and output_type is None:
        return execute(MATMUL, (a, b))
    if transpose_a and adjoint_a:
        raise errors.InvalidArgumentError(
            None, "MatMul", "matmul: only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise errors.InvalidArgumentError(
            None, "MatMul", "matmul: only one of transpose_b and adjoint_b can be True.")
    attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b),
             "adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)}
    if output_type is not None:
        out = d.as_dtype(output_type)
        a_dtype = getattr(a, "dtype", None)
        if a_dtype is None or d.as_dtype(a_dtype) is not out:
            if out.is_bool or not out.is_numeric:
                raise errors.InvalidArgumentError(
                    None, "MatMul", "matmul: output_type must be numeric, got %s." % out.name)
            attrs["output_type"] = out.name
    return execute(MATMUL, (a, b), attrs)


# ----------------------------------------------------------------------------------------
# Matrix transpose
# ----------------------------------------------------------------------------------------

def _transpose_kernel(xp):
    def kernel(x, conjugate=False):
        if x.ndim < 2:
            raise _rank_error("matrix_transpose", "the input", x.shape)
        return _flip(x, conjugate)
    return kernel


def _transpose_shape(x, conjugate=False):
    if x.shape is None:
        return AbstractValue(None, x.dtype)
    if len(x.shape) < 2:
        raise _rank_error("MatrixTranspose", "the input", x.shape)
    return AbstractValue(x.shape[:-2] + (x.shape[-1], x.shape[-2]), x.dtype)


MATRIX_TRANSPOSE = registry.primitive(
    "MatrixTranspose", _transpose_kernel, dtypes=ALL, shape_fn=_transpose_shape,
    vjp=lambda g, x, out, conjugate=False: execute(
        MATRIX_TRANSPOSE, (g,), {"conjugate": True} if conjugate else {}),
    saves=(),
    reference=lambda x, conjugate=False: _np_op(x, not conjugate, conjugate),
    samples=lambda rng, dtype: [
        ((rng.uniform(-2, 2, size=s).astype(dtype.np_dtype),), attrs)
        for s in ((2, 3), (4, 2, 3), (0, 3), (2, 0, 1))
        for attrs in ({}, {"conjugate": True})],
    bad_samples=lambda rng: [((rng.standard_normal((3,)),), {}, errors.InvalidArgumentError)],
    family="linalg")


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """Transposes the two innermost axes of a (batch of) matrices.

    Args:
        a: A Tensor of rank >= 2.
        name: Unused (TF compatibility).
        conjugate: If True (and ``a`` is complex), also conjugates: the adjoint.

    Returns:
        A Tensor of shape ``[..., N, M]`` for ``a`` of shape ``[..., M, N]``.

    Raises:
        InvalidArgumentError: If ``a`` has rank < 2.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.matrix_transpose([[1, 2, 3]]).numpy().tolist()
        [[1], [2], [3]]
    """
    return execute(MATRIX_TRANSPOSE, (a,), {"conjugate": True} if conjugate else {})


def adjoint(matrix, name=None):
    """The conjugate transpose of the two innermost axes (``matrix_transpose(conjugate=True)``).

    Args:
        matrix: A Tensor of rank >= 2.
        name: Unused.

    Returns:
        A Tensor of shape ``[..., N, M]``.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.adjoint([[1 + 2j, 3j]]).numpy().tolist()
        [[(1-2j)], [-3j]]
    """
    return execute(MATRIX_TRANSPOSE, (matrix,), {"conjugate": True})


# ----------------------------------------------------------------------------------------
# Cross product
# ----------------------------------------------------------------------------------------

def _cross_kernel(xp):
    def kernel(a, b):
        if a.shape != b.shape or a.ndim < 1 or a.shape[-1] != 3:
            raise errors.InvalidArgumentError(
                None, None, "cross: both inputs must have the same shape [..., 3], got %s and "
                "%s." % (_shape_text(a.shape), _shape_text(b.shape)))
        return xp.cross(a, b)
    return kernel


CROSS = registry.primitive(
    "Cross", _cross_kernel, dtypes=tuple(t for t in REAL if t not in (d.bfloat16,)),
    shape_fn=lambda a, b: AbstractValue(a.shape, a.dtype),
    vjp=lambda g, a, b, out: (execute(CROSS, (b, g)), execute(CROSS, (g, a))), saves=(0, 1),
    reference=np.cross,
    samples=lambda rng, dtype: [
        ((rng.uniform(-3, 3, size=s).astype(dtype.np_dtype),
          rng.uniform(-3, 3, size=s).astype(dtype.np_dtype)), {})
        for s in ((3,), (4, 3), (2, 1, 3), (0, 3))],
    bad_samples=lambda rng: [
        ((rng.standard_normal((2,)), rng.standard_normal((2,))), {},
         errors.InvalidArgumentError),
        ((rng.standard_normal((2, 3)), rng.standard_normal((3,))), {},
         errors.InvalidArgumentError)],
    family="linalg")


def cross(a, b, name=None):
    """The cross product of 3-element vectors along the last axis.

    Args:
        a: A real Tensor ``[..., 3]``.
        b: A Tensor of the same shape and dtype.
        name: Unused.

    Returns:
        A Tensor ``[..., 3]``.

    Raises:
        InvalidArgumentError: If the shapes differ or the last axis is not 3.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]).numpy().tolist()
        [0.0, 0.0, 1.0]
    """
    return execute(CROSS, (a, b))
