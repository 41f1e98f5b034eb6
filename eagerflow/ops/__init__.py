"""The op library: the registry, the dispatch function and the op families.

Each family is a subpackage (``math``, ``reduce``, ``array``, ``indexing``, ``linalg``,
``nn``, ``random``) with one module per concept; the package's ``__init__`` holds the helpers
its modules share. The few modules at this level are the machinery every family uses
(``registry``, ``dispatch``, ``family``, ``vjp``, ``operators``) and the ops that belong to no
family (``print_ops``, ``static_value``). Families are found by walking the package, so a new
module needs no list to be edited.
"""

import importlib
import pkgutil

from eagerflow.ops import operators  # noqa: F401  (installs Tensor's Python operators)


def family_modules():
    """The names of every op module (``eagerflow.ops.math.unary_math``, ...), sorted."""
    names = []
    for info in pkgutil.walk_packages(__path__, prefix=__name__ + "."):
        names.append(info.name)
    return sorted(names)


def load_all():
    """Imports every op module, so the registry holds every primitive."""
    for name in family_modules():
        importlib.import_module(name)
