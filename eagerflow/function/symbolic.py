"""Symbolic tensors: the values Python code sees while a function is traced.

A SymbolicTensor is a Tensor whose value is not known yet: it has a static shape (dims may be
None) and dtype, and names a graph node's output. Ops on it add graph nodes (through the
dispatch's trace hook). Anything that needs the value now (``numpy()``, ``bool(t)``, a Python
``if`` or ``while`` on it) raises an error that names the user's line and says what to write
instead.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from eagerflow import errors
from eagerflow.framework import context
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["SymbolicTensor", "user_frame"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class AbstractArray:
    """Stands in for an array during tracing: shape (None dims allowed), dtype, ndim."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, np_dtype):
        self.shape = shape
        self.dtype = np_dtype

    @property
    def ndim(self):
        return None if self.shape is None else len(self.shape)

    @property
    def size(self):
        if self.shape is None or any(d is None for d in self.shape):
            return None
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self):
        return "AbstractArray(%s, %s)" % (self.shape, self.dtype)


def user_frame():
    """(filename, lineno, source line) of the innermost frame outside eagerflow, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            import linecache

            return filename, frame.f_lineno, linecache.getline(filename, frame.f_lineno).strip()
        frame = frame.f_back
    return None


def _where():
    found = user_frame()
    if found is None:
        return ""
    filename, lineno, line = found
    return " (%s:%d: `%s`)" % (filename, lineno, line) if line else " (%s:%d)" % (
        filename, lineno)


class SymbolicTensor(Tensor):
    """A tensor inside a traced function: a reference to one output of a graph node."""

    __slots__ = ("_graph", "_node", "_index")

    def __init__(self, graph, node, index):
        aval = node.avals[index]
        self._graph = graph
        self._node = node
        self._index = index
        self._value = AbstractArray(aval.shape, aval.dtype.np_dtype)
        self._device = context.CPU0
        self._tid = 0

    @property
    def shape(self):
        return TensorShape(self._value.shape)

    @property
    def dtype(self):
        return self._node.avals[self._index].dtype

    @property
    def device(self):
        return self._node.device

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def name(self):
        return self._node.ref(self._index)

    @property
    def op(self):
        return self._node

    @property
    def graph(self):
        return self._graph

    @property
    def aval(self):
        return self._node.avals[self._index]

    def set_shape(self, shape):
        """Refines the static shape (unknown dims become known), as TF's ``set_shape``.

        Raises:
            ValueError: If ``shape`` is not compatible with the current static shape.
        """
        from eagerflow.ops.registry import AbstractValue

        try:
            merged = TensorShape(self._value.shape).merge_with(shape)
        except ValueError:
            raise ValueError("Tensor's shape %s is not compatible with supplied shape %s."
                             % (self.shape, TensorShape(shape))) from None
        dims = None if merged.rank is None else tuple(merged.as_list())
        avals = list(self._node.avals)
        avals[self._index] = AbstractValue(dims, self.dtype)
        self._node.avals = type(self._node.avals)(avals)
        self._value = AbstractArray(dims, self._value.dtype)

    def _as_tensor(self, dtype=None):
        return self

    def _no_value(self, what, fix):
        raise errors.OperatorNotAllowedInGraphError(
            None, None,
            "%s is not allowed on the symbolic tensor %s (%s%s) while tracing a @function%s. "
            "%s" % (what, self.name, self.dtype.name, list(self._value.shape or []), _where(),
                    fix))

    def numpy(self):
        self._no_value("numpy()", "Its value exists only when the function runs: return it "
                       "from the function, or use eagerflow.print to see it at run time.")

    def __array__(self, dtype=None, copy=None):
        self._no_value("Converting to a numpy array", "Use eagerflow ops inside the function.")

    def __bool__(self):
        self._no_value(
            "Using it as a Python bool (an `if`, `while`, `and`/`or` or `assert` on a tensor)",
            "Write value-dependent branches as eagerflow.cond(pred, true_fn, false_fn) and "
            "loops as eagerflow.while_loop(cond, body, loop_vars), or let AutoGraph convert "
            "them: it does so in @function bodies with autograph=True (the default), though "
            "not in lambdas, library code or functions marked do_not_convert.")

    def __float__(self):
        self._no_value("float()", "Keep the value as a tensor inside the function.")

    def __int__(self):
        self._no_value("int()", "Keep the value as a tensor, or pass it as a Python int.")

    def __index__(self):
        self._no_value("Using it as a Python index", "Use eagerflow.gather or slicing ops.")

    def __len__(self):
        shape = self._value.shape
        if shape is None or not shape or shape[0] is None:
            self._no_value("len()", "The first dimension is not known while tracing; use "
                           "eagerflow.shape(x)[0].")
        return shape[0]

    def __iter__(self):
        shape = self._value.shape
        if shape is None or not shape or shape[0] is None:
            self._no_value(
                "Iterating", "Only tensors with a known first dimension can be iterated "
                "(the loop unrolls); otherwise use eagerflow.while_loop or a Dataset.")
        return (self[i] for i in range(shape[0]))

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (self.name, self.shape, self.dtype.name)

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("Symbolic tensors cannot be pickled")

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self
