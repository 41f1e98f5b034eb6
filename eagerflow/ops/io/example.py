"""``tf.train.Example`` messages and their parsing: ``parse_single_example``, ``parse_example``,
``FixedLenFeature``, ``VarLenFeature``; ``serialize_tensor`` / ``parse_tensor``.

The messages come from ``example.proto``, which has TF's field numbers, so serialized
Examples and tensors are interchangeable with TensorFlow's. Parsing is bounded: every
feature's value count is checked against the declared shape before any array is built,
and malformed bytes raise ``DataLossError``/``InvalidArgumentError``, never a crash.

Example:
    >>> import eagerflow as ef
    >>> ex = ef.train.Example(features=ef.train.Features(feature={
    ...     "x": ef.train.Feature(float_list=ef.train.FloatList(value=[1.0, 2.0]))}))
    >>> out = ef.io.parse_single_example(ex.SerializeToString(),
    ...                                  {"x": ef.io.FixedLenFeature([2], ef.float32)})
    >>> out["x"].numpy().tolist()
    [1.0, 2.0]
"""

from __future__ import annotations

import collections

import numpy as np
from google.protobuf.message import DecodeError

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.io import example_pb2
from eagerflow.sparse.sparse_tensor import SparseTensor
from eagerflow.tensor import convert_to_tensor

__all__ = ["Example", "SequenceExample", "Features", "Feature", "FeatureList", "FeatureLists",
           "BytesList", "FloatList", "Int64List", "FixedLenFeature", "VarLenFeature",
           "parse_single_example", "parse_example", "serialize_tensor", "parse_tensor"]

Example = example_pb2.Example
SequenceExample = example_pb2.SequenceExample
Features = example_pb2.Features
Feature = example_pb2.Feature
FeatureList = example_pb2.FeatureList
FeatureLists = example_pb2.FeatureLists
BytesList = example_pb2.BytesList
FloatList = example_pb2.FloatList
Int64List = example_pb2.Int64List

_KINDS = {d.string: "bytes_list", d.float32: "float_list", d.int64: "int64_list"}


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """A feature with a fixed number of values, parsed to a dense tensor of ``shape``.

    ``dtype`` is float32, int64 or string; a missing feature takes ``default_value``
    (or raises when there is none).
    """

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, tuple(shape), d.as_dtype(dtype), default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature with any number of values, parsed to a SparseTensor."""

    def __new__(cls, dtype):
        return super().__new__(cls, d.as_dtype(dtype))


def _check_spec(key, spec):
    if not isinstance(spec, (FixedLenFeature, VarLenFeature)):
        raise errors.InvalidArgumentError(
            None, "ParseExample", "features[%r] must be a FixedLenFeature or VarLenFeature, "
            "got %r." % (key, spec))
    if spec.dtype not in _KINDS:
        raise errors.InvalidArgumentError(
            None, "ParseExample", "features[%r]: dtype must be float32, int64 or string, got %s."
            % (key, spec.dtype.name))


def _as_bytes(serialized):
    if hasattr(serialized, "numpy"):
        serialized = serialized.numpy()
    if isinstance(serialized, np.ndarray):
        serialized = serialized[()] if serialized.ndim == 0 else serialized
    return serialized


def _decode(data):
    msg = example_pb2.Example()
    try:
        msg.ParseFromString(bytes(data))
    except DecodeError as exc:
        raise errors.DataLossError(
            None, "ParseExample", "could not parse a serialized tf.train.Example: %s" % exc
        ) from None
    return msg


def _values(feature, key, spec):
    kind = feature.WhichOneof("kind")
    want = _KINDS[spec.dtype]
    if kind is None:
        return []
    if kind != want:
        raise errors.InvalidArgumentError(
            None, "ParseExample", "feature %r holds a %s, but its spec asks for %s (%s)."
            % (key, kind, spec.dtype.name, want))
    return getattr(feature, kind).value


def _array(values, dtype):
    if dtype is d.string:
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out
    return np.asarray(list(values), dtype=dtype.np_dtype)


def _fixed(values, key, spec):
    size = int(np.prod(spec.shape, dtype=np.int64)) if spec.shape else 1
    if values is None:
        if spec.default_value is None:
            raise errors.InvalidArgumentError(
                None, "ParseExample", "feature %r is required (a FixedLenFeature without a "
                "default_value) but missing from the Example." % key)
        return np.broadcast_to(np.asarray(convert_to_tensor(spec.default_value,
                                                            dtype=spec.dtype)._value),
                               spec.shape).copy()
    if len(values) != size:
        raise errors.InvalidArgumentError(
            None, "ParseExample", "feature %r has %d values, but its FixedLenFeature shape %s "
            "needs %d." % (key, len(values), list(spec.shape), size))
    return _array(values, spec.dtype).reshape(spec.shape)


def _parse_many(records, features):
    for key, spec in features.items():
        _check_spec(key, spec)
    dense = {k: [] for k, s in features.items() if isinstance(s, FixedLenFeature)}
    sparse = {k: [] for k, s in features.items() if isinstance(s, VarLenFeature)}
    for data in records:
        fmap = _decode(data).features.feature
        for key in dense:
            spec = features[key]
            dense[key].append(_fixed(_values(fmap[key], key, spec) if key in fmap else None,
                                     key, spec))
        for key in sparse:
            sparse[key].append(_values(fmap[key], key, features[key]) if key in fmap else [])
    return dense, sparse


def parse_single_example(serialized, features, name=None, example_names=None):
    """Parses one serialized ``tf.train.Example`` (``tf.io.parse_single_example``).

    Args:
        serialized: A scalar string tensor or bytes.
        features: A dict of feature name to FixedLenFeature / VarLenFeature.
        name: Unused.
        example_names: Unused.

    Returns:
        A dict of name to Tensor (FixedLenFeature) or SparseTensor (VarLenFeature, 1-D).
    """
    data = _as_bytes(serialized)
    if not isinstance(data, (bytes, bytearray)):
        raise errors.InvalidArgumentError(
            None, "ParseExample", "parse_single_example needs one serialized Example (a scalar "
            "string); use parse_example for a batch.")
    dense, sparse = _parse_many([data], features)
    out = {k: convert_to_tensor(v[0]) for k, v in dense.items()}
    for key, rows in sparse.items():
        values = _array(rows[0], features[key].dtype)
        out[key] = SparseTensor(np.arange(len(values), dtype=np.int64).reshape(-1, 1),
                                values, [len(values)])
    return out


def parse_example(serialized, features, name=None, example_names=None):
    """Parses a batch of serialized Examples (``tf.io.parse_example``).

    Returns:
        A dict of name to a ``[batch, ...]`` Tensor (FixedLenFeature) or a 2-D SparseTensor
        of shape ``[batch, max_count]`` (VarLenFeature).
    """
    data = _as_bytes(serialized)
    records = [data] if isinstance(data, (bytes, bytearray)) else list(np.asarray(data).ravel())
    dense, sparse = _parse_many(records, features)
    out = {}
    for key, rows in dense.items():
        spec = features[key]
        out[key] = convert_to_tensor(np.stack(rows) if rows else
                                     _array([], spec.dtype).reshape((0,) + spec.shape))
    for key, rows in sparse.items():
        lengths = [len(r) for r in rows]
        idx = np.array([(b, j) for b, n in enumerate(lengths) for j in range(n)],
                       dtype=np.int64).reshape(-1, 2)
        values = _array([v for r in rows for v in r], features[key].dtype)
        out[key] = SparseTensor(idx, values, [len(rows), max(lengths, default=0)])
    return out


# -- serialize_tensor / parse_tensor -------------------------------------------------------------
def serialize_tensor(tensor, name=None):
    """A tensor as a serialized TensorProto, TF's format (``tf.io.serialize_tensor``).

    Example:
        >>> import eagerflow as ef
        >>> s = ef.io.serialize_tensor(ef.constant([1, 2]))
        >>> ef.io.parse_tensor(s, ef.int32).numpy().tolist()
        [1, 2]
    """
    t = convert_to_tensor(tensor)
    msg = example_pb2.TensorProto()
    msg.dtype = t.dtype.as_datatype_enum
    for dim in t.shape.as_list():
        msg.tensor_shape.dim.add().size = dim
    array = np.asarray(t._value) if t.dtype is d.string else np.asarray(t.numpy())
    if t.dtype is d.string:
        msg.string_val.extend(array.ravel().tolist())
    else:
        msg.tensor_content = np.ascontiguousarray(array).astype(
            array.dtype.newbyteorder("<")).tobytes()
    return convert_to_tensor(np.array(msg.SerializeToString(), dtype=object))


_VAL_FIELDS = {"float32": "float_val", "float64": "double_val", "int32": "int_val",
               "int16": "int_val", "int8": "int_val", "uint8": "int_val", "uint16": "int_val",
               "int64": "int64_val", "bool": "bool_val", "uint32": "uint32_val",
               "uint64": "uint64_val", "float16": "half_val", "bfloat16": "half_val"}


def parse_tensor(serialized, out_type, name=None):
    """The tensor of a serialized TensorProto (``tf.io.parse_tensor``).

    Raises:
        InvalidArgumentError: If the bytes do not hold a tensor of ``out_type``, or the
            declared shape does not match the stored values.
    """
    data = _as_bytes(serialized)
    out_type = d.as_dtype(out_type)
    msg = example_pb2.TensorProto()
    try:
        msg.ParseFromString(bytes(data))
    except DecodeError as exc:
        raise errors.InvalidArgumentError(
            None, "ParseTensor", "could not parse a serialized TensorProto: %s" % exc) from None
    if msg.dtype != out_type.as_datatype_enum:
        raise errors.InvalidArgumentError(
            None, "ParseTensor", "parse_tensor: the stored dtype code %d is not %s (%d)."
            % (msg.dtype, out_type.name, out_type.as_datatype_enum))
    shape = [dim.size for dim in msg.tensor_shape.dim]
    if any(s < 0 for s in shape):
        raise errors.InvalidArgumentError(
            None, "ParseTensor", "parse_tensor: a stored dimension is negative: %s." % shape)
    count = int(np.prod(shape, dtype=np.int64))
    if out_type is d.string:
        values = list(msg.string_val)
        if len(values) != count:
            raise errors.InvalidArgumentError(
                None, "ParseTensor", "parse_tensor: %d strings for shape %s." % (len(values),
                                                                                 shape))
        return convert_to_tensor(_array(values, d.string).reshape(shape))
    np_dtype = out_type.np_dtype.newbyteorder("<")
    if msg.tensor_content:
        if len(msg.tensor_content) != count * np_dtype.itemsize:
            raise errors.InvalidArgumentError(
                None, "ParseTensor", "parse_tensor: %d bytes of content for %s%s (%d needed)."
                % (len(msg.tensor_content), out_type.name, shape, count * np_dtype.itemsize))
        array = np.frombuffer(msg.tensor_content, np_dtype).astype(out_type.np_dtype)
    else:
        field = _VAL_FIELDS.get(out_type.name)
        vals = list(getattr(msg, field)) if field else []
        if out_type.name in ("float16", "bfloat16"):
            array = np.asarray(vals, np.uint16).view(out_type.np_dtype)
        else:
            array = np.asarray(vals, out_type.np_dtype)
        if array.size == 1 and count != 1:
            array = np.full(count, array[0], out_type.np_dtype)  # TF stores a splat once
        if array.size != count:
            raise errors.InvalidArgumentError(
                None, "ParseTensor", "parse_tensor: %d values for shape %s." % (array.size,
                                                                                shape))
    return convert_to_tensor(array.reshape(shape))
