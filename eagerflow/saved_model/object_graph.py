"""What of an object a SavedModel's object graph holds: its modules, variables and functions.

Saving walks an object's attributes (:func:`attributes`); a signature-less save looks among
them for functions with an input signature (:mod:`eagerflow.saved_model.signatures`).

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.saved_model import object_graph
    >>> m = ef.Module()
    >>> m.v = ef.Variable(1.0)
    >>> [name for name, _ in object_graph.attributes(m)]
    ['v']
"""

from __future__ import annotations

__all__ = ["is_variable", "is_function", "is_concrete", "is_trackable", "attributes"]


def is_variable(value):
    """True for a variable (any kind that says so)."""
    return getattr(value, "_is_variable", False)


def is_function(value):
    """True for an ``@function``."""
    from eagerflow.function.function import Function

    return isinstance(value, Function)


def is_concrete(value):
    """True for a ConcreteFunction."""
    from eagerflow.function.concrete import ConcreteFunction

    return isinstance(value, ConcreteFunction)


def is_trackable(value):
    """True for what the object graph keeps: modules, variables, functions, and lists or
    dicts holding some."""
    from eagerflow.module import Module

    if isinstance(value, Module) or is_variable(value) or is_function(value) or \
            is_concrete(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(is_trackable(v) for v in value)
    if isinstance(value, dict):
        return any(isinstance(k, str) and is_trackable(v) for k, v in value.items())
    return False


def attributes(obj):
    """The (name, value) pairs of ``obj`` that belong in the object graph, sorted by name."""
    from eagerflow.module import Module

    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj) if is_trackable(v)]
    if isinstance(obj, dict):
        return [(k, v) for k, v in obj.items() if isinstance(k, str) and is_trackable(v)]
    out = {}
    for name, value in sorted(getattr(obj, "__dict__", {}).items()):
        if is_trackable(value):
            out[name] = value
    # @function methods live on the class: bind them to the instance.
    for klass in reversed(type(obj).__mro__):
        if klass in (object, Module):
            continue
        for name, value in vars(klass).items():
            if is_function(value) and name not in out:
                out[name] = getattr(obj, name)
    return sorted(out.items())
