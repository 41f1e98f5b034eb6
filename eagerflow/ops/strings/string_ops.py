"""String ops (``tf.strings``): the element-wise transforms (case, whitespace, length,
substrings) and the helpers the other string modules share.

A string tensor's value is a numpy object array of ``bytes`` that lives in host memory, as
in TF. Every op here is a registry primitive, so it traces into ``@function`` graphs and
serializes like any other. Joins, regular expressions, number conversions, formatting and
hashing have modules of their own (``string_join``, ``string_regex``, ``string_convert``,
``string_format``, ``string_hash``); ops that split strings into pieces are in
``string_split_ops`` (they return RaggedTensors).

Example:
    >>> import eagerflow as ef
    >>> ef.strings.upper(ef.strings.join(["ab", "cd"], separator="-")).numpy()
    b'AB-CD'
"""

from __future__ import annotations


import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.strings import structural  # noqa: F401 - strings in the structural ops
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import broadcast_shapes, string_values
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor

__all__ = ["length", "lower", "upper", "strip", "substr"]

# Loaded on first use (eagerflow.strings): not by ``import eagerflow``.
LAZY = True

EXPORTS = {
    "strings": ["length", "lower", "upper", "strip", "substr"],
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


# The per-string ops run on a RaggedTensor's flat values (see eagerflow.ops.composite).
for _prim in (LENGTH, LOWER, UPPER, STRIP, UNICODE_CASE):
    _prim.elementwise = True
