"""Symbolic tensors of the functional API: ``Input``, ``KerasTensor`` and the ``Node`` of a
layer call.

``Input(shape)`` returns a KerasTensor: a shape (batch dimension first, usually None) and a
dtype, with no value. Calling a layer on KerasTensors builds the layer's weights from the
shapes and records a ``Node`` (which layer, which argument structure, which outputs); the
output KerasTensors get their shapes by running the layer's ``call`` once in a throwaway
trace, where every op yields only a shape and a dtype. A model is then the graph of nodes
between its inputs and outputs (``functional.py``).

Arithmetic on KerasTensors (``x + 1``, ``x * y``, ``x[:, 0]``) becomes a small
``KerasOpLayer`` in the graph, so models written with operators save and load like others.

Example:
    >>> from eagerflow.keras import Input, layers
    >>> x = Input(shape=(8,), name="features")
    >>> y = layers.Dense(4)(x)
    >>> x.shape, y.shape, y.dtype.name
    (TensorShape([None, 8]), TensorShape([None, 4]), 'float32')
"""

from __future__ import annotations

import collections
import threading

import eagerflow as ef
from eagerflow import nest
from eagerflow.function.graph import Graph
from eagerflow.function.symbolic import SymbolicTensor
from eagerflow.function.tracer import Tracer, tracing
from eagerflow.keras.layers import base as base_layer
from eagerflow.keras.layers import call_context
from eagerflow.keras.layers import core as core_layers
from eagerflow.ops.registry import AbstractValue
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["KerasTensor", "Input", "Node", "KerasOpLayer", "symbolic_trace", "OutputSpec",
           "reset_tensor_names", "is_keras_tensor"]

KerasHistory = collections.namedtuple("KerasHistory", ["layer", "node_index", "tensor_index"])

_name_lock = threading.Lock()
_name_counts = {}


def _unique_tensor_name(base):
    with _name_lock:
        count = _name_counts.get(base, 0)
        _name_counts[base] = count + 1
    return base if count == 0 else "%s_%d" % (base, count)


def reset_tensor_names():
    """Restarts automatic KerasTensor names (``keras_tensor``, ``keras_tensor_1``...)."""
    with _name_lock:
        _name_counts.clear()


def is_keras_tensor(x):
    """True for KerasTensors (the symbolic tensors of the functional API)."""
    return isinstance(x, KerasTensor)


class KerasTensor:
    """A symbolic tensor of the functional API: shape and dtype, no value.

    Made by :func:`Input` and by calling layers on other KerasTensors. Its ``shape`` is a
    TensorShape whose batch dimension is usually None.

    Args:
        shape: The full shape, batch dimension included.
        dtype: The dtype (default float32).
        name: A name (default: ``keras_tensor``, made unique).

    Example:
        >>> from eagerflow.keras import Input
        >>> x = Input((3,))
        >>> (x * 2.0).shape
        TensorShape([None, 3])
    """

    _is_keras_symbolic = True
    __array_priority__ = 100  # numpy defers mixed operations to the reflected operators

    def __init__(self, shape, dtype="float32", name=None, sparse=False, ragged=False):
        if call_context._symbolic_handler is None:  # e.g. cleared by a test: put it back
            base_layer.set_symbolic_call_handler(_symbolic_layer_call)
        self._shape = TensorShape(shape)
        self._dtype = ef.as_dtype(dtype)
        self.name = name or _unique_tensor_name("keras_tensor")
        self.sparse = bool(sparse)
        self.ragged = bool(ragged)
        self._keras_history = None
        self._node = None
        self._index = 0
        self._has_mask = False

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return self._shape.rank

    @property
    def node(self):
        """The Node whose layer call produced this tensor."""
        return self._node

    def get_shape(self):
        return self._shape

    def __repr__(self):
        return "<KerasTensor shape=%s, dtype=%s, sparse=%s, name=%s>" % (
            tuple(self._shape.as_list()) if self._shape.rank is not None else None,
            self._dtype.name, self.sparse, self.name)

    __str__ = __repr__

    def __hash__(self):
        return id(self)

    def __bool__(self):
        raise TypeError(
            "A KerasTensor is symbolic: it has no value, so it cannot be used as a Python bool "
            "(%r). Functional models are graphs of layers; put value-dependent logic inside a "
            "layer's call(), using eagerflow ops." % (self,))

    def __len__(self):
        raise TypeError("A KerasTensor is symbolic and has no len() (%r); use its .shape."
                        % (self,))

    def __iter__(self):
        raise TypeError("A KerasTensor is symbolic and cannot be iterated (%r)." % (self,))

    def numpy(self):
        raise TypeError(
            "A KerasTensor is a symbolic placeholder in a functional model and has no value "
            "(%r): eagerflow ops cannot run on it. Apply them inside a layer, e.g. "
            "keras.layers.Lambda(lambda t: eagerflow.math.log1p(t))(x), then build the model "
            "with keras.Model(inputs, outputs) and call it on data." % (self,))

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    # -- operators become KerasOpLayer nodes ----------------------------------------------------
    def _op(self, op, other=None, swap=False):
        return KerasOpLayer(op, _constant_config(other), swap)(self, other) if isinstance(
            other, KerasTensor) else KerasOpLayer(op, _constant_config(other), swap)(self)

    def __add__(self, other):
        return self._op("add", other)

    def __radd__(self, other):
        return self._op("add", other, swap=True)

    def __sub__(self, other):
        return self._op("subtract", other)

    def __rsub__(self, other):
        return self._op("subtract", other, swap=True)

    def __mul__(self, other):
        return self._op("multiply", other)

    def __rmul__(self, other):
        return self._op("multiply", other, swap=True)

    def __truediv__(self, other):
        return self._op("divide", other)

    def __rtruediv__(self, other):
        return self._op("divide", other, swap=True)

    def __pow__(self, other):
        return self._op("pow", other)

    def __rpow__(self, other):
        return self._op("pow", other, swap=True)

    def __matmul__(self, other):
        return self._op("matmul", other)

    def __rmatmul__(self, other):
        return self._op("matmul", other, swap=True)

    def __neg__(self):
        return self._op("negative")

    def __abs__(self):
        return self._op("abs")

    def __getitem__(self, key):
        return KerasOpLayer("getitem", _encode_key(key), False)(self)


def _constant_config(value):
    if value is None or isinstance(value, KerasTensor):
        return None
    if isinstance(value, (bool, int, float)):
        return value
    import numpy as np

    array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if array.size > 4096:
        raise ValueError("KerasTensor arithmetic with a constant of %d elements is not "
                         "supported (the constant becomes part of the model config); wrap it "
                         "in a layer with a weight instead." % array.size)
    return {"array": array.tolist(), "dtype": str(array.dtype)}


def _decode_constant(config):
    if isinstance(config, dict) and "array" in config:
        import numpy as np

        return np.asarray(config["array"], dtype=config["dtype"])
    return config


def _encode_key(key):
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for item in items:
        if isinstance(item, slice):
            out.append({"slice": [item.start, item.stop, item.step]})
        elif item is Ellipsis:
            out.append({"ellipsis": True})
        elif item is None:
            out.append({"newaxis": True})
        elif isinstance(item, int):
            out.append(int(item))
        else:
            raise TypeError("KerasTensor indexing supports ints, slices, ... and None; got %r."
                            % (item,))
    return out


def _decode_key(encoded):
    items = []
    for item in encoded:
        if isinstance(item, dict) and "slice" in item:
            items.append(slice(*item["slice"]))
        elif isinstance(item, dict) and item.get("ellipsis"):
            items.append(Ellipsis)
        elif isinstance(item, dict) and item.get("newaxis"):
            items.append(None)
        else:
            items.append(int(item))
    return tuple(items)


_OPS = {
    "add": ef.add, "subtract": ef.subtract, "multiply": ef.multiply, "divide": ef.divide,
    "pow": ef.pow, "matmul": ef.matmul, "negative": ef.negative, "abs": ef.abs,
}


class KerasOpLayer(base_layer.Layer):
    """A layer applying one operator, made by arithmetic or indexing on KerasTensors.

    Args:
        op: ``"add"``, ``"subtract"``, ``"multiply"``, ``"divide"``, ``"pow"``,
            ``"matmul"``, ``"negative"``, ``"abs"`` or ``"getitem"``.
        constant: The other operand when it is a constant (JSON form), or the index.
        swap: Whether the constant is the left operand (``1 - x``).
        **kwargs: Base Layer arguments.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.models.keras_tensor import KerasOpLayer
        >>> KerasOpLayer("subtract", 1.0, swap=True)(ef.constant([0.25])).numpy().tolist()
        [0.75]
    """

    def __init__(self, op, constant=None, swap=False, **kwargs):
        if op not in _OPS and op != "getitem":
            raise ValueError("KerasOpLayer: unknown op %r; known: %s" % (op, sorted(_OPS)))
        kwargs.setdefault("name", base_layer._unique_layer_name(op))
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.op = op
        self.constant = constant
        self.swap = bool(swap)

    def call(self, x, other=None):
        if self.op == "getitem":
            return x[_decode_key(self.constant)]
        fn = _OPS[self.op]
        if self.op in ("negative", "abs"):
            return fn(x)
        if other is None:
            other = ef.cast(ef.constant(_decode_constant(self.constant)), x.dtype)
        return fn(other, x) if self.swap else fn(x, other)

    def get_config(self):
        config = super().get_config()
        config.pop("autocast", None)
        config.update({"op": self.op, "constant": self.constant, "swap": self.swap})
        return config


class Node:
    """One call of a layer on KerasTensors.

    Attributes:
        layer: The layer called.
        call_args: The positional arguments (KerasTensors inside any structure).
        call_kwargs: The keyword arguments.
        outputs: The output structure of KerasTensors.
        input_tensors: Every KerasTensor among the arguments, in order.
    """

    def __init__(self, layer, call_args, call_kwargs, outputs):
        self.layer = layer
        self.call_args = tuple(call_args)
        self.call_kwargs = dict(call_kwargs)
        self.outputs = outputs
        self.flat_outputs = nest.flatten(outputs)
        self.input_tensors = [t for t in nest.flatten((self.call_args, self.call_kwargs))
                              if isinstance(t, KerasTensor)]
        nodes = layer.__dict__.setdefault("_inbound_nodes", [])
        self.index = len(nodes)
        nodes.append(self)
        for i, t in enumerate(self.flat_outputs):
            t._node = self
            t._index = i
            t._keras_history = KerasHistory(layer, self.index, i)

    @property
    def is_input(self):
        return not self.input_tensors and isinstance(self.layer, core_layers.InputLayer)

    @property
    def parent_nodes(self):
        return [t._node for t in self.input_tensors if t._node is not None]

    def __repr__(self):
        return "<Node %s #%d>" % (self.layer.name, self.index)


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None,
          tensor=None, optional=False, ragged=None):
    """The entry point of a functional model: a KerasTensor of the given shape.

    Args:
        shape: Shape without the batch dimension, e.g. ``(28, 28)``; None entries are
            unknown sizes.
        batch_size: Optional static batch size.
        dtype: The input dtype (default float32).
        sparse: Must be falsy (sparse inputs are not supported).
        batch_shape: Full shape including the batch dimension (instead of ``shape``).
        name: A name for the input layer (default ``input_layer``, made unique).
        tensor: Accepted for compatibility; must be None.
        optional: Accepted for compatibility.
        ragged: Must be falsy.

    Returns:
        A KerasTensor.

    Raises:
        ValueError: If neither or both of ``shape`` and ``batch_shape`` are given.

    Example:
        >>> from eagerflow.keras import Input
        >>> Input(shape=(28, 28), batch_size=32).shape
        TensorShape([32, 28, 28])
    """
    if shape is not None and batch_shape is not None:
        raise ValueError("Only provide the `shape` OR `batch_shape` argument to Input, not "
                         "both at the same time.")
    if shape is None and batch_shape is None:
        if tensor is not None:
            batch_shape = tuple(TensorShape(tensor.shape).as_list())
        else:
            raise ValueError("Please provide to Input a `shape` or a `batch_shape` argument. "
                             "Note that `shape` does not include the batch dimension.")
    if tensor is not None:
        raise ValueError("Input(tensor=...) is not supported: functional inputs are symbolic.")
    if shape is not None:
        if isinstance(shape, int):
            shape = (shape,)
        batch_shape = (batch_size,) + tuple(TensorShape(shape).as_list())
    layer = core_layers.InputLayer(batch_shape=tuple(TensorShape(batch_shape).as_list()),
                                   dtype=dtype or _floatx(), sparse=sparse, ragged=ragged,
                                   name=name)
    return _input_tensor(layer)


def _input_tensor(layer):
    """The KerasTensor an InputLayer holds (made on first use)."""
    existing = getattr(layer, "_keras_output", None)
    if existing is not None:
        return existing
    tensor = KerasTensor(layer.batch_shape, layer.dtype, name=layer.name)
    Node(layer, (), {}, tensor)
    layer.__dict__["_keras_output"] = tensor
    return tensor


def _floatx():
    from eagerflow.keras import backend

    return backend.floatx()


# -- running code on shapes only ------------------------------------------------------------------
class OutputSpec:
    """Shape, dtype and whether a Keras mask was attached, of one traced output."""

    __slots__ = ("shape", "dtype", "has_mask")

    def __init__(self, shape, dtype, has_mask=False):
        self.shape = shape
        self.dtype = dtype
        self.has_mask = has_mask

    def __repr__(self):
        return "OutputSpec(%s, %s)" % (self.shape, self.dtype.name)


def symbolic_trace(fn, specs):
    """Runs ``fn(*placeholders)`` in a throwaway trace and describes its outputs.

    Args:
        fn: A callable taking one symbolic tensor per entry of ``specs``.
        specs: A flat list of ``(shape, dtype)`` pairs (shapes may hold None).

    Returns:
        ``fn``'s result with every tensor replaced by an :class:`OutputSpec`.

    Variables created by ``fn`` are created for real (eagerly, their initial values lifted
    out of the trace); every op is discarded with the trace.
    """
    graph = Graph("keras_symbolic")
    tracer = Tracer(graph)
    placeholders = []
    for i, (shape, dtype) in enumerate(specs):
        shape = TensorShape(shape)
        dims = None if shape.rank is None else tuple(shape.as_list())
        node = graph.add_placeholder(AbstractValue(dims, ef.as_dtype(dtype)), "x%d" % i)
        placeholders.append(SymbolicTensor(graph, node, 0))
    with tracing(tracer):
        result = fn(*placeholders)

        def describe(value):
            if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
                has_mask = base_layer.get_keras_mask(value) is not None
                return OutputSpec(TensorShape(value.shape), ef.as_dtype(value.dtype), has_mask)
            return value

        return nest.map_structure(describe, result)


# A batch size no layer treats specially, used when a layer cannot run with an unknown one.
_STAND_IN_BATCH = 7


def trace_with_batch_fallback(fn, specs):
    """:func:`symbolic_trace` with the batch dimension unknown; if that fails (a layer that
    needs the batch size as a Python int) and every input's batch dimension is unknown, trace
    again with a stand-in batch size and mark the outputs' batch dimension unknown."""
    try:
        return symbolic_trace(fn, specs)
    except Exception:
        shapes = [TensorShape(s) for s, _ in specs]
        if not shapes or any(s.rank is None or s.rank == 0 or s[0] is not None
                             for s in shapes):
            raise
        concrete = [(TensorShape([_STAND_IN_BATCH] + s.as_list()[1:]), dtype)
                    for s, (_, dtype) in zip(shapes, specs)]
        try:
            described = symbolic_trace(fn, concrete)
        except Exception:  # noqa: BLE001 - report the first (more general) failure
            raise
        return nest.map_structure(_free_batch, described)


def _free_batch(value):
    if isinstance(value, OutputSpec) and value.shape.rank and value.shape[0] == _STAND_IN_BATCH:
        return OutputSpec(TensorShape([None] + value.shape.as_list()[1:]), value.dtype,
                          value.has_mask)
    return value


# -- the handler Layer.__call__ uses for KerasTensor inputs --------------------------------------
def _symbolic_layer_call(layer, inputs, args, kwargs):
    structure = (inputs, args, kwargs)
    flat = nest.flatten(structure)
    keras_positions = [i for i, x in enumerate(flat) if isinstance(x, KerasTensor)]
    for x in flat:
        if base_layer._is_symbolic(x) and not isinstance(x, KerasTensor):
            raise TypeError("%s received a symbolic input of type %s that is not a KerasTensor."
                            % (layer.name, type(x).__name__))
    base_layer.assert_input_compatibility(layer.input_spec, inputs, layer.name)
    if not layer.built:
        layer.maybe_build(layer._build_input_shape(inputs, args, kwargs))
    specs = [(flat[i].shape, flat[i].dtype) for i in keras_positions]

    def run(*placeholders):
        values = list(flat)
        for i, p in zip(keras_positions, placeholders):
            values[i] = p
        call_inputs, call_args, call_kwargs = nest.pack_sequence_as(structure, values)
        return layer(call_inputs, *call_args, **call_kwargs)

    try:
        described = trace_with_batch_fallback(run, specs)
    finally:
        # Losses added during the throwaway trace belong to it, not to the model.
        for sub in layer._flatten_layers(include_self=True):
            sub._reset_call_losses()
    outputs = nest.map_structure(_make_output_tensor, described)
    if not any(isinstance(o, KerasTensor) for o in nest.flatten(outputs)):
        raise ValueError("Layer %s returned no tensor when called on %s; a functional model "
                         "needs tensor outputs." % (layer.name, inputs))
    Node(layer, (inputs,) + tuple(args), kwargs, outputs)
    return outputs


def _make_output_tensor(described):
    if isinstance(described, OutputSpec):
        tensor = KerasTensor(described.shape, described.dtype)
        tensor._has_mask = described.has_mask
        return tensor
    return described


base_layer.set_symbolic_call_handler(_symbolic_layer_call)
