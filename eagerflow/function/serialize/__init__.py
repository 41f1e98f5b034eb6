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

The package is the only user of protobuf, and imports it on first use: importing eagerflow
never loads it. One concept a module:

- :mod:`~eagerflow.function.serialize.codec`: how one shape, dtype, tensor or attribute
  value is stored, and the format constants;
- :mod:`~eagerflow.function.serialize.encode`: a traced function to a message;
- :mod:`~eagerflow.function.serialize.decode`: a message back to a Graph (untrusted input);
- :mod:`~eagerflow.function.serialize.wire`: messages as checked bytes and atomic files;
- :mod:`~eagerflow.function.serialize.loaded`: the loaded function and its runtime.

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

from eagerflow.function.serialize.codec import (
    FORMAT_VERSION,
    attr_to_proto,
    proto_to_attr,
)
from eagerflow.function.serialize.decode import proto_to_graph
from eagerflow.function.serialize.encode import graph_to_proto
from eagerflow.function.serialize.loaded import LoadedFunction, load, load_function
from eagerflow.function.serialize.wire import (
    bytes_to_proto,
    proto_to_bytes,
    save_graph,
    serialize_concrete_function,
)

__all__ = [
    "graph_to_proto", "proto_to_graph", "serialize_concrete_function", "load_function",
    "load", "save_graph", "proto_to_bytes", "bytes_to_proto", "attr_to_proto",
    "proto_to_attr", "LoadedFunction", "FORMAT_VERSION",
]
