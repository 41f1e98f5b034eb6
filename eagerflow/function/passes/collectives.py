"""Independent all-reduces of one graph merge into one: a training step makes one collective.

A traced strategy step typically all-reduces twice: the gradients (inside
``apply_gradients``) and then the loss or a metric (``strategy.reduce`` after
``strategy.run``). Each collective is a point where every rank waits for the slowest, and on
a busy machine each costs about a scheduler time slice on top of its transfer (measured
under ``mpirun -n 2`` on 2 shared cores: 7-10 ms for the 4-byte loss all-reduce of an MLP
step). When the later node's inputs are all computed before the earlier node runs, it
cannot depend on it, so both reduce at the earlier node's place, as one node: the
multi-worker strategy then packs the loss into the same gradient bucket and the step makes
one collective call.

Rules, so every rank (and every replica) rewrites its graph the same way and the result is
the same values:

- only ``CollectiveReduce`` nodes of the same group, rank, device and reduction merge, and
  only when every input is float16, float32 or float64 (what the buckets hold);
- a node joins the earliest open node of its kind when every producer of its inputs, and
  every control input, comes before that node in graph order (trace order is a topological
  order, so nothing it reads can depend on that node's results); otherwise it becomes the
  open node for the ones after it;
- the merged node takes the earlier node's place, attributes and instance key; its outputs
  are the earlier node's, then the later node's.

For example, a traced MirroredStrategy step on 2 devices that all-reduces its gradients
and then its loss has 4 ``CollectiveReduce`` nodes (2 per replica) as traced and 2 after
``passes.optimize`` (tests/distribute/test_collective_merge.py).
"""

from __future__ import annotations

from eagerflow.function import builtins
from eagerflow.function.passes.common import Substitution, new_node

__all__ = ["run"]


def _key(node):
    attrs = node.attrs
    return (attrs["group_key"], attrs["group_size"], attrs["rank"], attrs["reduce_op"],
            node.device)


_BUCKET_DTYPES = frozenset(("float16", "float32", "float64"))


def _floating(node):
    return all(getattr(aval.dtype, "name", None) in _BUCKET_DTYPES for aval in node.avals)


def run(graph):
    """Merges independent CollectiveReduce nodes in place; returns True if any merged."""
    sub = Substitution(graph)
    kept = []
    pos = {}
    open_nodes = {}
    merged_any = False
    for node in graph.nodes:
        sub.apply(node)
        if node.op == builtins.COLLECTIVE_REDUCE and _floating(node):
            key = _key(node)
            target = open_nodes.get(key)
            if target is not None and _before(node, pos[target], pos):
                merged = _merge(graph, target, node)
                at = pos.pop(target)
                kept[at] = merged
                pos[merged] = at
                open_nodes[key] = merged
                width = len(target.inputs)
                for i in range(width):
                    sub.replace(target, i, (merged, i))
                for j in range(len(node.inputs)):
                    sub.replace(node, j, (merged, width + j))
                merged_any = True
                continue
            open_nodes[key] = node
        pos[node] = len(kept)
        kept.append(node)
    if not merged_any:
        return False
    graph.nodes = kept
    for node in kept:  # nodes between a merged pair still name the retired node
        sub.apply(node)
    sub.finish()
    return True


def _before(node, limit, pos):
    """True when every producer node reads comes before position ``limit``."""
    for src, _ in node.inputs:
        if pos.get(src, limit) >= limit:
            return False
    for src in node.control_inputs:
        if pos.get(src, limit) >= limit:
            return False
    return True


def _merge(graph, first, later):
    merged = new_node(graph, builtins.COLLECTIVE_REDUCE, list(first.inputs) + list(later.inputs),
                      first.attrs, tuple(first.avals) + tuple(later.avals),
                      device=first.device, name="collective_reduce", origin=first.origin)
    merged.stateful = True
    merged.control_inputs = list(first.control_inputs) + [
        c for c in later.control_inputs if c not in first.control_inputs]
    return merged
