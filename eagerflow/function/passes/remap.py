"""Remapping (TF's ``remapper``): a pair of ops that one kernel computes in one pass.

* ``ReluGrad(MaxPoolGrad(x, dy), x)`` -> ``MaxPoolGrad(x, dy, relu=True)``. A relu
  followed by a max pool differentiates into exactly this pair (the relu's gradient
  reads the relu output, which is the pooled input). The max-pool kernel already marks
  each window's maximum; the relu's factor ``x > 0`` joins that mask instead of being a
  second pass over the full-size gradient (ReluGrad read two arrays and wrote a third
  of the pooled input's size). The results are the same bits as the two ops'.

The rewrite applies when the MaxPoolGrad result has no other use, neither node carries
control inputs and both run on one device. It runs after the gradient is traced, so the
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
    Substitution, consumers, new_node, resolved_device,
)

__all__ = ["run"]


def run(graph):
    """Applies the rewrites above; returns True if the graph changed."""
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
    sub = Substitution(graph)
    nodes = []
    for node in graph.nodes:
        sub.apply(node)
        if node in dropped:
            continue
        pool = fused.get(node)
        if pool is None:
            nodes.append(node)
            continue
        new = new_node(graph, "MaxPoolGrad", pool.inputs, dict(pool.attrs, relu=True),
                       node.avals, prim=pool.prim, device=node.device,
                       name=pool.name + "_relu", origin=node.origin)
        sub.replace(node, 0, (new, 0))
        nodes.append(new)
    graph.nodes = nodes
    sub.finish()
    return True


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
