"""Shared checks for the layer tests: float64 finite-difference gradients through
GradientTape along a random direction, and config round trips."""

import numpy as np

import eagerflow as ef


def _flat(out):
    if isinstance(out, (list, tuple)):
        items = []
        for o in out:
            items.extend(_flat(o))
        return items
    return [out]


def _apply(layer, tensors, list_input, kwargs):
    return layer(tensors, **kwargs) if list_input else layer(*tensors, **kwargs)


def _loss_value(layer, inputs, kwargs, cotangents, list_input):
    out = _flat(_apply(layer, inputs, list_input, kwargs))
    return sum(float(np.sum(np.asarray(o) * u)) for o, u in zip(out, cotangents))


def check_layer_gradients(layer, inputs, seed=0, eps=1e-6, rtol=1e-5, atol=1e-8,
                          wrt_inputs=True, list_input=False, **kwargs):
    """Checks d<u, layer(x)>/d(weights, float inputs) against central differences.

    ``inputs`` is one array or a list of arrays passed as positional arguments (as one list
    argument with ``list_input``, for merge layers). The layer must compute in float64.
    Returns the (analytic, numeric) pair it compared.
    """
    rng = np.random.default_rng(seed)
    inputs = [np.asarray(x) for x in (inputs if isinstance(inputs, (list, tuple))
                                      else [inputs])]
    tensors = [ef.constant(x) for x in inputs]
    out = _flat(_apply(layer, tensors, list_input, kwargs))
    cotangents = [rng.standard_normal(tuple(o.shape)) for o in out]
    weights = list(layer.trainable_weights)
    assert weights or wrt_inputs, "nothing to differentiate"
    float_inputs = [i for i, x in enumerate(inputs) if x.dtype.kind == "f"] if wrt_inputs else []

    with ef.GradientTape() as tape:
        for i in float_inputs:
            tape.watch(tensors[i])
        out = _flat(_apply(layer, tensors, list_input, kwargs))
        loss = ef.add_n([ef.reduce_sum(o * ef.constant(u)) for o, u in zip(out, cotangents)])
    sources = weights + [tensors[i] for i in float_inputs]
    grads = tape.gradient(loss, sources)

    w_dirs = [rng.standard_normal(tuple(w.shape.as_list())) for w in weights]
    x_dirs = {i: rng.standard_normal(inputs[i].shape) for i in float_inputs}
    analytic = 0.0
    for g, d in zip(grads, w_dirs + [x_dirs[i] for i in float_inputs]):
        if g is not None:
            analytic += float(np.sum(np.asarray(ef.convert_to_tensor(g)) * d))

    base = [w.numpy() for w in weights]

    def shifted(sign):
        for w, b, d in zip(weights, base, w_dirs):
            w.assign(b + sign * eps * d)
        xs = [ef.constant(x + sign * eps * x_dirs[i]) if i in x_dirs else ef.constant(x)
              for i, x in enumerate(inputs)]
        return _loss_value(layer, xs, kwargs, cotangents, list_input)

    numeric = (shifted(1.0) - shifted(-1.0)) / (2 * eps)
    for w, b in zip(weights, base):
        w.assign(b)
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol)
    return analytic, numeric


def roundtrip(layer):
    """A fresh layer from ``layer``'s config, through serialize/deserialize."""
    from eagerflow.keras import layers

    clone = layers.deserialize(layers.serialize(layer))
    assert type(clone) is type(layer)
    config = layer.get_config()
    clone_config = clone.get_config()
    assert clone_config == config, (clone_config, config)
    return clone
