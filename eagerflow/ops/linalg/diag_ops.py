"""Diagonals and bands: diag_part, diag, set_diag and band_part.

``MatrixDiagPartV3``, ``MatrixDiagV3`` and ``MatrixSetDiagV3`` take TF's ``k`` (one
diagonal or a range), ``align`` and padding attrs; each is the other's gradient. Band part
keeps the entries within ``num_lower`` below and ``num_upper`` above the diagonal.
"""

from __future__ import annotations

import functools

import numpy as np

from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import zeros_like_t
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL
from eagerflow.ops.linalg.matmul_ops import _rank_error, _shape_text
from eagerflow.ops.registry import AbstractValue

__all__ = ["diag", "diag_part", "set_diag", "band_part"]

EXPORTS = {
    "linalg": ["diag", "diag_part", "set_diag", "band_part"],
}


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


# ----------------------------------------------------------------------------------------
# Band part
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
