"""Tracing Python into dataflow graphs: ``eagerflow.function`` and its machinery.

``eagerflow.function`` is this package and TF's ``tf.function`` at once: calling the package
calls :func:`eagerflow.function.function.function`, so ``@eagerflow.function`` works as in TF
while ``import eagerflow.function.placement`` and ``eagerflow.function.placement`` reach the
submodules (a plain function bound to the name would hide them).

Example:
    >>> import eagerflow as ef
    >>> import eagerflow.function.placement
    >>> ef.function(lambda x: x * 2.0)(ef.constant(3.0)).numpy()
    np.float32(6.0)
    >>> callable(ef.function.placement.place)
    True
"""

import sys as _sys
import types as _types

from eagerflow.function.concrete import ConcreteFunction  # noqa: F401
from eagerflow.function.function import Function, function  # noqa: F401
from eagerflow.function.graph import Graph, Node  # noqa: F401


def _install_backward_compiler():
    from eagerflow import tape_replay
    from eagerflow.function import backward_replay

    tape_replay.set_backward_compiler(backward_replay.compile_backward)


_install_backward_compiler()
# Installs the traced form of custom_gradient (a CustomGradient node) and its executor step.
from eagerflow.function import custom_gradient_graph as _custom_gradient_graph  # noqa: E402,F401


class _FunctionPackage(_types.ModuleType):
    """The package's module type: calling it is calling ``function``."""

    def __call__(self, *args, **kwargs):
        return function(*args, **kwargs)


_sys.modules[__name__].__class__ = _FunctionPackage
__wrapped__ = function  # inspect.signature and help() show function's
