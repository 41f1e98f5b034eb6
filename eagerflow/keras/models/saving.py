"""Saving and loading weights and whole models.

Weights are named by where they live in the model, not by variable names (which depend on
how many layers the process created before): each layer's path is built from its class
name, made unique among its siblings (``dense``, ``dense_1``...), and each weight is
``<layer path>/vars/<i>`` in the layer's creation order. So a model rebuilt from the same
code, in any process, finds its weights, and renaming layers does not matter.

A ``.keras`` file is a zip (stored, not compressed) of:

- ``metadata.json``: format name and version;
- ``config.json``: the model's class, ``get_config()``, build and compile configs;
- ``model.weights``: the weights as an ``eagerflow.io.bundle`` tensor bundle (the format
  of checkpoints and SavedModel variables), optimizer variables included under
  ``optimizer/vars/<i>``.

``save_weights`` writes the same bundle as a file on its own. Bundles hold raw tensor bytes
with each tensor's dtype, shape and SHA-256 and a format version; every write is atomic
(``eagerflow.io.atomic``). ``load_weights`` still reads weights files of the older
``weights_format`` layout, which is never written any more.

Loading rebuilds the model from configuration: built-in layers by class name, custom ones
from ``custom_objects`` or the registry (``keras.saving.register_keras_serializable``).
No pickled or marshalled code is ever executed (``Lambda`` layers need
``safe_mode=False``).

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> from eagerflow import keras
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.keras")
    >>> model.save(path)
    >>> again = keras.models.load_model(path)
    >>> x = np.ones((1, 3), np.float32)
    >>> bool(np.allclose(model.predict(x, verbose=0), again.predict(x, verbose=0)))
    True
"""

from __future__ import annotations

import json
import os
import warnings
import zipfile

import numpy as np

from eagerflow import errors
from eagerflow.io import atomic, untrusted
from eagerflow.io import bundle
from eagerflow.keras.models import weights_format as wf

__all__ = ["save_weights", "load_weights", "save_model", "load_model", "serialize_model",
           "deserialize_model", "weight_entries", "model_from_json"]

_KERAS_FORMAT = "eagerflow.keras"
_KERAS_VERSION = 1


def _snake(name):
    from eagerflow.keras.layers.base import to_snake_case

    return to_snake_case(name)


def weight_entries(model):
    """``[(path, variable)]`` for every weight of ``model``, in a stable order.

    Example:
        >>> from eagerflow import keras
        >>> from eagerflow.keras.models.saving import weight_entries
        >>> m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3),
        ...                       keras.layers.Dense(1)])
        >>> [p for p, _ in weight_entries(m)]
        ['dense/vars/0', 'dense/vars/1', 'dense_1/vars/0', 'dense_1/vars/1']
    """
    out = []
    seen_layers = set()
    seen_vars = set()

    def visit(layer, prefix):
        seen_layers.add(id(layer))
        for i, v in enumerate(layer._own_variables()):
            if id(v) not in seen_vars:
                seen_vars.add(id(v))
                out.append(("%svars/%d" % (prefix, i), v))
        counts = {}
        for child in _children(layer):
            if id(child) in seen_layers:
                continue
            base = _snake(type(child).__name__)
            n = counts.get(base, 0)
            counts[base] = n + 1
            visit(child, "%s%s/" % (prefix, base if n == 0 else "%s_%d" % (base, n)))

    visit(model, "")
    return out


def _children(layer):
    layers = getattr(layer, "layers", None)
    direct = layer._direct_layers()
    if isinstance(layers, list):
        # Keep the model's own order (topological, or the Sequential stack), then anything
        # else it tracks.
        ids = {id(x) for x in layers}
        return list(layers) + [x for x in direct if id(x) not in ids]
    return direct


def _optimizer_entries(model):
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not getattr(optimizer, "built", False):
        return []
    return [("optimizer/vars/%d" % i, v) for i, v in enumerate(optimizer.variables)]


def _check_overwrite(filepath, overwrite):
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError("%s already exists; pass overwrite=True to replace it."
                              % filepath)


def _require_weights(model, what):
    if not model.weights:
        raise ValueError("Model %s has no weights yet, so there is nothing to %s: build it "
                         "first (call it on data, call build(input_shape), or start it with "
                         "keras.Input)." % (model.name, what))


def save_weights(model, filepath, overwrite=True):
    """Writes the model's weights to ``filepath`` (see ``Model.save_weights``)."""
    filepath = os.fspath(filepath)
    _check_overwrite(filepath, overwrite)
    _require_weights(model, "save")
    entries = [(name, np.asarray(v.numpy())) for name, v in weight_entries(model)]
    bundle.write(filepath, entries, {"model": model.name, "class_name": type(model).__name__})


def _read_any(filepath):
    """``(tensors, metadata)`` from a weights file or the weights inside a ``.keras`` zip.

    Every tensor is verified (size, SHA-256) before any is returned; a corrupt or truncated
    file raises ``DataLossError`` naming the file and the tensor.
    """
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError("No such weights file: %s" % filepath)
    members = _zip_members(filepath, ("model.weights",))
    if members is not None:
        if "model.weights" not in members:
            raise wf.WeightsFileError("%s is a zip file without model.weights: not a "
                                      "model saved by eagerflow." % filepath)
        return _read_bundle_bytes(members["model.weights"], "%s (model.weights)" % filepath)
    with untrusted.open_regular(filepath) as f:
        legacy = f.read(len(wf.MAGIC)) == wf.MAGIC
    if legacy:  # written by an older eagerflow; still safe to read (no pickle)
        return wf.read_file(filepath)
    reader = bundle.BundleReader(filepath)
    return reader.read_all(), reader.metadata


# Per-member limits of a .keras archive: configuration is small; weights are stored
# uncompressed, so their limit is the compression-ratio check of untrusted.read_zip_member.
_MEMBER_LIMITS = {"metadata.json": 1 << 20, "config.json": 64 << 20,
                  "model.weights": 1 << 40}


def _zip_members(filepath, names):
    """``{name: bytes}`` of the members ``names`` present in the zip file ``filepath``, or
    None when it is not a zip file. Only a regular file is opened; each member is read
    within its size and compression-ratio limits."""
    with untrusted.open_regular(filepath) as f:
        if not zipfile.is_zipfile(f):
            return None
        f.seek(0)
        try:
            archive = zipfile.ZipFile(f)
        except Exception as exc:  # noqa: BLE001 - BadZipFile, struct/overflow errors...
            raise errors.DataLossError(None, None, "%s is a damaged zip archive (%s)." % (
                filepath, str(exc)[:200])) from None
        with archive:
            present = set(archive.namelist())
            return {name: untrusted.read_zip_member(archive, name, filepath,
                                                    _MEMBER_LIMITS.get(name, 1 << 20))
                    for name in names if name in present}


def _read_bundle_bytes(data, where):
    if data[:len(wf.MAGIC)] == wf.MAGIC:
        return wf.read_bytes(data, where)
    reader = bundle.BundleReader(where, data=data)
    return reader.read_all(), reader.metadata


def load_weights(model, filepath, skip_mismatch=False):
    """Loads weights into ``model`` (see ``Model.load_weights``)."""
    tensors, _ = _read_any(filepath)
    _require_weights(model, "load into")
    _assign(model, weight_entries(model), tensors, os.fspath(filepath), skip_mismatch)


def _assign(model, entries, tensors, where, skip_mismatch):
    import eagerflow as ef

    expected = {name for name, _ in entries}
    stored = {k for k in tensors if not k.startswith("optimizer/")}
    missing = sorted(expected - stored)
    extra = sorted(stored - expected)
    if missing or extra:
        raise ValueError(
            "Weights file %s does not match model %s: %s%s. The file holds %d weights, the "
            "model has %d; was it saved from a model with the same layers?"
            % (where, model.name,
               "missing from the file: %s" % missing[:5] if missing else "",
               ("; " if missing and extra else "") +
               ("not in the model: %s" % extra[:5] if extra else ""),
               len(stored), len(expected)))
    values = []
    for name, variable in entries:
        value = tensors[name]
        shape = tuple(variable.shape.as_list())
        if tuple(value.shape) != shape:
            message = ("Weight %s (variable %s) has shape %s in model %s but shape %s in %s."
                       % (name, variable.name, shape, model.name, tuple(value.shape), where))
            if skip_mismatch:
                warnings.warn(message + " Skipping it.", stacklevel=3)
                continue
            raise ValueError(message)
        dtype = ef.as_dtype(variable.dtype)
        if ef.as_dtype(value.dtype) is not dtype:
            if not (dtype.is_floating and value.dtype.kind == "f"):
                raise ValueError("Weight %s (variable %s) has dtype %s in the model but %s in "
                                 "%s." % (name, variable.name, dtype.name, value.dtype, where))
            value = value.astype(dtype.as_numpy_dtype)
        values.append((variable, value))
    for variable, value in values:
        variable.assign(value)


# -- whole models ---------------------------------------------------------------------------
def serialize_model(model):
    """The model's class, config, build config and compile config (JSON-compatible)."""
    from eagerflow.keras import saving

    entry = saving.serialize_keras_object(model)
    build = model.get_build_config() if hasattr(model, "get_build_config") else None
    if build is not None:
        entry["build_config"] = build
    compile_config = model.get_compile_config() if getattr(model, "compiled", False) else None
    if compile_config is not None:
        entry["compile_config"] = compile_config
    return entry


def deserialize_model(config, custom_objects=None, compile=True, safe_mode=True):
    """Rebuilds a model from :func:`serialize_model` output (weights not loaded)."""
    from eagerflow.keras import saving

    model_config = {k: v for k, v in config.items() if k not in ("build_config",
                                                                   "compile_config")}
    try:
        model = saving.deserialize_keras_object(model_config, custom_objects=custom_objects,
                                                safe_mode=safe_mode)
    except ValueError as exc:
        # InvalidArgumentError is a ValueError: callers catching ValueError still do.
        raise errors.InvalidArgumentError(None, None, "Cannot rebuild the saved model of "
                                          "class %r: %s" % (config.get("class_name"), exc)
                                          ) from None
    build = config.get("build_config")
    if build and not model.weights and hasattr(model, "build_from_config"):
        model.build_from_config(build)
    if compile and config.get("compile_config"):
        try:
            model.compile_from_config(config["compile_config"], custom_objects=custom_objects)
        except (ValueError, TypeError) as exc:
            warnings.warn("The model was rebuilt but could not be compiled from its saved "
                          "compile config (%s); compile it yourself, or load with "
                          "compile=False." % exc, stacklevel=3)
    return model


def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
    """Writes ``model`` to a ``.keras`` file (see ``Model.save``)."""
    save_format = kwargs.pop("save_format", None)
    kwargs.pop("include_optimizer", None)
    kwargs.pop("options", None)
    if kwargs:
        raise TypeError("save() got unexpected keyword argument(s) %s." % sorted(kwargs))
    filepath = os.fspath(filepath)
    if save_format not in (None, "keras") or zipped is False:
        raise ValueError("Only the .keras zip format is supported (save_format=%r, zipped=%r)."
                         % (save_format, zipped))
    if not filepath.endswith(".keras"):
        raise ValueError(
            "Invalid filepath extension for saving. Please add the `.keras` extension "
            "(model.save('%s.keras')). Received: filepath=%s. To save only the weights use "
            "model.save_weights()." % (os.path.splitext(filepath)[0], filepath))
    _check_overwrite(filepath, overwrite)
    config = serialize_model(model)
    config_bytes = json.dumps(config, indent=1, default=_json_default).encode("utf-8")
    entries = [(name, np.asarray(v.numpy())) for name, v in weight_entries(model)]
    entries += [(name, np.asarray(v.numpy())) for name, v in _optimizer_entries(model)]
    weights = bundle.write_bytes(entries, {"model": model.name},
                                 name="%s (model.weights)" % filepath)
    metadata = json.dumps({"format": _KERAS_FORMAT, "version": _KERAS_VERSION,
                           "keras_version": "3.0.0"}).encode("utf-8")

    with atomic.atomic_open(filepath, "wb") as f:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as archive:
            archive.writestr("metadata.json", metadata)
            archive.writestr("config.json", config_bytes)
            archive.writestr("model.weights", weights)


def _json_default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError("Object of type %s is not JSON serializable: %r" % (type(value).__name__,
                                                                        value))


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Loads a model written by ``Model.save``.

    Args:
        filepath: The ``.keras`` file.
        custom_objects: ``{name: class or function}`` for custom layers, losses, metrics.
        compile: Compile the model with the saved optimizer, loss and metrics (restoring the
            optimizer's state).
        safe_mode: Refuse to rebuild ``Lambda`` layers from serialized bytecode.

    Returns:
        The model, with its weights (and optimizer state when compiled).

    Raises:
        FileNotFoundError: If the file does not exist.
        ValueError: If it is not a ``.keras`` file or a class cannot be found.

    Example:
        >>> import os, tempfile
        >>> from eagerflow import keras
        >>> m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="out")])
        >>> m.compile("adam", "mse")
        >>> path = os.path.join(tempfile.mkdtemp(), "m.keras")
        >>> m.save(path)
        >>> loaded = keras.models.load_model(path)
        >>> loaded.layers[0].name, type(loaded.optimizer).__name__
        ('out', 'Adam')
    """
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError("No such file: %s" % filepath)
    members = _zip_members(filepath, ("config.json", "model.weights"))
    if members is None:
        raise errors.InvalidArgumentError(
            None, None, "%s is not a .keras model file (not a zip archive). Weights-only "
            "files are loaded with model.load_weights()." % filepath)
    if len(members) != 2:
        raise errors.InvalidArgumentError(
            None, None, "%s is a zip file but not a model saved by eagerflow (it lacks "
            "config.json or model.weights)." % filepath)
    config = untrusted.json_loads(members["config.json"], "%s (config.json)" % filepath)
    if not isinstance(config, dict):
        raise errors.DataLossError(None, None, "%s (config.json): not a model config (a "
                                   "JSON object)." % filepath)
    tensors, _ = _read_bundle_bytes(members["model.weights"], "%s (model.weights)" % filepath)
    model = deserialize_model(config, custom_objects=custom_objects, compile=compile,
                              safe_mode=safe_mode)
    if not model.weights and any(not k.startswith("optimizer/") for k in tensors):
        raise ValueError("The model rebuilt from %s has no weights (it was never built); "
                         "define get_build_config()/build() or build it before saving."
                         % filepath)
    _assign(model, weight_entries(model), tensors, filepath, skip_mismatch=False)
    _restore_optimizer(model, tensors, filepath)
    return model


def _restore_optimizer(model, tensors, filepath):
    stored = sorted((k for k in tensors if k.startswith("optimizer/vars/")),
                    key=lambda k: int(k.rsplit("/", 1)[1]))
    optimizer = getattr(model, "optimizer", None)
    if not stored or optimizer is None:
        return
    optimizer.build(model.trainable_variables)
    variables = optimizer.variables
    if len(variables) != len(stored) or any(
            tuple(v.shape.as_list()) != tuple(tensors[k].shape)
            for v, k in zip(variables, stored)):
        warnings.warn("%s: the saved optimizer state (%d variables) does not fit the "
                      "optimizer (%d variables); training restarts with a fresh optimizer "
                      "state." % (filepath, len(stored), len(variables)), stacklevel=3)
        return
    for v, k in zip(variables, stored):
        v.assign(tensors[k].astype(v.dtype.as_numpy_dtype))


def model_from_json(json_string, custom_objects=None):
    """Rebuilds a model (without weights) from ``Model.to_json()`` output.

    Example:
        >>> from eagerflow import keras
        >>> m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        >>> keras.models.model_from_json(m.to_json()).count_params()
        8
    """
    config = untrusted.json_loads(json_string, "the model JSON")
    if not isinstance(config, dict):
        raise errors.InvalidArgumentError(None, None, "model_from_json: expected a JSON "
                                          "object, got %s." % type(config).__name__)
    return deserialize_model(config, custom_objects=custom_objects, compile=False)
