"""Remapping (TF's ``remapper``): a pair of ops that one kernel computes in one pass.

* ``ReluGrad(MaxPoolGrad(x, dy), x)`` -> ``MaxPoolGrad(x, dy, relu=True)``. A relu
  followed by a max pool differentiates into exactly this pair (the relu's gradient
  reads the relu output, which is the pooled input). The max-pool kernel already marks
  each window's maximum; the relu's factor ``x > 0`` joins that mask instead of being a
  second pass over the full-size gradient (ReluGrad read two arrays and wrote a third
  of the pooled input's size). The results are the same bits as the two ops'.

* ``MaxPool(Relu(c + b))`` -> ``Relu(MaxPool(c) + b)`` when ``b`` is constant over
  every pooling window (a per-channel bias, broadcast over the spatial axes). Rounding
  ``c + b`` and the relu are monotone (non-decreasing), so each window's maximum is
  reached at the same ``c`` and the pooled values are the same bits. The bias add, the
  relu, the relu gradient and the bias gradient (a ``SumToShape`` over the spatial
  axes) then run on the pooled size, 4x smaller for a 2x2 pool: the gradient pair
  ``ReluGrad(MaxPoolGrad(r, dp), r)`` becomes ``MaxPoolGrad(c, ReluGrad(dp, p))`` and
  the bias gradient sums ``ReluGrad(dp, p)``, which holds the same terms as the full
  gradient (each window routes its value to one element), added in another order.
  Where two elements of a window differ but round to the same ``c + b``, the traced
  pair routes the gradient to the first of them and the rewritten graph to the larger
  ``c``; both are a maximum of the relu's output, so both are gradients of the
  function TF computes, and that choice is the only difference beyond the rounding of
  the bias sum. Without a bias, ``MaxPool(Relu(c))`` -> ``Relu(MaxPool(c))`` gives the
  pair's bits in the gradient too. Where the windows tile a channels-last input, the
  gradient is ``MaxPoolGradWithOutput(c, MaxPool(c), ReluGrad(dp, p))``: the tiled
  kernel reads the forward pass's window maxima instead of recomputing them (the same
  bits as MaxPoolGrad).

The rewrites apply when the values they retire have no other use, no node involved
carries control inputs and all run on one device. It runs after the gradient is traced, so the
rewritten node's own gradient rule is only there for completeness (``MaxPoolGrad`` with
``relu`` differentiates like the pair).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import passes
    >>> def f(x):
    ...     with ef.GradientTape() as tape:
    ...         tape.watch(x)
    ...         y = ef.reduce_sum(ef.nn.max_pool2d(ef.nn.relu(x), 2, 2, "VALID"))
    ...     return tape.gradient(y, x)
    >>> graph = ef.function(f).get_concrete_function(ef.TensorSpec([1, 4, 4, 1])).graph
    >>> [n.op for n in passes.optimize(graph).nodes].count("ReluGrad")
    0
"""

from __future__ import annotations

from eagerflow.function.passes.common import (
    Substitution, consumers, new_node, readers, rebuild, resolved_device,
)
from eagerflow.ops import registry
from eagerflow.ops.nn import pool_kernels
from eagerflow.ops.nn.window_geometry import CHANNELS_FIRST

__all__ = ["run"]


def run(graph):
    """Applies the rewrites above; returns True if the graph changed."""
    changed = _pool_before_bias_relu(graph)
    return _fuse_relu_into_max_pool_grad(graph) or changed


def _fuse_relu_into_max_pool_grad(graph):
    uses = consumers(graph)
    outputs = {n for n, _ in graph.outputs}
    fused = {}      # ReluGrad node -> the MaxPoolGrad node replacing it
    dropped = set()
    for node in graph.nodes:
        pool = _max_pool_grad_under_relu_grad(node, uses, outputs)
        if pool is not None and pool not in dropped:
            fused[node] = pool
            dropped.add(pool)
    if not fused:
        return False
    return rebuild(graph, fused, dropped, _max_pool_grad_with_relu)


def _max_pool_grad_with_relu(node, pool, sub):
    return [new_node(sub.graph, "MaxPoolGrad", pool.inputs, dict(pool.attrs, relu=True),
                     node.avals, prim=pool.prim, device=node.device,
                     name=pool.name + "_relu", origin=node.origin)]


def _max_pool_grad_under_relu_grad(node, uses, outputs):
    """The MaxPoolGrad that ``node`` (a ReluGrad) multiplies by ``x > 0``, or None."""
    if node.op != "ReluGrad" or node.control_inputs or len(node.inputs) != 2:
        return None
    (pool, index), features = node.inputs
    if pool.op != "MaxPoolGrad" or index != 0 or pool.control_inputs or \
            pool.attrs.get("relu") or pool in outputs or uses.get(pool, 0) != 1:
        return None
    if pool.inputs[0] != features or resolved_device(pool) != resolved_device(node):
        return None
    # The product's dtype is the gradient's; MaxPoolGrad computes in that dtype already.
    if pool.avals[0].dtype is not node.avals[0].dtype:
        return None
    return pool


# -- MaxPool(Relu(c + b)) -> Relu(MaxPool(c) + b) ----------------------------------------



def _spatial_axes(pool):
    """The pooled axes of a MaxPool node's input (from the end of its shape)."""
    nd = len(pool.attrs["ksize"])
    lead = 2 if pool.attrs["data_format"] in CHANNELS_FIRST else 1
    rank = len(pool.avals[0].shape)
    return [lead + i - rank for i in range(nd)]


def _constant_over(shape, axes):
    """True when an operand of ``shape`` broadcast to the larger rank-``-min(axes)`` shape
    is constant along each of ``axes`` (negative axis numbers)."""
    return all(-a > len(shape) or shape[a] == 1 for a in axes)


def _bias_relu_pool(pool, readers, order):
    """The match of the rewrite at ``pool`` (a MaxPool node), or None.

    Returns ``(relu, add, conv_ref, bias_ref, pairs)`` (``add`` and ``bias_ref`` None
    without a bias): ``pairs`` maps each backward ``MaxPoolGrad(relu, dp)`` to its
    ``ReluGrad`` reader.
    """
    if pool.op != "MaxPool" or pool.control_inputs or pool.inputs[0][1] != 0 or \
            pool.avals[0].shape is None:
        return None
    relu = pool.inputs[0][0]
    if relu.op != "Relu" or relu.control_inputs or relu.inputs[0][1] != 0:
        return None
    add, conv_ref, bias_ref = _bias_add(relu.inputs[0], pool)
    aval = relu.avals[0]
    if aval.shape is None or not aval.dtype.is_floating:
        return None
    device = resolved_device(pool)
    if resolved_device(relu) != device or add is not None and resolved_device(add) != device:
        return None
    pairs = {}
    for user in readers.get(relu, []):
        # The backward pairs: MaxPoolGrad(relu, dp) read once, by ReluGrad(it, relu or add).
        if user is None or user.op != "MaxPoolGrad" or user.inputs[0] != (relu, 0) or \
                user.inputs[1] == (relu, 0) or user.attrs != pool.attrs or \
                order[user] < order[pool] or user.control_inputs:
            continue
        grads = readers.get(user, [])
        grad = grads[0] if len(grads) == 1 else None
        if grad is not None and grad.op == "ReluGrad" and grad.inputs[0] == (user, 0) and \
                grad.inputs[1] in ((relu, 0), relu.inputs[0]) and not grad.control_inputs and \
                resolved_device(user) == device == resolved_device(grad):
            pairs[user] = grad
    known = {pool, relu} | set(pairs) | set(pairs.values())
    if any(u not in known for u in readers.get(relu, []) + readers.get(add, [])):
        return None
    return relu, add, conv_ref, bias_ref, pairs


def _bias_add(ref, pool):
    """``(add, c, b)`` when ``ref`` is ``AddV2(c, b)`` with ``b`` constant over the
    windows of ``pool``, else ``(None, ref, None)``: a relu of ``c`` alone."""
    add = ref[0]
    if ref[1] != 0 or add.op != "AddV2" or add.control_inputs or len(add.inputs) != 2:
        return None, ref, None
    aval = add.avals[0]
    full = [r for r in add.inputs
            if tuple(r[0].avals[r[1]].shape or ()) == tuple(aval.shape or (None,))
            and r[0].avals[r[1]].dtype is aval.dtype]
    if not full:
        return None, ref, None
    bias = add.inputs[1] if add.inputs[0] == full[0] else add.inputs[0]
    shape = bias[0].avals[bias[1]].shape
    if shape is None or not _constant_over(tuple(shape), _spatial_axes(pool)):
        return None, ref, None
    return add, full[0], bias


def _tiles_channels_last(pool):
    """Whether a MaxPool node's windows tile its channels-last input (the max-pool
    gradient's tiled form, ``pool_kernels._tiles``)."""
    attrs = pool.attrs
    shape = pool.inputs[0][0].avals[pool.inputs[0][1]].shape
    if attrs["data_format"] in CHANNELS_FIRST or shape is None:
        return False
    try:
        return pool_kernels._tiles(pool_kernels.geometry(tuple(shape), attrs), attrs)
    except Exception:  # noqa: BLE001 - a geometry it cannot judge keeps MaxPoolGrad
        return False


def _pool_before_bias_relu(graph):
    """Pools before the bias add and the relu (see the module docstring)."""
    reads = readers(graph)
    order = {node: i for i, node in enumerate(graph.nodes)}
    matches = {}
    for node in graph.nodes:
        if node.op == "MaxPool":
            match = _bias_relu_pool(node, reads, order)
            if match is not None:
                matches[node] = match
    if not matches:
        return False
    prims = {op: registry.get(op) for op in ("MaxPool", "AddV2", "Relu", "ReluGrad",
                                             "MaxPoolGrad", "MaxPoolGradWithOutput")}
    dropped, before = set(), {}
    sub = Substitution(graph)

    def make(op, inputs, attrs, aval, like):
        return new_node(graph, op, inputs, attrs, (aval,), prim=prims[op], device=like.device,
                        name=like.name + "_pooled", origin=like.origin)

    for pool, (relu, add, conv_ref, bias_ref, pairs) in matches.items():
        small = pool.avals[0]
        pooled = make("MaxPool", [conv_ref], pool.attrs, small, pool)
        before[pool] = [pooled]
        if add is not None:
            before[pool].append(make("AddV2", [(pooled, 0), bias_ref], {}, small, add))
            dropped.add(add)
        out = make("Relu", [(before[pool][-1], 0)], {}, small, relu)
        before[pool].append(out)
        sub.replace(pool, 0, (out, 0))
        dropped.update((pool, relu))
        spatial = _spatial_axes(pool)
        for grad, relu_grad in pairs.items():
            small_grad = make("ReluGrad", [grad.inputs[1], (out, 0)], {}, small, relu_grad)
            if _tiles_channels_last(pool):
                # The pooled convolution is in the graph: the gradient's tiled form reads
                # its window maxima instead of recomputing them.
                full_grad = make("MaxPoolGradWithOutput",
                                 [conv_ref, (pooled, 0), (small_grad, 0)], grad.attrs,
                                 relu_grad.avals[0], grad)
            else:
                full_grad = make("MaxPoolGrad", [conv_ref, (small_grad, 0)], grad.attrs,
                                 relu_grad.avals[0], grad)
            before[grad] = [small_grad, full_grad]
            dropped.update((grad, relu_grad))
            sub.replace(relu_grad, 0, (full_grad, 0))
            # Bias gradients sum the spatial axes away: the pooled gradient holds the
            # same terms.
            for user in reads.get(relu_grad, []) if add is not None else ():
                if user is not None and user.op == "SumToShape" and \
                        _constant_over(tuple(user.attrs["shape"]), spatial) and \
                        None not in tuple(user.attrs["shape"]):
                    user.inputs = [(small_grad, 0) if ref == (relu_grad, 0) else ref
                                   for ref in user.inputs]
    nodes = []
    for node in graph.nodes:
        sub.apply(node)
        for new in before.get(node, ()):
            sub.apply(new)
            nodes.append(new)
        if node not in dropped:
            nodes.append(node)
    graph.nodes = nodes
    sub.finish()
    return True
