"""The loaded function: a decoded graph with the traced calling convention, runnable in a
fresh process with no Python source of the model.
"""

from __future__ import annotations

from eagerflow import errors, nest
from eagerflow.framework import context
from eagerflow.function import replay
from eagerflow.function.serialize.decode import (
    _check_structure,
    _decode_structure,
    _fill,
    proto_to_graph,
)
from eagerflow.function.serialize.wire import bytes_to_proto
from eagerflow.tensor import Tensor, convert_to_tensor, wrap
from eagerflow.tensor_shape import TensorShape, TensorSpec

__all__ = ["LoadedFunction", "load_function", "load"]


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
