"""``eagerflow.keras.saving``: custom-object registration and whole-model saving.

Classes defined outside eagerflow (custom layers, models, losses...) are found by name when a
model is loaded if they are registered with :func:`register_keras_serializable`, passed as
``custom_objects=``, or in force through :func:`custom_object_scope`. Loading never runs
pickled code: a saved model is JSON configuration plus raw tensor bytes.

Example:
    >>> from eagerflow.keras import layers, saving
    >>> @saving.register_keras_serializable(package="Demo")
    ... class Twice(layers.Layer):
    ...     def call(self, x):
    ...         return 2.0 * x
    >>> saving.get_registered_name(Twice)
    'Demo>Twice'
    >>> saving.get_registered_object("Demo>Twice") is Twice
    True
"""

from __future__ import annotations

import contextlib
import inspect
import threading

__all__ = ["register_keras_serializable", "get_registered_name", "get_registered_object",
           "get_custom_objects", "custom_object_scope", "CustomObjectScope",
           "serialize_keras_object", "deserialize_keras_object", "save_model", "load_model",
           "lookup_custom_objects"]

_GLOBAL_CUSTOM_OBJECTS = {}  # registered name ("Package>Name") -> object
_GLOBAL_CUSTOM_NAMES = {}  # id(object) -> registered name


class _Scope(threading.local):
    stack = ()


_scope = _Scope()


def register_keras_serializable(package="Custom", name=None):
    """Registers a class or function under ``"package>name"`` for loading saved models.

    Args:
        package: A namespace for the name (default ``"Custom"``).
        name: The name to register (default: the class or function name).

    Returns:
        A decorator that registers its argument and returns it unchanged.

    Raises:
        ValueError: If ``package`` contains ``">"``, or a class has no ``get_config``.

    Example:
        >>> from eagerflow.keras import saving
        >>> @saving.register_keras_serializable(package="Demo")
        ... def my_loss(y_true, y_pred):
        ...     return (y_true - y_pred) ** 2
        >>> saving.get_registered_name(my_loss)
        'Demo>my_loss'
    """
    if not isinstance(package, str) or ">" in package:
        raise ValueError("register_keras_serializable: `package` must be a string without "
                         "'>', got %r." % (package,))

    def decorator(obj):
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() "
                             "method: %r." % (obj,))
        registered = "%s>%s" % (package, name or obj.__name__)
        _GLOBAL_CUSTOM_OBJECTS[registered] = obj
        _GLOBAL_CUSTOM_NAMES[id(obj)] = registered
        return obj

    return decorator


def get_registered_name(obj):
    """The registered name of ``obj`` (``"Package>Name"``), or its ``__name__`` if unregistered.

    Example:
        >>> from eagerflow.keras import saving
        >>> saving.get_registered_name(len)
        'len'
    """
    name = _GLOBAL_CUSTOM_NAMES.get(id(obj))
    if name is not None and _GLOBAL_CUSTOM_OBJECTS.get(name) is obj:
        return name
    return getattr(obj, "__name__", type(obj).__name__)


def get_custom_objects():
    """The global dict of registered objects (``"Package>Name"`` -> object); editable.

    Example:
        >>> from eagerflow.keras import saving
        >>> isinstance(saving.get_custom_objects(), dict)
        True
    """
    return _GLOBAL_CUSTOM_OBJECTS


@contextlib.contextmanager
def custom_object_scope(*scopes):
    """Makes the given ``{name: object}`` dicts visible to loading inside the block.

    Example:
        >>> from eagerflow.keras import saving
        >>> with saving.custom_object_scope({"thing": len}):
        ...     saving.get_registered_object("thing") is len
        True
    """
    merged = {}
    for scope in scopes:
        merged.update(scope or {})
    previous = _scope.stack
    _scope.stack = previous + (merged,)
    try:
        yield merged
    finally:
        _scope.stack = previous


CustomObjectScope = custom_object_scope


def lookup_custom_objects(custom_objects=None):
    """Every custom object in force, keyed by registered name and by plain name.

    Precedence (highest last, so it overwrites): the global registry, open
    ``custom_object_scope`` blocks, then ``custom_objects``.
    """
    table = {}
    for registered, obj in _GLOBAL_CUSTOM_OBJECTS.items():
        table[registered] = obj
        table.setdefault(registered.split(">", 1)[-1], obj)
    for scope in _scope.stack:
        table.update(scope)
    table.update(custom_objects or {})
    return table


def get_registered_object(name, custom_objects=None, module_objects=None):
    """Finds ``name`` among custom objects, the registry and ``module_objects``; else None.

    Example:
        >>> from eagerflow.keras import saving
        >>> saving.get_registered_object("nothing_by_this_name") is None
        True
    """
    table = lookup_custom_objects(custom_objects)
    if name in table:
        return table[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


def serialize_keras_object(obj):
    """A JSON-compatible description of a Keras object (layer, loss, metric, optimizer...).

    Returns:
        ``{"module", "class_name", "config", "registered_name"}`` for objects with
        ``get_config``, the registered name for functions, or plain values unchanged.

    Example:
        >>> from eagerflow.keras import layers, saving
        >>> saving.serialize_keras_object(layers.Dense(2, name="d"))["class_name"]
        'Dense'
    """
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(o) for o in obj]
    if isinstance(obj, dict):
        return {k: serialize_keras_object(v) for k, v in obj.items()}
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return {"module": getattr(obj, "__module__", None), "class_name": "function",
                "config": obj.__name__, "registered_name": get_registered_name(obj)}
    if hasattr(obj, "get_config"):
        cls = type(obj)
        registered = get_registered_name(cls)
        return {"module": cls.__module__, "class_name": cls.__name__,
                "config": obj.get_config(),
                "registered_name": registered if registered != cls.__name__ else None}
    raise TypeError("Cannot serialize %r: it has no get_config() and is not a function." % (obj,))


def deserialize_keras_object(config, custom_objects=None, safe_mode=True, **kwargs):
    """Rebuilds an object from :func:`serialize_keras_object` output.

    Registered and custom objects are searched first, then eagerflow's layers, losses,
    metrics, optimizers, initializers, regularizers, constraints and activations.

    Raises:
        ValueError: If the class or function cannot be found.

    Example:
        >>> from eagerflow.keras import layers, saving
        >>> d = saving.serialize_keras_object(layers.Dense(2, name="d"))
        >>> saving.deserialize_keras_object(d).units
        2
    """
    if config is None or isinstance(config, (bool, int, float)):
        return config
    if isinstance(config, list):
        return [deserialize_keras_object(c, custom_objects, safe_mode) for c in config]
    if isinstance(config, str):
        found = get_registered_object(config, custom_objects)
        if found is not None:
            return found
        return _builtin_function(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("Cannot deserialize %r: expected a dict with 'class_name' and "
                         "'config'." % (config,))
    class_name = config["class_name"]
    inner = config.get("config")
    if class_name == "function":
        name = config.get("registered_name") or inner
        found = get_registered_object(name, custom_objects) or get_registered_object(
            inner, custom_objects)
        if found is not None:
            return found
        return _builtin_function(inner)
    cls = None
    if config.get("registered_name"):
        cls = get_registered_object(config["registered_name"], custom_objects)
    if cls is None:
        cls = get_registered_object(class_name, custom_objects)
    if cls is None:
        cls = _builtin_class(class_name)
    if cls is None:
        raise ValueError(
            "Could not locate class %r. Make sure custom classes are decorated with "
            "`@eagerflow.keras.saving.register_keras_serializable()` or passed in "
            "custom_objects={%r: %s}." % (class_name, class_name, class_name))
    from_config = cls.from_config
    params = inspect.signature(from_config).parameters
    extra = {}
    if "custom_objects" in params:
        extra["custom_objects"] = custom_objects
    if "safe_mode" in params:
        extra["safe_mode"] = safe_mode
    return from_config(dict(inner or {}), **extra)


def _builtin_class(name):
    from eagerflow.keras import (constraints, initializers, layers, losses, metrics, models,
                                 optimizers, regularizers)

    if not (isinstance(name, str) and name[:1].isalpha()):
        return None
    for module in (layers, models, losses, metrics, optimizers, initializers, regularizers,
                   constraints):
        obj = getattr(module, name, None)
        if inspect.isclass(obj) and hasattr(obj, "from_config"):
            return obj
    return layers._all_layer_classes().get(name)


def _builtin_function(name):
    from eagerflow.keras import activations, losses, metrics

    # The name comes from a file: only public functions these modules define themselves
    # (never something they imported, such as a module or a function of another package).
    public = isinstance(name, str) and name[:1].isalpha()
    for module in (losses, metrics, activations):
        obj = getattr(module, name, None) if public else None
        if callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj) and \
                str(getattr(obj, "__module__", "")).startswith("eagerflow"):
            return obj
    raise ValueError("Could not locate function %r. Register it with "
                     "`@eagerflow.keras.saving.register_keras_serializable()` or pass "
                     "custom_objects={%r: fn}." % (name, name))


def save_model(model, filepath, overwrite=True, **kwargs):
    """Saves a model to a ``.keras`` file (see ``Model.save``).

    Example:
        >>> import os, tempfile
        >>> from eagerflow import keras
        >>> m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> path = os.path.join(tempfile.mkdtemp(), "m.keras")
        >>> keras.saving.save_model(m, path)
        >>> keras.saving.load_model(path).count_params()
        3
    """
    from eagerflow.keras.models import saving as saving_lib

    return saving_lib.save_model(model, filepath, overwrite=overwrite, **kwargs)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Loads a model saved with ``Model.save`` (see ``eagerflow.keras.models.load_model``).

    Example:
        >>> from eagerflow import keras
        >>> try:
        ...     keras.saving.load_model("/nonexistent/model.keras")
        ... except FileNotFoundError:
        ...     print("missing")
        missing
    """
    from eagerflow.keras.models import saving as saving_lib

    return saving_lib.load_model(filepath, custom_objects=custom_objects, compile=compile,
                                 safe_mode=safe_mode)
