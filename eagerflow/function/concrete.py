"""ConcreteFunction: one traced graph of a Python function, callable and inspectable.

Calling runs the compiled schedule on the arguments' arrays. Under a tape that watches an
input or a variable the graph reads, the call is recorded as one tape entry whose backward
pass is itself a graph: the gradient is traced once per concrete function (from the tape
that recorded the trace), split into a forward graph that also returns what the backward
needs, and a backward graph.

Several threads may call one concrete function at once. What is built lazily (the
executor, the gradient pair) is built under the function's lock by the first thread that
needs it; later calls read the built object without locking. Building the gradient appends
backward nodes to ``graph`` for a while, so everything that reads the whole graph while
building (the executor's optimizer passes) holds the same lock.
"""

from __future__ import annotations

import copy
import threading
import weakref

from eagerflow import errors, nest
from eagerflow.framework import context
from eagerflow.function.graph import Graph
from eagerflow.function.symbolic import SymbolicTensor
from eagerflow.tensor import Tensor, wrap

__all__ = ["ConcreteFunction"]

_state = context.state


class ConcreteFunction:
    """A traced graph with its calling convention.

    Attributes:
        graph: The traced Graph (``graph.pretty()`` prints it).
        structured_outputs: The Python structure of the outputs, with SymbolicTensors.
        structured_input_signature: ``(args, kwargs)`` of TensorSpecs, as in TF.
    """

    def __init__(self, graph, output_structure, flat_output_map, input_specs, arg_names,
                 tape=None, forward_node_count=None, function_name=None):
        self.graph = graph
        self.structured_outputs = output_structure
        self._flat_output_map = flat_output_map  # per output leaf: graph output index or None
        self._input_specs = input_specs
        self._arg_names = arg_names
        self._tape = tape  # the tape that recorded the trace (for gradients), or None
        self._forward_count = forward_node_count if forward_node_count is not None else len(
            graph.nodes)
        self._executor = None
        self._capture = None  # the capture decision and state (capture.py), with the executor
        self._fast_call = None  # built on the first plain call; False if none applies
        self._gradient_pair = None
        self._build_lock = threading.RLock()  # see the module docstring
        self.name = function_name or graph.name
        # The traced function's variable arguments (see ``_bound_to``), and for a trace
        # bound to other variables, the trace it was made from and the substitution.
        self._arg_variables = ()
        self._origin = None
        self._substitution = None
        self._bound = {}

    # -- inspection -------------------------------------------------------------------------
    @property
    def inputs(self):
        return [SymbolicTensor(self.graph, n, 0) for n in self.graph.inputs]

    @property
    def outputs(self):
        return [SymbolicTensor(self.graph, n, i) for n, i in self.graph.outputs]

    @property
    def variables(self):
        return tuple(self.graph.variables)

    @property
    def trainable_variables(self):
        return tuple(v for v in self.graph.variables if v.trainable)

    @property
    def captured_inputs(self):
        return [c for _, c in self.graph.captures]

    @property
    def structured_input_signature(self):
        return tuple(self._input_specs), {}

    def pretty_printed_signature(self):
        args = ", ".join("%s: %r" % (n.name, n.avals[0]) for n in self.graph.inputs)
        outs = ", ".join(repr(n.avals[i]) for n, i in self.graph.outputs)
        return "%s(%s) -> (%s)" % (self.name, args, outs)

    def __repr__(self):
        return "<ConcreteFunction %s>" % self.pretty_printed_signature()

    @property
    def executor(self):
        executor = self._executor
        if executor is None:
            from eagerflow.function import passes
            from eagerflow.function.multi_device import make_executor

            with self._build_lock:
                if self._executor is None:
                    from eagerflow.function import capture

                    # A graph placed on several devices runs partitioned; one device: Executor.
                    # A GPU graph that can be captured runs through its Capture instead.
                    self._executor, self._capture = capture.for_executor(
                        make_executor(passes.optimize(self.graph)))
                executor = self._executor
        return executor

    def experimental_capture_status(self):
        """Whether plain calls replay a captured CUDA graph, and why not.

        Compiles the graph if no call has yet. See ``eagerflow.function.capture``: a graph
        is captured when it runs on one GPU with fixed shapes and no node reads a value on
        the host; it records on its second call and replays from the third.

        Returns:
            A ``CaptureStatus(state, reasons)``: ``state`` one of ``"refused"``,
            ``"warming up"``, ``"recording next"``, ``"captured"``, ``"fell back"``,
            ``"off"``; ``reasons`` the sentences saying why it is not captured.

        Example:
            >>> import eagerflow as ef
            >>> f = ef.function(lambda x: ef.reduce_sum(x))
            >>> cf = f.get_concrete_function(ef.TensorSpec([None], ef.float32))
            >>> status = cf.experimental_capture_status()
            >>> status.state, "needs fixed shapes" in status.reasons[0]
            ('refused', True)
        """
        self.executor  # noqa: B018 - compiles, which makes the decision
        return self._capture.status()

    # -- variable arguments -----------------------------------------------------------------
    def _bound_to(self, variables):
        """This trace with its variable arguments replaced by ``variables`` (same specs).

        As TF, a function traced for a variable argument serves every variable of the same
        spec without tracing again (its Python runs once). The graphs here name variables
        by their position in ``graph.variables``; the bound function is a copy of this one
        whose graphs (sub-graphs included) list the call's variables instead, compiled on
        its first call. Bound copies are looked up per tuple of variable ids; each is owned
        by the variables it was made for (a reference cycle through the variable), so it
        lives exactly as long as they do and the cache here holds it weakly.
        """
        for a, b in zip(variables, self._arg_variables):
            if a is not b:
                break
        else:
            return self  # the traced variables (the keys matched, so the counts do)
        ids = tuple(map(id, variables))
        found = self._bound.get(ids)
        bound = found() if found is not None else None
        if bound is not None:
            for a, b in zip(variables, bound._arg_variables):
                if a is not b:
                    break
            else:
                return bound
        with self._build_lock:
            # Only the forward nodes: a gradient being built appends to the graph for a while.
            substitution = {}
            for old, new in zip(self._arg_variables, variables):
                if old is not new:
                    substitution[id(old)] = new
            graph = rebind_graph(self.graph, substitution, self._forward_count)
            bound = ConcreteFunction(graph, self.structured_outputs, self._flat_output_map,
                                     self._input_specs, self._arg_names,
                                     forward_node_count=self._forward_count,
                                     function_name=self.name)
            bound._arg_variables = tuple(variables)
            bound._origin = self
            bound._substitution = substitution
            if len(self._bound) >= 64:  # forget the entries of variables that are gone
                self._bound = {k: r for k, r in self._bound.items() if r() is not None}
            self._bound[ids] = weakref.ref(bound)
            for new in substitution.values():
                owned = new.__dict__.setdefault("_bound_functions", [])
                owned[:] = [b for b in owned if b._origin is not self or
                            not all(a is c for a, c in zip(b._arg_variables, variables))]
                owned.append(bound)
        return bound

    def _gradient(self):
        """The forward/backward pair (built on first use)."""
        pair = self._gradient_pair
        if pair is None:
            from eagerflow.function import gradient_split

            if self._origin is not None:
                # The original trace's gradient, its graphs bound to this call's variables.
                pair = gradient_split.rebind(self._origin._gradient(), self._substitution)
            with self._build_lock:
                if self._gradient_pair is None:
                    self._gradient_pair = pair if pair is not None else \
                        gradient_split.build(self)
                pair = self._gradient_pair
        return pair

    # -- calling ----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """Calls with tensors matching the traced signature (flattened in order)."""
        flat = []
        for value in nest.flatten((args, kwargs), expand_composites=True):
            if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
                flat.append(value)
            else:
                from eagerflow.tensor import convert_to_tensor

                flat.append(convert_to_tensor(value))
        if len(flat) != len(self.graph.inputs):
            raise errors.InvalidArgumentError(
                None, self.name, "%s takes %d tensor arguments, got %d." % (
                    self.pretty_printed_signature(), len(self.graph.inputs), len(flat)))
        flat = [f.read_value() if getattr(f, "_is_variable", False) else f for f in flat]
        for t, node in zip(flat, self.graph.inputs):
            aval = node.avals[0]
            if t.dtype is not aval.dtype or not aval_shape_ok(aval.shape, t._value.shape):
                raise errors.InvalidArgumentError(
                    None, self.name, "%s: argument %s is %s%s, expected %r." % (
                        self.name, node.name, t.dtype.name, list(t._value.shape), aval))
        return self._call_flat(flat)

    def _call_flat(self, flat_tensors):
        """Runs on flat eager tensors already matched to the signature by the caller."""
        if _state.tapes:
            watching = self._watching_tapes(flat_tensors)
            if watching:
                return self._pack(self._call_recorded(flat_tensors, nested=watching > 1))
        fast = self._fast_call
        if fast is None:  # first plain call: False when no closure applies
            fast = self._fast_call = self._make_fast_call(self.executor) or False
        if fast:
            return fast(flat_tensors)
        executor = self.executor
        arrays = executor.run([t._value for t in flat_tensors],
                              [c._value for _, c in self.graph.captures])
        if self._single_output:
            device = executor.output_devices[0]
            if device is None:
                device = flat_tensors[0]._device if flat_tensors else context.CPU0
            return wrap(arrays[0], device)
        return self._pack(self._wrap(arrays, flat_tensors))

    def _make_fast_call(self, executor):
        """The plain call of a one-output function on a known device, as one closure."""
        if not self._single_output or executor.output_devices[0] is None:
            return None
        device = executor.output_devices[0]
        run = executor.run
        captures = tuple(c for _, c in self.graph.captures)
        if not captures:
            def fast_call(flat_tensors):
                return wrap(run([t._value for t in flat_tensors], captures)[0], device)
        else:
            def fast_call(flat_tensors):
                return wrap(run([t._value for t in flat_tensors],
                                [c._value for c in captures])[0], device)
        return fast_call

    @property
    def _single_output(self):
        single = self.__dict__.get("_single")
        if single is None:
            single = (len(self._flat_output_map) == 1 and self._flat_output_map[0][0] == "out"
                      and not nest.is_nested(self.structured_outputs)
                      and not getattr(self.structured_outputs, "_nest_composite", False))
            self._single = single
        return single

    def _capture_values(self):
        return [captured._value for _, captured in self.graph.captures]

    def _wrap(self, arrays, flat_tensors, executor=None):
        executor = executor or self.executor
        out = []
        default = flat_tensors[0]._device if flat_tensors else context.CPU0
        for array, device in zip(arrays, executor.output_devices):
            out.append(wrap(array, device if device is not None else default))
        return out

    def _pack(self, outputs):
        packer = self.__dict__.get("_packer")
        if packer is None:
            packer = self._packer = _make_packer(self.structured_outputs, self._flat_output_map)
        return packer(outputs)

    # -- gradients --------------------------------------------------------------------------
    def _watching_tapes(self, flat_tensors):
        """How many recording tapes watch this call, counted up to 2 (two or more: a
        higher-order gradient)."""
        watching = 0
        for tape in _state.tapes:
            if tape._recording and self._watched_by(tape, flat_tensors):
                watching += 1
                if watching > 1:
                    break
        return watching

    def _watched_by(self, tape, flat_tensors):
        """Whether ``tape`` watches an argument or a variable this function reads."""
        for t in flat_tensors:
            if t._tid in tape._ids:
                return True
        variables = self.graph.variables
        if tape._watch_accessed_variables:
            for v in variables:
                if v.trainable:
                    return True
        for v in variables:
            if v._tid in tape._ids:
                return True
        return False

    def _interpret(self, flat_tensors):
        """Runs the traced graph op by op through dispatch (:mod:`replay`): its flat outputs,
        or None when the graph holds a node that cannot replay (control flow).

        Every recording tape then records each primitive, exactly as for the eager Python,
        so nested tapes get gradients of gradients through the call.
        """
        from eagerflow.function import replay

        # Only the forward nodes: another thread may be tracing the gradient, which appends
        # backward nodes to the graph for a while.
        nodes = self.graph.nodes[:self._forward_count]
        if not replay.can_replay(nodes):
            return None
        return replay.replay(self.graph, flat_tensors, nodes)

    def _call_recorded(self, flat_tensors, nested):
        from eagerflow.tape import _append_entry, _assign_id
        from eagerflow.tape_entry import Entry as _Entry
        from eagerflow.tape_entry import is_float as _is_float

        if nested:  # under nested tapes every primitive is recorded (see _interpret)
            result = self._interpret(flat_tensors)
            if result is not None:
                return result

        pair = self._gradient()
        arrays = pair.forward.run([t._value for t in flat_tensors], self._capture_values())
        n_out = len(self.graph.outputs)
        outputs = self._wrap(arrays[:n_out], flat_tensors, pair.forward)
        saved = arrays[n_out:]
        variables = list(pair.variables)
        for tape in _state.tapes:
            if tape._recording and tape._watch_accessed_variables:
                for v in variables:
                    if v.trainable:
                        tape._watch_variable(v)
        sources = list(flat_tensors) + variables
        float_outputs = pair.float_outputs

        def backward(cotangent):
            cots = cotangent if isinstance(cotangent, tuple) else (cotangent,)
            values = []
            for i in float_outputs:
                g = cots[i]
                values.append(g._value if g is not None else
                              outputs[i]._device.backend.zeros_like(outputs[i]._value))
            grads = pair.backward.run(values + list(saved), [])
            result = []
            for k, src in enumerate(sources):
                g = grads[k]
                device = src._device
                result.append(None if g is None else wrap(g, device))
            return tuple(result)

        entry = _Entry(
            None, tuple(s._tid for s in sources), tuple(s._value.shape for s in sources),
            tuple(_is_float(s._value.dtype) for s in sources), None, None, {}, (),
            tuple((o._value.shape, o._value.dtype, o._device) for o in outputs),
            backward=backward)
        entry.output_ids = tuple(_assign_id(o) for o in outputs)
        for tape in _state.tapes:
            if not tape._recording:
                continue
            if any(i and i in tape._ids for i in entry.input_ids):
                _append_entry(tape, entry)
        return outputs




def _make_packer(structure, output_map):
    """A function rebuilding ``structure`` from the flat outputs, built once per function.

    Lists, tuples, namedtuples and dicts are rebuilt directly (dict leaves come in sorted-key
    order, as ``nest`` flattens them); anything else falls back to ``nest``.
    """
    leaves = iter(output_map)

    def build(node):
        if isinstance(node, (list, tuple)) and not hasattr(node, "_fields"):
            parts = [build(c) for c in node]
            if isinstance(node, list):
                return lambda out: [p(out) for p in parts]
            return lambda out: tuple([p(out) for p in parts])
        if type(node) is dict:
            keys = sorted(node)
            parts = dict(zip(keys, [build(node[k]) for k in keys]))
            order = list(node)
            return lambda out: {k: parts[k](out) for k in order}
        if getattr(node, "_nest_composite", False):  # a PerReplica result
            parts = [build(c) for c in node._composite_components()]
            return lambda out, _n=node: _n._from_components([p(out) for p in parts])
        if nest.is_nested(node):
            raise _Fallback
        kind, payload = next(leaves)
        if kind == "out":
            return lambda out, _i=payload: out[_i]
        return lambda out, _v=payload: _v

    try:
        return build(structure)
    except _Fallback:
        def slow(outputs):
            flat = [outputs[p] if k == "out" else p for k, p in output_map]
            return nest.pack_sequence_as(structure, flat, expand_composites=True)
        return slow


class _Fallback(Exception):
    pass


def aval_shape_ok(expected, shape):
    if expected is None:
        return True
    return len(expected) == len(shape) and all(
        e is None or e == d for e, d in zip(expected, shape))


def rebind_graph(graph, substitution, node_count=None, _done=None):
    """A copy of ``graph`` whose variables (and its library's) are substituted.

    Nodes name variables by position in their graph's ``variables``, so the copy shares the
    nodes and only its lists differ: ``substitution`` maps ``id(old variable)`` to the new
    one. ``node_count`` keeps only the first nodes (a graph whose gradient is being built).
    """
    done = {} if _done is None else _done
    out = done.get(id(graph))
    if out is not None:
        return out
    out = done[id(graph)] = copy.copy(graph)
    out.nodes = list(graph.nodes[:node_count] if node_count is not None else graph.nodes)
    out.inputs = list(graph.inputs)
    out.outputs = list(graph.outputs)
    out.captures = list(graph.captures)
    out.variables = [substitution.get(id(v), v) for v in graph.variables]
    out._variable_index = {id(v): i for i, v in enumerate(out.variables)}
    out.library = {name: rebind_graph(sub, substitution, None, done)
                   if isinstance(sub, Graph) else sub for name, sub in graph.library.items()}
    return out


def empty_graph(name):
    return Graph(name)
