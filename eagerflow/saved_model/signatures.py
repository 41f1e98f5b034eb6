"""Serving signatures: keyword tensor inputs in, a dict of named tensors out.

A signature is a concrete function with named inputs (the TensorSpec names of the
input_signature, else the argument names) and named outputs: the keys when the function
returns a dict of tensors, else ``output_0``, ``output_1``, ... over the flattened outputs
(TensorFlow's convention).
"""

from __future__ import annotations

from eagerflow import nest
from eagerflow.saved_model.object_graph import attributes

__all__ = ["DEFAULT_SERVING_SIGNATURE_DEF_KEY", "canonicalize", "add_signature"]

DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
PREDICT_METHOD_NAME = "tensorflow/serving/predict"


def _is_keras_model(obj):
    # Keras models say so (keras imports this package, so it cannot import keras back).
    return bool(getattr(obj, "_is_keras_model", False))


def keras_serving_function(model):
    """A ``serving_default`` function for a Keras model: its call on its inputs' specs with
    a None batch dimension, in inference mode."""
    from eagerflow.function.function import function
    from eagerflow.tensor_shape import TensorSpec

    inputs = getattr(model, "inputs", None)
    if not inputs:
        raise ValueError(
            "Cannot create a serving signature for Keras model %s: it has no known inputs. "
            "Build it (call it once, or give it an Input layer) or pass signatures=."
            % getattr(model, "name", type(model).__name__))
    specs = []
    for k, t in enumerate(inputs):
        dims = list(t.shape.as_list() if hasattr(t.shape, "as_list") else t.shape)
        if dims:
            dims[0] = None
        name = getattr(t, "name", None) or "input_%d" % (k + 1)
        name = name.split(":")[0].replace("/", "_")
        specs.append(TensorSpec(dims, t.dtype, name=name))
    if len(specs) == 1:
        fn = function(lambda x: model(x, training=False), input_signature=specs)
    else:
        fn = function(lambda *xs: model(list(xs), training=False), input_signature=specs)
    return fn


def _input_names(fn, concrete):
    """The signature's input names: spec names where given, else the placeholder names."""
    names = [n.name for n in concrete.graph.inputs]
    specs = getattr(fn, "input_signature", None)
    if specs is not None:
        flat = nest.flatten(specs)
        if len(flat) == len(names):
            names = [s.name or n for s, n in zip(flat, names)]
    seen = set()
    for i, name in enumerate(names):
        base, k = name, 0
        while name in seen:
            k += 1
            name = "%s_%d" % (base, k)
        seen.add(name)
        names[i] = name
    return names


def _concrete(name, fn):
    from eagerflow.function.concrete import ConcreteFunction
    from eagerflow.function.function import Function

    if isinstance(fn, ConcreteFunction):
        return fn, _input_names(None, fn)
    if isinstance(fn, Function):
        if fn.input_signature is None:
            raise ValueError(
                "Signature %r is a @function without an input_signature. Pass "
                "fn.get_concrete_function(ef.TensorSpec(...)) or decorate it with "
                "@function(input_signature=[...])." % name)
        concrete = fn.get_concrete_function()
        return concrete, _input_names(fn, concrete)
    raise ValueError("Signature %r must be a @function with an input_signature or a "
                     "ConcreteFunction, got %r." % (name, fn))


def canonicalize(obj, signatures):
    """``[(name, ConcreteFunction, input names)]`` for the ``signatures`` argument of save."""
    from eagerflow.function.function import Function

    if signatures is None:
        if _is_keras_model(obj):
            signatures = keras_serving_function(obj)
        else:
            found = [v for _, v in attributes(obj)
                     if isinstance(v, Function) and v.input_signature is not None]
            if len(found) != 1:
                return []
            signatures = found[0]
    if not isinstance(signatures, dict):
        signatures = {DEFAULT_SERVING_SIGNATURE_DEF_KEY: signatures}
    out = []
    for name, fn in signatures.items():
        if not isinstance(name, str) or not name:
            raise ValueError("Signature names must be non-empty strings, got %r." % (name,))
        concrete, names = _concrete(name, fn)
        out.append((name, concrete, names))
    return out


def add_signature(model, name, function_index, concrete, input_names):
    """Appends a SignatureDef for ``concrete`` (already stored as ``function_index``)."""
    from eagerflow.function import serialize

    sig = model.signature.add(name=name, concrete_function=function_index)
    for node, input_name in zip(concrete.graph.inputs, input_names):
        serialize.codec._encode_spec(node.avals[0], sig.input.add(), input_name)
    structured = concrete.structured_outputs
    if structured is None:
        # A function run for its effects (assigning variables) returns nothing: a signature
        # with no outputs, called it returns {} (TF refuses None and needs `return {}`).
        structured = {}
    if isinstance(structured, dict) and all(isinstance(k, str) for k in structured):
        sig.dict_output = True
        items = sorted(structured.items())
    else:
        items = [("output_%d" % i, t) for i, t in enumerate(nest.flatten(structured))]
    for key, value in items:
        if not hasattr(value, "dtype") or not hasattr(value, "shape"):
            raise ValueError(
                "Signature %r must return tensors (or a dict of tensors); output %r is %r."
                % (name, key, value))
        spec = sig.output.add(name=key)
        spec.dtype = value.dtype.as_datatype_enum
        shape = value.shape
        if shape.rank is None:
            spec.shape.unknown_rank = True
        else:
            spec.shape.dim.extend(-1 if d is None else d for d in shape.as_list())
