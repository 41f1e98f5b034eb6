"""``eagerflow.train.Checkpoint``: object-graph checkpoints with deferred restoration.

A checkpoint names each variable by the path of attributes that leads to it from the
checkpoint's root, as TF does: ``model/layers/0/kernel/.ATTRIBUTES/VARIABLE_VALUE``. Paths
are found breadth-first (public attribute names before ``_private`` ones, each group sorted;
list items by index, dict items by key), so an object reachable by two paths gets the
shortest, and two freshly built copies of the same program get the same keys. Optimizer slot
variables are named after the model variable they belong to,
``<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>/.ATTRIBUTES/VARIABLE_VALUE``, so a
new optimizer finds them whatever order it creates its slots in.

What is traversed: ``eagerflow.Module`` attributes (Keras layers, models and optimizers are
Modules), ``Variable`` leaves, objects with a ``_checkpoint_dependencies()`` method (returning
a dict or ``(name, object)`` pairs), and other objects with a ``variables`` attribute.
Objects with ``_serialize_to_tensors()`` (dataset iterators) save themselves as named
tensors, ``<path>/.ATTRIBUTES/<name>`` (``iterator/.ATTRIBUTES/ITERATOR_STATE``, as TF), and
are handed them back by ``_restore_from_tensors`` when ``restore`` runs; such an object must
exist when ``restore`` is called (its values are not deferred).

Deferred restoration: a value whose variable does not exist yet when ``restore`` runs (a Keras
layer built at its first call, an optimizer slot made at the first ``apply``) is kept, and
assigned the moment the variable is created. Variables do not know their owner when they are
created (the attribute is set afterwards), so the restoring creator (installed with
``variable_creator_scope`` on the restoring thread) looks up the call stack for the ``self``
of a pending owner, and matches the variable's ``name`` argument to the pending attribute name
(Keras' ``add_weight(name="kernel")`` into ``self.kernel``) or, for optimizer slots, to the
slot name the optimizer gives it. Variables made any other way after ``restore`` are reported
by ``assert_consumed``.

The files are ``eagerflow.io.bundle`` files (``<prefix>.efckpt``): checksummed, written
atomically, and never unpickled.

Example:
    >>> import os, tempfile
    >>> import eagerflow as ef
    >>> class Net(ef.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = ef.Variable([1.0, 2.0])
    >>> net = Net()
    >>> path = ef.train.Checkpoint(net=net).save(os.path.join(tempfile.mkdtemp(), "ckpt"))
    >>> os.path.basename(path)
    'ckpt-1'
    >>> _ = net.w.assign([0.0, 0.0])
    >>> ef.train.Checkpoint(net=net).restore(path).assert_consumed().expect_partial() is not None
    True
    >>> net.w.numpy().tolist()
    [1.0, 2.0]
"""

from __future__ import annotations

import collections
import os
import sys
import weakref

from eagerflow import errors
from eagerflow import variables as variables_lib
from eagerflow.io import bundle
from eagerflow.module import Module
from eagerflow.train import checkpoint_state

__all__ = ["Checkpoint", "CheckpointOptions", "CheckpointLoadStatus", "SUFFIX",
           "checkpoint_file", "object_graph_variables", "object_graph_serializables"]

SUFFIX = ".efckpt"
_ATTRIBUTES = "/.ATTRIBUTES/"
_ATTR = "/.ATTRIBUTES/VARIABLE_VALUE"
_SLOT = "/.OPTIMIZER_SLOT/"
_KIND = "eagerflow.checkpoint"


class CheckpointOptions:
    """Options for saving and restoring; accepted for TF compatibility and ignored.

    Args:
        experimental_io_device: Ignored.
        experimental_enable_async_checkpoint: Ignored (saves are synchronous and atomic).
        **kwargs: Other TF options, ignored.

    Example:
        >>> import eagerflow as ef
        >>> ef.train.CheckpointOptions(experimental_io_device="/job:localhost") is not None
        True
    """

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 **kwargs):
        self.experimental_io_device = experimental_io_device
        self.experimental_enable_async_checkpoint = experimental_enable_async_checkpoint


# -- the object graph ------------------------------------------------------------------------
def _is_variable(x):
    # A variable split into shards (a parameter-server strategy's ShardedVariable) is saved
    # and restored as one whole tensor, so it restores into any number of shards.
    return getattr(x, "_is_variable", False) or getattr(x, "_is_sharded_variable", False)


def _is_optimizer(x):
    return isinstance(getattr(x, "_slots", None), dict) and hasattr(x, "_var_key")


def _is_serializable(x):
    """An object that saves itself as named tensors (a dataset iterator), as TF's
    ``_serialize_to_tensors``/``_restore_from_tensors``."""
    return not isinstance(x, type) and callable(getattr(x, "_serialize_to_tensors", None))


def _is_trackable(x):
    if _is_variable(x) or isinstance(x, Module) or isinstance(x, Checkpoint):
        return True
    if _is_serializable(x):
        return True
    if isinstance(x, type) or x is None or isinstance(x, (str, bytes, int, float)):
        return False
    return callable(getattr(x, "_checkpoint_dependencies", None)) or (
        hasattr(type(x), "variables") or "variables" in getattr(x, "__dict__", {}))


def _escape(name):
    return str(name).replace("%", "%25").replace("/", "%2F")


def _flatten(name, value, out, depth=0):
    """Collects ``(path, trackable)`` from a value that may be a list/tuple/dict of them."""
    if depth > 8:
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _flatten(name + "/" + str(i), item, out, depth + 1)
    elif isinstance(value, dict):
        try:
            keys = sorted(value, key=str)
        except TypeError:
            return
        for k in keys:
            _flatten(name + "/" + _escape(k), value[k], out, depth + 1)
    elif _is_trackable(value):
        out.append((name, value))


def _children(obj):
    """The named dependencies of one object, in a deterministic order."""
    out = []
    if _is_variable(obj) or _is_serializable(obj):
        return out
    deps = getattr(obj, "_checkpoint_dependencies", None)
    if callable(deps):
        deps = deps()
        for name, value in (deps.items() if isinstance(deps, dict) else deps):
            _flatten(_escape(name), value, out)
        return out
    if isinstance(obj, Module):
        attrs = vars(obj)
        ignored = getattr(obj, "_TF_MODULE_IGNORED_PROPERTIES", ())
        names = sorted((k for k in attrs if k not in ignored),
                       key=lambda k: (k.startswith("_"), k))
        for name in names:
            _flatten(_escape(name), attrs[name], out)
        if _is_optimizer(obj):
            # Slots are named after their model variable (see object_graph_variables).
            slot_ids = {id(s) for table in obj._slots.values() for s in table.values()}
            out = [(n, v) for n, v in out if id(v) not in slot_ids]
        return out
    try:
        variables = list(obj.variables)
    except Exception:  # a property that cannot be evaluated yet: nothing to save
        return out
    _flatten("variables", variables, out)
    return out


def _walk(root):
    """Breadth-first: ``{id: (path, obj)}`` for every object and its variables' keys."""
    objects = {id(root): ("", root)}
    order = [root]
    queue = collections.deque([root])
    while queue:
        obj = queue.popleft()
        base = objects[id(obj)][0]
        for name, child in _children(obj):
            if id(child) in objects:
                continue
            objects[id(child)] = ((base + "/" + name) if base else name, child)
            order.append(child)
            queue.append(child)
    return objects, order


def object_graph_variables(root):
    """``[(key, variable)]`` for every variable reachable from ``root``, slots included.

    Args:
        root: A trackable object (a Checkpoint, Module, ...).

    Returns:
        A list of ``(checkpoint key, Variable)`` in breadth-first order.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.train.checkpoint import object_graph_variables
        >>> m = ef.Module(); m.v = ef.Variable(1.0)
        >>> [k for k, _ in object_graph_variables(m)]
        ['v/.ATTRIBUTES/VARIABLE_VALUE']
    """
    objects, order = _walk(root)
    # The shards of a sharded variable are stored through the whole variable only.
    shards = {id(s) for o in order if getattr(o, "_is_sharded_variable", False)
              for s in o.variables}
    out = [(objects[id(o)][0] + _ATTR, o) for o in order
           if _is_variable(o) and id(o) not in shards]
    for opt in order:
        if not _is_optimizer(opt):
            continue
        opt_path = objects[id(opt)][0]
        model_vars = {opt._var_key(v): v for v in getattr(opt, "_trainable_variables", ())}
        for ref_key, table in opt._slots.items():
            ref = model_vars.get(ref_key)
            ref_path = objects[id(ref)][0] if ref is not None and id(ref) in objects else None
            for slot, var in sorted(table.items()):
                if ref_path is None:  # the model variable is not in this checkpoint
                    key = "%s/_slots/%s/%s%s" % (opt_path, _escape(ref_key), slot, _ATTR)
                else:
                    key = "%s%s%s/%s%s" % (ref_path, _SLOT, opt_path, _escape(slot), _ATTR)
                out.append((key, var))
    return out


def object_graph_serializables(root):
    """``[(key prefix, object)]`` for every object that saves itself as tensors.

    Its tensors are stored as ``<path>/.ATTRIBUTES/<name>`` (a dataset iterator's as
    ``<path>/.ATTRIBUTES/ITERATOR_STATE``, TF's key).
    """
    objects, order = _walk(root)
    return [(objects[id(o)][0] + _ATTRIBUTES, o) for o in order if _is_serializable(o)]


def _serialized_tensors(root):
    out = []
    for prefix, obj in object_graph_serializables(root):
        for name, value in sorted(obj._serialize_to_tensors().items()):
            out.append((prefix + name, value))
    return out


def checkpoint_file(path):
    """The bundle file of a checkpoint given by prefix (``ckpt-3``) or by file name.

    Example:
        >>> from eagerflow.train.checkpoint import checkpoint_file
        >>> checkpoint_file("/tmp/ckpt-3")
        '/tmp/ckpt-3.efckpt'
    """
    path = os.fspath(path)
    return path if path.endswith(SUFFIX) else path + SUFFIX


def _open(save_path):
    if save_path is None or save_path == "":
        raise errors.InvalidArgumentError(
            None, None, "No checkpoint path given. Use train.latest_checkpoint(directory) "
            "to find the newest one (it is None when the directory has none).")
    save_path = os.fspath(save_path)
    if os.path.isdir(save_path):
        raise errors.NotFoundError(
            None, None, "%s is a directory, not a checkpoint prefix; pass "
            "train.latest_checkpoint(%r) instead." % (save_path, save_path))
    reader = bundle.BundleReader(checkpoint_file(save_path))
    if reader.metadata.get("kind") != _KIND:
        raise errors.InvalidArgumentError(
            None, None, "%s is an eagerflow bundle but not a checkpoint (kind %r)."
            % (reader.path, reader.metadata.get("kind")))
    return reader


def _shape_text(var):
    return str(var.shape.as_list()) if var.shape.rank is not None else "unknown"


def _check(var, value, key, path):
    if not var.shape.is_compatible_with(value.shape):
        raise errors.InvalidArgumentError(
            None, None, "Checkpoint %s: tensor %r has shape %s, but variable %s has shape "
            "%s. The model was built differently from the one that was saved."
            % (path, key, list(value.shape), var.name, _shape_text(var)))
    if value.dtype.name != var.dtype.name:
        raise errors.InvalidArgumentError(
            None, None, "Checkpoint %s: tensor %r has dtype %s, but variable %s has dtype %s."
            % (path, key, value.dtype.name, var.name, var.dtype.name))


def _assign(var, value, key, path):
    _check(var, value, key, path)
    var.assign(value)


# -- deferred restoration --------------------------------------------------------------------
# Strong: a status must outlive the caller dropping it (``ckpt.restore(p)`` alone is common).
# Entries hold only weak references to the objects they wait for, and a status leaves this
# set once nothing it waits for is pending or alive.
_pending_statuses = set()
_scopes = []  # keeps the entered creator scopes alive (a collected one would pop itself)


def _restoring_creator(next_creator, **kwargs):
    var = next_creator(**kwargs)
    if not _pending_statuses or not _is_variable(var):
        return var
    name = kwargs.get("name")
    frame = sys._getframe(1)
    for _ in range(16):
        if frame is None:
            break
        owner = frame.f_locals.get("self")
        if owner is not None:
            for status in list(_pending_statuses):
                if status._match_created(owner, name, var):
                    return var
        frame = frame.f_back
    return var


def _deepest(by_path, path):
    """The longest prefix of ``path`` naming an existing object, and the rest of ``path``."""
    parts = path.split("/")
    for i in range(len(parts), -1, -1):
        prefix = "/".join(parts[:i])
        if prefix in by_path:
            return prefix, "/".join(parts[i:])
    return "", path


def _install_creator():
    stack = getattr(variables_lib._creators, "stack", ())
    if _restoring_creator in stack:
        return
    scope = variables_lib.variable_creator_scope(_restoring_creator)
    scope.__enter__()
    _scopes.append(scope)


class CheckpointLoadStatus:
    """What a ``restore`` matched, with assertions about it (as TF's status object).

    Values for variables that exist are assigned by ``restore``; the rest wait for their
    variables to be created (deferred restoration).

    Example:
        >>> import os, tempfile
        >>> import eagerflow as ef
        >>> m = ef.Module(); m.v = ef.Variable(3.0)
        >>> p = ef.train.Checkpoint(m=m).write(os.path.join(tempfile.mkdtemp(), "c"))
        >>> status = ef.train.Checkpoint(m=m).read(p)
        >>> status.assert_existing_objects_matched() is status
        True
    """

    def __init__(self, root, path, values):
        self._root = weakref.ref(root)
        self.save_path = path
        self._values = values
        self._consumed = set()
        self._restored_ids = set()
        self._pending = {}  # id(owner) -> (weakref(owner), {name: key})
        self._slot_pending = {}  # id(optimizer) -> (weakref, {(var path, slot): key})
        self._expect_partial = False
        self._snapshot = []
        self._serializables = []

    def _apply(self):
        root = self._root()
        objects, _ = _walk(root)
        by_path = {path: obj for path, obj in objects.values()}
        graph = object_graph_variables(root)
        # Kept so the assertions still work after a temporary Checkpoint is collected.
        self._snapshot = [(key, weakref.ref(var)) for key, var in graph]
        for key, var in graph:  # all checked first: a mismatch leaves every variable as it was
            if key in self._values:
                _check(var, self._values[key], key, self.save_path)
        self._serializables = []
        for prefix, obj in object_graph_serializables(root):
            self._serializables.append((prefix, weakref.ref(obj)))
            names = [k[len(prefix):] for k in self._values if k.startswith(prefix)
                     and "/" not in k[len(prefix):]]
            if names:
                obj._restore_from_tensors({n: self._values[prefix + n] for n in names})
                self._consumed.update(prefix + n for n in names)
                self._restored_ids.add(id(obj))
        for key, var in graph:
            if key in self._values:
                _assign(var, self._values[key], key, self.save_path)
                self._consumed.add(key)
                self._restored_ids.add(id(var))
        for key in self._values:
            if key in self._consumed:
                continue
            body = key[:-len(_ATTR)] if key.endswith(_ATTR) else key
            if _SLOT in body:
                var_path, rest = body.split(_SLOT, 1)
                opt_path, _, slot = rest.rpartition("/")
                opt = by_path.get(opt_path)
                if opt is not None and _is_optimizer(opt):
                    anchor_path, rest = _deepest(by_path, var_path)
                    entry = self._slot_pending.setdefault(id(opt), (weakref.ref(opt), {}))
                    entry[1][(weakref.ref(by_path[anchor_path]), rest, slot)] = key
                continue
            owner_path, _, name = body.rpartition("/")
            owner = by_path.get(owner_path)
            if owner is not None and not _is_variable(owner):
                try:
                    ref = weakref.ref(owner)
                except TypeError:
                    continue
                self._pending.setdefault(id(owner), (ref, {}))[1][name] = key
        for status in list(_pending_statuses):
            if not status._prune():
                _pending_statuses.discard(status)
        if self._prune():
            _pending_statuses.add(self)
            _install_creator()

    def _match_created(self, owner, name, var):
        """Called for each new variable while values are pending; True if it took one."""
        entry = self._pending.get(id(owner))
        if entry is not None and entry[0]() is owner and name in entry[1]:
            key = entry[1].pop(name)
            self._take(key, var)
            return True
        entry = self._slot_pending.get(id(owner))
        if entry is not None and entry[0]() is owner and name:
            for (anchor_ref, rest, slot), key in list(entry[1].items()):
                anchor = anchor_ref()
                if anchor is None:
                    del entry[1][(anchor_ref, rest, slot)]
                    continue
                if rest:
                    objects, _ = _walk(anchor)
                    ref = {path: obj for path, obj in objects.values()}.get(rest)
                else:
                    ref = anchor
                if ref is None or not _is_variable(ref):
                    continue
                base = str(ref.name).split(":")[0].replace("/", "_")
                if name == base + "_" + slot:
                    del entry[1][(anchor_ref, rest, slot)]
                    self._take(key, var)
                    return True
        return False

    def _prune(self):
        """Forgets entries whose owner is gone; True while something is still pending."""
        for table in (self._pending, self._slot_pending):
            for oid in list(table):
                ref, names = table[oid]
                if ref() is None or not names:
                    del table[oid]
        return bool(self._pending or self._slot_pending)

    def _take(self, key, var):
        _assign(var, self._values[key], key, self.save_path)
        self._consumed.add(key)
        self._restored_ids.add(id(var))
        if not self._prune():
            _pending_statuses.discard(self)

    def _unrestored_variables(self):
        root = self._root()
        found = dict((key, ref()) for key, ref in self._snapshot)
        if root is not None:
            found.update(object_graph_variables(root))
        found.update((prefix + "*", ref()) for prefix, ref in self._serializables)
        return sorted(key for key, var in found.items()
                      if var is not None and id(var) not in self._restored_ids)

    def assert_consumed(self):
        """Asserts every checkpoint value was used and every variable got a value.

        Returns:
            ``self``.

        Raises:
            AssertionError: Listing the unused checkpoint keys and the variables without a
                value (by checkpoint key), and the file.
        """
        unused = sorted(set(self._values) - self._consumed)
        missing = self._unrestored_variables()
        if unused or missing:
            lines = ["Checkpoint %s was not consumed exactly:" % self.save_path]
            if unused:
                lines.append("  values in the checkpoint not matched to any variable (they "
                             "are restored when a variable at that path is created): %s"
                             % unused)
            if missing:
                lines.append("  variables with no value in the checkpoint: %s" % missing)
            raise AssertionError("\n".join(lines))
        return self

    def assert_existing_objects_matched(self):
        """Asserts every variable that exists now got a value from the checkpoint.

        Values still waiting for variables not yet created are allowed.

        Returns:
            ``self``.

        Raises:
            AssertionError: Naming the variables without a value, and the file.
        """
        missing = self._unrestored_variables()
        if missing:
            raise AssertionError("Checkpoint %s has no value for existing variables: %s"
                                 % (self.save_path, missing))
        return self

    def assert_nontrivial_match(self):
        """Asserts at least one variable besides the save counter was restored.

        Raises:
            AssertionError: If nothing was matched.
        """
        if not self._consumed - {"save_counter" + _ATTR}:
            raise AssertionError("Nothing except the save counter was matched from "
                                 "checkpoint %s." % self.save_path)
        return self

    def expect_partial(self):
        """Marks a partial restore as intended (silences nothing else); returns ``self``."""
        self._expect_partial = True
        return self

    def run_restore_ops(self, session=None):
        """Eager restores are already applied; kept for TF compatibility."""
        return None

    def initialize_or_restore(self, session=None):
        """Eager restores are already applied; kept for TF compatibility."""
        return None


class InitializationOnlyStatus:
    """What ``restore(None)`` returns: nothing was restored (TF's resume snippet
    ``ckpt.restore(manager.latest_checkpoint)`` passes None on a first run).

    Variables keep their initial values. The assertions raise, as TF's, because no
    checkpoint was matched; ``expect_partial`` and the TF 1 methods do nothing.

    Example:
        >>> import eagerflow as ef
        >>> status = ef.train.Checkpoint(v=ef.Variable(1.0)).restore(None)
        >>> status.expect_partial() is status
        True
    """

    _MESSAGE = "No checkpoint specified (save_path=None); nothing is being restored."

    def assert_consumed(self):
        """Raises AssertionError: nothing was restored."""
        raise AssertionError(self._MESSAGE)

    def assert_existing_objects_matched(self):
        """Raises AssertionError: nothing was restored."""
        raise AssertionError(self._MESSAGE)

    def assert_nontrivial_match(self):
        """Raises AssertionError: nothing was restored."""
        raise AssertionError(self._MESSAGE)

    def expect_partial(self):
        """Returns ``self``."""
        return self

    def run_restore_ops(self, session=None):
        """Does nothing (there is nothing to restore)."""
        return None

    def initialize_or_restore(self, session=None):
        """Does nothing: eager variables are already initialized."""
        return None


class Checkpoint:
    """Saves and restores a group of trackable objects (as ``tf.train.Checkpoint``).

    Args:
        root: Optional root object whose dependencies become the checkpoint's own.
        **kwargs: Named trackables: Modules (Keras models, layers, optimizers), Variables,
            objects with ``_checkpoint_dependencies()`` or ``variables``, or lists, tuples
            and dicts of them (saved item by item: ``layers/0/...``, ``table/key/...``).

    Attributes:
        save_counter: An int64 Variable counting ``save`` calls; it is saved and restored
            too, so numbering continues after a restore.

    Raises:
        ValueError: If a keyword value is not trackable, or is named ``save_counter``.

    Example:
        >>> import os, tempfile
        >>> import eagerflow as ef
        >>> v = ef.Variable(1.0)
        >>> ckpt = ef.train.Checkpoint(v=v)
        >>> prefix = os.path.join(tempfile.mkdtemp(), "ckpt")
        >>> os.path.basename(ckpt.save(prefix)), os.path.basename(ckpt.save(prefix))
        ('ckpt-1', 'ckpt-2')
    """

    def __init__(self, root=None, **kwargs):
        for name, value in kwargs.items():
            if name == "save_counter":
                raise ValueError("`save_counter` is reserved by Checkpoint; use another "
                                 "keyword.")
            # A list, tuple or dict is tracked item by item, as TF wraps it.
            if not _is_trackable(value) and not isinstance(value, (list, tuple, dict)):
                raise ValueError("Checkpoint was expecting a trackable object (a Module, "
                                 "Variable, Keras model/layer/optimizer, or an object with "
                                 "`_checkpoint_dependencies()`) for %s, got %r."
                                 % (name, value))
        if root is not None and not _is_trackable(root):
            raise ValueError("Checkpoint `root` must be trackable, got %r." % (root,))
        self._root_object = root
        self._deps = dict(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)
        self.save_counter = variables_lib.Variable(
            0, dtype="int64", trainable=False, name="save_counter")

    def _checkpoint_dependencies(self):
        deps = list(_children(self._root_object)) if self._root_object is not None else []
        deps += sorted(self._deps.items())
        deps.append(("save_counter", self.save_counter))
        return deps

    def write(self, file_prefix, options=None):
        """Writes a checkpoint at exactly ``file_prefix`` (no counter); returns it.

        The file ``<file_prefix>.efckpt`` is replaced atomically: after a crash it holds
        either the previous complete checkpoint or the new one.

        Args:
            file_prefix: The path prefix; its directory is created if needed.
            options: A ``CheckpointOptions`` (ignored).

        Returns:
            ``file_prefix``.
        """
        file_prefix = os.fspath(file_prefix)
        directory = os.path.dirname(os.path.abspath(file_prefix))
        os.makedirs(directory, exist_ok=True)
        # Iterators first: a pipeline that cannot be saved raises before anything is written.
        serialized = _serialized_tensors(self)
        tensors = [(key, var.numpy()) for key, var in object_graph_variables(self)]
        tensors += serialized
        bundle.write(checkpoint_file(file_prefix), tensors,
                     metadata={"kind": _KIND, "save_counter": int(self.save_counter.numpy())})
        return file_prefix

    def save(self, file_prefix, options=None):
        """Increments ``save_counter``, writes ``<file_prefix>-<save_counter>`` and records it.

        As in TF, the ``checkpoint`` state file in the prefix's directory is then replaced
        by one naming only this checkpoint, so ``train.latest_checkpoint(directory)`` finds
        it (``write`` leaves the state file alone; a ``CheckpointManager`` keeps its own
        list there).

        Args:
            file_prefix: The path prefix, e.g. ``"/tmp/run/ckpt"``.
            options: A ``CheckpointOptions`` (ignored).

        Returns:
            The checkpoint path, e.g. ``"/tmp/run/ckpt-1"``, for ``restore``.

        Example:
            >>> import os, tempfile
            >>> import eagerflow as ef
            >>> d = tempfile.mkdtemp()
            >>> ckpt = ef.train.Checkpoint(v=ef.Variable(1.0))
            >>> _ = ckpt.save(os.path.join(d, "ckpt"))
            >>> path = ckpt.save(os.path.join(d, "ckpt"))
            >>> ef.train.latest_checkpoint(d) == path, os.path.basename(path)
            (True, 'ckpt-2')
        """
        self.save_counter.assign_add(1)
        path = self.write("%s-%d" % (os.fspath(file_prefix), int(self.save_counter.numpy())),
                          options)
        # After the checkpoint's file exists, so the state file only names complete ones.
        checkpoint_state.write_state(
            os.path.dirname(os.path.abspath(path)),
            checkpoint_state.CheckpointState(path, [path]))
        return path

    def restore(self, save_path, options=None):
        """Restores the values saved at ``save_path`` (a prefix ``save`` returned).

        Every tensor is read and verified before any variable changes, so a corrupt file
        leaves the objects untouched. Values for variables not created yet are assigned
        when they are (see the module docstring).

        Args:
            save_path: A checkpoint prefix (``".../ckpt-3"``) or its ``.efckpt`` file, or
                None (as ``CheckpointManager.latest_checkpoint`` is on a first run): then
                nothing is restored, as in TF.
            options: A ``CheckpointOptions`` (ignored).

        Returns:
            A ``CheckpointLoadStatus`` (an ``InitializationOnlyStatus`` for None).

        Raises:
            NotFoundError: If there is no such checkpoint.
            DataLossError: If the file is truncated or corrupt.
            FailedPreconditionError: If its format version is unknown.
            InvalidArgumentError: If a saved shape or dtype does not match a variable.
        """
        if save_path is None:
            return InitializationOnlyStatus()
        reader = _open(save_path)
        values = reader.read_all()
        status = CheckpointLoadStatus(self, os.fspath(save_path), values)
        status._apply()
        return status

    def read(self, save_path, options=None):
        """Like ``restore``, for a path written by ``write``.

        Returns:
            A ``CheckpointLoadStatus``.
        """
        return self.restore(save_path, options)
