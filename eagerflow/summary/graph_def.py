"""Converts an eagerflow Graph to TensorBoard's ``GraphDef`` wire format.

Each node becomes a ``NodeDef`` with its name, op, inputs (``name`` for output 0,
``name:k`` otherwise, ``^name`` for control inputs) and device. Attrs carry the output
dtypes (``T``) and shapes (``_output_shapes``), which the graph dashboard shows, and the
node's static attributes that have a GraphDef form (ints, floats, bools, strings and lists
of them). Functional control-flow bodies (``graph.library``) are added as nodes under a
``<body>/`` name prefix so the dashboard draws them as groups.
"""

from __future__ import annotations

__all__ = ["graph_to_graph_def"]

_DTYPES = {"float32": 1, "float64": 2, "int32": 3, "string": 7, "int64": 9, "bool": 10}


def _set_attr(msg, value):
    """Fills an AttrValue; returns False when the value has no GraphDef form."""
    if isinstance(value, bool):
        msg.b = value
    elif isinstance(value, int):
        msg.i = value
    elif isinstance(value, float):
        msg.f = value
    elif isinstance(value, str):
        msg.s = value.encode("utf-8")
    elif isinstance(value, bytes):
        msg.s = value
    elif isinstance(value, (tuple, list)) and value and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        msg.list.i.extend(value)
    elif isinstance(value, (tuple, list)) and value and all(isinstance(v, float) for v in value):
        msg.list.f.extend(value)
    elif isinstance(value, (tuple, list)) and value and all(isinstance(v, str) for v in value):
        msg.list.s.extend(v.encode("utf-8") for v in value)
    else:
        return False
    return True


def _shape(msg, shape):
    if shape is None:
        msg.unknown_rank = True
        return
    for d in shape:
        msg.dim.add(size=-1 if d is None else int(d))


def _add_nodes(pb, graph_def, graph, prefix, seen):
    for node in graph.nodes:
        nd = graph_def.node.add(name=prefix + node.name, op=node.op, device=node.device or "")
        for src, idx in node.inputs:
            nd.input.append(prefix + src.name if idx == 0 else "%s%s:%d" % (prefix, src.name, idx))
        for ctrl in node.control_inputs:
            nd.input.append("^" + prefix + ctrl.name)
        if node.avals:
            first = node.avals[0]
            dtype = getattr(getattr(first, "dtype", None), "name", None)
            if dtype in _DTYPES:
                nd.attr["T"].type = _DTYPES[dtype]
            shapes = nd.attr["_output_shapes"].list
            for aval in node.avals:
                _shape(shapes.shape.add(), getattr(aval, "shape", None))
        for key, value in (node.attrs or {}).items():
            attr = pb.AttrValue()
            if _set_attr(attr, value):
                nd.attr[str(key)].CopyFrom(attr)
    for name, sub in getattr(graph, "library", {}).items():
        key = id(sub)
        if key in seen:
            continue
        seen.add(key)
        _add_nodes(pb, graph_def, sub, "%s%s/" % (prefix, name), seen)


def graph_to_graph_def(graph):
    """The serialized TensorBoard ``GraphDef`` of an eagerflow Graph.

    Args:
        graph: An ``eagerflow.function.graph.Graph`` (e.g. ``concrete_function.graph``).

    Returns:
        bytes: A serialized GraphDef.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.summary.graph_def import graph_to_graph_def
        >>> f = ef.function(lambda x: x * 2.0)
        >>> len(graph_to_graph_def(f.get_concrete_function(ef.TensorSpec([3])).graph)) > 0
        True
    """
    from eagerflow.summary import event_pb2 as pb

    graph_def = pb.GraphDef()
    graph_def.versions.producer = 1
    _add_nodes(pb, graph_def, graph, "", set())
    return graph_def.SerializeToString()
