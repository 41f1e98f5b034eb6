"""Custom gradients in graphs: the ``CustomGradient`` node and its backward sub-graph.

While a function is traced, a ``custom_gradient`` call runs its forward ops into the graph
as usual; then its ``grad_fn`` is traced into a sub-graph of the function library whose
arguments are one cotangent per output (forward tensors it uses become further inputs, as
for the branches of ``cond``). One node ties them together, as TF's gradient-override
``IdentityN`` does::

    %y2 = CustomGradient(%y, %x, %c, grad="custom_gradient_grad", n_sources=1,
                         variables=(0,), has_grad=(True, True))

Inputs: the ``n`` forward outputs ``y``, the ``n_sources`` tensors ``x`` the rule
differentiates, then the forward values ``c`` the backward sub-graph reads. ``variables``
lists further sources by the graph's variable index (variables passed as arguments, then
those ``grad_fn(variables=...)`` receives). The outputs are the node's first ``n`` inputs:
the executor forwards them and the optimizer removes the node, so running the graph costs
nothing. A tape differentiating the node runs the sub-graph on ``(cotangents, c)``: its
outputs are the gradients of the sources whose ``has_grad`` entry is True (the others have
none).

Because the rule is a graph, it is serialized with the function like any sub-graph (and
checked like one when a file is loaded), and the one backward rule here serves every
caller: the traced function's own gradient, a cond branch or loop body being
differentiated (:func:`eagerflow.function.control_flow_grad.replay`), and a loaded
function called under a tape, eagerly or inside another trace
(:func:`eagerflow.function.replay.replay`).

Example:
    >>> import eagerflow as ef
    >>> @ef.custom_gradient
    ... def clip_grad(x):
    ...     return ef.identity(x), lambda dy: ef.clip_by_value(dy, -1.0, 1.0)
    >>> f = ef.function(lambda x: clip_grad(x) * 10.0)
    >>> [n.op for n in f.get_concrete_function(ef.TensorSpec([])).graph.nodes]
    ['Placeholder', 'Identity', 'CustomGradient', 'Const', 'Mul']
"""

from __future__ import annotations

from eagerflow.custom_gradient import Call, record, set_traced_call
from eagerflow.framework import context
from eagerflow.function import builtins, control_flow_grad
from eagerflow.function.executor import BUILTIN_STEPS
from eagerflow.function.symbolic import SymbolicTensor, user_frame
from eagerflow.tape import stop_recording_all
from eagerflow.tensor import Tensor, wrap

__all__ = ["trace_call", "replay_node"]

_state = context.state
OP = builtins.CUSTOM_GRADIENT


# -- tracing a custom_gradient call -----------------------------------------------------------
def trace_call(f, args, kwargs):
    """Runs a ``custom_gradient`` call while tracing: forward ops, backward sub-graph and
    one CustomGradient node; returns ``f``'s result with the node's outputs."""
    from eagerflow import nest
    from eagerflow.function import branch_tracing as cf

    tracer = _state.trace
    call = Call(f, args, kwargs)
    ys = [tracer.to_symbolic(o) for o in call.outputs]
    # The sources in the node's order: tensor arguments, then variable arguments, then the
    # variables read; `order` maps them to the positions of call.gradients().
    tensor_pos = [k for k, (_, a) in enumerate(call.tensor_args)
                  if not getattr(a, "_is_variable", False)]
    variable_pos = [k for k, (_, a) in enumerate(call.tensor_args)
                    if getattr(a, "_is_variable", False)]
    n_args = len(call.tensor_args)
    order = tensor_pos + variable_pos + [n_args + j for j in range(len(call.variables))]
    sources = [tracer.to_symbolic(call.tensor_args[k][1]) for k in tensor_pos]
    variables = [call.tensor_args[k][1] for k in variable_pos] + list(call.variables)

    def grad_body(*cots):
        grads = call.gradients(tuple(cots))
        return [grads[k] for k in order]

    root = cf.root_graph(tracer)
    with stop_recording_all():
        traced = cf.trace_subgraph(grad_body, cf.library_name(root, "custom_gradient_grad"),
                                    [y.aval for y in ys], structure=[0] * len(ys))
        captured = cf.bind_inputs([traced], len(ys))
    has_grad = tuple(t is not None for t in traced.flat)
    call.watch_variables([t for t in _state.tapes if t._recording])
    outputs = _emit(ys, sources, variables, traced.graph.name, traced.graph, captured,
                    has_grad, root.library)
    return nest.pack_sequence_as(call.result, outputs)


# -- the node and its tape record --------------------------------------------------------------
def _emit(ys, sources, variables, grad_name, grad_graph, captured, has_grad, library):
    """The node's outputs: a CustomGradient node inside a trace, fresh tensors eagerly;
    recorded on the tapes that watch a source, with the sub-graph as the backward."""
    tracer = _state.trace
    if tracer is not None:
        graph = tracer.graph
        root = getattr(tracer, "root", None)
        indices = []
        for v in variables:
            if root is not None:
                root.graph.variable_index(v)  # the function as a whole uses it too
            indices.append(graph.variable_index(v))
        attrs = {"grad": grad_name, "n_sources": len(sources), "variables": tuple(indices),
                 "has_grad": has_grad}
        from eagerflow.function.tracer import _device_string

        inputs = list(ys) + list(sources) + list(captured)
        node = graph.add_node(OP, [(t._node, t._index) for t in inputs], attrs,
                              [y.aval for y in ys], device=_device_string())
        node.origin = user_frame()
        if tracer.control_inputs:
            node.control_inputs.extend(tracer.control_inputs)
        outputs = [SymbolicTensor(graph, node, i) for i in range(len(ys))]
    else:
        outputs = [wrap(y._value, y._device) for y in ys]
    every = list(sources) + list(variables)

    def backward(cotangent):
        cots = cotangent if isinstance(cotangent, tuple) else (cotangent,)
        cots = [c if c is not None else _zeros_like(o) for c, o in zip(cots, outputs)]
        grads = iter(control_flow_grad.replay(grad_graph, cots + list(captured), library,
                                              "custom_gradient"))
        return tuple(next(grads) if h else None for h in has_grad)

    record(_state.tapes, every, outputs, backward,
                               devices=tracer is None)
    return outputs


def _zeros_like(t):
    from eagerflow.ops.math.arithmetic import zeros_like_t

    return zeros_like_t(t)


# -- replaying a node (a loaded function, a branch being differentiated) ----------------------
def replay_node(node, args, graph, library):
    """Re-emits a CustomGradient node on ``args`` (eager or symbolic); returns its outputs.

    Args:
        node: The CustomGradient node.
        args: One value per node input.
        graph: The graph holding ``node`` (its variables are the ones ``node`` names).
        library: The library holding the node's backward sub-graph.
    """
    attrs = node.attrs
    n, m = node.num_outputs, attrs["n_sources"]
    name = attrs["grad"]
    grad_graph = library[name]
    variables = [graph.variables[i] for i in attrs["variables"]]
    tracer = _state.trace
    target = library
    if tracer is not None:
        from eagerflow.function import branch_tracing as cf

        target = cf.root_graph(tracer).library
        name = import_subgraph(target, name, library)
    for tape in _state.tapes:
        if tape._recording and tape._watch_accessed_variables:
            for v in variables:
                if v.trainable:
                    tape._watch_variable(v)
    ys = [a if isinstance(a, Tensor) else wrap(a) for a in args[:n]]
    return _emit(ys, list(args[n:n + m]), variables, name, grad_graph, list(args[n + m:]),
                 tuple(attrs["has_grad"]), target)


def import_subgraph(target, name, source):
    """Makes ``source[name]`` (and the sub-graphs it names) reachable from ``target``;
    returns its name there.

    Within one library nothing changes. A sub-graph from another library (a loaded
    function's, inlined into a new trace) is added under a free name; when a sub-graph it
    names must be renamed, it is copied with the new names.
    """
    graph = source[name]
    if target.get(name) is graph:
        return name
    renamed = {}
    for node in graph.nodes:
        for key in builtins.BUILTINS[node.op].subgraphs if node.op in builtins.BUILTINS \
                else ():
            value = node.attrs[key]
            for sub in (value if isinstance(value, (tuple, list)) else (value,)):
                if sub not in renamed:
                    renamed[sub] = import_subgraph(target, sub, source)
    if any(k != v for k, v in renamed.items()):
        from eagerflow.function.passes.common import copy_graph

        graph = copy_graph(graph)
        for node in graph.nodes:
            spec = builtins.BUILTINS.get(node.op)
            for key in spec.subgraphs if spec is not None else ():
                value = node.attrs[key]
                node.attrs[key] = (type(value)(renamed[v] for v in value)
                                   if isinstance(value, (tuple, list)) else renamed[value])
    new, k = name, 0
    while new in target and target[new] is not graph:
        k += 1
        new = "%s_%d" % (name, k)
    target[new] = graph
    return new


# -- running the forward pass ----------------------------------------------------------------
def _step(node, device, executor):
    n = node.num_outputs
    if n == 1:
        return lambda *inputs: inputs[0]
    return lambda *inputs: inputs[:n]


BUILTIN_STEPS[OP] = _step
set_traced_call(trace_call)
