"""Hands the op library's functions down to :mod:`eagerflow.variables`.

Variables sit below the op library (every op reads variables), so ``variables.py`` imports
no op module; the conversions, copies, scatters and gathers its methods run, and its Python
operators, are installed from here when ``eagerflow`` loads.
"""

from __future__ import annotations

from eagerflow import variables
from eagerflow.ops import operators
from eagerflow.ops.array.join_ops import stack
from eagerflow.ops.array.reshape_ops import expand_dims
from eagerflow.ops.dispatch import copy_to_device
from eagerflow.ops.indexing import index_nd_ops
from eagerflow.ops.indexing.gather_ops import gather
from eagerflow.ops.math.cast import cast

__all__ = []

variables.install_ops(
    cast=cast, copy_to_device=copy_to_device, expand_dims=expand_dims, stack=stack,
    gather=gather, gather_nd=index_nd_ops.gather_nd,
    tensor_scatter_nd={"update": index_nd_ops.tensor_scatter_nd_update,
                       "add": index_nd_ops.tensor_scatter_nd_add,
                       "sub": index_nd_ops.tensor_scatter_nd_sub,
                       "max": index_nd_ops.tensor_scatter_nd_max,
                       "min": index_nd_ops.tensor_scatter_nd_min})
operators.install(variables.Variable)
variables.Variable.__hash__ = lambda self: id(self)
