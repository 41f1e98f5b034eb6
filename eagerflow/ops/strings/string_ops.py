"""String ops (``tf.strings``): element-wise transforms, joins, parsing and formatting.

A string tensor's value is a numpy object array of ``bytes`` that lives in host memory, as
in TF. Every op here is a registry primitive, so it traces into ``@function`` graphs and
serializes like any other. Ops that split strings into pieces are in
``string_split_ops`` (they return RaggedTensors).

Example:
    >>> import eagerflow as ef
    >>> ef.strings.upper(ef.strings.join(["ab", "cd"], separator="-")).numpy()
    b'AB-CD'
"""

from __future__ import annotations

import re

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.strings import structural  # noqa: F401 - strings in the structural ops
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL, broadcast_shapes, string_values
from eagerflow.ops.strings.fingerprint import fingerprint64
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = [
    "join", "reduce_join", "length", "lower", "upper", "strip", "substr", "regex_full_match",
    "regex_replace", "to_number", "string_to_number", "as_string", "format",
    "to_hash_bucket_fast",
]

# Loaded on first use (eagerflow.as_string, eagerflow.strings): not by ``import eagerflow``.
LAZY = True

EXPORTS = {
    "": ["as_string"],
    "strings": ["join", "reduce_join", "length", "lower", "upper", "strip", "substr",
                "regex_full_match", "regex_replace", "to_number", "as_string", "format",
                "to_hash_bucket_fast"],
}

STRING = (d.string,)
_SWEEP = (d.string,)


def _values(x):
    """The input of a per-string op: a RaggedTensor passes through (the dispatcher runs the
    op on its flat values), anything else becomes a Tensor."""
    if x.__class__ is not Tensor and getattr(x, "_is_ragged", False):
        return x
    return convert_to_tensor(x)


def _as_bytes(value, what):
    """A Python str/bytes attr (or a scalar string tensor) as bytes."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    if hasattr(value, "numpy") and getattr(value, "dtype", None) is d.string:
        out = value.numpy()
        if isinstance(out, bytes):
            return out
    raise errors.InvalidArgumentError(
        None, None, "%s must be a Python str or bytes (or a scalar string tensor), got %r."
        % (what, value))


def _map(fn, x, otype=object):
    """Applies ``fn`` to every element of the object array ``x``."""
    out = np.empty(x.shape, dtype=otype)
    flat = out.reshape(-1)
    for i, v in enumerate(x.reshape(-1)):
        flat[i] = fn(v)
    return out


def _same(x, **attrs):
    return AbstractValue(x.shape, d.string)


def _unary_samples(rng, dtype):
    return [((string_values(rng, s),), {}) for s in [(), (0,), (5,), (2, 3)]]


def _string_unary(name, fn, reference, out_dtype=d.string, samples=None, attrs_fn=None):
    otype = object if out_dtype is d.string else out_dtype.np_dtype
    return registry.primitive(
        name, lambda xp: (lambda x, **attrs: _map(lambda v: fn(v, **attrs), x, otype)),
        dtypes=STRING, reference=reference, samples=samples or _unary_samples,
        sweep_dtypes=_SWEEP, family="strings",
        shape_fn=lambda x, **attrs: AbstractValue(x.shape, out_dtype))


def _via_char(fn):
    """A numpy.char reference: object bytes -> fixed-width S -> fn -> object bytes."""
    def reference(x, **attrs):
        x = np.asarray(x)
        if x.size == 0:
            return np.asarray(x, dtype=object)
        out = fn(x.astype("S"), **attrs)
        return _map(bytes, np.asarray(out), object) if out.dtype.kind == "S" else out
    return reference


# -- case, whitespace, length -----------------------------------------------------------------
LOWER = _string_unary("StringLower", lambda v: v.lower(), _via_char(np.char.lower))
UPPER = _string_unary("StringUpper", lambda v: v.upper(), _via_char(np.char.upper))
STRIP = _string_unary("StringStrip", lambda v: v.strip(b" \t\n\v\f\r"),
                      _via_char(lambda x: np.char.strip(x, b" \t\n\v\f\r")))


def _length(v, *, unit):
    if unit == "BYTE":
        return len(v)
    return len(v.decode("utf-8"))


def _length_reference(x, *, unit):
    x = np.asarray(x)
    if unit == "BYTE":
        return np.char.str_len(x.astype("S")).astype(np.int32) if x.size else \
            np.zeros(x.shape, np.int32)
    return np.vectorize(lambda v: len(v.decode("utf-8")), otypes=[np.int32])(x) if x.size \
        else np.zeros(x.shape, np.int32)


def _utf8_samples(rng, dtype):
    texts = np.array([b"", b"caf\xc3\xa9", b"\xe2\x82\xac 5", b"ab"], dtype=object)
    return [((string_values(rng, (2, 3)),), {"unit": "BYTE"}),
            ((string_values(rng, ()),), {"unit": "BYTE"}),
            ((texts,), {"unit": "UTF8_CHAR"})]


LENGTH = registry.primitive(
    "StringLength", lambda xp: (lambda x, *, unit: _map(lambda v: _length(v, unit=unit), x,
                                                        np.int32)),
    dtypes=STRING, reference=_length_reference, samples=_utf8_samples, sweep_dtypes=_SWEEP,
    family="strings", shape_fn=lambda x, **attrs: AbstractValue(x.shape, d.int32))


# -- join ------------------------------------------------------------------------------------
def _join_kernel(xp):
    def kernel(*xs, separator):
        shapes = [np.shape(x) for x in xs]
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, "inputs must be scalars or have one broadcastable shape, got %s"
                % shapes) from None
        parts = [np.broadcast_to(x, shape).reshape(-1) for x in xs]
        out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=object)
        for i in range(out.size):
            out[i] = separator.join(p[i] for p in parts)
        return out.reshape(shape)
    return kernel


def _join_reference(*xs, separator):
    out = np.asarray(xs[0], dtype=object)
    for x in xs[1:]:
        out = out + separator + np.asarray(x, dtype=object)
    return np.asarray(out, dtype=object)


def _join_samples(rng, dtype):
    return [(([string_values(rng, (3,)), string_values(rng, (3,))],), {"separator": b""}),
            (([string_values(rng, (2, 3)), string_values(rng, ()), string_values(rng, (3,))],),
             {"separator": b", "}),
            (([string_values(rng, ())],), {"separator": b"-"})]


def _join_shape(*xs, separator):
    return AbstractValue(broadcast_shapes(*[x.shape for x in xs]), d.string)


STRING_JOIN = registry.primitive(
    "StringJoin", _join_kernel, dtypes=STRING, variadic=True, reference=_join_reference,
    samples=_join_samples, sweep_dtypes=_SWEEP, family="strings", shape_fn=_join_shape,
    bad_samples=lambda rng: [(([string_values(rng, (2,)), string_values(rng, (3,))],),
                              {"separator": b""}, errors.InvalidArgumentError)])


def join(inputs, separator="", name=None):
    """Joins the strings of a list of tensors element-wise (``tf.strings.join``).

    Args:
        inputs: A list of string tensors of one broadcastable shape (scalars broadcast).
        separator: Placed between the joined strings.
        name: Unused.

    Returns:
        A string Tensor of the broadcast shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.join([["a", "b"], "!"]).numpy().tolist()
        [b'a!', b'b!']
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise errors.InvalidArgumentError(
            None, "StringJoin", "strings.join needs a non-empty list of string tensors.")
    return execute(STRING_JOIN, tuple(convert_to_tensor(x) for x in inputs),
                   {"separator": _as_bytes(separator, "separator")})


def _reduce_join_kernel(xp):
    def kernel(x, *, axis, keepdims, separator):
        if axis is None:
            axes = tuple(range(x.ndim))
        else:
            axes = tuple(sorted(a % x.ndim for a in axis)) if x.ndim else ()
        kept = [i for i in range(x.ndim) if i not in axes]
        moved = np.transpose(x, kept + list(axes))
        out_shape = moved.shape[:len(kept)]
        flat = moved.reshape((int(np.prod(out_shape, dtype=np.int64)), -1)) if moved.size \
            else np.empty((int(np.prod(out_shape, dtype=np.int64)), 0), object)
        out = np.empty(flat.shape[0], dtype=object)
        for i in range(flat.shape[0]):
            out[i] = separator.join(flat[i])
        out = out.reshape(out_shape)
        if keepdims:
            out = out.reshape([1 if i in axes else s for i, s in enumerate(x.shape)])
        return out
    return kernel


def _reduce_join_reference(x, *, axis, keepdims, separator):
    x = np.asarray(x)
    axes = range(x.ndim) if axis is None else sorted((a % x.ndim for a in axis), reverse=True)
    out = x
    for a in sorted(axes, reverse=True):
        out = np.apply_along_axis(lambda row: np.array(separator.join(row), dtype=object), a,
                                  out) if out.shape[a] else \
            np.full(out.shape[:a] + out.shape[a + 1:], b"", dtype=object)
        if keepdims:
            out = np.expand_dims(out, a)
    return np.asarray(out, dtype=object)


def _reduce_join_shape(x, *, axis, keepdims, separator):
    if x.shape is None:
        return AbstractValue(None, d.string)
    axes = range(len(x.shape)) if axis is None else [a % len(x.shape) for a in axis]
    shape = [1 if i in axes else s for i, s in enumerate(x.shape)] if keepdims else \
        [s for i, s in enumerate(x.shape) if i not in axes]
    return AbstractValue(shape, d.string)


def _reduce_join_samples(rng, dtype):
    x = string_values(rng, (2, 3))
    return [((x,), {"axis": None, "keepdims": False, "separator": b""}),
            ((x,), {"axis": (1,), "keepdims": False, "separator": b" "}),
            ((x,), {"axis": (0,), "keepdims": True, "separator": b","}),
            ((string_values(rng, (2, 0)),), {"axis": (1,), "keepdims": False, "separator": b""})]


REDUCE_JOIN = registry.primitive(
    "ReduceJoin", _reduce_join_kernel, dtypes=STRING, reference=_reduce_join_reference,
    samples=_reduce_join_samples, sweep_dtypes=_SWEEP, family="strings",
    shape_fn=_reduce_join_shape)


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """Joins strings across dimensions (``tf.strings.reduce_join``).

    Args:
        inputs: A string tensor.
        axis: An int or list of ints, or None for all dimensions.
        keepdims: Keep reduced dimensions with size 1.
        separator: Placed between joined strings.
        name: Unused.

    Returns:
        A string Tensor.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.reduce_join([["a", "b"], ["c", "d"]], axis=1).numpy().tolist()
        [b'ab', b'cd']
    """
    x = convert_to_tensor(inputs)
    if axis is not None:
        axis = tuple(int(a) for a in np.atleast_1d(np.asarray(axis)).tolist())
        for a in axis:
            if not -max(x.ndim, 1) <= a < max(x.ndim, 1) or x.ndim == 0:
                raise errors.InvalidArgumentError(
                    None, "ReduceJoin", "reduce_join: axis %d is out of range for a tensor of "
                    "rank %d; use an axis in [-%d, %d)." % (a, x.ndim, x.ndim, x.ndim))
    return execute(REDUCE_JOIN, (x,), {"axis": axis, "keepdims": bool(keepdims),
                                       "separator": _as_bytes(separator, "separator")})


# -- substr ----------------------------------------------------------------------------------
def _substr_one(v, pos, length, unit):
    if unit == "UTF8_CHAR":
        chars = v.decode("utf-8")
        n = len(chars)
    else:
        chars = v
        n = len(v)
    start = pos + n if pos < 0 else pos
    if not 0 <= start <= n:
        raise errors.InvalidArgumentError(
            None, None, "position %d is out of range for a string of length %d" % (pos, n))
    piece = chars[start:start + max(length, 0)]
    return piece.encode("utf-8") if unit == "UTF8_CHAR" else piece


def _substr_kernel(xp):
    def kernel(x, pos, length, *, unit):
        shape = np.broadcast_shapes(x.shape, np.shape(pos), np.shape(length))
        xs = np.broadcast_to(x, shape).reshape(-1)
        ps = np.broadcast_to(pos, shape).reshape(-1)
        ls = np.broadcast_to(length, shape).reshape(-1)
        out = np.empty(xs.shape, dtype=object)
        for i in range(xs.size):
            out[i] = _substr_one(xs[i], int(ps[i]), int(ls[i]), unit)
        return out.reshape(shape)
    return kernel


def _substr_reference(x, pos, length, *, unit):
    x, pos, length = np.broadcast_arrays(np.asarray(x), np.asarray(pos), np.asarray(length))
    out = np.empty(x.shape, dtype=object)
    for idx in np.ndindex(x.shape):
        s = x[idx] if unit == "BYTE" else x[idx].decode("utf-8")
        p = int(pos[idx]) % max(len(s), 1) if pos[idx] < 0 else int(pos[idx])
        piece = s[p:p + int(length[idx])]
        out[idx] = piece if unit == "BYTE" else piece.encode("utf-8")
    return out


def _substr_samples(rng, dtype):
    words = np.array([b"hello", b"world", b"abc"], dtype=object)
    return [((words, np.int32(1), np.int32(3)), {"unit": "BYTE"}),
            ((words, np.array([0, 2, 1], np.int32), np.array([2, 2, 5], np.int32)),
             {"unit": "BYTE"}),
            ((words, np.int32(-2), np.int32(2)), {"unit": "BYTE"}),
            ((np.array([b"caf\xc3\xa9"], dtype=object), np.int32(3), np.int32(1)),
             {"unit": "UTF8_CHAR"})]


SUBSTR = registry.primitive(
    "Substr", _substr_kernel, dtypes=STRING, dtype_group=(0,), reference=_substr_reference,
    samples=_substr_samples, sweep_dtypes=_SWEEP, family="strings",
    shape_fn=lambda x, p, n, **a: AbstractValue(broadcast_shapes(x.shape, p.shape, n.shape),
                                                d.string),
    bad_samples=lambda rng: [((np.array([b"ab"], object), np.int32(5), np.int32(1)),
                              {"unit": "BYTE"}, errors.InvalidArgumentError)])


def substr(input, pos, len, unit="BYTE", name=None):  # noqa: A002 - TF's argument names
    """Substrings ``input[pos:pos+len]`` element-wise (``tf.strings.substr``).

    A negative ``pos`` counts from the end. A ``pos`` outside ``[-n, n]`` raises, as in TF;
    ``len`` past the end is clipped.

    Args:
        input: A string tensor.
        pos: Start positions (int, broadcast against ``input``).
        len: Lengths (int, broadcast against ``input``).
        unit: ``"BYTE"`` or ``"UTF8_CHAR"``.
        name: Unused.

    Returns:
        A string Tensor.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.substr(["hello", "world"], 1, 3).numpy().tolist()
        [b'ell', b'orl']
    """
    _check_unit(unit, "Substr")
    return execute(SUBSTR, (convert_to_tensor(input), convert_to_tensor(pos, dtype=d.int32)
                            if not hasattr(pos, "dtype") else pos,
                            convert_to_tensor(len, dtype=d.int32)
                            if not hasattr(len, "dtype") else len), {"unit": unit})


def _check_unit(unit, op):
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise errors.InvalidArgumentError(
            None, op, "%s: unit must be 'BYTE' or 'UTF8_CHAR', got %r." % (op, unit))


def length(input, unit="BYTE", name=None):  # noqa: A002
    """Lengths of strings, in bytes or UTF-8 characters (``tf.strings.length``).

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.length(["abc", "caf\\u00e9"], unit="UTF8_CHAR").numpy().tolist()
        [3, 4]
    """
    _check_unit(unit, "StringLength")
    return execute(LENGTH, (_values(input),), {"unit": unit})


def lower(input, encoding="", name=None):  # noqa: A002
    """Lowercases ASCII letters (``tf.strings.lower``; ``encoding="utf-8"`` for Unicode).

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.lower("HeLLo").numpy()
        b'hello'
    """
    x = _values(input)
    if encoding:
        return execute(UNICODE_CASE, (x,), {"upper": False})
    return execute(LOWER, (x,))


def upper(input, encoding="", name=None):  # noqa: A002
    """Uppercases ASCII letters (``tf.strings.upper``; ``encoding="utf-8"`` for Unicode).

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.upper("HeLLo").numpy()
        b'HELLO'
    """
    x = _values(input)
    if encoding:
        return execute(UNICODE_CASE, (x,), {"upper": True})
    return execute(UPPER, (x,))


def _unicode_case(v, *, upper):
    text = v.decode("utf-8", errors="replace")
    return (text.upper() if upper else text.lower()).encode("utf-8")


UNICODE_CASE = registry.primitive(
    "StringUnicodeCase",
    lambda xp: (lambda x, *, upper: _map(lambda v: _unicode_case(v, upper=upper), x)),
    dtypes=STRING, sweep_dtypes=_SWEEP, family="strings", shape_fn=_same,
    reference=lambda x, *, upper: np.vectorize(
        lambda v: (v.decode("utf-8", "replace").upper() if upper else
                   v.decode("utf-8", "replace").lower()).encode(), otypes=[object])(x)
    if np.size(x) else np.asarray(x, dtype=object),
    samples=lambda rng, dtype: [((np.array([b"Caf\xc3\x89", b"\xc3\x9cBER"], object),),
                                 {"upper": u}) for u in (False, True)])


def strip(input, name=None):  # noqa: A002
    """Strips leading and trailing ASCII whitespace (``tf.strings.strip``).

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.strip(["  a b\\n"]).numpy().tolist()
        [b'a b']
    """
    return execute(STRIP, (_values(input),))


# -- regular expressions -----------------------------------------------------------------------
def _compile(pattern):
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise errors.InvalidArgumentError(
            None, None, "invalid regular expression %r: %s" % (pattern, exc)) from None


def _full_match_kernel(xp):
    def kernel(x, *, pattern):
        rx = _compile(pattern)
        return _map(lambda v: rx.fullmatch(v) is not None, x, np.bool_)
    return kernel


def _regex_samples(rng, dtype):
    x = np.array([b"abc", b"a1", b"", b"123", b"hello world"], dtype=object)
    return [((x,), {"pattern": b"[a-z]+"}), ((x,), {"pattern": b"\\d*"}),
            ((x[:1].reshape(()),), {"pattern": b"a.c"})]


REGEX_FULL_MATCH = registry.primitive(
    "StaticRegexFullMatch", _full_match_kernel, dtypes=STRING, family="strings",
    reference=lambda x, *, pattern: np.vectorize(
        lambda v: bool(re.match(b"(?:" + pattern + b")\\Z", v)), otypes=[np.bool_])(x),
    samples=_regex_samples, sweep_dtypes=_SWEEP,
    shape_fn=lambda x, **a: AbstractValue(x.shape, d.bool),
    bad_samples=lambda rng: [((np.array([b"a"], object),), {"pattern": b"(["},
                              errors.InvalidArgumentError)])


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches ``pattern`` (``tf.strings.regex_full_match``).

    Patterns are Python regular expressions over bytes; for the RE2 syntax TF patterns use
    (classes, groups, repetition, anchors) they behave the same.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.regex_full_match(["ab1", "abc"], "[a-z]+").numpy().tolist()
        [False, True]
    """
    return execute(REGEX_FULL_MATCH, (_values(input),),
                   {"pattern": _as_bytes(pattern, "pattern")})


def _replace_kernel(xp):
    def kernel(x, *, pattern, rewrite, replace_global):
        rx = _compile(pattern)
        count = 0 if replace_global else 1
        return _map(lambda v: rx.sub(rewrite, v, count=count), x)
    return kernel


def _replace_samples(rng, dtype):
    x = np.array([b"hello world", b"aaa", b"", b"a1b22"], dtype=object)
    return [((x,), {"pattern": b"o", "rewrite": b"0", "replace_global": True}),
            ((x,), {"pattern": b"a", "rewrite": b"b", "replace_global": False}),
            ((x,), {"pattern": b"(\\d+)", "rewrite": b"<\\1>", "replace_global": True})]


REGEX_REPLACE = registry.primitive(
    "StaticRegexReplace", _replace_kernel, dtypes=STRING, family="strings",
    reference=lambda x, *, pattern, rewrite, replace_global: np.vectorize(
        lambda v: re.sub(pattern, rewrite, v, count=0 if replace_global else 1),
        otypes=[object])(x),
    samples=_replace_samples, sweep_dtypes=_SWEEP, shape_fn=_same)


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Replaces matches of ``pattern`` with ``rewrite`` (``tf.strings.regex_replace``).

    ``\\1`` in ``rewrite`` inserts the first group, as in RE2.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.regex_replace("a1b22", r"\\d+", "#").numpy()
        b'a#b#'
    """
    return execute(REGEX_REPLACE, (_values(input),),
                   {"pattern": _as_bytes(pattern, "pattern"),
                    "rewrite": _as_bytes(rewrite, "rewrite"),
                    "replace_global": bool(replace_global)})


# -- numbers <-> strings ---------------------------------------------------------------------
_NUMBER_TYPES = ("float32", "float64", "int32", "int64")


def _parse(v, out_type):
    text = v.strip()
    try:
        if out_type in ("int32", "int64"):
            value = int(text, 10)
            info = np.iinfo(out_type)
            if not info.min <= value <= info.max:
                raise ValueError
            return value
        value = float(text)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, "StringToNumberOp could not correctly convert string: %r to %s"
            % (v, out_type)) from None
    return value


def _to_number_kernel(xp):
    def kernel(x, *, out_type):
        return _map(lambda v: _parse(v, out_type), x, np.dtype(out_type))
    return kernel


def _to_number_samples(rng, dtype):
    return [((np.array([b"1.5", b"-2", b" 3e2", b"inf"], object),), {"out_type": "float32"}),
            ((np.array([[b"7", b"-12"]], object),), {"out_type": "int64"}),
            ((np.array(b"0.25", object),), {"out_type": "float64"}),
            ((np.array([b"12"], object),), {"out_type": "int32"})]


TO_NUMBER = registry.primitive(
    "StringToNumber", _to_number_kernel, dtypes=STRING, family="strings",
    reference=lambda x, *, out_type: np.asarray(np.asarray(x).astype(str).astype(np.float64)
                                                .astype(out_type)),
    samples=_to_number_samples, sweep_dtypes=_SWEEP,
    shape_fn=lambda x, *, out_type: AbstractValue(x.shape, out_type),
    bad_samples=lambda rng: [((np.array([b"x1"], object),), {"out_type": "float32"},
                              errors.InvalidArgumentError),
                             ((np.array([b"3000000000"], object),), {"out_type": "int32"},
                              errors.InvalidArgumentError)])


def to_number(input, out_type=d.float32, name=None):  # noqa: A002
    """Parses strings as numbers (``tf.strings.to_number``); a bad string raises.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.to_number(["1.5", " 2"]).numpy().tolist()
        [1.5, 2.0]
    """
    out_type = d.as_dtype(out_type)
    if out_type.name not in _NUMBER_TYPES:
        raise errors.InvalidArgumentError(
            None, "StringToNumber", "to_number: out_type must be one of %s, got %s."
            % (", ".join(_NUMBER_TYPES), out_type.name))
    return execute(TO_NUMBER, (_values(input),), {"out_type": out_type.name})


string_to_number = to_number


def _format_number(v, precision, scientific, shortest, width, fill):
    if isinstance(v, (bool, np.bool_)):
        text = "true" if v else "false"
    elif isinstance(v, (np.integer, int)):
        text = "%d" % v
    elif isinstance(v, (np.complexfloating, complex)):
        text = "(%s,%s)" % (_format_number(v.real, precision, scientific, shortest, 0, ""),
                            _format_number(v.imag, precision, scientific, shortest, 0, ""))
    else:
        code = "e" if scientific else ("g" if shortest else "f")
        prec = "" if precision < 0 else ".%d" % precision
        text = ("%" + prec + code) % v
        if not np.isfinite(v):
            text = "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    if width > len(text):
        if fill == "0" and text[:1] == "-":
            text = "-" + text[1:].rjust(width - 1, "0")
        else:
            text = text.rjust(width, fill or " ")
    return text.encode("ascii")


def _as_string_kernel(xp):
    def kernel(x, *, precision, scientific, shortest, width, fill):
        return _map(lambda v: _format_number(v, precision, scientific, shortest, width, fill),
                    np.asarray(x))
    return kernel


def _as_string_reference(x, *, precision, scientific, shortest, width, fill):
    # TF builds one printf format from the attrs; so does this reference.
    x = np.asarray(x)
    flags = ("0" if fill == "0" else "") + (str(width) if width > 0 else "")
    out = np.empty(x.shape, dtype=object)
    for idx in np.ndindex(x.shape):
        v = x[idx]
        if x.dtype.kind == "b":
            s = ("%" + flags + "s") % ("true" if v else "false")
        elif x.dtype.kind in "iu":
            s = ("%" + flags + "d") % int(v)
        else:
            s = ("%" + flags + ".%d" % (6 if precision < 0 else precision) +
                 ("e" if scientific else "f")) % float(v)
        out[idx] = s.encode()
    return out


def _as_string_samples(rng, dtype):
    base = {"precision": -1, "scientific": False, "shortest": False, "width": -1, "fill": ""}
    return [((np.array([1.5, -2.25, 0.0], np.float32),), base),
            ((np.array([[3, -40]], np.int64),), dict(base, width=5, fill="0")),
            ((np.array([True, False]),), base),
            ((np.array(12345.678, np.float64),), dict(base, precision=2, scientific=True)),
            ((np.array([7], np.int32),), dict(base, width=3))]


AS_STRING = registry.primitive(
    "AsString", _as_string_kernel, dtypes=ALL, family="strings",
    reference=_as_string_reference, samples=_as_string_samples,
    sweep_dtypes=(d.float32,), shape_fn=lambda x, **a: AbstractValue(x.shape, d.string))


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1,  # noqa: A002
              fill="", name=None):
    """Formats numbers and bools as strings (``tf.strings.as_string``).

    Floats print with 6 decimals unless ``precision`` is given; bools as ``true``/``false``.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.as_string([1.5, 2.0], precision=1).numpy().tolist()
        [b'1.5', b'2.0']
    """
    x = _values(input)
    if x.dtype is d.string:
        raise errors.InvalidArgumentError(
            None, "AsString", "as_string needs a numeric or bool tensor, got a string tensor.")
    if len(fill) > 1:
        raise errors.InvalidArgumentError(
            None, "AsString", "as_string: fill must be at most one character, got %r." % fill)
    return execute(AS_STRING, (x,), {"precision": int(precision), "scientific": bool(scientific),
                                     "shortest": bool(shortest), "width": int(width),
                                     "fill": str(fill)})


# -- format ----------------------------------------------------------------------------------
def _summarize(array, summarize, depth=0):
    """TF's tensor summary: nested brackets, elements space-separated, rows on new lines
    (indented to their depth), dimensions longer than ``2 * summarize`` elided."""
    if array.ndim == 0:
        return _element(array[()])
    n = array.shape[0]
    if summarize >= 0 and n > 2 * summarize:
        rows = list(range(summarize)) + [None] + list(range(n - summarize, n))
    else:
        rows = list(range(n))
    parts = ["..." if i is None else _summarize(np.asarray(array[i], dtype=array.dtype),
                                                summarize, depth + 1) for i in rows]
    sep = " " if array.ndim == 1 else "\n" + " " * (depth + 1)
    return "[" + sep.join(parts) + "]"


def _element(v):
    if isinstance(v, bytes):
        return '"%s"' % v.decode("utf-8", "replace")
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (np.floating, float)):
        return "%g" % v
    return str(v)


def _format_kernel(xp):
    def kernel(*xs, template, placeholder, summarize):
        pieces = template.split(placeholder)
        if len(pieces) - 1 != len(xs):
            raise errors.InvalidArgumentError(
                None, None, "the template has %d placeholders but %d tensors were given"
                % (len(pieces) - 1, len(xs)))
        out = [pieces[0]]
        for x, piece in zip(xs, pieces[1:]):
            out.append(_summarize(np.asarray(x), summarize))
            out.append(piece)
        return np.array("".join(out).encode("utf-8"), dtype=object)
    return kernel


def _format_samples(rng, dtype):
    return [(([np.array([1, 2, 3], np.int32)],),
             {"template": "x={}", "placeholder": "{}", "summarize": 3}),
            (([np.arange(8, dtype=np.int32), np.array(b"s", object)],),
             {"template": "{} and {}!", "placeholder": "{}", "summarize": 2}),
            (([np.array([[1.5, 2.0]], np.float32)],),
             {"template": "[{}]", "placeholder": "{}", "summarize": 3}),
            (([np.arange(12, dtype=np.int32).reshape(3, 4)],),
             {"template": "m={}", "placeholder": "{}", "summarize": 3})]


def _format_reference(*xs, template, placeholder, summarize):
    # numpy's own printer, reshaped into TF's conventions (no commas, quoted strings).
    text = template
    for x in xs:
        x = np.asarray(x)
        if x.dtype.kind == "O":
            x = np.vectorize(lambda v: '"%s"' % v.decode(), otypes=[object])(x) if x.size \
                else x
        rendered = np.array2string(
            x, separator=" ", threshold=2 * summarize if summarize >= 0 else 10**9,
            edgeitems=max(summarize, 0), formatter={
                "float_kind": lambda v: "%g" % v, "int": str, "object": str,
                "bool": lambda v: str(int(v))})
        text = text.replace(placeholder, rendered, 1)
    return np.array(text.encode(), dtype=object)


STRING_FORMAT = registry.primitive(
    "StringFormat", _format_kernel, dtypes=None, dtype_group=(), variadic=True,
    family="strings", reference=_format_reference, samples=_format_samples,
    sweep_dtypes=(d.int32,), shape_fn=lambda *xs, **a: AbstractValue((), d.string))


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001
    """Formats tensors into a template string (``tf.strings.format``).

    Each ``placeholder`` is replaced by one tensor printed as TF prints it: brackets per
    dimension, elements separated by spaces, rows on new lines, the middle of dimensions
    longer than ``2 * summarize`` elided as ``...``, strings in double quotes.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.format("x={}", [ef.constant([1, 2])]).numpy()
        b'x=[1 2]'
    """
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    return execute(STRING_FORMAT, tuple(convert_to_tensor(x) for x in inputs),
                   {"template": str(template), "placeholder": str(placeholder),
                    "summarize": int(summarize)})


# -- hashing ---------------------------------------------------------------------------------
def _hash_kernel(xp):
    def kernel(x, *, num_buckets):
        return _map(lambda v: fingerprint64(v) % num_buckets, x, np.int64)
    return kernel


def _hash_samples(rng, dtype):
    return [((string_values(rng, (2, 3)),), {"num_buckets": 7}),
            ((np.array([b"Hello", b"TensorFlow", b"2.x"], object),), {"num_buckets": 3}),
            ((np.array([b"x" * n for n in (0, 5, 17, 40, 64, 65, 130, 300)], object),),
             {"num_buckets": 1 << 40})]


HASH_BUCKET_FAST = registry.primitive(
    "StringToHashBucketFast", _hash_kernel, dtypes=STRING, family="strings",
    reference=lambda x, *, num_buckets: np.vectorize(
        lambda v: fingerprint64(v) % num_buckets, otypes=[np.int64])(x),
    samples=_hash_samples, sweep_dtypes=_SWEEP,
    shape_fn=lambda x, **a: AbstractValue(x.shape, d.int64))


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Hashes strings to buckets with FarmHash Fingerprint64 (``tf.strings.to_hash_bucket_fast``).

    The bucket of ``s`` is ``Fingerprint64(s) % num_buckets``, bit-identical to TF's.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3).numpy().tolist()
        [0, 2, 2]
    """
    if int(num_buckets) < 1:
        raise errors.InvalidArgumentError(
            None, "StringToHashBucketFast", "num_buckets must be >= 1, got %r." % num_buckets)
    return execute(HASH_BUCKET_FAST, (_values(input),),
                   {"num_buckets": int(num_buckets)})


# The per-string ops run on a RaggedTensor's flat values (see eagerflow.ops.composite).
for _prim in (LENGTH, LOWER, UPPER, STRIP, UNICODE_CASE, REGEX_FULL_MATCH, REGEX_REPLACE,
              TO_NUMBER, AS_STRING, HASH_BUCKET_FAST):
    _prim.elementwise = True
