"""Tracing Python into dataflow graphs: ``eagerflow.function`` and its machinery."""

from eagerflow.function.concrete import ConcreteFunction  # noqa: F401
from eagerflow.function.function import Function, function  # noqa: F401
from eagerflow.function.graph import Graph, Node  # noqa: F401


def _install_backward_replay():
    from eagerflow import tape
    from eagerflow.function import backward_replay

    tape._backward_compiler = backward_replay.compile_backward
    tape._live_structure = backward_replay.live_structure
    tape._replay_cache = backward_replay._CACHE


_install_backward_replay()
