"""Keras' ``get`` and ``deserialize`` for every kind of named object, written once.

Losses, metrics, initializers, regularizers and constraints are looked up the same way: a
name (a class name, its snake_case or an alias), a ``{"class_name", "config"}`` dict from
``serialize``, a class (instantiated with its defaults) or any callable. An
:class:`ObjectTable` holds one kind's names; each module's ``get``/``deserialize`` is a call
to it, so the rules and the error texts are the same everywhere.

Example:
    >>> from eagerflow.keras.lookup import ObjectTable
    >>> class Half:
    ...     def __init__(self, scale=0.5):
    ...         self.scale = scale
    ...     @classmethod
    ...     def from_config(cls, config):
    ...         return cls(**config)
    >>> table = ObjectTable("scaler", {"Half": Half, "half": Half})
    >>> table.get("half").scale
    0.5
    >>> table.deserialize({"class_name": "Half", "config": {"scale": 2.0}}).scale
    2.0
"""

from __future__ import annotations

import inspect

from eagerflow.errors import short_repr


class ObjectTable:
    """The names of one kind of Keras object and the lookups over them.

    Args:
        kind: The kind, for error messages ("loss", "initializer", ...).
        names: ``{name: class or function}``: class names, snake_case names, aliases.
        known: The names an error lists as valid (default: every name).
    """

    def __init__(self, kind, names, known=None):
        self.kind = kind
        self.names = names
        self._known = known

    def known(self):
        return sorted(self.names if self._known is None else self._known)

    def lookup(self, name, custom_objects=None):
        """The class or function called ``name`` (custom objects first), or None."""
        if custom_objects and name in custom_objects:
            return custom_objects[name]
        return self.names.get(name)

    def deserialize(self, config, custom_objects=None):
        """Rebuilds an object from ``serialize``'s dict; a name gives what ``get`` gives.

        Raises:
            ValueError: If the class is unknown or the config is not a dict with
                ``class_name``.
        """
        if isinstance(config, str):
            return self.get(config, custom_objects)
        if not isinstance(config, dict) or "class_name" not in config:
            raise ValueError("Could not deserialize %s from %s." % (self.kind, short_repr(config)))
        name = config["class_name"]
        cls = self.lookup(name, custom_objects)
        if cls is None:
            raise ValueError("Unknown %s: %s. Pass custom objects with custom_objects={%s: "
                             "cls}." % (self.kind, short_repr(name), short_repr(name)))
        if not inspect.isclass(cls):
            return cls  # a function serialized by name
        return cls.from_config(dict(config.get("config") or {}))

    def get(self, identifier, custom_objects=None):
        """None, a name, a dict, a class or a callable as an object of this kind.

        A class (named or given) is instantiated with its defaults; a function name gives
        the function; any other callable is returned as is.

        Raises:
            ValueError: If the identifier cannot be interpreted.
        """
        if identifier is None:
            return None
        if isinstance(identifier, dict):
            return self.deserialize(identifier, custom_objects)
        obj = identifier
        if isinstance(identifier, str):
            obj = self.lookup(identifier, custom_objects)
            if obj is None:
                raise ValueError("Could not interpret %s identifier: %s. Known names: %s."
                                 % (self.kind, short_repr(identifier), ", ".join(self.known())))
        if inspect.isclass(obj):
            return obj()
        if callable(obj):
            return obj
        raise ValueError("Could not interpret %s identifier: %s."
                         % (self.kind, short_repr(identifier)))
