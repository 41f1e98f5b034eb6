"""One column matrix for a convolution and its filter gradient.

``Conv(x, w)`` and ``ConvBackpropFilter(x, dy)`` of a training step both build the im2col
matrix of the same input: the forward pass multiplies it by the filter, the filter
gradient multiplies its transpose by the output gradient. Where two or more such nodes
read the same input with the same window (kernel size, strides, dilations, padding and
layout), the pass computes the matrix once, as an ``Im2Col`` node, and writes each of them
as the GEMM its kernel runs on that matrix::

    Conv(x, w)                -> Reshape(MatMul(cols, Reshape(w, [K*C, O])), y.shape)
    ConvBackpropFilter(x, dy) -> Reshape(MatMul(cols, Reshape(dy, [M, O]),
                                                transpose_a=True), w.shape)

with ``cols = Im2Col(x)`` of shape ``[M, K*C]``. The products are the kernels' own (the
same GEMMs on the same matrix), so the values are the unrewritten graph's bits. The
rewrite needs channels-last float32/float64 inputs of a static shape, one group, column
matrices of at least ``conv_kernels.NARROW_COLUMNS`` columns (narrower ones take the
filter gradient's blocks of examples, which build their columns in cache), one device
and no control inputs; a graph output moves to the Reshape that replaces its node, on
the same device. It runs after the gradient is traced,
when the forward and backward nodes are in one graph; the column matrix then stays alive
from the forward pass to the filter gradient.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import passes
    >>> w = ef.Variable(ef.ones([3, 3, 8, 4]))
    >>> def step(x):
    ...     with ef.GradientTape() as tape:
    ...         y = ef.reduce_sum(ef.nn.relu(ef.nn.conv2d(x, w, 1, "VALID")))
    ...     return y, tape.gradient(y, w)
    >>> graph = ef.function(step).get_concrete_function(ef.TensorSpec([2, 6, 6, 8])).graph
    >>> ops = [n.op for n in passes.optimize(graph).nodes]
    >>> ops.count("Im2Col"), ops.count("Conv"), ops.count("ConvBackpropFilter")
    (1, 0, 0)
"""

from __future__ import annotations

from eagerflow.function.passes.common import new_node, rebuild, resolved_device
from eagerflow.ops.array.reshape_ops import RESHAPE
from eagerflow.ops.linalg.matmul_ops import MATMUL
from eagerflow.ops.nn import conv_kernels
from eagerflow.ops.nn.window_geometry import CHANNELS_FIRST, conv_geometry
from eagerflow.ops.registry import AbstractValue

__all__ = ["run"]

_FLOATS = ("float32", "float64")
_WINDOW_ATTRS = ("strides", "dilations", "padding", "data_format")


def run(graph):
    """Applies the rewrite; returns True if the graph changed."""
    groups = {}
    for node in graph.nodes:
        key = _key(node)
        if key is not None:
            groups.setdefault(key, []).append(node)
    plans = {}
    for key, nodes in groups.items():
        if len(nodes) < 2 or len({resolved_device(n) for n in nodes}) != 1:
            continue
        shared = {"cols": None, "key": key}
        for node in nodes:
            plans[node] = shared
    if not plans:
        return False
    return rebuild(graph, plans, set(), _rewrite)


def _key(node):
    """The (input, window) a Conv or ConvBackpropFilter node reads, or None."""
    if node.op not in ("Conv", "ConvBackpropFilter") or node.control_inputs:
        return None
    attrs = node.attrs
    if attrs["data_format"] in CHANNELS_FIRST:
        return None
    x_ref = node.inputs[0]
    x = x_ref[0].avals[x_ref[1]]
    other = node.inputs[1][0].avals[node.inputs[1][1]]
    w_shape = other.shape if node.op == "Conv" else attrs["filter_shape"]
    if x.shape is None or None in x.shape or w_shape is None or None in tuple(w_shape) or \
            x.dtype.name not in _FLOATS or other.dtype is not x.dtype or \
            node.avals[0].dtype is not x.dtype:
        return None
    w_shape = tuple(w_shape)
    nd = len(attrs["strides"])
    if len(x.shape) != nd + 2 or len(w_shape) != nd + 2 or w_shape[-2] != x.shape[-1]:
        return None                                 # grouped, or not this layout
    if conv_kernels._prod(w_shape[:nd]) * x.shape[-1] < conv_kernels.NARROW_COLUMNS:
        return None
    window = tuple(_hashable(attrs[a]) for a in _WINDOW_ATTRS)
    return (x_ref, w_shape[:nd]) + window


def _hashable(value):
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


def _rewrite(node, shared, sub):
    x_ref, k = shared["key"][:2]
    attrs = node.attrs
    window = {a: attrs[a] for a in _WINDOW_ATTRS}
    x = x_ref[0].avals[x_ref[1]]
    dtype = x.dtype
    built = []
    if shared["cols"] is None:
        g = conv_geometry(x.shape, tuple(k) + (x.shape[-1], 1), attrs["strides"],
                          attrs["dilations"], attrs["padding"], attrs["data_format"], False)
        m = x.shape[0] * conv_kernels._prod(g.out_sp)
        kc = conv_kernels._prod(k) * x.shape[-1]
        cols = new_node(sub.graph, conv_kernels.IM2COL.name, [sub.resolve(x_ref)],
                        dict(window, ksize=tuple(k)), [AbstractValue((m, kc), dtype)],
                        prim=conv_kernels.IM2COL, device=node.device,
                        name=node.name + "_columns", origin=node.origin)
        shared["cols"] = cols
        built.append(cols)
    cols = shared["cols"]
    m, kc = cols.avals[0].shape

    def reshape(ref, shape, avals, name):
        return new_node(sub.graph, RESHAPE.name, [ref], {"shape": tuple(shape)}, avals,
                        prim=RESHAPE, device=node.device, name=node.name + name,
                        origin=node.origin)

    def matmul(a, b, shape, transpose_a):
        return new_node(sub.graph, MATMUL.name, [a, b],
                        {"transpose_a": transpose_a, "transpose_b": False},
                        [AbstractValue(shape, dtype)], prim=MATMUL, device=node.device,
                        name=node.name + "_gemm", origin=node.origin)

    other = sub.resolve(node.inputs[1])
    o = node.avals[0].shape[-1]
    if node.op == "Conv":
        operand = reshape(other, (kc, o), [AbstractValue((kc, o), dtype)], "_filter_matrix")
        prod = matmul((cols, 0), (operand, 0), (m, o), False)
    else:
        operand = reshape(other, (m, o), [AbstractValue((m, o), dtype)], "_grad_matrix")
        prod = matmul((cols, 0), (operand, 0), (kc, o), True)
    out = reshape((prod, 0), node.avals[0].shape, node.avals, "_reshaped")
    return built + [operand, prod, out]
