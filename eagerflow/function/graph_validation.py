"""Checks a graph decoded from bytes as a whole before any of it is compiled or run.

A serialized graph is untrusted input: a file someone downloaded, a message from the wire.
The decoder (``serialize``) already refuses what it cannot build (dangling references,
unknown dtypes, bad tensors). This module checks what the executor and its code generators
rely on, for every function of the library at once:

* names: node names follow TensorFlow's node-name grammar, attribute keys are plain ASCII
  identifiers (the executor passes attributes as keyword arguments) and device strings
  parse as device names;
* ops: each node's op is a registered primitive or a graph builtin, its attribute keys are
  ones the op's kernel accepts, and a builtin has the inputs, outputs and attributes its
  executor step reads;
* values: every declared shape has a byte size that fits in 63 bits, a primitive with a
  shape rule produces the dtypes and shapes the node declares, a variable op's value has its
  variable's dtype and shape, sub-graph names refer to functions of the library and no
  function calls itself (directly or through others), and a custom gradient's backward
  function takes and returns what its node passes and expects;
* effects: a loaded ``Print`` node writes only to stdout or stderr, never to a file.

Whatever is refused raises ``eagerflow.errors.DataLossError`` (or ``NotFoundError`` for an
op this process does not register) naming the function, the node and what to do.

The identifier grammar itself (:func:`keyword_name`) is what code generators call before
they write a name into generated source: nothing from a graph reaches generated code
unless it is a plain identifier.

Example:
    >>> from eagerflow.function import graph_validation
    >>> graph_validation.keyword_name("transpose_a", "MatMul")
    'transpose_a'
    >>> graph_validation.keyword_name("x=__import__('os')", "MatMul")
    Traceback (most recent call last):
    ...
    eagerflow.errors.DataLossError: ...
"""

from __future__ import annotations

import inspect
import keyword
import re

from eagerflow import errors
from eagerflow.framework.device_spec import DeviceSpec
from eagerflow.function import builtins
from eagerflow.ops import static_value

__all__ = ["keyword_name", "validate_graphs", "MAX_TENSOR_BYTES"]

# A plain ASCII identifier: what may be written as a keyword argument in generated code.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# TensorFlow's node-name grammar (``[A-Za-z0-9.][A-Za-z0-9_.\-/>]*``), bounded in length.
_NODE_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]{0,1023}\Z")
# No value a graph declares may need more bytes than an int64 counts.
MAX_TENSOR_BYTES = 2**63 - 1
_VARIABLE_OPS = builtins.names(variable=True)
_SUBGRAPH_ATTRS = {name: b.subgraphs for name, b in builtins.BUILTINS.items() if b.subgraphs}
_PRINT_STREAMS = frozenset(("stdout", "stderr"))
_kernel_keywords = {}
_DTYPE_NAMES = frozenset(("float16", "bfloat16", "float32", "float64", "int8", "int16",
                          "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
                          "complex64", "complex128"))


def _refuse(message):
    return errors.DataLossError(None, None, "Cannot load the serialized function: " + message)


def keyword_name(key, where):
    """``key`` if it is a plain ASCII identifier that is not a Python keyword.

    Code generators call this before writing an attribute key into generated source.

    Args:
        key: The attribute key.
        where: What the key belongs to (an op or node name), for the message.

    Returns:
        ``key``.

    Raises:
        DataLossError: If ``key`` is anything else (it could change the generated code).
    """
    if key.__class__ is str and _IDENTIFIER.match(key) and not keyword.iskeyword(key):
        return key
    raise _refuse("%s has the attribute key %r, which is not a plain identifier "
                  "([A-Za-z_][A-Za-z0-9_]*); the graph is damaged or hostile." % (
                      where, _short(key)))


def _short(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def validate_graphs(graphs, variables_of):
    """Checks every function of a decoded library; raises on the first problem.

    Args:
        graphs: ``{library name: Graph}``; ``""`` is the top-level function, whose
            ``library`` maps sub-graph names to graphs.
        variables_of: ``{library name: [Variable, ...]}``, each function's variables.

    Raises:
        DataLossError: For anything listed in the module docstring.
    """
    top = graphs[""]
    library = getattr(top, "library", None) or {}
    calls = {}
    for fname, graph in graphs.items():
        where = "function %r" % (graph.name if fname == "" else fname)
        calls[fname] = _validate_graph(graph, where, library, variables_of.get(fname, []))
    _check_acyclic(calls, graphs, library)


def _validate_graph(graph, where, library, variables):
    called = []
    for node in graph.nodes:
        at = "node %s (%s) of %s" % (_short(node.name), _short(node.op), where)
        if not (node.name.__class__ is str and _NODE_NAME.match(node.name)):
            raise _refuse("%s has the node name %s, which is not a valid node name "
                          "([A-Za-z0-9.][A-Za-z0-9_.\\-/>]*)." % (where, _short(node.name)))
        if node.prim is None and node.op not in builtins.BUILTINS:
            raise errors.NotFoundError(None, None, "Cannot load the serialized function: %s "
                                       "uses an op that is neither registered nor a graph "
                                       "builtin." % at)
        for key in node.attrs:
            keyword_name(key, at)
        if node.device:
            try:
                DeviceSpec.from_string(node.device)
            except Exception:  # noqa: BLE001 - any parse failure is a bad device string
                raise _refuse("%s has the device string %s, which is not a device name "
                              "(/job:J/replica:R/task:T/device:TYPE:N)." % (
                                  at, _short(node.device))) from None
        for aval in node.avals:
            _check_size(aval, at)
        if node.prim is not None:
            _check_primitive(node, at)
        else:
            called += _check_builtin(node, at, library, variables)
    return called


def _check_size(aval, at):
    if aval.shape is None:
        return
    size = aval.dtype.size if aval.dtype.size else 1
    for d in aval.shape:
        if d is not None:
            size *= d  # Python ints: no overflow, compared below
    if size > MAX_TENSOR_BYTES:
        raise _refuse("%s declares a %s value of %s bytes, more than any array can hold."
                      % (at, aval, size))


def _accepted_keywords(prim):
    """The keyword names the op's CPU kernel accepts, or None when it takes any."""
    if prim in _kernel_keywords:
        return _kernel_keywords[prim]
    from eagerflow.backend import numpy_backend

    names = None
    try:
        params = inspect.signature(prim.kernel(numpy_backend)).parameters.values()
    except (TypeError, ValueError):  # a ufunc or builtin: attributes are checked by numpy
        params = None
    if params is not None and not any(p.kind is p.VAR_KEYWORD for p in params):
        names = frozenset(p.name for p in params
                          if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    _kernel_keywords[prim] = names
    return names


def _check_primitive(node, at):
    prim = node.prim
    accepted = _accepted_keywords(prim)
    if accepted is not None:
        unknown = sorted(k for k in node.attrs if k not in accepted
                         and k != static_value.DYNAMIC_ATTRS)
        if unknown:
            raise _refuse("%s has the attribute(s) %s, which the op does not declare "
                          "(it takes %s)." % (at, ", ".join(unknown),
                                               ", ".join(sorted(accepted)) or "none"))
    names = node.attrs.get(static_value.DYNAMIC_ATTRS)
    if names is not None and (
            not isinstance(names, (tuple, list)) or len(names) > len(node.inputs) or
            len(set(names)) != len(names) or
            any(not isinstance(k, str) or k not in node.attrs or
                (accepted is not None and k not in accepted) for k in names)):
        raise _refuse("%s: its run-time attributes %r must name distinct attributes of the "
                      "op, one per trailing input." % (at, names))
    if prim.shape_fn is None:
        return  # the shape rule would run the kernel: the executor checks at run time
    avals = [src.avals[i] for src, i in node.inputs]
    avals = avals[:len(avals) - static_value.dynamic_count(node.attrs)]
    if any(a.shape is None for a in avals):
        return
    try:
        out = prim.shape_fn(*avals, **static_value.rule_attrs(node.attrs))
    except Exception as exc:  # noqa: BLE001 - a rule refusing these inputs or attrs
        raise _refuse("%s: the op refuses its declared inputs %s and attributes (%s)." % (
            at, avals, str(exc)[:200])) from None
    out = (out,) if not isinstance(out, (tuple, list)) else tuple(out)
    if len(out) != len(node.avals) or any(
            not _compatible(a, b) for a, b in zip(out, node.avals)):
        raise _refuse("%s declares outputs %s; its inputs give %s." % (
            at, list(node.avals), list(out)))


def _compatible(computed, declared):
    if getattr(computed, "dtype", None) is not declared.dtype:
        return False
    a, b = getattr(computed, "shape", None), declared.shape
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _check_builtin(node, at, library, variables):
    op, attrs = node.op, node.attrs
    n_in, n_out = len(node.inputs), node.num_outputs
    if op == builtins.PLACEHOLDER and (n_in or n_out != 1):
        raise _refuse("%s has %d inputs and %d outputs (a Placeholder has 0 and 1)." % (
            at, n_in, n_out))
    if op in _VARIABLE_OPS:
        index = attrs.get("variable")
        if index.__class__ is not int or not 0 <= index < len(variables):
            raise _refuse("%s refers to variable %s of %d." % (at, _short(index),
                                                               len(variables)))
        var = variables[index]
        value = node.avals[0] if op == builtins.READ_VARIABLE and n_out == 1 else (
            node.inputs[0][0].avals[node.inputs[0][1]] if op != builtins.READ_VARIABLE and n_in == 1
            else None)
        if value is None:
            raise _refuse("%s has %d inputs and %d outputs." % (at, n_in, n_out))
        shape = None if var.shape.rank is None else tuple(var.shape.as_list())
        from eagerflow.ops.registry import AbstractValue

        if not _compatible(AbstractValue(shape, var.dtype), value):
            raise _refuse("%s reads or writes a %s value; variable %d is %s%s." % (
                at, value, index, var.dtype.name, var.shape))
    if op == builtins.PRINT:
        stream = attrs.get("output_stream", "stderr")
        if stream not in _PRINT_STREAMS:
            raise _refuse("%s prints to %s; a loaded graph prints only to stdout or stderr "
                          "(re-create the Print in your own code to write to a file)." % (
                              at, _short(stream)))
        template = attrs.get("template")
        if not isinstance(template, (tuple, list)) or not all(
                item is None or isinstance(item, (str, tuple)) for item in template):
            raise _refuse("%s has no print template." % at)
    if op == builtins.WHILE:
        counts = [attrs.get(k, 0) for k in ("n_loop_vars", "n_captures")]
        if any(c.__class__ is not int or c < 0 for c in counts) or \
                sum(counts) + bool(attrs.get("has_max")) != n_in:
            raise _refuse("%s has %d inputs for %s loop variables and %s captures." % (
                at, n_in, _short(counts[0]), _short(counts[1])))
    if op == builtins.FUSED_ELEMENTWISE:
        _check_fused(node, at)
    if op == builtins.CUSTOM_GRADIENT:
        _check_custom_gradient(node, at, library, variables)
    names = []
    for key in _SUBGRAPH_ATTRS.get(op, ()):
        value = attrs.get(key)
        for name in (value if isinstance(value, (tuple, list)) else (value,)):
            if name.__class__ is not str or name not in library:
                raise _refuse("%s names the sub-graph %s, which is not in the function "
                              "library." % (at, _short(name)))
            names.append(name)
    return names


def _check_custom_gradient(node, at, library, variables):
    """A custom gradient's counts, variable indices and sub-graph signature agree: its
    outputs are its first inputs, and its backward takes one cotangent per output plus the
    remaining inputs and returns one gradient per source marked in ``has_grad``."""
    a = node.attrs
    n_in, n_out = len(node.inputs), node.num_outputs
    m, indices, has_grad = a.get("n_sources"), a.get("variables"), a.get("has_grad")
    if m.__class__ is not int or m < 0 or n_out < 1 or n_out + m > n_in:
        raise _refuse("%s has %d inputs and %d outputs for %s sources." % (
            at, n_in, n_out, _short(m)))
    if not isinstance(indices, tuple) or any(
            i.__class__ is not int or not 0 <= i < len(variables) for i in indices):
        raise _refuse("%s refers to variables %s of %d." % (at, _short(indices),
                                                             len(variables)))
    if not isinstance(has_grad, tuple) or len(has_grad) != m + len(indices) or any(
            h.__class__ is not bool for h in has_grad):
        raise _refuse("%s has the gradient mask %s for %d sources." % (
            at, _short(has_grad), m + len(indices)))
    for k in range(n_out):
        src, i = node.inputs[k]
        if not _compatible(src.avals[i], node.avals[k]):
            raise _refuse("%s forwards a %s input as a %s output." % (
                at, src.avals[i], node.avals[k]))
    grad = library.get(a.get("grad")) if a.get("grad").__class__ is str else None
    if grad is None:
        return  # the sub-graph check names the missing function
    if len(grad.inputs) != n_in - m or len(grad.outputs) != sum(has_grad) or any(
            not _compatible(grad.inputs[k].avals[0], node.avals[k]) for k in range(n_out)):
        raise _refuse("%s: its gradient function %s takes %d arguments and returns %d "
                      "gradients; the node passes %d and expects %d." % (
                          at, _short(a["grad"]), len(grad.inputs), len(grad.outputs),
                          n_in - m, sum(has_grad)))


_FUSED_TEXT_LIMIT = 4096


def _check_fused(node, at):
    """A fused node's sub-program: consistent lengths, references to earlier values only,
    registered ops and literal attributes with identifier keys (they reach generated code
    as keyword names)."""
    import ast

    from eagerflow.ops import registry

    a = node.attrs
    try:
        ops, arity, args, dtypes, op_attrs, inplace = (
            tuple(a[k]) for k in ("ops", "arity", "args", "dtypes", "op_attrs", "inplace"))
    except (KeyError, TypeError):
        raise _refuse("%s lacks its sub-program attributes." % at) from None
    n_in = len(node.inputs)
    outputs = a.get("outputs", (len(ops) - 1,))
    if not ops or not (len(ops) == len(arity) == len(dtypes) == len(op_attrs) ==
                       len(inplace)) or any(n.__class__ is not int or n < 0 for n in arity) \
            or sum(arity) != len(args) or not isinstance(outputs, tuple) or \
            node.num_outputs != len(outputs) or len(set(outputs)) != len(outputs) or any(
                o.__class__ is not int or not 0 <= o < len(ops) for o in outputs):
        raise _refuse("%s has an inconsistent sub-program." % at)
    pos = 0
    for j, (name, n, text, target) in enumerate(zip(ops, arity, op_attrs, inplace)):
        if name.__class__ is not str:
            raise _refuse("%s has a sub-op named %s." % (at, _short(name)))
        try:
            registry.get(name)
        except errors.NotFoundError:
            raise errors.NotFoundError(None, None, "Cannot load the serialized function: %s "
                                       "fuses the op %s, which is not registered." % (
                                           at, _short(name))) from None
        for r in args[pos:pos + n]:
            if r.__class__ is not int or not 0 <= r < n_in + j:
                raise _refuse("%s: sub-op %d reads value %s; only the %d earlier values "
                              "exist." % (at, j, _short(r), n_in + j))
        pos += n
        if target.__class__ is not int or not -1 <= target < n_in + j:
            raise _refuse("%s: sub-op %d writes into value %s." % (at, j, _short(target)))
        if text.__class__ is not str or len(text) > _FUSED_TEXT_LIMIT:
            raise _refuse("%s: sub-op %d has unreadable attributes." % (at, j))
        if text:
            try:
                attrs = dict(ast.literal_eval(text))
            except Exception:  # noqa: BLE001 - anything that is not a literal pair tuple
                raise _refuse("%s: sub-op %d has attributes that are not a literal." % (
                    at, j)) from None
            for key in attrs:
                keyword_name(key, at)
    for d in dtypes:
        if d not in _DTYPE_NAMES:
            raise _refuse("%s: a sub-op has the dtype %s." % (at, _short(d)))


def _check_acyclic(calls, graphs, library):
    """Refuses a library where a function reaches itself through branches or loop bodies
    (running it would recurse without end)."""
    key_of = {id(g): name for name, g in graphs.items()}
    edges = {}
    for fname, names in calls.items():
        edges[fname] = [key_of.get(id(library[n]), n) for n in names]
    state = {}
    for start in edges:
        if state.get(start):
            continue
        stack = [(start, iter(edges[start]))]
        state[start] = 1
        while stack:
            name, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[name] = 2
                stack.pop()
                continue
            mark = state.get(nxt)
            if mark == 1:
                raise _refuse("function %r calls itself through its sub-graphs." % nxt)
            if mark is None and nxt in edges:
                state[nxt] = 1
                stack.append((nxt, iter(edges[nxt])))
