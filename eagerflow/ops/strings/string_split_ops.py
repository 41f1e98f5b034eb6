"""String ops whose results are ragged: split, bytes/unicode split, unicode_decode, ngrams.

Each primitive works on a flat vector of strings and returns the pieces with int64 row
splits; the public functions reshape the input and wrap the result in a RaggedTensor whose
outer dimensions are the input's (a scalar input gives a dense vector, as in TF).

Example:
    >>> import eagerflow as ef
    >>> ef.strings.split(["a b", "c"]).to_list()
    [[b'a', b'b'], [b'c']]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import string_values
from eagerflow.ops.registry import AbstractValue
from eagerflow.ragged.ragged_tensor import RaggedTensor
from eagerflow.tensor import convert_to_tensor

__all__ = ["split", "bytes_split", "unicode_split", "unicode_decode", "ngrams"]

EXPORTS = {"strings": ["split", "bytes_split", "unicode_split", "unicode_decode", "ngrams"]}

_STRING = (d.string,)
_ENCODINGS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}


def _pieces_result(pieces, otype=object):
    """(values, row_splits) arrays of a list of per-string piece lists."""
    splits = np.zeros(len(pieces) + 1, np.int64)
    np.cumsum([len(p) for p in pieces], out=splits[1:])
    values = np.empty(int(splits[-1]), dtype=otype)
    i = 0
    for p in pieces:
        values[i:i + len(p)] = p if otype is not object else _object_list(p)
        i += len(p)
    return values, splits


def _object_list(items):
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out


def _flat_shape(x, **attrs):
    n = x.shape[0] if x.shape else None
    return (AbstractValue((None,), d.string),
            AbstractValue((None if n is None else n + 1,), d.int64))


def _vector_samples(rng, dtype):
    text = np.array([b"hello world", b"  a  b ", b"", b"x,y,,z"], dtype=object)
    return [((text,), {}), ((string_values(rng, (3,)),), {}), ((text[:0],), {})]


# -- split on a separator -----------------------------------------------------------------
def _split_one(v, sep, maxsplit):
    if sep is None:
        return v.split(None, maxsplit)
    return v.split(sep, maxsplit)


def _split_kernel(xp):
    def kernel(x, *, sep, maxsplit):
        return _pieces_result([_split_one(v, sep, maxsplit) for v in x])
    return kernel


def _split_reference(x, *, sep, maxsplit):
    rows = [v.decode("latin-1").split(None if sep is None else sep.decode("latin-1"), maxsplit)
            for v in x]
    rows = [[p.encode("latin-1") for p in r] for r in rows]
    splits = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    return _object_list([p for r in rows for p in r]), splits


def _split_samples(rng, dtype):
    text = np.array([b"hello world", b"  a  b ", b"", b"x,y,,z"], dtype=object)
    return [((text,), {"sep": None, "maxsplit": -1}), ((text,), {"sep": b",", "maxsplit": -1}),
            ((text,), {"sep": b" ", "maxsplit": 1}), ((text[:0],), {"sep": None, "maxsplit": -1})]


STRING_SPLIT = registry.primitive(
    "StringSplitV2", _split_kernel, dtypes=_STRING, num_outputs=2, family="strings",
    reference=_split_reference, samples=_split_samples, sweep_dtypes=_STRING,
    shape_fn=_flat_shape)


def _ragged(prim, input, attrs, name):  # noqa: A002 - TF's argument name
    """Runs a flat split primitive over ``input`` of any rank; a RaggedTensor of rank + 1."""
    x = input if isinstance(input, RaggedTensor) else convert_to_tensor(input)
    if isinstance(x, RaggedTensor):
        return x.with_flat_values(_ragged(prim, x.flat_values, attrs, name))
    if x.dtype is not d.string:
        raise errors.InvalidArgumentError(
            None, prim.name, "%s needs a string tensor, got %s." % (name, x.dtype.name))
    shape = x.shape.as_list()
    flat = x if len(shape) == 1 else _reshape(x, [-1])
    values, splits = execute(prim, (flat,), attrs)
    if not shape:
        return values
    result = RaggedTensor.from_row_splits(values, splits, validate=False)
    # The input's uniform outer dimensions become row partitions of fixed length.
    for k in range(len(shape) - 1, 0, -1):
        outer_rows = int(np.prod(shape[:k]))
        outer = np.arange(outer_rows + 1, dtype=np.int64) * shape[k]
        result = RaggedTensor.from_row_splits(result, outer, validate=False)
    return result


def _reshape(x, shape):
    from eagerflow.ops.array.reshape_ops import reshape

    return reshape(x, shape)


def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """Splits strings on ``sep`` into a RaggedTensor (``tf.strings.split``).

    With ``sep=None`` runs of whitespace separate pieces and empty pieces are dropped;
    with a separator every occurrence splits (``"a,,b"`` gives ``a``, ``""``, ``b``).

    Args:
        input: A string tensor of rank N (or a RaggedTensor of strings).
        sep: The separator (a non-empty string), or None for whitespace.
        maxsplit: The most splits per string; -1 for no limit.
        name: Unused.

    Returns:
        A RaggedTensor of rank N + 1 (a dense vector for a scalar input).

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.split("a,b,,c", sep=",").numpy().tolist()
        [b'a', b'b', b'', b'c']
    """
    if sep is not None:
        sep = sep.encode("utf-8") if isinstance(sep, str) else bytes(sep)
        if not sep:
            raise errors.InvalidArgumentError(
                None, "StringSplitV2", "split: sep must be a non-empty string or None.")
    return _ragged(STRING_SPLIT, input, {"sep": sep, "maxsplit": int(maxsplit)}, "split")


# -- characters ----------------------------------------------------------------------------
BYTES_SPLIT = registry.primitive(
    "StringBytesSplit",
    lambda xp: (lambda x: _pieces_result([[v[i:i + 1] for i in range(len(v))] for v in x])),
    dtypes=_STRING, num_outputs=2, family="strings", sweep_dtypes=_STRING,
    reference=lambda x: (_object_list([bytes([c]) for v in x for c in v]),
                         np.cumsum([0] + [len(v) for v in x]).astype(np.int64)),
    samples=_vector_samples, shape_fn=_flat_shape)


def bytes_split(input, name=None):  # noqa: A002
    """Splits each string into its bytes (``tf.strings.bytes_split``).

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.bytes_split("abc").numpy().tolist()
        [b'a', b'b', b'c']
    """
    return _ragged(BYTES_SPLIT, input, {}, "bytes_split")


def _decode(v, encoding, errors_mode, replacement):
    try:
        text = v.decode(_ENCODINGS[encoding], "strict")
    except UnicodeDecodeError:
        if errors_mode == "strict":
            raise errors.InvalidArgumentError(
                None, None, "invalid %s data %r; use errors='replace' or 'ignore' to accept it"
                % (encoding, v)) from None
        text = v.decode(_ENCODINGS[encoding], "replace")
        if errors_mode == "ignore":
            text = text.replace("\ufffd", "")
        elif replacement != 0xFFFD:
            text = text.replace("\ufffd", chr(replacement))
    return text


def _decode_kernel(xp):
    def kernel(x, *, encoding, errors_mode, replacement):
        rows = [[ord(c) for c in _decode(v, encoding, errors_mode, replacement)] for v in x]
        return _pieces_result(rows, np.int32)
    return kernel


def _decode_reference(x, *, encoding, errors_mode, replacement):
    rows = [list(v.decode(_ENCODINGS[encoding], "replace").encode("utf-32-le")) for v in x]
    cps = [np.frombuffer(bytes(r), "<u4").astype(np.int32) for r in rows]
    return (np.concatenate(cps) if cps else np.zeros(0, np.int32),
            np.cumsum([0] + [len(c) for c in cps]).astype(np.int64))


def _decode_samples(rng, dtype):
    text = np.array([b"caf\xc3\xa9", b"\xe2\x82\xac1", b"", b"ab\xffc"], dtype=object)
    return [((text,), {"encoding": "UTF-8", "errors_mode": "replace", "replacement": 0xFFFD}),
            ((text[:3],), {"encoding": "UTF-8", "errors_mode": "strict",
                           "replacement": 0xFFFD})]


UNICODE_DECODE = registry.primitive(
    "UnicodeDecode", _decode_kernel, dtypes=_STRING, num_outputs=2, family="strings",
    reference=_decode_reference, samples=_decode_samples, sweep_dtypes=_STRING,
    shape_fn=lambda x, **a: (AbstractValue((None,), d.int32),
                             AbstractValue((x.shape[0] + 1 if x.shape and x.shape[0] is not None
                                            else None,), d.int64)),
    bad_samples=lambda rng: [((np.array([b"\xff"], object),),
                              {"encoding": "UTF-8", "errors_mode": "strict",
                               "replacement": 0xFFFD}, errors.InvalidArgumentError)])


def _unicode_attrs(op, input_encoding, errors_mode, replacement_char):
    if input_encoding not in _ENCODINGS:
        raise errors.InvalidArgumentError(
            None, op, "%s: input_encoding must be one of %s, got %r."
            % (op, ", ".join(_ENCODINGS), input_encoding))
    if errors_mode not in ("strict", "replace", "ignore"):
        raise errors.InvalidArgumentError(
            None, op, "%s: errors must be 'strict', 'replace' or 'ignore', got %r."
            % (op, errors_mode))
    return {"encoding": input_encoding, "errors_mode": errors_mode,
            "replacement": int(replacement_char)}


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,  # noqa
                   replace_control_characters=False, name=None):
    """Decodes strings into Unicode code points (``tf.strings.unicode_decode``).

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.unicode_decode(["caf\\u00e9"], "UTF-8").to_list()
        [[99, 97, 102, 233]]
    """
    return _ragged(UNICODE_DECODE, input,
                   _unicode_attrs("UnicodeDecode", input_encoding, errors, replacement_char),
                   "unicode_decode")


def _unicode_split_kernel(xp):
    def kernel(x, *, encoding, errors_mode, replacement):
        codec = _ENCODINGS[encoding]
        return _pieces_result([[c.encode(codec) for c in
                                _decode(v, encoding, errors_mode, replacement)] for v in x])
    return kernel


UNICODE_SPLIT = registry.primitive(
    "UnicodeSplit", _unicode_split_kernel, dtypes=_STRING, num_outputs=2, family="strings",
    reference=lambda x, *, encoding, errors_mode, replacement: (
        _object_list([c.encode() for v in x for c in v.decode("utf-8", "replace")]),
        np.cumsum([0] + [len(v.decode("utf-8", "replace")) for v in x]).astype(np.int64)),
    samples=_decode_samples, sweep_dtypes=_STRING, shape_fn=_flat_shape)


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533,  # noqa
                  name=None):
    """Splits strings into their characters (``tf.strings.unicode_split``).

    Example:
        >>> import eagerflow as ef
        >>> [c.decode() for c in ef.strings.unicode_split("caf\\u00e9", "UTF-8").numpy()]
        ['c', 'a', 'f', 'é']
    """
    return _ragged(UNICODE_SPLIT, input,
                   _unicode_attrs("UnicodeSplit", input_encoding, errors, replacement_char),
                   "unicode_split")


# -- ngrams --------------------------------------------------------------------------------
def _ngrams_rows(rows, widths, separator, left_pad, right_pad, pad_width, preserve_short):
    out = []
    for row in rows:
        grams = []
        for w in widths:
            pad = (w - 1 if pad_width < 0 else min(pad_width, w - 1)) if (
                left_pad or right_pad) else 0
            padded = [left_pad] * pad + list(row) + [right_pad] * pad if pad else list(row)
            for i in range(len(padded) - w + 1):
                grams.append(separator.join(padded[i:i + w]))
        if preserve_short and not grams and len(row):
            pad = (min(widths) - 1 if pad_width < 0 else pad_width) if (
                left_pad or right_pad) else 0
            grams.append(separator.join([left_pad] * pad + list(row) + [right_pad] * pad))
        out.append(grams)
    return out


def _ngrams_kernel(xp):
    def kernel(values, splits, *, widths, separator, left_pad, right_pad, pad_width,
               preserve_short):
        s = np.asarray(splits)
        if s.ndim != 1 or s.size == 0 or s[0] != 0 or np.any(np.diff(s) < 0) or \
                s[-1] != len(values):
            raise errors.InvalidArgumentError(
                None, None, "row splits %s do not partition %d values" % (s.tolist(),
                                                                           len(values)))
        rows = [list(values[s[i]:s[i + 1]]) for i in range(len(s) - 1)]
        return _pieces_result(_ngrams_rows(rows, widths, separator, left_pad, right_pad,
                                           pad_width, preserve_short))
    return kernel


def _ngrams_reference(values, splits, *, widths, separator, left_pad, right_pad, pad_width,
                      preserve_short):
    out, lens = [], []
    for i in range(len(splits) - 1):
        row = [v for v in values[splits[i]:splits[i + 1]]]
        n = 0
        for w in widths:
            p = 0 if not (left_pad or right_pad) else (w - 1 if pad_width < 0 else
                                                      min(w - 1, pad_width))
            seq = [left_pad] * p + row + [right_pad] * p
            grams = [separator.join(seq[k:k + w]) for k in range(max(0, len(seq) - w + 1))]
            out.extend(grams)
            n += len(grams)
        if preserve_short and n == 0 and row:
            p = 0 if not (left_pad or right_pad) else (min(widths) - 1 if pad_width < 0
                                                      else pad_width)
            out.append(separator.join([left_pad] * p + row + [right_pad] * p))
            n = 1
        lens.append(n)
    return _object_list(out), np.cumsum([0] + lens).astype(np.int64)


def _ngrams_samples(rng, dtype):
    values = np.array([b"a", b"b", b"c", b"d", b"e", b"f"], dtype=object)
    splits = np.array([0, 4, 4, 5, 6], np.int64)
    base = {"widths": (2,), "separator": b" ", "left_pad": b"", "right_pad": b"",
            "pad_width": -1, "preserve_short": False}
    return [((values, splits), base), ((values, splits), dict(base, widths=(1, 3))),
            ((values, splits), dict(base, widths=(3,), left_pad=b"<", right_pad=b">")),
            ((values, splits), dict(base, widths=(3,), preserve_short=True)),
            ((values, splits), dict(base, widths=(3,), left_pad=b"<", right_pad=b">",
                                    pad_width=1))]


STRING_NGRAMS = registry.primitive(
    "StringNGrams", _ngrams_kernel, dtypes=_STRING, dtype_group=(0,), num_outputs=2,
    family="strings", reference=_ngrams_reference, samples=_ngrams_samples,
    sweep_dtypes=_STRING,
    shape_fn=lambda v, s, **a: (AbstractValue((None,), d.string), AbstractValue(s.shape,
                                                                                d.int64)),
    bad_samples=lambda rng: [((np.array([b"a"], object), np.array([0, 3], np.int64)),
                              {"widths": (2,), "separator": b" ", "left_pad": b"",
                               "right_pad": b"", "pad_width": -1, "preserve_short": False},
                              errors.InvalidArgumentError)])


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """Joined n-grams of the innermost dimension (``tf.strings.ngrams``).

    Args:
        data: A string tensor or RaggedTensor; n-grams run along the last dimension.
        ngram_width: An int or a list of ints (several widths are concatenated per row).
        separator: Placed between the joined items.
        pad_values: None (no padding), a string for both ends, or a ``(left, right)`` pair.
        padding_width: Pad items at each end (default ``width - 1``).
        preserve_short_sequences: Emit one n-gram of the whole (padded) row when a row is
            too short for any.
        name: Unused.

    Returns:
        A RaggedTensor (or a dense tensor for dense input) of the n-grams.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.ngrams(["a", "b", "c"], 2).numpy().tolist()
        [b'a b', b'b c']
    """
    widths = tuple(int(w) for w in np.atleast_1d(ngram_width).tolist())
    if not widths or min(widths) < 1:
        raise errors.InvalidArgumentError(
            None, "StringNGrams", "ngrams: ngram_width must be positive, got %r." % ngram_width)
    if pad_values is None:
        left = right = b""
    elif isinstance(pad_values, (tuple, list)):
        left, right = (p.encode() if isinstance(p, str) else p for p in pad_values)
    else:
        left = right = pad_values.encode() if isinstance(pad_values, str) else pad_values
    if pad_values is not None and not (left or right):
        raise errors.InvalidArgumentError(
            None, "StringNGrams", "ngrams: pad_values must be non-empty strings.")
    attrs = {"widths": widths, "separator": separator.encode() if isinstance(separator, str)
             else separator, "left_pad": left, "right_pad": right,
             "pad_width": -1 if padding_width is None else int(padding_width),
             "preserve_short": bool(preserve_short_sequences)}
    if isinstance(data, RaggedTensor):
        if data.ragged_rank > 1:
            return data.with_values(ngrams(data.values, ngram_width, separator, pad_values,
                                           padding_width, preserve_short_sequences))
        values, splits = execute(STRING_NGRAMS, (data.values, data.row_splits), attrs)
        return RaggedTensor.from_row_splits(values, splits, validate=False)
    x = convert_to_tensor(data)
    if x.ndim == 0:
        raise errors.InvalidArgumentError(
            None, "StringNGrams", "ngrams needs data of rank >= 1, got a scalar.")
    shape = x.shape.as_list()
    rows = int(np.prod(shape[:-1]))
    flat = _reshape(x, [-1])
    splits = convert_to_tensor(np.arange(0, rows + 1, dtype=np.int64) * shape[-1])
    values, out_splits = execute(STRING_NGRAMS, (flat, splits), attrs)
    per_row = (int(values.shape[0]) // rows) if rows else 0
    return _reshape(values, shape[:-1] + [per_row])
