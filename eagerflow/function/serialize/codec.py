"""How one value is stored: shapes, dtypes, tensors and attribute values as protobuf
messages, and the format constants of a serialized function.

The protobuf module is imported on first use (:func:`_pb`): importing eagerflow never
loads it.
"""

from __future__ import annotations

import sys

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.function import builtins
from eagerflow.function.graph import Graph
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor_shape import TensorShape

__all__ = ["attr_to_proto", "proto_to_attr", "FORMAT", "FORMAT_VERSION", "MIN_CONSUMER"]


FORMAT = "eagerflow.SavedFunction"
# Bump FORMAT_VERSION when the meaning of stored data changes; raise MIN_CONSUMER only when
# older readers would misread the new data.
FORMAT_VERSION = 1
MIN_CONSUMER = 1
# Attributes that describe how a graph was built, not what it computes: never serialized.
_INTERNAL_ATTRS = frozenset(("capture",))
_VARIABLE_OPS = builtins.names(variable=True)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_pb_module = None


def _pb():
    """The generated protobuf module, imported on first use."""
    global _pb_module
    if _pb_module is None:
        from eagerflow.function import graph_pb2

        _pb_module = graph_pb2
    return _pb_module


class _Unencodable(Exception):
    """A value no AttrValue kind can hold (converted to an eagerflow error by callers)."""


def _data_loss(message):
    return errors.DataLossError(None, None, "Cannot load the serialized function: " + message)


# -- shapes, dtypes, tensors ----------------------------------------------------------------
def _encode_shape(dims, msg):
    if dims is None:
        msg.unknown_rank = True
    else:
        msg.dim.extend(-1 if d is None else int(d) for d in dims)


def _decode_shape(msg):
    if msg.unknown_rank:
        return None
    for d in msg.dim:
        if d < -1:
            raise _data_loss("a shape has the dimension %d (only -1 means unknown)" % d)
    return tuple(None if d == -1 else int(d) for d in msg.dim)


def _decode_dtype(enum):
    try:
        return dtypes_lib.as_dtype(int(enum))
    except TypeError:
        raise _data_loss("unknown dtype code %d" % enum) from None


def _host(value):
    """A numpy array for an array on any backend (cupy arrays are copied to the host)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value
    if hasattr(value, "get") and hasattr(value, "__cuda_array_interface__"):
        return value.get()
    return np.asarray(value)


def _encode_tensor(array, msg):
    array = np.asarray(_host(array))  # tobytes() below writes C order whatever the layout
    dtype = dtypes_lib.from_numpy(array.dtype)
    if dtype is None:
        raise _Unencodable("an array of numpy dtype %s" % array.dtype)
    if dtype is dtypes_lib.string:
        if not all(isinstance(v, bytes) for v in array.flat):
            raise _Unencodable("an object array whose elements are not all bytes")
        msg.dtype = dtype.as_datatype_enum
        _encode_shape(array.shape, msg.shape)
        msg.string_val.extend(array.ravel().tolist())
        return
    if array.dtype.itemsize > 1 and (array.dtype.byteorder == ">" or (
            array.dtype.byteorder == "=" and sys.byteorder == "big")):
        array = array.byteswap()  # the stored form is little-endian on every host
    msg.dtype = dtype.as_datatype_enum
    _encode_shape(array.shape, msg.shape)
    msg.content = array.tobytes()


def _decode_tensor(msg):
    dtype = _decode_dtype(msg.dtype)
    shape = _decode_shape(msg.shape)
    if shape is None:
        raise _data_loss("a stored tensor has an unknown shape")
    if dtype is dtypes_lib.string:
        count = int(np.prod(shape, dtype=np.int64))
        if len(msg.string_val) != count or msg.content:
            raise _data_loss("a string%s tensor holds %d strings, expected %d" % (
                list(shape), len(msg.string_val), count))
        array = np.empty(count, dtype=object)
        array[:] = list(msg.string_val)
        return array.reshape(shape)
    np_dtype = dtype.np_dtype
    # Python ints: a declared [2**62, 4] cannot wrap around to match a short payload.
    expected = np_dtype.itemsize
    for d in shape:
        expected *= d
    if len(msg.content) != expected:
        raise _data_loss("a %s%s tensor holds %d bytes, expected %d" % (
            dtype.name, list(shape), len(msg.content), expected))
    array = np.frombuffer(msg.content, dtype=np_dtype).reshape(shape).copy()
    if sys.byteorder == "big" and np_dtype.itemsize > 1:
        array = array.byteswap()
    return array


def _encode_spec(aval, msg, name=""):
    msg.dtype = aval.dtype.as_datatype_enum
    _encode_shape(aval.shape, msg.shape)
    if name:
        msg.name = name


def _decode_aval(msg):
    return AbstractValue(_decode_shape(msg.shape), _decode_dtype(msg.dtype))


# -- attribute values -----------------------------------------------------------------------
def _encode_attr(value, msg, ctx=None):
    cls = value.__class__
    if value is None:
        msg.none.SetInParent()
    elif value is Ellipsis:
        msg.ellipsis.SetInParent()
    elif cls is bool:
        msg.b = value
    elif cls is int:
        if _INT64_MIN <= value <= _INT64_MAX:
            msg.i = value
        else:
            msg.big_int = str(value)
    elif cls is float:
        msg.f = value
    elif cls is str:
        # surrogatepass keeps lone surrogates (legal in Python strings) lossless.
        msg.s = value.encode("utf-8", "surrogatepass")
    elif cls is bytes:
        msg.bytes_value = value
    elif cls is tuple or cls is list:
        seq = msg.tuple if cls is tuple else msg.list
        seq.SetInParent()
        for item in value:
            _encode_attr(item, seq.value.add(), ctx)
    elif cls is dict:
        msg.dict.SetInParent()
        for key, item in value.items():
            entry = msg.dict.entry.add()
            _encode_attr(key, entry.key, ctx)
            _encode_attr(item, entry.value, ctx)
    elif cls is slice:
        msg.slice.SetInParent()
        for item in (value.start, value.stop, value.step):
            _encode_attr(item, msg.slice.value.add(), ctx)
    elif cls is dtypes_lib.DType:
        msg.dtype = value.as_datatype_enum
    elif cls is TensorShape:
        msg.shape.SetInParent()
        _encode_shape(value.dims, msg.shape)
    elif isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__"):
        _encode_tensor(value, msg.tensor)
    elif isinstance(value, np.generic):
        _encode_tensor(np.asarray(value), msg.scalar)
    elif isinstance(value, np.dtype):
        msg.numpy_dtype = "bfloat16" if value.name == "bfloat16" else value.str
    elif isinstance(value, Graph) and ctx is not None:
        msg.func = ctx.function_name(value)
    else:
        raise _Unencodable("a %s" % type(value).__name__)


def _decode_attr(msg, ctx=None):
    kind = msg.WhichOneof("value")
    if kind is None:
        raise _data_loss("an attribute value is empty")
    if kind in ("i", "f", "b", "bytes_value"):
        return getattr(msg, kind)
    if kind == "s":
        try:
            return msg.s.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise _data_loss("a string attribute is not valid UTF-8") from None
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "list":
        return [_decode_attr(v, ctx) for v in msg.list.value]
    if kind == "tuple":
        return tuple(_decode_attr(v, ctx) for v in msg.tuple.value)
    if kind == "dict":
        return {_decode_attr(e.key, ctx): _decode_attr(e.value, ctx) for e in msg.dict.entry}
    if kind == "slice":
        if len(msg.slice.value) != 3:
            raise _data_loss("a slice attribute has %d values" % len(msg.slice.value))
        return slice(*(_decode_attr(v, ctx) for v in msg.slice.value))
    if kind == "big_int":
        try:
            return int(msg.big_int)
        except ValueError:
            raise _data_loss("bad integer %r" % msg.big_int[:40]) from None
    if kind == "dtype":
        return _decode_dtype(msg.dtype)
    if kind == "shape":
        return TensorShape(_decode_shape(msg.shape))
    if kind == "tensor":
        return _decode_tensor(msg.tensor)
    if kind == "scalar":
        return _decode_tensor(msg.scalar)[()]
    if kind == "numpy_dtype":
        try:
            if msg.numpy_dtype == "bfloat16":
                return dtypes_lib.bfloat16.np_dtype
            return np.dtype(msg.numpy_dtype)
        except TypeError:
            raise _data_loss("unknown numpy dtype %r" % msg.numpy_dtype) from None
    if kind == "func":
        if ctx is None:
            raise _data_loss("a function attribute %r outside a function" % msg.func)
        return ctx.function(msg.func)
    raise _data_loss("unknown attribute kind %r" % kind)  # pragma: no cover


def attr_to_proto(value):
    """Encodes one attribute value as an ``AttrValue`` message.

    Args:
        value: None, a bool, int, float, str, bytes, DType, TensorShape, numpy array,
            numpy scalar or dtype, slice, Ellipsis, or a tuple, list or dict of these.

    Returns:
        An ``eagerflow.AttrValue`` message; ``proto_to_attr`` gives back an equal value of
        the same types.

    Raises:
        InvalidArgumentError: For a value no attribute kind can hold.

    Example:
        >>> from eagerflow.function import serialize
        >>> serialize.proto_to_attr(serialize.attr_to_proto((1, [2.5, None], "x")))
        (1, [2.5, None], 'x')
    """
    msg = _pb().AttrValue()
    try:
        _encode_attr(value, msg)
    except _Unencodable as exc:
        raise errors.InvalidArgumentError(
            None, None, "Cannot serialize the attribute value %r: %s has no AttrValue "
            "kind." % (value, exc)) from None
    return msg


def proto_to_attr(msg):
    """Decodes an ``AttrValue`` message made by :func:`attr_to_proto`."""
    return _decode_attr(msg)
