"""The executor: compiles a Graph once into a schedule, then runs it with little Python.

Compilation resolves each node's kernel for its device's backend, numbers every value with
a slot, precomputes each step's input slots, and finds each slot's last use so buffers are
released as soon as nothing needs them. A run is a loop over prepared steps on raw arrays;
tensors are wrapped only at the boundary.
"""

from __future__ import annotations

import re
import sys


from eagerflow import errors
from eagerflow.framework import context, host_allocator
from eagerflow.framework.device_spec import DeviceSpec
from eagerflow.function import builtins
from eagerflow.function.graph_validation import keyword_name
from eagerflow.ops import dispatch, static_value
from eagerflow.tensor import wrap

__all__ = ["Executor"]

# Set by eagerflow.profiler and eagerflow.summary.trace_on: called as
# observer(executor, args, captures) instead of the generated code (to time each step or to
# collect the graphs that run). None costs one global lookup per function call.
observer = None
# Values a step never owns: arguments, constants and variables' own arrays.
_NOT_COMPUTED = frozenset((builtins.PLACEHOLDER, builtins.CONST, builtins.READ_VARIABLE))
_ASSIGNS = builtins.names(assigns=True)


def set_observer(fn):
    """Installs (or with None removes) the executor observer."""
    global observer
    observer = fn


def _node_device(node):
    """The local Device a node's kernel runs on (its requested device, else CPU:0)."""
    if not node.device:
        return context.CPU0
    return context.resolve_device(DeviceSpec.from_string(node.device), node.op)


class Executor:
    """A compiled schedule for one Graph.

    Args:
        graph: The Graph to run.
        capture: Compile the schedule for a captured step (``capture.py``): kernels that
            declare a ``capture_forward`` use it, GPU steps are not wrapped in the
            out-of-memory retry (which frees the pool) and variable writes always go into
            the variable's own buffer, whose address the captured graph keeps.
    """

    def __init__(self, graph, capture=False):
        self.graph = graph
        self.capture = capture
        host_allocator.apply()  # graphs run loops of big temporaries: keep freed memory
        self._compile()

    def _compile(self):
        graph = self.graph
        slots = {}
        n_slots = 0
        for node in graph.nodes:
            for i in range(node.num_outputs):
                slots[(node.id, i)] = n_slots
                n_slots += 1
        self.n_slots = n_slots
        self.input_slots = [slots[(n.id, 0)] for n in graph.inputs]
        self.capture_slots = [slots[(n.id, 0)] for n, _ in graph.captures]
        self.output_slots = [slots[(n.id, i)] for n, i in graph.outputs]
        steps = []
        last_use = {}
        compute_nodes = [n for n in graph.nodes if n.op != builtins.PLACEHOLDER]
        for k, node in enumerate(compute_nodes):
            for src, idx in node.inputs:
                last_use[slots[(src.id, idx)]] = k
        keep = set(self.output_slots)
        frees = [[] for _ in compute_nodes]
        for slot, k in last_use.items():
            if slot not in keep:
                frees[k].append(slot)
        updates_in_place = _read_modify_write(compute_nodes, slots, frees)
        self.devices = []
        # Constants are placed in their slots once; a run starts from a copy of this list.
        template = [None] * n_slots
        for k, node in enumerate(compute_nodes):
            device = _node_device(node)
            self.devices.append(device)
            outs = tuple(slots[(node.id, i)] for i in range(node.num_outputs))
            if node.op == builtins.CONST and not frees[k]:
                value = node.value
                template[outs[0]] = device.backend.asarray(value) if device.backend_index \
                    else value
                continue
            # An assignment may take over its value's buffer when nothing reads it afterwards
            # and it was computed here (not an argument, constant or another variable).
            self._owns_input = bool(
                node.op == builtins.ASSIGN_VARIABLE and node.inputs
                and slots[(node.inputs[0][0].id, node.inputs[0][1])] in frees[k]
                and node.inputs[0][0].op not in _NOT_COMPUTED)
            # Inputs whose buffer this step may reuse: computed here (not an argument,
            # constant or variable), read for the last time, and passed once. The step
            # still checks at run time that nothing else holds the array.
            input_slots = [slots[(src.id, idx)] for src, idx in node.inputs]
            self._donatable = tuple(
                p for p, (src, _) in enumerate(node.inputs)
                if input_slots[p] in frees[k] and input_slots.count(input_slots[p]) == 1
                and src.op not in _NOT_COMPUTED)
            self._donatable_variables = updates_in_place.get(k, ())
            self._attrs_bound = False
            fn = self._step_function(node, device)
            if device.backend_index and node.prim is not None and not self.capture:
                fn = _retrying(fn, node, device)
            ins = tuple(slots[(src.id, idx)] for src, idx in node.inputs)
            # kind: 1 = one output, 0 = none, 2 = several
            kind = 1 if len(outs) == 1 else (0 if not outs else 2)
            steps.append((fn, ins, outs[0] if kind == 1 else outs,
                          (node.attrs or None) if node.prim is not None and not
                          self._attrs_bound else None,
                          tuple(frees[k]) or None, node, kind))
        self.steps = steps
        self._template = template
        self.output_devices = [self._device_of(n) for n, _ in graph.outputs]
        self._run = self._generate()

    def _generate(self):
        """Generates straight-line Python for the schedule (no interpreter loop per step).

        Each slot becomes a local variable; constants and kernels are globals of the
        generated function; a value is deleted after its last use. A failure is traced back
        to its step through the line number it was raised at (no per-step bookkeeping).
        """
        line_steps = {}
        env = {"_fail": lambda line, exc: self._fail(line_steps.get(line, -1), exc)}
        lines = ["def run(args, captures):"]
        names = {}
        for slot, value in enumerate(self._template):
            if value is not None:
                env["K%d" % slot] = value
                names[slot] = "K%d" % slot
        for slot in self.input_slots + self.capture_slots:
            names[slot] = "v%d" % slot
        if self.input_slots:
            lines.append("    %s, = args" % ", ".join("v%d" % s for s in self.input_slots))
        if self.capture_slots:
            lines.append("    %s, = captures" % ", ".join("v%d" % s for s in self.capture_slots))
        lines.append("    try:")
        outputs = set(self.output_slots)
        for k, (fn, ins, outs, attrs, frees, _node, kind) in enumerate(self.steps):
            env["F%d" % k] = fn
            call_args = [names.get(i, "v%d" % i) for i in ins]
            if attrs:
                for j, (key, value) in enumerate(attrs.items()):
                    env["A%d_%d" % (k, j)] = value
                    # The only graph string written into the source: checked to be a plain
                    # identifier (values travel as globals, never as text).
                    call_args.append("%s=A%d_%d" % (keyword_name(key, _node.name), k, j))
            call = "F%d(%s)" % (k, ", ".join(call_args))
            line_steps[len(lines) + 1] = k
            if kind == 1:
                names[outs] = "v%d" % outs
                lines.append("        v%d = %s" % (outs, call))
            elif kind:
                for o in outs:
                    names[o] = "v%d" % o
                lines.append("        %s, = %s" % (", ".join("v%d" % o for o in outs), call))
            else:
                lines.append("        %s" % call)
            if frees:
                dead = [names[f] for f in frees
                        if f not in outputs and names.get(f, "K")[0] == "v"]
                if dead:
                    lines.append("        del %s" % ", ".join(dead))
        if not self.steps:
            lines.append("        pass")  # every node was a constant or an argument
        lines.append("    except Exception as exc:")
        lines.append("        _fail(exc.__traceback__.tb_lineno, exc)")
        lines.append("    return [%s]" % ", ".join(names.get(s, "v%d" % s)
                                                  for s in self.output_slots))
        source = "\n".join(lines) + "\n"
        code = compile(source, "<graph %s>" % _label(self.graph.name), "exec")
        exec(code, env)  # noqa: S102 - slot numbers and checked identifiers only
        self.source = source
        return env["run"]

    def _fail(self, step, exc):
        if isinstance(exc, errors.OpError) and getattr(exc, "_graph_node_named", False):
            raise exc
        node = self.steps[step][5] if step >= 0 else None
        if node is None:
            raise exc
        error = _node_error(node, [], exc)
        error._graph_node_named = True
        raise error from None

    def _device_of(self, node):
        if node.op == builtins.PLACEHOLDER:
            return None  # the argument's own device
        return _node_device(node)

    def _step_function(self, node, device):
        op = node.op
        if node.prim is not None:
            if static_value.DYNAMIC_ATTRS in node.attrs:
                return self._dynamic_step(node, device)
            if self.capture and node.prim.capture_forward is not None:
                kernel = node.prim.capture_forward(device.backend)
                if node.prim.single:
                    return kernel
                if node.num_outputs == 1:
                    return lambda *a, _k=kernel, **kw: _k(*a, **kw)[0]
                return lambda *a, _k=kernel, **kw: tuple(_k(*a, **kw))
            static = node.prim.static_kernel
            if static is not None and node.prim.single:
                avals = [src.avals[i] for src, i in node.inputs]
                if all(a.shape is not None for a in avals):  # ranks known
                    kernel = static(device.backend, avals, dict(node.attrs))
                    if kernel is not None:
                        self._attrs_bound = True
                        return kernel
            kernel = node.prim.kernel(device.backend)
            if node.prim.single:
                return kernel
            if node.num_outputs == 1:  # a multi-output primitive whose attrs ask for one
                return lambda *a, _k=kernel, **kw: _k(*a, **kw)[0]
            return lambda *a, _k=kernel, **kw: tuple(_k(*a, **kw))
        if op == builtins.CONST:
            value = node.value
            if device.backend_index:
                value = device.backend.asarray(value)
            return lambda _v=value: _v
        variables = self.graph.variables
        if op == builtins.READ_VARIABLE:
            var = variables[node.attrs["variable"]]
            return lambda _v=var: _v._value
        if op in _ASSIGNS:
            var = variables[node.attrs["variable"]]
            return _assign_step(var, op, getattr(self, "_owns_input", False), self.capture)
        if op == builtins.PRINT:
            return _print_step(node)
        factory = BUILTIN_STEPS.get(op)
        if factory is not None:
            return factory(node, device, self)
        raise errors.UnimplementedError(
            None, op, "The executor has no kernel for op %r (node %s)." % (op, node.name))

    def _dynamic_step(self, node, device):
        """A step whose last inputs are attrs known only at run time (see
        ``ops.static_value.split_dynamic``): they are read from the host and bound here."""
        kernel = node.prim.kernel(device.backend)
        attrs = dict(node.attrs)
        single = node.prim.single
        first = node.num_outputs == 1 and not single
        bind = static_value.bind_dynamic
        self._attrs_bound = True

        def step(*values):
            values, bound = bind(values, attrs)
            out = kernel(*values, **bound)
            return out if single else (out[0] if first else tuple(out))
        return step

    def run(self, args, captures):
        """Runs the graph on flat argument arrays and capture arrays; returns output arrays.

        Raises:
            The eagerflow error of the failing node, naming the user's line that created it.
        """
        if observer is not None:
            return observer(self, args, captures)
        return self._run(args, captures)

    def run_steps(self, args, captures, on_step=None):
        """Runs the schedule one step at a time: the same steps, slots and error path as the
        generated code, without it (the profiler times each step through ``on_step``).

        Args:
            args: The argument arrays.
            captures: The capture arrays.
            on_step: None, or ``on_step(node, inputs, call)``: must return ``call()``, the
                step's result (it may time it).
        """
        vals = self._template.copy()
        for slot, value in zip(self.input_slots, args):
            vals[slot] = value
        for slot, value in zip(self.capture_slots, captures):
            vals[slot] = value
        for fn, ins, outs, attrs, frees, node, kind in self.steps:
            inputs = [vals[i] for i in ins]
            try:
                if on_step is None:
                    result = fn(*inputs, **attrs) if attrs else fn(*inputs)
                else:
                    result = on_step(node, inputs, lambda fn=fn, inputs=inputs, attrs=attrs:
                                     fn(*inputs, **attrs) if attrs else fn(*inputs))
            except Exception as exc:  # noqa: BLE001 - translated with the node's origin
                if isinstance(exc, errors.OpError) and getattr(exc, "_graph_node_named", False):
                    raise
                raise _node_error(node, inputs, exc) from None
            if kind == 1:
                vals[outs] = result
            elif kind:
                for slot, value in zip(outs, result):
                    vals[slot] = value
            if frees:
                for slot in frees:
                    vals[slot] = None
        return [vals[s] for s in self.output_slots]

def _label(name):
    """A graph or node name as a readable code-object filename (never code itself)."""
    return re.sub(r"[^\w.\-/]", "_", str(name))[:100]


def _read_modify_write(nodes, slots, frees):
    """``{step: input positions}`` where a step may compute a variable's new value in the
    variable's own buffer: ``v = f(read(v), ...)`` with f an elementwise fused step.

    Safe when the read is that buffer's last use in the graph, f's result goes only to an
    assignment of the same variable that takes the result's buffer, and no other read of
    the variable runs in between (it would see the new value early). At run time the step
    still checks that nothing outside the graph holds the buffer.
    """
    consumers = {}
    for k, node in enumerate(nodes):
        for src, idx in node.inputs:
            consumers.setdefault(slots[(src.id, idx)], []).append(k)
    position = {node.id: k for k, node in enumerate(nodes)}
    out = {}
    for k, node in enumerate(nodes):
        if node.op != builtins.FUSED_ELEMENTWISE:
            continue
        if node.num_outputs > 1:
            # Several results (``update_loops``): (result, input) pairs, each result
            # assigned to the variable that input reads, under the same conditions.
            pairs = []
            for o in range(node.num_outputs):
                position_o = _update_in_place(nodes, slots, frees, consumers, position, k,
                                              node, o)
                if position_o is not None:
                    pairs.append((o, position_o))
            if pairs:
                out[k] = tuple(pairs)
            continue
        users = consumers.get(slots[(node.id, 0)], [])
        if len(users) != 1:
            continue
        assign = nodes[users[0]]
        if assign.op != builtins.ASSIGN_VARIABLE or slots[(node.id, 0)] not in frees[users[0]]:
            continue
        variable = assign.attrs.get("variable")
        between = nodes[k + 1:users[0]]
        if any(n.op == builtins.READ_VARIABLE and n.attrs.get("variable") == variable
               for n in between):
            continue
        positions = []
        for p, (src, idx) in enumerate(node.inputs):
            if (src.op == builtins.READ_VARIABLE and src.attrs.get("variable") == variable
                    and slots[(src.id, idx)] in frees[k] and src.id in position):
                positions.append(p)
        if positions:
            out[k] = tuple(positions[:1])
    return out


def _update_in_place(nodes, slots, frees, consumers, position, k, node, o):
    """The input of step ``k`` whose variable buffer result ``o`` may be written into."""
    users = consumers.get(slots[(node.id, o)], [])
    if len(users) != 1:
        return None
    assign = nodes[users[0]]
    if assign.op != builtins.ASSIGN_VARIABLE or slots[(node.id, o)] not in frees[users[0]]:
        return None
    variable = assign.attrs.get("variable")
    if any(n.op == builtins.READ_VARIABLE and n.attrs.get("variable") == variable
           for n in nodes[k + 1:users[0]]):
        return None
    for p, (src, idx) in enumerate(node.inputs):
        if (src.op == builtins.READ_VARIABLE and src.attrs.get("variable") == variable
                and slots[(src.id, idx)] in frees[k] and src.id in position):
            return p
    return None


def _writeable(arr):
    # cupy arrays have no ``writeable`` flag (every cupy array is writable).
    return getattr(arr.flags, "writeable", True)


def _assign_step(var, op, owns_input=False, in_place=False):
    """The step of an Assign*VariableOp node.

    Variables replace their array on assignment so that tensors read earlier keep their
    values. When nothing else can see the current array (its reference count shows only
    the variable holding it, and it is not a view), add/sub update it in place instead,
    and a plain assignment of a freshly computed value takes the value's buffer: training
    steps then allocate nothing per variable. This relies on CPython reference counts.
    Each step holds the variable's lock from reading the old array to writing the new one,
    so updates from other threads (eager or traced) are not lost. ``in_place`` (a captured
    step) always writes into the variable's own array when the shape allows: the captured
    graph keeps that address, and the capture checks before each replay that nothing else
    holds the array.
    """
    backend = var._device.backend
    ndarray = backend.ndarray
    lock = var._lock

    def private(arr):
        # Four references when only the variable holds the array: the variable's slot, the
        # caller's local ``arr``, this function's parameter and getrefcount's argument.
        return (arr.__class__ is ndarray and arr.base is None and _writeable(arr)
                and sys.getrefcount(arr) <= 4)

    method = builtins.BUILTINS[op].assigns
    if method == "assign":
        def assign(value):
            with lock:
                arr = var._value
                if in_place and arr.__class__ is ndarray and value.shape == arr.shape:
                    backend.copyto(arr, value, casting="same_kind")
                elif owns_input and value.__class__ is ndarray and value.base is None and \
                        value.dtype == arr.dtype and value.shape == arr.shape and \
                        _writeable(value):
                    var._write(value)
                elif private(arr) and value.shape == arr.shape:
                    backend.copyto(arr, value, casting="same_kind")
                else:
                    var._write(backend.array(value, copy=True))
    else:
        ufunc = backend.add if method == "assign_add" else backend.subtract

        def assign(value):
            with lock:
                arr = var._value
                if (in_place and arr.__class__ is ndarray or private(arr)) and \
                        backend.shape(value) in ((), arr.shape):
                    ufunc(arr, value, out=arr, casting="same_kind")
                else:
                    var._write(backend.asarray(ufunc(arr, value), dtype=arr.dtype))
    return assign


def _print_step(node):
    attrs = dict(node.attrs)

    def print_values(*values):
        from eagerflow.ops.print_ops import format_for_print, write_text

        parts = format_for_print(attrs["template"], values, attrs.get("summarize", 3))
        write_text(attrs.get("sep", " ").join(parts) + attrs.get("end", "\n"),
                   attrs.get("output_stream", "stderr"))

    return print_values


# Step factories for functional control flow and communication, registered by their modules.
BUILTIN_STEPS = {}


def _node_error(node, inputs, exc):
    """A step's failure as the error of the same op run eagerly (dispatch's translation:
    the same text and the same out-of-memory report), plus the node and the user's line
    that created it."""
    where = ""
    if node.origin:
        filename, lineno, line = node.origin
        where = " (created at %s:%d%s)" % (filename, lineno, ": `%s`" % line if line else "")
    try:
        device = _node_device(node)
    except errors.OpError:
        device = None
    described = inputs if inputs else [src.avals[i] for src, i in node.inputs]
    exc = dispatch.translate_failure(node.prim if node.prim is not None else node.op,
                                     described, static_value.rule_attrs(node.attrs), device,
                                     exc)
    exc.message = "%s (node %s)%s" % (exc.message, node.name, where)
    exc.args = (exc.message,)
    return exc


def _retrying(fn, node, device):
    """A GPU step whose failure goes through dispatch's failure path, as an eager op's does:
    an allocation failure is retried once after the device's cached blocks are freed."""
    prim = node.prim

    def step(*values, **attrs):
        try:
            return fn(*values, **attrs)
        except Exception as exc:  # noqa: BLE001 - retried, else translated
            return dispatch.kernel_failed(prim, fn, values, values, attrs, device, exc)

    return step


def wrap_outputs(arrays, devices, arg_devices=None):
    return [wrap(a, d if d is not None else context.CPU0) for a, d in zip(arrays, devices)]
