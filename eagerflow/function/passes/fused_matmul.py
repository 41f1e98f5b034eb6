"""Dense-layer remapping: ``Relu(AddV2(MatMul(a, b), bias))`` -> one ``FusedMatMul``.

A MatMul of two matrices whose only use is an AddV2 with a vector along its last axis
(a dense layer's bias, either operand order) becomes ``FusedMatMul(a, b, bias)``, which
adds the bias in the product's own buffer (see ``ops/linalg/fused_matmul_ops``); when the
sum's only use is a Relu, the relu joins it too. The rewrite needs float32/float64
operands of one dtype, 2-D shapes with the number of columns known (the rows may be a
batch dimension of None), one device and no control inputs, and leaves graph outputs
alone (the MatMul's and, for the relu, the AddV2's). It runs after the gradient is
traced: the backward pass reads the relu's (or the sum's) result, which the fused node
computes.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import passes
    >>> f = ef.function(lambda x, w, b: ef.nn.relu(ef.matmul(x, w) + b))
    >>> spec = ef.TensorSpec
    >>> graph = f.get_concrete_function(spec([2, 3]), spec([3, 4]), spec([4])).graph
    >>> [n.op for n in passes.optimize(graph).nodes]
    ['Placeholder', 'Placeholder', 'Placeholder', 'FusedMatMul']
"""

from __future__ import annotations

from eagerflow.function.passes.common import (
    consumers, new_node, readers, rebuild, resolved_device,
)
from eagerflow.ops.linalg.fused_matmul_ops import FUSED_MATMUL

__all__ = ["run"]

_FLOATS = ("float32", "float64")


def run(graph):
    """Applies the rewrite; returns True if the graph changed."""
    uses = consumers(graph)
    outputs = {n for n, _ in graph.outputs}
    reads = readers(graph)
    plans = {}          # the node the fused one replaces -> (matmul, bias ref, relu?)
    dropped = set()
    for node in graph.nodes:
        found = _bias_add_of_matmul(node, uses, outputs)
        if found is None:
            continue
        matmul, bias = found
        last = node
        user = reads[node][0] if uses.get(node, 0) == 1 else None
        if user is not None and user.op == "Relu" and \
                node not in outputs and not user.control_inputs and \
                resolved_device(user) == resolved_device(node) and \
                user.avals[0] == node.avals[0]:
            dropped.add(node)
            last = user
        dropped.add(matmul)
        plans[last] = (matmul, bias, last is not node)
    if not plans:
        return False
    return rebuild(graph, plans, dropped, _fused_matmul)


def _fused_matmul(node, plan, sub):
    matmul, bias, relu = plan
    attrs = {"transpose_a": bool(matmul.attrs.get("transpose_a")),
             "transpose_b": bool(matmul.attrs.get("transpose_b")),
             "activation": "Relu" if relu else ""}
    return [new_node(sub.graph, FUSED_MATMUL.name,
                     list(matmul.inputs) + [sub.resolve(bias)], attrs, node.avals,
                     prim=FUSED_MATMUL, device=node.device, name=matmul.name + "_fused",
                     origin=node.origin)]


def _bias_add_of_matmul(node, uses, outputs):
    """``(matmul, bias ref)`` when ``node`` adds a bias vector to a MatMul's only use."""
    if node.op != "AddV2" or node.control_inputs or len(node.inputs) != 2:
        return None
    out = node.avals[0]
    # The rows may be unknown (a batch dimension of None); the bias' length may not.
    if out.dtype.name not in _FLOATS or out.shape is None or len(out.shape) != 2 or \
            out.shape[1] is None:
        return None
    for k in (0, 1):
        (matmul, index), bias = node.inputs[k], node.inputs[1 - k]
        if matmul.op != "MatMul" or index != 0 or matmul.control_inputs or \
                matmul in outputs or uses.get(matmul, 0) != 1:
            continue
        attrs = matmul.attrs
        if attrs.get("adjoint_a") or attrs.get("adjoint_b") or \
                attrs.get("output_type") is not None:
            continue
        a, b = (src.avals[i] for src, i in matmul.inputs)
        bias_aval = bias[0].avals[bias[1]]
        if a.shape is None or b.shape is None or len(a.shape) != 2 or len(b.shape) != 2:
            continue
        if not (a.dtype is b.dtype is bias_aval.dtype is out.dtype):
            continue
        if matmul.avals[0].shape != out.shape or bias_aval.shape != (out.shape[1],):
            continue
        if resolved_device(matmul) != resolved_device(node):
            continue
        return matmul, bias
    return None
