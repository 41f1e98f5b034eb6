"""Einstein summation and its composites: einsum, tensordot, matvec, trace and norm.

``Einsum`` runs numpy's (or cupy's) einsum, with a fast path that turns two-operand
contractions into a batched matmul. Its gradient with respect to one operand is another
einsum of the output cotangent with the other operands (plus a diagonal where an index is
repeated). tensordot, matvec and trace are einsums; norm computes vector and matrix norms
from reductions (and from the singular values for the matrix 2-norm).
"""

from __future__ import annotations

import functools
import math
import string

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import ONES_LIKE_fn, conj
from eagerflow.ops.linalg.diag_ops import MATRIX_DIAG, MATRIX_DIAG_PART, _static_int
from eagerflow.ops.dispatch import execute
from eagerflow.ops.linalg.matmul_ops import _MATMUL_DTYPES, _rank_error, _shape_text
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["einsum", "tensordot", "matvec", "trace", "norm"]

EXPORTS = {
    "": ["einsum", "tensordot", "norm"],
    "linalg": ["einsum", "tensordot", "matvec", "trace", "norm"],
}


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
# Composites built on einsum: tensordot, matvec, trace
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
    from eagerflow.ops.math import complex_math, unary_math
    from eagerflow.ops.reduce import reductions

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
        return unary_math.sqrt(reductions.reduce_sum(squares, axis=axis, keepdims=keepdims))
    mags = complex_math.abs(tensor)
    if is_matrix:
        inner, outer = (axis[0], axis[1]) if ord == 1 else (axis[1], axis[0])
        sums = reductions.reduce_sum(mags, axis=inner, keepdims=True)
        return reductions.reduce_max(sums, axis=axis, keepdims=keepdims)
    if ord == 1:
        return reductions.reduce_sum(mags, axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return reductions.reduce_max(mags, axis=axis, keepdims=keepdims)
    p = float(ord)
    powered = reductions.reduce_sum(mags ** p, axis=axis, keepdims=keepdims)
    return powered ** (1.0 / p)


def _matrix_2_norm(tensor, axis, rank, keepdims):
    # The factorizations' gradients are einsums (through this package's helpers).
    from eagerflow.ops.linalg import linalg_factorizations
    from eagerflow.ops.reduce import reductions
    from eagerflow.ops.array import reshape_ops

    if rank is None:
        raise _norm_error("ord=2 matrix norms need a tensor of known rank.")
    rest = [k for k in range(rank) if k not in axis]
    letters = _LETTERS[:rank]
    perm = "".join(letters[k] for k in rest) + letters[axis[0]] + letters[axis[1]]
    moved = tensor if perm == letters else execute(
        EINSUM, (tensor,), {"equation": letters + "->" + perm})
    s = linalg_factorizations.svd(moved, compute_uv=False)
    out = reductions.reduce_max(s, axis=-1)
    if keepdims:
        shape = [1 if k in axis else tensor.shape[k] for k in range(rank)]
        shape = [-1 if v is None else v for v in shape]
        out = reshape_ops.reshape(out, shape)
    return out
