"""Gradients of a traced function: trace the backward pass once, then split the graph.

A function is traced with a persistent tape watching its float inputs (and the variables it
reads). The first time a call must be differentiated, that tape's ``gradient`` runs under
the same tracer, with one placeholder per output cotangent: the gradient rules append the
backward nodes to the graph. The graph is then cut in two: the forward graph returns its
outputs plus every forward value the backward nodes read ("saved" values), and the backward
graph takes the cotangents and the saved values and returns one gradient per input and
variable.
"""

from __future__ import annotations

import itertools

from eagerflow.function import builtins
from eagerflow.function.graph import Graph, Node
from eagerflow.function.symbolic import SymbolicTensor
from eagerflow.function.tracer import tracing

__all__ = ["build", "GradientPair"]


class GradientPair:
    """Forward and backward executors of one concrete function."""

    def __init__(self, forward, backward, variables, float_outputs, graphs=None):
        self.forward = forward
        self.backward = backward
        self.variables = variables
        self.float_outputs = float_outputs
        self.graphs = graphs  # the forward and backward graphs before optimization


def rebind(pair, substitution):
    """``pair`` with its graphs' variables substituted (see ``ConcreteFunction._bound_to``):
    the same backward pass, nothing traced again, compiled for the new variables."""
    from eagerflow.function.concrete import rebind_graph
    from eagerflow.function.multi_device import make_executor
    from eagerflow.function.passes import optimize

    fwd, bwd = (rebind_graph(g, substitution) for g in pair.graphs)
    return GradientPair(make_executor(optimize(fwd)),
                        _BackwardRunner(make_executor(optimize(bwd)), pair.backward.grad_slots),
                        [substitution.get(id(v), v) for v in pair.variables],
                        pair.float_outputs, (fwd, bwd))


def build(concrete):
    """Traces and splits the gradient of ``concrete``; returns a GradientPair."""
    graph = concrete.graph
    tape = concrete._tape
    tracer = concrete._tracer
    forward_count = concrete._forward_count
    outputs = [SymbolicTensor(graph, n, i) for n, i in graph.outputs]
    float_outputs = [k for k, o in enumerate(outputs) if o.dtype.is_floating
                     or o.dtype.is_complex]
    inputs = [SymbolicTensor(graph, n, 0) for n in graph.inputs]
    # Re-read the ids the tape gave the traced placeholders: SymbolicTensor objects are
    # recreated here, so take the ids from the recorded inputs kept on the concrete function.
    for t, tid in zip(inputs, concrete._input_ids):
        t._tid = tid
    for t, o in zip(outputs, concrete._output_ids):
        t._tid = o
    variables = list(tape.watched_variables()) if tape is not None else []
    cot_nodes = [graph.add_node(builtins.PLACEHOLDER, (), {}, (outputs[k].aval,),
                                name="cotangent") for k in float_outputs]
    cots = [SymbolicTensor(graph, n, 0) for n in cot_nodes]
    with tracing(tracer):
        if tape is not None and float_outputs:
            grads = tape.gradient([outputs[k] for k in float_outputs], inputs + variables,
                                  output_gradients=cots)
        else:
            grads = [None] * (len(inputs) + len(variables))
    forward_nodes = graph.nodes[:forward_count]
    backward_nodes = [n for n in graph.nodes[forward_count:] if n not in cot_nodes]
    forward_ids = {n.id for n in forward_nodes}

    saved = []
    saved_index = {}
    for node in backward_nodes:
        for src, idx in node.inputs:
            if src.id in forward_ids and (src.id, idx) not in saved_index:
                saved_index[(src.id, idx)] = len(saved)
                saved.append((src, idx))
    for g in grads:
        if g is not None and g._node.id in forward_ids and (g._node.id, g._index) not in \
                saved_index:
            saved_index[(g._node.id, g._index)] = len(saved)
            saved.append((g._node, g._index))

    fwd = Graph(graph.name + "_forward")
    fwd.inputs = list(graph.inputs)
    fwd.captures = list(graph.captures)
    fwd.nodes = list(forward_nodes)
    fwd.outputs = list(graph.outputs) + saved
    fwd.variables = graph.variables
    fwd.library = graph.library

    bwd = Graph(graph.name + "_backward")
    # Copied nodes keep their ids (slots are keyed by id): number the new placeholders after.
    bwd._counter = itertools.count(max((n.id for n in graph.nodes), default=0) + 1)
    bwd.variables = graph.variables
    bwd.library = graph.library
    remap = {}
    for node in cot_nodes:
        copy = bwd.add_placeholder(node.avals[0], "cotangent")
        remap[(node.id, 0)] = (copy, 0)
    for src, idx in saved:
        copy = bwd.add_placeholder(src.avals[idx], "saved_" + src.name)
        remap[(src.id, idx)] = (copy, 0)
    for node in backward_nodes:
        copy = Node(node.id, node.name, node.op,
                    [remap[(s.id, i)] for s, i in node.inputs], node.attrs, node.device,
                    node.avals, prim=node.prim, value=node.value, stateful=node.stateful)
        copy.origin = node.origin
        bwd.nodes.append(copy)
        for i in range(node.num_outputs):
            remap[(node.id, i)] = (copy, i)
    grad_slots = []
    for g in grads:
        if g is None:
            grad_slots.append(None)
        else:
            grad_slots.append(len(bwd.outputs))
            bwd.outputs.append(remap[(g._node.id, g._index)])
    # Nodes appended by the gradient trace are not part of the function's own graph.
    del graph.nodes[forward_count:]
    from eagerflow.function.passes import optimize

    from eagerflow.function.multi_device import make_executor

    # Placed and partitioned like any graph (several devices -> Send/Recv both ways).
    return GradientPair(make_executor(optimize(fwd)),
                        _BackwardRunner(make_executor(optimize(bwd)), grad_slots),
                        variables, float_outputs, (fwd, bwd))


class _BackwardRunner:
    """Runs the backward executor and puts None where a source has no gradient."""

    def __init__(self, executor, grad_slots):
        self.executor = executor
        self.grad_slots = grad_slots

    def run(self, args, captures):
        values = self.executor.run(args, captures)
        return [None if s is None else values[s] for s in self.grad_slots]
