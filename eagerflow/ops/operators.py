"""Python operators on Tensor: ``+ - * / // % ** @ < <= > >= == != & | ^ ~ -x abs [] ``.

Installed onto :class:`eagerflow.tensor.Tensor` (and any tensor-like class passed to
``install``) here, so the tensor module needs no import of the op library. Each operator is
one call into the dispatch path; reflected forms swap the operands.
"""

from __future__ import annotations

import importlib

from eagerflow.ops.math import arithmetic as _a
from eagerflow.ops.math.arithmetic import ADD, MUL, NEG, POW, SUB
from eagerflow.ops.dispatch import execute


def _lazy(module, name):
    """Resolves ``module.name`` on first call (the op families import after this one)."""
    cache = []

    def call(*args, **kwargs):
        if not cache:
            cache.append(getattr(importlib.import_module(module), name))
        return cache[0](*args, **kwargs)

    call.__name__ = name
    return call


_matmul = _lazy("eagerflow.ops.linalg.matmul_ops", "matmul")
_abs = _lazy("eagerflow.ops.math.complex_math", "abs")
_getitem = _lazy("eagerflow.ops.array.slicing", "getitem")
_and = _lazy("eagerflow.ops.math.logical_ops", "and_")
_or = _lazy("eagerflow.ops.math.logical_ops", "or_")
_xor = _lazy("eagerflow.ops.math.logical_ops", "xor_")
_invert = _lazy("eagerflow.ops.math.logical_ops", "invert_")


def __add__(self, other):
    return execute(ADD, (self, other))


def __radd__(self, other):
    return execute(ADD, (other, self))


def __sub__(self, other):
    return execute(SUB, (self, other))


def __rsub__(self, other):
    return execute(SUB, (other, self))


def __mul__(self, other):
    return execute(MUL, (self, other))


def __rmul__(self, other):
    return execute(MUL, (other, self))


def __truediv__(self, other):
    return _a.truediv(self, other)


def __rtruediv__(self, other):
    return _a.truediv(other, self)


def __floordiv__(self, other):
    return _a.floordiv(self, other)


def __rfloordiv__(self, other):
    return _a.floordiv(other, self)


def __mod__(self, other):
    return _a.floormod(self, other)


def __rmod__(self, other):
    return _a.floormod(other, self)


def __pow__(self, other):
    return execute(POW, (self, other))


def __rpow__(self, other):
    return execute(POW, (other, self))


def __matmul__(self, other):
    return _matmul(self, other)


def __rmatmul__(self, other):
    return _matmul(other, self)


def __neg__(self):
    return execute(NEG, (self,))


def __pos__(self):
    return self


def __abs__(self):
    return _abs(self)


def __invert__(self):
    return _invert(self)


def __and__(self, other):
    return _and(self, other)


def __rand__(self, other):
    return _and(other, self)


def __or__(self, other):
    return _or(self, other)


def __ror__(self, other):
    return _or(other, self)


def __xor__(self, other):
    return _xor(self, other)


def __rxor__(self, other):
    return _xor(other, self)


def __lt__(self, other):
    return _a.less(self, other)


def __le__(self, other):
    return _a.less_equal(self, other)


def __gt__(self, other):
    return _a.greater(self, other)


def __ge__(self, other):
    return _a.greater_equal(self, other)


def __eq__(self, other):
    # TF 2 semantics: element-wise when the shapes broadcast, else False; None compares False.
    if other is None:
        return False
    try:
        return _a.equal(self, other)
    except (ValueError, TypeError):
        return False


def __ne__(self, other):
    if other is None:
        return True
    try:
        return _a.not_equal(self, other)
    except (ValueError, TypeError):
        return True


def __getitem__(self, key):
    return _getitem(self, key)


_OPERATORS = {
    name: fn for name, fn in list(globals().items())
    if name.startswith("__") and name.endswith("__") and callable(fn)
    and name not in ("__builtins__", "__loader__", "__spec__", "__getattr__")
}


def _variable_getitem(self, key):
    # A variable's slice can be assigned to, as TF's (``v[1:3].assign(x)``).
    from eagerflow.ops.array.variable_slices import sliced_variable

    return sliced_variable(self, key)


def install(cls):
    """Sets the operator methods on ``cls`` (Tensor, Variable, symbolic tensors)."""
    for name, fn in _OPERATORS.items():
        setattr(cls, name, fn)
    if getattr(cls, "_is_variable", False):
        cls.__getitem__ = _variable_getitem
    # __eq__ is overridden, so Python would drop __hash__: keep the class's own.
    cls.__hash__ = cls.__dict__.get("__hash__") or cls.__hash__


def _install_tensor():
    from eagerflow.tensor import Tensor

    hash_fn = Tensor.__dict__["__hash__"]
    install(Tensor)
    Tensor.__hash__ = hash_fn


_install_tensor()
