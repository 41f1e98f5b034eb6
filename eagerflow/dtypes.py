"""Data types, with TensorFlow 2's names and its strict promotion rule.

eagerflow never promotes between two tensors of different dtypes: ``add(float32, float64)``
raises ``InvalidArgumentError``. A Python scalar combined with a tensor takes the tensor's
dtype. A Python value converted on its own gets TF's default: ``float`` becomes float32,
``int`` becomes int32 (int64 when it does not fit), ``bool`` bool and ``complex`` complex128.
NumPy arrays keep their dtype. ``docs/dtypes.md`` has the full table.

Example:
    >>> import eagerflow as ef
    >>> ef.constant(1.0).dtype, ef.constant(1).dtype
    (tf.float32, tf.int32)
    >>> ef.as_dtype("float16").is_floating
    True
"""

from __future__ import annotations

import builtins

import numpy as np

from eagerflow import errors

__all__ = [
    "DType", "as_dtype", "float16", "half", "bfloat16", "float32", "float64", "double",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
    "complex64", "complex128", "string",
]


class DType:
    """A tensor element type, comparable with numpy dtypes and TF-style names.

    Attributes:
        name: The TensorFlow name, e.g. ``"float32"``.
    """

    __slots__ = ("name", "_np", "_kind", "_size", "_enum")

    def __init__(self, name, np_dtype, kind, size, enum):
        self.name = name
        self._np = np_dtype  # None until first use for lazily-loaded types (bfloat16)
        self._kind = kind  # 'f' float, 'i' signed, 'u' unsigned, 'b' bool, 'c' complex, 'S'
        self._size = size
        self._enum = enum

    @property
    def as_numpy_dtype(self):
        """The numpy scalar type (``np.float32`` for float32)."""
        return self.np_dtype.type

    @property
    def np_dtype(self):
        """The ``numpy.dtype`` instance that stores this type."""
        if self._np is None:
            self._np = _load_lazy_numpy_dtype(self.name)
            _NP_TO_DTYPE[self._np] = self
        return self._np

    @property
    def as_datatype_enum(self):
        """The integer code of this dtype, as in TF's ``types.proto``."""
        return self._enum

    is_floating = property(lambda self: self._kind == "f")
    is_integer = property(lambda self: self._kind in "iu")
    is_unsigned = property(lambda self: self._kind in "ub")
    is_bool = property(lambda self: self._kind == "b")
    is_complex = property(lambda self: self._kind == "c")
    is_numeric = property(lambda self: self._kind in "fiuc")
    is_quantized = property(lambda self: False)

    @property
    def is_differentiable(self):
        """Whether gradients flow through values of this dtype (floating or complex)."""
        return self._kind in "fc"

    @property
    def size(self):
        """Bytes per element."""
        return self._size

    @property
    def real_dtype(self):
        """float32 for complex64, float64 for complex128, itself otherwise."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def base_dtype(self):
        return self

    @property
    def min(self):
        """The smallest representable value."""
        if self._kind == "b":
            return False
        if self._kind in "iu":
            return int(np.iinfo(self.np_dtype).min)
        return float(_finfo(self).min)

    @property
    def max(self):
        """The largest representable value."""
        if self._kind == "b":
            return True
        if self._kind in "iu":
            return int(np.iinfo(self.np_dtype).max)
        return float(_finfo(self).max)

    @property
    def limits(self):
        return self.min, self.max

    def is_compatible_with(self, other):
        return self == as_dtype(other)

    def __eq__(self, other):
        if other is self:
            return True
        if other is None:
            return False
        try:
            return as_dtype(other) is self
        except (TypeError, errors.InvalidArgumentError):
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return "tf." + self.name

    def __str__(self):
        return "<dtype: %r>" % self.name

    def __reduce__(self):
        return as_dtype, (self.name,)


def _finfo(dtype):
    if dtype.name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.finfo(ml_dtypes.bfloat16)
    return np.finfo(dtype.np_dtype)


def _load_lazy_numpy_dtype(name):
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError as exc:  # pragma: no cover - ml_dtypes is a core dependency
            raise errors.UnimplementedError(
                None, None, "bfloat16 needs the 'ml_dtypes' package: pip install ml_dtypes"
            ) from exc
        return np.dtype(ml_dtypes.bfloat16)
    raise errors.InternalError(None, None, "no lazy numpy dtype for %s" % name)


float16 = half = DType("float16", np.dtype(np.float16), "f", 2, 19)
bfloat16 = DType("bfloat16", None, "f", 2, 14)
float32 = DType("float32", np.dtype(np.float32), "f", 4, 1)
float64 = double = DType("float64", np.dtype(np.float64), "f", 8, 2)
int8 = DType("int8", np.dtype(np.int8), "i", 1, 6)
int16 = DType("int16", np.dtype(np.int16), "i", 2, 5)
int32 = DType("int32", np.dtype(np.int32), "i", 4, 3)
int64 = DType("int64", np.dtype(np.int64), "i", 8, 9)
uint8 = DType("uint8", np.dtype(np.uint8), "u", 1, 4)
uint16 = DType("uint16", np.dtype(np.uint16), "u", 2, 17)
uint32 = DType("uint32", np.dtype(np.uint32), "u", 4, 22)
uint64 = DType("uint64", np.dtype(np.uint64), "u", 8, 23)
bool = DType("bool", np.dtype(np.bool_), "b", 1, 10)  # noqa: A001 - TF's public name
complex64 = DType("complex64", np.dtype(np.complex64), "c", 8, 8)
complex128 = DType("complex128", np.dtype(np.complex128), "c", 16, 18)
string = DType("string", np.dtype(object), "S", 0, 7)

ALL_DTYPES = (
    float16, bfloat16, float32, float64, int8, int16, int32, int64,
    uint8, uint16, uint32, uint64, bool, complex64, complex128,
)
FLOATING = (float16, bfloat16, float32, float64)
INTEGER = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
COMPLEX = (complex64, complex128)

_BY_NAME = {d.name: d for d in ALL_DTYPES + (string,)}
_BY_NAME.update({"half": float16, "double": float64, "float": float32, "int": int32,
                 "bool_": bool, "cfloat": complex64, "cdouble": complex128})
_BY_ENUM = {d._enum: d for d in ALL_DTYPES + (string,)}
# numpy dtype -> DType; the hot path looks dtypes up here, so it holds numpy dtype objects.
_NP_TO_DTYPE = {d._np: d for d in ALL_DTYPES if d._np is not None}
_NP_TO_DTYPE[np.dtype(object)] = string
_PY_TO_DTYPE = {float: float32, int: int32, builtins.bool: bool, complex: complex128}


def as_dtype(type_value):
    """Converts a name, numpy dtype, numpy type, enum or DType to a ``DType``.

    Args:
        type_value: ``"float32"``, ``np.float32``, ``np.dtype("float32")``, ``ef.float32``...

    Returns:
        The matching ``DType``.

    Raises:
        TypeError: If ``type_value`` names no supported dtype.

    Example:
        >>> import numpy as np, eagerflow as ef
        >>> ef.as_dtype(np.float64)
        tf.float64
    """
    if type_value.__class__ is DType:
        return type_value
    try:
        found = _NP_TO_DTYPE.get(type_value) if not isinstance(type_value, (str, int)) else None
    except TypeError:  # unhashable, e.g. a list
        raise _unknown(type_value) from None
    if found is not None:
        return found
    if isinstance(type_value, str):
        found = _BY_NAME.get(type_value)
    elif isinstance(type_value, int) and not isinstance(type_value, builtins.bool):
        found = _BY_ENUM.get(type_value)
    elif type_value in _PY_TO_DTYPE:
        found = _PY_TO_DTYPE[type_value]
    else:
        if getattr(type_value, "__name__", None) == "bfloat16" or str(type_value) == "bfloat16":
            return bfloat16
        dtype_attr = getattr(type_value, "dtype", None)
        if isinstance(dtype_attr, DType):
            return dtype_attr
        try:
            # np.dtype(None) is float64; TF refuses None, and so do we.
            np_dt = None if type_value is None else np.dtype(type_value)
        except TypeError:
            np_dt = None
        if np_dt is not None:
            found = _NP_TO_DTYPE.get(np_dt)
            if found is None and np_dt.name == "bfloat16":
                return bfloat16
    if found is None:
        raise _unknown(type_value)
    return found


def _unknown(type_value):
    return TypeError("Cannot convert %r to an eagerflow dtype. Use one of: %s."
                     % (type_value, ", ".join(d.name for d in ALL_DTYPES)))


def from_numpy(np_dtype):
    """Fast lookup of the DType for a ``numpy.dtype`` instance (None if unsupported)."""
    found = _NP_TO_DTYPE.get(np_dtype)
    if found is None and np_dtype.name == "bfloat16":
        bfloat16.np_dtype  # registers it  # noqa: B018
        return bfloat16
    return found


# ``tf.dtypes`` also holds the cast functions. They are ops (a layer above this module), so
# they resolve on first use.
_CAST_FUNCTIONS = ("cast", "saturate_cast", "complex")


def __getattr__(name):
    if name in _CAST_FUNCTIONS:
        from eagerflow.ops.math import cast as cast_ops

        if name == "complex":
            from eagerflow.ops.math import complex_math

            return complex_math.complex
        return getattr(cast_ops, name)
    raise AttributeError("module 'eagerflow.dtypes' has no attribute %r" % name)
