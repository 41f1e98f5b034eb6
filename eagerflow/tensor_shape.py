"""``TensorShape`` and ``TensorSpec``: possibly partial shapes, as in TF 2.

A TensorShape has an unknown rank (``TensorShape(None)``) or a list of dimensions, each an
``int`` or ``None`` for unknown. Indexing returns plain ints (TF 2 behaviour).

Example:
    >>> from eagerflow import TensorShape
    >>> s = TensorShape([None, 3])
    >>> s.rank, s[1], s.is_compatible_with([5, 3]), s.as_list()
    (2, 3, True, [None, 3])
"""

from __future__ import annotations

import operator

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors

__all__ = ["TensorShape", "TensorSpec", "as_shape", "unknown_shape"]


def _as_dim(value):
    if value is None:
        return None
    if hasattr(value, "value") and not isinstance(value, int):  # TF1-style Dimension
        value = value.value
        if value is None:
            return None
    try:
        dim = operator.index(value)
    except TypeError:
        raise TypeError("A dimension must be an int or None, got %r (%s)"
                        % (value, type(value).__name__)) from None
    if dim < 0:
        raise ValueError("Dimension %d must be >= 0 (use None for an unknown dimension)" % dim)
    return dim


class TensorShape:
    """The static shape of a tensor, possibly with unknown rank or dimensions.

    Args:
        dims: None for unknown rank, or an iterable of ints/None.
    """

    __slots__ = ("_dims",)

    def __init__(self, dims):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, tuple) and all(type(d) is int for d in dims):
            self._dims = dims  # the common case, from an array's shape
        else:
            try:
                iterator = iter(dims)
            except TypeError:
                self._dims = (_as_dim(dims),)
            else:
                self._dims = tuple(_as_dim(d) for d in iterator)

    @property
    def rank(self):
        """Number of dimensions, or None if unknown."""
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self):
        return None if self._dims is None else list(self._dims)

    def as_list(self):
        """The dimensions as a list; raises ValueError for an unknown rank."""
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def assert_is_fully_defined(self):
        if not self.is_fully_defined():
            raise ValueError("Shape %s is not fully defined" % self)

    def num_elements(self):
        """Product of the dimensions, or None when any is unknown."""
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other):
        """True when some fully-defined shape could satisfy both shapes."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError("Shapes %s and %s are incompatible" % (self, as_shape(other)))

    def merge_with(self, other):
        """The most specific shape compatible with both; ValueError if incompatible."""
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        self.assert_is_compatible_with(other)
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def most_specific_compatible_shape(self, other):
        """The most specific shape that both shapes are compatible with (a generalization)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return TensorShape(None)
        return TensorShape([a if a == b else None for a, b in zip(self._dims, other._dims)])

    def concatenate(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def with_rank(self, rank):
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError("Shape %s must have rank %d" % (self, rank))
        return self

    def with_rank_at_least(self, rank):
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError("Shape %s must have rank at least %d" % (self, rank))
        return self

    def is_subtype_of(self, other):
        other = as_shape(other)
        if other._dims is None:
            return True
        if self._dims is None or len(self._dims) != len(other._dims):
            return False
        return all(b is None or a == b for a, b in zip(self._dims, other._dims))

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            if isinstance(key, slice):
                return TensorShape(None)
            return None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __bool__(self):
        return self._dims is not None

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self._dims)

    def __add__(self, other):
        return self.concatenate(other)

    def __radd__(self, other):
        return as_shape(other).concatenate(self)

    def __repr__(self):
        if self._dims is None:
            return "TensorShape(None)"
        return "TensorShape(%s)" % list(self._dims)

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return "(%s,)" % self._dims[0]
        return "(%s)" % ", ".join(str(d) for d in self._dims)

    def __reduce__(self):
        return TensorShape, (self.dims,)


def as_shape(shape):
    """Converts a list/tuple/TensorShape/None to a TensorShape."""
    if isinstance(shape, TensorShape):
        return shape
    return TensorShape(shape)


def unknown_shape(rank=None):
    return TensorShape(None if rank is None else [None] * rank)


class TensorSpec:
    """Describes a tensor: its shape (possibly partial), dtype and an optional name.

    Args:
        shape: A TensorShape or anything convertible to one (``None`` dims allowed).
        dtype: The dtype (default float32).
        name: Optional name, used for function argument names.

    Example:
        >>> import eagerflow as ef
        >>> spec = ef.TensorSpec([None, 3], ef.float32)
        >>> spec.is_compatible_with(ef.zeros([4, 3]))
        True
    """

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=dtypes_lib.float32, name=None):
        self._shape = as_shape(shape)
        self._dtype = dtypes_lib.as_dtype(dtype)
        self._name = name

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    @classmethod
    def from_spec(cls, spec, name=None):
        return cls(spec.shape, spec.dtype, name if name is not None else spec.name)

    def is_compatible_with(self, other):
        """True when ``other`` (a spec, tensor or array) fits this spec."""
        other_dtype = getattr(other, "dtype", None)
        other_shape = getattr(other, "shape", None)
        if other_dtype is None or other_shape is None:
            return False
        try:
            same_dtype = dtypes_lib.as_dtype(other_dtype) is self._dtype
        except TypeError:
            return False
        return same_dtype and self._shape.is_compatible_with(other_shape)

    def most_specific_compatible_type(self, other):
        if self._dtype is not other.dtype:
            raise errors.InvalidArgumentError(
                None, None, "No compatible spec for dtypes %s and %s"
                % (self._dtype.name, other.dtype.name))
        return TensorSpec(self._shape.most_specific_compatible_shape(other.shape), self._dtype)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self._dtype is other._dtype
                and self._shape == other._shape and self._name == other._name)

    def __hash__(self):
        return hash((self._shape, self._dtype, self._name))

    def __repr__(self):
        return "TensorSpec(shape=%s, dtype=%r, name=%r)" % (self._shape, self._dtype, self._name)
