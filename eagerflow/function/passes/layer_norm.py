"""Layer normalization's input gradient as one ``LayerNormGrad`` node.

The normalize step of a layer norm written with ``moments`` (as the pre-LN transformer
benchmark and many models write it)::

    mean = Mean(x)                  (last axis, keepdims)
    c    = Sub(x, mean)
    var  = Mean(Mul(c, c))          (moments' variance: c with the mean's gradient stopped)
    r    = Rsqrt(AddV2(var, eps))   (eps a positive constant)
    n    = Mul(c, r)

differentiates, for a cotangent ``g`` of ``n``, into a sum of three terms: ``g * r``
through ``c``, ``BroadcastReduced(SumToShape(-(g * r))) / N`` through the mean and
``2 * BroadcastReduced(rsqrt'(SumToShape(g * c))) / N * c`` through the variance. This pass
finds that sum (an AddV2 tree that may hold other terms, such as a residual branch's
gradient) and replaces the three terms by ``LayerNormGrad(g, c, r)``, which computes
``r * (g - <g> - n <g n>)`` in one kernel (``ops/nn/layer_norm_kernels``). Every node of
the three terms must be used only there and be what the gradient rules of Mul, Mean,
Rsqrt and Neg produce (the Rsqrt rule's product ``g_r * r**3 * -0.5`` in any order, with
its select of a zero gradient), so a graph that computes anything else is left alone. The
values are equal within float rounding (the sums are grouped differently).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import passes
    >>> def f(x):
    ...     with ef.GradientTape() as tape:
    ...         tape.watch(x)
    ...         mean, var = ef.nn.moments(x, [-1], keepdims=True)
    ...         y = ef.reduce_sum(ef.square((x - mean) * ef.math.rsqrt(var + 1e-5)))
    ...     return tape.gradient(y, x)
    >>> graph = ef.function(f).get_concrete_function(ef.TensorSpec([4, 8])).graph
    >>> "LayerNormGrad" in [n.op for n in passes.optimize(graph).nodes]
    True
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from eagerflow.function.passes.common import (
    consumers, new_node, rebuild, resolved_device,
)
from eagerflow.ops.nn.normalization_ops import LAYER_NORM_GRAD

__all__ = ["run"]

_FLOATS = ("float32", "float64")


def run(graph):
    """Applies the rewrite; returns True if the graph changed."""
    uses = consumers(graph)
    outputs = {n for n, _ in graph.outputs}
    norms = {}        # r node -> (c node, square node)
    for node in graph.nodes:
        found = _normalize(node)
        if found is not None:
            norms[found[0]] = found[1:]
    if not norms:
        return False
    plans = {}
    removed = set()
    for node in reversed(graph.nodes):
        if node.op != "AddV2" or node in removed:
            continue
        plan = _plan(node, norms, uses, outputs)
        if plan is not None:
            plans[node] = plan
            removed |= plan[3]
    if not plans:
        return False
    dead = set().union(*(plan[3] for plan in plans.values()))
    return rebuild(graph, plans, dead, _layer_norm_grad)


def _layer_norm_grad(node, plan, sub):
    g, c, r, _, others = plan
    nodes = [new_node(sub.graph, LAYER_NORM_GRAD.name, [sub.resolve(g), c, r], {},
                      node.avals, prim=LAYER_NORM_GRAD, device=node.device,
                      name=node.name + "_ln", origin=node.origin)]
    for other in others:
        nodes.append(new_node(sub.graph, "AddV2", [(nodes[-1], 0), sub.resolve(other)], {},
                              node.avals, prim=node.prim, device=node.device,
                              name=node.name + "_sum", origin=node.origin))
    return nodes


def _last_axis(node, rank):
    axis = node.attrs.get("axis")
    return node.attrs.get("keepdims") and axis is not None and \
        tuple(a % rank for a in axis) == (rank - 1,)


def _normalize(node):
    """``(r, c, square)`` when ``node`` is the Rsqrt of the pattern above."""
    if node.op != "Rsqrt":
        return None
    (add, _), = node.inputs
    if add.op != "AddV2":
        return None
    for var_ref, eps_ref in (add.inputs, add.inputs[::-1]):
        var, eps = var_ref[0], eps_ref[0]
        if var.op != "Mean" or eps.op != "Const" or eps.value is None:
            continue
        value = np.asarray(eps.value)
        if value.size != 1 or not np.isfinite(value).all() or float(value.ravel()[0]) <= 0:
            continue
        (square, _), = var.inputs
        if square.op != "Mul" or square.inputs[0] != square.inputs[1]:
            continue
        c = square.inputs[0][0]
        if c.op != "Sub":
            continue
        x_ref, (mean, _) = c.inputs
        if mean.op != "Mean" or mean.inputs[0] != x_ref:
            continue
        shape = c.avals[0].shape
        if shape is None or None in shape or not shape or \
                c.avals[0].dtype.name not in _FLOATS:
            continue
        rank = len(shape)
        if not (_last_axis(mean, rank) and _last_axis(var, rank)):
            continue
        devices = {resolved_device(n) for n in (node, add, var, square, c, mean)}
        if len(devices) != 1:
            continue
        return node, c, square
    return None


def _sum_leaves(node, root, uses, outputs, leaves, inner):
    if node is not root and (uses.get(node, 0) != 1 or node in outputs):
        leaves.append(node)
        return
    if node.op == "AddV2" and node.inputs[0] != node.inputs[1] and not node.control_inputs:
        inner.add(node)
        for src, _ in node.inputs:
            _sum_leaves(src, root, uses, outputs, leaves, inner)
    else:
        leaves.append(node)


def _factors(node, uses, inner, out):
    """The leaves of the Mul tree at ``node`` (inner Muls used once), counted by ref."""
    inner.append(node)
    for ref in node.inputs:
        if ref[0].op == "Mul" and uses.get(ref[0], 0) == 1:
            _factors(ref[0], uses, inner, out)
        else:
            out[ref] += 1
    return out


def _pair(node, one):
    """The other operand of the Mul ``node`` with ``one`` as an operand, else None."""
    if node.op != "Mul" or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    if a[0] is one and b[0] is not one:
        return b
    if b[0] is one and a[0] is not one:
        return a
    return None


def _plan(root, norms, uses, outputs):
    """``(g, c ref, r ref, replaced nodes, other terms)`` for the sum at ``root``, or None."""
    shape = root.avals[0].shape
    if shape is None or root.control_inputs:
        return None
    leaves, inner = [], set()
    _sum_leaves(root, root, uses, outputs, leaves, inner)
    if len(leaves) < 3:
        return None
    for leaf in leaves:
        for r, (c, square) in norms.items():
            g = _pair(leaf, r)
            if g is None or c.avals[0].shape != shape or \
                    g[0].avals[g[1]].dtype is not c.avals[0].dtype or \
                    g[0].avals[g[1]].shape != shape:
                continue
            terms = _terms(leaf, g, r, c, square, leaves, uses, outputs)
            if terms is None:
                continue
            matched, replaced = terms
            replaced |= inner
            others = [(n, 0) for n in leaves if n not in matched]
            return g, (c, 0), (r, 0), replaced, others
    return None


def _terms(a, g, r, c, square, leaves, uses, outputs):
    """The three terms of the gradient through ``c`` for ``a = g * r``, or None."""
    last = len(c.avals[0].shape) - 1
    replaced = {a}
    # Through the mean: BroadcastReduced(SumToShape(Neg(a)), x, mean=True).
    mean_term = None
    for leaf in leaves:
        if leaf.op == "BroadcastReduced" and leaf.attrs.get("mean") and \
                leaf.attrs.get("keepdims") and tuple(leaf.attrs.get("axis") or ()) == (last,):
            total = leaf.inputs[0][0]
            neg = total.inputs[0][0] if total.op == "SumToShape" else None
            if neg is not None and neg.op == "Neg" and neg.inputs[0][0] is a and \
                    uses.get(leaf, 0) == uses.get(total, 0) == uses.get(neg, 0) == 1:
                mean_term = leaf
                replaced |= {leaf, total, total.inputs[0][0]}
                break
    if mean_term is None or uses.get(a, 0) != 2:
        return None
    # Through the variance: AddV2(m, m), m = Mul(BroadcastReduced(dvar, square), c).
    var_term = None
    for leaf in leaves:
        if leaf.op != "AddV2" or leaf.inputs[0] != leaf.inputs[1]:
            continue
        m = leaf.inputs[0][0]
        spread = _pair(m, c)
        if spread is None or uses.get(m, 0) != 2 or uses.get(leaf, 0) != 1:
            continue
        spread = spread[0]
        if spread.op != "BroadcastReduced" or uses.get(spread, 0) != 1 or \
                not spread.attrs.get("mean") or \
                tuple(spread.attrs.get("axis") or ()) != (last,) or \
                spread.inputs[1][0] is not square:
            continue
        dvar = spread.inputs[0][0]
        chain = _rsqrt_grad(dvar, g, r, c, uses)
        if chain is None:
            continue
        var_term = leaf
        replaced |= {leaf, m, spread} | chain
        break
    if var_term is None:
        return None
    for node in replaced - {a}:
        if node in outputs or node.control_inputs:
            return None
    if a in outputs or a.control_inputs:
        return None
    return {a, mean_term, var_term}, replaced


def _rsqrt_grad(dvar, g, r, c, uses):
    """The nodes of ``SelectV2(Equal(t, 0), 0, t * r**3 * -0.5)``, ``t = SumToShape(g * c)``
    (Rsqrt's gradient rule), or None."""
    if dvar.op != "SelectV2" or uses.get(dvar, 0) != 1:
        return None
    (equal, _), (zero, _), (value, _) = dvar.inputs
    if equal.op != "Equal" or not _is_zero(zero) or uses.get(equal, 0) != 1:
        return None
    total = equal.inputs[0][0]
    if not _is_zero(equal.inputs[1][0]) or total.op != "SumToShape" or uses.get(total, 0) != 2:
        return None
    product = total.inputs[0][0]
    if uses.get(product, 0) != 1 or Counter(product.inputs) != Counter([g, (c, 0)]) or \
            product.op != "Mul":
        return None
    if value.op != "Mul" or uses.get(value, 0) != 1:
        return None
    inner = []
    factors = _factors(value, uses, inner, Counter())
    consts = [ref for ref in factors if ref[0].op == "Const"]
    if len(consts) != 1 or factors[consts[0]] != 1 or \
            np.asarray(consts[0][0].value).size != 1 or \
            float(np.asarray(consts[0][0].value).ravel()[0]) != -0.5:
        return None
    if factors != Counter({(total, 0): 1, (r, 0): 3, consts[0]: 1}):
        return None
    return {dvar, equal, total, product} | set(inner)


def _is_zero(node):
    return node.op == "Const" and node.value is not None and not np.any(np.asarray(node.value))
