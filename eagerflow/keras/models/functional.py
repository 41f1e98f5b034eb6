"""Functional models: the graph of layer calls between ``Input`` tensors and outputs.

``Model(inputs, outputs)`` walks back from the outputs through the recorded ``Node`` of
each KerasTensor until it reaches the inputs, and keeps the nodes in an order where every
node comes after the nodes it reads from. Calling the model replays those layer calls on real
tensors: shared layers (one layer, several nodes), several inputs and outputs, and nested
models (a model is a layer) all fall out of the same loop. The configuration lists each layer
with the calls made on it, which is enough to rebuild the graph without any Python source.

Example:
    >>> import numpy as np
    >>> from eagerflow import keras
    >>> a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    >>> shared = keras.layers.Dense(2, name="shared")
    >>> merged = keras.layers.Add(name="sum")([shared(a), shared(b)])
    >>> model = keras.Model([a, b], merged)
    >>> [layer.name for layer in model.layers]
    ['a', 'b', 'shared', 'sum']
    >>> model([np.ones((1, 3)), np.ones((1, 3))]).shape
    TensorShape([1, 2])
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow import nest
from eagerflow.keras.layers import base as base_layer
from eagerflow.keras.layers import core as core_layers
from eagerflow.keras.models import keras_tensor as kt_lib
from eagerflow.keras.models.keras_tensor import (  # noqa: F401 - re-exported
    Input, KerasTensor, Node, reset_tensor_names,
)
from eagerflow.keras.models.model import Model
from eagerflow.tensor import Tensor

__all__ = ["Functional", "Input", "KerasTensor", "init_graph_network"]


def _check_keras_tensors(structure, what):
    flat = nest.flatten(structure)
    if not flat:
        raise ValueError("A functional model needs at least one %s tensor." % what)
    for t in flat:
        if not isinstance(t, KerasTensor):
            raise ValueError(
                "All `%s` of a functional model must be KerasTensors (from keras.Input or "
                "layer calls on them); got %r. To wrap eager tensors, subclass keras.Model."
                % (what, t))
    return flat


def _topological_nodes(inputs_flat, outputs_flat):
    """The nodes between inputs and outputs, each after the nodes it reads from."""
    input_ids = {id(t) for t in inputs_flat}
    order, done, seen_layers = [], set(), []
    for out in outputs_flat:
        stack = [(out, False)]
        while stack:
            tensor, expanded = stack.pop()
            if id(tensor) in input_ids:
                continue
            node = tensor._node
            if node is None or node.is_input:
                raise ValueError(
                    "Graph disconnected: cannot obtain value for %r (from layer %r): it is "
                    "not among the model's inputs %s. The following previous layers were "
                    "accessed without issue: %s. Add the missing keras.Input to `inputs`."
                    % (tensor, node.layer.name if node is not None else None,
                       [t.name for t in inputs_flat], seen_layers))
            if id(node) in done:
                continue
            if expanded:
                done.add(id(node))
                order.append(node)
                if node.layer.name not in seen_layers:
                    seen_layers.append(node.layer.name)
                continue
            stack.append((tensor, True))
            for parent in reversed(node.input_tensors):
                if id(parent) not in input_ids and (parent._node is None
                                                    or id(parent._node) not in done):
                    stack.append((parent, False))
    return order


def init_graph_network(model, inputs, outputs, name=None, trainable=True, **kwargs):
    """Makes ``model`` a functional model of the graph from ``inputs`` to ``outputs``."""
    if isinstance(inputs, tuple):
        inputs = list(inputs)
    if isinstance(outputs, tuple):
        outputs = list(outputs)
    inputs_flat = _check_keras_tensors(inputs, "inputs")
    outputs_flat = _check_keras_tensors(outputs, "outputs")
    if name is None:
        name = base_layer._unique_layer_name("functional")
    base_layer.Layer.__init__(model, name=name, trainable=trainable, **kwargs)
    model._init_model_state()
    nodes = _topological_nodes(inputs_flat, outputs_flat)
    layers = []
    seen = set()
    for t in inputs_flat:
        node = t._node
        if node is not None and node.is_input and id(node.layer) not in seen:
            seen.add(id(node.layer))
            layers.append(node.layer)
    for node in nodes:
        if id(node.layer) not in seen:
            seen.add(id(node.layer))
            layers.append(node.layer)
    names = [layer.name for layer in layers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError("The name(s) %s are used by more than one layer of model %s. All "
                         "layer names should be unique (they identify layers in the saved "
                         "configuration); pass distinct `name=` arguments."
                         % (duplicates, name))
    model._is_graph_network = True
    model._inputs_struct = inputs
    model._outputs_struct = outputs
    model.inputs = inputs_flat
    model.outputs = outputs_flat
    model._nodes = nodes
    model._functional_layers = layers
    model.built = True
    model._build_shapes = [t.shape.as_list() for t in inputs_flat] if len(inputs_flat) > 1 \
        else inputs_flat[0].shape.as_list()


class Functional(Model):
    """A model defined by the graph of layer calls from ``inputs`` to ``outputs``.

    Made by ``keras.Model(inputs, outputs)``.

    Args:
        inputs: KerasTensor, list or dict of KerasTensors (from ``keras.Input``).
        outputs: KerasTensor, list or dict of KerasTensors.
        name: The model's name (default ``functional``, made unique).
        trainable: Whether its weights are trained.

    Raises:
        ValueError: If an output cannot be computed from the inputs ("Graph disconnected").

    Example:
        >>> from eagerflow import keras
        >>> x = keras.Input((4,), name="x")
        >>> y1 = keras.layers.Dense(1, name="y1")(x)
        >>> y2 = keras.layers.Dense(2, name="y2")(x)
        >>> keras.Model(x, [y1, y2]).output_names
        ['y1', 'y2']
    """

    # -- structure ------------------------------------------------------------------------------
    @property
    def layers(self):
        return list(self._functional_layers)

    @property
    def input(self):
        return self._inputs_struct

    @property
    def output(self):
        return self._outputs_struct

    @property
    def input_shape(self):
        shapes = [tuple(t.shape.as_list()) for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        shapes = [tuple(t.shape.as_list()) for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def input_names(self):
        if isinstance(self._inputs_struct, dict):
            return sorted(self._inputs_struct)
        return [t._keras_history.layer.name for t in self.inputs]

    @property
    def output_names(self):
        if isinstance(self._outputs_struct, dict):
            return sorted(self._outputs_struct)
        names = []
        for t in self.outputs:
            name = t._keras_history.layer.name if t._keras_history else t.name
            names.append(name)
        return names

    # -- calling --------------------------------------------------------------------------------
    def call(self, inputs, training=None, mask=None):
        flat = self._flatten_call_inputs(inputs)
        values = {}
        masks = nest.flatten(mask) if mask is not None else [None] * len(flat)
        for kt, x, m in zip(self.inputs, flat, masks):
            x = _conform_input(kt, x)
            if m is not None:
                base_layer.set_keras_mask(x, m)
            values[id(kt)] = x
        for node in self._nodes:
            def resolve(v):
                return values[id(v)] if isinstance(v, KerasTensor) else v

            args = nest.map_structure(resolve, node.call_args) if node.call_args else ()
            kwargs = nest.map_structure(resolve, node.call_kwargs) if node.call_kwargs else {}
            out = node.layer(*args, **kwargs)
            for kt, value in zip(node.flat_outputs, nest.flatten(out)):
                values[id(kt)] = value
        outputs = [values[id(t)] for t in self.outputs]
        return nest.pack_sequence_as(self._outputs_struct, outputs)

    def _flatten_call_inputs(self, inputs):
        expected = self.inputs
        names = self.input_names
        struct = self._inputs_struct
        if isinstance(inputs, dict):
            if isinstance(struct, dict):
                missing = sorted(set(struct) - set(inputs))
                if missing:
                    raise ValueError("Model %s: missing input(s) %s; expected keys %s, got %s."
                                     % (self.name, missing, sorted(struct), sorted(inputs)))
                return [inputs[k] for k in sorted(struct)]
            missing = [n for n in names if n not in inputs]
            if missing:
                raise ValueError("Model %s: input dict keys %s do not match the input names %s."
                                 % (self.name, sorted(inputs), names))
            return [inputs[n] for n in names]
        if isinstance(inputs, (list, tuple)):
            flat = list(inputs)
            if len(expected) == 1 and len(flat) != 1:
                return [inputs]
            if len(flat) != len(expected):
                raise ValueError("Model %s expects %d input(s) (%s) but received %d."
                                 % (self.name, len(expected), names, len(flat)))
            return flat
        if len(expected) != 1:
            raise ValueError("Model %s expects %d inputs (%s) but received a single tensor."
                             % (self.name, len(expected), names))
        return [inputs]

    def compute_output_shape(self, input_shape):
        return self.output_shape

    # -- config -----------------------------------------------------------------------------------
    def get_config(self):
        """The graph as JSON-compatible data: layers with their calls, inputs and outputs."""
        from eagerflow.keras import saving

        local_index = {}
        per_layer = {}
        for layer in self._functional_layers:
            per_layer[id(layer)] = []
        for t in self.inputs:
            node = t._node
            if node is None or not node.is_input:
                raise NotImplementedError(
                    "Model %s uses the intermediate tensor %r as an input; only models whose "
                    "inputs come from keras.Input can be serialized." % (self.name, t))
            local_index[id(node)] = 0
        for node in self._nodes:
            nodes = per_layer[id(node.layer)]
            local_index[id(node)] = len(nodes)
            nodes.append(node)

        def encode(value):
            if isinstance(value, KerasTensor):
                node = value._node
                return {"class_name": "__keras_tensor__", "config": {
                    "keras_history": [node.layer.name, local_index[id(node)], value._index],
                    "shape": value.shape.as_list(), "dtype": value.dtype.name}}
            if isinstance(value, (list, tuple)):
                return [encode(v) for v in value]
            if isinstance(value, dict):
                return {str(k): encode(v) for k, v in value.items()}
            if value is None or isinstance(value, (bool, int, float, str)):
                return value
            raise NotImplementedError(
                "Model %s: a layer call argument %r cannot be saved in the model config; "
                "pass it to the layer's constructor instead." % (self.name, value))

        layer_configs = []
        for layer in self._functional_layers:
            entry = saving.serialize_keras_object(layer)
            entry["name"] = layer.name
            entry["inbound_nodes"] = [
                {"args": encode(list(node.call_args)), "kwargs": encode(node.call_kwargs)}
                for node in per_layer[id(layer)]]
            layer_configs.append(entry)

        def ref(t):
            return [t._node.layer.name, local_index[id(t._node)], t._index]

        return {"name": self.name, "trainable": self.trainable, "layers": layer_configs,
                "input_layers": _map_refs(ref, self._inputs_struct),
                "output_layers": _map_refs(ref, self._outputs_struct)}

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=True):
        """Rebuilds the graph from :meth:`get_config` output.

        Raises:
            ValueError: If a layer class is unknown or a call refers to a missing layer.
        """
        from eagerflow.keras import saving

        layers = {}
        for entry in config["layers"]:
            layers[entry["name"]] = saving.deserialize_keras_object(
                {k: v for k, v in entry.items() if k not in ("name", "inbound_nodes")},
                custom_objects=custom_objects, safe_mode=safe_mode)
        created = {}
        for entry in config["layers"]:
            layer = layers[entry["name"]]
            if isinstance(layer, core_layers.InputLayer):
                created[(entry["name"], 0)] = [kt_lib._input_tensor(layer)]
        progress = {entry["name"]: 0 for entry in config["layers"]}
        changed = True
        while changed:
            changed = False
            for entry in config["layers"]:
                name = entry["name"]
                layer = layers[name]
                nodes = entry.get("inbound_nodes", [])
                while progress[name] < len(nodes):
                    decoded = _decode_call(nodes[progress[name]], created)
                    if decoded is None:
                        break
                    args, kwargs = decoded
                    out = layer(*args, **kwargs)
                    created[(name, progress[name])] = nest.flatten(out)
                    progress[name] += 1
                    changed = True
        pending = [n for n, entry in zip(progress, config["layers"])
                   if progress[n] < len(entry.get("inbound_nodes", []))]
        if pending:
            raise ValueError("Cannot rebuild functional model %r: the calls of layer(s) %s "
                             "refer to tensors that are never produced."
                             % (config.get("name"), pending))

        def lookup(r):
            name, node_index, tensor_index = r
            if (name, node_index) not in created:
                raise ValueError("Functional config refers to missing layer output %r." % (r,))
            return created[(name, node_index)][tensor_index]

        inputs = _unmap_refs(lookup, config["input_layers"])
        outputs = _unmap_refs(lookup, config["output_layers"])
        return cls(inputs=inputs, outputs=outputs, name=config.get("name"),
                   trainable=config.get("trainable", True))


def _is_ref(value):
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int))


def _map_refs(fn, structure):
    if isinstance(structure, KerasTensor):
        return fn(structure)
    if isinstance(structure, dict):
        return {k: _map_refs(fn, v) for k, v in structure.items()}
    return [_map_refs(fn, v) for v in structure]


def _unmap_refs(fn, config):
    if _is_ref(config):
        return fn(config)
    if isinstance(config, dict):
        return {k: _unmap_refs(fn, v) for k, v in config.items()}
    return [_unmap_refs(fn, v) for v in config]


def _decode_call(node_config, created):
    """``(args, kwargs)`` with KerasTensors, or None if an input is not produced yet."""
    missing = []

    def decode(value):
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            name, node_index, tensor_index = value["config"]["keras_history"]
            outputs = created.get((name, node_index))
            if outputs is None:
                missing.append(name)
                return None
            return outputs[tensor_index]
        if isinstance(value, list):
            return [decode(v) for v in value]
        if isinstance(value, dict):
            return {k: decode(v) for k, v in value.items()}
        return value

    args = decode(node_config.get("args", []))
    kwargs = decode(node_config.get("kwargs", {}))
    if missing:
        return None
    return tuple(args), kwargs


def _conform_input(kt, x):
    """Converts ``x`` to a tensor of the Input's dtype and rank (adding or dropping a trailing
    axis of size 1, as Keras does)."""
    if not isinstance(x, Tensor) and not getattr(x, "_is_variable", False):
        x = ef.convert_to_tensor(x)
    if getattr(x, "_is_variable", False):
        x = x.read_value()
    expected = kt.shape
    if expected.rank is not None and x.shape.rank is not None:
        if x.shape.rank == expected.rank - 1 and expected[-1] == 1:
            x = ef.expand_dims(x, -1)
        elif x.shape.rank == expected.rank + 1 and x.shape[-1] == 1:
            x = ef.squeeze(x, -1)
    if x.dtype is not kt.dtype:
        mask = base_layer.get_keras_mask(x)
        x = ef.cast(x, kt.dtype)
        if mask is not None:
            base_layer.set_keras_mask(x, mask)
    return x
