"""Executor steps for functional control flow: ``If``, ``Case``, ``While`` and ``Assert``.

Each step runs sub-graphs (branches, loop condition and body) with executors of their own.
A sub-graph is compiled the first time it runs and kept on the step, so a branch that is
never taken costs nothing and a loop body is compiled once, not once per iteration. The
sub-graphs are looked up by name in the library of the outermost graph (control flow
nested anywhere names its sub-graphs in that one library).

Node conventions (built by ``control_flow.py``):

* ``If(pred, *inputs)``: attrs ``then_branch``/``else_branch``; both branches take all of
  ``inputs`` (the union of what they capture) and return the node's outputs.
* ``Case(index, *inputs)``: attrs ``branches`` (a tuple of names); an index out of range
  runs the last branch, as TF's Case op.
* ``While(*loop_vars, *captures[, maximum_iterations])``: attrs ``cond``, ``body``,
  ``n_loop_vars``, ``n_captures``, ``has_max``; ``cond`` and ``body`` take loop vars then
  captures. With ``history=True`` (set when a gradient needs it) the node also outputs,
  per loop var, the values that entered each iteration stacked on a new first axis, then
  the iteration count (int32), then per loop var the shapes of those values ``[count,
  rank]`` (a value whose shape changes between iterations is stacked padded with zeros):
  the backward pass walks them in reverse.
* ``Assert(*conditions)``: attrs ``kind`` (``"any"`` or ``"at_most_one"``) and
  ``message``; raises InvalidArgumentError at run time when violated (used by ``case``).
  Kind ``"data"`` (``eagerflow.debugging.Assert``): inputs ``(condition, *data)``, attrs
  ``order`` (``s``/``t`` per data item), ``strings`` and ``summarize``; fails when any
  element of the condition is false, printing the strings and the data's values.
"""

from __future__ import annotations

import numpy as np

from eagerflow import errors
from eagerflow.function import builtins
from eagerflow.function.executor import BUILTIN_STEPS, Executor

__all__ = ["SubExecutor", "library_of"]


class SubExecutor(Executor):
    """An Executor for a sub-graph, resolving nested control flow in ``library``."""

    def __init__(self, graph, library):
        self.library = library  # set before compiling: nested steps look it up
        super().__init__(graph)


def library_of(executor):
    """The library that names sub-graphs for nodes run by ``executor``."""
    library = getattr(executor, "library", None)
    return library if library is not None else executor.graph.library


class _Compiled:
    """Sub-graph executors of one step, each compiled on first use."""

    __slots__ = ("library", "names", "executors")

    def __init__(self, library, names):
        self.library = library
        self.names = tuple(names)
        self.executors = [None] * len(self.names)

    def get(self, k):
        ex = self.executors[k]
        if ex is None:
            name = self.names[k]
            graph = self.library.get(name)
            if graph is None:
                raise errors.NotFoundError(
                    None, None, "Sub-graph %r is not in the function library." % name)
            ex = self.executors[k] = SubExecutor(graph, self.library)
        return ex


def _pack(values, n_outputs):
    if n_outputs == 1:
        return values[0]
    return tuple(values)


def _truth(value):
    # numpy and cupy scalars and 0-d arrays alike (a cupy value syncs with its device here).
    return bool(value)


def _if_step(node, device, executor):
    compiled = _Compiled(library_of(executor),
                         (node.attrs["then_branch"], node.attrs["else_branch"]))
    n_out = node.num_outputs

    def run_if(pred, *inputs):
        outs = compiled.get(0 if _truth(pred) else 1).run(inputs, ())
        return _pack(outs, n_out)

    return run_if


def _case_step(node, device, executor):
    compiled = _Compiled(library_of(executor), node.attrs["branches"])
    n_out = node.num_outputs
    last = len(compiled.names) - 1

    def run_case(index, *inputs):
        k = int(index)
        if k < 0 or k > last:
            k = last  # TF's Case runs the last branch (the default) when out of range
        return _pack(compiled.get(k).run(inputs, ()), n_out)

    return run_case


def _while_step(node, device, executor):
    attrs = node.attrs
    compiled = _Compiled(library_of(executor), (attrs["cond"], attrs["body"]))
    n = attrs["n_loop_vars"]
    n_caps = attrs["n_captures"]
    has_max = attrs.get("has_max", False)
    # Decided once, at compile time, from the outputs the node has now: an executor
    # compiled before a gradient asked for the history keeps the original outputs.
    history = node.num_outputs == 3 * n + 1
    n_out = node.num_outputs

    def run_while(*inputs):
        loop_vars = list(inputs[:n])
        caps = list(inputs[n:n + n_caps])
        limit = int(inputs[n + n_caps]) if has_max else None
        cond_ex = compiled.get(0)
        body_ex = None
        kept = [[] for _ in range(n)] if history else None
        first = loop_vars
        i = 0
        while True:
            # As TF: the condition is evaluated even when the iteration limit is reached.
            keep = _truth(cond_ex.run(loop_vars + caps, ())[0])
            if limit is not None and i >= limit:
                break
            if not keep:
                break
            if body_ex is None:
                body_ex = compiled.get(1)
            if history:
                for j in range(n):
                    kept[j].append(loop_vars[j])
            loop_vars = list(body_ex.run(loop_vars + caps, ()))
            i += 1
        if not history:
            return _pack(loop_vars, n_out)
        stacked = [_stack(kept[j], first[j], node, j) for j in range(n)]
        return tuple(loop_vars + [h for h, _ in stacked] + [np.int32(i)]
                     + [s for _, s in stacked])

    return run_while


def _array_module(value):
    # The loop variables' own array module: numpy, or cupy for values on a GPU.
    if type(value).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def _stack(values, first, node, j):
    """One loop variable's history: its values stacked over the iterations, and their
    shapes ``[iterations, rank]``.

    A variable whose shape changes between iterations (a TensorArray that grows) is stacked
    padded with zeros to the largest value along each dimension; the backward pass cuts
    each iteration's value back out with the recorded shapes.
    """
    xp = _array_module(values[0] if values else first)
    if not values:
        first = xp.asarray(first)
        return (xp.zeros((0,) + tuple(first.shape), dtype=first.dtype),
                np.zeros((0, first.ndim), np.int32))
    shapes = np.array([np.shape(v) for v in values], np.int32).reshape(len(values), -1)
    if shapes.shape[1] == 0 or (shapes == shapes[0]).all():
        return xp.stack([xp.asarray(v) for v in values]), shapes
    if len({np.ndim(v) for v in values}) > 1:
        raise errors.UnimplementedError(
            None, builtins.WHILE, "Gradients of while_loop need every iteration's loop "
            "variable %d to have one rank, but it took the shapes %s (node %s). Keep the "
            "rank fixed or compute the gradient outside the loop." % (
                j, sorted({tuple(np.shape(v)) for v in values}), node.name))
    out = xp.zeros((len(values),) + tuple(int(x) for x in shapes.max(0)),
                   dtype=xp.asarray(values[0]).dtype)
    for k, v in enumerate(values):
        out[(k,) + tuple(slice(0, int(x)) for x in shapes[k])] = v
    return out, shapes


def _assert_step(node, device, executor):
    kind = node.attrs.get("kind", "any")
    message = node.attrs.get("message", "assertion failed")
    if kind == "data":
        return _assert_data_step(node, message)

    def run_assert(*conditions):
        values = [bool(c) for c in conditions]
        if kind == "any":
            failed = not any(values)
        else:
            failed = sum(values) > 1
        if failed:
            raise errors.InvalidArgumentError(
                None, builtins.ASSERT, "%s (conditions: %s)" % (message, values))

    return run_assert


def _assert_data_step(node, message):
    from eagerflow.function.assertions import format_data

    order = node.attrs.get("order", "")
    strings = list(node.attrs.get("strings", ()))
    summarize = node.attrs.get("summarize", 3)

    def run_assert(condition, *data):
        if bool(np.all(np.asarray(condition))):
            return
        parts, s, t = [], iter(strings), iter(data)
        for kind in order:
            parts.append(next(s) if kind == "s" else np.asarray(next(t)))
        raise errors.InvalidArgumentError(
            None, builtins.ASSERT, "%s: %s" % (message, format_data(parts, summarize)))

    return run_assert


BUILTIN_STEPS.update({
    builtins.IF: _if_step,
    builtins.CASE: _case_step,
    builtins.WHILE: _while_step,
    builtins.ASSERT: _assert_step,
})
