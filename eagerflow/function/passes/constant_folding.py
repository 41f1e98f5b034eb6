"""Constant folding: evaluate pure nodes whose inputs are all constants, once, at compile time.

The node's own numpy kernel computes the value, so a folded constant is bit-for-bit what the
graph would have produced on the CPU. Results must have the node's dtype and a shape
compatible with its abstract value; larger results than ``MAX_ELEMENTS`` are left alone (a
folded constant lives as long as the graph). Nodes that only read their input's *shape*
(Shape, Size, Rank, ZerosLike, OnesLike; BroadcastReduced's second input) fold whenever that
shape is fully known. A kernel
that raises is not folded: the error then happens at run time, where it did before.
"""

from __future__ import annotations

import math

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow.function import builtins
from eagerflow.function.passes.common import Substitution, is_pure, new_node
from eagerflow.ops import static_value
from eagerflow.ops.registry import AbstractValue

MAX_ELEMENTS = 1_000_000
# An op that reads inputs only for their shape (its declaration's ``shape_only``: Shape,
# ZerosLike, BroadcastReduced...) folds on a stand-in of that shape. (The gradient of a full
# reduction broadcasts a constant seed to the input's shape.) What it makes is a fill of a
# shape, or a shape: filling is cheap at run time, and a big folded fill would only cost
# memory and a large serialized graph.
MAX_FILL_ELEMENTS = 4096


def run(graph):
    """Folds constant subexpressions into Const nodes; returns True if the graph changed."""
    from eagerflow.backend import numpy_backend

    sub = Substitution(graph)
    nodes = []
    changed = False
    for node in graph.nodes:
        sub.apply(node)
        values = _foldable_inputs(node)
        if values is None:
            nodes.append(node)
            continue
        outs = _evaluate(node, values, numpy_backend)
        if outs is None:
            nodes.append(node)
            continue
        changed = True
        if len(outs) == 1:
            _make_const(node, outs[0])
            nodes.append(node)
            continue
        for i, (array, aval) in enumerate(outs):
            const = new_node(graph, builtins.CONST, (), {}, (aval,), device=node.device,
                             value=array, name="%s_%d" % (node.name, i), origin=node.origin)
            nodes.append(const)
            sub.replace(node, i, (const, 0))
    if sub.finish() or changed:
        graph.nodes = nodes
        return True
    return False


def _foldable_inputs(node):
    """The input arrays to evaluate ``node`` on, or None if it cannot fold."""
    if node.prim is None or not is_pure(node):
        return None
    for aval in node.avals:  # skip big results before computing them
        if aval.shape and None not in aval.shape and math.prod(aval.shape) > MAX_ELEMENTS:
            return None
    shape_only = node.prim.shape_only
    values = []
    for k, (src, idx) in enumerate(node.inputs):
        if k in shape_only:
            aval = src.avals[idx]
            if aval.shape is None or any(d is None for d in aval.shape):
                return None
            # A zero-strided stand-in: the kernel reads only its shape and dtype.
            values.append(np.broadcast_to(np.zeros((), aval.dtype.np_dtype), aval.shape))
        elif src.op != builtins.CONST:
            return None
        else:
            values.append(src.value)
    return values


def _evaluate(node, values, backend):
    """``[(array, aval)]`` per output, or None when folding would change the program."""
    kernel = node.prim.kernel(backend)
    try:
        with np.errstate(all="ignore"):
            values, attrs = static_value.bind_dynamic(values, node.attrs)
            out = kernel(*values, **attrs)
    except Exception:  # noqa: BLE001 - the failure belongs to run time, as it did unfolded
        return None
    outs = (out,) if node.prim.single else tuple(out)
    if len(outs) != node.num_outputs:
        return None
    limit = MAX_FILL_ELEMENTS if node.prim.shape_only else MAX_ELEMENTS
    result = []
    for array, aval in zip(outs, node.avals):
        array = np.array(array, copy=True)  # own the memory: kernels may return views
        if array.size > limit or array.dtype != aval.dtype.np_dtype:
            return None
        if aval.shape is not None and (len(aval.shape) != array.ndim or any(
                d is not None and d != s for d, s in zip(aval.shape, array.shape))):
            return None
        array.flags.writeable = False
        result.append((array, AbstractValue(array.shape, dtypes_lib.from_numpy(array.dtype))))
    return result


def _make_const(node, out):
    array, aval = out
    node.op = builtins.CONST
    node.inputs = []
    node.attrs = {}
    node.prim = None
    node.value = array
    node.avals = (aval,)
    node.stateful = False
