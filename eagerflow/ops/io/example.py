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
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.sparse.sparse_tensor import SparseTensor
from eagerflow.tensor import Tensor, convert_to_tensor

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


# -- the ParseExample primitive ----------------------------------------------------------------
def _features_of(attrs):
    """The feature dict an op's attrs describe (defaults held as flat tuples)."""
    out = {}
    for key, shape, dtype, default in zip(attrs["dense_keys"], attrs["dense_shapes"],
                                          attrs["dense_dtypes"], attrs["dense_defaults"]):
        dt = d.as_dtype(dtype)
        value = None if default is None else _array(default, dt).reshape(shape)
        out[key] = FixedLenFeature(shape, dt, value)
    for key, dtype in zip(attrs["sparse_keys"], attrs["sparse_dtypes"]):
        out[key] = VarLenFeature(dtype)
    return out


def _records(serialized):
    array = np.asarray(serialized, dtype=object)
    if array.ndim > 1:
        raise errors.InvalidArgumentError(
            None, None, "serialized must be a scalar (one Example) or a vector of serialized "
            "Examples, got shape %s." % list(array.shape))
    records = [array[()]] if array.ndim == 0 else list(array)
    for r in records:
        if not isinstance(r, (bytes, bytearray)):
            raise errors.InvalidArgumentError(
                None, None, "serialized must hold bytes, got %s." % type(r).__name__)
    return array.ndim == 0, records


def _sparse_parts(rows, dtype, single):
    lengths = [len(r) for r in rows]
    values = _array([v for r in rows for v in r], dtype)
    if single:
        return (np.arange(len(values), dtype=np.int64).reshape(-1, 1), values,
                np.asarray([len(values)], np.int64))
    idx = np.array([(b, j) for b, n in enumerate(lengths) for j in range(n)],
                   dtype=np.int64).reshape(-1, 2)
    return idx, values, np.asarray([len(rows), max(lengths, default=0)], np.int64)


def _parse_kernel(xp):
    def kernel(serialized, **attrs):
        single, records = _records(serialized)
        features = _features_of(attrs)
        dense, sparse = _parse_many(records, features)
        out = []
        for key in attrs["dense_keys"]:
            spec, rows = features[key], dense[key]
            out.append(rows[0] if single else np.stack(rows) if rows else
                       _array([], spec.dtype).reshape((0,) + spec.shape))
        for key in attrs["sparse_keys"]:
            out.extend(_sparse_parts(sparse[key], features[key].dtype, single))
        return tuple(out)
    return kernel


def _parse_reference(serialized, **attrs):
    """Straight from the messages, with no bounds or kind checks (the sweep's inputs are
    well formed)."""
    array = np.asarray(serialized, dtype=object)
    records = [array[()]] if array.ndim == 0 else list(array)
    maps = [example_pb2.Example.FromString(r).features.feature for r in records]

    def values(fmap, key, dtype):
        return list(getattr(fmap[key], _KINDS[d.as_dtype(dtype)]).value) if key in fmap else None

    out = []
    for key, shape, dtype, default in zip(attrs["dense_keys"], attrs["dense_shapes"],
                                          attrs["dense_dtypes"], attrs["dense_defaults"]):
        rows = [_array(values(m, key, dtype) or default, d.as_dtype(dtype)).reshape(shape)
                for m in maps]
        out.append(rows[0] if array.ndim == 0 else np.stack(rows) if rows else
                   _array([], d.as_dtype(dtype)).reshape((0,) + tuple(shape)))
    for key, dtype in zip(attrs["sparse_keys"], attrs["sparse_dtypes"]):
        rows = [values(m, key, dtype) or [] for m in maps]
        out.extend(_sparse_parts(rows, d.as_dtype(dtype), array.ndim == 0))
    return tuple(out)


def _parse_shape(serialized, **attrs):
    rank = None if serialized.shape is None else len(serialized.shape)
    batch = () if rank == 0 else (serialized.shape[0] if rank == 1 else None,)
    out = [AbstractValue(batch + tuple(shape), d.as_dtype(dtype))
           for shape, dtype in zip(attrs["dense_shapes"], attrs["dense_dtypes"])]
    r = len(batch) + 1
    for dtype in attrs["sparse_dtypes"]:
        out += [AbstractValue((None, r), d.int64), AbstractValue((None,), d.as_dtype(dtype)),
                AbstractValue((r,), d.int64)]
    return tuple(out)


def _sample_records():
    def example(i):
        feature = {"x": Feature(float_list=FloatList(value=[0.5 * i, -i])),
                   "tags": Feature(int64_list=Int64List(value=list(range(i)))),
                   "name": Feature(bytes_list=BytesList(value=[b"r%d" % i] * (i % 2)))}
        if i != 1:
            feature["n"] = Feature(int64_list=Int64List(value=[i * 10]))
        return Example(features=Features(feature=feature)).SerializeToString()
    return [example(i) for i in range(3)]


def _parse_attrs(features):
    keys = sorted(features)
    dense = [k for k in keys if isinstance(features[k], FixedLenFeature)]
    sparse = [k for k in keys if isinstance(features[k], VarLenFeature)]
    defaults = []
    for k in dense:
        spec = features[k]
        if spec.default_value is None:
            defaults.append(None)
            continue
        value = np.asarray(convert_to_tensor(spec.default_value, dtype=spec.dtype)._value)
        try:
            value = np.broadcast_to(value, spec.shape)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, "ParseExample", "features[%r]: default_value of shape %s does not fit "
                "the feature's shape %s." % (k, list(value.shape), list(spec.shape))) from None
        defaults.append(tuple(value.ravel().tolist()))
    return {"dense_keys": tuple(dense),
            "dense_shapes": tuple(tuple(int(s) for s in features[k].shape) for k in dense),
            "dense_dtypes": tuple(features[k].dtype.name for k in dense),
            "dense_defaults": tuple(defaults), "sparse_keys": tuple(sparse),
            "sparse_dtypes": tuple(features[k].dtype.name for k in sparse)}


def _parse_samples(rng, dtype):
    records = np.empty(3, dtype=object)
    records[:] = _sample_records()
    features = {"x": FixedLenFeature([2], d.float32), "tags": VarLenFeature(d.int64),
                "name": VarLenFeature(d.string),
                "n": FixedLenFeature([1], d.int64, default_value=[-1])}
    attrs = _parse_attrs(features)
    scalar = np.empty((), dtype=object)
    scalar[()] = records[2]
    return [((records,), attrs), ((scalar,), attrs), ((records[:0],), attrs),
            ((records[1:],), _parse_attrs({"tags": VarLenFeature(d.int64)}))]


PARSE_EXAMPLE = registry.primitive(
    "ParseExample", _parse_kernel, dtypes=(d.string,), family="io",
    num_outputs=lambda a: len(a["dense_keys"]) + 3 * len(a["sparse_keys"]),
    shape_fn=_parse_shape, reference=_parse_reference, samples=_parse_samples,
    sweep_dtypes=(d.string,),
    bad_samples=lambda rng: [
        ((np.array(b"\xff\xff", dtype=object),),
         _parse_attrs({"x": FixedLenFeature([2], d.float32)}), errors.DataLossError),
        ((np.array(_sample_records()[1], dtype=object),),
         _parse_attrs({"n": FixedLenFeature([], d.int64)}), errors.InvalidArgumentError),
        ((np.array(_sample_records()[0], dtype=object),),
         _parse_attrs({"x": FixedLenFeature([3], d.float32)}), errors.InvalidArgumentError),
        ((np.array(_sample_records()[0], dtype=object),),
         _parse_attrs({"x": FixedLenFeature([2], d.int64)}), errors.InvalidArgumentError)])


def _parse(serialized, features):
    """Runs ParseExample; a dict in TF's order (VarLen features, then FixedLen, each by name)."""
    if not isinstance(features, dict) or not features:
        raise errors.InvalidArgumentError(
            None, "ParseExample", "features must be a non-empty dict of name to "
            "FixedLenFeature / VarLenFeature, got %r." % (features,))
    for key, spec in features.items():
        _check_spec(key, spec)
    attrs = _parse_attrs(features)
    outs = list(execute(PARSE_EXAMPLE, (serialized,), attrs))
    dense = dict(zip(attrs["dense_keys"], outs))
    out = {}
    rest = outs[len(attrs["dense_keys"]):]
    for i, key in enumerate(attrs["sparse_keys"]):
        out[key] = SparseTensor._from_parts(*rest[3 * i:3 * i + 3])
    out.update(dense)
    return out


def _string_tensor(serialized, op):
    t = serialized if isinstance(serialized, Tensor) else convert_to_tensor(serialized,
                                                                            dtype=d.string)
    if t.dtype is not d.string:
        raise errors.InvalidArgumentError(
            None, op, "serialized must be a string tensor of serialized tf.train.Examples, "
            "got %s." % t.dtype.name)
    return t


def parse_single_example(serialized, features, name=None, example_names=None):
    """Parses one serialized ``tf.train.Example`` (``tf.io.parse_single_example``).

    It traces (the ``ParseExample`` op), so it runs inside ``Dataset.map`` and ``@function``
    with TF's static shapes: a FixedLenFeature gives a tensor of its shape, a VarLenFeature
    a SparseTensor of shape ``[None]``.

    Args:
        serialized: A scalar string tensor or bytes.
        features: A dict of feature name to FixedLenFeature / VarLenFeature.
        name: Unused.
        example_names: Unused.

    Returns:
        A dict of name to Tensor (FixedLenFeature) or SparseTensor (VarLenFeature, 1-D).

    Raises:
        InvalidArgumentError: For a non-scalar input, a missing required feature, a feature
            of the wrong kind or size.
        DataLossError: For bytes that are not an Example.
    """
    t = _string_tensor(serialized, "ParseExample")
    if t.shape.rank not in (None, 0):
        raise errors.InvalidArgumentError(
            None, "ParseExample", "parse_single_example needs one serialized Example (a scalar "
            "string), got shape %s; use parse_example for a batch." % t.shape)
    return _parse(t, features)


def parse_example(serialized, features, name=None, example_names=None):
    """Parses a batch of serialized Examples (``tf.io.parse_example``).

    Returns:
        A dict of name to a ``[batch, ...]`` Tensor (FixedLenFeature) or a 2-D SparseTensor
        of shape ``[batch, max_count]`` (VarLenFeature). The batch dimension is static when
        the input's is (``batch(n, drop_remainder=True)``), as in TF.
    """
    t = _string_tensor(serialized, "ParseExample")
    if t.shape.rank == 0:
        from eagerflow.ops.array.reshape_ops import reshape

        t = reshape(t, [1])
    return _parse(t, features)


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
