"""Partitioning: cut a placed graph into one subgraph per device, joined by Send/Recv.

Every edge from a node on device A to a node on device B becomes a ``Send`` node in A's
subgraph (right after the producer, so the value leaves as soon as it exists) and a ``Recv``
node in B's subgraph (right before the first consumer there). A tensor crosses to a given
device at most once: later consumers on B reuse the same Recv. The pair shares a rendezvous
key ``(tensor name "node:index", source device, destination device, step id)``; the step id
is added per call by the runner.

Placeholders and constants are never transferred: each subgraph that reads an argument gets
it from the caller, and each that reads a constant has its own copy.

Each subgraph keeps the global order of its nodes, Sends and Recvs included; since every
Recv sits after its Send in that order, devices running their subgraphs concurrently cannot
deadlock.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.function import partition, placement
    >>> f = ef.function(lambda x: ef.tanh(x) + 1.0)
    >>> graph = f.get_concrete_function(ef.TensorSpec([2])).graph
    >>> parts = partition.partition(graph, placement.place(graph))
    >>> len(parts.partitions), parts.num_sends, parts.num_recvs
    (1, 0, 0)
"""

from __future__ import annotations

import itertools

from eagerflow.function import builtins
from eagerflow.function.graph import Graph, Node
from eagerflow.function.placement import FREE_OPS, devices_of

__all__ = ["partition", "Partition", "PartitionedGraph"]


class Partition:
    """The subgraph of one device.

    Attributes:
        device: The Device that runs it.
        graph: The subgraph (its nodes' ``device`` is the full device name).
        input_positions: For each of its inputs, the position in the whole graph's inputs.
        capture_positions: For each of its captures, the position in the whole graph's.
    """

    def __init__(self, device, graph):
        self.device = device
        self.graph = graph
        self.input_positions = []
        self.capture_positions = []

    def __repr__(self):
        return "<Partition %s: %d nodes>" % (self.device.name, len(self.graph.nodes))


class PartitionedGraph:
    """The per-device subgraphs of a graph and how its outputs are gathered.

    Attributes:
        partitions: One Partition per device, in device order.
        outputs: For each output of the whole graph, ``(partition index, output position)``.
        transfers: ``(tensor name, source device name, destination device name)`` per
            Send/Recv pair.
    """

    def __init__(self, partitions, outputs, transfers):
        self.partitions = partitions
        self.outputs = outputs
        self.transfers = transfers

    @property
    def num_sends(self):
        return sum(n.op == builtins.SEND for p in self.partitions for n in p.graph.nodes)

    @property
    def num_recvs(self):
        return sum(n.op == builtins.RECV for p in self.partitions for n in p.graph.nodes)

    def recvs_per_device(self):
        """``{destination device name: number of Recv nodes}``."""
        counts = {}
        for _, _, dst in self.transfers:
            counts[dst] = counts.get(dst, 0) + 1
        return counts

    def summary(self):
        """One line per device: its node count and its Send/Recv counts."""
        lines = []
        for p in self.partitions:
            ops = [n.op for n in p.graph.nodes]
            lines.append("%s: %d nodes, %d Send, %d Recv" % (
                p.device.name, len(ops), ops.count(builtins.SEND), ops.count(builtins.RECV)))
        return "\n".join(lines)


def partition(graph, placement):
    """Splits ``graph`` by ``placement`` into per-device subgraphs with Send/Recv pairs.

    Args:
        graph: A Graph.
        placement: ``{node.id: Device}`` for every node (from ``placement.place``).

    Returns:
        A PartitionedGraph.
    """
    compute = {placement[n.id] for n in graph.nodes if n.op not in FREE_OPS}
    compute.update(placement[n.id] for n, _ in graph.outputs)
    devices = devices_of(dict(enumerate(compute)))
    ids = itertools.count(max((n.id for n in graph.nodes), default=0) + 1)
    parts = {}
    for device in devices:
        sub = Graph("%s_%s_%d" % (graph.name, device.device_type.lower(), device.index))
        sub.variables = graph.variables
        sub.library = graph.library
        sub._counter = ids
        parts[device] = Partition(device, sub)
    input_pos = {n.id: k for k, n in enumerate(graph.inputs)}
    capture_pos = {n.id: k for k, (n, _) in enumerate(graph.captures)}
    local = {}  # (node id, device) -> the node's copy in that device's subgraph
    recvs = {}  # (node id, index, device) -> Recv node in that device's subgraph
    transfers = []

    def copy_of(node, device, inputs):
        copy = Node(node.id, node.name, node.op, inputs, node.attrs, device.name, node.avals,
                    prim=node.prim, value=node.value, stateful=node.stateful)
        copy.origin = node.origin
        return copy

    def free_copy(node, device):
        """A placeholder or constant, made local to ``device``'s subgraph."""
        copy = local.get((node.id, device))
        if copy is None:
            part = parts[device]
            copy = copy_of(node, device, [])
            part.graph.nodes.append(copy)
            if node.id in input_pos:
                part.graph.inputs.append(copy)
                part.input_positions.append(input_pos[node.id])
            elif node.id in capture_pos:
                part.graph.captures.append((copy, graph.captures[capture_pos[node.id]][1]))
                part.capture_positions.append(capture_pos[node.id])
            local[(node.id, device)] = copy
        return copy

    def operand(src, idx, device):
        if src.op in FREE_OPS:
            return free_copy(src, device), idx
        source = placement[src.id]
        if source is device:
            return local[(src.id, device)], idx
        recv = recvs.get((src.id, idx, device))
        if recv is None:
            name = src.ref(idx)
            attrs = {"tensor_name": name, "send_device": source.name,
                     "recv_device": device.name}
            producer = local[(src.id, source)]
            send = Node(next(ids), "send_%s_%d_to_%s_%d" % (
                src.name, idx, device.device_type.lower(), device.index), builtins.SEND,
                [(producer, idx)], attrs, source.name, (), stateful=True)
            send.origin = src.origin
            nodes = parts[source].graph.nodes
            at = nodes.index(producer) + 1
            while at < len(nodes) and nodes[at].op == builtins.SEND:
                at += 1  # keep earlier sends of the same producer first
            nodes.insert(at, send)
            recv = Node(next(ids), "recv_%s_%d" % (src.name, idx), builtins.RECV, [], dict(attrs),
                        device.name, (src.avals[idx],), stateful=True)
            recv.origin = src.origin
            parts[device].graph.nodes.append(recv)
            recvs[(src.id, idx, device)] = recv
            transfers.append((name, source.name, device.name))
        return recv, 0

    for node in graph.nodes:
        if node.op in FREE_OPS:
            continue
        device = placement[node.id]
        inputs = [operand(src, idx, device) for src, idx in node.inputs]
        copy = copy_of(node, device, inputs)
        # Same-device control edges keep their order; across devices the subgraphs' own
        # program order (and the pinning of stateful ops) provides it.
        copy.control_inputs = [local[(c.id, device)] for c in node.control_inputs
                               if (c.id, device) in local]
        parts[device].graph.nodes.append(copy)
        local[(node.id, device)] = copy

    outputs = []
    order = {d: k for k, d in enumerate(devices)}
    for node, idx in graph.outputs:
        device = placement[node.id]
        value = free_copy(node, device) if node.op in FREE_OPS else local[(node.id, device)]
        sub = parts[device].graph
        outputs.append((order[device], len(sub.outputs)))
        sub.outputs.append((value, idx))
    return PartitionedGraph([parts[d] for d in devices], outputs, transfers)
