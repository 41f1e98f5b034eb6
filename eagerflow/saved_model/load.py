"""``saved_model.load``: rebuilds a saved object without the classes that defined it."""

from __future__ import annotations

import collections.abc
import os

from eagerflow import errors, nest
from eagerflow.saved_model import _format

__all__ = ["load", "LoadOptions", "contains_saved_model"]


class LoadOptions:
    """Options for :func:`load` (accepted for TensorFlow compatibility).

    Args:
        allow_partial_checkpoint: Accepted and ignored.
        experimental_io_device: Accepted and ignored.
        experimental_skip_checkpoint: Accepted and ignored.

    Example:
        >>> import eagerflow as ef
        >>> ef.saved_model.LoadOptions().allow_partial_checkpoint
        False
    """

    def __init__(self, allow_partial_checkpoint=False, experimental_io_device=None,
                 experimental_skip_checkpoint=False, **kwargs):
        self.allow_partial_checkpoint = allow_partial_checkpoint
        self.experimental_io_device = experimental_io_device
        self.experimental_skip_checkpoint = experimental_skip_checkpoint
        self.extra = kwargs


def contains_saved_model(export_dir):
    """True when ``export_dir`` holds a SavedModel (a ``saved_model.pb``).

    Example:
        >>> import tempfile, eagerflow as ef
        >>> ef.saved_model.contains_saved_model(tempfile.mkdtemp())
        False
    """
    return os.path.isfile(os.path.join(os.fspath(export_dir), _format.SAVED_MODEL_FILENAME))


class _UserObject:
    """A restored object: its saved attributes, variables and (on the root) signatures."""

    def __init__(self, class_name):
        self._class_name = class_name
        self._children = {}

    @property
    def variables(self):
        return tuple(_collect(self, lambda v: True))

    @property
    def trainable_variables(self):
        return tuple(_collect(self, lambda v: v.trainable))

    @property
    def non_trainable_variables(self):
        return tuple(_collect(self, lambda v: not v.trainable))

    def __call__(self, *args, **kwargs):
        call = self._children.get("__call__")
        if call is None:
            raise TypeError("The restored %s object is not callable (no __call__ function "
                            "was saved)." % self._class_name)
        return call(*args, **kwargs)

    def __repr__(self):
        return "<restored %s with %s>" % (self._class_name,
                                          ", ".join(sorted(self._children)) or "nothing")


def _collect(root, predicate):
    out, seen, stack = [], set(), [root]
    while stack:
        obj = stack.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if getattr(obj, "_is_variable", False):
            if predicate(obj):
                out.append(obj)
        elif isinstance(obj, _UserObject):
            stack.extend(obj._children[k] for k in sorted(obj._children))
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj[k] for k in sorted(obj))
    return out


def _describe(loaded):
    return "(%s)" % ", ".join("%s: %r" % (n.name, n.avals[0]) for n in loaded.graph.inputs)


def _fits(loaded, flat):
    from eagerflow.tensor_shape import TensorShape

    inputs = loaded.graph.inputs
    if len(inputs) != len(flat):
        return False
    for t, node in zip(flat, inputs):
        aval = node.avals[0]
        if t.dtype is not aval.dtype or not TensorShape(aval.shape).is_compatible_with(
                t.shape):
            return False
    return True


class RestoredFunction:
    """A restored ``@function``: calls go to the saved concrete function that fits.

    Attributes:
        concrete_functions: The saved traces (LoadedFunctions with ``.graph.pretty()``).
    """

    def __init__(self, name, concretes, arg_names):
        self.name = name
        self.concrete_functions = list(concretes)
        self._arg_names = arg_names

    @property
    def graph(self):
        """The graph of the first saved trace."""
        return self.concrete_functions[0].graph

    def get_concrete_function(self, *args, **kwargs):
        """The saved trace that accepts these TensorSpecs or tensors."""
        from eagerflow.tensor_shape import TensorSpec

        flat = [s if isinstance(s, TensorSpec) else _to_tensor(s)
                for s in nest.flatten((args, kwargs))]
        for loaded in self.concrete_functions:
            if not flat or _fits(loaded, flat):
                return loaded
        raise self._no_match(flat)

    def _no_match(self, flat):
        got = ", ".join("%s%s" % (t.dtype.name, list(t.shape)) for t in flat)
        expected = "\n".join("  Option %d: %s%s" % (k + 1, self.name, _describe(c))
                             for k, c in enumerate(self.concrete_functions))
        return ValueError(
            "Could not find a saved concrete function of %s to call with the arguments "
            "(%s). A loaded function runs only the signatures it was saved with:\n%s"
            % (self.name, got, expected))

    def __call__(self, *args, **kwargs):
        for k, loaded in enumerate(self.concrete_functions):
            names = self._arg_names[k]
            if kwargs and not set(kwargs) <= set(names):
                continue
            ordered = list(args)
            if kwargs:
                rest = names[len(args):]
                if set(rest) != set(kwargs):
                    continue
                ordered += [kwargs[n] for n in rest]
            flat = [_to_tensor(a) for a in nest.flatten(ordered)]
            if _fits(loaded, flat):
                return loaded(*flat)
        raise self._no_match([_to_tensor(a) for a in nest.flatten((args, kwargs))])

    def __repr__(self):
        return "<RestoredFunction %s: %s>" % (
            self.name, "; ".join(_describe(c) for c in self.concrete_functions))


def _to_tensor(value):
    from eagerflow.tensor import Tensor, convert_to_tensor

    if getattr(value, "_is_variable", False):
        return value.read_value()
    return value if isinstance(value, Tensor) else convert_to_tensor(value)


class SignatureFunction:
    """A restored serving signature: keyword tensors in, ``{output name: tensor}`` out.

    A signature with one input may also be called with it as the one positional argument.

    Attributes:
        name: The signature key.
        structured_input_signature: ``((), {input name: TensorSpec})``.
        structured_outputs: ``{output name: TensorSpec}``.
    """

    def __init__(self, sig, loaded):
        from eagerflow.function.serialize.codec import _decode_aval
        from eagerflow.tensor_shape import TensorShape, TensorSpec

        def spec(msg):
            aval = _decode_aval(msg)
            return TensorSpec(TensorShape(aval.shape), aval.dtype, msg.name)

        self.name = sig.name
        self._loaded = loaded
        self._inputs = [spec(m) for m in sig.input]
        self._outputs = [spec(m) for m in sig.output]
        self._dict_output = sig.dict_output
        self.structured_input_signature = ((), {s.name: s for s in self._inputs})
        self.structured_outputs = {s.name: s for s in self._outputs}

    @property
    def graph(self):
        return self._loaded.graph

    def __call__(self, *args, **kwargs):
        names = [s.name for s in self._inputs]
        if args:
            # One positional argument binds to a signature's only input, as TF allows
            # (TF only for a Tensor; any value that converts works here).
            if len(args) != 1 or len(names) != 1 or kwargs:
                raise TypeError(
                    "Signature %s takes keyword arguments (%s); a positional argument is "
                    "accepted only for a signature with one input, got %d positional and "
                    "%d keyword argument(s). Call it as %s(%s)." % (
                        self.name, ", ".join(names), len(args), len(kwargs), self.name,
                        ", ".join("%s=..." % n for n in names)))
            kwargs = {names[0]: args[0]}
        if set(kwargs) != set(names):
            raise TypeError("Signature %s takes the inputs %s; got %s." % (
                self.name, names, sorted(kwargs)))
        flat = [_to_tensor(kwargs[n]) for n in names]
        if not _fits(self._loaded, flat):
            raise ValueError("Signature %s%s cannot take %s." % (
                self.name, _describe(self._loaded),
                ", ".join("%s=%s%s" % (n, t.dtype.name, list(t.shape))
                          for n, t in zip(names, flat))))
        result = self._loaded(*flat)
        if self._dict_output:
            return {s.name: result[s.name] for s in self._outputs}
        return {s.name: t for s, t in zip(self._outputs, nest.flatten(result))}

    def __repr__(self):
        return "<SignatureFunction %s(%s) -> {%s}>" % (
            self.name, ", ".join(s.name for s in self._inputs),
            ", ".join(s.name for s in self._outputs))


class _SignatureMap(collections.abc.Mapping):
    def __init__(self, signatures):
        self._signatures = dict(signatures)

    def __getitem__(self, key):
        return self._signatures[key]

    def __iter__(self):
        return iter(self._signatures)

    def __len__(self):
        return len(self._signatures)

    def __repr__(self):
        return "_SignatureMap(%s)" % sorted(self._signatures)


def _interrupted_replacement(export_dir):
    """The export to load when a save that replaced ``export_dir`` died mid-swap, else None.

    Replacing an export renames the old directory aside (``.<name>.old-<hex>``) and then the
    finished new one (``.<name>.tmp-<hex>``) into place; a process killed between the two
    renames leaves both. The choice is by verified completeness, never by modification
    time: a temporary directory whose manifest verifies is the newer, finished export; else
    an old one that verifies. Two complete candidates of the same kind are an error naming
    both (moving one into place by hand decides).
    """
    parent = os.path.dirname(os.path.abspath(export_dir))
    base = os.path.basename(os.path.normpath(export_dir))
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return None
    for prefix in (".%s.tmp-" % base, ".%s.old-" % base):
        complete = []
        for name in names:
            full = os.path.join(parent, name)
            if not name.startswith(prefix) or os.path.islink(full) or not os.path.isdir(full):
                continue
            try:
                _format.verify_manifest(full)
            except errors.OpError:
                continue  # incomplete or damaged: never chosen
            complete.append(full)
        if len(complete) == 1:
            return complete[0]
        if complete:
            raise errors.FailedPreconditionError(
                None, None, "SavedModel directory %s is missing and interrupted saves left "
                "several complete exports: %s. Rename the one to use to %s." % (
                    export_dir, ", ".join(complete), export_dir))
    return None


def load(export_dir, tags=None, options=None):
    """Loads a SavedModel written by :func:`save`; needs no Python class of the model.

    Every file is checked against the manifest (format version, size, SHA-256) before
    anything is parsed, and nothing in the directory can run code: it is protobuf and raw
    tensor bytes.

    Args:
        export_dir: The SavedModel directory.
        tags: Accepted for compatibility (``"serve"`` or None).
        options: A :class:`LoadOptions` (accepted).

    Returns:
        An object with the saved attributes: restored functions (callable with the saved
        signatures), variables, sub-objects, and ``signatures`` (name -> callable taking
        keyword tensors and returning a dict).

    Raises:
        NotFoundError: If a file is missing (the message names it).
        DataLossError: If a file is truncated or corrupted (the message names it).
        UnimplementedError: If the directory needs a newer format version.

    Example:
        >>> import os, tempfile, eagerflow as ef
        >>> m = ef.Module()
        >>> m.v = ef.Variable([1.0, 2.0])
        >>> m.f = ef.function(lambda x: x + m.v,
        ...                   input_signature=[ef.TensorSpec([2], ef.float32)])
        >>> path = os.path.join(tempfile.mkdtemp(), "1")
        >>> ef.saved_model.save(m, path)
        >>> restored = ef.saved_model.load(path)
        >>> restored.v.numpy().tolist()
        [1.0, 2.0]
        >>> out = restored.signatures["serving_default"](x=ef.constant([1.0, 1.0]))
        >>> out["output_0"].numpy().tolist()
        [2.0, 3.0]
    """
    del tags, options
    from eagerflow.function import serialize
    from eagerflow.tensor_shape import TensorShape
    from eagerflow.variables import Variable

    export_dir = os.fspath(export_dir)
    if not os.path.isdir(export_dir):
        previous = _interrupted_replacement(export_dir)
        if previous is None:
            raise errors.NotFoundError(None, None, "SavedModel directory %s does not exist."
                                       % export_dir)
        export_dir = previous
    _format.verify_manifest(export_dir)
    model = _format.read_model(export_dir)
    pb_path = os.path.join(export_dir, _format.SAVED_MODEL_FILENAME)
    values = _format._read_variables(export_dir)

    variables = []
    for vdef in model.variable:
        where = os.path.join(export_dir, _format.VARIABLES_DIRECTORY, _format.VARIABLES_DATA)
        if vdef.key not in values:
            raise _format.not_found(where, "no value for variable %r (%s)"
                                    % (vdef.key, vdef.name))
        value = values[vdef.key]
        dtype = serialize.codec._decode_dtype(vdef.dtype)
        shape = TensorShape([None if d < 0 else d for d in vdef.shape.dim])
        if value.dtype != dtype.as_numpy_dtype or not shape.is_compatible_with(value.shape):
            raise _format.data_loss(where, "tensor %r is %s%s, but variable %s is %s%s" % (
                vdef.key, value.dtype, list(value.shape), vdef.name, dtype.name, shape))
        base = vdef.name[:-2] if vdef.name.endswith(":0") else vdef.name
        variables.append(Variable(value, trainable=vdef.trainable, name=base or None,
                                  dtype=dtype))

    loaded_functions = []
    for entry in model.function:
        supplied = {}
        for local, index in enumerate(entry.variable):
            if not 0 <= index < len(variables):
                raise _format.data_loss(pb_path, "function %r uses variable %d of %d"
                                        % (entry.name, index, len(variables)))
            supplied[local] = variables[index]
        loaded = serialize.load_function(entry.function, variable_values=supplied)
        loaded.name = entry.name or loaded.name
        loaded_functions.append((loaded, list(entry.arg_name)))

    def function_at(index, where):
        if not 0 <= index < len(loaded_functions):
            raise _format.data_loss(pb_path, "%s refers to function %d of %d"
                                    % (where, index, len(loaded_functions)))
        return loaded_functions[index]

    if not model.node:
        raise _format.data_loss(pb_path, "the object graph is empty")
    objects = []
    for k, node in enumerate(model.node):
        kind = node.WhichOneof("kind")
        if kind == "variable":
            if not 0 <= node.variable < len(variables):
                raise _format.data_loss(pb_path, "object %d refers to variable %d of %d"
                                        % (k, node.variable, len(variables)))
            objects.append(variables[node.variable])
        elif kind == "function":
            pairs = [function_at(i, "object %d" % k) for i in node.function.concrete_function]
            objects.append(RestoredFunction(node.function.name or "function",
                                            [p[0] for p in pairs], [p[1] for p in pairs]))
        elif kind == "sequence":
            objects.append([])
        elif kind == "mapping":
            objects.append({})
        elif kind == "user_object":
            objects.append(_UserObject(node.user_object))
        else:
            raise _format.data_loss(pb_path, "object %d has no kind" % k)
    for k, node in enumerate(model.node):
        obj = objects[k]
        for child in node.child:
            if not 0 <= child.node < len(objects):
                raise _format.data_loss(pb_path, "object %d has a child %r pointing to object "
                                        "%d of %d" % (k, child.name, child.node, len(objects)))
            value = objects[child.node]
            if isinstance(obj, list):
                obj.append(value)
            elif isinstance(obj, dict):
                obj[child.name] = value
            elif isinstance(obj, _UserObject):
                obj._children[child.name] = value
                if child.name not in (
                        "variables", "trainable_variables", "non_trainable_variables",
                        "signatures"):
                    setattr(obj, child.name, value)
    root = objects[0]
    signatures = {}
    for sig in model.signature:
        loaded, _ = function_at(sig.concrete_function, "signature %r" % sig.name)
        signatures[sig.name] = SignatureFunction(sig, loaded)
    if isinstance(root, _UserObject):
        root.signatures = _SignatureMap(signatures)
    return root
