"""Common subexpression elimination.

Two pure nodes with the same op, the same inputs, equal attrs and the same device compute
the same values, so the later one is replaced by the earlier. Constants merge by dtype,
shape and bytes (so ``0.0`` and ``-0.0`` stay apart). Variable reads merge only within an
"epoch": an assignment to the variable, or any op whose effects are unknown (control flow,
communication), starts a new one, so a read after a write never takes the earlier value.
"""

from __future__ import annotations

from eagerflow.function import builtins
from eagerflow.function.passes.common import Substitution, hashable, is_pure

_ASSIGNS = builtins.names(assigns=True)
# Effectful builtins known not to write variables: reads and console output.
_NO_WRITES = frozenset((builtins.PRINT, builtins.READ_VARIABLE))


def run(graph):
    """Merges duplicate computations; returns True if the graph changed."""
    sub = Substitution(graph)
    seen = {}
    epochs = {}  # variable index -> number of writes so far
    barrier = 0  # number of ops so far that may write any variable
    kept = []
    for node in graph.nodes:
        sub.apply(node)
        op = node.op
        key = None
        if op == builtins.READ_VARIABLE:
            var = node.attrs.get("variable")
            key = (op, var, epochs.get(var, 0), barrier, node.device)
        elif op in _ASSIGNS:
            var = node.attrs.get("variable")
            epochs[var] = epochs.get(var, 0) + 1
        elif is_pure(node):
            key = _key(node)
        elif node.op != builtins.PLACEHOLDER and op not in _NO_WRITES and node.prim is None:
            barrier += 1
        if key is not None:
            first = seen.get(key)
            if first is not None and sub.can_replace_output(node, first):
                for i in range(node.num_outputs):
                    sub.replace(node, i, (first, i))
                continue
            seen.setdefault(key, node)
        kept.append(node)
    changed = sub.finish()
    if changed:
        graph.nodes = kept
    return changed


def _key(node):
    try:
        if node.op == builtins.CONST:
            value = node.value
            return (builtins.CONST, hashable(value), node.avals, node.device)
        attrs = tuple(sorted((k, hashable(v)) for k, v in node.attrs.items()))
    except TypeError:
        return None
    ins = tuple((src.id, idx) for src, idx in node.inputs)
    controls = tuple(sorted(c.id for c in node.control_inputs))
    return (node.op, ins, controls, attrs, node.device)
