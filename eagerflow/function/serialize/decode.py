"""Decoding: a ``SavedFunction`` message back to a Graph.

The message is untrusted input: every reference, name, size and attribute is checked, each
node's primitive is looked up in the op registry, and nothing from the file reaches an
import, generated code or eval.
"""

from __future__ import annotations

import collections
import collections.abc
import re

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.function import builtins
from eagerflow.function.graph import BUILTIN_OPS, Graph, Node
from eagerflow.function.serialize.codec import (
    _VARIABLE_OPS,
    FORMAT_VERSION,
    _data_loss,
    _decode_attr,
    _decode_aval,
    _decode_dtype,
    _decode_shape,
    _decode_tensor,
)
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor, convert_to_tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["proto_to_graph"]


_ops_loaded = False


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
            if nd.op == builtins.CONST and (
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
            if node.op != builtins.PLACEHOLDER or node.avals != (_decode_aval(spec),):
                raise _data_loss("input %r of %s does not match its %s node" % (
                    spec.name, where, node.op))
            graph.inputs.append(node)
        graph.outputs = [self._ref(by_name, text, where, "its outputs")
                         for text in signature.output]
        graph.library = {key: self.function(value) for key, value in signature.library.items()}

    def _prim(self, nd, attrs, avals, where):
        # Loads the modules that register builtin steps (fused regions, control flow) first:
        # a loaded graph must find their executor steps even when nothing traced here yet.
        steps = _builtin_steps()
        if nd.op in BUILTIN_OPS or nd.op in steps:
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
            if node.op == builtins.PLACEHOLDER and id(node) not in bound:
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
