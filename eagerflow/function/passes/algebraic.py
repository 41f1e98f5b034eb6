"""Algebraic simplification and removal of identity-like nodes.

``run`` (TF's ``arithmetic_optimization``) applies rewrites that are exact in IEEE
arithmetic:

* ``x * 1``, ``1 * x``, ``x / 1``, ``x ** 1`` -> ``x``;
* ``x + 0``, ``0 + x``, ``x - 0`` -> ``x`` for integers; for floats only where the sign of
  zero is kept (``x + (-0.0)`` and ``x - 0.0``; ``-0.0 + 0.0`` is ``+0.0``, so ``x + 0.0`` is
  not ``x``);
* ``neg(neg(x))`` -> ``x``; ``cast(x, x.dtype)`` -> ``x``;
* ``transpose(transpose(x, p), q)`` -> one transpose with the composed permutation (``x``
  when it is the identity); ``reshape(reshape(x, s), t)`` -> ``reshape(x, t)``;
* reshape, broadcast_to or sum_to_shape to the input's own static shape -> ``x``.

A rewrite to ``x`` happens only when the node's abstract value (shape and dtype) equals
``x``'s, so broadcasting by the constant is never lost. Complex values are left alone
(``(a+bi) * 1`` is not exact when ``b`` is infinite).

``remove_identities`` (TF's ``dependency_optimization``) drops Identity, StopGradient and
CustomGradient nodes: what they mean to gradients matters only to a tape recording the
trace, and gradients are traced before a graph is optimized.
"""

from __future__ import annotations

import math

import numpy as np

from eagerflow.function import builtins
from eagerflow.function.passes.common import Substitution, resolved_device

_SAME_SHAPE_OPS = frozenset(("Reshape", "BroadcastTo", "SumToShape", "EnsureShape"))


def run(graph):
    """Applies the arithmetic rewrites; returns True if the graph changed."""
    return _sweep(graph, _simplify)


def remove_identities(graph):
    """Forwards the inputs of Identity/StopGradient/CustomGradient nodes; returns True if
    changed."""
    return _sweep(graph, _identity)


def _sweep(graph, rule):
    sub = Substitution(graph)
    kept = []
    mutated = False
    for node in graph.nodes:
        sub.apply(node)
        if node.op == builtins.CUSTOM_GRADIENT and rule is _identity and all(
                sub.can_replace_output(node, src) for src, _ in node.inputs[:node.num_outputs]):
            # Its outputs are its first inputs; the gradient rule it carries was used when
            # the gradient was traced, before optimization.
            for k in range(node.num_outputs):
                sub.replace(node, k, node.inputs[k])
            continue
        result = rule(node) if node.prim is not None and not node.prim.stateful else None
        if result is None:
            kept.append(node)
        elif result is True:  # rewritten in place
            mutated = True
            kept.append(node)
        elif sub.can_replace_output(node, result[0]):
            sub.replace(node, 0, result)
        else:
            kept.append(node)
    if sub.finish() or mutated:
        graph.nodes = kept
        return True
    return False


def _identity(node):
    if node.op not in ("Identity", "StopGradient"):
        return None
    src = node.inputs[0]
    if node.device and resolved_device(node) != resolved_device(src[0]):
        return None  # an explicit copy to another device
    return src


def _simplify(node):
    """The replacement value ``(node, index)``, True if ``node`` was rewritten, or None."""
    op = node.op
    ins = node.inputs
    aval = node.avals[0] if node.avals else None
    if aval is None or aval.dtype.is_complex:
        return None
    if op in ("Mul", "AddV2") and len(ins) == 2:
        unit = 1 if op == "Mul" else "-0"
        if _is_const(ins[1], unit) and _same(ins[0], aval):
            return ins[0]
        if _is_const(ins[0], unit) and _same(ins[1], aval):
            return ins[1]
        return None
    if op in ("RealDiv", "Pow") and _is_const(ins[1], 1) and _same(ins[0], aval):
        return ins[0]
    if op == "Sub" and _is_const(ins[1], "+0") and _same(ins[0], aval):
        return ins[0]
    if op == "Neg":
        src, _ = ins[0]
        if src.op == "Neg" and _same(src.inputs[0], aval):
            return src.inputs[0]
        return None
    if op == "Cast":
        return ins[0] if _same(ins[0], aval) else None
    if op == "Transpose":
        return _transpose(node, aval)
    if op in _SAME_SHAPE_OPS:
        if aval.shape is not None and None not in aval.shape and _same(ins[0], aval):
            return ins[0]
        if op == "Reshape" and ins[0][0].op == "Reshape":
            # The inner reshape's data; this node's own run-time shape input (if any) stays.
            node.inputs = [ins[0][0].inputs[0]] + list(ins[1:])
            return True
    return None


def _same(ref, aval):
    src, idx = ref
    mine = src.avals[idx]
    return mine.shape is not None and mine == aval


def _is_const(ref, unit):
    """Whether ``ref`` is a constant filled with ``unit`` (1, "+0" or "-0")."""
    src, _ = ref
    if src.op != builtins.CONST:
        return False
    value = src.value
    if value.size == 1:  # the common scalar case, without numpy reductions
        v = value.reshape(()).item() if hasattr(value, "reshape") else value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return False
        if unit == 1:
            return v == 1
        if v != 0:
            return False
        return isinstance(v, int) or (math.copysign(1.0, v) < 0) == (unit == "-0")
    value = np.asarray(value)
    if value.dtype.kind not in "biuf" or value.size == 0:
        return False
    if unit == 1:
        return bool(np.all(value == 1))
    if not np.all(value == 0):
        return False
    if value.dtype.kind != "f":
        return True  # integer zeros have no sign
    return bool(np.all(np.signbit(value) == (unit == "-0")))


def _transpose(node, aval):
    src, _ = node.inputs[0]
    rank = len(aval.shape) if aval.shape is not None else None
    outer = _perm(node.attrs.get("perm"), rank)
    if outer is None:
        return None
    if src.op == "Transpose":
        inner = _perm(src.attrs.get("perm"), rank)
        if inner is None:
            return None
        composed = tuple(inner[q] for q in outer)
        base = src.inputs[0]
    else:
        composed, base = outer, node.inputs[0]
    if composed == tuple(range(rank)):
        return base if _same(base, aval) else None
    if base is node.inputs[0]:
        return None
    node.inputs = [base]
    node.attrs = dict(node.attrs, perm=composed)
    return True


def _perm(perm, rank):
    if rank is None:
        return None
    if perm is None:
        return tuple(range(rank - 1, -1, -1))
    try:
        return tuple(int(p) % rank for p in perm) if rank else ()
    except (TypeError, ValueError):
        return None
