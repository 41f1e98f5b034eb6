"""Graph optimizer passes: small rewrites over the IR, run before a graph is compiled.

``optimize(graph)`` returns a new, optimized Graph with the same calling convention
(inputs, captures and outputs by position); the traced graph is never modified, so
``ConcreteFunction.graph`` stays what was traced. The passes, one module each:

* ``constant_folding``: constant subexpressions become Const nodes;
* ``algebraic``: exact arithmetic identities, transpose/reshape chains, and removal of
  Identity/StopGradient;
* ``cse``: duplicate computations (and variable reads between writes) merge;
* ``dce``: nodes no output or side effect needs are dropped;
* ``collectives``: independent all-reduces of the same kind merge into one node;
* ``remap``: op pairs one kernel computes in one pass (a max-pool gradient and the relu
  gradient after it);
* ``fused_matmul``: a MatMul with its bias add (and relu) as one FusedMatMul;
* ``slice_grads``: the summed gradients of a tensor's pieces as one Pack;
* ``layer_norm``: a layer norm's input gradient as one LayerNormGrad;
* ``conv_columns``: a convolution and its filter gradient on one Im2Col column matrix;
* ``assign_update``: ``v.assign_sub(u)`` of an elementwise ``u`` as ``v.assign(v - u)``, so
  that the subtraction joins ``u``'s fused region and writes into the variable's buffer
  (then ``cse`` again, which merges its read with an earlier read of ``v``);
* ``fusion``: clusters of elementwise ops become one FusedElementwise node;
* ``update_loops``: a variable's update regions that read each other's assigned results
  (Adam's moments, then its parameter) as one FusedElementwise node with several results,
  when the regions compile to loops (``backend.cpu_jit``).

The first five run in that order, repeated while anything changes (at most ``MAX_ROUNDS``
times), then collectives, remap, fused_matmul, slice_grads, layer_norm, conv_columns,
assign_update, fusion and update_loops run once (all but collectives under the
``remapping`` option, the last three also under ``elementwise_fusion``). Each is switched by
``eagerflow.config.optimizer`` options (collectives only by ``disable_meta_optimizer``:
merging never changes a value, and every rank must rewrite its graph the same way).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import passes
    >>> f = ef.function(lambda x: ef.tanh(x) * 1.0 + ef.tanh(x))
    >>> graph = f.get_concrete_function(ef.TensorSpec([3])).graph
    >>> [n.op for n in passes.optimize(graph).nodes]
    ['Placeholder', 'FusedElementwise']
"""

from __future__ import annotations

from eagerflow.function import builtins
from eagerflow.function import executor as _executor
from eagerflow.function import optimizer_config
from eagerflow.function.passes import (
    algebraic, assign_update, collectives, constant_folding, conv_columns, cse, dce,
    fused_matmul, fused_step, fusion, layer_norm, remap, slice_grads, update_loops,
)
from eagerflow.function.passes.common import copy_graph

__all__ = ["optimize", "MAX_ROUNDS"]

MAX_ROUNDS = 4

_executor.BUILTIN_STEPS[builtins.FUSED_ELEMENTWISE] = fused_step.fused_step


def optimize(graph, options=None):
    """Returns an optimized copy of ``graph``.

    Args:
        graph: A Graph (not modified).
        options: Optional dict of ``eagerflow.config.optimizer`` options overriding the
            configured ones for this call, e.g. ``{"remapping": False}``.

    Returns:
        A new Graph computing the same outputs with the same side effects in the same order.
    """
    opts = optimizer_config.effective_options(options)
    return _optimize(graph, opts, {})


def _optimize(graph, opts, done):
    if id(graph) in done:
        return done[id(graph)]
    out = copy_graph(graph)
    done[id(graph)] = out
    out.library = {name: _optimize(sub, opts, done) if hasattr(sub, "nodes") else sub
                   for name, sub in graph.library.items()}
    if opts["disable_meta_optimizer"]:
        return out
    computing = sum(1 for n in out.nodes if n.op != builtins.PLACEHOLDER)
    if opts["min_graph_nodes"] > 0 and computing < opts["min_graph_nodes"]:
        return out
    rounds = []
    if opts["debug_stripper"]:
        rounds.append(dce.strip_debug)
    if opts["constant_folding"]:
        rounds.append(constant_folding.run)
    if opts["arithmetic_optimization"]:
        rounds.append(algebraic.run)
    if opts["dependency_optimization"]:
        rounds.append(algebraic.remove_identities)
    if opts["common_subgraph_elimination"]:
        rounds.append(cse.run)
    if not opts["disable_model_pruning"]:
        rounds.append(dce.run)
    for _ in range(MAX_ROUNDS):
        changed = False
        for rewrite in rounds:
            changed = rewrite(out) or changed
        if not changed:
            break
    collectives.run(out)
    if opts["remapping"]:
        remap.run(out)
        fused_matmul.run(out)
        slice_grads.run(out)
        layer_norm.run(out)
        conv_columns.run(out)
    if opts["remapping"] and opts["elementwise_fusion"]:
        if assign_update.run(out) and opts["common_subgraph_elimination"]:
            # Its reads merge with the update's own (Keras' ``m += (g - m) * c`` reads m
            # twice), so that the region reads the variable's buffer once and may write
            # into it.
            cse.run(out)
        fusion.run(out)
        update_loops.run(out)
    return out
