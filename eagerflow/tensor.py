"""The eager Tensor: an immutable value on a device.

A Tensor wraps a numpy array (on a CPU device) or a cupy array (on a GPU device). It never
changes after creation; operations return new tensors. Python operators (``+``, ``@``,
``[]``...) are attached by :mod:`eagerflow.ops.operators`, which keeps this module free of
any dependency on the op library.

Example:
    >>> import eagerflow as ef
    >>> t = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> t.shape, t.dtype, t.device
    (TensorShape([2, 2]), tf.float32, '/job:localhost/replica:0/task:0/device:CPU:0')
    >>> (t * 2)[1, 0].numpy()
    np.float32(6.0)
"""

from __future__ import annotations

import builtins

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors
from eagerflow.framework import context
from eagerflow.tensor_shape import TensorShape

__all__ = ["Tensor", "convert_to_tensor", "constant", "is_tensor"]

_new = object.__new__
_from_numpy = dtypes_lib.from_numpy


class Tensor:
    """An immutable multi-dimensional array on a device.

    Create tensors with :func:`eagerflow.constant` or :func:`eagerflow.convert_to_tensor`,
    or as the results of operations.
    """

    __slots__ = ("_value", "_device", "_tid", "__weakref__")
    # Operator methods are set in eagerflow.ops.operators; this flag tells numpy to defer
    # to them (``ndarray + Tensor`` calls ``Tensor.__radd__``).
    __array_priority__ = 100

    @property
    def shape(self):
        """The static shape as a TensorShape."""
        return TensorShape(self._value.shape)

    @property
    def dtype(self):
        """The element type as an eagerflow DType."""
        return _from_numpy(self._value.dtype)

    @property
    def device(self):
        """The full name of the device holding the value."""
        return self._device.name

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def rank(self):
        return self._value.ndim

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        """Checks that ``shape`` is compatible with this tensor's shape (TF's ``set_shape``).

        An eager tensor's shape is fully known, so this only validates; inside a traced
        function it refines the static shape.

        Raises:
            ValueError: If ``shape`` is not compatible with the tensor's shape.
        """
        if not self.shape.is_compatible_with(shape):
            raise ValueError("Tensor's shape %s is not compatible with supplied shape %s."
                             % (tuple(self._value.shape), TensorShape(shape)))

    @property
    def backing_device(self):
        return self._device.name

    def numpy(self):
        """Returns the value as a numpy array (a copy) or numpy scalar for 0-d tensors.

        The copy keeps the tensor immutable: changing the returned array never changes the
        tensor. Use ``np.asarray(t)`` for a read-only view without a copy.
        """
        value = self._value
        if self._device.backend_index:
            return self._device.backend.to_numpy(value)[()]
        if isinstance(value, np.ndarray):
            return value.copy() if value.ndim else value[()]
        return value

    def __array__(self, dtype=None, copy=None):
        value = self._value
        if self._device.backend_index:
            value = self._device.backend.to_numpy(value)
        value = np.asarray(value)
        if dtype is not None and value.dtype != dtype:
            return value.astype(dtype)
        if copy:
            return value.copy()
        if value.flags.writeable and value.base is None and copy is None:
            # Hand out a read-only view so that numpy code cannot mutate the tensor.
            value = value.view()
            value.flags.writeable = False
        return value

    def __dlpack__(self, *args, **kwargs):
        if self._device.backend_index:
            return self._value.__dlpack__(*args, **kwargs)
        # np.asarray: kernels may leave a numpy scalar, which has no __dlpack__. Consumers
        # that read DLPack 1.0 flags get a read-only buffer (the tensor is immutable); older
        # ones cannot be told, so they get the buffer itself.
        view = np.asarray(self._value).view()
        view.flags.writeable = False
        try:
            return view.__dlpack__(*args, **kwargs)
        except BufferError:
            return np.asarray(self._value).__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        if self._device.backend_index:
            return self._value.__dlpack_device__()
        return np.asarray(self._value).__dlpack_device__()

    def item(self):
        return self._value.item()

    def tolist(self):
        return self.numpy().tolist()

    def __len__(self):
        shape = self._value.shape
        if not shape:
            raise TypeError("len() of a scalar (0-d) tensor is not defined.")
        return shape[0]

    def _scalar(self, kind):
        if self._value.ndim:
            if self._value.size == 1 and kind is builtins.bool:
                pass
            else:
                raise TypeError(
                    "Only scalar tensors convert to Python %s; this tensor has shape %s. "
                    "Reduce it first (e.g. reduce_any/reduce_all) or index one element."
                    % (kind.__name__, tuple(self._value.shape)))
        return kind(self._value.item() if self._device.backend_index == 0
                    else self._device.backend.to_numpy(self._value).item())

    def __bool__(self):
        if self._value.ndim and self._value.size != 1:
            raise ValueError(
                "The truth value of a tensor with shape %s is ambiguous. Use reduce_any or "
                "reduce_all; inside @function use eagerflow.cond." % (tuple(self._value.shape),))
        return self._scalar(builtins.bool)

    def __float__(self):
        return self._scalar(float)

    def __int__(self):
        return self._scalar(int)

    def __complex__(self):
        return self._scalar(complex)

    def __index__(self):
        if self._value.dtype.kind not in "iu" or self._value.ndim:
            raise TypeError(
                "Only integer scalar tensors can be used as an index; got dtype %s, shape %s."
                % (self.dtype.name, tuple(self._value.shape)))
        return int(self._value.item())

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def ref(self):
        """A hashable reference to this tensor object (``deref()`` gets it back)."""
        return _Reference(self)

    def experimental_ref(self):
        return self.ref()

    def __iter__(self):
        shape = self._value.shape
        if not shape:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return (self[i] for i in range(shape[0]))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        return "<tf.Tensor: shape=%s, dtype=%s, numpy=%s>" % (
            tuple(self._value.shape), self.dtype.name, numpy_text(self.numpy()))

    def __str__(self):
        return "tf.Tensor(%s, shape=%s, dtype=%s)" % (
            np.array2string(np.asarray(self.numpy()), separator=" ", threshold=1000),
            tuple(self._value.shape), self.dtype.name)

    def __format__(self, spec):
        # As TF: the value's own formatting, so f"{scalar}" is "3.5" and f"{x:.2f}" works.
        return format(self.numpy(), spec)

    def __reduce__(self):
        return constant, (self.numpy(),)


def numpy_text(value):
    """The ``numpy=`` part of a tensor's or variable's repr, as TF writes it: the Python
    scalar for a 0-d value (``numpy=3.5``), numpy's array repr otherwise
    (``numpy=array([1, 2], dtype=int32)``, on its own line when it spans several)."""
    value = np.asarray(value)
    text = repr(value.item()) if value.ndim == 0 else repr(value)
    return "\n" + text if "\n" in text else text


class _Reference:
    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def deref(self):
        return self._tensor

    def __eq__(self, other):
        return isinstance(other, _Reference) and other._tensor is self._tensor

    def __hash__(self):
        return id(self._tensor)


def wrap(value, device):
    """Makes a Tensor around an array already on ``device`` (no copy, no checks)."""
    t = _new(Tensor)
    t._value = value
    t._device = device
    t._tid = 0
    return t


def is_tensor(x):
    """True for eagerflow tensors (eager, symbolic) and variables."""
    return isinstance(x, Tensor) or getattr(x, "_is_eagerflow_tensor_like", False)


# Python's int that does not fit int32 becomes int64, as in TF.
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _infer_python(value, dtype=None):
    """numpy array for a Python value with TF 2's default dtypes.

    Python ints that fit neither int32 nor int64 are an error, as in TF (numpy would make
    them uint64, float64 or object, and a later cast would wrap them silently), unless the
    requested ``dtype`` holds them: uint64 (up to 2**64 - 1) or a float dtype. Lists nested
    deeper than a tensor's 64 dimensions are refused without recursing.
    """
    try:
        array = np.asarray(value)
    except (ValueError, RecursionError) as exc:
        depth = _nesting_depth(value)
        if depth > _MAX_NESTING:
            raise errors.InvalidArgumentError(
                None, None, "Cannot convert %s to a tensor: lists are nested %s levels "
                "deep, more than the %d dimensions a tensor may have."
                % (_short(value), "at least %d" % depth if depth > 1000 else depth,
                   _MAX_NESTING)) from None
        # A plain ValueError, as TF raises for a non-rectangular sequence.
        raise ValueError(
            "Can't convert non-rectangular Python sequence to Tensor: %s (%s). Nested lists "
            "must be rectangular; use eagerflow.ragged.constant for rows of different lengths."
            % (_short(value), exc)) from None
    kind = array.dtype.kind
    if kind == "f":
        if array.dtype == np.float64 and isinstance(_first_leaf(value), int) and \
                np.abs(array).max() >= 2.0**63 and _all_ints(value):
            return _int_out_of_range(value, dtype)  # ints past int64 that numpy made floats
        return array.astype(np.float32) if array.dtype != np.float32 else array
    if kind in "iu":
        if array.dtype == np.uint64 and array.size and array.max() > _INT64_MAX:
            return _int_out_of_range(value, dtype, array)
        if array.size and (array.min() < _INT32_MIN or array.max() > _INT32_MAX):
            return array.astype(np.int64)
        return array.astype(np.int32)
    if kind in "bc":
        return array
    if kind == "O" and array.size and all(isinstance(v, Tensor) for v in array.flat):
        return np.asarray([np.asarray(v) for v in array.flat]).reshape(
            array.shape + np.asarray(array.flat[0]).shape)
    if kind in "US" or (kind == "O" and array.size and isinstance(
            array.flat[0], (str, bytes))):
        return _string_array(np.asarray(value, dtype=object), value)
    if kind == "O" and array.size and _all_ints(value):
        return _int_out_of_range(value, dtype)
    if kind == "O":
        raise errors.UnimplementedError(
            None, None, "Cannot convert %s to a tensor: only numbers, bools and strings "
            "(str/bytes) convert." % _short(value))
    raise errors.InvalidArgumentError(None, None, "Cannot convert %s to a tensor." % _short(value))


def _string_array(array, value):
    """The value of a string tensor: an object array of ``bytes`` (``str`` is UTF-8 encoded).

    TF's string tensors hold byte strings; numpy's fixed-width ``U``/``S`` arrays would pad
    and strip NULs, so every element is a Python ``bytes``. Only str/bytes elements are
    accepted: an object array of anything else is refused, never stored.
    """
    flat = array.ravel()
    out = np.empty(flat.shape, dtype=object)
    for i, v in enumerate(flat.tolist() if array.dtype.kind in "US" else flat):
        if isinstance(v, str):
            v = v.encode("utf-8")
        elif not isinstance(v, bytes):
            raise errors.InvalidArgumentError(
                None, None, "Cannot convert %s to a tensor: element %s is a %s; a string "
                "tensor holds only str or bytes, and nested lists must be rectangular."
                % (_short(value), _short(v), type(v).__name__))
        out[i] = v
    return out.reshape(array.shape)


_INT64_MAX = 2**63 - 1
_MAX_NESTING = 64  # numpy's (and a tensor's) most dimensions


def _nesting_depth(value, limit=100000):
    """How deep the first elements of nested lists/tuples go (no recursion)."""
    depth = 0
    while isinstance(value, (list, tuple)) and depth < limit:
        depth += 1
        if not value:
            break
        value = value[0]
    return depth


def _first_leaf(value):
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return value


def _leaves(value):
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        else:
            yield item


def _all_ints(value):
    return all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
               for v in _leaves(value))


def _int_out_of_range(value, dtype, array=None):
    """Python ints outside int64: exact when ``dtype`` is an integer type that holds them
    (uint64), else the error TF gives."""
    if dtype is not None and dtype.is_integer:
        exact = np.asarray(value, dtype=object) if array is None else array
        info = np.iinfo(dtype.np_dtype)
        flat = [int(v) for v in np.asarray(exact, dtype=object).reshape(-1)]
        if min(flat) >= info.min and max(flat) <= info.max:
            return np.asarray(exact).astype(dtype.np_dtype) if array is not None else \
                np.array(flat, dtype=dtype.np_dtype).reshape(np.shape(exact))
        raise TypeError("Cannot convert %s to EagerTensor of dtype %s: out of range"
                        % (_short(value), dtype.name))
    if dtype is not None and not dtype.is_integer:
        return np.asarray(np.asarray(value, dtype=object), dtype=np.float64)
    raise ValueError("Cannot convert %s to a tensor: a Python int is out of range for int64 "
                     "(Python ints become int32 or int64, as in TF). Pass dtype=uint64 for "
                     "values up to 2**64 - 1, or a float dtype." % _short(value))


def _short(value):
    return errors.short_repr(value, 80)


def _place(array, device):
    """Moves a numpy array to ``device`` (a copy only for a GPU)."""
    if device.backend_index == 0:
        return array

    backend = device.backend
    with backend.module.cuda.Device(device.physical_index):
        return backend.module.asarray(array)


def _target_device():
    dev = context.state.device
    return context.CPU0 if dev is None else dev


def _cast_python_value(value, array, dtype):
    """Casts an inferred array to ``dtype``, refusing lossy casts of Python numbers (TF)."""
    target = dtype.np_dtype
    if array.dtype == target:
        return array
    if dtype is dtypes_lib.string and array.size == 0 and array.dtype.kind != "O":
        return np.empty(array.shape, dtype=object)  # [] as a string tensor
    if array.dtype.kind == "O" or dtype is dtypes_lib.string:
        raise TypeError("Cannot convert %s to EagerTensor of dtype %s: strings and numbers "
                        "do not convert implicitly (use eagerflow.strings.to_number or "
                        "as_string)" % (_short(value), dtype.name))
    if array.dtype == np.float32 and target.kind in "fc" and target.itemsize > 4:
        # Python floats are doubles: re-read them instead of widening a float32 rounding
        # (0.1 as float64 must be 0.1, not 0.10000000149).
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            pass
    if array.dtype.kind in "fc" and target.kind in "iub" and array.size:
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array.real)):
            raise TypeError("Cannot convert %s to EagerTensor of dtype %s"
                            % (_short(value), dtype.name))
    if array.dtype.kind == "c" and target.kind != "c" and np.any(np.imag(array) != 0):
        raise TypeError("Cannot convert %s to EagerTensor of dtype %s"
                        % (_short(value), dtype.name))
    if target.kind in "iu" and array.dtype.kind in "iu" and array.size:
        info = np.iinfo(target)
        if array.min() < info.min or array.max() > info.max:
            raise TypeError("Cannot convert %s to EagerTensor of dtype %s: out of range"
                            % (_short(value), dtype.name))
    with np.errstate(all="ignore"):
        return array.astype(target)


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """Converts a Python value, numpy array or tensor to a Tensor.

    Args:
        value: A Tensor, numpy array, Python scalar or (nested) list.
        dtype: Required dtype. A tensor of another dtype raises; Python values are cast.
        dtype_hint: A preferred dtype for Python values, used when it fits.
        name: Unused (TF compatibility).

    Returns:
        A Tensor on the current device scope's device (CPU:0 outside any scope).

    Raises:
        InvalidArgumentError: If a tensor's dtype does not match ``dtype``.
        TypeError: If a Python value cannot be represented in ``dtype``.

    Example:
        >>> import eagerflow as ef
        >>> ef.convert_to_tensor([1, 2], dtype=ef.float32).dtype
        tf.float32
    """
    if isinstance(value, Tensor):
        if dtype is not None and _from_numpy(value._value.dtype) is not dtypes_lib.as_dtype(dtype):
            raise errors.InvalidArgumentError(
                None, "convert_to_tensor",
                "Tensor conversion requested dtype %s for Tensor with dtype %s: %r. Use "
                "eagerflow.cast to change dtypes explicitly."
                % (dtypes_lib.as_dtype(dtype).name, value.dtype.name, value))
        return value
    convert = getattr(value, "_as_tensor", None)  # variables and tensor-likes
    if convert is not None:
        return convert(dtype)
    dtype = None if dtype is None else dtypes_lib.as_dtype(dtype)
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        array = np.array(value, copy=True)  # copy: later writes must not change the tensor
        if array.dtype.kind in "USO":
            array = _string_array(array, value)
        if dtype is not None and (array.dtype.kind == "O") != (dtype is dtypes_lib.string):
            raise TypeError("Cannot convert %s to EagerTensor of dtype %s: strings and "
                            "numbers do not convert implicitly" % (_short(value), dtype.name))
        if _from_numpy(array.dtype) is None:
            raise errors.UnimplementedError(
                None, None, "numpy dtype %s has no eagerflow equivalent." % array.dtype)
        if dtype is not None and array.dtype != dtype.np_dtype:
            with np.errstate(all="ignore"):
                array = array.astype(dtype.np_dtype)
    elif hasattr(value, "__dlpack__") and not isinstance(value, (list, tuple)):
        return from_dlpack(value) if dtype is None else convert_to_tensor(
            from_dlpack(value), dtype)
    else:
        pack = getattr(context.state.trace, "auto_pack", None) if isinstance(
            value, (list, tuple)) else None
        if pack is not None:
            # TF's auto-packing: a list holding traced tensors is a stack of them.
            packed = pack(value, dtype)
            if packed is not None:
                return packed
        array = _infer_python(value, dtype)
        if dtype is None and dtype_hint is not None:
            hint = dtypes_lib.as_dtype(dtype_hint)
            try:
                array = _cast_python_value(value, array, hint)
            except TypeError:
                pass
        elif dtype is not None:
            array = _cast_python_value(value, array, dtype)
    device = _target_device()
    if array.dtype.kind == "O":
        device = context.CPU0  # string tensors live in host memory, as in TF
    return wrap(_place(array, device), device)


def constant(value, dtype=None, shape=None, name="Const"):
    """Creates a constant tensor from a Python value or numpy array.

    Args:
        value: A scalar, (nested) list or numpy array.
        dtype: Optional element type; Python values are cast to it.
        shape: Optional shape. A scalar is broadcast to it; otherwise the number of
            elements must match and the value is reshaped.
        name: Unused (TF compatibility).

    Returns:
        A Tensor.

    Raises:
        TypeError: If the value cannot be represented in ``dtype``.
        InvalidArgumentError: If ``shape`` does not fit the value.

    Example:
        >>> import eagerflow as ef
        >>> ef.constant(0.5, shape=[2, 2]).numpy().tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """
    if isinstance(value, Tensor) and dtype is not None:
        value = value.numpy()
    tensor = convert_to_tensor(value, dtype=dtype)
    if dtype is not None and tensor.dtype is not dtypes_lib.as_dtype(dtype):
        tensor = convert_to_tensor(np.asarray(tensor.numpy()).astype(
            dtypes_lib.as_dtype(dtype).np_dtype))
    if shape is None:
        return tensor
    shape = tuple(TensorShape(shape).as_list())
    array = tensor._value
    if array.size == 1 and int(np.prod(shape)) != 1:
        xp = tensor._device.backend
        return wrap(xp.full(shape, array.reshape(()), dtype=array.dtype), tensor._device)
    if int(np.prod(shape)) != array.size:
        raise errors.InvalidArgumentError(
            None, "Const", "constant: value has %d elements, which does not fit shape %s."
            % (array.size, list(shape)))
    return wrap(array.reshape(shape), tensor._device)


def from_dlpack(capsule_or_array):
    """Wraps an array exported through DLPack (numpy, cupy, torch...) without a copy.

    Example:
        >>> import numpy as np, eagerflow as ef
        >>> ef.experimental.dlpack.from_dlpack(np.arange(3.0)).numpy().tolist()
        [0.0, 1.0, 2.0]
    """
    obj = capsule_or_array
    if type(obj).__name__ == "PyCapsule":  # what to_dlpack (and TF's) returns
        obj = _Capsule(obj)
    device_type, device_id = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") \
        else (1, 0)
    if int(device_type) == 1:  # kDLCPU
        array = np.from_dlpack(obj)
        return wrap(array, context.CPU0)
    if int(device_type) == 2:  # kDLCUDA
        backend = context.get_device("GPU", 0).backend
        array = backend.module.from_dlpack(obj)
        for dev in context.logical_devices("GPU"):
            if dev.physical_index == int(device_id):
                return wrap(array, dev)
        return wrap(array, context.get_device("GPU", int(device_id)))
    raise errors.UnimplementedError(
        None, "from_dlpack", "DLPack device type %s is not supported (CPU and CUDA are)."
        % device_type)


def to_dlpack(tensor):
    """Returns a DLPack capsule of the tensor's buffer (no copy).

    Example:
        >>> import eagerflow as ef
        >>> capsule = ef.experimental.dlpack.to_dlpack(ef.constant([1.0, 2.0]))
        >>> ef.experimental.dlpack.from_dlpack(capsule).numpy().tolist()
        [1.0, 2.0]
    """
    return tensor.__dlpack__()


class _Capsule:
    """Presents a bare DLPack capsule through the ``__dlpack__`` protocol numpy/cupy read."""

    __slots__ = ("_capsule", "_device")

    def __init__(self, capsule):
        self._capsule = capsule
        self._device = _capsule_device(capsule)

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def _capsule_device(capsule):
    """(device_type, device_id) read from the DLManagedTensor[Versioned] inside a capsule."""
    import ctypes

    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = api.PyCapsule_GetName(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise errors.InvalidArgumentError(
            None, "from_dlpack", "The capsule %r is not an unused DLPack tensor (a capsule can "
            "be consumed only once; export the tensor again)." % (name,))
    pointer = api.PyCapsule_GetPointer(capsule, name)
    # DLTensor is {void *data; DLDevice {int32 type, int32 id}; ...}. The versioned struct
    # puts {uint32 major, minor}, manager_ctx, deleter and uint64 flags before it.
    ptr_size = ctypes.sizeof(ctypes.c_void_p)
    offset = (8 + 2 * ptr_size + 8 if name == b"dltensor_versioned" else 0) + ptr_size
    device = (ctypes.c_int32 * 2).from_address(pointer + offset)
    return int(device[0]), int(device[1])


