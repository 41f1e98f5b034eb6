"""Encoding: a traced function (a ConcreteFunction or a bare Graph) to a ``SavedFunction``
message.

Nodes are written in execution order with inputs as ``producer:index`` strings, static
attributes as typed ``AttrValue``s, sub-graphs of control flow in a function library,
descriptors of the variables the function uses and the Python structure of its outputs.
Captured eager tensors become Const nodes, so a loaded graph needs no Python object of the
process that traced it. A variable's value is stored only on request.
"""

from __future__ import annotations

import collections
import collections.abc

__all__ = ["graph_to_proto"]


from eagerflow import errors, nest
from eagerflow.function import builtins
from eagerflow.function import py_function
from eagerflow.function.graph import Graph
from eagerflow.function.serialize.codec import (
    _INTERNAL_ATTRS,
    FORMAT_VERSION,
    MIN_CONSUMER,
    _encode_attr,
    _encode_shape,
    _encode_spec,
    _encode_tensor,
    _host,
    _pb,
    _Unencodable,
)
from eagerflow.tensor import Tensor


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
            nd.op = builtins.READ_VARIABLE
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
            nd.op = builtins.PLACEHOLDER
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
            nd.op = builtins.CONST
            _encode_tensor(_host(value._value), nd.value.tensor)
            return
        nd.op = builtins.PLACEHOLDER
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
