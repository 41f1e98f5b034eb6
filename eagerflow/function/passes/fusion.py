"""Elementwise fusion (TF's ``remapping``): one node for each cluster of elementwise ops.

A cluster grows backwards from a root through producers that are elementwise, on the same
device, not graph outputs, and used only inside the cluster; so every intermediate value is
private to it, and the cluster is a DAG with one result. It becomes one ``FusedElementwise``
node at the root's position (every outside input is produced before the root, so the order
stays valid). See ``fused_step`` for the node's attrs and how it runs.

Elementwise means: declared through ``eagerflow.ops.family.unary``/``binary`` (``prim.domain``
is set), plus Cast and SelectV2. All of them produce the broadcast shape of their inputs, so
the cluster's result has the broadcast shape of its outside inputs (what a generated CUDA
kernel computes). On a GPU only ops with a CUDA expression join a cluster, and a cluster
whose result only a reduction with a GPU form reads (Sum, Mean, Max: ``gpu_reduce`` in
their declarations) takes that reduction in as its last sub-op, to run as one reduction
kernel (``fused_gpu.reduction_source``); a CPU graph is fused as before.
"""

from __future__ import annotations

from eagerflow.function import builtins
from eagerflow.function.passes import fused_step
from eagerflow.function.passes.common import (
    Substitution, consumers, is_pure, new_node, readers, resolved_device,
)

EXTRA_ELEMENTWISE = frozenset(("Cast", "SelectV2"))


def run(graph):
    """Replaces elementwise clusters of two or more ops (on a GPU, also one op and the
    reduction of its result) by FusedElementwise nodes; returns True if any changed."""
    uses = consumers(graph)
    outputs = {n for n, _ in graph.outputs}
    devices = {}
    info = {}
    for node in graph.nodes:
        prim = node.prim
        if prim is None or (prim.domain is None and prim.name not in EXTRA_ELEMENTWISE):
            continue
        device = resolved_device(node)
        entry = _fusable(node, device)
        if entry is not None:
            info[node] = entry
            devices[node] = device
    clusters = {}  # the node the fused node replaces -> members in graph order
    taken = set()
    order = {node: k for k, node in enumerate(graph.nodes)}
    reads = None
    for root in reversed(graph.nodes):
        if root not in info or root in taken:
            continue
        members = _grow(root, info, devices, uses, outputs, taken)
        reduction = None
        if getattr(devices[root], "backend_index", 0):
            reads = readers(graph) if reads is None else reads
            reduction = _gpu_reduction(root, devices[root], reads, outputs)
        if reduction is not None:
            # One elementwise op and its reduction already save a pass over memory.
            info[reduction] = fused_step.encode_attrs(reduction.attrs)
            taken.update(members)
            clusters[reduction] = sorted(members, key=order.__getitem__) + [reduction]
        elif len(members) > 1:
            taken.update(members)
            clusters[root] = sorted(members, key=order.__getitem__)
    if not clusters:
        return False
    sub = Substitution(graph)
    nodes = []
    for node in graph.nodes:
        sub.apply(node)
        if node in clusters:
            fused = _fuse(graph, clusters[node], info)
            sub.replace(node, 0, (fused, 0))
            nodes.append(fused)
        elif node not in taken:
            nodes.append(node)
    graph.nodes = nodes
    sub.finish()
    return True


def _fusable(node, device):
    """The encoded attrs of an elementwise node that may join a cluster, else None."""
    prim = node.prim
    if prim is None or not is_pure(node) or not prim.single or prim.variadic:
        return None
    if prim.domain is None and prim.name not in EXTRA_ELEMENTWISE:
        return None
    text = fused_step.encode_attrs(node.attrs)
    if text is None:
        return None
    if getattr(device, "backend_index", 0):
        operand_dtypes = [src.avals[i].dtype.name for src, i in node.inputs]
        operands = ["x%d" % k for k in range(len(node.inputs))]
        if fused_step.cuda_expression(prim, operand_dtypes, node.avals[0].dtype.name,
                                      node.attrs, operands) is None:
            return None
    return text


def _gpu_reduction(root, device, reads, outputs):
    """The reduction node that alone reads a GPU cluster's result and can end its kernel
    (its declaration's ``gpu_reduce`` covers the dtype; static shapes; axes as ints), or
    None."""
    if root in outputs:
        return None
    users = reads.get(root, ())
    if len(users) != 1 or users[0] is None:
        return None
    node = users[0]
    prim = node.prim
    if prim is None or prim.gpu_reduce is None or len(node.inputs) != 1 or \
            node.control_inputs or not is_pure(node) or node.num_outputs != 1 or \
            resolved_device(node) != device or \
            fused_step.encode_attrs(node.attrs) is None:
        return None
    # (The reduction's own uses, a graph output or a control edge included, move to the
    # fused node through the Substitution.)
    aval = root.avals[0]
    if aval.shape is None or None in aval.shape or node.avals[0].dtype is not aval.dtype or \
            aval.dtype.name not in prim.gpu_reduce[0]:
        return None
    axis, keepdims = node.attrs.get("axis"), node.attrs.get("keepdims")
    if keepdims.__class__ is not bool or not (axis is None or (
            axis.__class__ is tuple and all(a.__class__ is int for a in axis))):
        return None
    return node


def _grow(root, info, devices, uses, outputs, taken):
    """The cluster of ``root``: producers join once all their uses are inside it."""
    members = {root}
    device = devices[root]
    inside = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for src, _ in node.inputs:
            inside[src] = inside.get(src, 0) + 1
            if src in members or inside[src] != uses.get(src, 0):
                continue
            if src in info and src not in taken and src not in outputs and \
                    devices[src] == device:
                members.add(src)
                stack.append(src)
    return members


def _fuse(graph, members, info):
    """The FusedElementwise node computing ``members`` (the last one is the root)."""
    index = {m: j for j, m in enumerate(members)}
    external = []
    ext_index = {}
    for m in members:
        for ref in m.inputs:
            if ref[0] not in index and ref not in ext_index:
                ext_index[ref] = len(external)
                external.append(ref)
    n_in = len(external)
    refs = [tuple(n_in + index[r[0]] if r[0] in index else ext_index[r] for r in m.inputs)
            for m in members]
    avals = [src.avals[i] for src, i in external] + [m.avals[0] for m in members]
    inplace = _plan_inplace(members, refs, avals, n_in)
    root = members[-1]
    attrs = {
        "ops": tuple(m.op for m in members),
        "arity": tuple(len(m.inputs) for m in members),
        "args": tuple(r for rs in refs for r in rs),
        "dtypes": tuple(m.avals[0].dtype.name for m in members),
        "op_attrs": tuple(info[m] for m in members),
        "inplace": tuple(inplace),
    }
    node = new_node(graph, builtins.FUSED_ELEMENTWISE, external, attrs, root.avals,
                    device=root.device, name="fused_" + root.name, origin=root.origin)
    fused_step.ORIGINS[node] = tuple(m.origin for m in members)
    return node


def _plan_inplace(members, refs, avals, n_in):
    """Per sub-op, a dead intermediate whose buffer the CPU result can overwrite, or -1.

    A buffer is reusable by sub-op ``j`` when it was made by a ufunc (fresh memory, never a
    view of an input), ``j`` is its last use, it has ``j``'s dtype, and ``j``'s result
    provably has its shape: equal fully known shapes, or a unary op, or other operands that
    are statically all-ones shaped (scalars broadcast into it). 0-d results are numpy
    scalars, not buffers, so they are never reused.
    """
    last_use = {}
    for j, rs in enumerate(refs):
        for r in rs:
            last_use[r] = j
    owned = set()
    plan = []
    for j, m in enumerate(members):
        choice = -1
        ufunc = fused_step.cpu_ufunc(m.prim) is not None
        out = avals[n_in + j]
        if ufunc:
            for r in refs[j]:
                if r < n_in or r not in owned or last_use[r] != j:
                    continue
                if _fits(avals[r], out, [avals[o] for o in refs[j] if o != r]):
                    choice = r
                    break
            owned.add(n_in + j)
        plan.append(choice)
    return plan


def _fits(buffer, out, others):
    if buffer.dtype is not out.dtype or buffer.shape is None or not buffer.shape:
        return False
    if buffer.shape != out.shape:
        return False
    if None not in buffer.shape:
        return True
    return all(o.shape is not None and len(o.shape) <= len(buffer.shape)
               and all(d == 1 for d in o.shape) for o in others)
