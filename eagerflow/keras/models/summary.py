"""``Model.summary()``: the table of layers, output shapes and parameter counts.

The layout follows Keras 3: a box-drawn table (plain ASCII when the output stream cannot
encode box characters), then the totals with their memory size::

    Model: "sequential"
    ┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
    ┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
    ┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
    │ dense (Dense)                   │ (None, 2)              │             8 │
    └─────────────────────────────────┴────────────────────────┴───────────────┘
     Total params: 8 (32.00 B)
     Trainable params: 8 (32.00 B)
     Non-trainable params: 0 (0.00 B)

Functional models that are not a simple chain get a "Connected to" column. Weights shared by
several layers are counted once in the totals.

Example:
    >>> from eagerflow import keras
    >>> m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> lines = []
    >>> m.summary(print_fn=lines.append)
    >>> lines[-3]
    ' Total params: 8 (32.00 B)'
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["print_summary", "count_params", "readable_memory_size"]

_BOX = {"top": ("┏", "━", "┳", "┓"), "head": ("┃", "┃", "┃"),
        "sep": ("┡", "━", "╇", "┩"), "row": ("│", "│", "│"),
        "mid": ("├", "─", "┼", "┤"), "bottom": ("└", "─", "┴", "┘")}
_ASCII = {"top": ("+", "=", "+", "+"), "head": ("|", "|", "|"),
          "sep": ("+", "=", "+", "+"), "row": ("|", "|", "|"),
          "mid": ("+", "-", "+", "+"), "bottom": ("+", "-", "+", "+")}


def count_params(weights):
    """Number of scalars in a list of variables, each counted once.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.keras.models.summary import count_params
        >>> v = ef.Variable(ef.zeros([3, 2]))
        >>> count_params([v, v])
        6
    """
    seen = set()
    total = 0
    for w in weights:
        if id(w) in seen:
            continue
        seen.add(id(w))
        total += int(np.prod(w.shape.as_list(), dtype=np.int64))
    return total


def _memory(weights):
    seen = set()
    total = 0
    for w in weights:
        if id(w) in seen:
            continue
        seen.add(id(w))
        total += int(np.prod(w.shape.as_list(), dtype=np.int64)) * w.dtype.size
    return total


def readable_memory_size(nbytes):
    """``"18.79 KB"``-style size (powers of 1024), as Keras prints it.

    Example:
        >>> from eagerflow.keras.models.summary import readable_memory_size
        >>> readable_memory_size(19240), readable_memory_size(0)
        ('18.79 KB', '0.00 B')
    """
    units = ["B", "KB", "MB", "GB", "TB", "PB"]
    scale = 1024.0
    for unit in units:
        if nbytes / scale < 1:
            return "%.2f %s" % (nbytes, unit)
        nbytes /= scale
    return "%.2f %s" % (nbytes, units[-1])


def _format_shape(shape):
    if shape is None:
        return "?"
    if isinstance(shape, list):
        return "[" + ", ".join(_format_shape(s) for s in shape) + "]"
    dims = tuple(shape)
    if len(dims) == 1:
        return "(%s,)" % dims[0]
    return "(" + ", ".join(str(d) for d in dims) + ")"


def _layer_output_shape(layer, model):
    nodes = [n for n in getattr(layer, "_inbound_nodes", []) if _node_in_model(n, model)]
    if not nodes:
        return "?"
    shapes = set()
    for node in nodes:
        outs = [tuple(t.shape.as_list()) for t in node.flat_outputs]
        shapes.add(tuple(outs))
    if len(shapes) > 1:
        return "multiple"
    outs = list(shapes.pop())
    return _format_shape(outs[0]) if len(outs) == 1 else _format_shape(
        [list(o) for o in outs])


def _model_nodes(model):
    nodes = getattr(model, "_nodes", None)
    if nodes is not None:
        ids = {id(n) for n in nodes}
        for t in getattr(model, "inputs", None) or []:
            if t._node is not None:
                ids.add(id(t._node))
        return ids
    graph = getattr(model, "_graph", None)
    if graph is not None:
        ids = set()
        stack = [graph[1]]
        while stack:
            t = stack.pop()
            node = t._node
            if node is not None and id(node) not in ids:
                ids.add(id(node))
                stack.extend(node.input_tensors)
        return ids
    return set()


def _node_in_model(node, model):
    cache = model.__dict__.get("_summary_node_ids")
    if cache is None:
        cache = _model_nodes(model)
        model.__dict__["_summary_node_ids"] = cache
    return id(node) in cache


def _connections(layer, model):
    out = []
    for node in getattr(layer, "_inbound_nodes", []):
        if not _node_in_model(node, model):
            continue
        for t in node.input_tensors:
            history = t._keras_history
            if history is not None:
                out.append("%s[%d][%d]" % (history.layer.name, _local_node_index(
                    history.layer, t._node, model), history.tensor_index))
    return out or ["-"]


def _local_node_index(layer, node, model):
    index = 0
    for n in getattr(layer, "_inbound_nodes", []):
        if n is node:
            return index
        if _node_in_model(n, model):
            index += 1
    return 0


def _is_chain(model):
    nodes = getattr(model, "_nodes", None)
    if nodes is None:
        return True
    if len(getattr(model, "inputs", [])) != 1 or len(getattr(model, "outputs", [])) != 1:
        return False
    previous = model.inputs[0]
    for node in nodes:
        if len(node.input_tensors) != 1 or node.input_tensors[0] is not previous or len(
                node.flat_outputs) != 1:
            return False
        previous = node.flat_outputs[0]
    return True


def _wrap(text, width):
    """Splits ``text`` into lines of at most ``width`` characters."""
    text = str(text)
    if width <= 0:
        return [text]
    lines = []
    while len(text) > width:
        cut = text.rfind(" ", 0, width)
        cut = width if cut <= 0 else cut
        lines.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    lines.append(text)
    return lines


def _can_encode(stream, text):
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def print_summary(model, line_length=None, positions=None, print_fn=None, expand_nested=False,
                  show_trainable=False, layer_range=None):
    """Prints ``model``'s summary table (see ``Model.summary``)."""
    model.__dict__.pop("_summary_node_ids", None)
    graph_model = getattr(model, "_nodes", None) is not None or getattr(
        model, "_graph", None) is not None
    connected = getattr(model, "_nodes", None) is not None and not _is_chain(model)
    headers = ["Layer (type)", "Output Shape", "Param #"]
    if connected:
        headers.append("Connected to")
    if show_trainable:
        headers.append("Trainable")
    widths = _column_widths(len(headers), connected, show_trainable, line_length, positions)
    aligns = ["left", "left", "right", "left", "left"][:len(headers)]

    rows = []
    layers = model.layers
    if layer_range is not None:
        names = [layer.name for layer in layers]
        if (not isinstance(layer_range, (list, tuple)) or len(layer_range) != 2
                or layer_range[0] not in names or layer_range[1] not in names):
            raise ValueError("layer_range must be [first layer name, last layer name] of this "
                             "model, got %r." % (layer_range,))
        start, stop = names.index(layer_range[0]), names.index(layer_range[1])
        layers = layers[start:stop + 1]

    def add_rows(layer, owner, depth):
        name = "%s%s (%s)" % (" " * depth, layer.name, type(layer).__name__)
        shape = _layer_output_shape(layer, owner) if graph_model or depth else "?"
        params = _param_text(layer)
        row = [name, shape, params]
        if connected:
            row.append(", ".join(_connections(layer, owner)) if depth == 0 else "")
        if show_trainable:
            row.append("Y" if layer.trainable else "N")
        rows.append(row)
        if expand_nested and hasattr(layer, "layers") and hasattr(layer, "_init_trainer"):
            layer.__dict__.pop("_summary_node_ids", None)
            for inner in layer.layers:
                add_rows(inner, layer, depth + 1)

    for layer in layers:
        add_rows(layer, model, 0)

    stream = sys.stdout
    box = _BOX if (print_fn is not None or _can_encode(stream, "┏━┃")) else _ASCII
    if print_fn is None:
        def print_fn(line):
            sys.stdout.write(line + "\n")

    def rule(kind):
        left, fill, joint, right = box[kind]
        return left + joint.join(fill * (w + 2) for w in widths) + right

    def line(cells, kind):
        edge, inner, end = box[kind]
        wrapped = [_wrap(c, w) for c, w in zip(cells, widths)]
        height = max(len(w) for w in wrapped)
        out = []
        for i in range(height):
            parts = []
            for lines, w, align in zip(wrapped, widths, aligns):
                text = lines[i] if i < len(lines) else ""
                parts.append(" " + (text.rjust(w) if align == "right" else text.ljust(w)) + " ")
            out.append(edge + inner.join(parts) + end)
        return out

    print_fn('Model: "%s"' % model.name)
    print_fn(rule("top"))
    for text in line(headers, "head"):
        print_fn(text)
    print_fn(rule("sep"))
    for i, row in enumerate(rows):
        for text in line(row, "row"):
            print_fn(text)
        if i < len(rows) - 1:
            print_fn(rule("mid"))
    print_fn(rule("bottom"))

    trainable = model.trainable_weights
    non_trainable = model.non_trainable_weights
    n_train, n_frozen = count_params(trainable), count_params(non_trainable)
    print_fn(" Total params: {:,} ({})".format(
        n_train + n_frozen, readable_memory_size(_memory(trainable + non_trainable))))
    print_fn(" Trainable params: {:,} ({})".format(n_train, readable_memory_size(
        _memory(trainable))))
    print_fn(" Non-trainable params: {:,} ({})".format(n_frozen, readable_memory_size(
        _memory(non_trainable))))
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and getattr(optimizer, "built", False):
        variables = optimizer.variables
        print_fn(" Optimizer params: {:,} ({})".format(count_params(variables),
                                                      readable_memory_size(_memory(variables))))
    model.__dict__.pop("_summary_node_ids", None)


def _column_widths(n, connected, show_trainable, line_length, positions):
    """Text widths of the columns: Keras 3's defaults, scaled to ``line_length``, or from
    ``positions`` (column end positions, absolute or as fractions of ``line_length``)."""
    if positions is not None:
        total = line_length or (98 if connected else 78)
        if positions[-1] <= 1:
            positions = [int(total * p) for p in positions]
        ends = list(positions)[:n]
        widths = [ends[0] - 3] + [ends[i] - ends[i - 1] - 3 for i in range(1, len(ends))]
        widths += [10] * (n - len(widths))
        return [max(w, 4) for w in widths]
    widths = [31, 22, 13] if not connected else [25, 20, 10, 25]
    extra = [9] if show_trainable else []
    if line_length:
        overhead = 3 * (len(widths) + len(extra)) + 1 + sum(extra)
        natural = sum(widths)
        widths = [max(4, int((w * (line_length - overhead)) // natural)) for w in widths]
    return widths + extra


def _param_text(layer):
    if not layer.built and not layer.weights:
        return "0 (unbuilt)"
    return "{:,}".format(count_params(layer.weights))
