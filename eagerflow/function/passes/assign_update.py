"""Variable updates by an elementwise value as one elementwise region (optimizers' steps).

``v.assign_sub(u)`` with ``u`` elementwise (Adam's ``lr_t * m / (sqrt(v) + eps)``) runs as
the region computing ``u`` into a buffer, then a pass subtracting that buffer from the
variable. The pass writes it ``v.assign(read(v) - u)``: the read, the subtraction and the
assignment at the AssignSub's place, so that the fusion pass takes the subtraction into
``u``'s region, and the executor's read-modify-write rule lets that region write the new
value straight into the variable's buffer (``executor._read_modify_write``). ``p - u`` is the
value ``p -= u`` computes, bit for bit (AssignAdd likewise with ``p + u``).

Rewritten only when ``u`` is an elementwise op used by the assignment alone, of the
variable's dtype and its whole static shape (an assignment broadcasting or casting ``u``
keeps its node), on the assignment's device.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import passes
    >>> v = ef.Variable([1.0, 2.0])
    >>> f = ef.function(lambda g: v.assign_sub(0.5 * g, read_value=False))
    >>> graph = f.get_concrete_function(ef.TensorSpec([2])).graph
    >>> [n.op for n in passes.optimize(graph).nodes]
    ['Placeholder', 'Const', 'ReadVariableOp', 'FusedElementwise', 'AssignVariableOp']
"""

from __future__ import annotations

from eagerflow.function import builtins
from eagerflow.function.passes.common import consumers, new_node, rebuild, resolved_device
from eagerflow.ops import registry

__all__ = ["run"]

_UPDATES = {builtins.ASSIGN_SUB_VARIABLE: "Sub", builtins.ASSIGN_ADD_VARIABLE: "AddV2"}


def run(graph):
    """Rewrites AssignSub/AssignAdd of an elementwise value; returns True if any changed."""
    uses = consumers(graph)
    outputs = {n for n, _ in graph.outputs}
    plans = {}
    for node in graph.nodes:
        op = _UPDATES.get(node.op)
        if op is None or len(node.inputs) != 1 or node.control_inputs:
            continue
        src, idx = node.inputs[0]
        if src.prim is None or src.prim.domain is None or uses.get(src) != 1 or \
                src in outputs or src.control_inputs or src.num_outputs != 1:
            continue
        var = graph.variables[node.attrs["variable"]]
        aval = src.avals[idx]
        shape = getattr(var, "shape", None)
        if aval.shape is None or None in aval.shape or shape is None or \
                tuple(shape) != tuple(aval.shape) or aval.dtype is not var.dtype or \
                resolved_device(src) != resolved_device(node):
            continue
        plans[node] = op
    if not plans:
        return False
    return rebuild(graph, plans, (), lambda node, op, sub: _update(graph, node, op))


def _update(graph, node, op):
    value = node.inputs[0]
    aval = value[0].avals[value[1]]
    variable = node.attrs["variable"]
    read = new_node(graph, builtins.READ_VARIABLE, [], {"variable": variable}, (aval,),
                    device=node.device, name="read_" + node.name, origin=node.origin)
    read.stateful = True
    new = new_node(graph, op, [(read, 0), value], {}, (aval,), prim=registry.get(op),
                   device=node.device, name="update_" + node.name, origin=node.origin)
    assign = new_node(graph, builtins.ASSIGN_VARIABLE, [(new, 0)], {"variable": variable},
                      (), device=node.device, name=node.name + "_value", origin=node.origin)
    assign.stateful = True
    return [read, new, assign]
