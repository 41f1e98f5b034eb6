"""Numbers to strings and back: ``to_number`` (``string_to_number``) and ``as_string``.
"""

from __future__ import annotations


import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import ALL
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.strings.string_ops import _values
from eagerflow.ops.strings.string_ops import (
    STRING,
    _SWEEP,
    _map,
)

__all__ = ["to_number", "string_to_number", "as_string"]


# Loaded on first use (eagerflow.strings): not by ``import eagerflow``.
LAZY = True

EXPORTS = {
    "": ["as_string"],
    "strings": ["to_number", "as_string"],
}


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


# Run on a RaggedTensor's flat values (see eagerflow.ops.composite).
for _prim in (TO_NUMBER, AS_STRING,):
    _prim.elementwise = True
