"""``eagerflow.name_scope``: prefixes the names of variables (and graph nodes) made inside.

Example:
    >>> import eagerflow as ef
    >>> with ef.name_scope("block"):
    ...     v = ef.Variable(1.0, name="w")
    >>> v.name.startswith("block/w")
    True
"""

from __future__ import annotations

from eagerflow.framework import context


class name_scope:  # noqa: N801 - TF's public name
    """A context manager that appends ``name/`` to the current name scope.

    Args:
        name: The scope name. A name ending in "/" replaces the current scope entirely.
    """

    def __init__(self, name):
        if name is None:
            name = ""
        if not isinstance(name, str):
            raise TypeError("name_scope takes a string, got %r" % (name,))
        self._name = name
        self._previous = None

    @property
    def name(self):
        return self._name

    def __enter__(self):
        state = context.state
        self._previous = state.name_scope
        if not self._name:
            state.name_scope = ""
        elif self._name.endswith("/"):
            state.name_scope = self._name
        else:
            state.name_scope = self._previous + self._name + "/"
        return state.name_scope

    def __exit__(self, *exc):
        context.state.name_scope = self._previous
        return False
