"""Dead code elimination, and the debug stripper.

A node is live when a graph output, a side effect or another live node needs it. Side
effects (variable reads and writes, prints, random ops, control flow) are roots: they are
never removed, so the program-order of effects is untouched. Placeholders stay too, since
arguments and captures are bound by position.
"""

from __future__ import annotations

from eagerflow.function import builtins
from eagerflow.function.passes.common import is_effectful

# Ops that only report on values; TF's debug_stripper removes Assert/Print/CheckNumerics
# (the debug builtins, and the one debug primitive).
DEBUG_OPS = builtins.names(debug=True) | {"CheckNumerics"}


def run(graph):
    """Removes nodes nothing live depends on; returns True if the graph changed."""
    live = set()
    stack = [n for n, _ in graph.outputs]
    stack += [n for n in graph.nodes if n.op == builtins.PLACEHOLDER or is_effectful(n)]
    while stack:
        node = stack.pop()
        if node in live:
            continue
        live.add(node)
        stack.extend(src for src, _ in node.inputs)
        stack.extend(node.control_inputs)
    if len(live) == len(graph.nodes):
        return False
    graph.nodes = [n for n in graph.nodes if n in live]
    return True


def strip_debug(graph):
    """Removes debug-only nodes (Print, Assert, CheckNumerics) without outputs in use."""
    used = {src for n in graph.nodes for src, _ in n.inputs}
    used.update(n for n, _ in graph.outputs)
    kept = [n for n in graph.nodes if n.op not in DEBUG_OPS or n in used]
    if len(kept) == len(graph.nodes):
        return False
    graph.nodes = kept
    return True
