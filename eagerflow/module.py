"""``eagerflow.Module``: a named container that tracks variables and sub-modules.

Variables and modules found in a module's attributes (directly, or inside lists, tuples and
dicts) are collected on demand, in TF's deterministic order: the module's own attributes
sorted by name (dict keys sorted), then each sub-module's, recursively.

Example:
    >>> import eagerflow as ef
    >>> class Dense(ef.Module):
    ...     def __init__(self, n_in, n_out, name=None):
    ...         super().__init__(name=name)
    ...         self.w = ef.Variable(ef.ones([n_in, n_out]), name="w")
    ...         self.b = ef.Variable(ef.zeros([n_out]), name="b")
    ...     def __call__(self, x):
    ...         return x @ self.w + self.b
    >>> class MLP(ef.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.layers = [Dense(2, 3), Dense(3, 1)]
    >>> len(MLP().trainable_variables)
    4
"""

from __future__ import annotations

import functools
import re

from eagerflow import nest
from eagerflow.framework.name_scope import name_scope as _name_scope

__all__ = ["Module"]

_CAMEL = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")
_VALID_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")


def camel_to_snake(name):
    return _CAMEL.sub(r"_\1", name).lower()


class Module:
    """Base class for objects that own variables and sub-modules.

    Args:
        name: A valid Python-like identifier; defaults to the class name in snake_case.

    Raises:
        ValueError: If ``name`` is not a valid identifier.
    """

    _TF_MODULE_IGNORED_PROPERTIES = frozenset(("_self_unconditional_checkpoint_dependencies",
                                               "_self_unconditional_dependency_names"))

    def __init__(self, name=None):
        if name is None:
            name = camel_to_snake(type(self).__name__)
        elif not _VALID_NAME.match(name):
            raise ValueError("%r is not a valid module name. Module names must be valid "
                             "Python identifiers (e.g. a valid class name)." % name)
        self._name = name
        self._scope_name = name + "/"

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        """A name scope for this module (variables made inside get its prefix)."""
        return _name_scope(self._scope_name if not self._scope_name.endswith("//")
                           else self._name)

    @property
    def variables(self):
        """All variables of this module and its sub-modules, deduplicated, in TF's order."""
        return tuple(self._flatten(lambda x: getattr(x, "_is_variable", False)))

    @property
    def trainable_variables(self):
        return tuple(self._flatten(
            lambda x: getattr(x, "_is_variable", False) and x.trainable))

    @property
    def non_trainable_variables(self):
        return tuple(self._flatten(
            lambda x: getattr(x, "_is_variable", False) and not x.trainable))

    @property
    def submodules(self):
        """All modules found below this one (not including itself)."""
        return tuple(self._flatten(lambda x: isinstance(x, Module)))

    def _flatten(self, predicate, recursive=True):
        seen = set()
        out = []
        self._walk(predicate, recursive, seen, out, {id(self)})
        return out

    def _walk(self, predicate, recursive, seen, out, visiting):
        children = []
        attrs = vars(self)
        for key in sorted(attrs):
            if key in self._TF_MODULE_IGNORED_PROPERTIES:
                continue
            for leaf in _leaves(attrs[key]):
                if predicate(leaf) and id(leaf) not in seen:
                    seen.add(id(leaf))
                    out.append(leaf)
                if recursive and isinstance(leaf, Module) and id(leaf) not in visiting:
                    children.append(leaf)
        for child in children:
            visiting.add(id(child))
            child._walk(predicate, recursive, seen, out, visiting)

    @classmethod
    def with_name_scope(cls, method):
        """Decorator: runs ``method`` inside the module's name scope.

        Example:
            >>> import eagerflow as ef
            >>> class M(ef.Module):
            ...     @ef.Module.with_name_scope
            ...     def build(self):
            ...         self.v = ef.Variable(1.0, name="v")
            >>> m = M(name="m"); m.build()
            >>> m.v.name.startswith("m/v")
            True
        """

        @functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)

        return wrapped

    def __repr__(self):
        return "<%s name=%r>" % (type(self).__name__, self._name)


def _leaves(value):
    if isinstance(value, (list, tuple, dict)):
        try:
            return nest.flatten(value)
        except (TypeError, ValueError):
            return []
    return [value]
