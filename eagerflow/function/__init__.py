"""Tracing Python into dataflow graphs: ``eagerflow.function`` and its machinery."""

from eagerflow.function.concrete import ConcreteFunction  # noqa: F401
from eagerflow.function.function import Function, function  # noqa: F401
from eagerflow.function.graph import Graph, Node  # noqa: F401
