"""A ``FusedElementwise`` node on the GPU: CUDA generated from the primitives' declarations.

Each primitive states its scalar C expression once, in its declaration (``gpu_expr``); a
reduction states how two partial values combine, where a reduction starts and how its
result is written (``gpu_reduce``). From these alone a fused program becomes one cupy
kernel, in one of three forms:

* one ``cupy.ElementwiseKernel`` with one output per result (``cuda_source``): a region of
  elementwise sub-ops, or an optimizer's update of one variable with several results
  (``update_loops``: Adam's ``m``, ``v`` and parameter in one pass over memory);
* the same kernel writing results into the variables' own buffers (``intos``): an input
  whose variable a result is assigned to becomes that result's output parameter, read
  once before any result is written (a thread reads and writes only its own element);
* one ``cupy.ReductionKernel`` (``reduction_source``) when the program ends in a Sum,
  Mean or Max over the elementwise sub-ops' result: the sub-ops are its map expression
  (a ``__device__`` function in the preamble), the declaration gives the reduce
  expression, the identity and the post-map.

A program with a sub-op that has no expression for its dtypes runs one cupy kernel per
sub-op (``interpreted``). Kernels compile with ``--fmad=false``: a fused ``a * b + c``
then rounds as the separate kernels do. The texts are fixed templates, the declared
expressions, dtype names and numbers: no node name or attr string of a graph reaches
them (a non-numeric attr leaves its sub-op without an expression).

Example:
    >>> from eagerflow.function.passes import fused_gpu, fused_step
    >>> program = fused_step.Program(("Mul", "AddV2"), (2, 2), (0, 1, 2, 1),
    ...                              ("float32", "float32"), ("", ""), (-1, -1),
    ...                              ("float32", "float32"), outputs=(0, 1))
    >>> print(fused_gpu.cuda_source(program, intos=(0, -1))[2])
    const float in0 = out0;
    float t0 = in0 * in1;
    float t1 = t0 + in1;
    out0 = t0;
    out1 = t1;
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np

from eagerflow.ops import registry

__all__ = ["CTYPES", "cuda_expression", "cuda_source", "reduction_source", "build",
           "interpreted"]

_getrefcount = sys.getrefcount

CTYPES = {
    "float32": "float", "float64": "double", "int8": "signed char", "int16": "short",
    "int32": "int", "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
    "uint32": "unsigned int", "uint64": "unsigned long long", "bool": "bool",
}
_FLOAT = frozenset(("float32", "float64"))
# +infinity of each float type as its bits: device intrinsics, so no header is needed
# under NVRTC (a reduction identity's ``{inf}``).
_INF = {"float32": "__int_as_float(0x7f800000)",
        "float64": "__longlong_as_double(0x7ff0000000000000LL)"}
OPTIONS = ("--fmad=false",)


def cuda_expression(op, operand_dtypes, out_dtype, attrs, operands):
    """The C expression of one sub-op, or None when it has none for these dtypes.

    The expression is the primitive's declared ``gpu_expr`` (see ``eagerflow.ops.registry``);
    ``op`` is the Primitive or its name. Its dtype names apply to the operands of the op's
    dtype group (SelectV2's condition is a bool whatever the values are).
    """
    prim = op if op.__class__ is not str else registry.find(op)
    entry = None if prim is None else prim.gpu_expr
    if entry is None or out_dtype not in CTYPES:
        return None
    allowed, template = entry
    group = prim.dtype_group
    value_dtypes = operand_dtypes if group == "all" else [
        operand_dtypes[i] for i in group if i < len(operand_dtypes)]
    if any(d not in allowed for d in value_dtypes) or any(
            d not in CTYPES for d in operand_dtypes):
        return None
    if template is None:  # a conversion, written per target dtype
        if out_dtype == "bool":
            return "(%s != 0)" % operands[0]
        return "static_cast<%s>(%s)" % (CTYPES[out_dtype], operands[0])
    if "isnan((double)" in template and value_dtypes[0] not in _FLOAT:
        template = template.replace(" || isnan((double){0})", "").replace(
            "isnan((double){0}) ? {0} : ", "")
    fields = {"T": CTYPES[value_dtypes[0]] if value_dtypes else CTYPES[out_dtype],
              "O": CTYPES[out_dtype]}
    for key, value in attrs.items():
        # Only numbers are written into CUDA source (as their repr); an expression that
        # needs any other attribute finds no field and the sub-op runs its own kernel.
        if value.__class__ is float and np.isfinite(value):
            fields[key] = repr(value)
        elif value.__class__ is int:
            fields[key] = repr(value)
    try:
        return template.format(*operands, **fields)
    except (KeyError, IndexError):  # an attr the expression needs is missing
        return None


def _statements(program, count):
    """The C statements of the first ``count`` sub-ops (``t<j>``, over inputs ``in<k>``),
    or None when one has no expression."""
    names = ["in%d" % k for k in range(program.n_in)]
    dtypes = list(program.in_dtypes) + list(program.dtypes)
    lines = []
    for j in range(count):
        prim, refs = program.prims[j], program.refs[j]
        expr = cuda_expression(prim, [dtypes[r] for r in refs], program.dtypes[j],
                               program.attrs[j], [names[r] for r in refs])
        if expr is None:
            return None
        names.append("t%d" % j)
        lines.append("%s t%d = %s;" % (CTYPES[program.dtypes[j]], j, expr))
    return lines


def _digest(*texts):
    return hashlib.sha1("\n".join(texts).encode()).hexdigest()[:12]


def cuda_source(program, intos=None):
    """``(in_params, out_params, operation, name)`` for ``cupy.ElementwiseKernel``, or None.

    The kernel has one output ``out<o>`` per result ``program.outputs[o]``. With
    ``intos``, result ``o`` is written into the buffer of input ``intos[o]`` (``-1``: a
    buffer the caller passes or cupy allocates): that input is no input parameter then,
    its value is read from ``out<o>`` before any result is written. None when a sub-op
    has no CUDA expression for its dtypes, or ``intos`` names an input twice or one of
    another dtype than its result.

    Args:
        program: A ``fused_step.Program`` of elementwise sub-ops.
        intos: Optional, per result, the input index it overwrites or -1.

    Returns:
        The four strings, or None.

    Example:
        >>> from eagerflow.function.passes import fused_gpu, fused_step
        >>> program = fused_step.Program(("Exp",), (1,), (0,), ("float64",), ("",),
        ...                              (-1,), ("float64",))
        >>> fused_gpu.cuda_source(program)[:3]
        ('float64 in0', 'float64 out0', 'double t0 = exp(in0);\\nout0 = t0;')
    """
    n_out = len(program.outputs)
    intos = (-1,) * n_out if intos is None else tuple(intos)
    if len(intos) != n_out:
        return None
    into_of = {}
    for o, p in enumerate(intos):
        if p < 0:
            continue
        if p >= program.n_in or p in into_of or \
                program.in_dtypes[p] != program.dtypes[program.outputs[o]]:
            return None
        into_of[p] = o
    body = _statements(program, len(program.prims))
    if body is None:
        return None
    # The values of overwritten inputs first, every result last: all reads of an element
    # precede its writes.
    lines = ["const %s in%d = out%d;" % (CTYPES[program.in_dtypes[p]], p, o)
             for p, o in sorted(into_of.items())]
    lines += body
    lines += ["out%d = t%d;" % (o, j) for o, j in enumerate(program.outputs)]
    operation = "\n".join(lines)
    in_params = ", ".join("%s in%d" % (d, k) for k, d in enumerate(program.in_dtypes)
                          if k not in into_of)
    out_params = ", ".join("%s out%d" % (program.dtypes[j], o)
                           for o, j in enumerate(program.outputs))
    return in_params, out_params, operation, "eagerflow_fused_" + _digest(
        in_params + out_params + operation)


def reduces(program):
    """Whether the program ends in a reduction that declares a GPU form."""
    return program.prims[-1].gpu_reduce is not None


def reduction_source(program):
    """The fields of a ``cupy.ReductionKernel`` for a program ending in a reduction, or None.

    The program's last sub-op is a reduction declaring ``gpu_reduce`` over the result of
    the sub-ops before it, which all have CUDA expressions; its input dtype is one the
    declaration is written for. The sub-ops become a ``__device__`` function in the
    preamble (the map expression calls it on the inputs), the declaration gives the rest.

    Args:
        program: A ``fused_step.Program``.

    Returns:
        A dict of ``ReductionKernel`` keyword arguments (``in_params``, ``out_params``,
        ``map_expr``, ``reduce_expr``, ``post_map_expr``, ``identity``, ``name``,
        ``reduce_type``, ``preamble``), or None.

    Example:
        >>> from eagerflow.function.passes import fused_gpu, fused_step
        >>> program = fused_step.Program(
        ...     ("Square", "Sum"), (1, 1), (0, 1), ("float32", "float32"),
        ...     ("", "(('axis', (1,)), ('keepdims', False))"), (-1, -1), ("float32",))
        >>> fields = fused_gpu.reduction_source(program)
        >>> fields["map_expr"], fields["reduce_expr"], fields["identity"]
        ('eagerflow_map(in0)', 'a + b', '0')
    """
    last = len(program.prims) - 1
    prim = program.prims[last]
    entry = prim.gpu_reduce
    if entry is None or program.outputs != (last,) or len(program.refs[last]) != 1:
        return None
    allowed, reduce_expr, identity, post_map = entry
    src = program.refs[last][0]
    dtypes = list(program.in_dtypes) + list(program.dtypes)
    dtype = dtypes[src]
    if dtype not in allowed or dtype not in _INF or program.dtypes[last] != dtype or \
            any(d not in CTYPES for d in program.in_dtypes):
        return None
    body = _statements(program, last)
    if body is None:
        return None
    ctype = CTYPES[dtype]
    fields = {"R": ctype, "inf": _INF[dtype]}
    value = "in%d" % src if src < program.n_in else "t%d" % (src - program.n_in)
    args = ", ".join("in%d" % k for k in range(program.n_in))
    params = ", ".join("const %s in%d" % (CTYPES[d], k) for k, d in enumerate(program.in_dtypes))
    preamble = "\n".join(
        ["__device__ __forceinline__ %s eagerflow_map(%s) {" % (ctype, params)] +
        ["    " + line for line in body] + ["    return %s;" % value, "}"])
    out = {
        "in_params": ", ".join("%s in%d" % (d, k) for k, d in enumerate(program.in_dtypes)),
        "out_params": "%s out0" % dtype,
        "map_expr": "eagerflow_map(%s)" % args,
        "reduce_expr": reduce_expr,
        "post_map_expr": post_map.format(**fields),
        "identity": identity.format(**fields),
        "reduce_type": ctype,
        "preamble": preamble,
    }
    out["name"] = "eagerflow_reduce_" + _digest(*[out[k] for k in sorted(out)])
    return out


# -- kernels ---------------------------------------------------------------------------------

_KERNELS = {}  # source -> compiled kernel object, shared by every node and executor


def _elementwise_kernel(cupy, source):
    kernel = _KERNELS.get(source)
    if kernel is None:
        # No FMA contraction: a fused a*b+c then rounds like the separate kernels.
        kernel = cupy.ElementwiseKernel(*source, options=OPTIONS)
        _KERNELS[source] = kernel
    return kernel


def _reduction_kernel(cupy, fields):
    key = tuple(sorted(fields.items()))
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = cupy.ReductionKernel(
            fields["in_params"], fields["out_params"], fields["map_expr"],
            fields["reduce_expr"], fields["post_map_expr"], fields["identity"],
            name=fields["name"], reduce_type=fields["reduce_type"],
            preamble=fields["preamble"], options=OPTIONS)
        _KERNELS[key] = kernel
    return kernel


def _private_device(array):
    """True when only the variable and the fused step's caller hold this GPU buffer.

    Five references: the variable's slot, the executor's local, the step's argument
    tuple, this function's parameter and getrefcount's argument (as the CPU form's
    ``fused_step._private_variable``). cupy arrays have no ``writeable`` flag; a view
    has a ``base``.
    """
    return array.base is None and array.flags.c_contiguous and _getrefcount(array) <= 5


def build(program, node, device, fail, donors=()):
    """The step of a fused node on a GPU ``device``.

    Args:
        program: The node's ``fused_step.Program``.
        node: The FusedElementwise node.
        device: Its device (``device.backend.module`` is cupy).
        fail: ``fail(sub_op_index, exc)`` raises the sub-op's error.
        donors: What the executor allows to be overwritten (``executor._read_modify_write``):
            input positions for a single result, ``(result, input)`` pairs for several.

    Returns:
        ``step(*arrays)``: the result, or a tuple of the results.
    """
    cupy = device.backend.module
    last = len(program.prims) - 1
    if reduces(program):
        return _build_reduction(program, device, fail)
    source = cuda_source(program)
    if source is None:
        return interpreted(program, device, fail)
    plain = _elementwise_kernel(cupy, source)
    n_out = len(program.outputs)
    pairs = tuple(donors) if n_out > 1 else tuple((0, p) for p in tuple(donors)[:1])
    aval = node.avals[0]
    shape = aval.shape
    if shape is None or None in shape or any(a != aval for a in node.avals):
        pairs = ()
    # Only inputs of the results' static shape and dtype may be overwritten.
    pairs = tuple((o, p) for o, p in pairs if 0 <= p < program.n_in and 0 <= o < n_out and
                  node.inputs[p][0].avals[node.inputs[p][1]] == aval)
    if not pairs:
        def fused(*args):
            try:
                return plain(*args)
            except Exception as exc:  # noqa: BLE001 - translated with the sub-op
                fail(last, exc)

        return fused
    ndarray = cupy.ndarray
    dtype = aval.dtype.np_dtype
    none = (-1,) * n_out
    variants = {none: plain}

    def fused_into(*args):
        intos = [-1] * n_out
        for o, p in pairs:
            # args[p] is checked unbound: a local name would add one reference.
            if args[p].__class__ is ndarray and args[p].shape == shape and \
                    args[p].dtype == dtype and p not in intos and _private_device(args[p]):
                intos[o] = p
        key = tuple(intos)
        try:
            if key == none:
                return plain(*args)
            kernel = variants.get(key)
            if kernel is None:
                kernel = variants[key] = _elementwise_kernel(cupy, cuda_source(program, key))
            # Passing outputs means passing all of them (cupy's rule): the others fresh.
            outs = [args[p] if p >= 0 else cupy.empty(shape, dtype) for p in key]
            return kernel(*[a for k, a in enumerate(args) if k not in key], *outs)
        except Exception as exc:  # noqa: BLE001 - translated with the sub-op
            fail(last, exc)

    return fused_into


def _build_reduction(program, device, fail):
    fields = reduction_source(program)
    attrs = program.attrs[-1]
    axis, keepdims = attrs.get("axis"), attrs.get("keepdims", False)
    # Axes travel as the call's values, never as text; anything but ints is the reduction
    # kernel's own error, raised by the interpreted form.
    if fields is None or keepdims.__class__ is not bool or not (
            axis is None or (axis.__class__ is tuple and all(a.__class__ is int for a in axis))):
        return interpreted(program, device, fail)
    kernel = _reduction_kernel(device.backend.module, fields)
    last = len(program.prims) - 1

    def fused(*args):
        try:
            return kernel(*args, axis=axis, keepdims=keepdims)
        except Exception as exc:  # noqa: BLE001 - translated with the sub-op
            fail(last, exc)

    return fused


def interpreted(program, device, fail):
    """Runs sub-ops one kernel at a time (sub-ops without a CUDA expression)."""
    kernels = [p.kernel(device.backend) for p in program.prims]
    steps = list(zip(kernels, program.refs, program.attrs))
    outputs = program.outputs

    def fused(*args):
        values = list(args)
        try:
            for kernel, refs, attrs in steps:
                values.append(kernel(*[values[r] for r in refs], **attrs))
        except Exception as exc:  # noqa: BLE001 - translated with the sub-op
            fail(len(values) - len(args), exc)
        if len(outputs) > 1:
            return tuple(values[len(args) + j] for j in outputs)
        return values[len(args) + outputs[0]]

    return fused
