"""Running a ``FusedElementwise`` node: generated straight-line numpy on the CPU, one
generated CUDA kernel on the GPU.

The node's attrs hold its sub-program as flat tuples of strings and ints, so a serialized
graph carries it like any other node:

* ``ops``: the primitive name of each sub-op, in execution order;
* ``arity``: the number of inputs of each sub-op;
* ``args``: all sub-op inputs, concatenated. A reference ``r < len(node.inputs)`` is the
  node's input ``r``; ``r = len(node.inputs) + j`` is the result of sub-op ``j``;
* ``dtypes``: the dtype name of each sub-op's result (the last one is the node's output);
* ``op_attrs``: each sub-op's attrs as the ``repr`` of a tuple of ``(name, value)`` pairs;
* ``inplace``: per sub-op, the reference whose buffer the CPU may overwrite with the result
  (``-1``: allocate). The fusion pass proves each such reuse safe from static shapes;
* ``outputs`` (optional): the sub-ops whose results are the node's outputs (``update_loops``;
  by default the last sub-op's).

On a GPU the last sub-op may also be a reduction (Sum, Mean, Max) of the others' result.

On the CPU the program becomes one generated Python function calling the numpy kernels:
ufunc sub-ops write into dead intermediate buffers with ``out=``, so a chain of n ops over
a big array allocates once instead of n times. On the GPU, a program whose every sub-op has
a CUDA expression for its dtypes becomes one generated cupy kernel (``fused_gpu``: one pass
over memory, several results and in-place writes included, or one reduction kernel);
otherwise each sub-op runs its own cupy kernel.
"""

from __future__ import annotations

import ast
import math
import sys
import threading
import weakref

import numpy as np

from eagerflow import errors
from eagerflow.backend import cpu_jit, cpu_threads
from eagerflow.function.executor import _label
from eagerflow.function.graph_validation import keyword_name
from eagerflow.function.passes import fused_gpu
from eagerflow.ops import dispatch, registry
from eagerflow.ops.nn.activation_ops import relu_numpy

__all__ = ["Program", "fused_step", "cuda_source", "python_source"]

_getrefcount = sys.getrefcount

# Origins of the nodes a fused node replaced, for error messages naming the user's line.
ORIGINS = weakref.WeakKeyDictionary()


class Program:
    """The decoded sub-program of a FusedElementwise node."""

    def __init__(self, ops, arity, args, dtypes, op_attrs, inplace, in_dtypes, outputs=None):
        self.prims = [registry.get(name) for name in ops]
        # The sub-ops whose results are the node's outputs (by default the last one).
        self.outputs = tuple(outputs) if outputs is not None else (len(self.prims) - 1,)
        self.refs = []
        pos = 0
        for n in arity:
            self.refs.append(tuple(args[pos:pos + n]))
            pos += n
        self.dtypes = tuple(dtypes)
        self.attrs = [dict(ast.literal_eval(text)) if text else {} for text in op_attrs]
        self.inplace = tuple(inplace)
        self.in_dtypes = tuple(in_dtypes)
        self.n_in = len(in_dtypes)

    @classmethod
    def of(cls, node):
        a = node.attrs
        in_dtypes = [src.avals[i].dtype.name for src, i in node.inputs]
        return cls(a["ops"], a["arity"], a["args"], a["dtypes"], a["op_attrs"], a["inplace"],
                   in_dtypes, a.get("outputs"))


def encode_attrs(attrs):
    """A sub-op's attrs as a literal string, or None if they would not read back equal."""
    if not attrs:
        return ""
    text = repr(tuple(sorted(attrs.items())))
    try:
        if dict(ast.literal_eval(text)) != attrs:
            return None
    except (ValueError, SyntaxError):
        return None
    return text


def cpu_ufunc(prim):
    """``(ufunc, extra_args)`` when the CPU kernel of ``prim`` is one ufunc call, else None.

    Only such sub-ops may write into a buffer with ``out=``; any other kernel may return a
    view of its input, so its result is never overwritten.
    """
    from eagerflow.backend import numpy_backend

    if prim in _UFUNCS:
        return _UFUNCS[prim]
    form = None
    if prim.name == "Relu":
        from eagerflow.ops.nn.activation_ops import relu_numpy

        form = relu_numpy, ()  # maximum(x, 0): a fresh array, or ``out``
    else:
        kernel = prim.kernel(numpy_backend)
        if isinstance(kernel, np.ufunc) and kernel.nout == 1 and kernel.nin == len(
                prim_arity(prim)):
            form = kernel, ()
    _UFUNCS[prim] = form
    return form


_UFUNCS = weakref.WeakKeyDictionary()


def prim_arity(prim):
    return (0,) if prim.domain and prim.domain[0] == "unary" else (0, 1)


# -- CPU ------------------------------------------------------------------------------------

def _private(array):
    """True when ``array`` owns its memory and only the fused step's caller holds it.

    Four references are the caller's local, the fused function's parameter, this
    function's parameter and getrefcount's argument (CPython reference counts).
    """
    return (array.__class__ is np.ndarray and array.base is None and array.flags.writeable
            and _getrefcount(array) <= 4)


def _private_variable(array):
    """Like :func:`_private` for a variable's own buffer, which the variable also holds."""
    return (array.__class__ is np.ndarray and array.base is None and array.flags.writeable
            and _getrefcount(array) <= 5)


def python_source(program, donatable=(), variable_donors=(), out_param=False):
    """The generated Python for the CPU (``fused``) and the globals it needs.

    ``donatable`` lists inputs whose buffer the executor says is read for the last time
    here and has the output's shape and dtype: the first ufunc sub-op reading one of them
    writes its result there when, at run time, nothing else holds that array. With
    ``out_param`` the function takes a last argument ``_out`` and the last sub-op writes
    its result there (the form that runs on blocks of rows in threads).
    """
    from eagerflow.backend import numpy_backend

    env = {"_private": _private, "_private_variable": _private_variable}
    params = ["a%d" % k for k in range(program.n_in)]
    names = list(params)
    lines = ["def fused(%s):" % ", ".join(params + (["_out"] if out_param else [])),
             "    try:"]
    donated = set()
    last = len(program.prims) - 1
    for j, (prim, refs) in enumerate(zip(program.prims, program.refs)):
        args = [names[r] for r in refs]
        target = program.inplace[j]
        if out_param and j == last:
            form = cpu_ufunc(prim)
            if form is not None:
                env["K%d" % j] = form[0]
                for e, extra in enumerate(form[1]):
                    env["C%d_%d" % (j, e)] = extra
                    args.append("C%d_%d" % (j, e))
                lines.append("        t%d = K%d(%s, out=_out)" % (j, j, ", ".join(args)))
                names.append("t%d" % j)
                continue
            env["K%d" % j] = prim.kernel(numpy_backend)
            for e, (key, value) in enumerate(program.attrs[j].items()):
                env["A%d_%d" % (j, e)] = value
                args.append("%s=A%d_%d" % (keyword_name(key, "fused sub-op %s" % prim.name),
                                           j, e))
            # One line, so the failure's line number still names this sub-op.
            lines.append("        _out[...] = t%d = K%d(%s)" % (j, j, ", ".join(args)))
            names.append("t%d" % j)
            continue
        # Never an input's buffer through ``inplace``, whatever a loaded graph's attrs say.
        form = cpu_ufunc(prim)
        donor = None
        check = ""
        if form is not None:
            # A variable's own buffer first (even over a dead intermediate, which stays the
            # fallback): the variable then keeps its array from step to step.
            later = {r for refs_later in program.refs[j + 1:] for r in refs_later}
            pool = variable_donors if target >= program.n_in else (
                tuple(variable_donors) + tuple(donatable))
            for r in refs:
                if r in pool and r not in donated and r not in later and \
                        program.in_dtypes[r] == program.dtypes[j]:
                    donor = r
                    donated.add(r)
                    break
            if donor is None and target < program.n_in:
                form = None
        if form is not None:
            env["K%d" % j] = form[0]
            for e, extra in enumerate(form[1]):
                env["C%d_%d" % (j, e)] = extra
                args.append("C%d_%d" % (j, e))
            # As a keyword: numpy takes a slower path for a positional ``out``.
            if donor is None:
                args.append("out=%s" % names[target])
            else:
                # The check runs before the call's line pushes the donor as an operand
                # (one more reference, which would always fail the count); same line, so
                # a failure still names this sub-op.
                check = "_d = %s if %s(%s) else %s; " % (
                    names[donor], "_private_variable" if donor in variable_donors
                    else "_private", names[donor],
                    names[target] if target >= program.n_in else "None")
                args.append("out=_d")
        else:
            env["K%d" % j] = prim.kernel(numpy_backend)
            for e, (key, value) in enumerate(program.attrs[j].items()):
                env["A%d_%d" % (j, e)] = value
                args.append("%s=A%d_%d" % (keyword_name(key, "fused sub-op %s" % prim.name), j, e))
        names.append("t%d" % j)
        lines.append("        %st%d = K%d(%s)" % (check, j, j, ", ".join(args)))
    # Sub-op j is on line j + 3 of the source; a failure is traced back through it.
    lines += ["    except Exception as exc:", "        _fail(exc.__traceback__.tb_lineno - 3, exc)",
              "    return %s" % ("_out" if out_param else ", ".join(
                  "t%d" % j for j in program.outputs) + ("," if len(program.outputs) > 1
                                                         else ""))]
    return "\n".join(lines) + "\n", env


def _build_cpu(program, node, device, donatable=(), variable_donors=()):
    if len(program.outputs) > 1:
        return _build_cpu_several(program, node, device, variable_donors)
    if fused_gpu.reduces(program):
        # A region ending in a reduction is made for a GPU only (the fusion pass); a
        # loaded graph may still run it here: the numpy form, never split into blocks
        # (the result's axes are not the inputs').
        source, env = python_source(program)
        env["_fail"] = _failure(program, node, device)
        exec(compile(source, "<fused %s>" % _label(node.name), "exec"), env)  # noqa: S102
        env["fused"].source = source
        return env["fused"]
    out_aval = node.avals[0]
    ok = []
    for p in tuple(variable_donors) + tuple(donatable):  # a variable keeps its array
        src, idx = node.inputs[p]
        aval = src.avals[idx]
        if aval.shape is not None and None not in aval.shape and \
                aval.shape == out_aval.shape and aval.dtype is out_aval.dtype:
            ok.append(p)
    variable_ok = tuple(p for p in ok if p in variable_donors)
    source, env = python_source(program, tuple(p for p in ok if p not in variable_ok),
                                variable_ok)
    env["_fail"] = _failure(program, node, device)
    # The source holds generated names and checked identifiers only.
    exec(compile(source, "<fused %s>" % _label(node.name), "exec"), env)  # noqa: S102
    fn = env["fused"]
    fn.source = source
    shape = out_aval.shape
    static = shape is not None and None not in shape
    threshold = cpu_threads.fused_min_elements(len(program.prims))
    # Regions of several sub-ops run over cache-sized blocks from two blocks' size up.
    blocked = len(program.prims) > 1
    smallest = min(threshold, 2 * CACHE_BLOCK_ELEMENTS) if blocked else threshold
    loop = _Loop.of(program, node) if static and shape else None
    if loop is not None:
        if not cpu_jit.wanted(int(np.prod(shape))):
            loop = None
        else:
            smallest = min(smallest, cpu_jit.MIN_ELEMENTS)
    if static and (not shape or int(np.prod(shape)) < smallest):
        return fn
    blocks_source, blocks_env = python_source(program, out_param=True)
    blocks_env["_fail"] = env["_fail"]
    exec(compile(blocks_source, "<fused %s>" % _label(node.name), "exec"),  # noqa: S102
         blocks_env)
    return _on_cores(fn, blocks_env["fused"], out_aval.dtype.np_dtype,
                     tuple(ok), variable_ok, source, threshold, smallest, loop)


def _build_cpu_several(program, node, device, pairs):
    """A program with several results (``update_loops``): its compiled loop writes each
    result into the buffer of the variable it is assigned to, when the executor's
    ``pairs`` (result, input reading that variable) allow it and nothing else holds that
    buffer at run time; otherwise, or without the loop, the numpy form allocates them."""
    source, env = python_source(program)
    env["_fail"] = _failure(program, node, device)
    exec(compile(source, "<fused %s>" % _label(node.name), "exec"), env)  # noqa: S102
    fn = env["fused"]
    aval = node.avals[0]
    loop = _Loop.of(program, node)
    if loop is None or aval.shape is None or None in aval.shape or \
            any(a != aval for a in node.avals):
        fn.source = source
        return fn
    shape, dtype, n_out = aval.shape, aval.dtype.np_dtype, len(program.outputs)
    size = int(np.prod(shape))
    threshold = cpu_threads.fused_min_elements(len(program.prims))

    def run(*args):
        outs = [None] * n_out
        intos = [-1] * n_out
        for o, p in pairs:
            # args[p] is checked unbound: a local name would add one reference.
            if args[p].__class__ is np.ndarray and args[p].shape == shape and \
                    args[p].dtype == dtype and args[p].flags.c_contiguous and \
                    p not in intos and _private_variable(args[p]):
                outs[o] = args[p]
                intos[o] = p
        for o in range(n_out):
            if outs[o] is None:
                outs[o] = np.empty(shape, dtype)
        if loop.run(args, outs, intos, shape, size, threshold):
            return tuple(outs)
        return fn(*args)

    run.source = source
    return run


# Elements of a fused region's cache block (256 KiB of float32): Adam's second-moment
# update over [784, 512] took 0.21 ms in such blocks against 0.37 ms in one call (blocks
# of 8K-128K elements: 0.30, 0.25, 0.22, 0.21, 0.22 ms; see docs/design.md).
CACHE_BLOCK_ELEMENTS = 1 << 16


def _on_cores(fn, fn_out, dtype, donors, variable_donors, source, threshold, smallest,
              loop=None):
    """Runs a fused CPU program on blocks of rows: in threads when its result has at least
    ``threshold`` elements (``cpu_threads.fused_min_elements`` of its sub-op count), and
    over cache-sized blocks of rows from ``smallest`` elements.

    Every sub-op is elementwise, so block ``lo:hi`` of the result reads only block
    ``lo:hi`` of the inputs that have the result's extent on the split axis (the others
    broadcast whole): the blocks compute exactly what one call computes. The result goes
    into a donor's buffer when one is free at run time (as the one-call form does), else
    into a fresh array.

    Within each thread's rows the program runs over blocks of about
    ``CACHE_BLOCK_ELEMENTS``: a region's sub-ops then pass over intermediates that are
    still in cache, and each input is read from memory once instead of once per sub-op
    that reads it. A program that compiles to one loop (``_Loop``) runs that loop instead:
    one pass over memory, no intermediates at all.
    """

    def run(*args):
        # Cheap checks first: small results (most calls) pay two comparisons per input.
        for a in args:
            if getattr(a, "size", 0) >= smallest:
                break
        else:
            return fn(*args)
        a = None  # a donor's reference count must not see this name
        shape = np.broadcast_shapes(*[np.shape(a) for a in args])
        size = int(np.prod(shape)) if shape else 0
        axis = next((k for k, n in enumerate(shape) if n > 1), None)
        if size < smallest or axis is None:
            return fn(*args)
        out = None
        into = -1
        for p in donors:
            # args[p] is checked unbound: a local name would add one reference.
            check = _private_variable if p in variable_donors else _private
            if args[p].__class__ is np.ndarray and args[p].shape == shape and \
                    args[p].dtype == dtype and args[p].flags.c_contiguous and check(args[p]):
                out = args[p]
                into = p
                break
        if out is None:
            out = np.empty(shape, dtype=dtype)
        if loop is not None and loop.run(args, (out,), (into,), shape, size, threshold):
            return out
        rank = len(shape)
        extent = shape[axis]
        lead = (slice(None),) * axis
        # Rows per cache block; the blocks' bounds depend on the shape alone.
        step = max(1, CACHE_BLOCK_ELEMENTS * extent // size)
        split = [(a, axis - (rank - np.ndim(a))) for a in args]
        split = [(a, k if k >= 0 and a.shape[k] == extent else -1) for a, k in split]

        def block(lo, hi):
            for start in range(lo, hi, step):
                end = min(start + step, hi)
                fn_out(*[a if k < 0 else a[(slice(None),) * k + (slice(start, end),)]
                         for a, k in split], out[lead + (slice(start, end),)])

        if size < threshold:
            block(0, extent)
        else:
            # Thread blocks are whole cache blocks, so the cut is the same on any count.
            cpu_threads.run_blocks(
                lambda lo, hi: block(lo * step, min(hi * step, extent)),
                -(-extent // step), size)
        return out

    run.source = source
    return run


# -- compiled loops (CPU) -------------------------------------------------------------------
# The ufuncs whose float kernel is one correctly rounded IEEE operation per element, as a
# scalar expression: a loop of these computes numpy's bits (numba adds no fast-math flags,
# so no contraction into fused multiply-adds and no reassociation). numpy's maximum and
# minimum return their first operand when it is NaN or strictly beyond the second, else
# the second (a NaN second operand, and the second zero of a tie between -0.0 and 0.0:
# the same on numpy's vector and scalar loops); relu_numpy is maximum(x, 0). ``|`` and not
# ``or``: no branch, so the loop stays one select per element and vectorizes.
_EXACT = {np.add: "{0} + {1}", np.subtract: "{0} - {1}", np.multiply: "{0} * {1}",
          np.divide: "{0} / {1}", np.negative: "-{0}", np.square: "{0} * {0}",
          np.sqrt: "np.sqrt({0})",
          np.maximum: "{0} if ({0} > {1}) | ({0} != {0}) else {1}",
          np.minimum: "{0} if ({0} < {1}) | ({0} != {0}) else {1}",
          relu_numpy: "{0} if ({0} > {z}) | ({0} != {0}) else {z}"}
_LOOP_DTYPES = ("float32", "float64")
_ZEROS = {"float32": "np.float32(0)", "float64": "np.float64(0)"}  # fixed text per dtype
_LOOPS = {}  # (source, signature) -> cpu_jit.Kernel, shared by every node and executor
_loops_lock = threading.Lock()

# How a loop reads an input (``_Loop.full``): one element (a scalar or 0-d array), the
# element at the same flat index (the result's shape), or the element at the same place
# in a row that repeats over the leading axes (a bias), tiled to the loop's row length.
SCALAR, FULL, ROW = 0, 1, 2


def loop_source(program, full, params, intos):
    """The source of one compiled loop over a program of ``_EXACT`` sub-ops.

    ``full[r]`` is how input ``r`` is read: ``FULL`` (it has the result's shape), ``ROW``
    (one row of ``n`` elements repeated over the result) or ``SCALAR``; ``params[r]`` is
    the parameter that carries input ``r`` (inputs that are one array at run time share
    one); result ``o`` (of ``program.outputs``) goes into parameter ``intos[o]``, or into a
    parameter ``out<o>`` after the inputs when that is None. Every array parameter is
    flat. Without ``ROW`` inputs the loop runs over elements ``lo:hi``; with them, over
    rows ``lo:hi`` of ``n`` elements (parameter ``n`` first), an inner loop per row. The
    text is fixed templates and integers only: nothing of the graph's strings goes in.
    """
    rows = ROW in full
    names = sorted(set(params))
    outs = ["out%d" % o for o, into in enumerate(intos) if into is None]
    head = "def fused_loop(lo, hi, %s):" % ", ".join(
        (["n"] if rows else []) + ["a%d" % r for r in names] + outs)
    lines = [head]
    refs = []
    for r in range(program.n_in):
        if full[r] == SCALAR:
            lines.append("    s%d = a%d[0]" % (r, params[r]))
            refs.append("s%d" % r)
        else:
            refs.append("x%d" % params[r])
    # Slices, then indices from 0: LLVM vectorizes a loop over ``range(lo, hi)`` that
    # writes one of its inputs only in this form (it cannot rule out negative indices).
    # Over rows, each row's slices are taken the same way before its inner loop.
    pad = "    "
    bounds = "lo:hi"
    if rows:
        lines += ["    b%d = a%d[0:n]" % (r, r) for r in names if full[r] == ROW]
        lines.append("    for k in range(lo, hi):")
        pad = "        "
        bounds = "k * n:k * n + n"
    lines += ["%sb%d = a%d[%s]" % (pad, r, r, bounds) for r in names if full[r] == FULL]
    # The slice written is the slice read (one name): two slices of one array would fail
    # the compiled loop's overlap check and send it down its scalar path.
    for o, into in enumerate(intos):
        lines.append("%sc%d = %s" % (pad, o, "out%d[%s]" % (o, bounds) if into is None
                                     else "b%d" % into))
    lines.append("%sfor i in range(%s):" % (pad, "n" if rows else "hi - lo"))
    pad += "    "
    for r in names:
        if full[r] != SCALAR:
            lines.append("%sx%d = b%d[i]" % (pad, r, r))
    for j, (prim, rs) in enumerate(zip(program.prims, program.refs)):
        expr = _EXACT[cpu_ufunc(prim)[0]].format(*[refs[r] for r in rs],
                                                 z=_ZEROS[program.dtypes[j]])
        lines.append("%st%d = %s" % (pad, j, expr))
        refs.append("t%d" % j)
    for o, j in enumerate(program.outputs):
        lines.append("%sc%d[i] = t%d" % (pad, o, j))
    return "\n".join(lines) + "\n"


def _row_axis(s, shape):
    """The first axis of ``shape`` that an input of shape ``s`` spans when it repeats over
    the leading axes only (a bias: its axes, after leading ones, are ``shape``'s last), or
    None (a scalar, an input of the full shape, or any other broadcast)."""
    if s is None or None in s or not s or len(s) > len(shape) or s == shape:
        return None
    s = tuple(s)
    while s and s[0] == 1:
        s = s[1:]
    if not s or tuple(shape[len(shape) - len(s):]) != s:
        return None
    return len(shape) - len(s)


def _head(program, n_in, body):
    """The sub-ops of ``program`` outside ``body`` (its scalar head), each as
    ``(reference, numpy kernel, operand references, attrs)``, in program order."""
    from eagerflow.backend import numpy_backend

    return tuple((n_in + j, program.prims[j].kernel(numpy_backend), program.refs[j],
                  dict(program.attrs[j]))
                 for j in range(len(program.prims)) if j not in body)


class _BodyProgram:
    """The sub-ops of a program that its loop computes (``loop_source`` reads these
    fields of a ``Program``): the loop's inputs are ``take``, node inputs and head results
    alike, and its sub-ops are ``body``, renumbered."""

    def __init__(self, program, body, take):
        n_in = len(take)
        where = {t: k for k, t in enumerate(take)}
        where.update({program.n_in + j: n_in + k for k, j in enumerate(body)})
        self.n_in = n_in
        self.prims = [program.prims[j] for j in body]
        self.refs = [tuple(where[r] for r in program.refs[j]) for j in body]
        self.dtypes = tuple(program.dtypes[j] for j in body)
        self.outputs = tuple(body.index(j) for j in program.outputs)


def _body_program(program, body, take):
    if len(body) == len(program.prims) and take == tuple(range(program.n_in)):
        return program  # no head: the node's own program
    return _BodyProgram(program, body, take)


class _Loop:
    """A fused program compiled into one loop over the flattened elements (``cpu_jit``).

    numpy runs a region as one call per sub-op, each a pass over memory (over cache-sized
    blocks, see ``_on_cores``); the loop reads each input once and writes the result once,
    keeping every intermediate in a register. Only programs of ``_EXACT`` sub-ops in one
    float dtype (after a head of sub-ops on scalars, see ``of``), with two or more
    sub-ops, whose inputs have the result's shape, are
    scalars, or repeat over the leading axes (a bias row; one input at least has the
    result's shape), compile: the loop then gives numpy's bits. One loop is compiled per
    way of writing the result (into a donor input, in place, or into a fresh array) and per
    pattern of inputs that are the same array (one parameter for them: the compiled loop
    runs on vector units only when the array it writes overlaps no other parameter).
    """

    def __init__(self, program, full, dtype, row_axis=None, head=(), take=None, steps=0):
        self.program = program
        self.full = full
        self.dtype = np.dtype(dtype)
        self.row_axis = row_axis  # the loop's rows are the result's axes from here on
        self.variants = {}
        # The scalar head (see ``of``): (reference, kernel, refs, attrs) per sub-op, and the
        # references (node inputs, head results) that are the loop's inputs, in order.
        self.head = head
        self.take = take
        self.position = None if take is None else {t: k for k, t in enumerate(take)}
        self.steps = steps  # the node program's sub-op count (the head's references)

    @classmethod
    def of(cls, program, node):
        """The loop of a node's program, or None when it does not compile to one.

        Sub-ops whose operands are all scalars (an optimizer's bias correction from its
        step count: ``lr * sqrt(1 - beta2**t) / (1 - beta1**t)``, with a cast and powers)
        are the loop's head: they run first, once per call, through their numpy kernels
        as in the numpy form (the same bits), and their results enter the loop as scalar
        inputs. Only the sub-ops that read a full-shape or row input need an exact loop
        form.
        """
        if len(program.prims) < 2:
            return None
        dtype = node.avals[0].dtype.name
        shape = node.avals[0].shape
        if dtype not in _LOOP_DTYPES or not shape or \
                any(a.shape != shape or a.dtype.name != dtype for a in node.avals):
            return None
        n_in = program.n_in
        scalar = [src.avals[i].shape == () for src, i in node.inputs]
        for refs in program.refs:
            scalar.append(all(scalar[r] for r in refs))
        body = [j for j in range(len(program.prims)) if not scalar[n_in + j]]
        if len(body) < 2 or any(scalar[n_in + j] for j in program.outputs):
            return None
        for j in body:
            form = cpu_ufunc(program.prims[j])
            if program.attrs[j] or form is None or form[1] or form[0] not in _EXACT or \
                    program.dtypes[j] != dtype:
                return None
        in_body = set(body)
        take = sorted({r for j in body for r in program.refs[j]
                       if r < n_in or r - n_in not in in_body})
        dtypes = list(program.in_dtypes) + list(program.dtypes)
        if any(dtypes[t] != dtype for t in take):
            return None
        full = []
        row_axis = len(shape)
        for t in take:
            if t >= n_in:
                full.append(SCALAR)  # a head result
                continue
            src, i = node.inputs[t]
            s = src.avals[i].shape
            if s == shape:
                full.append(FULL)
            elif s == ():
                full.append(SCALAR)
            elif _row_axis(s, shape) is not None:
                full.append(ROW)
                row_axis = min(row_axis, _row_axis(s, shape))
            else:
                return None
        if FULL not in full:
            return None
        head, take = _head(program, n_in, in_body), tuple(take)
        loop_program = _body_program(program, body, take)
        if not head and take == tuple(range(n_in)):
            take = None  # the loop reads the node's inputs as they come
        steps = len(program.prims)
        if ROW not in full:
            return cls(loop_program, tuple(full), dtype, None, head, take, steps)
        if 0 in shape:
            return None  # rows of no elements
        # The rows are the trailing axes from the first one a ROW input spans, widened to
        # 256 elements or more (as relu_numpy's rows): the inner loop then runs long
        # enough to pay for its row's slices.
        while row_axis > 0 and int(np.prod(shape[row_axis:])) < 256:
            row_axis -= 1
        return cls(loop_program, tuple(full), dtype, row_axis, head, take, steps)

    def _variant(self, params, intos):
        """The compiled loop for this way of passing the arrays, or None (the kernels
        are off, or it did not compile)."""
        key = (params, intos)
        kernel = self.variants.get(key)
        if kernel is None:
            source = loop_source(self.program, self.full, params, intos)
            kind = "float32" if self.dtype == np.float32 else "float64"
            n_arrays = len(set(params)) + intos.count(None)
            ints = 3 if ROW in self.full else 2  # lo, hi (and n, the row length)
            signature = "void(%s)" % ", ".join(["int64"] * ints + ["%s[::1]" % kind] * n_arrays)
            with _loops_lock:
                kernel = _LOOPS.get((source, signature))
                if kernel is None:
                    # Compiled once per text and signature, and kept on disk (cpu_jit).
                    kernel = cpu_jit.source_kernel("import numpy as np\n\n\n" + source,
                                                   "fused_loop", signatures=[signature],
                                                   error_model="numpy")
                    _LOOPS[(source, signature)] = kernel
            self.variants[key] = kernel
        return kernel.compiled()

    def run(self, args, outs, intos, shape, size, threshold):
        """Computes the program's results into ``outs`` (result ``o`` into
        ``args[intos[o]]`` when ``intos[o] >= 0``, which is then ``outs[o]``); False when
        these arguments need the numpy form (or the loop is not usable)."""
        dtype, full = self.dtype, self.full
        if self.take is not None:
            values = list(args) + [None] * self.steps
            try:
                for ref, kernel, refs, attrs in self.head:
                    values[ref] = kernel(*[values[r] for r in refs], **attrs)
            except Exception:  # noqa: BLE001 - the numpy form raises it, naming the sub-op
                return False
            args = [values[t] for t in self.take]
            intos = [self.position.get(p, -1) if p >= 0 else -1 for p in intos]
        params = []
        for r, a in enumerate(args):
            if full[r] == FULL:
                # (The loops are compiled for aligned, writable arrays: a read-only one, a
                # constant or a wrapped buffer, takes the numpy form.)
                flags = a.flags
                if a.__class__ is not np.ndarray or a.dtype != dtype or a.shape != shape or \
                        not (flags.c_contiguous and flags.writeable and flags.aligned):
                    return False
                params.append(next(q for q in range(r + 1) if args[q] is a))
            elif full[r] == ROW:
                if getattr(a, "dtype", None) != dtype or _row_axis(a.shape, shape) is None:
                    return False
                params.append(r)  # its own parameter: a tiled copy
            elif getattr(a, "dtype", None) != dtype or a.shape:  # a 0-d array or a scalar
                return False
            else:
                params.append(r)
        params = tuple(params)
        fn = self._variant(params, tuple(params[i] if i >= 0 else None for i in intos))
        if not fn:
            return False
        row_shape = shape[self.row_axis:] if self.row_axis is not None else ()
        flat = []
        for r in sorted(set(params)):
            if full[r] == FULL:
                flat.append(args[r].reshape(-1))
            elif full[r] == ROW:
                # One row of the loop's length (the largest ROW input's size, or 256
                # elements and up), fresh and writable: a copy of each ROW input at most.
                row = np.empty(row_shape, dtype)
                row[...] = args[r]
                flat.append(row.reshape(-1))
            else:
                flat.append(np.array(args[r], ndmin=1))
        flat += [out.reshape(-1) for out, i in zip(outs, intos) if i < 0]
        # A loop is bound by memory: it splits over threads from FUSED_MIN_ELEMENTS only,
        # whatever its sub-op count (the merged Adam update, 12 sub-ops over [784, 512]:
        # 0.28 ms on one thread, 0.36 ms split in two; see docs/design.md).
        least = max(threshold, cpu_threads.FUSED_MIN_ELEMENTS)
        if self.row_axis is None:
            cpu_threads.run_blocks(lambda lo, hi: fn(lo, hi, *flat), size, size, least)
        else:
            n = math.prod(row_shape)  # (np.prod costs microseconds on a tuple)
            cpu_threads.run_blocks(lambda lo, hi: fn(lo, hi, n, *flat), size // n, size,
                                   least)
        return True


def _failure(program, node, device):
    origins = ORIGINS.get(node, ())

    def fail(step, exc):
        prim = program.prims[step]
        error = dispatch.translate_failure(prim, [], program.attrs[step], device, exc)
        origin = origins[step] if step < len(origins) else None
        if origin:
            error.message = "%s (fused; the op was created at %s:%d)" % (
                error.message, origin[0], origin[1])
            error.args = (error.message,)
        raise error from None

    return fail


# -- GPU ------------------------------------------------------------------------------------
# The generated CUDA forms live in ``fused_gpu``; these names are the ones the fusion pass
# and the tests know.

CTYPES = fused_gpu.CTYPES
cuda_expression = fused_gpu.cuda_expression
cuda_source = fused_gpu.cuda_source


def _build_gpu(program, node, device, donors=()):
    return fused_gpu.build(program, node, device, _failure(program, node, device), donors)


def _interpreted(program, node, device):
    """Runs sub-ops one kernel at a time (GPU sub-ops without a CUDA expression)."""
    return fused_gpu.interpreted(program, device, _failure(program, node, device))


def fused_step(node, device, executor):
    """The executor's step factory for FusedElementwise nodes."""
    program = Program.of(node)
    if not program.prims:
        raise errors.InternalError(None, node.op, "empty fused program in node %s" % node.name)
    if device.backend_index:
        return _build_gpu(program, node, device, getattr(executor, "_donatable_variables", ()))
    return _build_cpu(program, node, device, getattr(executor, "_donatable", ()),
                      getattr(executor, "_donatable_variables", ()))
