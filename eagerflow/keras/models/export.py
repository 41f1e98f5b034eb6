"""``Model.export``: a serving SavedModel of a model's inference call, as Keras 3 writes.

The export holds one endpoint, ``serve`` (the model called with ``training=False`` on its
inputs' specs, batch dimension None), also registered as the ``serve`` and
``serving_default`` signatures, and the model's ``variables``, ``trainable_variables`` and
``non_trainable_variables``. It is written by ``saved_model.save`` (atomically) and read
back with ``saved_model.load(path).serve(x)`` or ``.signatures["serving_default"](x)``.

Example:
    >>> import os, tempfile, numpy as np, eagerflow as ef
    >>> model = ef.keras.Sequential([ef.keras.Input((2,)),
    ...                              ef.keras.layers.Dense(1, kernel_initializer="ones")])
    >>> path = os.path.join(tempfile.mkdtemp(), "export")
    >>> model.export(path, verbose=False)
    >>> ef.saved_model.load(path).serve(np.array([[1.0, 2.0]], np.float32)).numpy()
    array([[3.]], dtype=float32)
"""

from __future__ import annotations

from eagerflow import nest
from eagerflow.function.function import function
from eagerflow.module import Module

__all__ = ["export_model"]

SUPPORTED_FORMATS = ("tf_saved_model",)


class _ExportArchive(Module):
    """The SavedModel's root: the endpoint and the model's variables (the restored root's
    ``variables``, ``trainable_variables`` and ``non_trainable_variables`` list them)."""

    def __init__(self, model, serve):
        super().__init__(name="export_archive")
        self.serve = serve
        self.model_variables = list(model.variables)


def _serving_function(model, input_signature):
    from eagerflow.saved_model import signatures

    if input_signature is None:
        if not getattr(model, "inputs", None):
            raise ValueError(
                "Model.export: model %s has no known inputs; call it once on data, give it "
                "an Input layer, or pass input_signature=[TensorSpec(...)]." % model.name)
        return signatures.keras_serving_function(model)
    specs = list(input_signature) if isinstance(input_signature, (list, tuple)) else [
        input_signature]
    if len(specs) == 1:
        return function(lambda x: model(x, training=False), input_signature=specs)
    return function(lambda *xs: model(list(xs), training=False), input_signature=specs)


def _describe(serve, path):
    concrete = serve.get_concrete_function()
    lines = ["Saved artifact at '%s'. The following endpoints are available:" % path, "",
             "* Endpoint 'serve'"]
    for k, spec in enumerate(nest.flatten(serve.input_signature)):
        lines.append("  args_%d (POSITIONAL_ONLY): %r" % (k, spec))
    lines.append("Output Type:")
    lines.append("  %s" % nest.map_structure(
        lambda t: "TensorSpec(shape=%s, dtype=%s)" % (t.shape, t.dtype.name),
        concrete.structured_outputs))
    return "\n".join(lines)


def export_model(model, filepath, format="tf_saved_model", verbose=None,  # noqa: A002
                 input_signature=None, **kwargs):
    """Writes ``model``'s inference call as a serving SavedModel at ``filepath``.

    Args:
        model: A built Keras model (it has inputs, or ``input_signature`` is given).
        filepath: The SavedModel directory to write (replaced atomically if it exists).
        format: ``"tf_saved_model"``, the only format eagerflow writes.
        verbose: Print the endpoints (default True, as Keras).
        input_signature: Optional TensorSpec or list of them for the endpoint's inputs.
        **kwargs: Refused (Keras passes backend-specific options here).

    Raises:
        ValueError: For another format, unknown keyword arguments, or a model whose inputs
            are unknown and no ``input_signature``.
    """
    if format not in SUPPORTED_FORMATS:
        raise ValueError("Unrecognized format=%r. Supported formats are: %s (eagerflow "
                         "exports SavedModels only)." % (format, list(SUPPORTED_FORMATS)))
    if kwargs:
        raise ValueError("Model.export: unexpected keyword arguments %s for format "
                         "'tf_saved_model'." % sorted(kwargs))
    from eagerflow.saved_model.save import save

    serve = _serving_function(model, input_signature)
    archive = _ExportArchive(model, serve)
    save(archive, filepath, signatures={"serve": serve, "serving_default": serve})
    if verbose is None or verbose:
        print(_describe(serve, filepath))
