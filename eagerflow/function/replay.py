"""The graph interpreter at the level of op calls: a graph run node by node through dispatch.

The executor runs a graph as generated code over arrays (fast, one step per node). A graph
must instead be run op by op through :func:`eagerflow.ops.dispatch.execute` when a tape has
to record each primitive (nested tapes, gradients of gradients through a call) or when a
trace has to inline it: a ``ConcreteFunction`` under nested tapes and a loaded function
called under a tape or inside a trace both come here.

Primitives, constants, placeholders, variable reads and assignments and prints replay;
control flow does not (a caller checks :func:`can_replay` first and keeps the compiled path).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import replay
    >>> f = ef.function(lambda x: ef.exp(x) * 2.0).get_concrete_function(ef.constant(0.0))
    >>> replay.can_replay(f.graph.nodes)
    True
    >>> [float(t) for t in replay.replay(f.graph, [ef.constant(0.0)])]
    [2.0]
"""

from __future__ import annotations

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.function import builtins
from eagerflow.ops import static_value
from eagerflow.ops.dispatch import execute
from eagerflow.ops.print_ops import print_template
from eagerflow.tensor import wrap

__all__ = ["REPLAYED_BUILTINS", "can_replay", "replay"]

_ASSIGNS = {name: builtins.BUILTINS[name].assigns for name in builtins.names(assigns=True)}
REPLAYED_BUILTINS = builtins.names(replays=True)


def can_replay(nodes):
    """True when every node is a primitive or a builtin :func:`replay` runs."""
    return all(n.prim is not None or n.op in REPLAYED_BUILTINS for n in nodes)


def replay(graph, args, nodes=None):
    """Runs ``graph`` on eager or symbolic tensors, node by node through dispatch.

    Args:
        graph: The Graph.
        args: One tensor per graph input.
        nodes: The nodes to run (default: all), e.g. only the forward nodes of a graph that
            is getting backward nodes appended.

    Returns:
        The tensors of the graph's outputs.

    Raises:
        UnimplementedError: For a node that cannot replay (check :func:`can_replay`).
    """
    values = {}
    for node, t in zip(graph.inputs, args):
        values[(node.id, 0)] = t
    for node, captured in graph.captures:
        values[(node.id, 0)] = captured
    variables = graph.variables
    for node in graph.nodes if nodes is None else nodes:
        op = node.op
        if op == builtins.PLACEHOLDER:
            continue
        ins = [values[(src.id, i)] for src, i in node.inputs]
        if node.prim is not None:
            ins, attrs = static_value.bind_dynamic(tuple(ins), dict(node.attrs))
            out = execute(node.prim, ins, attrs)
            outs = (out,) if node.prim.single else out
        elif op == builtins.CONST:
            outs = (wrap(node.value, context.CPU0),)
        elif op == builtins.READ_VARIABLE:
            outs = (variables[node.attrs["variable"]].read_value(),)
        elif op in _ASSIGNS:
            var = variables[node.attrs["variable"]]
            getattr(var, _ASSIGNS[op])(ins[0], read_value=False)
            outs = ()
        elif op == builtins.CUSTOM_GRADIENT:
            from eagerflow.function.custom_gradient_graph import replay_node

            outs = replay_node(node, ins, graph, graph.library)
        elif op == builtins.PRINT:
            print_template(tuple(node.attrs["template"]), list(ins),
                           node.attrs.get("output_stream", "stderr"),
                           node.attrs.get("summarize", 3), node.attrs.get("sep", " "),
                           node.attrs.get("end", "\n"))
            outs = ()
        else:
            raise errors.UnimplementedError(
                None, op, "A graph with a %s node (%s) runs only compiled: it cannot be "
                "inlined into a trace or recorded op by op by a tape yet." % (op, node.name))
        for i, t in enumerate(outs):
            values[(node.id, i)] = t
    return [values[(node.id, i)] for node, i in graph.outputs]
