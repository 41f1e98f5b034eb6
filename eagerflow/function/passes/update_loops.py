"""A variable's updates that read each other as one fused region with several results.

An optimizer updates each variable through regions that read the slots it has just
written: Adam assigns ``m`` and ``v`` from two regions, then a third region reads them
back to update the parameter. When each region compiles into one loop (see
``fused_step._Loop``), the three loops pass over the gradient twice and over ``m`` and
``v`` twice each; one loop computing all three results reads every array once and writes
every result once. This pass merges such a group: a FusedElementwise node ``P`` assigned
to a variable, and, for each read ``R`` of a variable ``X`` among ``P``'s inputs, the
FusedElementwise node ``A`` whose result was assigned to ``X`` last before ``R``. The
merged node sits at ``P``'s place, computes ``A``'s program, then ``P``'s with ``R``
replaced by ``A``'s result, and returns every result; the assignments follow it in their
original order. The values are the ones the separate regions compute (the same sub-ops on
the same operands). On a GPU the merged node is one ``cupy.ElementwiseKernel`` with one
output per result, written into the variables' buffers (``fused_gpu``).

Moving ``A`` and its assignment down to ``P`` is safe only when nothing in between could
see the difference, so the group is merged only when every node between the first merged
assignment and ``P`` is a pure kernel, a constant, a fused region, a variable read or an
assignment of another variable (no control flow, calls or communication); no other read
or write of a merged variable lies in between; ``R`` is read by ``P`` alone; no merged
value is a graph output or has control edges; and the regions' programs each compile to
one loop (one generated kernel on a GPU), with one shape and dtype. On a CPU it runs only
when the compiled kernels are usable (``backend.cpu_jit``): without them the separate
regions' numpy forms, over cache blocks, are the faster ones.

Example:
    >>> import numpy as np
    >>> import eagerflow as ef
    >>> from eagerflow.function import passes
    >>> m, p = ef.Variable(np.zeros(8, np.float32)), ef.Variable(np.ones(8, np.float32))
    >>> def step(g):
    ...     m.assign(0.9 * m + 0.1 * g)
    ...     p.assign_sub(0.01 * m)
    >>> graph = ef.function(step).get_concrete_function(ef.TensorSpec([8])).graph
    >>> [n.op for n in passes.optimize(graph).nodes].count("FusedElementwise")  # doctest: +SKIP
    1
"""

from __future__ import annotations

from eagerflow.function import builtins
from eagerflow.function.passes import fused_gpu, fused_step
from eagerflow.function.passes.common import (
    consumers, is_pure, new_node, readers, resolved_device,
)

__all__ = ["run"]

# Nodes that may lie between a merged assignment and the merged node.
_BETWEEN = frozenset((builtins.CONST, builtins.READ_VARIABLE, builtins.ASSIGN_VARIABLE,
                      builtins.FUSED_ELEMENTWISE))


def run(graph):
    """Merges update groups; returns True if the graph changed."""
    changed = False
    while _merge_one(graph):
        changed = True
    return changed


def _loop_ready(node):
    """Whether ``node`` is a region with one result that runs as one pass over memory:
    on a CPU a compiled loop, large enough for the compiled kernels (``cpu_jit.wanted``: a
    graph of small tensors never imports numba); on a GPU one generated kernel
    (``fused_gpu.cuda_source``), whatever its size (each merge saves kernel launches)."""
    from eagerflow.backend import cpu_jit

    if node.op != builtins.FUSED_ELEMENTWISE or node.num_outputs != 1 or \
            node.control_inputs:
        return False
    aval = node.avals[0]
    if aval.shape is None or None in aval.shape or not aval.shape:
        return False
    if getattr(resolved_device(node), "backend_index", 0):
        return fused_gpu.cuda_source(fused_step.Program.of(node)) is not None
    size = 1
    for n in aval.shape:
        size *= n
    if size < cpu_jit.MIN_ELEMENTS:
        return False
    return fused_step._Loop.of(fused_step.Program.of(node), node) is not None and \
        cpu_jit.wanted(size)


def _merge_one(graph):
    uses = consumers(graph)
    reads = readers(graph)
    outputs = {n for n, _ in graph.outputs}
    controls = {c for n in graph.nodes for c in n.control_inputs}
    order = {n: k for k, n in enumerate(graph.nodes)}
    last_assign = {}  # variable -> (assign node, its region) of the latest assignment
    for node in graph.nodes:
        if node.op == builtins.ASSIGN_VARIABLE and len(node.inputs) == 1:
            src = node.inputs[0][0]
            last_assign[node.attrs.get("variable")] = (node, src)
        elif node.op in builtins.names(assigns=True):
            last_assign[node.attrs.get("variable")] = (node, None)
        group = _group(graph, node, uses, reads, outputs, controls, order, last_assign)
        if group is not None:
            _rewrite(graph, node, group)
            return True
    return False


def _group(graph, p, uses, reads, outputs, controls, order, last_assign):
    """``[(A, its assignment, the read R of P)]`` to merge into ``p``, or None."""
    if not _loop_ready(p) or p in outputs or p in controls or uses.get(p) != 1:
        return None
    p_assign = reads[p][0]
    if p_assign is None or p_assign.op != builtins.ASSIGN_VARIABLE or p_assign.control_inputs:
        return None
    shape, dtype = p.avals[0].shape, p.avals[0].dtype
    group = []
    for src, _ in p.inputs:
        if src.op != builtins.READ_VARIABLE or uses.get(src) != 1 or src in outputs or \
                src in controls or src.control_inputs:
            continue
        variable = src.attrs.get("variable")
        found = last_assign.get(variable)
        if found is None or found[1] is None or order[found[0]] > order[src]:
            continue
        assign, a = found
        if a.op != builtins.FUSED_ELEMENTWISE or not _loop_ready(a) or uses.get(a) != 1 or \
                a in outputs or a in controls or assign.control_inputs or \
                a.avals[0].shape != shape or a.avals[0].dtype is not dtype or \
                resolved_device(a) != resolved_device(p) or \
                any(g[0] is a for g in group):
            continue
        group.append((a, assign, src))
    if not group:
        return None
    # variable -> the place of its merged assignment, which moves down to p
    moved = {assign.attrs.get("variable"): order[assign] for _, assign, _ in group}
    merged = {n for a, assign, r in group for n in (a, assign, r)}
    first = min(moved.values())
    for node in graph.nodes[first:order[p]]:
        if node in merged:
            continue
        if node.op not in _BETWEEN and not is_pure(node):
            return None
        variable = node.attrs.get("variable") if node.op in (
            builtins.READ_VARIABLE, builtins.ASSIGN_VARIABLE) else None
        if variable in moved and (node.op != builtins.READ_VARIABLE or
                                  order[node] > moved[variable]):
            # Another write of a moved variable, or a read that would now see its old
            # value (a read before its assignment, such as the region's own, is kept).
            return None
    return sorted(group, key=lambda g: order[g[1]])


def _rewrite(graph, p, group):
    """Replaces the group by one node at ``p``'s place and the assignments after it."""
    programs = [a for a, _, _ in group] + [p]
    forwarded = {r: k for k, (_, _, r) in enumerate(group)}  # read -> region index
    external, ext_index = [], {}
    ops, arity, args, dtypes, op_attrs, results, origins = [], [], [], [], [], [], []
    sub_ops = [len(n.attrs["ops"]) for n in programs]
    for n in programs:
        for ref in n.inputs:
            if ref[0] not in forwarded and ref not in ext_index:
                ext_index[ref] = len(external)
                external.append(ref)
    n_in = len(external)
    offset = 0
    for q, n in enumerate(programs):
        a = n.attrs
        n_local = len(n.inputs)

        def ref_of(r, n=n, n_local=n_local, offset=offset):
            if r >= n_local:
                return n_in + offset + (r - n_local)
            src = n.inputs[r]
            if src[0] in forwarded:
                k = forwarded[src[0]]
                return n_in + sum(sub_ops[:k]) + sub_ops[k] - 1
            return ext_index[src]

        ops.extend(a["ops"])
        arity.extend(a["arity"])
        args.extend(ref_of(r) for r in a["args"])
        dtypes.extend(a["dtypes"])
        op_attrs.extend(a["op_attrs"])
        offset += sub_ops[q]
        results.append(offset - 1)
        origins.extend(fused_step.ORIGINS.get(n, (None,) * sub_ops[q]))
    attrs = {"ops": tuple(ops), "arity": tuple(arity), "args": tuple(args),
             "dtypes": tuple(dtypes), "op_attrs": tuple(op_attrs),
             # The numpy form of a node with several results allocates every value.
             "inplace": (-1,) * len(ops), "outputs": tuple(results)}
    merged = new_node(graph, builtins.FUSED_ELEMENTWISE, external, attrs,
                      tuple(n.avals[0] for n in programs), device=p.device,
                      name="update_" + p.name, origin=p.origin)
    fused_step.ORIGINS[merged] = tuple(origins)
    # The moved assignments follow the merged node; p's own stays where it was.
    moved = [assign for _, assign, _ in group]
    for k, assign in enumerate(moved):
        assign.inputs = [(merged, k)]
    for node in graph.nodes:
        if node.op == builtins.ASSIGN_VARIABLE and node.inputs and node.inputs[0][0] is p:
            node.inputs = [(merged, len(moved))]
    dropped = {n for a, assign, r in group for n in (a, assign, r)}
    nodes = []
    for node in graph.nodes:
        if node is p:
            nodes.append(merged)
            nodes.extend(moved)
        elif node not in dropped:
            nodes.append(node)
    graph.nodes = nodes
