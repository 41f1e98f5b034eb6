"""``saved_model.save``: an object's functions, variables and signatures to a directory."""

from __future__ import annotations

import os
import shutil
import uuid

from eagerflow.io.atomic import fsync_directory
from eagerflow.saved_model import _format
from eagerflow.saved_model.object_graph import attributes, is_concrete, is_function, is_variable
from eagerflow.saved_model import signatures as signatures_lib

__all__ = ["save", "SaveOptions"]


class SaveOptions:
    """Options for :func:`save` (accepted for TensorFlow compatibility).

    Args:
        namespace_whitelist: Accepted and ignored (there are no custom op namespaces).
        save_debug_info: Accepted and ignored (node source locations are always stored).
        function_aliases: Accepted and ignored.
        experimental_io_device: Accepted and ignored.
        experimental_variable_policy: Accepted and ignored (variable devices are stored).

    Example:
        >>> import eagerflow as ef
        >>> ef.saved_model.SaveOptions(save_debug_info=True).save_debug_info
        True
    """

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_io_device=None, experimental_variable_policy=None, **kwargs):
        self.namespace_whitelist = namespace_whitelist
        self.save_debug_info = save_debug_info
        self.function_aliases = function_aliases
        self.experimental_io_device = experimental_io_device
        self.experimental_variable_policy = experimental_variable_policy
        self.extra = kwargs


class _Builder:
    """Collects the object graph, concrete functions and variables of one export."""

    def __init__(self):
        self.model = _format.pb().SavedModel()
        self.model.versions.producer = _format.FORMAT_VERSION
        self.model.versions.min_consumer = _format.MIN_CONSUMER
        self.model.tag.append("serve")
        self.node_ids = {}       # id(object) -> node index
        self.keep = []           # objects referenced by id: keep them alive
        self.variables = []      # Variable objects, in SavedModel.variable order
        self.variable_ids = {}
        self.concrete_ids = {}   # id(ConcreteFunction) -> SavedModel.function index

    def build(self, root):
        queue = [(root, "")]
        self._node(root)
        while queue:
            obj, path = queue.pop(0)
            index = self.node_ids[id(obj)]
            node = self.model.node[index]
            if is_variable(obj):
                node.variable = self.variable(obj, path)
                continue
            if is_function(obj) or is_concrete(obj):
                ref = node.function
                ref.name = getattr(obj, "_name", None) or getattr(obj, "name", "") or ""
                for concrete in _concretes_of(obj):
                    ref.concrete_function.append(self.concrete(concrete))
                continue
            if isinstance(obj, (list, tuple)):
                node.sequence = type(obj).__name__
            elif isinstance(obj, dict):
                node.mapping = type(obj).__name__
            else:
                node.user_object = type(obj).__name__
            for name, value in attributes(obj):
                is_new = id(value) not in self.node_ids
                child = self._node(value)
                node.child.add(name=name, node=child)
                if is_new:
                    queue.append((value, "%s/%s" % (path, name) if path else name))

    def _node(self, obj):
        index = self.node_ids.get(id(obj))
        if index is None:
            index = self.node_ids[id(obj)] = len(self.model.node)
            self.model.node.add()
            self.keep.append(obj)
        return index

    def variable(self, var, path=None):
        index = self.variable_ids.get(id(var))
        if index is None:
            index = self.variable_ids[id(var)] = len(self.variables)
            self.variables.append(var)
            key = path or "_untracked/%d" % index
            vdef = self.model.variable.add(key=key, name=var.name, trainable=bool(var.trainable),
                                           device=var.device or "")
            vdef.dtype = var.dtype.as_datatype_enum
            vdef.shape.dim.extend(-1 if d is None else d for d in var.shape.as_list())
        elif path:  # first met through a function: key it by its place in the object graph
            self.model.variable[index].key = path
        return index

    def concrete(self, concrete):
        """Serializes ``concrete`` once; returns its SavedModel.function index."""
        from eagerflow.function import serialize

        index = self.concrete_ids.get(id(concrete))
        if index is not None:
            return index
        saved = serialize.graph_to_proto(concrete, embed_captures=True, embed_variables=False)
        local = concrete.graph.variables
        mapping = [None] * len(saved.variable)
        for i, k in enumerate(saved.signature.variable):
            mapping[k] = self.variable(local[i])
        missing = [saved.variable[k].name for k, m in enumerate(mapping) if m is None]
        if missing:
            raise ValueError("Cannot save function %s: it uses variables %s that are not "
                             "variables of the function's graph." % (concrete.name, missing))
        index = self.concrete_ids[id(concrete)] = len(self.model.function)
        self.keep.append(concrete)
        entry = self.model.function.add(name=concrete.name)
        entry.function.CopyFrom(saved)
        entry.variable.extend(mapping)
        entry.arg_name.extend(n.name for n in concrete.graph.inputs)
        return index


def _concretes_of(obj):
    """The concrete functions saved for a Function attribute: one per input_signature, or
    every trace made so far."""
    if is_concrete(obj):
        return [obj]
    if obj.input_signature is not None:
        return [obj.get_concrete_function()]
    return [c for _, c in obj._concretes]


def _replace_directory(tmp, export_dir):
    """Moves the finished ``tmp`` to ``export_dir``, replacing an existing export."""
    parent = os.path.dirname(export_dir)
    if not os.path.lexists(export_dir):
        os.rename(tmp, export_dir)
        fsync_directory(parent)
        return
    if os.path.isdir(export_dir) and not os.path.islink(export_dir) and not os.listdir(
            export_dir):
        os.replace(tmp, export_dir)  # an empty directory is replaced atomically
        fsync_directory(parent)
        return
    old = os.path.join(parent, ".%s.old-%s" % (os.path.basename(export_dir), uuid.uuid4().hex))
    os.rename(export_dir, old)
    try:
        os.rename(tmp, export_dir)
    except BaseException:
        os.rename(old, export_dir)
        raise
    fsync_directory(parent)
    shutil.rmtree(old, ignore_errors=True)


def _remove_stale(export_dir):
    """Deletes what killed saves of ``export_dir`` left beside it (``.<name>.tmp-*`` and
    ``.<name>.old-*`` directories), once a new export is in place: they are superseded.
    Only real directories with those exact prefixes are removed, never through a symlink."""
    parent, base = os.path.split(export_dir)
    prefixes = (".%s.tmp-" % base, ".%s.old-" % base)
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        full = os.path.join(parent, name)
        if name.startswith(prefixes) and os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)


def save(obj, export_dir, signatures=None, options=None):
    """Exports ``obj``'s functions, variables and signatures as a SavedModel directory.

    The object graph is ``obj``'s attributes that are Modules, Variables, ``@function``s
    (traced for their ``input_signature``, or every trace made so far) and
    ConcreteFunctions, and lists or dicts of them. :func:`load` rebuilds it in another
    process without the classes that defined it. Nothing is written until everything is
    traced and serialized; the directory is built under a temporary sibling name, flushed
    to disk and renamed into place, so a failed or interrupted save leaves no partial
    ``export_dir`` and an existing export intact. Version directories (``model/1``,
    ``model/2``) are the serving convention; missing parents are created.

    Args:
        obj: The object to save (a Module, a Keras model, any object with such attributes).
        export_dir: The directory to write (replaced if it holds a SavedModel).
        signatures: A Function with an input_signature, a ConcreteFunction, or a dict
            ``{name: either}``. A single one is named ``"serving_default"``. When None, a
            Keras model gets a ``serving_default`` from its call, and an object with exactly
            one ``@function`` attribute with an input_signature gets that one.
        options: A :class:`SaveOptions` (accepted).

    Raises:
        ValueError: If a signature cannot be traced, or ``export_dir`` is a non-empty
            directory that is not a SavedModel.

    Example:
        >>> import os, tempfile, eagerflow as ef
        >>> class Scale(ef.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = ef.Variable(3.0)
        ...     @ef.function(input_signature=[ef.TensorSpec([None], ef.float32)])
        ...     def __call__(self, x):
        ...         return x * self.w
        >>> path = os.path.join(tempfile.mkdtemp(), "scale", "1")
        >>> ef.saved_model.save(Scale(), path)
        >>> sorted(os.listdir(path))
        ['fingerprint.pb', 'saved_model.pb', 'variables']
        >>> ef.saved_model.load(path)(ef.constant([1.0, 2.0])).numpy().tolist()
        [3.0, 6.0]
    """
    del options
    export_dir = os.path.abspath(os.fspath(export_dir))
    if os.path.isdir(export_dir) and os.listdir(export_dir) and not os.path.exists(
            os.path.join(export_dir, _format.SAVED_MODEL_FILENAME)):
        raise ValueError("Cannot save to %s: it is a non-empty directory that does not hold "
                         "a SavedModel. Choose a new directory (or a version directory such "
                         "as %s)." % (export_dir, os.path.join(export_dir, "1")))
    builder = _Builder()
    builder.build(obj)
    signature_map = signatures_lib.canonicalize(obj, signatures)
    for name, concrete, input_names in signature_map:
        signatures_lib.add_signature(builder.model, name, builder.concrete(concrete),
                                     concrete, input_names)
    values = {builder.model.variable[i].key: _host_value(v)
              for i, v in enumerate(builder.variables)}

    parent = os.path.dirname(export_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, ".%s.tmp-%s" % (os.path.basename(export_dir),
                                               uuid.uuid4().hex))
    os.mkdir(tmp)
    try:
        _format._write_variables(tmp, values)
        with open(os.path.join(tmp, _format.SAVED_MODEL_FILENAME), "xb") as f:
            f.write(_format.model_to_bytes(builder.model))
            _format.fsync_file(f)
        _format.write_manifest(tmp)
        fsync_directory(os.path.join(tmp, _format.VARIABLES_DIRECTORY))
        fsync_directory(tmp)
        _replace_directory(tmp, export_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _remove_stale(export_dir)


def _host_value(var):
    from eagerflow.function.serialize.codec import _host

    return _host(var._value)
