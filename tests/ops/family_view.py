"""One namespace over an op family's modules, for tests that check a family as a whole."""

import types


def family_view(package, modules, extra=()):
    """A namespace with the names of ``modules`` (and of ``extra``, which add names but not
    ``__all__``/``EXPORTS``), the union of their ``__all__`` and ``EXPORTS``, and the family
    package's docstring. Later modules win where two define a name."""
    ns = types.SimpleNamespace()
    for module in tuple(extra) + tuple(modules):
        for name, value in vars(module).items():
            if not name.startswith("__"):
                setattr(ns, name, value)
    ns.__all__ = [n for module in modules for n in module.__all__]
    exports = {}
    for module in modules:
        for space, names in module.EXPORTS.items():
            exports.setdefault(space, []).extend(names)
    ns.EXPORTS = exports
    ns.__doc__ = package.__doc__
    ns.__name__ = package.__name__
    return ns
