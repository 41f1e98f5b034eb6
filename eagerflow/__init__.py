"""eagerflow: TensorFlow 2's model of computation, light.

Eager tensors that feel like numpy, gradients by tape, Python traced into dataflow graphs,
and the same model code on a CPU, a GPU or many processes.

Example:
    >>> import eagerflow as tf
    >>> x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> tf.reduce_sum(x * 2.0).numpy()
    np.float32(20.0)
"""

import warnings as _warnings

# First, before numpy loads: sizes each mpirun rank's BLAS thread pool to share the cores.
from eagerflow import _launch_env  # noqa: F401

from eagerflow import dtypes, errors  # noqa: F401
from eagerflow.dtypes import (  # noqa: F401
    DType, as_dtype, bfloat16, bool, complex64, complex128, double, float16, float32, float64,
    half, int8, int16, int32, int64, string, uint8, uint16, uint32, uint64,
)
from eagerflow.tensor import Tensor, constant, convert_to_tensor, is_tensor  # noqa: F401
from eagerflow.tensor_shape import TensorShape, TensorSpec  # noqa: F401

newaxis = None  # ``x[ef.newaxis]`` adds a dimension, as tf.newaxis

# Kernels may produce inf/nan (log(0), 1/0) exactly as TF does, silently.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"eagerflow\.ops\..*")

__version__ = "0.1.0"

from eagerflow._api import *  # noqa: E402,F401,F403
from eagerflow._api import _LAZY_NAMES  # noqa: E402
from eagerflow.ops.strings import structural as _strings_structural  # noqa: E402,F401
from eagerflow import bitwise, linalg, math, nn, random  # noqa: E402,F401
from eagerflow import autodiff, config, experimental, nest  # noqa: E402,F401
from eagerflow.custom_gradient import custom_gradient, recompute_grad  # noqa: E402,F401
from eagerflow.framework.device_scope import device  # noqa: E402,F401
from eagerflow.framework.device_spec import DeviceSpec  # noqa: E402,F401
from eagerflow.framework.name_scope import name_scope  # noqa: E402,F401
from eagerflow.indexed_slices import IndexedSlices  # noqa: E402,F401
from eagerflow.module import Module  # noqa: E402,F401
from eagerflow.tape import GradientTape, UnconnectedGradients  # noqa: E402,F401
from eagerflow.variables import (  # noqa: E402,F401
    Variable, VariableAggregation, VariableSynchronization, variable_creator_scope,
)
from eagerflow.ops import variable_ops  # noqa: E402,F401  (the ops variables call)
from eagerflow.utils import executing_eagerly, get_static_value  # noqa: E402,F401
from eagerflow import function  # noqa: E402,F401  (the package; calling it traces)
from eagerflow.function.control_flow import case, cond, switch_case  # noqa
from eagerflow.function.while_loop import while_loop  # noqa
from eagerflow.ops.print_ops import print_ as print  # noqa: E402,F401,A001
from eagerflow.ops.array.tensor_array_ops import TensorArray  # noqa: E402,F401
from eagerflow.function.functional_ops import (  # noqa: E402,F401
    foldl, foldr, map_fn, scan, vectorized_map,
)
from eagerflow.function.py_function import numpy_function, py_function  # noqa: E402,F401
from eagerflow.function.assertions import Assert  # noqa: E402,F401
from eagerflow.function.control_deps import control_dependencies, init_scope  # noqa: E402,F401


# Heavier subpackages load on first use, keeping ``import eagerflow`` fast: the string,
# ragged and sparse tensors' modules too (a program that never touches them never pays
# for them; string tensors themselves, and the ops that move them, are always there).
_LAZY_SUBMODULES = ("data", "keras", "saved_model", "distribute", "train", "summary",
                    "profiler", "autograph", "io", "image", "debugging", "types", "strings",
                    "ragged", "sparse")
_LAZY_NAMES = dict(_LAZY_NAMES, RaggedTensor="eagerflow.ragged.ragged_tensor",
                   RaggedTensorSpec="eagerflow.ragged.ragged_tensor",
                   SparseTensor="eagerflow.sparse.sparse_tensor",
                   SparseTensorSpec="eagerflow.sparse.sparse_tensor")


def __getattr__(name):
    module_name = _LAZY_NAMES.get(name)
    if module_name is not None:
        import importlib

        value = getattr(importlib.import_module(module_name), name)
        globals()[name] = value
        return value
    if name in _LAZY_SUBMODULES:
        import importlib

        try:
            module = importlib.import_module("eagerflow." + name)
        except ModuleNotFoundError as exc:
            if exc.name == "eagerflow." + name:
                raise AttributeError("module 'eagerflow' has no attribute %r" % name) from None
            raise
        globals()[name] = module
        return module
    raise AttributeError("module 'eagerflow' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES) | set(_LAZY_NAMES))
