"""``tf.io.decode_csv``: CSV records to typed columns, as a registry primitive.

Fields follow RFC 4180 as TF reads them: a field may be quoted, a quote inside a quoted
field is doubled, and an empty field (or ``na_value``) takes the column's default; a column
whose default is empty is required.

Example:
    >>> import eagerflow as ef
    >>> a, b = ef.io.decode_csv(["1,x", "2,"], record_defaults=[[0], ["?"]])
    >>> a.numpy().tolist(), b.numpy().tolist()
    ([1, 2], [b'x', b'?'])
"""

from __future__ import annotations

import csv as _csv

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import convert_to_tensor

__all__ = ["decode_csv"]

_TYPES = ("float32", "float64", "int32", "int64", "string")


def _fields(record, delim, quotes):
    """Splits one record into fields (bytes), honouring quotes when ``quotes``."""
    fields, i, n = [], 0, len(record)
    while True:
        if quotes and i < n and record[i:i + 1] == b'"':
            out, i = bytearray(), i + 1
            while True:
                j = record.find(b'"', i)
                if j < 0:
                    raise errors.InvalidArgumentError(
                        None, None, "a quoted field is not closed in record %r" % record)
                out += record[i:j]
                if record[j + 1:j + 2] == b'"':
                    out += b'"'
                    i = j + 2
                    continue
                i = j + 1
                break
            if i < n and record[i:i + len(delim)] != delim:
                raise errors.InvalidArgumentError(
                    None, None, "a quoted field must end with a quote followed by the "
                    "delimiter in record %r" % record)
            fields.append(bytes(out))
        else:
            j = record.find(delim, i)
            j = n if j < 0 else j
            fields.append(record[i:j])
            i = j
        if i >= n:
            return fields
        i += len(delim)
        if i == n:
            fields.append(b"")
            return fields


def _convert(field, kind, default, col):
    if kind == "string":
        return field
    try:
        return int(field) if kind.startswith("int") else float(field)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, "field %d (%r) is not a valid %s" % (col, field, kind)) from None


def _decode_kernel(xp):
    def kernel(records, *, defaults, delim, quotes, na_value, select_cols):
        flat = records.reshape(-1)
        n_cols = len(defaults)
        columns = [np.empty(flat.shape, dtype=object if k == "string" else np.dtype(k))
                   for k, _ in defaults]
        for r, record in enumerate(flat):
            fields = _fields(record, delim, quotes)
            if select_cols is not None:
                if max(select_cols) >= len(fields):
                    raise errors.InvalidArgumentError(
                        None, None, "record %d has %d fields; select_cols needs column %d"
                        % (r, len(fields), max(select_cols)))
                fields = [fields[c] for c in select_cols]
            if len(fields) != n_cols:
                raise errors.InvalidArgumentError(
                    None, None, "expected %d fields but record %d has %d: %r"
                    % (n_cols, r, len(fields), record))
            for c, (field, (kind, default)) in enumerate(zip(fields, defaults)):
                if field == b"" or field == na_value:
                    if default is None:
                        raise errors.InvalidArgumentError(
                            None, None, "field %d of record %d is required but empty" % (c, r))
                    columns[c][r] = default
                else:
                    columns[c][r] = _convert(field, kind, default, c)
        return tuple(col.reshape(records.shape) for col in columns)
    return kernel


def _reference(records, *, defaults, delim, quotes, na_value, select_cols):
    rows = [next(_csv.reader([r.decode()], delimiter=delim.decode(), strict=True,
                             quoting=_csv.QUOTE_MINIMAL if quotes else _csv.QUOTE_NONE))
            for r in np.asarray(records).reshape(-1)]
    out = []
    for c, (kind, default) in enumerate(defaults):
        vals = [row[c] for row in rows]
        vals = [default if v == "" or v.encode() == na_value else
                (v.encode() if kind == "string" else v) for v in vals]
        if kind == "string":
            arr = np.empty(len(vals), dtype=object)
            arr[:] = vals
        else:
            arr = np.asarray([float(v) if kind.startswith("float") else int(v) for v in vals],
                             dtype=np.dtype(kind))
        out.append(arr.reshape(np.shape(records)))
    return tuple(out)


def _samples(rng, dtype):
    recs = np.array([b'1,2.5,"a,b"', b'3,,"say ""hi"""', b",-1e3,plain"], dtype=object)
    base = {"defaults": (("int32", 0), ("float32", 7.0), ("string", b"?")), "delim": b",",
            "quotes": True, "na_value": b"", "select_cols": None}
    return [((recs,), base), ((recs.reshape(3, 1),), base),
            ((np.array([b"5|x"], object),), dict(base, defaults=(("int64", None),
                                                                 ("string", None)),
                                                 delim=b"|"))]


DECODE_CSV = registry.primitive(
    "DecodeCSV", _decode_kernel, dtypes=(d.string,), family="io",
    num_outputs=lambda attrs: len(attrs["defaults"]), reference=_reference, samples=_samples,
    sweep_dtypes=(d.string,),
    shape_fn=lambda r, *, defaults, **a: tuple(AbstractValue(r.shape, k) for k, _ in defaults),
    bad_samples=lambda rng: [((np.array([b"1,2"], object),),
                              {"defaults": (("int32", None),), "delim": b",", "quotes": True,
                               "na_value": b"", "select_cols": None},
                              errors.InvalidArgumentError),
                             ((np.array([b"x"], object),),
                              {"defaults": (("int32", 0),), "delim": b",", "quotes": True,
                               "na_value": b"", "select_cols": None},
                              errors.InvalidArgumentError)])


def _default_of(value, col):
    """(dtype name, default or None) of one record_defaults entry."""
    if hasattr(value, "dtype") and getattr(value, "dtype", None) is not None and \
            isinstance(value.dtype, d.DType):
        dtype = value.dtype
        arr = np.asarray(value._value) if dtype is d.string else np.asarray(value.numpy())
        items = arr.reshape(-1).tolist()
    elif isinstance(value, d.DType):
        dtype, items = value, []
    else:
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if items:
            dtype = convert_to_tensor(items[0]).dtype
        else:
            raise errors.InvalidArgumentError(
                None, "DecodeCSV", "record_defaults[%d] is empty and has no dtype; give a "
                "dtype (e.g. ef.constant([], ef.int32)) or a default value." % col)
    if dtype.name not in _TYPES:
        raise errors.InvalidArgumentError(
            None, "DecodeCSV", "record_defaults[%d]: dtype must be one of %s, got %s."
            % (col, ", ".join(_TYPES), dtype.name))
    if len(items) > 1:
        raise errors.InvalidArgumentError(
            None, "DecodeCSV", "record_defaults[%d] must hold at most one value." % col)
    default = items[0] if items else None
    if isinstance(default, str):
        default = default.encode()
    return dtype.name, default


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True,
               name=None, na_value="", select_cols=None):
    """Parses CSV records into one tensor per column (``tf.io.decode_csv``).

    Args:
        records: A string tensor of records (any shape).
        record_defaults: One entry per column: a one-element list (the default, whose type
            is the column's), or an empty tensor of a dtype (the column is required).
        field_delim: The delimiter (one character).
        use_quote_delim: Whether double quotes delimit fields.
        name: Unused.
        na_value: A field equal to it is missing (takes the default).
        select_cols: The columns to keep, ascending.

    Returns:
        A list of tensors, one per column, each of ``records``' shape.
    """
    defaults = tuple(_default_of(v, i) for i, v in enumerate(record_defaults))
    if not defaults:
        raise errors.InvalidArgumentError(None, "DecodeCSV", "record_defaults is empty.")
    if select_cols is not None:
        select_cols = tuple(int(c) for c in select_cols)
        if list(select_cols) != sorted(set(select_cols)) or len(select_cols) != len(defaults):
            raise errors.InvalidArgumentError(
                None, "DecodeCSV", "select_cols must be ascending, unique and as many as "
                "record_defaults (%d), got %s." % (len(defaults), list(select_cols)))
    delim = field_delim.encode() if isinstance(field_delim, str) else field_delim
    if len(delim) != 1:
        raise errors.InvalidArgumentError(
            None, "DecodeCSV", "field_delim must be one character, got %r." % field_delim)
    out = execute(DECODE_CSV, (convert_to_tensor(records, dtype=d.string),),
                  {"defaults": defaults, "delim": delim, "quotes": bool(use_quote_delim),
                   "na_value": na_value.encode() if isinstance(na_value, str) else na_value,
                   "select_cols": select_cols})
    return list(out)
