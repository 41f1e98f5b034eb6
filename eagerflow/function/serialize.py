"""Serialized graphs: traced functions to protobuf and back, runnable in a fresh process.

``graph_to_proto`` turns a traced function (a ConcreteFunction or a bare Graph) into a
``SavedFunction`` message (schema in ``graph.proto``): nodes in execution order with inputs
as ``producer:index`` strings, static attributes as typed ``AttrValue``s, sub-graphs of
control flow in a function library, descriptors of the variables the function uses and the
Python structure of its outputs. Captured eager tensors become Const nodes, so a loaded
graph needs no Python object of the process that traced it. A variable's value is stored
only on request (``embed_variables=True``); otherwise the loader supplies it.

``proto_to_graph`` rebuilds the Graph (each node's primitive looked up in the op registry)
and ``load_function`` wraps it in a :class:`LoadedFunction` with the traced calling
convention. Bytes on disk carry a format tag and a CRC-32, so truncated or corrupted data
raises ``DataLossError`` instead of running a damaged graph.

This is the only module that imports protobuf, and it does so on first use: importing
eagerflow never loads it.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import serialize
    >>> w = ef.Variable([[1.0], [2.0]])
    >>> f = ef.function(lambda x: ef.tanh(ef.matmul(x, w)))
    >>> cf = f.get_concrete_function(ef.TensorSpec([None, 2]))
    >>> data = serialize.serialize_concrete_function(cf, embed_variables=True)
    >>> loaded = serialize.load_function(data)
    >>> print("%.4f" % loaded(ef.constant([[0.5, 0.0]])).numpy()[0, 0])
    0.4621
"""

from __future__ import annotations

import collections
import collections.abc
import os
import re
import sys
import tempfile
import zlib

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors, nest
from eagerflow.framework import context
from eagerflow.function import py_function, replay
from eagerflow.function.graph import BUILTIN_OPS, Graph, Node
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor, wrap
from eagerflow.tensor_shape import TensorShape, TensorSpec

__all__ = [
    "graph_to_proto", "proto_to_graph", "serialize_concrete_function", "load_function",
    "load", "save_graph", "proto_to_bytes", "bytes_to_proto", "attr_to_proto",
    "proto_to_attr", "LoadedFunction", "FORMAT_VERSION",
]

FORMAT = "eagerflow.SavedFunction"
# Bump FORMAT_VERSION when the meaning of stored data changes; raise MIN_CONSUMER only when
# older readers would misread the new data.
FORMAT_VERSION = 1
MIN_CONSUMER = 1
# Attributes that describe how a graph was built, not what it computes: never serialized.
_INTERNAL_ATTRS = frozenset(("capture",))
_VARIABLE_OPS = frozenset(("ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
                           "AssignSubVariableOp"))
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_pb_module = None
_ops_loaded = False


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


# -- export ---------------------------------------------------------------------------------
class _Encoder:
    """Encodes a graph and everything it refers to (sub-graphs, variables, captures)."""

    def __init__(self, main, embed_captures):
        self.embed_captures = embed_captures
        self.names = {id(main): ""}  # id(graph) -> library name ("" for the main graph)
        self.used = set()
        self.pending = []
        self.variables = []
        self.variable_ids = {}
        self.external = 0
        self.node_names = {}

    def function_name(self, graph):
        """The library name of a sub-graph, queuing it for encoding on first sight."""
        name = self.names.get(id(graph))
        if name is None:
            base = name = graph.name or "function"
            k = 0
            while name in self.used:
                k += 1
                name = "%s_%d" % (base, k)
            self.used.add(name)
            self.names[id(graph)] = name
            self.pending.append(graph)
        return name

    def variable(self, var):
        index = self.variable_ids.get(id(var))
        if index is None:
            index = self.variable_ids[id(var)] = len(self.variables)
            self.variables.append(var)
        return index

    def names_of(self, graph):
        """Unique node names of ``graph`` (renaming any duplicate the IR let through)."""
        names = self.node_names.get(id(graph))
        if names is None:
            names, seen = {}, set()
            for node in graph.nodes:
                name, k = node.name, 0
                while name in seen:
                    k += 1
                    name = "%s_%d" % (node.name, k)
                seen.add(name)
                names[id(node)] = name
            self.node_names[id(graph)] = names
        return names

    def encode(self, graph, signature, node_list):
        names = self.names_of(graph)
        ref = lambda node, index: "%s:%d" % (names[id(node)], index)
        signature.name = graph.name
        local_vars = list(graph.variables)
        local_ids = {id(v): i for i, v in enumerate(local_vars)}
        captured = {id(node): value for node, value in graph.captures}
        for node in graph.nodes:
            nd = node_list.add()
            nd.name = names[id(node)]
            if id(node) in captured:
                self._capture(graph, node, captured[id(node)], nd, signature, local_vars,
                              local_ids)
            else:
                self._node(graph, node, nd, ref)
        for node in graph.inputs:
            _encode_spec(node.avals[0], signature.input.add(), names[id(node)])
        signature.output.extend(ref(node, index) for node, index in graph.outputs)
        signature.variable.extend(self.variable(v) for v in local_vars)
        for key, sub in graph.library.items():
            signature.library[key] = self.function_name(sub)

    def _node(self, graph, node, nd, ref):
        nd.op = node.op
        nd.device = node.device or ""
        nd.stateful = bool(node.stateful)
        if py_function.runs_python(node):
            raise errors.UnimplementedError(
                None, node.op, "Cannot serialize graph %s: node %s is a py_function or "
                "numpy_function, which runs Python code of this process, and a saved graph "
                "carries no Python. Write that part with eagerflow ops to save or export "
                "it." % (graph.name, node.name))
        nd.input.extend(ref(src, index) for src, index in node.inputs)
        nd.input.extend("^" + self.names_of(graph)[id(c)] for c in node.control_inputs)
        for key, value in node.attrs.items():
            if key in _INTERNAL_ATTRS:
                continue
            try:
                _encode_attr(value, nd.attr[key], self)
            except _Unencodable as exc:
                del nd.attr[key]
                if key.startswith("_"):
                    continue  # private bookkeeping of another pass: not part of the op
                raise errors.InvalidArgumentError(
                    None, node.op, "Cannot serialize graph %s: attribute %r of node %s (%s) "
                    "is %s, which has no AttrValue kind." % (graph.name, key, node.name,
                                                             node.op, exc)) from None
        for aval in node.avals:
            _encode_spec(aval, nd.output.add())
        if node.value is not None:
            try:
                _encode_attr(node.value, nd.value, self)
            except _Unencodable as exc:
                raise errors.InvalidArgumentError(
                    None, node.op, "Cannot serialize graph %s: node %s (%s) holds %s." % (
                        graph.name, node.name, node.op, exc)) from None
        if node.origin:
            filename, lineno, line = node.origin
            nd.origin.file, nd.origin.line, nd.origin.code = filename, int(lineno), line or ""

    def _capture(self, graph, node, value, nd, signature, local_vars, local_ids):
        aval = node.avals[0]
        nd.device = node.device or ""
        _encode_spec(aval, nd.output.add())
        if getattr(value, "_is_variable", False):
            # A captured variable is read when the function runs: a ReadVariableOp.
            index = local_ids.get(id(value))
            if index is None:
                index = local_ids[id(value)] = len(local_vars)
                local_vars.append(value)
            nd.op = "ReadVariableOp"
            nd.stateful = True
            nd.attr["variable"].i = index
            return
        from eagerflow.function.symbolic import SymbolicTensor

        if isinstance(value, SymbolicTensor):
            outer = self.names.get(id(value._graph))
            if outer is None:
                raise errors.InvalidArgumentError(
                    None, None, "Cannot serialize graph %s: it captures %s of graph %s, which "
                    "is not part of what is being serialized." % (
                        graph.name, value.name, value._graph.name))
            nd.op = "Placeholder"
            capture = signature.capture.add(node=nd.name)
            _encode_spec(aval, capture.spec)
            capture.outer.function = outer
            capture.outer.tensor = "%s:%d" % (self.names_of(value._graph)[id(value._node)],
                                              value._index)
            return
        if not isinstance(value, Tensor):
            raise errors.InvalidArgumentError(
                None, None, "Cannot serialize graph %s: capture %s is a %s, not a tensor or "
                "variable." % (graph.name, node.name, type(value).__name__))
        if self.embed_captures:
            nd.op = "Const"
            _encode_tensor(_host(value._value), nd.value.tensor)
            return
        nd.op = "Placeholder"
        capture = signature.capture.add(node=nd.name, external=self.external)
        _encode_spec(aval, capture.spec)
        self.external += 1


def graph_to_proto(graph, embed_captures=True, embed_variables=False):
    """Serializes a traced function into a ``SavedFunction`` message.

    Args:
        graph: A ConcreteFunction (its output structure is kept) or a Graph (its outputs
            come back as a list, or a single tensor when there is one).
        embed_captures: Store captured eager tensors as Const nodes. When False they stay
            placeholders whose values ``load_function(capture_values=...)`` supplies, in
            capture order.
        embed_variables: Store the current value of every variable the function uses.
            When False only the variables' descriptors (name, dtype, shape, trainable) are
            stored and the loader supplies the values.

    Returns:
        An ``eagerflow.SavedFunction`` protobuf message.

    Raises:
        InvalidArgumentError: If a node attribute, a Python output or a capture cannot be
            serialized (the message names the node).

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.function import serialize
        >>> f = ef.function(lambda x: ef.exp(x) * 2.0)
        >>> message = serialize.graph_to_proto(f.get_concrete_function(ef.TensorSpec([2])))
        >>> [node.op for node in message.graph.node]
        ['Placeholder', 'Exp', 'Const', 'Mul']
        >>> print(serialize.proto_to_graph(message).pretty())  # doctest: +ELLIPSIS
        graph <lambda>(x: float32[2]) {
          %exp = Exp(%x) : float32[2]
        ...
    """
    concrete = None
    if not isinstance(graph, Graph):
        if hasattr(graph, "get_concrete_function") and not hasattr(graph, "graph"):
            graph = graph.get_concrete_function()
        concrete, graph = graph, graph.graph
    pb = _pb()
    saved = pb.SavedFunction()
    saved.graph.versions.producer = FORMAT_VERSION
    saved.graph.versions.min_consumer = MIN_CONSUMER
    encoder = _Encoder(graph, embed_captures)
    encoder.encode(graph, saved.signature, saved.graph.node)
    while encoder.pending:
        sub = encoder.pending.pop(0)
        fdef = saved.graph.library.function.add()
        encoder.encode(sub, fdef.signature, fdef.node)
        fdef.signature.name = encoder.names[id(sub)]
    for var in encoder.variables:
        vdef = saved.variable.add(name=var.name, trainable=bool(var.trainable),
                                  device=var.device or "")
        vdef.dtype = var.dtype.as_datatype_enum
        _encode_shape(var.shape.dims, vdef.shape)
        if embed_variables:
            _encode_tensor(_host(var._value), vdef.initial_value)
    _encode_structure(concrete, graph, saved.output_structure)
    return saved


def _encode_structure(concrete, graph, msg):
    if concrete is None:
        if len(graph.outputs) == 1:
            msg.output = 0
        else:
            msg.list.SetInParent()
            for k in range(len(graph.outputs)):
                msg.list.item.add().output = k
        return
    leaves = iter(concrete._flat_output_map)

    def encode(value, out):
        if not nest.is_nested(value):
            kind, payload = next(leaves)
            if kind == "out":
                out.output = payload
                return
            try:
                _encode_attr(payload, out.constant)
            except _Unencodable as exc:
                raise errors.InvalidArgumentError(
                    None, None, "Cannot serialize function %s: it returns the Python value "
                    "%r (%s), which has no AttrValue kind." % (concrete.name, payload,
                                                              exc)) from None
            return
        if isinstance(value, collections.abc.Mapping):
            # Leaves come in nest's (sorted-key) order; entries keep the caller's order.
            entries = {}
            for key in nest._sorted_keys(value):
                entry = entries[key] = _pb().StructureProto.Mapping.Entry()
                _encode_attr(key, entry.key)
                encode(value[key], entry.value)
            out.dict.SetInParent()
            for key in value:
                out.dict.entry.add().CopyFrom(entries[key])
            return
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            seq = out.named_tuple
            seq.type_name = type(value).__name__
            seq.field.extend(value._fields)
        else:
            seq = out.tuple if isinstance(value, tuple) else out.list
        seq.SetInParent()
        for item in value:
            encode(item, seq.item.add())

    try:
        encode(concrete.structured_outputs, msg)
    except _Unencodable as exc:
        raise errors.InvalidArgumentError(
            None, None, "Cannot serialize function %s: its output structure holds %s, which "
            "has no AttrValue kind." % (concrete.name, exc)) from None


# -- bytes ----------------------------------------------------------------------------------
def proto_to_bytes(saved):
    """The file form of a SavedFunction: a format tag, the message and its CRC-32."""
    payload = saved.SerializeToString(deterministic=True)
    envelope = _pb().SavedFunctionFile(format=FORMAT, function=payload,
                                       crc32=zlib.crc32(payload) & 0xFFFFFFFF)
    return envelope.SerializeToString(deterministic=True)


def bytes_to_proto(data):
    """Parses and checks bytes written by :func:`proto_to_bytes`; returns the SavedFunction.

    Raises:
        DataLossError: If the bytes are truncated, corrupted or not a serialized function.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.function import serialize
        >>> data = serialize.serialize_concrete_function(
        ...     ef.function(lambda x: -x).get_concrete_function(ef.TensorSpec([])))
        >>> serialize.bytes_to_proto(data).signature.output[:]
        ['neg:0']
        >>> serialize.bytes_to_proto(data[:-3])
        Traceback (most recent call last):
        ...
        eagerflow.errors.DataLossError: Cannot load the serialized function: ...
    """
    pb = _pb()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("Expected the bytes of a serialized function, got %s"
                        % type(data).__name__)
    data = bytes(data)
    if not data:
        raise _data_loss("the data is empty")
    envelope = pb.SavedFunctionFile()
    try:
        envelope.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001 - DecodeError or the C parser's RuntimeError
        raise _data_loss("%d bytes do not parse as a serialized function (truncated or "
                         "corrupted?): %s" % (len(data), exc)) from None
    if envelope.format != FORMAT:
        raise _data_loss("the data is not a serialized eagerflow function (format tag %r, "
                         "expected %r)" % (envelope.format[:40], FORMAT))
    crc = zlib.crc32(envelope.function) & 0xFFFFFFFF
    if crc != envelope.crc32:
        raise _data_loss("checksum mismatch (stored %08x, computed %08x over %d bytes): the "
                         "data is truncated or corrupted" % (envelope.crc32, crc,
                                                             len(envelope.function)))
    saved = pb.SavedFunction()
    try:
        saved.ParseFromString(envelope.function)
    except Exception as exc:  # noqa: BLE001 - see above
        raise _data_loss("the function does not parse: %s" % exc) from None
    return saved


def serialize_concrete_function(concrete, embed_captures=True, embed_variables=False):
    """The bytes of a traced function (see :func:`graph_to_proto` for the arguments)."""
    return proto_to_bytes(graph_to_proto(concrete, embed_captures, embed_variables))


def save_graph(path, function, embed_captures=True, embed_variables=False):
    """Writes a traced function to ``path`` atomically.

    The bytes go to a temporary file in the same directory, are flushed to disk, and the
    file is renamed over ``path``: a reader sees the old file or the complete new one,
    never a partial write.

    Args:
        path: The file to write.
        function: A ConcreteFunction, a Graph, a SavedFunction message or its bytes.
        embed_captures: See :func:`graph_to_proto`.
        embed_variables: See :func:`graph_to_proto`.

    Returns:
        The path written.

    Example:
        >>> import os, tempfile, eagerflow as ef
        >>> from eagerflow.function import serialize
        >>> f = ef.function(lambda x: ef.reduce_sum(x * x))
        >>> path = os.path.join(tempfile.mkdtemp(), "square_sum.efg")
        >>> _ = serialize.save_graph(path, f.get_concrete_function(ef.TensorSpec([None])))
        >>> float(serialize.load(path)(ef.constant([1.0, 2.0, 3.0])))
        14.0
    """
    if isinstance(function, (bytes, bytearray)):
        data = bytes(function)
    elif hasattr(function, "SerializeToString"):
        data = proto_to_bytes(function)
    else:
        data = serialize_concrete_function(function, embed_captures, embed_variables)
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable; not every platform can open a directory
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return path
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
    return path


# -- import ---------------------------------------------------------------------------------
class _Decoder:
    """Rebuilds the Graphs of a SavedFunction."""

    def __init__(self, saved, variable_values, capture_values, clear_devices):
        self.saved = saved
        self.variable_values = dict(variable_values or {})
        self.capture_values = capture_values
        self.clear_devices = clear_devices
        self.graphs = {}
        self.nodes = {}  # library name -> {node name: Node}

    def function(self, name):
        graph = self.graphs.get(name)
        if graph is None:
            raise _data_loss("a node refers to the function %r, which is not in the library"
                             % name)
        return graph

    def decode(self):
        saved = self.saved
        versions = saved.graph.versions
        if versions.producer <= 0:
            raise _data_loss("the message has no format version (not a SavedFunction, or "
                             "truncated)")
        if versions.min_consumer > FORMAT_VERSION:
            raise errors.UnimplementedError(
                None, None, "The serialized function needs format version %d or newer; this "
                "eagerflow reads version %d. Upgrade eagerflow to load it."
                % (versions.min_consumer, FORMAT_VERSION))
        _load_ops()
        functions = [("", saved.signature, saved.graph.node)]
        functions += [(f.signature.name, f.signature, f.node)
                      for f in saved.graph.library.function]
        for name, signature, _ in functions:
            if name in self.graphs:
                raise _data_loss("the library defines the function %r twice" % name)
            self.graphs[name] = Graph(signature.name or "function")
        for name, signature, node_defs in functions:
            self._nodes(name, signature, node_defs)
        for name, signature, _ in functions:
            self._captures(name, signature)
        # Variables last: nothing is created for data that fails to load.
        variables = self._variables()
        for name, signature, _ in functions:
            graph = self.graphs[name]
            graph.variables = [variables[i] for i in signature.variable]
            graph._variable_index = {id(v): i for i, v in enumerate(graph.variables)}
        from eagerflow.function import graph_validation

        graph_validation.validate_graphs(
            self.graphs, {name: graph.variables for name, graph in self.graphs.items()})
        return self.graphs[""]

    def _variables(self):
        out = []
        missing = []
        for k, vdef in enumerate(self.saved.variable):
            supplied = self.variable_values.get(k)
            for key in (vdef.name, vdef.name[:-2] if vdef.name.endswith(":0") else None):
                if supplied is None and key:
                    supplied = self.variable_values.get(key)
            if supplied is None and vdef.HasField("initial_value"):
                supplied = _decode_tensor(vdef.initial_value)
            if supplied is None:
                missing.append("%d (%s)" % (k, vdef.name))
                out.append(None)
                continue
            out.append(self._variable(k, vdef, supplied))
        if missing:
            raise errors.FailedPreconditionError(
                None, None, "The serialized function uses variables whose values were not "
                "stored: %s. Pass variable_values={index or name: value} to the loader, or "
                "export with embed_variables=True." % ", ".join(missing))
        return out

    def _variable(self, k, vdef, value):
        from eagerflow.variables import Variable

        dtype = _decode_dtype(vdef.dtype)
        shape = TensorShape(_decode_shape(vdef.shape))
        if getattr(value, "_is_variable", False):
            if value.dtype is not dtype or not shape.is_compatible_with(value.shape):
                raise errors.InvalidArgumentError(
                    None, None, "Variable %d (%s) is %s%s in the serialized function; the "
                    "variable supplied is %s%s." % (k, vdef.name, dtype.name, shape,
                                                    value.dtype.name, value.shape))
            return value
        tensor = value if isinstance(value, Tensor) else convert_to_tensor(
            value, dtype=dtype if not isinstance(value, np.ndarray) else None)
        if tensor.dtype is not dtype or not shape.is_compatible_with(tensor.shape):
            raise errors.InvalidArgumentError(
                None, None, "Variable %d (%s) is %s%s in the serialized function; the value "
                "supplied is %s%s." % (k, vdef.name, dtype.name, shape, tensor.dtype.name,
                                       list(tensor.shape)))
        base = vdef.name[:-2] if vdef.name.endswith(":0") else vdef.name
        with _device_scope(vdef.device if not self.clear_devices else ""):
            return Variable(tensor, trainable=vdef.trainable, name=base or None,
                            shape=shape)

    def _nodes(self, fname, signature, node_defs):
        graph = self.graphs[fname]
        where = "function %r" % (signature.name or fname)
        by_name = {}
        self.nodes[fname] = by_name
        n_variables = len(self.saved.variable)
        for index in signature.variable:
            if not 0 <= index < n_variables:
                raise _data_loss("%s uses variable %d of %d" % (where, index, n_variables))
        n_local = len(signature.variable)
        for nd in node_defs:
            if not nd.name or nd.name in by_name:
                raise _data_loss("%s has %s node name %r" % (
                    where, "an empty" if not nd.name else "a duplicate", nd.name))
            inputs, controls = [], []
            for text in nd.input:
                if text.startswith("^"):
                    controls.append(self._lookup(by_name, text[1:], where, nd.name))
                else:
                    inputs.append(self._ref(by_name, text, where, nd.name))
            attrs = {key: _decode_attr(value, self) for key, value in nd.attr.items()}
            avals = tuple(_decode_aval(o) for o in nd.output)
            prim = self._prim(nd, attrs, avals, where)
            value = _decode_attr(nd.value, self) if nd.HasField("value") else None
            if nd.op == "Const" and (
                    not isinstance(value, np.ndarray) or len(avals) != 1
                    or avals[0] != AbstractValue(value.shape, dtypes_lib.from_numpy(value.dtype))):
                raise _data_loss("Const node %r in %s has no array value of its type" % (
                    nd.name, where))
            if nd.op in _VARIABLE_OPS and not 0 <= attrs.get("variable", -1) < n_local:
                raise _data_loss("node %r in %s refers to variable %r of %d" % (
                    nd.name, where, attrs.get("variable"), n_local))
            node = Node(next(graph._counter), nd.name, nd.op, inputs, attrs,
                        "" if self.clear_devices else nd.device, avals, prim=prim,
                        value=value, stateful=nd.stateful)
            node.control_inputs = controls
            if nd.HasField("origin"):
                node.origin = (nd.origin.file, nd.origin.line, nd.origin.code)
            graph.nodes.append(node)
            by_name[nd.name] = node
            _reserve_name(graph, nd.name)
        graph.inputs = []
        for spec in signature.input:
            node = self._lookup(by_name, spec.name, where, "its signature")
            if node.op != "Placeholder" or node.avals != (_decode_aval(spec),):
                raise _data_loss("input %r of %s does not match its %s node" % (
                    spec.name, where, node.op))
            graph.inputs.append(node)
        graph.outputs = [self._ref(by_name, text, where, "its outputs")
                         for text in signature.output]
        graph.library = {key: self.function(value) for key, value in signature.library.items()}

    def _prim(self, nd, attrs, avals, where):
        if nd.op in BUILTIN_OPS or nd.op in _builtin_steps():
            return None
        from eagerflow.ops import registry

        try:
            prim = registry.get(nd.op)
        except errors.NotFoundError as exc:
            raise errors.NotFoundError(
                None, nd.op, "Cannot load %s: node %r uses the op %r, which is not registered "
                "in this process (%s). Import the module that defines it before loading."
                % (where, nd.name, nd.op, exc.message)) from None
        try:
            expected = prim.outputs_count(attrs)
        except Exception:  # noqa: BLE001 - attrs that a count rule cannot read
            expected = len(avals)
        if expected != len(avals):
            raise _data_loss("node %r (%s) in %s lists %d outputs; the op has %d" % (
                nd.name, nd.op, where, len(avals), expected))
        return prim

    def _captures(self, fname, signature):
        from eagerflow.function.symbolic import SymbolicTensor

        graph = self.graphs[fname]
        by_name = self.nodes[fname]
        where = "function %r" % (signature.name or fname)
        graph.captures = []
        bound = {id(n) for n in graph.inputs}
        for capture in signature.capture:
            node = self._lookup(by_name, capture.node, where, "a capture")
            source = capture.WhichOneof("source")
            if source == "outer":
                outer = self.function(capture.outer.function)
                src, index = self._ref(self.nodes[capture.outer.function],
                                       capture.outer.tensor, where, node.name)
                value = SymbolicTensor(outer, src, index)
            elif source == "external":
                value = self._external(capture, node, where)
            else:
                raise _data_loss("capture %r of %s has no source" % (capture.node, where))
            node.attrs = {"capture": True}
            node.value = value
            graph.captures.append((node, value))
            bound.add(id(node))
        for node in graph.nodes:
            if node.op == "Placeholder" and id(node) not in bound:
                raise _data_loss("placeholder %r of %s is neither an argument nor a capture"
                                 % (node.name, where))

    def _external(self, capture, node, where):
        values = self.capture_values
        k = capture.external
        if values is None or k >= len(values):
            raise errors.FailedPreconditionError(
                None, None, "%s captures external value %d (%s), which was not stored; pass "
                "capture_values=[...] to the loader, or export with embed_captures=True."
                % (where, k, node.name))
        aval = node.avals[0]
        value = values[k]
        tensor = value if isinstance(value, Tensor) else convert_to_tensor(value, aval.dtype)
        if tensor.dtype is not aval.dtype or not TensorShape(aval.shape).is_compatible_with(
                tensor.shape):
            raise errors.InvalidArgumentError(
                None, None, "capture_values[%d] is %s%s; %s captured %r." % (
                    k, tensor.dtype.name, list(tensor.shape), where, aval))
        return tensor

    @staticmethod
    def _lookup(by_name, name, where, user):
        node = by_name.get(name)
        if node is None:
            raise _data_loss("%s in %s refers to %r, which is not an earlier node" % (
                user, where, name))
        return node

    def _ref(self, by_name, text, where, user):
        name, sep, index = text.rpartition(":")
        if not sep:
            name, index = text, "0"
        try:
            index = int(index)
        except ValueError:
            raise _data_loss("bad tensor reference %r in %s" % (text, where)) from None
        node = self._lookup(by_name, name, where, user)
        if not 0 <= index < node.num_outputs:
            raise _data_loss("%s in %s uses output %d of %r, which has %d" % (
                user, where, index, name, node.num_outputs))
        return node, index


def _load_ops():
    """Imports every op family once, so the registry can resolve any stored op."""
    global _ops_loaded
    if not _ops_loaded:
        from eagerflow.ops import load_all

        load_all()
        _ops_loaded = True


def _builtin_steps():
    from eagerflow.function import control_flow_exec, passes  # noqa: F401 - register steps
    from eagerflow.function.executor import BUILTIN_STEPS

    return BUILTIN_STEPS


def _reserve_name(graph, name):
    """Keeps names the graph generates later from colliding with loaded ones."""
    names = graph._names
    match = re.fullmatch(r"(.*)_(\d+)", name)
    if match:
        base, n = match.group(1), int(match.group(2))
        names[base] = max(names.get(base, 0), n + 1)
    names[name] = max(names.get(name, 0), 1)


class _device_scope:
    """A device scope for a stored device string ("" or an unusable one: no scope)."""

    def __init__(self, name):
        self.name = name
        self.scope = None

    def __enter__(self):
        if self.name:
            from eagerflow.framework.device_scope import device

            try:
                self.scope = device(self.name)
                self.scope.__enter__()
            except errors.OpError:
                self.scope = None

    def __exit__(self, *exc):
        if self.scope is not None:
            self.scope.__exit__(*exc)
        return False


def proto_to_graph(saved, variable_values=None, capture_values=None, clear_devices=False):
    """Rebuilds the Graph of a ``SavedFunction`` message.

    Args:
        saved: A SavedFunction message (from :func:`graph_to_proto` or
            :func:`bytes_to_proto`).
        variable_values: ``{index or name: value}`` for the stored variables; a value may
            be an array, a tensor or an existing Variable (used as is, shared). Embedded
            values are used for variables not given here.
        capture_values: Values of captures exported with ``embed_captures=False``, in
            capture order.
        clear_devices: Drop the stored device of every node and variable.

    Returns:
        The Graph. Its variables are new Variables (or the ones supplied).

    Raises:
        NotFoundError: If a node's op is not registered (the message names it).
        DataLossError: If the message is inconsistent (dangling references, bad tensors).
        FailedPreconditionError: If a variable or capture value is missing.
    """
    return _Decoder(saved, variable_values, capture_values, clear_devices).decode()


def _decode_structure(msg):
    kind = msg.WhichOneof("kind")
    if kind == "output":
        return _Output(msg.output)
    if kind == "constant":
        return _Constant(_decode_attr(msg.constant))
    if kind in ("list", "tuple"):
        items = [_decode_structure(m) for m in getattr(msg, kind).item]
        return items if kind == "list" else tuple(items)
    if kind == "named_tuple":
        seq = msg.named_tuple
        try:
            cls = collections.namedtuple(seq.type_name, list(seq.field))
        except ValueError as exc:
            raise _data_loss("bad named tuple %r: %s" % (seq.type_name, exc)) from None
        return cls(*[_decode_structure(m) for m in seq.item])
    if kind == "dict":
        return {_decode_attr(e.key): _decode_structure(e.value) for e in msg.dict.entry}
    raise _data_loss("the output structure is missing")


class _Output:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class _Constant:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _fill(structure, outputs):
    cls = structure.__class__
    if cls is _Output:
        return outputs[structure.index]
    if cls is _Constant:
        return structure.value
    if cls is list:
        return [_fill(s, outputs) for s in structure]
    if cls is dict:
        return {k: _fill(s, outputs) for k, s in structure.items()}
    if cls is tuple:
        return tuple(_fill(s, outputs) for s in structure)
    return cls(*[_fill(s, outputs) for s in structure])  # a named tuple


def _check_structure(structure, n_outputs):
    cls = structure.__class__
    if cls is _Output:
        if not 0 <= structure.index < n_outputs:
            raise _data_loss("the output structure refers to output %d of %d"
                             % (structure.index, n_outputs))
    elif cls is dict:
        for s in structure.values():
            _check_structure(s, n_outputs)
    elif cls is not _Constant:
        for s in structure:
            _check_structure(s, n_outputs)


# -- the loaded function --------------------------------------------------------------------
class LoadedFunction:
    """A deserialized function, called like the ConcreteFunction it was saved from.

    Positional and keyword tensor arguments are flattened in order and must match the
    stored signature; the outputs come back in the traced structure. Variables are the
    loaded ones (``.variables``), so assignments in the graph change them. Called eagerly
    with no tape watching, it runs the graph's compiled schedule; inside a trace, or when a
    tape is recording, it replays the nodes through the op dispatch, so the call is inlined
    into the enclosing graph or differentiated like eager code. Graphs with functional
    control flow are not replayed yet: under a tape they run as one op without a gradient,
    and inside a trace they raise UnimplementedError.

    Attributes:
        graph: The rebuilt Graph.
        name: The function's name.
    """

    def __init__(self, graph, structure, name=None):
        self.graph = graph
        self.name = name or graph.name
        self._structure = structure
        self._executor = None
        _check_structure(structure, len(graph.outputs))

    @property
    def variables(self):
        return tuple(self.graph.variables)

    @property
    def trainable_variables(self):
        return tuple(v for v in self.graph.variables if v.trainable)

    @property
    def structured_input_signature(self):
        specs = tuple(TensorSpec(TensorShape(n.avals[0].shape), n.avals[0].dtype, n.name)
                      for n in self.graph.inputs)
        return specs, {}

    @property
    def executor(self):
        if self._executor is None:
            from eagerflow.function import passes
            from eagerflow.function.executor import Executor

            self._executor = Executor(passes.optimize(self.graph))
        return self._executor

    def pretty_printed_signature(self):
        args = ", ".join("%s: %r" % (n.name, n.avals[0]) for n in self.graph.inputs)
        outs = ", ".join(repr(n.avals[i]) for n, i in self.graph.outputs)
        return "%s(%s) -> (%s)" % (self.name, args, outs)

    def __repr__(self):
        return "<LoadedFunction %s>" % self.pretty_printed_signature()

    def __call__(self, *args, **kwargs):
        flat = []
        for value in nest.flatten((args, kwargs)):
            if getattr(value, "_is_variable", False):
                value = value.read_value()
            flat.append(value if isinstance(value, Tensor) else convert_to_tensor(value))
        inputs = self.graph.inputs
        if len(flat) != len(inputs):
            raise errors.InvalidArgumentError(
                None, self.name, "%s takes %d tensor arguments, got %d." % (
                    self.pretty_printed_signature(), len(inputs), len(flat)))
        state = context.state
        for t, node in zip(flat, inputs):
            aval = node.avals[0]
            if t.dtype is not aval.dtype or not TensorShape(aval.shape).is_compatible_with(
                    t.shape):
                raise errors.InvalidArgumentError(
                    None, self.name, "%s: argument %s is %s%s, expected %r." % (
                        self.name, node.name, t.dtype.name, list(t.shape), aval))
        if state.trace is not None or (state.tapes and self._replayable and self._taped(flat)):
            outputs = replay.replay(self.graph, flat)
        else:
            executor = self.executor
            arrays = executor.run([t._value for t in flat],
                                  [c._value for _, c in self.graph.captures])
            default = flat[0]._device if flat else context.CPU0
            outputs = [wrap(a, d if d is not None else default)
                       for a, d in zip(arrays, executor.output_devices)]
        return _fill(self._structure, outputs)


    @property
    def _replayable(self):
        """False for graphs with builtins the replay cannot run (control flow): a tape then
        sees the call as one op without a gradient."""
        found = self.__dict__.get("_can_replay")
        if found is None:
            found = self._can_replay = replay.can_replay(self.graph.nodes)
        return found

    def _taped(self, flat):
        """True when a recording tape watches an argument or a variable the graph uses."""
        for tape in context.state.tapes:
            if not tape._recording:
                continue
            if any(t._tid and t._tid in tape._ids for t in flat):
                return True
            for v in self.graph.variables:
                if (tape._watch_accessed_variables and v.trainable) or v._tid in tape._ids:
                    return True
        return False


def load_function(data, variable_values=None, capture_values=None, clear_devices=False):
    """Loads a function serialized by :func:`serialize_concrete_function`.

    Only eagerflow is needed: no Python source of the model. See :func:`proto_to_graph`
    for the keyword arguments.

    Args:
        data: The bytes, or a SavedFunction message.

    Returns:
        A :class:`LoadedFunction`.

    Raises:
        DataLossError: For truncated, corrupted or inconsistent data.
        NotFoundError: If a node's op is not registered.
        FailedPreconditionError: If a variable's value is neither stored nor supplied.
    """
    saved = data if hasattr(data, "SerializeToString") else bytes_to_proto(data)
    graph = proto_to_graph(saved, variable_values, capture_values, clear_devices)
    structure = _decode_structure(saved.output_structure)
    return LoadedFunction(graph, structure)


def load(source, variable_values=None, capture_values=None, clear_devices=False):
    """Loads a function from a file written by :func:`save_graph`, or from its bytes.

    Args:
        source: A path (str or os.PathLike) or bytes.
        variable_values: ``{index or name: value}`` for variables whose values were not
            embedded (or to replace embedded ones).
        capture_values: See :func:`proto_to_graph`.
        clear_devices: See :func:`proto_to_graph`.

    Returns:
        A :class:`LoadedFunction`.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        from eagerflow.io import untrusted

        data = untrusted.read_regular(source)
    return load_function(data, variable_values, capture_values, clear_devices)
