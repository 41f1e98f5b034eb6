"""The one dispatch function every op call goes through.

``execute(prim, args, attrs)``:

1. inside a trace, hands the call to the tracing hook (which adds a graph node using the
   primitive's abstract rule) and returns symbolic outputs;
2. otherwise runs the primitive's kernel on the inputs' device;
3. then, only if some active tape watches an input, records the call on the tape.

Gradient rules are ordinary op calls, so they come back through here: an outer tape records
them (higher-order gradients) and a trace turns them into graph nodes.

The first branch of ``execute`` is the eager fast path: all inputs are eager tensors on one
device with one accepted dtype and nothing (scope, tape, trace) is active on the thread. It
does no per-call introspection and allocates only the output tensor.
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.framework import context
from eagerflow.ops import composite
from eagerflow.tensor import Tensor, convert_to_tensor, wrap

__all__ = ["execute", "set_tape_recorder", "copy_to_device", "convert_inputs", "check_dtypes",
           "kernel_failed", "translate_failure"]

_state = context.state
_new = object.__new__
_EMPTY = {}

# Set by eagerflow.tape: called as recorder(tapes, prim, inputs, attrs, outputs) when an input
# of an op may be watched. Defined low, implemented high, so ops never import the tape.
_tape_recorder = None

# Set by eagerflow.profiler while it records: called as profiler(prim, args, attrs, run) and
# returns run(prim, args, attrs). The profiler also sets ``state.profiling``, which makes
# ``state.slow`` true, so the fast path costs nothing more and every op comes here.
_profiler = None


def set_profiler(hook):
    """Installs (or with None removes) the profiler hook every op call goes through."""
    global _profiler
    _profiler = hook


def set_tape_recorder(fn):
    global _tape_recorder
    _tape_recorder = fn


def execute(prim, args, attrs=_EMPTY):
    """Runs ``prim`` on ``args`` (a tuple of tensors or convertible values).

    Args:
        prim: A registered Primitive.
        args: Its inputs, positionally.
        attrs: A dict of static attributes passed to the kernel as keywords.

    Returns:
        A Tensor, or a tuple of Tensors for multi-output primitives.
    """
    st = _state
    if not st.slow and prim.fast:
        n = len(args)
        if n == 2:
            x, y = args
            cx = x.__class__
            cy = y.__class__
            if cx is Tensor and cy is not Tensor:
                if cy is float or cy is int:
                    y = _scalar(prim, y, x._value.dtype, x._device)
                    cy = Tensor
                elif getattr(cy, "_is_variable", False):
                    y = y.read_value()
                    cy = y.__class__
            elif cy is Tensor and cx is not Tensor:
                if cx is float or cx is int:
                    x = _scalar(prim, x, y._value.dtype, y._device)
                    cx = Tensor
                elif getattr(cx, "_is_variable", False):
                    x = x.read_value()
                    cx = x.__class__
            if cx is Tensor and cy is Tensor:
                device = x._device
                a = x._value
                b = y._value
                dt = a.dtype
                if device is y._device and (dt is b.dtype or dt == b.dtype) and dt in prim.accepts:
                    kernel = prim.kernels[device.backend_index]
                    if kernel is not None:
                        try:
                            out = kernel(a, b, **attrs) if attrs else kernel(a, b)
                        except Exception as exc:  # noqa: BLE001 - retried or translated
                            out = kernel_failed(prim, kernel, (a, b), args, attrs, device, exc)
                        if prim.single:
                            t = _new(Tensor)
                            t._value = out
                            t._device = device
                            t._tid = 0
                        else:
                            t = tuple([wrap(o, device) for o in out])
                        if st.tapes and (x._tid or y._tid) and _tape_recorder is not None:
                            _tape_recorder(st.tapes, prim, (x, y), attrs, t)
                        return t
        elif n == 1:
            x = args[0]
            if x.__class__ is Tensor:
                device = x._device
                a = x._value
                if a.dtype in prim.accepts:
                    kernel = prim.kernels[device.backend_index]
                    if kernel is not None:
                        try:
                            out = kernel(a, **attrs) if attrs else kernel(a)
                        except Exception as exc:  # noqa: BLE001 - retried or translated
                            out = kernel_failed(prim, kernel, (a,), args, attrs, device, exc)
                        if prim.single:
                            t = _new(Tensor)
                            t._value = out
                            t._device = device
                            t._tid = 0
                        else:
                            t = tuple([wrap(o, device) for o in out])
                        if st.tapes and x._tid and _tape_recorder is not None:
                            _tape_recorder(st.tapes, prim, args, attrs, t)
                        return t
    return _execute_general(prim, args, attrs)


# Python scalars converted for ops, per (type, value, dtype, device). Tensors are immutable and
# these never reach user code, so sharing them is safe; the cache is bounded.
_scalar_cache = {}


def _scalar(prim, value, np_dtype, device):
    """The tensor for a Python int/float combined with a tensor of ``np_dtype``."""
    key = (value.__class__, value, np_dtype, device)
    if value == 0 and value.__class__ is float:
        key = key + (str(value),)  # keep -0.0 apart from 0.0
    t = _scalar_cache.get(key)
    if t is None:
        dtype = dtypes_lib.from_numpy(np_dtype)
        try:
            t = convert_to_tensor(value, dtype=dtype)
        except TypeError as exc:
            raise errors.InvalidArgumentError(
                None, prim.name, "%s: the Python value %r cannot be converted to %s, the dtype "
                "of the other input: %s" % (prim.name, value, dtype.name, exc)) from None
        if t._device is not device:
            t = copy_to_device(t, device)
        if len(_scalar_cache) >= 1024:
            _scalar_cache.clear()
        _scalar_cache[key] = t
    return t


def _execute_general(prim, args, attrs):
    if prim.elementwise:
        for a in args:
            if a.__class__ is not Tensor and getattr(a, "_is_ragged", False):
                # A RaggedTensor argument: the op runs on its flat values (ops.composite).
                return composite.handler("elementwise", a)(prim, args, attrs)
    st = _state
    if st.trace is not None:
        return st.trace(prim, args, attrs)
    if _profiler is not None:
        return _profiler(prim, args, attrs, _execute_eager)
    return _execute_eager(prim, args, attrs)


def _execute_eager(prim, args, attrs):
    st = _state
    for a in args:
        if a.__class__ is not Tensor:
            inputs = convert_inputs(prim, args)
            break
    else:
        inputs = args
    device = _choose_device(prim, inputs)
    values = []
    for t in inputs:
        if t._device is not device:
            t = copy_to_device(t, device)
        values.append(t._value)
    check_dtypes(prim, values, inputs, device)
    kernel = prim.kernels[device.backend_index] or prim.kernel(device.backend)
    try:
        out = kernel(*values, **attrs) if attrs else kernel(*values)
    except Exception as exc:  # noqa: BLE001 - retried or translated
        out = kernel_failed(prim, kernel, values, inputs, attrs, device, exc)
    if prim.single:
        result = wrap(out, device)
    else:
        result = tuple([wrap(o, device) for o in out])
    tapes = st.tapes
    if tapes and _tape_recorder is not None:
        for t in inputs:
            if t._tid:
                _tape_recorder(tapes, prim, inputs, attrs, result)
                break
    return result


def _group_indices(prim, n):
    group = prim.dtype_group
    if group == "all":
        return range(n)
    return group


def convert_inputs(prim, args, convert=None):
    """Converts every argument of ``prim`` to a tensor, as TF's conversion does: the one rule
    for eager calls and for traces (the tracer passes its own ``convert``).

    Within the op's dtype group, values that are not tensors take the dtype of the group's
    first tensor (or variable); with no tensor in the group, the first value converted fixes
    it for the rest. Python values must fit that dtype (``int32_tensor + 1.5`` raises);
    numpy arrays are cast to it, as TF casts them (``int32_tensor + np.array([2.5])`` is
    ``[3]``).

    Args:
        prim: The Primitive.
        args: Its arguments.
        convert: ``convert(prim, value, np_dtype, device)`` -> the input for one argument
            (``np_dtype`` is the group's numpy dtype for an argument in the group, else
            None; ``device`` the group's device when a tensor fixed it). Default: eager.

    Raises:
        InvalidArgumentError: For a value that cannot be converted, naming the op, the
            input and the dtype it needed.
    """
    if not isinstance(args, tuple):
        args = tuple(args)
    n = len(args)
    group = _group_indices(prim, n)
    group_dtype = None
    group_device = None
    for i in group:
        a = args[i] if i < n else None
        if a.__class__ is Tensor:
            group_dtype = a._value.dtype
            group_device = a._device
            break
        if a is not None and hasattr(a, "_as_tensor") and hasattr(a, "dtype"):
            try:
                group_dtype = a.dtype.np_dtype
            except AttributeError:
                group_dtype = None
            break
    if convert is None:
        convert = _eager_input
    inputs = []
    group_set = group if isinstance(group, range) else set(group)
    for i, a in enumerate(args):
        in_group = i in group_set
        target = group_dtype if in_group else None
        try:
            t = convert(prim, a, target, group_device if in_group else None)
        except TypeError as exc:
            raise errors.InvalidArgumentError(
                None, prim.name, "%s: input %d (%s) cannot be converted to %s: %s"
                % (prim.name, i, _describe_value(a),
                   _dtname(target) if target is not None else "a tensor", exc)) from None
        if in_group and group_dtype is None:
            group_dtype = t._value.dtype
            group_device = t._device
        inputs.append(t)
    return inputs


def _eager_input(prim, a, np_dtype, device):
    """One argument as an eager tensor (see :func:`convert_inputs`)."""
    if a.__class__ is Tensor:
        return a
    if getattr(a, "_is_variable", False) and (np_dtype is None or a._value.dtype == np_dtype):
        return a.read_value()
    cls = a.__class__
    if (cls is float or cls is int) and device is not None:
        return _scalar(prim, a, np_dtype, _state.device or device)
    return convert_to_tensor(a, dtype=None if np_dtype is None else dtypes_lib.from_numpy(
        np_dtype))


def _choose_device(prim, inputs):
    """Scope device if any; else the inputs' device, preferring a GPU when they disagree."""
    scoped = _state.device
    if scoped is not None:
        return scoped
    if not inputs:
        return context.CPU0
    device = inputs[0]._device
    for t in inputs[1:]:
        other = t._device
        if other is not device and other.device_type == "GPU" and device.device_type == "CPU":
            device = other
    return device


def check_dtypes(prim, values, inputs, device, where=None):
    """Checks the input dtypes of one call: the one dtype rule for eager calls and traces.

    The first dtype of the op's dtype group must be one it supports, and the group's others
    must equal it: eagerflow never promotes dtypes implicitly.

    Args:
        prim: The Primitive.
        values: The inputs' arrays (anything with a numpy ``dtype``: a trace passes abstract
            arrays).
        inputs: The inputs (described in the message).
        device: Where the call runs (a Device, or a name), for the message.
        where: None, or a function giving text to append to the message (a trace names
            the user's line; only a failing check pays for finding it).

    Raises:
        InvalidArgumentError: Naming the op, the dtypes, the inputs and how to fix it.
    """
    group = _group_indices(prim, len(values))
    first = None
    for i in group:
        if i >= len(values):
            continue
        dt = values[i].dtype
        if first is None:
            first = (i, dt)
            if not prim.allows_dtype(dt):
                raise errors.InvalidArgumentError(
                    None, prim.name,
                    "%s does not support dtype %s (inputs: %s on %s)%s. Supported: %s.%s"
                    % (prim.name, _dtname(dt), _describe(inputs), _dev(device),
                       where() if where else "", _supported(prim), _cast_hint(prim)))
        elif dt != first[1]:
            raise errors.InvalidArgumentError(
                None, prim.name,
                "%s: inputs must have the same dtype, got %s (input %d) and %s (input %d) "
                "(inputs: %s on %s)%s. eagerflow never promotes dtypes implicitly; cast one "
                "side with eagerflow.cast(x, %s)."
                % (prim.name, _dtname(first[1]), first[0], _dtname(dt), i, _describe(inputs),
                   _dev(device), where() if where else "", _dtname(first[1])))


def copy_to_device(tensor, device):
    """Copies a tensor's value to ``device`` (free between logical CPU devices)."""
    src = tensor._device
    if src is device:
        return tensor
    value = tensor._value
    if src.backend_index == 0 and device.backend_index == 0:
        return wrap(value, device)
    if device.backend_index == 0:
        return wrap(src.backend.to_numpy(value), device)
    xp = device.backend.module
    with xp.cuda.Device(device.physical_index):
        try:
            return wrap(xp.asarray(value), device)
        except Exception as exc:  # noqa: BLE001 - only an allocation failure is handled
            from eagerflow.framework import memory

            try:
                return wrap(memory.retry_after_release(device, exc, lambda: xp.asarray(value)),
                            device)
            except Exception as again:  # noqa: BLE001 - reported with the device's state
                if not memory.is_out_of_memory(again):
                    raise
                where = "copying %s from %s to %s" % (
                    _describe_value(tensor), _dev(src), _dev(device))
                raise errors.ResourceExhaustedError(
                    None, "copy_to_device", memory.out_of_memory_message(where, device, again)
                ) from None


def _dtname(np_dtype):
    dt = dtypes_lib.from_numpy(np_dtype)
    return dt.name if dt is not None else str(np_dtype)


def _dev(device):
    if device.__class__ is str:
        return device
    return device.name if device is not None else "?"


def _supported(prim):
    if prim.dtypes is None:
        return "all dtypes"
    return ", ".join(dtypes_lib.as_dtype(d).name for d in prim.dtypes)


def _cast_hint(prim):
    if prim.dtypes and all(dtypes_lib.as_dtype(d).is_floating or dtypes_lib.as_dtype(d).is_complex
                           for d in prim.dtypes):
        return " Cast integer inputs first, e.g. eagerflow.cast(x, eagerflow.float32)."
    return ""


def _describe_value(v):
    if isinstance(v, Tensor):
        return "%s%s" % (v.dtype.name, list(v._value.shape))
    shape = getattr(v, "shape", None)
    dtype = getattr(v, "dtype", None)
    if shape is not None and dtype is not None:
        return "%s%s" % (getattr(dtype, "name", dtype), list(shape))
    text = repr(v)
    return text if len(text) < 40 else text[:37] + "..."


def _describe(inputs):
    return ", ".join(_describe_value(t) for t in inputs)


def _attrs_text(attrs):
    if not attrs:
        return ""
    return " with %s" % ", ".join("%s=%r" % kv for kv in attrs.items())


def kernel_failed(prim, kernel, values, inputs, attrs, device, exc):
    """The exception path of a kernel call, eager or in a graph: returns a retry's output or
    raises.

    Args:
        prim: The Primitive, or a graph builtin's op name.
        kernel: The kernel that raised.
        values: Its arrays.
        inputs: What to describe them as in the message (tensors or arrays).
        attrs: Its keyword attrs.
        device: The Device it ran on.
        exc: What it raised.

    A GPU allocation failure is retried once after the device's cached blocks are freed
    (cupy's pool keeps freed blocks, and its memory limit counts them); anything else, or
    a second failure, becomes the eagerflow error :func:`translate_failure` makes of it.
    Only this path pays for the retry (and imports the memory module): a kernel that
    succeeds costs no more than before.
    """
    from eagerflow.framework import memory

    if device.backend_index:
        try:
            return memory.retry_after_release(
                device, exc, lambda: kernel(*values, **attrs) if attrs else kernel(*values))
        except Exception as again:  # noqa: BLE001 - translated below
            exc = again
    raise translate_failure(prim, inputs, attrs, device, exc) from None


def translate_failure(prim, inputs, attrs, device, exc):
    """Turns a kernel's exception into an eagerflow error naming op, shapes, dtypes, device.

    ``prim`` is the Primitive, or a graph builtin's op name; an OpError the kernel raised
    itself is completed with the call site, an allocation failure becomes
    ResourceExhaustedError with the device's memory report, anything else
    InvalidArgumentError with a hint at the usual fix.
    """
    from eagerflow.framework import memory

    name = getattr(prim, "name", prim)
    where = "%s(%s)%s on %s" % (name, _describe(inputs), _attrs_text(attrs), _dev(device))
    if isinstance(exc, errors.OpError):
        if exc.op is None:
            # Raised by a kernel's own check: add the call site it could not see.
            exc.op = name
            exc.message = "%s: %s" % (where, exc.message)
            exc.args = (exc.message,)
        return exc
    if memory.is_out_of_memory(exc):
        return errors.ResourceExhaustedError(
            None, name, memory.out_of_memory_message(where, device, exc))
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    kind = type(exc).__name__
    if "broadcast" in detail or "shapes" in detail or "shape" in detail:
        fix = " Make the shapes equal or broadcast-compatible (reshape/expand_dims)."
    elif isinstance(exc, IndexError):
        fix = " An index is out of range for the input's shape."
    elif isinstance(exc, np.linalg.LinAlgError) or kind == "LinAlgError":
        fix = " The matrix may be singular or not positive definite."
    elif isinstance(exc, (TypeError,)) and "ufunc" in detail:
        fix = " This dtype is not supported by the op."
    else:
        fix = ""
    hint = getattr(prim, "hint", None)
    hint = (" " + hint) if hint else ""
    return errors.InvalidArgumentError(
        None, name, "%s failed: %s.%s%s" % (where, detail.rstrip("."), fix, hint))
