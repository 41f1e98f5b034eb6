"""Linear algebra on batches of matrices: matmul, einsum, transposes, diagonals, bands, norms.

Every primitive works on the two innermost axes of ``[..., M, N]`` inputs; leading axes are
batch axes, broadcast between operands the numpy way (as TF 2's ``BatchMatMulV2`` does).
Decompositions and solvers (inv, det, cholesky, qr, svd, eigh...) live in
:mod:`eagerflow.ops.linalg_decomp`.

Gradients use the usual matrix calculus with TF's complex convention (``g * conj(df/dx)``):
for ``C = A @ B``, ``dA = G @ B^H`` and ``dB = A^H @ G``; an einsum's gradient with respect
to one operand is another einsum of the output cotangent with the other operands.

Example:
    >>> import eagerflow as ef
    >>> a = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> (a @ a).numpy().tolist()
    [[7.0, 10.0], [15.0, 22.0]]
"""

from __future__ import annotations

import functools
import math
import string

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.arithmetic import ONES_LIKE_fn, conj, zeros_like_t
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, BOOL, NUMERIC, REAL, broadcast_shapes
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = [
    "matmul", "matrix_transpose", "adjoint", "einsum", "tensordot", "matvec", "trace",
    "diag", "diag_part", "set_diag", "band_part", "cross", "norm",
]

EXPORTS = {
    "": ["matmul", "einsum", "tensordot", "norm"],
    "linalg": ["matmul", "matrix_transpose", "adjoint", "einsum", "tensordot", "matvec",
               "trace", "diag", "diag_part", "set_diag", "band_part", "cross", "norm"],
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
                adjoint_b=False, output_type=None):
    in_dtype = a.dtype
    if output_type is not None and d.as_dtype(output_type) is not in_dtype:
        from eagerflow.ops.cast import cast

        if not (in_dtype.is_floating or in_dtype.is_complex):
            return None, None
        a, b = cast(a, output_type), cast(b, output_type)
    op_a = "T" if transpose_a else ("H" if adjoint_a else "N")
    op_b = "T" if transpose_b else ("H" if adjoint_b else "N")
    is_complex = g.dtype.is_complex
    # C = op_a(A) op_b(B): d op_a(A) = G op_b(B)^H and d op_b(B) = op_a(A)^H G.
    ga = _run_product(_post([("N", g), (_ADJOINTED[op_b], b)], op_a), is_complex)
    gb = _run_product(_post([(_ADJOINTED[op_a], a), ("N", g)], op_b), is_complex)
    if ga.dtype is not in_dtype:
        from eagerflow.ops.cast import cast

        ga, gb = cast(ga, in_dtype), cast(gb, in_dtype)
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


MATMUL = registry.primitive(
    "MatMul", _matmul_kernel, dtypes=_MATMUL_DTYPES, shape_fn=_matmul_shape,
    vjp=_matmul_vjp, saves=(0, 1), reference=_matmul_reference, samples=_matmul_samples,
    sweep_dtypes=(d.float32, d.float64, d.int32, d.complex128), bad_samples=_matmul_bad,
    family="linalg", doc="Batched matrix product with numpy batch broadcasting.")


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
# Einsum
# ----------------------------------------------------------------------------------------

_LETTERS = string.ascii_letters


def _einsum_error(message):
    return errors.InvalidArgumentError(None, "Einsum", "einsum: " + message)


@functools.lru_cache(maxsize=1024)
def _canonical_equation(equation, ranks):
    """Validates ``equation`` against operand ranks; returns the explicit form ``in->out``."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise _einsum_error("equation %r has more than one '->'." % equation)
    lhs, arrow, out = eq.partition("->")
    specs = lhs.split(",")
    if len(specs) != len(ranks):
        raise _einsum_error("equation %r has %d input subscript(s) but %d operand(s) were "
                            "given." % (equation, len(specs), len(ranks)))
    counts = {}
    has_ellipsis = False
    for i, (spec, rank) in enumerate(zip(specs, ranks)):
        labels = _check_spec(spec, equation)
        has_ellipsis |= "..." in spec
        if rank is not None and (len(labels) > rank or ("..." not in spec and len(labels) != rank)):
            raise _einsum_error(
                "operand %d has rank %d but its subscript %r names %d axes%s. Give one label "
                "per axis, or use '...' for leading axes." % (
                    i, rank, spec, len(labels), "" if "..." not in spec else " or more"))
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
    if arrow:
        out_labels = _check_spec(out, equation)
        if len(set(out_labels)) != len(out_labels):
            raise _einsum_error("output subscript %r repeats a label." % out)
        for label in out_labels:
            if label not in counts:
                raise _einsum_error("output label %r of %r appears in no input." % (
                    label, equation))
        if "..." in out and not has_ellipsis:
            raise _einsum_error("output of %r has '...' but no input does." % equation)
    else:
        # Implicit output: labels used once, in ASCII order (upper case first), as numpy.
        out = ("..." if has_ellipsis else "") + "".join(
            sorted(k for k, v in counts.items() if v == 1))
    return ",".join(specs) + "->" + out


def _check_spec(spec, equation):
    body = spec.replace("...", "", 1)
    if "." in body:
        raise _einsum_error("subscript %r of %r has a '.' that is not part of one '...'."
                            % (spec, equation))
    for c in body:
        if c not in _LETTERS:
            raise _einsum_error("subscript %r of %r has %r; labels must be letters a-z, A-Z."
                                % (spec, equation, c))
    return body


@functools.lru_cache(maxsize=2048)
def _einsum_plan(equation, shapes):
    """Expands '...' into letters and checks label sizes for concrete or partial shapes.

    Returns (specs, out, sizes): explicit per-operand label strings, the output labels and
    each label's (broadcast) size. Named labels must match exactly, as in TF; axes under
    '...' broadcast (size 1 against n).
    """
    lhs, out = equation.split("->")
    specs = lhs.split(",")
    used = set(equation)
    free = [c for c in _LETTERS if c not in used]
    ell = [len(s) - (len(sp) - 3) if "..." in sp else 0 for sp, s in zip(specs, shapes)]
    width = max(ell, default=0)
    if width > len(free):
        raise _einsum_error("too many axes under '...' for the available labels.")
    ell_letters = "".join(free[:width])
    exp_specs = tuple(sp.replace("...", ell_letters[width - r:]) for sp, r in zip(specs, ell))
    exp_out = out.replace("...", ell_letters)
    sizes = {}
    for i, (sp, shape) in enumerate(zip(exp_specs, shapes)):
        for axis, (label, dim) in enumerate(zip(sp, shape)):
            known = sizes.get(label)
            if dim is None:
                sizes.setdefault(label, None)
                continue
            if known is None:
                sizes[label] = dim
            elif known != dim:
                if label in ell_letters and (dim == 1 or known == 1):
                    sizes[label] = max(dim, known)
                else:
                    raise _einsum_error(
                        "label %r has size %d at axis %d of operand %d (shape %s) but size %d "
                        "elsewhere in %r. Axes with the same label must have the same size "
                        "(only axes under '...' broadcast)." % (
                            label, dim, axis, i, _shape_text(shape), known, equation))
    return exp_specs, exp_out, sizes


@functools.lru_cache(maxsize=2048)
def _two_operand_plan(equation, shapes):
    """Static steps that contract two operands with one (batched) matmul.

    The operands are summed over labels of their own that the output drops, transposed to
    ``[batch, kept, contracted]`` / ``[batch, contracted, kept]``, reshaped to matrices and
    multiplied; the product is reshaped and transposed into the output's label order.
    Returns None when an operand repeats a label (a diagonal: numpy's einsum does it).
    """
    (sa, sb), out, sizes = _einsum_plan(equation, shapes)
    if len(set(sa)) != len(sa) or len(set(sb)) != len(sb):
        return None
    steps = []
    for own, other, shape in ((sa, sb, shapes[0]), (sb, sa, shapes[1])):
        summed = tuple(i for i, c in enumerate(own) if c not in other and c not in out)
        kept_labels = "".join(c for c in own if c in other or c in out)
        kept_shape = tuple(dim for c, dim in zip(own, shape) if c in other or c in out)
        steps.append((summed, kept_labels, kept_shape))
    (a_sum, sa, a_shape), (b_sum, sb, b_shape) = steps
    batch = [c for c in out if c in sa and c in sb]
    contract = [c for c in sa if c in sb and c not in out]
    a_keep = [c for c in sa if c not in sb]
    b_keep = [c for c in sb if c not in sa]
    nb = len(batch)
    k_dims = tuple(sizes[c] for c in contract)
    plans = []
    for labels, own, shape, keep, first in ((batch + a_keep + contract, sa, a_shape, a_keep,
                                             True),
                                            (batch + contract + b_keep, sb, b_shape, b_keep,
                                             False)):
        perm = tuple(own.index(c) for c in labels)
        moved = tuple(shape[i] for i in perm)
        keep_dims = tuple(shape[own.index(c)] for c in keep)
        # A '...' axis of size 1 contracted against size n must be broadcast first.
        full = moved[:nb] + (keep_dims + k_dims if first else k_dims + keep_dims)
        matrix = moved[:nb] + ((math.prod(keep_dims), math.prod(k_dims)) if first else
                               (math.prod(k_dims), math.prod(keep_dims)))
        plans.append((perm if perm != tuple(range(len(perm))) else None,
                      full if full != moved else None, matrix, keep_dims))
    have = batch + a_keep + b_keep
    perm_out = tuple(have.index(c) for c in out)
    return (a_sum, b_sum, plans[0], plans[1], plans[0][3] + plans[1][3],
            perm_out if perm_out != tuple(range(len(perm_out))) else None)


def _einsum_kernel(xp):
    def prepare(x, summed, plan):
        perm, full, matrix, _ = plan
        if summed:
            x = x.sum(axis=summed)
        if perm is not None:
            x = x.transpose(perm)
        if full is not None:
            x = xp.broadcast_to(x, full)
        return x.reshape(matrix)

    def kernel(*operands, equation):
        shapes = tuple(o.shape for o in operands)
        if len(operands) == 2:
            plan = _two_operand_plan(equation, shapes)
            if plan is not None:
                a_sum, b_sum, a_plan, b_plan, kept, perm_out = plan
                r = xp.matmul(prepare(operands[0], a_sum, a_plan),
                              prepare(operands[1], b_sum, b_plan))
                r = r.reshape(r.shape[:-2] + kept)
                return r if perm_out is None else r.transpose(perm_out)
        specs, out, _ = _einsum_plan(equation, shapes)
        explicit = ",".join(specs) + "->" + out
        return xp.einsum(explicit, *operands, optimize=len(operands) > 2)

    return kernel


def _einsum_shape(*avals, equation):
    if any(a.shape is None for a in avals):
        return AbstractValue(None, avals[0].dtype)
    _, out, sizes = _einsum_plan(equation, tuple(a.shape for a in avals))
    return AbstractValue(tuple(sizes[c] for c in out), avals[0].dtype)


@functools.lru_cache(maxsize=1024)
def _einsum_grad_plan(equation, shapes, i):
    """How to build operand ``i``'s gradient as one einsum; all '...' made explicit.

    Returns (grad_equation, others, extras): ``others`` are the operand indices the gradient
    einsum takes after the cotangent; ``extras`` lists the constant operands appended after
    them, each ``(kind, source_equation)``: ``"ones"`` is a vector of ones sized like a label
    that appears only in operand i (its gradient is broadcast along it), ``"eye"`` an
    identity that puts the gradient back on a repeated label's diagonal. Both are built from
    operand i itself with ``source_equation`` so that they carry its size, dtype and device.
    """
    specs, out, sizes = _einsum_plan(equation, shapes)
    used = set(equation) | set("".join(specs)) | set(out)
    free = iter(c for c in _LETTERS if c not in used)

    def fresh():
        try:
            return next(free)
        except StopIteration:
            raise errors.UnimplementedError(
                None, "Einsum", "einsum gradient: the equation %r uses too many labels to "
                "derive its gradient." % equation) from None

    # An axis broadcast from size 1 gets its own label, summed (or re-created) separately.
    own = []
    for sp, shape in zip(specs, shapes):
        own.append("".join(fresh() if dim == 1 and sizes.get(c) not in (1, None) else c
                           for c, dim in zip(sp, shape)))
    target = list(own[i])
    extras = []
    seen = set()
    for pos, c in enumerate(target):
        if c in seen:  # a repeated label: the gradient lives on the diagonal
            r = fresh()
            target[pos] = r
            extras.append(("eye", c, r))
        seen.add(c)
    present = set(out)
    for j, sp in enumerate(own):
        if j != i:
            present |= set(sp)
    for _, c, r in extras:
        present |= {c, r}
    for c in target:
        if c not in present:
            extras.append(("ones", c, None))
            present.add(c)
    others = tuple(j for j in range(len(specs)) if j != i)
    ins = [out] + [own[j] for j in others]
    ins += [c + r if kind == "eye" else c for kind, c, r in extras]
    grad_eq = ",".join(ins) + "->" + "".join(target)
    built = tuple((kind, own[i] + "->" + c) for kind, c, _ in extras)
    return grad_eq, others, built


def _einsum_grads(g, operands, equation):
    shapes = tuple(tuple(o.shape) for o in operands)
    is_complex = g.dtype.is_complex
    grads = []
    for i, x in enumerate(operands):
        grad_eq, others, extras = _einsum_grad_plan(equation, shapes, i)
        ins = [g]
        for j in others:
            ins.append(conj(operands[j]) if is_complex else operands[j])
        for kind, src in extras:
            ones = ONES_LIKE_fn(execute(EINSUM, (x,), {"equation": src}))
            ins.append(execute(MATRIX_DIAG, (ones,), {}) if kind == "eye" else ones)
        grads.append(execute(EINSUM, tuple(ins), {"equation": grad_eq}))
    return tuple(grads)


def _einsum_reference(*operands, equation):
    return np.einsum(equation, *operands)


def _einsum_samples(rng, dtype):
    def r(*shape):
        return rng.uniform(-2, 2, size=shape).astype(dtype.np_dtype)

    return [
        ((r(2, 3), r(3, 4)), {"equation": "ij,jk->ik"}),
        ((r(5, 2, 3), r(5, 3, 4)), {"equation": "bij,bjk->bik"}),
        ((r(2, 3, 4), r(4, 3)), {"equation": "abc,cb->a"}),
        ((r(3, 3),), {"equation": "ii->i"}),
        ((r(3, 3),), {"equation": "ii->"}),
        ((r(2, 3),), {"equation": "ij->ji"}),
        ((r(2, 3),), {"equation": "ij->"}),
        ((r(4,), r(5,)), {"equation": "i,j->ij"}),
        ((r(4,), r(4,)), {"equation": "i,i->"}),
        ((r(2, 3), r(3, 4), r(4, 2)), {"equation": "ij,jk,kl->il"}),
        ((r(5, 1, 2, 3), r(4, 3, 2)), {"equation": "...ij,...jk->...ik"}),
        ((r(2, 3, 4), r(4,)), {"equation": "i...j,j->i..."}),
        ((r(2, 3), r(2, 3)), {"equation": "ij,ij->ij"}),
        ((r(2, 3, 4), r(2, 4, 5)), {"equation": "bij,bjk->kib"}),
        ((r(0, 3), r(3, 2)), {"equation": "ij,jk->ik"}),
        ((r(2, 0), r(0, 3)), {"equation": "ij,jk->ik"}),
        ((r(), r(3)), {"equation": ",i->i"}),
        ((r(2, 3), r(3, 2)), {"equation": "ij,ji->"}),
        ((r(2, 3, 3), r(3)), {"equation": "bii,i->b"}),
    ]


def _einsum_bad(rng):
    x = rng.standard_normal
    E = errors.InvalidArgumentError
    return [((x((2, 3)), x((4, 5))), {"equation": "ij,jk->ik"}, E),
            ((x((2, 3)),), {"equation": "ijk->i"}, E)]


EINSUM = registry.primitive(
    "Einsum", _einsum_kernel, dtypes=_MATMUL_DTYPES, variadic=True, shape_fn=_einsum_shape,
    vjp=lambda g, *args, equation: _einsum_grads(g, args[:-1], equation), saves=("all",),
    reference=_einsum_reference, samples=_einsum_samples, bad_samples=_einsum_bad,
    sweep_dtypes=(d.float32, d.float64, d.int32), family="linalg")


def _as_tensors(values):
    return [v if isinstance(v, Tensor) or hasattr(v, "_as_tensor") or hasattr(v, "shape")
            and not isinstance(v, np.ndarray) else convert_to_tensor(v) for v in values]


def _rank_of(x):
    if x.__class__ is Tensor:
        return x._value.ndim
    shape = x.shape
    try:
        return len(shape)
    except (TypeError, ValueError):
        return None


def einsum(equation, *inputs, **kwargs):
    """Tensor contraction over labelled axes (Einstein summation).

    Supports explicit (``"ij,jk->ik"``) and implicit (``"ij,jk"``) output, repeated labels
    within one operand (diagonals: ``"ii->i"``), and ``...`` for leading axes, which
    broadcast between operands (size 1 against n). Named labels must have equal sizes in
    every operand. Axes under ``...`` that are missing from the output are summed (TF
    rejects such equations; numpy too).

    Args:
        equation: A string such as ``"bij,bjk->bik"``.
        *inputs: The operands (Tensors or convertible values), one per input subscript; a
            single list of operands is also accepted.
        **kwargs: ``name`` and ``optimize`` are accepted and ignored (TF compatibility).

    Returns:
        A Tensor with one axis per output label.

    Raises:
        InvalidArgumentError: If the equation is malformed, the number of operands or an
            operand's rank does not match it, or label sizes disagree.

    Example:
        >>> import eagerflow as ef
        >>> ef.einsum("i,i->", [1.0, 2.0], [3.0, 4.0]).numpy()
        np.float32(11.0)
    """
    for key in kwargs:
        if key not in ("name", "optimize"):
            raise TypeError("einsum() got an unexpected keyword argument %r" % key)
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    if not isinstance(equation, str):
        raise _einsum_error("equation must be a string, got %r." % (equation,))
    inputs = _as_tensors(inputs)
    canonical = _canonical_equation(equation, tuple(_rank_of(x) for x in inputs))
    return execute(EINSUM, tuple(inputs), {"equation": canonical})


# ----------------------------------------------------------------------------------------
# Composites built on einsum: tensordot, matvec
# ----------------------------------------------------------------------------------------

def _static_axes(value, what):
    if hasattr(value, "numpy"):
        value = np.asarray(value.numpy()).tolist()
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    try:
        return [int(v) for v in value]
    except (TypeError, ValueError):
        raise errors.InvalidArgumentError(
            None, "tensordot", "tensordot: %s must be an int or a list of ints, got %r."
            % (what, value)) from None


def tensordot(a, b, axes, name=None):
    """Sums the product of ``a`` and ``b`` over the given axes (numpy's tensordot).

    Args:
        a: A Tensor.
        b: A Tensor of the same dtype.
        axes: An int N (contract the last N axes of ``a`` with the first N of ``b``), or a
            pair ``[a_axes, b_axes]`` of ints or equal-length lists of ints.
        name: Unused.

    Returns:
        A Tensor with a's free axes followed by b's free axes.

    Raises:
        InvalidArgumentError: If the axes are out of range, of unequal count, or the
            contracted dimensions differ.

    Example:
        >>> import eagerflow as ef
        >>> ef.tensordot([[1.0, 2.0]], [[3.0], [4.0]], axes=1).numpy().tolist()
        [[11.0]]
    """
    a, b = _as_tensors((a, b))
    ra, rb = _rank_of(a), _rank_of(b)
    if ra is None or rb is None:
        raise errors.InvalidArgumentError(
            None, "tensordot", "tensordot needs inputs of known rank.")
    if hasattr(axes, "numpy"):
        axes = np.asarray(axes.numpy()).tolist()
    if isinstance(axes, (list, tuple)) and len(axes) == 2:
        a_axes = _static_axes(axes[0], "axes[0]")
        b_axes = _static_axes(axes[1], "axes[1]")
    else:
        n = _static_axes(axes, "axes")
        if len(n) != 1:
            raise errors.InvalidArgumentError(
                None, "tensordot", "tensordot: axes must be an int or a pair of lists, got "
                "%r." % (axes,))
        n = n[0]
        if not 0 <= n <= min(ra, rb):
            raise errors.InvalidArgumentError(
                None, "tensordot", "tensordot: axes=%d must be in [0, %d] for inputs of rank "
                "%d and %d." % (n, min(ra, rb), ra, rb))
        a_axes, b_axes = list(range(ra - n, ra)), list(range(n))
    if len(a_axes) != len(b_axes):
        raise errors.InvalidArgumentError(
            None, "tensordot", "tensordot: a_axes %s and b_axes %s must have the same length."
            % (a_axes, b_axes))
    norm_a, norm_b = [], []
    for axes_list, rank, out, what in ((a_axes, ra, norm_a, "a"), (b_axes, rb, norm_b, "b")):
        for ax in axes_list:
            if not -rank <= ax < rank:
                raise errors.InvalidArgumentError(
                    None, "tensordot", "tensordot: axis %d is out of range for %s of rank %d."
                    % (ax, what, rank))
            out.append(ax % rank)
    if len(set(norm_a)) != len(norm_a) or len(set(norm_b)) != len(norm_b):
        raise errors.InvalidArgumentError(
            None, "tensordot", "tensordot: repeated axes in %s / %s." % (a_axes, b_axes))
    if ra + rb > len(_LETTERS):
        raise errors.UnimplementedError(None, "tensordot", "tensordot: inputs of too high rank.")
    la = list(_LETTERS[:ra])
    lb = list(_LETTERS[ra:ra + rb])
    for i, j in zip(norm_a, norm_b):
        da, db = a.shape[i], b.shape[j]
        if da is not None and db is not None and da != db:
            raise errors.InvalidArgumentError(
                None, "tensordot", "tensordot: a's axis %d has size %d but b's axis %d has "
                "size %d; contracted axes must match (a %s, b %s)." % (
                    i, da, j, db, _shape_text(a.shape), _shape_text(b.shape)))
        lb[j] = la[i]
    out = [c for k, c in enumerate(la) if k not in norm_a] + [
        c for k, c in enumerate(lb) if k not in norm_b]
    eq = "%s,%s->%s" % ("".join(la), "".join(lb), "".join(out))
    return execute(EINSUM, (a, b), {"equation": eq})


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """Multiplies matrix ``a`` by vector ``b``: ``out[..., i] = sum_j a[..., i, j] b[..., j]``.

    Batch dimensions broadcast.

    Args:
        a: A Tensor of shape ``[..., M, N]`` (``[..., N, M]`` if transposed/adjointed).
        b: A Tensor of shape ``[..., N]``.
        transpose_a: If True, ``a`` is transposed first.
        adjoint_a: If True, ``a`` is conjugated and transposed first.
        a_is_sparse: Unused hint.
        b_is_sparse: Unused hint.
        name: Unused.

    Returns:
        A Tensor of shape ``[..., M]``.

    Raises:
        InvalidArgumentError: If ``a`` has rank < 2, ``b`` rank < 1, or sizes disagree.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0]).numpy().tolist()
        [3.0, 7.0]
    """
    if transpose_a and adjoint_a:
        raise errors.InvalidArgumentError(
            None, "matvec", "matvec: only one of transpose_a and adjoint_a can be True.")
    a, b = _as_tensors((a, b))
    ra, rb = _rank_of(a), _rank_of(b)
    if ra is not None and ra < 2:
        raise _rank_error("matvec", "a", a.shape)
    if rb is not None and rb < 1:
        raise errors.InvalidArgumentError(
            None, "matvec", "matvec: b must be a vector or a batch of vectors, got a scalar.")
    if adjoint_a and a.dtype.is_complex:
        a = conj(a)
    eq = "...ji,...j->...i" if (transpose_a or adjoint_a) else "...ij,...j->...i"
    return execute(EINSUM, (a, b), {"equation": eq})


# ----------------------------------------------------------------------------------------
# Diagonals: MatrixDiagPartV3, MatrixDiagV3, MatrixSetDiagV3
# ----------------------------------------------------------------------------------------

_ALIGNS = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def _diag_len(m, n, k):
    return min(m + min(k, 0), n - max(k, 0))


@functools.lru_cache(maxsize=512)
def _diag_indices(m, n, k0, k1, align):
    """numpy index arrays (diag, pos, row, col) of the diagonals k1 down to k0 of [m, n].

    Row ``diag`` of a packed ``[num_diags, max_len]`` array holds diagonal ``k1 - diag``;
    ``pos`` is the element's place in that row (TF's alignment), ``row/col`` its place in
    the matrix.
    """
    max_len = max(0, min(m + min(k1, 0), n - max(k0, 0)))
    left_super = align.startswith("LEFT")
    left_sub = align.endswith("LEFT")
    parts = [], [], [], []
    for index, k in enumerate(range(k1, k0 - 1, -1)):
        length = _diag_len(m, n, k)
        if length <= 0:
            continue
        left = (k >= 0 and left_super) or (k <= 0 and left_sub)
        j = np.arange(length)
        parts[0].append(np.full(length, index))
        parts[1].append(j + (0 if left else max_len - length))
        parts[2].append(j - min(k, 0))
        parts[3].append(j + max(k, 0))
    empty = np.zeros(0, np.int64)
    return tuple(np.concatenate(p) if p else empty for p in parts) + (max_len,)


def _check_k(k, m, n, op):
    k0, k1 = k
    if k0 > k1:
        raise errors.InvalidArgumentError(
            None, None, "%s: the lower diagonal index k[0]=%d must not exceed k[1]=%d."
            % (op, k0, k1))
    for v in k:
        if v != 0 and not -m < v < n:
            raise errors.InvalidArgumentError(
                None, None, "%s: diagonal index %d is out of bounds for a %dx%d matrix (valid: "
                "(-%d, %d))." % (op, v, m, n, m, n))


def _diag_part_kernel(xp):
    def kernel(x, k=(0, 0), padding_value=0, align="RIGHT_LEFT"):
        if x.ndim < 2:
            raise _rank_error("matrix_diag_part", "the input", x.shape)
        m, n = x.shape[-2:]
        _check_k(k, m, n, "matrix_diag_part")
        if k[0] == k[1]:
            return xp.diagonal(x, offset=k[0], axis1=-2, axis2=-1).copy()
        di, pos, rows, cols, max_len = _diag_indices(m, n, k[0], k[1], align)
        out = xp.full(x.shape[:-2] + (k[1] - k[0] + 1, max_len), padding_value, dtype=x.dtype)
        out[..., xp.asarray(di), xp.asarray(pos)] = x[..., xp.asarray(rows), xp.asarray(cols)]
        return out
    return kernel


def _diag_part_shape(x, k=(0, 0), padding_value=0, align="RIGHT_LEFT"):
    if x.shape is None:
        return AbstractValue(None, x.dtype)
    if len(x.shape) < 2:
        raise _rank_error("MatrixDiagPartV3", "the input", x.shape)
    m, n = x.shape[-2:]
    if m is None or n is None:
        length = None
    else:
        length = max(0, min(m + min(k[1], 0), n - max(k[0], 0)))
    if k[0] == k[1]:
        return AbstractValue(x.shape[:-2] + (length,), x.dtype)
    return AbstractValue(x.shape[:-2] + (k[1] - k[0] + 1, length), x.dtype)


def _diag_part_vjp(g, x, out, k=(0, 0), padding_value=0, align="RIGHT_LEFT"):
    m, n = tuple(x.shape)[-2:]
    return execute(MATRIX_DIAG, (g,), {"k": k, "num_rows": m, "num_cols": n, "align": align})


def _np_diag_part(x, k=(0, 0), padding_value=0, align="RIGHT_LEFT"):
    m, n = x.shape[-2:]
    diags = []
    max_len = max(0, min(m + min(k[1], 0), n - max(k[0], 0)))
    for kk in range(k[1], k[0] - 1, -1):
        dg = np.diagonal(x, offset=kk, axis1=-2, axis2=-1)
        pad = max_len - dg.shape[-1]
        left = (kk >= 0 and align.startswith("LEFT")) or (kk <= 0 and align.endswith("LEFT"))
        width = [(0, 0)] * (dg.ndim - 1) + [(0, pad) if left else (pad, 0)]
        diags.append(np.pad(dg, width, constant_values=padding_value))
    if k[0] == k[1]:
        return diags[0]
    return np.stack(diags, axis=-2)


def _diag_samples(rng, dtype):
    def r(*shape):
        return rng.uniform(-3, 3, size=shape).astype(dtype.np_dtype)

    out = []
    for shape in ((3, 3), (2, 3, 4), (4, 2), (0, 2, 2), (0, 0)):
        out.append(((r(*shape),), {}))
    for k in ((1, 1), (-1, -1), (-1, 1), (0, 2), (-2, 0)):
        for align in ("RIGHT_LEFT", "LEFT_RIGHT"):
            out.append(((r(2, 3, 4),), {"k": k, "align": align, "padding_value": 9}))
    return out


MATRIX_DIAG_PART = registry.primitive(
    "MatrixDiagPartV3", _diag_part_kernel, dtypes=ALL, shape_fn=_diag_part_shape,
    vjp=_diag_part_vjp, saves=(0,), reference=_np_diag_part, samples=_diag_samples,
    bad_samples=lambda rng: [
        ((rng.standard_normal((3,)),), {}, errors.InvalidArgumentError),
        ((rng.standard_normal((3, 3)),), {"k": (1, 0)}, errors.InvalidArgumentError),
        ((rng.standard_normal((3, 3)),), {"k": (0, 5)}, errors.InvalidArgumentError)],
    family="linalg")


def _diag_out_dims(max_len, k0, k1, num_rows, num_cols):
    min_rows = max_len - min(k1, 0)
    min_cols = max_len + max(k0, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    elif num_rows == -1:
        num_rows = min_rows
    elif num_cols == -1:
        num_cols = min_cols
    return num_rows, num_cols, min_rows, min_cols


def _diag_kernel(xp):
    def kernel(diagonal, k=(0, 0), num_rows=-1, num_cols=-1, padding_value=0,
               align="RIGHT_LEFT"):
        single = k[0] == k[1]
        need = 1 if single else 2
        if diagonal.ndim < need:
            raise errors.InvalidArgumentError(
                None, None, "matrix_diag: diagonal must have rank >= %d for k=%s, got shape %s."
                % (need, list(k), _shape_text(diagonal.shape)))
        if k[0] > k[1]:
            raise errors.InvalidArgumentError(
                None, None, "matrix_diag: k[0]=%d must not exceed k[1]=%d." % k)
        if not single and diagonal.shape[-2] != k[1] - k[0] + 1:
            raise errors.InvalidArgumentError(
                None, None, "matrix_diag: diagonal has %d rows but k=%s asks for %d diagonals."
                % (diagonal.shape[-2], list(k), k[1] - k[0] + 1))
        max_len = diagonal.shape[-1]
        rows, cols, min_rows, min_cols = _diag_out_dims(max_len, k[0], k[1], num_rows, num_cols)
        longest = max(_diag_len(rows, cols, kk) for kk in range(k[0], k[1] + 1))
        if rows < min_rows and cols < min_cols or longest != max_len:
            raise errors.InvalidArgumentError(
                None, None, "matrix_diag: a %dx%d matrix cannot hold diagonals k=%s of length "
                "%d. Leave num_rows/num_cols at -1 to infer them." % (
                    rows, cols, list(k), max_len))
        batch = diagonal.shape[:-1] if single else diagonal.shape[:-2]
        out = xp.full(batch + (rows, cols), padding_value, dtype=diagonal.dtype)
        di, pos, r, c, _ = _diag_indices(rows, cols, k[0], k[1], align)
        if single:
            out[..., xp.asarray(r), xp.asarray(c)] = diagonal[..., xp.asarray(pos)]
        else:
            out[..., xp.asarray(r), xp.asarray(c)] = diagonal[..., xp.asarray(di),
                                                              xp.asarray(pos)]
        return out
    return kernel


def _diag_shape(diagonal, k=(0, 0), num_rows=-1, num_cols=-1, padding_value=0,
                align="RIGHT_LEFT"):
    if diagonal.shape is None:
        return AbstractValue(None, diagonal.dtype)
    single = k[0] == k[1]
    batch = diagonal.shape[:-1] if single else diagonal.shape[:-2]
    max_len = diagonal.shape[-1]
    if max_len is None:
        rows = num_rows if num_rows != -1 else None
        cols = num_cols if num_cols != -1 else None
    else:
        rows, cols, _, _ = _diag_out_dims(max_len, k[0], k[1], num_rows, num_cols)
    return AbstractValue(tuple(batch) + (rows, cols), diagonal.dtype)


def _np_diag(diagonal, k=(0, 0), num_rows=-1, num_cols=-1, padding_value=0,
             align="RIGHT_LEFT"):
    single = k[0] == k[1]
    rows, cols, _, _ = _diag_out_dims(diagonal.shape[-1], k[0], k[1], num_rows, num_cols)
    batch = diagonal.shape[:-1] if single else diagonal.shape[:-2]
    out = np.full(batch + (rows, cols), padding_value, dtype=diagonal.dtype)
    max_len = diagonal.shape[-1]
    for index, kk in enumerate(range(k[1], k[0] - 1, -1)):
        dg = diagonal if single else diagonal[..., index, :]
        length = _diag_len(rows, cols, kk)
        if length <= 0:
            continue
        left = (kk >= 0 and align.startswith("LEFT")) or (kk <= 0 and align.endswith("LEFT"))
        start = 0 if left else max_len - length
        for j in range(length):
            out[..., j - min(kk, 0), j + max(kk, 0)] = dg[..., start + j]
    return out


def _diag_gen_samples(rng, dtype):
    def r(*shape):
        return rng.uniform(-3, 3, size=shape).astype(dtype.np_dtype)

    return [((r(3),), {}), ((r(2, 3),), {}), ((r(0),), {}), ((r(2, 0),), {}),
            ((r(3),), {"k": (1, 1)}), ((r(3),), {"k": (-2, -2), "padding_value": 7}),
            ((r(2),), {"k": (0, 0), "num_rows": 3, "num_cols": 2}),
            ((r(2, 3, 3),), {"k": (-1, 1), "align": "LEFT_RIGHT"}),
            ((r(3, 3),), {"k": (0, 2)}), ((r(2, 2),), {"k": (-1, 0), "num_rows": 3})]


MATRIX_DIAG = registry.primitive(
    "MatrixDiagV3", _diag_kernel, dtypes=ALL, shape_fn=_diag_shape,
    vjp=lambda g, x, out, k=(0, 0), num_rows=-1, num_cols=-1, padding_value=0,
    align="RIGHT_LEFT": execute(MATRIX_DIAG_PART, (g,), {"k": k, "align": align}),
    saves=(), reference=_np_diag, samples=_diag_gen_samples,
    bad_samples=lambda rng: [
        ((rng.standard_normal(()),), {}, errors.InvalidArgumentError),
        ((rng.standard_normal((3, 3)),), {"k": (-1, 2)}, errors.InvalidArgumentError),
        ((rng.standard_normal((3,)),), {"num_rows": 2, "num_cols": 2},
         errors.InvalidArgumentError)],
    family="linalg")


def _set_diag_kernel(xp):
    def kernel(x, diagonal, k=(0, 0), align="RIGHT_LEFT"):
        if x.ndim < 2:
            raise _rank_error("matrix_set_diag", "the input", x.shape)
        m, n = x.shape[-2:]
        _check_k(k, m, n, "matrix_set_diag")
        di, pos, rows, cols, max_len = _diag_indices(m, n, k[0], k[1], align)
        single = k[0] == k[1]
        want = x.shape[:-2] + ((max_len,) if single else (k[1] - k[0] + 1, max_len))
        if diagonal.shape != want:
            raise errors.InvalidArgumentError(
                None, None, "matrix_set_diag: diagonal must have shape %s for an input of "
                "shape %s and k=%s, got %s." % (_shape_text(want), _shape_text(x.shape),
                                                list(k), _shape_text(diagonal.shape)))
        out = x.copy()
        if single:
            out[..., xp.asarray(rows), xp.asarray(cols)] = diagonal[..., xp.asarray(pos)]
        else:
            out[..., xp.asarray(rows), xp.asarray(cols)] = diagonal[..., xp.asarray(di),
                                                                    xp.asarray(pos)]
        return out
    return kernel


def _set_diag_vjp(g, x, diagonal, out, k=(0, 0), align="RIGHT_LEFT"):
    g_diag = execute(MATRIX_DIAG_PART, (g,), {"k": k, "align": align})
    g_x = execute(MATRIX_SET_DIAG, (g, zeros_like_t(g_diag)), {"k": k, "align": align})
    return g_x, g_diag


def _np_set_diag(x, diagonal, k=(0, 0), align="RIGHT_LEFT"):
    out = x.copy()
    m, n = x.shape[-2:]
    max_len = max(0, min(m + min(k[1], 0), n - max(k[0], 0)))
    for index, kk in enumerate(range(k[1], k[0] - 1, -1)):
        dg = diagonal if k[0] == k[1] else diagonal[..., index, :]
        length = _diag_len(m, n, kk)
        left = (kk >= 0 and align.startswith("LEFT")) or (kk <= 0 and align.endswith("LEFT"))
        start = 0 if left else max_len - length
        for j in range(max(length, 0)):
            out[..., j - min(kk, 0), j + max(kk, 0)] = dg[..., start + j]
    return out


def _set_diag_samples(rng, dtype):
    def r(*shape):
        return rng.uniform(-3, 3, size=shape).astype(dtype.np_dtype)

    return [((r(3, 3), r(3)), {}), ((r(2, 3, 4), r(2, 3)), {}), ((r(4, 2), r(2)), {}),
            ((r(0, 2, 2), r(0, 2)), {}), ((r(3, 4), r(3)), {"k": (1, 1)}),
            ((r(2, 3, 4), r(2, 3, 3)), {"k": (-1, 1)}),
            ((r(3, 4), r(2, 3)), {"k": (0, 1), "align": "LEFT_RIGHT"})]


def _set_diag_shape(x, diagonal, k=(0, 0), align="RIGHT_LEFT"):
    return AbstractValue(x.shape, x.dtype)


MATRIX_SET_DIAG = registry.primitive(
    "MatrixSetDiagV3", _set_diag_kernel, dtypes=ALL, shape_fn=_set_diag_shape,
    vjp=_set_diag_vjp, saves=(), reference=_np_set_diag, samples=_set_diag_samples,
    bad_samples=lambda rng: [
        ((rng.standard_normal((3, 3)), rng.standard_normal((2,))), {},
         errors.InvalidArgumentError),
        ((rng.standard_normal((3,)), rng.standard_normal((3,))), {},
         errors.InvalidArgumentError)],
    family="linalg")


def _static_k(k, op):
    if hasattr(k, "numpy"):
        k = np.asarray(k.numpy()).tolist()
    if isinstance(k, (int, np.integer)):
        return (int(k), int(k))
    try:
        k = [int(v) for v in k]
    except (TypeError, ValueError):
        raise errors.InvalidArgumentError(
            None, op, "%s: k must be an int or a pair of ints, got %r." % (op, k)) from None
    if len(k) == 1:
        return (k[0], k[0])
    if len(k) != 2:
        raise errors.InvalidArgumentError(
            None, op, "%s: k must be an int or a pair [low, high], got %r." % (op, k))
    return (k[0], k[1])


def _check_align(align, op):
    if align not in _ALIGNS:
        raise errors.InvalidArgumentError(
            None, op, "%s: align must be one of %s, got %r." % (op, ", ".join(_ALIGNS), align))
    return align


def _diag_attrs(k, align, op):
    attrs = {}
    k = _static_k(k, op)
    if k != (0, 0):
        attrs["k"] = k
    if align != "RIGHT_LEFT":
        attrs["align"] = _check_align(align, op)
    return attrs


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):  # noqa: A002
    """Returns the k-th diagonal(s) of a (batch of) matrices.

    Args:
        input: A Tensor of rank >= 2, ``[..., M, N]``.
        name: Unused.
        k: The diagonal offset (0 main, > 0 above, < 0 below), or a pair ``[low, high]``
            for a band of diagonals, returned as ``[..., high - low + 1, max_len]``
            (diagonal ``high`` first).
        padding_value: Fills short diagonals of a band.
        align: Where short diagonals of a band sit: ``"RIGHT_LEFT"`` (default: diagonals
            above the main one right-aligned, those below left-aligned), ``"LEFT_RIGHT"``,
            ``"LEFT_LEFT"`` or ``"RIGHT_RIGHT"``.

    Returns:
        A Tensor of shape ``[..., max_len]`` (one diagonal) or ``[..., num_diags, max_len]``.

    Raises:
        InvalidArgumentError: If ``input`` has rank < 2 or ``k`` is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.diag_part([[1, 2], [3, 4]]).numpy().tolist()
        [1, 4]
    """
    attrs = _diag_attrs(k, align, "diag_part")
    if padding_value != 0:
        attrs["padding_value"] = padding_value
    return execute(MATRIX_DIAG_PART, (input,), attrs)


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align="RIGHT_LEFT"):
    """Builds (a batch of) matrices with the given diagonal(s), padding elsewhere.

    Args:
        diagonal: A Tensor ``[..., N]`` (one diagonal) or ``[..., num_diags, N]`` for a
            band ``k = [low, high]``.
        name: Unused.
        k: Diagonal offset or a ``[low, high]`` pair (see :func:`diag_part`).
        num_rows: Rows of the output (-1: the smallest that fits).
        num_cols: Columns of the output (-1: the smallest that fits; square if both -1).
        padding_value: The value off the given diagonals.
        align: Alignment of short diagonals in a band (see :func:`diag_part`).

    Returns:
        A Tensor of shape ``[..., num_rows, num_cols]``.

    Raises:
        InvalidArgumentError: If the sizes do not fit together.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.diag([1, 2]).numpy().tolist()
        [[1, 0], [0, 2]]
    """
    attrs = _diag_attrs(k, align, "diag")
    if num_rows != -1:
        attrs["num_rows"] = int(num_rows)
    if num_cols != -1:
        attrs["num_cols"] = int(num_cols)
    if padding_value != 0:
        attrs["padding_value"] = padding_value
    return execute(MATRIX_DIAG, (diagonal,), attrs)


def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002
    """Returns ``input`` with its k-th diagonal(s) replaced by ``diagonal``.

    Args:
        input: A Tensor ``[..., M, N]``.
        diagonal: ``[..., max_len]`` or ``[..., num_diags, max_len]`` (see :func:`diag_part`).
        name: Unused.
        k: Diagonal offset or a ``[low, high]`` pair.
        align: Alignment of short diagonals in a band.

    Returns:
        A Tensor of the shape of ``input``.

    Raises:
        InvalidArgumentError: If ``diagonal`` has the wrong shape or ``k`` is out of range.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.set_diag([[1, 2], [3, 4]], [0, 0]).numpy().tolist()
        [[0, 2], [3, 0]]
    """
    return execute(MATRIX_SET_DIAG, (input, diagonal), _diag_attrs(k, align, "set_diag"))


def trace(x, name=None):
    """The sum of the main diagonal of each matrix in a batch.

    Args:
        x: A Tensor ``[..., M, N]``.
        name: Unused.

    Returns:
        A Tensor ``[...]``.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.trace([[1.0, 2.0], [3.0, 4.0]]).numpy()
        np.float32(5.0)
    """
    return execute(EINSUM, (execute(MATRIX_DIAG_PART, (x,)),), {"equation": "...i->..."})


# ----------------------------------------------------------------------------------------
# Band part, cross product
# ----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _band_mask(m, n, lower, upper):
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    mask = np.ones((m, n), bool)
    if lower >= 0:
        mask &= (i - j) <= lower
    if upper >= 0:
        mask &= (j - i) <= upper
    return mask


def _band_kernel(xp):
    def kernel(x, num_lower=-1, num_upper=-1):
        if x.ndim < 2:
            raise _rank_error("matrix_band_part", "the input", x.shape)
        m, n = x.shape[-2:]
        if num_lower > m or num_upper > n:
            raise errors.InvalidArgumentError(
                None, None, "band_part: num_lower (%d) must be negative or at most the number "
                "of rows (%d), and num_upper (%d) negative or at most the number of columns "
                "(%d)." % (num_lower, m, num_upper, n))
        mask = xp.asarray(_band_mask(m, n, num_lower, num_upper))
        return xp.where(mask, x, xp.zeros((), dtype=x.dtype))
    return kernel


def _np_band(x, num_lower=-1, num_upper=-1):
    m, n = x.shape[-2:]
    out = np.zeros_like(x)
    for i in range(m):
        for j in range(n):
            if (num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or j - i <= num_upper):
                out[..., i, j] = x[..., i, j]
    return out


MATRIX_BAND_PART = registry.primitive(
    "MatrixBandPart", _band_kernel, dtypes=ALL,
    shape_fn=lambda x, num_lower=-1, num_upper=-1: AbstractValue(x.shape, x.dtype),
    vjp=lambda g, x, out, num_lower=-1, num_upper=-1: execute(
        MATRIX_BAND_PART, (g,), {"num_lower": num_lower, "num_upper": num_upper}),
    saves=(), reference=_np_band,
    samples=lambda rng, dtype: [
        ((rng.uniform(-3, 3, size=s).astype(dtype.np_dtype),), {"num_lower": lo, "num_upper": up})
        for s in ((3, 4), (2, 4, 3), (0, 2, 2)) for lo, up in ((-1, 0), (0, -1), (1, 1), (0, 0),
                                                             (-1, -1), (2, 0))],
    bad_samples=lambda rng: [
        ((rng.standard_normal((3,)),), {}, errors.InvalidArgumentError),
        ((rng.standard_normal((3, 3)),), {"num_lower": 5}, errors.InvalidArgumentError)],
    family="linalg")


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """Keeps a band of each matrix (around the diagonal) and zeroes the rest.

    ``out[..., i, j] = input[..., i, j]`` where ``(num_lower < 0 or i - j <= num_lower) and
    (num_upper < 0 or j - i <= num_upper)``, else 0. ``band_part(x, -1, 0)`` is the lower
    triangle, ``band_part(x, 0, 0)`` the diagonal.

    Args:
        input: A Tensor ``[..., M, N]``.
        num_lower: Number of subdiagonals to keep (negative: all).
        num_upper: Number of superdiagonals to keep (negative: all).
        name: Unused.

    Returns:
        A Tensor of the shape of ``input``.

    Raises:
        InvalidArgumentError: If ``input`` has rank < 2 or a count exceeds the matrix size.

    Example:
        >>> import eagerflow as ef
        >>> ef.linalg.band_part([[1, 2], [3, 4]], -1, 0).numpy().tolist()
        [[1, 0], [3, 4]]
    """
    attrs = {"num_lower": _static_int(num_lower, "num_lower"),
             "num_upper": _static_int(num_upper, "num_upper")}
    return execute(MATRIX_BAND_PART, (input,), attrs)


def _static_int(v, what):
    if hasattr(v, "numpy"):
        v = v.numpy()
    try:
        return int(v)
    except (TypeError, ValueError):
        raise errors.InvalidArgumentError(
            None, "band_part", "band_part: %s must be an int, got %r." % (what, v)) from None


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


# ----------------------------------------------------------------------------------------
# norm (a composite)
# ----------------------------------------------------------------------------------------

def _norm_error(message):
    return errors.InvalidArgumentError(None, "norm", "norm: " + message)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """Vector and matrix norms.

    Vector norms (``axis`` None or an int; None flattens the whole tensor): ``'euclidean'``
    or 2 (sqrt of the sum of squared magnitudes), 1, ``np.inf`` and any real ``p > 0``
    (``sum(|x|^p)^(1/p)``). Matrix norms (``axis`` a pair of axes): ``'fro'`` /
    ``'euclidean'`` (Frobenius), 1 (max column sum), ``np.inf`` (max row sum) and 2 (the
    largest singular value).

    As in TF, the Euclidean norm of a complex tensor keeps the complex dtype (with zero
    imaginary part); the other norms are real.

    Args:
        tensor: A floating or complex Tensor.
        ord: The order of the norm (see above).
        axis: None, an int, or a pair of ints.
        keepdims: If True, reduced axes are kept with size 1.
        name: Unused.

    Returns:
        A Tensor.

    Raises:
        InvalidArgumentError: For an unsupported ``ord`` or a bad ``axis``.

    Example:
        >>> import eagerflow as ef
        >>> ef.norm([3.0, 4.0]).numpy()
        np.float32(5.0)
    """
    from eagerflow.ops import math_ops, reduction_ops

    tensor = _as_tensors((tensor,))[0]
    rank = _rank_of(tensor)
    keepdims = bool(keepdims)
    is_matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if is_matrix:
        axis = tuple(_static_int(a, "axis") for a in axis)
        if rank is not None:
            for a in axis:
                if not -rank <= a < rank:
                    raise _norm_error("axis %s is out of range for a tensor of rank %d."
                                      % (list(axis), rank))
            axis = tuple(a % rank for a in axis)
        if axis[0] == axis[1]:
            raise _norm_error("the two matrix axes must differ, got %s." % (list(axis),))
        if ord not in ("euclidean", "fro", 1, 2, np.inf):
            raise _norm_error("matrix norms support ord 'fro', 'euclidean', 1, 2, np.inf; got "
                              "%r." % (ord,))
    else:
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise _norm_error("axis must be None, an int, or a pair of ints, got %r."
                                  % (axis,))
            axis = axis[0]
        if axis is not None:
            axis = _static_int(axis, "axis")
            if rank is not None and not -rank <= axis < max(rank, 1):
                raise _norm_error("axis %d is out of range for a tensor of rank %d."
                                  % (axis, rank))
        if isinstance(ord, str):
            if ord != "euclidean":
                raise _norm_error("vector norms support 'euclidean', 1, 2, np.inf or a real "
                                  "p > 0; got %r (use a pair of axes for 'fro')." % (ord,))
        elif not (isinstance(ord, (int, float, np.integer, np.floating)) and ord > 0):
            raise _norm_error("ord must be 'euclidean', np.inf or a real number > 0, got %r."
                              % (ord,))
    if is_matrix and ord == 2:
        return _matrix_2_norm(tensor, axis, rank, keepdims)
    if ord in ("euclidean", "fro") or (ord == 2 and not is_matrix):
        squares = tensor * conj(tensor) if tensor.dtype.is_complex else tensor * tensor
        return math_ops.sqrt(reduction_ops.reduce_sum(squares, axis=axis, keepdims=keepdims))
    mags = math_ops.abs(tensor)
    if is_matrix:
        inner, outer = (axis[0], axis[1]) if ord == 1 else (axis[1], axis[0])
        sums = reduction_ops.reduce_sum(mags, axis=inner, keepdims=True)
        return reduction_ops.reduce_max(sums, axis=axis, keepdims=keepdims)
    if ord == 1:
        return reduction_ops.reduce_sum(mags, axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return reduction_ops.reduce_max(mags, axis=axis, keepdims=keepdims)
    p = float(ord)
    powered = reduction_ops.reduce_sum(mags ** p, axis=axis, keepdims=keepdims)
    return powered ** (1.0 / p)


def _matrix_2_norm(tensor, axis, rank, keepdims):
    from eagerflow.ops import array_ops, linalg_decomp, reduction_ops

    if rank is None:
        raise _norm_error("ord=2 matrix norms need a tensor of known rank.")
    rest = [k for k in range(rank) if k not in axis]
    letters = _LETTERS[:rank]
    perm = "".join(letters[k] for k in rest) + letters[axis[0]] + letters[axis[1]]
    moved = tensor if perm == letters else execute(
        EINSUM, (tensor,), {"equation": letters + "->" + perm})
    s = linalg_decomp.svd(moved, compute_uv=False)
    out = reduction_ops.reduce_max(s, axis=-1)
    if keepdims:
        shape = [1 if k in axis else tensor.shape[k] for k in range(rank)]
        shape = [-1 if v is None else v for v in shape]
        out = array_ops.reshape(out, shape)
    return out
